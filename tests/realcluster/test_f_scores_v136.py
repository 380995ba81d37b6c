"""The standalone scheduler's answers against kube-scheduler v1.36.3's on the same cluster.

Nodes of varied allocatable, labels, taints, images (and one cordoned), pods already bound there
(labels, host ports, priorities), then pod specs of every kind the default plugins judge (taints,
node and pod (anti-)affinity, spread, resources, BestEffort, sidecars, pod-level resources, ports,
images, extended resources, priorities). Each spec is given, alone, to kube-scheduler v1.36.3 at
``-v 10`` (its default profile, DynamicResources included), which logs each plugin's weighted
score and each node's ``TotalScore`` (pkg/scheduler/schedule_one.go ``prioritizeNodes``) or writes
the FitError in the pod's ``PodScheduled`` condition (``FitError.Error()``, pkg/scheduler/framework/
types.go); the pod is then deleted. The project's framework (a default ``schedulerName`` profile)
computes the same pod on the same nodes and pods, as read from the API server before the pod was
created: PreFilter, Filter, PostFilter (DefaultPreemption's dry run), PreScore, Score.

Asserted: every node's ``TotalScore`` and every plugin's score equal, and every FitError text
equal. A summary line with the agreement is printed (``-s``), and the details are written to
``scores-v136.json`` in the run's directory.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgspec
import pytest

from tests.realcluster.support import FAKE, Cluster, KubeScheduler, Obj, wait_for

NS = "tier-v136"
SCHEDULER = "v136-control"
PREFIX = "v136"
#: kube-scheduler v1.36.3's default profile (pkg/scheduler/apis/config/v1/default_plugins.go),
#: DynamicResources included as the project's default profile has it now (issue 36): its
#: PostFilter adds "no new claims to deallocate" to every FitError of both
KUBE_SCHEDULER_CONFIG = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: "@KUBECONFIG@", qps: 200, burst: 400}}
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: {SCHEDULER}
"""

MI = 1024 * 1024


def image(name: str, mib: int) -> Obj:
    return {"names": [name], "sizeBytes": mib * MI}


#: name -> (allocatable, labels, taints, images, unschedulable)
NODES: dict[str, tuple[dict[str, str], dict[str, str], list[Obj], list[Obj], bool]] = {
    f"{PREFIX}-a1": (
        {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "50Gi"},
        {"topology.kubernetes.io/zone": "a", "disktype": "ssd"},
        [],
        [image("registry.example/web:1.0", 300), image("registry.example/big:1.0", 1500)],
        False,
    ),
    f"{PREFIX}-a2": (
        {"cpu": "8", "memory": "16Gi", "pods": "110"},
        {"topology.kubernetes.io/zone": "a", "disktype": "hdd"},
        [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}],
        [image("registry.example/web:1.0", 300)],
        False,
    ),
    f"{PREFIX}-a3": (
        {"cpu": "2", "memory": "4Gi", "pods": "3"},
        {"topology.kubernetes.io/zone": "a"},
        [],
        [],
        False,
    ),
    f"{PREFIX}-b1": (
        {"cpu": "16", "memory": "32Gi", "pods": "110", "example.com/gpu": "2"},
        {"topology.kubernetes.io/zone": "b", "disktype": "ssd", "gpu": "true"},
        [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
        [image("registry.example/big:1.0", 1500)],
        False,
    ),
    f"{PREFIX}-b2": (
        {"cpu": "4", "memory": "16Gi", "pods": "110"},
        {"topology.kubernetes.io/zone": "b", "disktype": "ssd"},
        [
            {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
            {"key": "flaky", "effect": "PreferNoSchedule"},
        ],
        [image("registry.example/web:1.0", 300), image("registry.example/tools:2", 60)],
        False,
    ),
    f"{PREFIX}-b3": (
        {"cpu": "6", "memory": "12Gi", "pods": "110"},
        {"topology.kubernetes.io/zone": "b"},
        [{"key": "maintenance", "value": "soon", "effect": "NoExecute"}],
        [],
        False,
    ),
    f"{PREFIX}-c1": (
        {"cpu": "8", "memory": "8Gi", "pods": "110", "ephemeral-storage": "20Gi"},
        {"topology.kubernetes.io/zone": "c", "disktype": "hdd"},
        [],
        [image("registry.example/tools:2", 60)],
        False,
    ),
    f"{PREFIX}-c2": (
        {"cpu": "4", "memory": "32Gi", "pods": "110"},
        {"topology.kubernetes.io/zone": "c"},
        [],
        [image("registry.example/web:1.0", 300)],
        True,
    ),
    f"{PREFIX}-c3": (
        {"cpu": "12", "memory": "24Gi", "pods": "110", "example.com/gpu": "1"},
        {"topology.kubernetes.io/zone": "c", "gpu": "true"},
        [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}],
        [image("registry.example/big:1.0", 1500), image("registry.example/web:1.0", 300)],
        False,
    ),
    f"{PREFIX}-d1": (
        {"cpu": "3", "memory": "6Gi", "pods": "110"},
        {"disktype": "ssd"},
        [],
        [],
        False,
    ),
}


#: ``status.declaredFeatures`` of the nodes that declare one (NodeDeclaredFeatures)
DECLARED = {
    f"{PREFIX}-a1": ["RestartAllContainersOnContainerExits"],
    f"{PREFIX}-d1": ["RestartAllContainersOnContainerExits"],
}
RESTART_ALL = [{"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]


def container(
    name: str = "c",
    cpu: str | None = None,
    memory: str | None = None,
    img: str = "registry.example/app:1",
    **extra: Any,
) -> Obj:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    out: Obj = {"name": name, "image": img}
    if requests:
        out["resources"] = {"requests": requests}
    out.update(extra)
    return out


#: pods bound before the specs run: (name, node, labels, containers, priorityClassName, spec extras)
BOUND: list[tuple[str, str, dict[str, str], list[Obj], str, Obj]] = [
    (
        "web-1",
        "a1",
        {"app": "web"},
        [container(cpu="1", memory="1Gi", ports=[{"containerPort": 80, "hostPort": 8080}])],
        "",
        {},
    ),
    ("web-2", "b2", {"app": "web"}, [container(cpu="500m", memory="2Gi")], "", {}),
    ("web-3", "c1", {"app": "web"}, [container(cpu="2", memory="512Mi")], "", {}),
    ("db-1", "a2", {"app": "db"}, [container(cpu="3", memory="10Gi")], "v136-high", {}),
    ("db-2", "c3", {"app": "db"}, [container(cpu="4", memory="4Gi")], "", {}),
    ("batch-1", "a3", {"app": "batch"}, [container(cpu="500m", memory="1Gi")], "", {}),
    ("batch-2", "a3", {"app": "batch"}, [container()], "", {}),
    ("batch-3", "a3", {"app": "batch"}, [container(memory="256Mi")], "", {}),
    (
        "gpu-1",
        "b1",
        {"app": "train"},
        [
            container(
                cpu="6",
                memory="8Gi",
                resources={
                    "requests": {"cpu": "6", "memory": "8Gi", "example.com/gpu": "1"},
                    "limits": {"example.com/gpu": "1"},
                },
            )
        ],
        "",
        {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]},
    ),
    (
        "cache-1",
        "d1",
        {"app": "cache"},
        [container(cpu="1500m", memory="3Gi", ports=[{"containerPort": 6379, "hostPort": 6379}])],
        "v136-high",
        {},
    ),
    (
        "low-1",
        "b3",
        {"app": "low"},
        [container(cpu="2", memory="2Gi")],
        "v136-low",
        {"tolerations": [{"key": "maintenance", "operator": "Exists"}]},
    ),
    ("low-2", "d1", {"app": "low"}, [container(cpu="250m", memory="256Mi")], "v136-low", {}),
    (
        "sidecar-1",
        "c1",
        {"app": "side"},
        [container(cpu="1", memory="1Gi")],
        "",
        {"initContainers": [container("log", cpu="500m", memory="256Mi", restartPolicy="Always")]},
    ),
]


def spec_pod(name: str, containers: list[Obj] | None = None, **spec: Any) -> Obj:
    labels = spec.pop("labels", {"spec": name})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {
            "schedulerName": SCHEDULER,
            "containers": containers or [container()],
            "terminationGracePeriodSeconds": 0,
            **spec,
        },
    }


def zone_term(*zones: str) -> Obj:
    return {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(zones)}]}


def app_selector(*apps: str) -> Obj:
    return {"matchExpressions": [{"key": "app", "operator": "In", "values": list(apps)}]}


#: the status of bound pods an in-place resize changed (what a kubelet would write): pod name ->
#: status; their usage on the node is the larger of spec, ``allocatedResources`` and ``resources``
#: (``status.resources`` for pod-level resources), or without the spec for an infeasible resize
RESIZED: dict[str, Obj] = {
    "resized-up": {
        "containerStatuses": [
            {
                "name": "c",
                "image": "registry.example/app:1",
                "imageID": "",
                "ready": True,
                "restartCount": 0,
                "allocatedResources": {"cpu": "2", "memory": "1Gi"},
                "resources": {"requests": {"cpu": "2", "memory": "1Gi"}},
            }
        ]
    },
    "resize-infeasible": {
        "conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}],
        "containerStatuses": [
            {
                "name": "c",
                "image": "registry.example/app:1",
                "imageID": "",
                "ready": True,
                "restartCount": 0,
                "allocatedResources": {"cpu": "500m", "memory": "512Mi"},
                "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
            }
        ],
    },
    "pod-level-resized": {
        "allocatedResources": {"cpu": "1500m", "memory": "3Gi"},
        "resources": {"requests": {"cpu": "1500m", "memory": "3Gi"}},
    },
}
BOUND += [
    ("resized-up", "a2", {"app": "resize"}, [container(cpu="1", memory="1Gi")], "", {}),
    ("resize-infeasible", "c3", {"app": "resize"}, [container(cpu="3", memory="6Gi")], "", {}),
    (
        "pod-level-resized",
        "b2",
        {"app": "resize"},
        [container("a", cpu="100m"), container("b")],
        "",
        {"resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}}},
    ),
    (
        "pod-level",
        "c1",
        {"app": "level"},
        [container("a", memory="256Mi"), container("b")],
        "",
        {"resources": {"requests": {"cpu": "1500m"}, "limits": {"cpu": "1500m"}}},
    ),
]


#: the pod specs, each judged alone on the cluster of NODES and BOUND
SPECS: list[Obj] = [
    spec_pod("besteffort"),
    spec_pod("small", [container(cpu="100m", memory="128Mi")]),
    spec_pod("medium", [container(cpu="1", memory="4Gi")]),
    spec_pod("large", [container(cpu="3", memory="6Gi")]),
    spec_pod("cpu-heavy", [container(cpu="5", memory="1Gi")]),
    spec_pod("memory-heavy", [container(cpu="500m", memory="14Gi")]),
    spec_pod("too-big-cpu", [container(cpu="40", memory="1Gi")]),
    spec_pod("too-big-memory", [container(cpu="1", memory="100Gi")]),
    spec_pod("cpu-only", [container(cpu="2")]),
    spec_pod("memory-only", [container(memory="3Gi")]),
    spec_pod("two-containers", [container("a", cpu="1", memory="1Gi"), container("b", memory="2Gi")]),
    spec_pod(
        "init-big",
        [container(cpu="500m", memory="512Mi")],
        initContainers=[container("init", cpu="3", memory="1Gi")],
    ),
    spec_pod(
        "sidecars",
        [container(cpu="1", memory="1Gi")],
        initContainers=[
            container("proxy", cpu="500m", memory="256Mi", restartPolicy="Always"),
            container("setup", cpu="2", memory="512Mi"),
            container("log", cpu="250m", memory="128Mi", restartPolicy="Always"),
        ],
    ),
    spec_pod(
        "pod-level",
        [container("a", cpu="200m"), container("b")],
        resources={"requests": {"cpu": "2", "memory": "3Gi"}, "limits": {"cpu": "2", "memory": "3Gi"}},
    ),
    spec_pod(
        "ephemeral",
        [
            container(
                cpu="500m",
                memory="1Gi",
                resources={"requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "10Gi"}},
            )
        ],
    ),
    spec_pod(
        "gpu",
        [
            container(
                resources={
                    "requests": {"cpu": "1", "memory": "2Gi", "example.com/gpu": "1"},
                    "limits": {"example.com/gpu": "1"},
                }
            )
        ],
    ),
    spec_pod(
        "gpu-tolerating",
        [
            container(
                resources={
                    "requests": {"cpu": "1", "memory": "2Gi", "example.com/gpu": "1"},
                    "limits": {"example.com/gpu": "1"},
                }
            )
        ],
        tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
    ),
    spec_pod("tolerate-all", [container(cpu="1", memory="1Gi")], tolerations=[{"operator": "Exists"}]),
    spec_pod(
        "tolerate-spot",
        [container(cpu="1", memory="1Gi")],
        tolerations=[{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}],
    ),
    spec_pod(
        "tolerate-maintenance",
        [container(cpu="250m", memory="256Mi")],
        tolerations=[{"key": "maintenance", "operator": "Equal", "value": "soon", "effect": "NoExecute"}],
    ),
    spec_pod("node-selector", [container(cpu="500m", memory="1Gi")], nodeSelector={"disktype": "ssd"}),
    spec_pod("node-selector-none", [container(cpu="500m")], nodeSelector={"disktype": "nvme"}),
    spec_pod(
        "required-zones",
        [container(cpu="1", memory="2Gi")],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [zone_term("a", "c")]}
            }
        },
    ),
    spec_pod(
        "preferred-zones",
        [container(cpu="1", memory="2Gi")],
        affinity={
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 80, "preference": zone_term("b")},
                    {
                        "weight": 20,
                        "preference": {"matchExpressions": [{"key": "disktype", "operator": "In", "values": ["ssd"]}]},
                    },
                ]
            }
        },
    ),
    spec_pod(
        "required-hostname",
        [container(cpu="1")],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [f"{PREFIX}-{node}"]}]}
                        for node in ("a1", "b2")
                    ]
                }
            }
        },
    ),
    spec_pod(
        "pod-affinity-web",
        [container(cpu="500m", memory="512Mi")],
        affinity={
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": app_selector("web"), "topologyKey": "topology.kubernetes.io/zone"}
                ]
            }
        },
    ),
    spec_pod(
        "pod-affinity-none",
        [container(cpu="500m")],
        affinity={
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": app_selector("nothing"), "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        },
    ),
    spec_pod(
        "anti-affinity-db",
        [container(cpu="500m", memory="512Mi")],
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": app_selector("db"), "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        },
    ),
    spec_pod(
        "preferred-pod-affinity",
        [container(cpu="500m", memory="512Mi")],
        affinity={
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 50,
                        "podAffinityTerm": {
                            "labelSelector": app_selector("web"),
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 30,
                        "podAffinityTerm": {
                            "labelSelector": app_selector("db", "batch"),
                            "topologyKey": "topology.kubernetes.io/zone",
                        },
                    }
                ]
            },
        },
    ),
    spec_pod(
        "spread-zone-hard",
        [container(cpu="250m", memory="256Mi")],
        labels={"app": "web"},
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
    ),
    spec_pod(
        "spread-host-soft",
        [container(cpu="250m", memory="256Mi")],
        labels={"app": "batch"},
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "batch"}},
            }
        ],
    ),
    spec_pod(
        "spread-zone-soft-web",
        [container(cpu="250m", memory="256Mi")],
        labels={"app": "web"},
        topologySpreadConstraints=[
            {
                "maxSkew": 2,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
    ),
    spec_pod("host-port-8080", [container(cpu="250m", ports=[{"containerPort": 80, "hostPort": 8080}])]),
    spec_pod("host-port-6379", [container(cpu="250m", ports=[{"containerPort": 6379, "hostPort": 6379}])]),
    spec_pod("image-web", [container(cpu="250m", memory="256Mi", img="registry.example/web:1.0")]),
    spec_pod(
        "image-big",
        [container(cpu="250m", memory="256Mi", img="registry.example/big:1.0")],
        tolerations=[{"operator": "Exists"}],
    ),
    spec_pod(
        "images-two",
        [
            container("a", cpu="250m", img="registry.example/web:1.0"),
            container("b", cpu="250m", img="registry.example/tools:2"),
        ],
    ),
    spec_pod(
        "unschedulable-tolerated",
        [container(cpu="500m")],
        tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
    ),
    spec_pod("never-preempts", [container(cpu="9", memory="1Gi")], priorityClassName="v136-mid-never"),
    spec_pod(
        "preempt-blocked-port",
        [container(cpu="250m", ports=[{"containerPort": 6379, "hostPort": 6379}])],
        nodeSelector={"kubernetes.io/hostname": f"{PREFIX}-d1"},
        priorityClassName="v136-mid",
    ),
    spec_pod(
        "preempt-too-big",
        [container(cpu="9", memory="1Gi")],
        priorityClassName="v136-mid",
        nodeSelector={"topology.kubernetes.io/zone": "a"},
    ),
    spec_pod(
        "zone-and-taint",
        [container(cpu="1")],
        nodeSelector={"topology.kubernetes.io/zone": "b"},
        tolerations=[{"key": "spot", "operator": "Exists"}],
    ),
    spec_pod(
        "combined",
        [container(cpu="2", memory="3Gi", img="registry.example/web:1.0")],
        labels={"app": "web"},
        tolerations=[{"key": "spot", "operator": "Exists"}],
        affinity={
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": zone_term("c")}]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": app_selector("web"),
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            },
        },
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
    ),
]

SPECS += [
    spec_pod(
        "restart-all-containers",
        [container(cpu="250m", memory="256Mi", restartPolicy="Never", restartPolicyRules=RESTART_ALL)],
        restartPolicy="Never",
    ),
    spec_pod(
        "restart-all-containers-zone-b",
        [container(cpu="250m", restartPolicy="Never", restartPolicyRules=RESTART_ALL)],
        restartPolicy="Never",
        nodeSelector={"topology.kubernetes.io/zone": "b"},
    ),
    spec_pod(
        "spread-match-label-keys",
        [container(cpu="250m", memory="256Mi")],
        labels={"app": "web", "version": "v2"},
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "web"}},
                "matchLabelKeys": ["version"],
            }
        ],
    ),
    spec_pod(
        "required-and-preferred",
        [container(cpu="500m", memory="1Gi")],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [zone_term("a", "b", "c")]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 60, "preference": zone_term("c")}],
            }
        },
        tolerations=[{"key": "spot", "operator": "Exists"}],
    ),
    # the API server merges matchLabelKeys into the term's labelSelector (v1.36): the scheduler reads that
    spec_pod(
        "pod-affinity-match-label-keys",
        [container(cpu="250m", memory="256Mi")],
        labels={"app": "web", "version": "v2"},
        affinity={
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": app_selector("web"),
                            "matchLabelKeys": ["version"],
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            }
        },
    ),
    spec_pod("best-effort-two-containers", [container("a"), container("b", img="registry.example/web:1.0")]),
    spec_pod(
        "memory-hog-sidecar",
        [container(memory="1Gi")],
        initContainers=[container("s", memory="5Gi", restartPolicy="Always")],
    ),
    # a PreFilterResult narrows to one node: the others count as 'node(s) didn't satisfy plugin(s) [NodeAffinity]'
    spec_pod(
        "prefilter-result-busy-port",
        [container(cpu="250m", ports=[{"containerPort": 6379, "hostPort": 6379}])],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [f"{PREFIX}-d1"]}]}
                    ]
                }
            }
        },
    ),
]

_SCORED = re.compile(r'"Plugin scored node for pod" pod="([^"]+)" plugin="([^"]+)" node="([^"]+)" score=(-?\d+)')
_TOTAL = re.compile(r'"Calculated node\'s final score for pod" pod="([^"]+)" node="([^"]+)" score=(-?\d+)')


def kube_answers(log: str, key: str) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """``(plugin -> node -> weighted score, node -> TotalScore)`` kube-scheduler logged for ``key``."""
    plugins: dict[str, dict[str, int]] = {}
    totals: dict[str, int] = {}
    for pod, plugin, node, score in _SCORED.findall(log):
        if pod == key:
            plugins.setdefault(plugin, {})[node] = int(score)
    for pod, node, score in _TOTAL.findall(log):
        if pod == key:
            totals[node] = int(score)
    return plugins, totals


class Project:
    """The project's standalone framework: a default ``schedulerName`` profile on an in-memory
    cluster state seeded with the API server's nodes and pods."""

    def __init__(self) -> None:
        from app.bootstrap import assemble
        from app.config import parse_config
        from app.plugins import default_registry
        from app.scheduler.queue import SchedulingQueue
        from app.scheduler.scheduler import Scheduler

        registry = default_registry(False)
        doc = {
            "apiVersion": "config.scheduler-extender.dev/v1alpha1",
            "kind": "ExtenderConfiguration",
            "cluster": {},
            "profiles": [{"name": SCHEDULER, "schedulerName": SCHEDULER}],
        }
        self.service = assemble(parse_config(doc, registry), registry)
        assert self.service.cluster is not None
        self.cache = self.service.cluster.cache
        self.framework = self.service.frameworks[SCHEDULER]
        queue = SchedulingQueue(nominator=self.framework.nominator)
        self.scheduler = Scheduler(SCHEDULER, self.framework, self.service.cluster, queue)
        #: the node the last scored spec went to by v1.36.3's heap (ties included)
        self.last_choice = ""

    def answer(
        self, nodes: list[Obj], pods: list[Obj], pod: Obj
    ) -> tuple[dict[str, dict[str, int]], dict[str, int], str]:
        """``(plugin -> node -> weighted score, node -> TotalScore, FitError text or "")`` for
        ``pod``, as ``schedulePod`` (pkg/scheduler/schedule_one.go) with every node evaluated
        (fewer than 100 nodes: ``numFeasibleNodesToFind`` is all of them)."""
        from app.framework import CycleState, PodInfo, objects
        from app.framework.scores import SortedNodeScores
        from app.framework.status import FitError

        self.cache.seed(
            [msgspec.convert(n, objects.Node) for n in nodes], [msgspec.convert(p, objects.Pod) for p in pods]
        )
        snapshot = self.cache.snapshot()
        fw = self.framework
        for ep in fw.post_filter_plugins:  # a dry run only: no victim is deleted
            ep.plugin.prepare_candidate = lambda candidate, pod: None  # type: ignore[attr-defined]
        info = PodInfo(msgspec.convert(pod, objects.Pod))
        state = CycleState(snapshot)
        all_nodes = snapshot.list()
        # the scheduler's own findNodesThatFitPod (every node evaluated below 100 nodes)
        feasible, diagnosis, _, status = self.scheduler.find_nodes_that_fit_pod(state, info, all_nodes)
        assert status.is_success(), status
        if not feasible:
            fit = FitError(len(all_nodes), diagnosis)
            _, post = fw.run_post_filter(state, info, diagnosis.node_to_status)
            fit.diagnosis.post_filter_msg = post.message
            return {}, {}, fit.error()
        if len(feasible) == 1:
            return {}, {}, ""
        status = fw.run_pre_score_plugins(state, info, feasible)
        assert status.is_success(), status
        scored, status = fw.run_score_plugins(state, info, feasible)
        assert status.is_success(), status
        plugins: dict[str, dict[str, int]] = {}
        totals: dict[str, int] = {}
        # the node v1.36.3's heap picks from the scores in feasible-node order (sortedNodeScores)
        self.last_choice = SortedNodeScores(scored.node_plugin_scores()).pop()
        for nps in scored.node_plugin_scores():
            totals[nps.name] = nps.total_score
            for ps in nps.scores:
                plugins.setdefault(ps.name, {})[nps.name] = ps.score
        return plugins, totals, ""


@pytest.fixture(scope="module")
def lab(cluster: Cluster) -> Iterator[tuple[Cluster, KubeScheduler]]:
    # kube-scheduler scores every node of the cluster, the project those of NODES: the earlier
    # tiers' fake nodes (thousands, with their pods) go first; a cluster with nodes of its own
    # (not the tier's) cannot be compared node by node
    items = cluster.get("/api/v1/nodes")["items"]
    foreign = [n["metadata"]["name"] for n in items if (n["metadata"].get("labels") or {}).get(FAKE) != "true"]
    if foreign:
        pytest.skip(f"the cluster has nodes the tier did not make ({len(foreign)}): the scores compare whole clusters")
    others = [n["metadata"]["name"] for n in items if n["metadata"]["name"] not in NODES]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda name: cluster.request("DELETE", f"/api/v1/nodes/{name}", ok=(200, 404)), others))
    wait_for(
        lambda: {n["metadata"]["name"] for n in cluster.get("/api/v1/nodes")["items"]} <= set(NODES),
        what="the other nodes gone",
    )
    cluster.namespace(NS)
    for name, value, never in (
        ("v136-low", -10, False),
        ("v136-mid", 500, False),
        ("v136-mid-never", 500, True),
        ("v136-high", 1000, False),
    ):
        doc: Obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}}
        doc["value"] = value
        if never:
            doc["preemptionPolicy"] = "Never"
        cluster.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", ok=(201, 409), json=doc)
    merge = {"Content-Type": "application/merge-patch+json"}
    for name, (alloc, labels, taints, images, cordoned) in NODES.items():
        meta = {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", FAKE: "true", **labels},
        }
        cluster.request(
            "POST", "/api/v1/nodes", ok=(201, 409), json={"apiVersion": "v1", "kind": "Node", "metadata": meta}
        )
        status = {
            "capacity": alloc,
            "allocatable": alloc,
            "images": images,
            "conditions": [{"type": "Ready", "status": "True", "reason": "LabFake", "message": "no kubelet"}],
        }
        if name in DECLARED:
            status["declaredFeatures"] = DECLARED[name]
        cluster.request("PATCH", f"/api/v1/nodes/{name}/status", json={"status": status}, headers=merge)
        spec = {"taints": taints or None, "unschedulable": cordoned or None}
        cluster.request("PATCH", f"/api/v1/nodes/{name}", json={"spec": spec}, headers=merge)
    for name, node, labels, containers, priority, extra in BOUND:
        doc = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"bound-{name}", "namespace": NS, "labels": labels},
            "spec": {
                "nodeName": f"{PREFIX}-{node}",
                "containers": containers,
                "terminationGracePeriodSeconds": 0,
                **extra,
            },
        }
        if priority:
            doc["spec"]["priorityClassName"] = priority
        cluster.request("POST", f"/api/v1/namespaces/{NS}/pods", ok=(201, 409), json=doc)
        if name in RESIZED:
            path = f"/api/v1/namespaces/{NS}/pods/bound-{name}/status"
            cluster.request("PATCH", path, json={"status": RESIZED[name]}, headers=merge)
    kube = cluster.scheduler(KUBE_SCHEDULER_CONFIG, verbosity=10)
    yield cluster, kube
    kube.stop()
    cluster.delete_pods(NS)
    for name in NODES:
        cluster.request("DELETE", f"/api/v1/nodes/{name}", ok=(200, 404))


def decided(cluster: Cluster, name: str) -> Obj | None:
    """The pod once kube-scheduler bound it or wrote ``PodScheduled=False Unschedulable``."""
    pod: Obj = cluster.get(f"/api/v1/namespaces/{NS}/pods/{name}")
    if pod["spec"].get("nodeName"):
        return pod
    for condition in pod.get("status", {}).get("conditions") or ():
        if (
            condition["type"] == "PodScheduled"
            and condition["status"] == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            return pod
    return None


def gone(cluster: Cluster, name: str) -> bool:
    return bool(cluster.api.get(f"/api/v1/namespaces/{NS}/pods/{name}").status_code == 404)


class Tally:
    """What agreed, over the specs compared."""

    def __init__(self) -> None:
        self.nodes = self.nodes_equal = self.plugins = self.plugins_equal = 0
        self.fits = self.fits_equal = self.chosen = self.chosen_equal = 0
        self.tied = self.tied_equal = 0

    def line(self, specs: int) -> str:
        return (
            f"v1.36.3 agreement: TotalScore {self.nodes_equal}/{self.nodes} nodes, plugin scores "
            f"{self.plugins_equal}/{self.plugins}, FitError {self.fits_equal}/{self.fits}, chosen node "
            f"{self.chosen_equal}/{self.chosen} (unique best), tie broken alike {self.tied_equal}/{self.tied}, "
            f"{specs} specs"
        )


def compare(cluster: Cluster, kube: KubeScheduler, project: Project, spec: Obj, tally: Tally) -> Obj:
    """Give ``spec`` to kube-scheduler and the project on the same nodes and pods; its row of the
    details (each node's TotalScore and each plugin's score as ``[kube-scheduler, project]``, the
    FitError texts, the node kube-scheduler chose)."""
    name = spec["metadata"]["name"]
    nodes = [n for n in cluster.get("/api/v1/nodes")["items"] if n["metadata"]["name"] in NODES]
    pods = [p for p in cluster.pods(NS) if p["spec"].get("nodeName")]
    created = cluster.request("POST", f"/api/v1/namespaces/{NS}/pods", json=spec)
    pod = wait_for(lambda: decided(cluster, name), seconds=60, what=f"kube-scheduler deciding {name}")
    time.sleep(0.3)  # the cycle's log lines are flushed
    kube_plugins, kube_totals = kube_answers(kube.text(), f"{NS}/{name}")
    message = ""
    if not pod["spec"].get("nodeName"):
        message = next(c["message"] for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    our_plugins, our_totals, our_message = project.answer(nodes, pods, created)
    chosen = pod["spec"].get("nodeName", "")
    row: Obj = {"pod": name, "node": chosen, "kube_fit_error": message, "our_fit_error": our_message}
    if message or our_message:
        tally.fits += 1
        tally.fits_equal += message == our_message
    tally.nodes += len(set(kube_totals) | set(our_totals))
    tally.nodes_equal += sum(1 for n, t in kube_totals.items() if our_totals.get(n) == t)
    row["totals"] = {n: [kube_totals.get(n), our_totals.get(n)] for n in sorted(set(kube_totals) | set(our_totals))}
    row["plugins"] = {}
    for plugin in sorted(set(kube_plugins) | set(our_plugins)):
        theirs, ours = kube_plugins.get(plugin, {}), our_plugins.get(plugin, {})
        scored = sorted(set(theirs) | set(ours))
        tally.plugins += len(scored)
        tally.plugins_equal += sum(1 for n in scored if theirs.get(n) == ours.get(n))
        row["plugins"][plugin] = {n: [theirs.get(n), ours.get(n)] for n in scored}
    if our_totals:
        best = max(our_totals.values())
        top = [n for n, t in our_totals.items() if t == best]
        if len(top) == 1:
            tally.chosen += 1
            tally.chosen_equal += top[0] == chosen
            row["our_choice"] = top[0]
        elif chosen:  # a tie: the heap decides, over a feasible-node order Go's parallel Filter varies
            tally.tied += 1
            tally.tied_equal += project.last_choice == chosen
            row["tied"], row["our_tie_choice"] = top, project.last_choice
    row["equal"] = (
        message == our_message
        and all(a == b for a, b in row["totals"].values())
        and (row.get("our_choice", chosen) == chosen)
    )
    cluster.request("DELETE", f"/api/v1/namespaces/{NS}/pods/{name}", ok=(200, 404), params={"gracePeriodSeconds": 0})
    wait_for(lambda: gone(cluster, name), what=f"{name} deleted")
    time.sleep(0.3)  # kube-scheduler's informer sees the deletion before the next spec
    return row


def test_scores_and_fit_errors_equal_kube_scheduler_v136(lab: tuple[Cluster, KubeScheduler]) -> None:
    cluster, kube = lab
    project, tally = Project(), Tally()
    details = [compare(cluster, kube, project, spec, tally) for spec in SPECS]
    out = cluster.workdir / "scores-v136.json"
    out.write_text(json.dumps(details, indent=1))
    summary = f"{tally.line(len(SPECS))}; details in {out}"
    print("\n" + summary)
    differing = [d for d in details if not d["equal"]]
    assert not differing, summary + "\n" + json.dumps(differing[:5], indent=1)
    assert tally.nodes > 150 and tally.fits >= 8 and tally.chosen >= 30  # the specs still judge what they meant to

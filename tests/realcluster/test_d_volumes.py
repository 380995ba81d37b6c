"""Volumes with the standalone scheduler on the real API server (what ``tests/support/apiserver.py``
and ``tests/support/provisioner.py`` only imitate in ``tests/e2e/test_volumes.py``). No PV
controller and no provisioner run in the lab: :class:`Controller` plays both, as
kube-controller-manager's ``persistentvolume-binder`` and an external-provisioner would, through
the API (polling). Nodes ``tier-vol-{a,b,c}-{1,2}`` in zones a, b, c; the pods select them.

- a claim bound to a volume whose node affinity is zone b: the pod lands in zone b;
- a ``WaitForFirstConsumer`` claim of a dynamically provisioned class: the scheduler writes
  ``volume.kubernetes.io/selected-node``, the volume is provisioned there, and the pod's Binding
  comes only after the claim is bound, to the selected node;
- a ``WaitForFirstConsumer`` claim with one ``Available`` volume of its class, pinned to zone c (a
  local volume): the scheduler binds the volume (its ``claimRef``) and the pod lands in zone c.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import REPO, free_port
from tests.realcluster.extender import pod
from tests.realcluster.support import Cluster, Obj, stop_process, wait_for

SCHEDULER = "volume-scheduler"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
ZONE = "topology.kubernetes.io/zone"
DRIVER = "test.csi.example.com"
MERGE = {"Content-Type": "application/merge-patch+json"}


def pv(name: str, storage_class: str, affinity: list[Obj], claim_ref: Obj | None = None) -> Obj:
    spec: Obj = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": storage_class,
        "persistentVolumeReclaimPolicy": "Delete",
        "volumeMode": "Filesystem",
        "csi": {"driver": DRIVER, "volumeHandle": f"handle-{name}"},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": affinity}]}},
    }
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def pvc(name: str, storage_class: str) -> Obj:
    spec = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
        "storageClassName": storage_class,
    }
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}


class Controller:
    """The PV controller and a provisioner for the claims of one namespace (see the module doc).
    ``bound_before_claim``: pods found bound when their claim was about to be bound (must stay
    empty: the Binding comes after the claim is bound)."""

    def __init__(self, cluster: Cluster, namespace: str, provisioned_classes: set[str]) -> None:
        self.cluster = cluster
        self.ns = namespace
        self.classes = provisioned_classes
        self.bound_before_claim: list[str] = []
        #: pod -> its ``status.nominatedNodeName`` when its claim was about to be bound (the
        #: scheduler waits in PreBind then: NominatedNodeNameForExpectation has written it)
        self.nominated_at_claim: dict[str, str] = {}
        self.provisioned: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="tier-pv-controller")
        self._errors: list[BaseException] = []

    def __enter__(self) -> Controller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        assert not self._errors, self._errors

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._once()
            except BaseException as e:  # surfaced at __exit__
                self._errors.append(e)
                return
            self._stop.wait(0.3)

    def _once(self) -> None:
        c = self.cluster
        volumes = {v["metadata"]["name"]: v for v in c.get("/api/v1/persistentvolumes")["items"]}
        for claim in c.get(f"/api/v1/namespaces/{self.ns}/persistentvolumeclaims")["items"]:
            if claim["spec"].get("volumeName"):
                continue
            meta = claim["metadata"]
            # a volume the scheduler gave this claim (static binding): bind the claim to it
            chosen = [
                name for name, v in volumes.items() if (v["spec"].get("claimRef") or {}).get("uid") == meta["uid"]
            ]
            selected = (meta.get("annotations") or {}).get(SELECTED_NODE)
            if not chosen and selected and claim["spec"].get("storageClassName") in self.classes:
                name = f"pvc-{meta['uid']}"
                ref = {"kind": "PersistentVolumeClaim", "namespace": self.ns, "name": meta["name"], "uid": meta["uid"]}
                hostname = [{"key": "kubernetes.io/hostname", "operator": "In", "values": [selected]}]
                c.request(
                    "POST", "/api/v1/persistentvolumes", json=pv(name, claim["spec"]["storageClassName"], hostname, ref)
                )
                self.provisioned.append(meta["name"])
                chosen = [name]
            if chosen:
                self._bind(claim, chosen[0])

    def _bind(self, claim: Obj, volume: str) -> None:
        c, meta = self.cluster, claim["metadata"]
        using = [
            p
            for p in c.pods(self.ns)
            if any(
                (v.get("persistentVolumeClaim") or {}).get("claimName") == meta["name"]
                for v in p["spec"].get("volumes", [])
            )
        ]
        self.bound_before_claim += [p["metadata"]["name"] for p in using if p["spec"].get("nodeName")]
        for p in using:
            self.nominated_at_claim[p["metadata"]["name"]] = p.get("status", {}).get("nominatedNodeName", "")
        annotations = {"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes"}
        path = f"/api/v1/namespaces/{self.ns}/persistentvolumeclaims/{meta['name']}"
        c.request(
            "PATCH",
            path,
            headers=MERGE,
            json={"metadata": {"annotations": annotations}, "spec": {"volumeName": volume}},
        )
        c.request(
            "PATCH", f"/api/v1/persistentvolumes/{volume}/status", headers=MERGE, json={"status": {"phase": "Bound"}}
        )
        status = {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}
        c.request("PATCH", f"{path}/status", headers=MERGE, json={"status": status})


class Schedule:
    def __init__(self, config: Path) -> None:
        self.port = free_port()
        self.log = config.parent / f"schedule-{self.port}.log"
        cmd = [sys.executable, "-m", "app", "schedule", "--config", str(config), "--port", str(self.port)]
        self._out = self.log.open("wb")
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=self._out, stderr=subprocess.STDOUT)

    def ready(self) -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}/readyz", timeout=2).json().get("role") == "leader"
        except (httpx.HTTPError, ValueError):
            return False

    def stop(self) -> None:
        stop_process(self.proc)
        self._out.close()


@pytest.fixture(scope="module")
def zoned(cluster: Cluster) -> dict[str, str]:
    """node name -> zone of the six volume nodes."""
    zones: dict[str, str] = {}
    for zone in "abc":
        for name in cluster.nodes(2, prefix=f"tier-vol-{zone}", labels={ZONE: zone, "tier/volumes": "yes"}):
            zones[name] = zone
    return zones


@pytest.fixture(scope="module")
def scheduler(cluster: Cluster, zoned: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Schedule]:
    tmp = tmp_path_factory.mktemp("volumes")
    doc = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "server": {"host": "127.0.0.1"},
        "cluster": {"kubeconfig": str(cluster.kubeconfig)},
        "scheduling": {"leaseDuration": "5s", "renewDeadline": "3s", "retryPeriod": "1s"},
        "profiles": [
            {
                "name": "volumes",
                "schedulerName": SCHEDULER,
                "pluginConfig": [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 60}}],
            }
        ],
    }
    path = tmp / "volumes.yaml"
    path.write_text(yaml.safe_dump(doc))
    s = Schedule(path)
    try:
        wait_for(s.ready, seconds=60, what="the volume scheduler leading")
        yield s
    finally:
        s.stop()
    log = s.log.read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    ns = cluster.namespace(f"tier-vol-{request.node.name[5:40].replace('_', '-').strip('-')}")
    yield ns
    cluster.delete_pods(ns)


def storage_class(cluster: Cluster, name: str, mode: str, provisioner: str = DRIVER) -> None:
    body = {"metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode}
    cluster.request("POST", "/apis/storage.k8s.io/v1/storageclasses", ok=(201, 409), json=body)


def using(name: str, claim: str) -> Obj:
    return pod(
        name,
        cpu="100m",
        scheduler=SCHEDULER,
        nodeSelector={"tier/volumes": "yes"},
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
    )


def claim_of(cluster: Cluster, ns: str, name: str) -> Any:
    return cluster.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}")


def test_a_pod_whose_claim_is_bound_to_a_zone_b_volume_lands_in_zone_b(
    cluster: Cluster, zoned: dict[str, str], scheduler: Schedule, namespace: str
) -> None:
    storage_class(cluster, "tier-immediate", "Immediate", "kubernetes.io/no-provisioner")
    claim = pvc("data", "tier-immediate")
    claim["spec"]["volumeName"] = f"{namespace}-zone-b"
    claim["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    made = cluster.request("POST", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", json=claim)
    ref = {"kind": "PersistentVolumeClaim", "namespace": namespace, "name": "data", "uid": made["metadata"]["uid"]}
    in_b = [{"key": ZONE, "operator": "In", "values": ["b"]}]
    volume = f"{namespace}-zone-b"
    cluster.request("POST", "/api/v1/persistentvolumes", json=pv(volume, "tier-immediate", in_b, ref))
    # both Bound, as the PV controller leaves them
    cluster.request(
        "PATCH", f"/api/v1/persistentvolumes/{volume}/status", headers=MERGE, json={"status": {"phase": "Bound"}}
    )
    status = {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}
    path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/data/status"
    cluster.request("PATCH", path, headers=MERGE, json={"status": status})
    cluster.create(f"/api/v1/namespaces/{namespace}/pods", [using(f"reader-{i}", "data") for i in range(4)])
    placed = wait_for(
        lambda: len(cluster.bound(namespace)) == 4 and cluster.bound(namespace), seconds=60, what="4 pods bound"
    )
    assert {zoned[n] for n in placed.values()} == {"b"}, placed


def test_a_wait_for_first_consumer_claim_is_provisioned_where_the_pod_is_then_bound(
    cluster: Cluster, zoned: dict[str, str], scheduler: Schedule, namespace: str
) -> None:
    storage_class(cluster, "tier-wffc", "WaitForFirstConsumer")
    with Controller(cluster, namespace, {"tier-wffc"}) as controller:
        for i in range(3):
            cluster.request(
                "POST", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", json=pvc(f"data-web-{i}", "tier-wffc")
            )
        cluster.create(f"/api/v1/namespaces/{namespace}/pods", [using(f"web-{i}", f"data-web-{i}") for i in range(3)])
        placed = wait_for(
            lambda: len(cluster.bound(namespace)) == 3 and cluster.bound(namespace), seconds=90, what="3 pods bound"
        )
    assert sorted(controller.provisioned) == [f"data-web-{i}" for i in range(3)]
    assert controller.bound_before_claim == [], "a Binding came before its claim was bound"
    for i in range(3):
        claim = claim_of(cluster, namespace, f"data-web-{i}")
        assert claim["metadata"]["annotations"][SELECTED_NODE] == placed[f"web-{i}"]
        # NominatedNodeNameForExpectation: PreBind had work, so the node was written first
        assert controller.nominated_at_claim[f"web-{i}"] == placed[f"web-{i}"]
        assert claim["spec"]["volumeName"] == f"pvc-{claim['metadata']['uid']}"


def test_an_available_local_volume_in_zone_c_takes_the_pod_to_zone_c(
    cluster: Cluster, zoned: dict[str, str], scheduler: Schedule, namespace: str
) -> None:
    storage_class(cluster, "tier-local", "WaitForFirstConsumer", "kubernetes.io/no-provisioner")
    in_c = [{"key": ZONE, "operator": "In", "values": ["c"]}]
    name = f"{namespace}-local-c"
    cluster.request("POST", "/api/v1/persistentvolumes", json=pv(name, "tier-local", in_c))
    cluster.request(
        "PATCH", f"/api/v1/persistentvolumes/{name}/status", headers=MERGE, json={"status": {"phase": "Available"}}
    )
    with Controller(cluster, namespace, set()):
        cluster.request(
            "POST", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", json=pvc("local", "tier-local")
        )
        cluster.create(f"/api/v1/namespaces/{namespace}/pods", [using("db", "local")])
        placed = wait_for(lambda: cluster.bound(namespace), seconds=90, what="the pod bound")
    assert zoned[placed["db"]] == "c", placed
    volume = cluster.get(f"/api/v1/persistentvolumes/{name}")
    assert volume["spec"]["claimRef"]["name"] == "local"  # the scheduler's static binding
    assert claim_of(cluster, namespace, "local")["spec"]["volumeName"] == name

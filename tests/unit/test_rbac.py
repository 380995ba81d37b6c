"""`render`'s RBAC: for every shipped configuration and install target, exactly the API calls the
deployed process makes (every call granted, no verb it does not use), nothing beyond upstream's
``system:kube-scheduler`` that the configuration does not need, and the volume needs' rules."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from app.config import Configuration, load_config, parse_config
from app.deploy.render import RenderOptions, every_target, render
from app.framework import ClusterNeeds, PluginEntry
from app.framework.build import effective_points
from app.framework.registry import Registry
from app.framework.status import Status
from app.kube.client import KubeClient
from app.plugins import default_registry

from ..conftest import REPO

#: Every shipped configuration (``None``: the embedded default, what manifests/ holds).
CONFIGS = [None, *sorted(p.name for p in (REPO / "examples").glob("*.yaml"))]

#: The file holding each target's RBAC of the service's own identity.
RBAC_FILE = {
    "kubeadm": "scheduler-extender-rbac.yaml",
    "static-pod": "scheduler-extender-rbac.yaml",
    "second-scheduler": "second-scheduler/rbac.yaml",
    "standalone": "scheduler/rbac.yaml",
}

Call = tuple[str, str, str]  # (API group, resource, verb)


def _request_info(method: str, path: str, query: dict[str, Any]) -> tuple[Call, str | None, str | None]:
    """``(group, resource[/subresource], verb), namespace, name`` of a request, as kube-apiserver's
    RequestInfoFactory reads it (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go)."""
    parts = urlsplit(path).path.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    else:
        group, rest = parts[1], parts[3:]
    namespace = None
    if rest[0] == "namespaces" and len(rest) > 2:
        namespace, rest = rest[1], rest[2:]
    resource, name = rest[0], rest[1] if len(rest) > 1 else None
    if len(rest) > 2:
        resource = f"{resource}/{rest[2]}"
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method)
    if verb is None:
        verb = "get" if name else ("watch" if query.get("watch") else "list")
    return (group, resource, verb), namespace, name


def _calls_of_client() -> dict[str, Call]:
    """What each :class:`KubeClient` method asks of the API server, from the real client (its
    ``request`` recorded, no network)."""
    client = KubeClient.__new__(KubeClient)
    seen: list[tuple[str, str, dict[str, Any]]] = []

    class Response:
        data = b'{"metadata": {}, "items": []}'

    def record(method: str, path: str, timeout: Any, query: Any = None, **_: Any) -> Response:
        seen.append((method, path, dict(query or {})))
        return Response()

    client.request = record  # type: ignore[method-assign]
    calls = {
        "create_binding": lambda: client.create_binding("ns", "p", "uid", "node", 1.0),
        "get_pod": lambda: client.get_pod("ns", "p", 1.0),
        "annotate_pod": lambda: client.annotate_pod("ns", "p", {"a": "b"}, 1.0),
        "create_event": lambda: client.create_event("ns", {}),
        "patch_event": lambda: client.patch_event("ns", "e", {}),
        "set_pod_condition": lambda: client.set_pod_condition("ns", "p", {}),
        "set_nominated_node": lambda: client.set_nominated_node("ns", "p", "node"),
        "delete_pod": lambda: client.delete_pod("ns", "p", "uid"),
        "create_lease": lambda: client.create_lease("ns", {}),
        "replace_lease": lambda: client.replace_lease("ns", "l", {}),
        "get_lease": lambda: client.get_lease("ns", "l", 1.0),
    }
    out = {}
    for method, call in calls.items():
        seen.clear()
        call()
        ((verb_method, path, query),) = seen
        out[method] = _request_info(verb_method, path, query)[0]
    return out


CLIENT = _calls_of_client()
#: The kinds the cluster state lists and watches for each declared need (its reflectors).
WATCHED = {
    "pod_groups": [("scheduling.x-k8s.io", "podgroups")],
    "pod_disruption_budgets": [("policy", "poddisruptionbudgets")],
    "spread_selectors": [
        ("", "services"),
        ("", "replicationcontrollers"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
    ],
    "volumes": [
        ("", "persistentvolumes"),
        ("", "persistentvolumeclaims"),
        ("storage.k8s.io", "storageclasses"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "csidrivers"),
        ("storage.k8s.io", "volumeattachments"),
    ],
    "csi_storage_capacities": [("storage.k8s.io", "csistoragecapacities")],
    "namespaces": [("", "namespaces")],
    "dynamic_resources": [
        ("resource.k8s.io", "resourceclaims"),
        ("resource.k8s.io", "resourceslices"),
        ("resource.k8s.io", "deviceclasses"),
    ],
}
#: Issue 29 asks the volume kinds be granted exactly as kube-scheduler's roles grant them
#: (``system:volume-scheduler``: PVs and PVCs get/list/watch/update/patch; ``system:kube-scheduler``:
#: StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities get/list/watch), although the cluster
#: state only lists and watches them and PreBind patches claims and volumes: the one place render
#: grants verbs the code does not call.
VOLUME_SCHEDULER_VERBS = {
    "volumes": {
        ("", "persistentvolumes"): ("get", "list", "watch", "update", "patch"),
        ("", "persistentvolumeclaims"): ("get", "list", "watch", "update", "patch"),
        ("storage.k8s.io", "storageclasses"): ("get", "list", "watch"),
        ("storage.k8s.io", "csinodes"): ("get", "list", "watch"),
        ("storage.k8s.io", "csidrivers"): ("get", "list", "watch"),
        ("storage.k8s.io", "volumeattachments"): ("get", "list", "watch"),
    },
    "csi_storage_capacities": {("storage.k8s.io", "csistoragecapacities"): ("get", "list", "watch")},
    # issue 36: DynamicResources' kinds as system:kube-scheduler v1.36 grants them (its PreBind
    # GETs and PUTs claims, PUTs and PATCHes their status; the reflectors list and watch)
    "dynamic_resources": {
        ("resource.k8s.io", "resourceclaims"): ("get", "list", "watch", "update", "patch"),
        ("resource.k8s.io", "resourceclaims/status"): ("get", "list", "watch", "update", "patch"),
        ("resource.k8s.io", "resourceslices"): ("get", "list", "watch"),
        ("resource.k8s.io", "deviceclasses"): ("get", "list", "watch"),
    },
}


def test_the_client_calls_are_read_from_the_real_client() -> None:
    assert CLIENT["create_binding"] == ("", "pods/binding", "create")
    assert CLIENT["set_nominated_node"] == ("", "pods/status", "patch")
    assert CLIENT["replace_lease"] == ("coordination.k8s.io", "leases", "update")
    assert CLIENT["annotate_pod"] == ("", "pods", "patch")


def expected_calls(config: Configuration, registry: Registry, target: str) -> set[Call]:
    """The API calls the process ``target`` deploys makes with ``config``: what the code does,
    stated by the client methods each feature calls (not by render's tables)."""
    if config.cluster is None:
        return set()
    schedule = target == "standalone"
    methods: set[str] = set()
    calls = {(g, r, v) for r in ("nodes", "pods") for g in ("",) for v in ("list", "watch")}
    for profile in config.profiles:
        points = effective_points(profile, registry)
        scheduled = schedule and bool(profile.scheduler_name)
        served = set() if schedule else set(profile.extender.verbs)
        for point, refs in points.items():
            for ref in refs:
                entry = registry.get(ref.name)
                assert entry is not None
                if entry.needs is not None:
                    needs = entry.needs(None if entry.args is None else _args(profile, entry), 1.0)
                    for field, kinds in WATCHED.items():
                        if getattr(needs, field):
                            calls |= {(g, r, v) for g, r in kinds for v in ("list", "watch")}
                            upstream = VOLUME_SCHEDULER_VERBS.get(field, {})
                            calls |= {(g, r, v) for (g, r), verbs in upstream.items() for v in verbs}
                if ref.name == "DefaultBinder" and point == "bind" and (scheduled or "bind" in served):
                    methods |= {"create_binding", "get_pod"}  # cluster/binding.py
                if ref.name == "DefaultPreemption" and point == "post_filter" and scheduled:
                    methods |= {"set_pod_condition", "delete_pod", "set_nominated_node"}  # ClusterConnection._preempt
        if scheduled:
            methods |= {"set_pod_condition", "set_nominated_node"}  # PodScheduled; clear_nomination
        if "filter" in served and config.cluster.requeue_rejected_pods:
            methods.add("annotate_pod")  # cluster/requeue.py, fed by the filter verb
    if config.diagnostics.events.enabled:
        methods |= {"create_event", "patch_event"}
    if schedule and config.scheduling.leader_elect and any(p.scheduler_name for p in config.profiles):
        methods |= {"get_lease", "create_lease", "replace_lease"}  # cluster/leader.py LeaseElector
    deployed = _deployed(config, target)
    if not schedule and deployed.cluster is not None and deployed.cluster.leader_election is not None:
        methods.add("get_lease")  # LeaseFollower
    return calls | {CLIENT[m] for m in methods}


def _args(profile: Any, entry: PluginEntry) -> Any:
    from app.framework.build import plugin_args

    return plugin_args(profile, entry)


def _deployed(config: Configuration, target: str) -> Configuration:
    """The configuration the target's pod mounts (render's secure defaults for the static pods)."""
    files = render(config, default_registry(), RenderOptions(), "x", [target])
    name = next(n for n in files if n.endswith("scheduler-extender-config.yaml"))
    return parse_config(yaml.safe_load(files[name]), default_registry())


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def granted(files: dict[str, str], target: str) -> list[tuple[Call, tuple[str, ...], str | None]]:
    """Each (group, resource, verb) the service's roles grant, with the resource names and the
    Role's namespace (``None``: the ClusterRole)."""
    out = []
    for doc in _docs(files.get(RBAC_FILE[target], "")):
        if doc["kind"] not in ("ClusterRole", "Role") or doc["metadata"]["name"].endswith("-leader-election"):
            continue  # (the second scheduler's kube-scheduler's own Lease Role)
        ns = doc["metadata"].get("namespace") if doc["kind"] == "Role" else None
        for rule in doc["rules"]:
            for g, r, v in itertools.product(rule["apiGroups"], rule["resources"], rule["verbs"]):
                out.append(((g, r, v), tuple(rule.get("resourceNames", ())), ns))
    return out


def _cases() -> list[tuple[str | None, str]]:
    registry = default_registry()
    return [
        (name, target)
        for name in CONFIGS
        for target in every_target(load_config(None if name is None else REPO / "examples" / name, registry))
    ]


def _render(name: str | None, target: str) -> tuple[Configuration, dict[str, str]]:
    registry = default_registry()
    config = load_config(None if name is None else REPO / "examples" / name, registry)
    return config, render(config, registry, RenderOptions(), "x", [target])


@pytest.mark.parametrize(("name", "target"), _cases())
def test_every_call_is_granted_and_no_verb_the_configuration_does_not_use(name: str | None, target: str) -> None:
    config, files = _render(name, target)
    expected = expected_calls(config, default_registry(), target)
    rules = {call for call, _, _ in granted(files, target)}
    if target == "second-scheduler":  # the sidecar shares kube-scheduler's account and its roles
        assert rules <= expected, f"granted but never called: {sorted(rules - expected)}"
        election = {("coordination.k8s.io", "leases", v) for v in ("get",)}  # its Role <name>-leader-election
        held = rules | UPSTREAM_CALLS | election
        assert expected <= held, f"called but not granted: {sorted(expected - held)}"
        return
    assert rules - expected == set(), "granted but never called"
    assert expected - rules == set(), "called but not granted"


def test_the_leases_are_limited_to_the_configured_ones_in_their_namespace() -> None:
    _, files = _render("ip-scheduler.yaml", "standalone")
    leases = [(call, names, ns) for call, names, ns in granted(files, "standalone") if call[1] == "leases"]
    assert sorted(leases) == [
        (("coordination.k8s.io", "leases", "create"), (), "kube-system"),
        (("coordination.k8s.io", "leases", "get"), ("ip-scheduler",), "kube-system"),
        (("coordination.k8s.io", "leases", "update"), ("ip-scheduler",), "kube-system"),
    ]
    _, files = _render("cluster.yaml", "kubeadm")  # a follower of kube-scheduler's Lease reads it only
    leases = [(call, names, ns) for call, names, ns in granted(files, "kubeadm") if call[1] == "leases"]
    assert leases == [(("coordination.k8s.io", "leases", "get"), ("kube-scheduler",), "kube-system")]


def test_pods_patch_is_granted_only_with_re_queue_assistance_and_the_file_says_so(tmp_path: Path) -> None:
    _, files = _render("cluster.yaml", "kubeadm")
    text = files["scheduler-extender-rbac.yaml"]
    assert ("", "pods", "patch") in {c for c, _, _ in granted(files, "kubeadm")}
    assert "# patch: re-queue assistance (cluster.requeueRejectedPods)" in text
    doc = yaml.safe_load((REPO / "examples" / "cluster.yaml").read_text())
    doc["cluster"]["requeueRejectedPods"] = False
    path = tmp_path / "no-requeue.yaml"
    path.write_text(yaml.safe_dump(doc))
    registry = default_registry()
    files = render(load_config(path, registry), registry, RenderOptions(), "x", ["kubeadm"])
    assert ("", "pods", "patch") not in {c for c, _, _ in granted(files, "kubeadm")}
    assert "requeueRejectedPods" not in files["scheduler-extender-rbac.yaml"]


#: upstream's system:kube-scheduler and system:volume-scheduler, as the API server bootstraps them
#: with v1.30's default feature gates (kubernetes/kubernetes
#: plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/cluster-roles.yaml; policy.go), with
#: the VolumeAttachments kubernetes#127757 (v1.32) added for NodeVolumeLimits' count.
UPSTREAM = yaml.safe_load("""
system:kube-scheduler:
- {apiGroups: ['', events.k8s.io], resources: [events], verbs: [create, patch, update]}
- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [create]}
- {apiGroups: [coordination.k8s.io], resourceNames: [kube-scheduler], resources: [leases], verbs: [get, update]}
- {apiGroups: [''], resources: [nodes], verbs: [get, list, watch]}
- {apiGroups: [''], resources: [pods], verbs: [delete, get, list, watch]}
- {apiGroups: [''], resources: [bindings, pods/binding], verbs: [create]}
- {apiGroups: [''], resources: [pods/status], verbs: [patch, update]}
- {apiGroups: [''], resources: [replicationcontrollers, services], verbs: [get, list, watch]}
- {apiGroups: [apps, extensions], resources: [replicasets], verbs: [get, list, watch]}
- {apiGroups: [apps], resources: [statefulsets], verbs: [get, list, watch]}
- {apiGroups: [policy], resources: [poddisruptionbudgets], verbs: [get, list, watch]}
- {apiGroups: [''], resources: [persistentvolumeclaims, persistentvolumes], verbs: [get, list, watch]}
- {apiGroups: [authentication.k8s.io], resources: [tokenreviews], verbs: [create]}
- {apiGroups: [authorization.k8s.io], resources: [subjectaccessreviews], verbs: [create]}
- {apiGroups: [storage.k8s.io], resources: [csinodes], verbs: [get, list, watch]}
- {apiGroups: [''], resources: [namespaces], verbs: [get, list, watch]}
- {apiGroups: [storage.k8s.io], resources: [csidrivers], verbs: [get, list, watch]}
- {apiGroups: [storage.k8s.io], resources: [csistoragecapacities], verbs: [get, list, watch]}
- {apiGroups: [resource.k8s.io], resources: [deviceclasses], verbs: [get, list, watch]}
- {apiGroups: [resource.k8s.io], resources: [resourceclaims], verbs: [get, list, patch, update, watch]}
- {apiGroups: [resource.k8s.io], resources: [resourceclaims/status], verbs: [get, list, patch, update, watch]}
- {apiGroups: [resource.k8s.io], resources: [resourceslices], verbs: [get, list, watch]}
- {apiGroups: [storage.k8s.io], resources: [volumeattachments], verbs: [get, list, watch]}
system:volume-scheduler:
- {apiGroups: [''], resources: [persistentvolumes], verbs: [get, list, patch, update, watch]}
- {apiGroups: [storage.k8s.io], resources: [storageclasses], verbs: [get, list, watch]}
- {apiGroups: [''], resources: [persistentvolumeclaims], verbs: [get, list, patch, update, watch]}
""")
UPSTREAM_CALLS = {
    (g, r, v)
    for rules in UPSTREAM.values()
    for rule in rules
    if "resourceNames" not in rule
    for g, r, v in itertools.product(rule["apiGroups"], rule["resources"], rule["verbs"])
}


def _upstream_allows(call: Call, names: tuple[str, ...], ns: str | None, lease: str) -> bool:
    for rule in (r for rules in UPSTREAM.values() for r in rules):
        g, r, v = call
        if g in rule["apiGroups"] and r in rule["resources"] and v in rule["verbs"]:
            upstream_names = [lease if n == "kube-scheduler" else n for n in rule.get("resourceNames", [])]
            if not upstream_names or (names and set(names) <= set(upstream_names)):
                return True
    return False


#: What a configuration may need beyond system:kube-scheduler, and the feature that needs it.
BEYOND_UPSTREAM = {
    ("scheduling.x-k8s.io", "podgroups", "list"): "Coscheduling's PodGroups (scheduler-plugins' own role grants them)",
    ("scheduling.x-k8s.io", "podgroups", "watch"): "Coscheduling's PodGroups",
    ("", "pods", "patch"): "re-queue assistance of the filter verb (cluster.requeueRejectedPods)",
}


@pytest.mark.parametrize(("name", "target"), _cases())
def test_nothing_beyond_system_kube_scheduler_that_the_configuration_does_not_use(
    name: str | None, target: str
) -> None:
    config, files = _render(name, target)
    expected = expected_calls(config, default_registry(), target)
    for call, names, ns in granted(files, target):
        lease = names[0] if call[1] == "leases" and names else "kube-scheduler"
        if _upstream_allows(call, names, ns, lease):
            if call[1] == "leases":  # Leases only in a Role of their namespace
                assert ns is not None, call
            continue
        assert call in BEYOND_UPSTREAM and call in expected, f"{call} is beyond system:kube-scheduler"


def _volume_registry() -> Registry:
    """The in-tree plugins and a small test plugin declaring the volume needs."""

    class VolumeFilter:
        name = "VolumeFilter"

        def filter(self, state: Any, pod: Any, node: Any) -> Status:
            return Status()

    registry = default_registry()
    registry.register(
        PluginEntry(
            name="VolumeFilter",
            factory=lambda args, handle: VolumeFilter(),  # type: ignore[arg-type,return-value]
            needs_cluster=True,
            needs=lambda args, timeout: ClusterNeeds(volumes=True, csi_storage_capacities=True),
        )
    )
    return registry


def test_the_volume_needs_get_the_rules_kube_schedulers_roles_give_those_kinds() -> None:
    registry = _volume_registry()
    doc = yaml.safe_load((REPO / "examples" / "ip-scheduler.yaml").read_text())
    doc["profiles"][0]["plugins"]["filter"].append({"name": "VolumeFilter"})
    config = parse_config(doc, registry)
    files = render(config, registry, RenderOptions(), "x", ["standalone"])
    rules = {call for call, _, _ in granted(files, "standalone")}
    volumes = {
        (g, r, v)
        for g, r, verbs in (
            ("", "persistentvolumes", ("get", "list", "watch", "update", "patch")),
            ("", "persistentvolumeclaims", ("get", "list", "watch", "update", "patch")),
            ("storage.k8s.io", "storageclasses", ("get", "list", "watch")),
            ("storage.k8s.io", "csinodes", ("get", "list", "watch")),
            ("storage.k8s.io", "csidrivers", ("get", "list", "watch")),
            ("storage.k8s.io", "csistoragecapacities", ("get", "list", "watch")),
        )
        for v in verbs
    }
    assert volumes <= rules
    assert all(call in UPSTREAM_CALLS for call in volumes)  # exactly what kube-scheduler's roles grant
    assert "VolumeFilter: volumes" in files["scheduler/rbac.yaml"]
    # an extender profile without volume plugins reads no volume kind
    without = render(load_config(REPO / "examples" / "cluster.yaml", registry), registry, RenderOptions(), "x")
    assert not {c for c, _, _ in granted(without, "kubeadm")} & volumes
    # a standalone profile with the default volume plugins disabled neither
    doc = yaml.safe_load((REPO / "examples" / "ip-scheduler.yaml").read_text())
    names = ("VolumeRestrictions", "EBSLimits", "GCEPDLimits", "NodeVolumeLimits", "AzureDiskLimits", "VolumeBinding")
    doc["profiles"][0]["plugins"]["multiPoint"] = {"disabled": [{"name": n} for n in (*names, "VolumeZone")]}
    files = render(parse_config(doc, registry), registry, RenderOptions(), "x", ["standalone"])
    assert not {c for c, _, _ in granted(files, "standalone")} & volumes

"""VolumeBinding, ported from kube-scheduler v1.36.3's
pkg/scheduler/framework/plugins/volumebinding/volume_binding_test.go (``TestVolumeBinding``: the
rows' pods, nodes, claims, volumes and capacities, and the PreFilter status, the state after
PreFilter, each node's Filter status, the PreScore status and the Scores; ``Test_PreBindPreFlight``),
plus the plugin's args (``VolumeBindingArgs`` validation, ``ValidateVolumeBindingArgsWithOptions``),
its Reserve/Unreserve/PreBind glue and its events.

Adapted: the scoring rows run with the ``StorageCapacityScoring`` gate on (alpha and off in v1.36:
the plugin is built with ``storage_capacity_scoring=True`` and the args validated with the gate
on), as upstream's rows set ``fts.EnableStorageCapacityScoring``, with upstream's test shape
(0 -> 0, 100 -> 10) unless the row has its own. "all bound with local volumes" and "pvc not found"
are v1.30 rows v1.36.3 dropped (the first checked the ``PreFilterResult`` kubernetes#125398
removed); they still hold and are kept.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pydantic
import pytest

from app.framework import SKIP, SUCCESS, Code, CycleState, Handle, Status, features
from app.framework.events import PERSISTENT_VOLUME_CLAIM, ActionType, ClusterEvent
from app.plugins.volumes import volume_binding
from app.plugins.volumes.volume_binding import PLUGIN, StateData, VolumeBinding, VolumeBindingArgs
from tests.unit.plugins.storage import NODE_LABEL_KEY, node_doc, node_info, pod_info, storage_class, storage_cluster

Obj = dict[str, Any]

CAPACITY_SC, CAPACITY_DRIVER = "wait-sc-with-storage-capacity", "driver-with-storage-capacity"
CLASSES = [
    storage_class("immediate-sc", "Immediate"),
    storage_class("wait-sc", "WaitForFirstConsumer"),
    storage_class("wait-hdd-sc", "WaitForFirstConsumer"),
    storage_class(CAPACITY_SC, "WaitForFirstConsumer", CAPACITY_DRIVER),
]
#: ``driverWithStorageCapacity``
DRIVERS = [{"metadata": {"name": CAPACITY_DRIVER}, "spec": {"storageCapacity": True}}]
#: the test's ``defaultShapePoint`` (not the configuration's default)
TEST_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"


def make_pvc(name: str, class_name: str, bound_pv: str = "", request: str = "", phase: str = "") -> Obj:
    """test_utils.go ``makePVC(name, class)`` with ``withBoundPV``, ``withRequestStorage``,
    ``withPhase``."""
    doc: Obj = {"metadata": {"name": name, "namespace": "default"}, "spec": {"storageClassName": class_name}}
    if bound_pv:
        doc["spec"]["volumeName"] = bound_pv
        doc["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "true"}
    if request:
        doc["spec"]["resources"] = {"requests": {"storage": request}}
    if phase:
        doc["status"] = {"phase": phase}
    return doc


def make_pv(
    name: str, class_name: str, phase: str = "", capacity: str = "", affinity: dict[str, list[str]] | None = None
) -> Obj:
    """test_utils.go ``makePV(name, class)`` with ``withPhase``, ``withCapacity``, ``withNodeAffinity``."""
    doc: Obj = {"metadata": {"name": name}, "spec": {"storageClassName": class_name}}
    if phase:
        doc["status"] = {"phase": phase}
    if capacity:
        doc["spec"]["capacity"] = {"storage": capacity}
    if affinity:
        expressions = [{"key": k, "operator": "In", "values": v} for k, v in affinity.items()]
        doc["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}}
    return doc


def make_pod(*claims: str) -> Obj:
    """``makePod("pod-a").withPVCVolume(claim, "")...``."""
    volumes = [{"name": "", "persistentVolumeClaim": {"claimName": c}} for c in claims]
    return {"metadata": {"name": "pod-a", "namespace": "default", "uid": "uid-pod-a"}, "spec": {"volumes": volumes}}


HOST = "kubernetes.io/hostname"


def make_node(name: str, **labels: str) -> Obj:
    """test_utils.go ``makeNode(name)``: labelled with its hostname."""
    return node_doc(name, **{HOST: name, **labels})


def zonal(name: str, region: str, zone: str) -> Obj:
    return make_node(name, **{"topology.kubernetes.io/region": region, "topology.kubernetes.io/zone": zone})


def zonal_pv(name: str, capacity: str, region: str, zone: str) -> Obj:
    affinity = {"topology.kubernetes.io/region": [region], "topology.kubernetes.io/zone": [zone]}
    return make_pv(name, "wait-sc", "Available", capacity, affinity)


ZONAL_NODES = [
    zonal("zone-a-node-a", "region-a", "zone-a"),
    zonal("zone-a-node-b", "region-a", "zone-a"),
    zonal("zone-b-node-a", "region-b", "zone-b"),
    zonal("zone-b-node-b", "region-b", "zone-b"),
    zonal("zone-c-node-a", "region-c", "zone-c"),
    zonal("zone-c-node-b", "region-c", "zone-c"),
]
ZONAL_PVS = [
    zonal_pv("pv-a-0", "200Gi", "region-a", "zone-a"),
    zonal_pv("pv-a-1", "200Gi", "region-a", "zone-a"),
    zonal_pv("pv-b-0", "100Gi", "region-b", "zone-b"),
    zonal_pv("pv-b-1", "100Gi", "region-b", "zone-b"),
]


def local(name: str, class_name: str, capacity: str, node: str) -> Obj:
    return make_pv(name, class_name, "Available", capacity, {HOST: [node]})


UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def labelled(name: str) -> Obj:
    """``makeNode(name).withLabel(nodeLabelKey, name)``."""
    return make_node(name, **{NODE_LABEL_KEY: name})


def capacity(name: str, size: str) -> Obj:
    """binder_test.go ``makeCapacity(name, waitSCWithStorageCapacity, node name, size, "")``: the
    node selected by its ``nodeKey`` label."""
    return {
        "metadata": {"name": name},
        "storageClassName": CAPACITY_SC,
        "nodeTopology": {"matchLabels": {NODE_LABEL_KEY: name}},
        "capacity": size,
    }


CAPACITY_NODES = [labelled("node-a"), labelled("node-b"), labelled("node-c")]

# TestVolumeBinding's rows: pod, nodes, claims, volumes, feature gate (capacity priority), args,
# PreFilter status, (bound, to bind) claim names after PreFilter, Filter statuses, scores
ROWS: list[dict[str, Any]] = [
    {
        "name": "pod has not pvcs",
        "pod": make_pod(),
        "nodes": [make_node("node-a")],
        "pre_filter": SKIP,
        "filter": [SUCCESS],
        "scores": [0],
    },
    {
        "name": "all bound",
        "pod": make_pod("pvc-a"),
        "nodes": [make_node("node-a")],
        "pvcs": [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
        "pvs": [make_pv("pv-a", "wait-sc", "Available")],
        "state": (["pvc-a"], []),
        "filter": [SUCCESS],
        "scores": [0],
    },
    {
        "name": "all bound with local volumes",
        "pod": make_pod("pvc-a", "pvc-b"),
        "nodes": [make_node("node-a")],
        "pvcs": [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a"), make_pvc("pvc-b", "wait-sc", bound_pv="pv-b")],
        "pvs": [
            make_pv("pv-a", "wait-sc", "Bound", affinity={HOST: ["node-a"]}),
            make_pv("pv-b", "wait-sc", "Bound", affinity={HOST: ["node-a"]}),
        ],
        "state": (["pvc-a", "pvc-b"], []),
        "filter": [SUCCESS],
        "scores": [0],
    },
    {
        "name": "PVC does not exist",
        "pod": make_pod("pvc-a"),
        "nodes": [make_node("node-a")],
        "pre_filter": Status(UNRESOLVABLE, ('persistentvolumeclaim "pvc-a" not found',)),
    },
    {
        "name": "Part of PVCs do not exist",
        "pod": make_pod("pvc-a", "pvc-b"),
        "nodes": [make_node("node-a")],
        "pvcs": [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
        "pre_filter": Status(UNRESOLVABLE, ('persistentvolumeclaim "pvc-b" not found',)),
    },
    {
        "name": "immediate claims not bound",
        "pod": make_pod("pvc-a"),
        "nodes": [make_node("node-a")],
        "pvcs": [make_pvc("pvc-a", "immediate-sc")],
        "pre_filter": Status(UNRESOLVABLE, ("pod has unbound immediate PersistentVolumeClaims",)),
    },
    {
        "name": "unbound claims no matches",
        "pod": make_pod("pvc-a"),
        "nodes": [make_node("node-a")],
        "pvcs": [make_pvc("pvc-a", "wait-sc")],
        "state": ([], ["pvc-a"]),
        "filter": [Status(UNRESOLVABLE, (BIND_CONFLICT,))],
        "scores": [0],
    },
    {
        "name": "bound and unbound unsatisfied",
        "pod": make_pod("pvc-a", "pvc-b"),
        "nodes": [make_node("node-a", foo="barbar")],
        "pvcs": [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a"), make_pvc("pvc-b", "wait-sc")],
        "pvs": [make_pv("pv-a", "wait-sc", "Available", affinity={"foo": ["bar"]})],
        "state": (["pvc-a"], ["pvc-b"]),
        "filter": [Status(UNRESOLVABLE, ("node(s) didn't match PersistentVolume's node affinity", BIND_CONFLICT))],
        "scores": [0],
    },
    {
        "name": "pvc not found",
        "pod": make_pod("pvc-a"),
        "nodes": [make_node("node-a")],
        "pre_filter": Status(UNRESOLVABLE, ('persistentvolumeclaim "pvc-a" not found',)),
    },
    {
        "name": "pv not found",
        "pod": make_pod("pvc-a"),
        "nodes": [make_node("node-a")],
        "pvcs": [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
        "state": (["pvc-a"], []),
        "filter": [
            Status(UNRESOLVABLE, ("node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)",))
        ],
        "scores": [0],
    },
    {
        "name": "pv not found claim lost",
        "pod": make_pod("pvc-a"),
        "nodes": [make_node("node-a")],
        "pvcs": [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a", phase="Lost")],
        "pre_filter": Status(
            UNRESOLVABLE, ('persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"',)
        ),
    },
    {
        "name": "local volumes with close capacity are preferred",
        "pod": make_pod("pvc-a"),
        "nodes": [make_node("node-a"), make_node("node-b"), make_node("node-c")],
        "pvcs": [make_pvc("pvc-a", "wait-sc", request="50Gi")],
        "pvs": [
            local("pv-a-0", "wait-sc", "200Gi", "node-a"),
            local("pv-a-1", "wait-sc", "200Gi", "node-a"),
            local("pv-b-0", "wait-sc", "100Gi", "node-b"),
            local("pv-b-1", "wait-sc", "100Gi", "node-b"),
        ],
        "capacity_priority": True,
        "state": ([], ["pvc-a"]),
        "filter": [SUCCESS, SUCCESS, Status(UNRESOLVABLE, (BIND_CONFLICT,))],
        "scores": [25, 50, 0],
    },
    {
        "name": "local volumes with close capacity are preferred (multiple pvcs)",
        "pod": make_pod("pvc-0", "pvc-1"),
        "nodes": [make_node("node-a"), make_node("node-b"), make_node("node-c")],
        "pvcs": [make_pvc("pvc-0", "wait-sc", request="50Gi"), make_pvc("pvc-1", "wait-hdd-sc", request="100Gi")],
        "pvs": [
            local("pv-a-0", "wait-sc", "200Gi", "node-a"),
            local("pv-a-1", "wait-sc", "200Gi", "node-a"),
            local("pv-a-2", "wait-hdd-sc", "200Gi", "node-a"),
            local("pv-a-3", "wait-hdd-sc", "200Gi", "node-a"),
            local("pv-b-0", "wait-sc", "100Gi", "node-b"),
            local("pv-b-1", "wait-sc", "100Gi", "node-b"),
            local("pv-b-2", "wait-hdd-sc", "100Gi", "node-b"),
            local("pv-b-3", "wait-hdd-sc", "100Gi", "node-b"),
        ],
        "capacity_priority": True,
        "state": ([], ["pvc-0", "pvc-1"]),
        "filter": [SUCCESS, SUCCESS, Status(UNRESOLVABLE, (BIND_CONFLICT,))],
        "scores": [38, 75, 0],
    },
    {
        "name": "zonal volumes with close capacity are preferred",
        "pod": make_pod("pvc-a"),
        "nodes": ZONAL_NODES,
        "pvcs": [make_pvc("pvc-a", "wait-sc", request="50Gi")],
        "pvs": ZONAL_PVS,
        "capacity_priority": True,
        "state": ([], ["pvc-a"]),
        "filter": [SUCCESS] * 4 + [Status(UNRESOLVABLE, (BIND_CONFLICT,))] * 2,
        "scores": [25, 25, 50, 50, 0, 0],
    },
    {
        "name": "zonal volumes with close capacity are preferred (custom shape)",
        "pod": make_pod("pvc-a"),
        "nodes": ZONAL_NODES,
        "pvcs": [make_pvc("pvc-a", "wait-sc", request="50Gi")],
        "pvs": ZONAL_PVS,
        "capacity_priority": True,
        "args": {
            "bindTimeoutSeconds": 300,
            "shape": [
                {"utilization": 0, "score": 0},
                {"utilization": 50, "score": 3},
                {"utilization": 100, "score": 5},
            ],
        },
        "state": ([], ["pvc-a"]),
        "filter": [SUCCESS] * 4 + [Status(UNRESOLVABLE, (BIND_CONFLICT,))] * 2,
        "scores": [15, 15, 30, 30, 0, 0],
    },
    {
        "name": "storage capacity score",
        "pod": make_pod("pvc-dynamic"),
        "nodes": CAPACITY_NODES,
        "pvcs": [make_pvc("pvc-dynamic", CAPACITY_SC, request="10Gi")],
        "capacities": [capacity("node-a", "100Gi"), capacity("node-b", "50Gi"), capacity("node-c", "10Gi")],
        "capacity_priority": True,
        "state": ([], ["pvc-dynamic"]),
        "filter": [SUCCESS] * 3,
        "scores": [10, 20, 100],
    },
    {
        "name": "storage capacity score with static binds",
        "pod": make_pod("pvc-dynamic", "pvc-static"),
        "nodes": CAPACITY_NODES,
        "pvcs": [
            make_pvc("pvc-dynamic", CAPACITY_SC, request="10Gi"),
            make_pvc("pvc-static", "wait-sc", request="50Gi"),
        ],
        "pvs": [
            local("pv-static-a", "wait-sc", "100Gi", "node-a"),
            local("pv-static-b", "wait-sc", "100Gi", "node-b"),
            local("pv-static-c", "wait-sc", "100Gi", "node-c"),
        ],
        "capacities": [capacity("node-a", "100Gi"), capacity("node-b", "50Gi"), capacity("node-c", "10Gi")],
        "capacity_priority": True,
        "state": ([], ["pvc-dynamic", "pvc-static"]),
        "filter": [SUCCESS] * 3,
        "scores": [50, 50, 50],
    },
    {
        "name": "dynamic provisioning with multiple PVCs of the same StorageClass",
        "pod": make_pod("pvc-dynamic-0", "pvc-dynamic-1"),
        "nodes": [labelled("node-a")],
        "pvcs": [
            make_pvc("pvc-dynamic-0", CAPACITY_SC, request="50Gi"),
            make_pvc("pvc-dynamic-1", CAPACITY_SC, request="50Gi"),
        ],
        "capacities": [capacity("node-a", "100Gi")],
        "capacity_priority": True,
        "state": ([], ["pvc-dynamic-0", "pvc-dynamic-1"]),
        "filter": [SUCCESS],
        "scores": [100],
    },
    {
        "name": "prefer node with least allocatable",
        "pod": make_pod("pvc-dynamic"),
        "nodes": CAPACITY_NODES,
        "pvcs": [make_pvc("pvc-dynamic", CAPACITY_SC, request="10Gi")],
        "capacities": [capacity("node-a", "100Gi"), capacity("node-b", "20Gi"), capacity("node-c", "10Gi")],
        "capacity_priority": True,
        "state": ([], ["pvc-dynamic"]),
        "filter": [SUCCESS] * 3,
        "scores": [10, 50, 100],
    },
    {
        "name": "prefer node with maximum allocatable",
        "pod": make_pod("pvc-dynamic"),
        "nodes": CAPACITY_NODES,
        "pvcs": [make_pvc("pvc-dynamic", CAPACITY_SC, request="10Gi")],
        "capacities": [capacity("node-a", "100Gi"), capacity("node-b", "20Gi"), capacity("node-c", "10Gi")],
        "capacity_priority": True,
        "args": {
            "bindTimeoutSeconds": 300,
            "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}],
        },
        "state": ([], ["pvc-dynamic"]),
        "filter": [SUCCESS] * 3,
        "scores": [90, 50, 0],
    },
]


def _gate(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    """The process's ``StorageCapacityScoring`` gate (restored after the test)."""
    monkeypatch.setattr(features, "_current", features.FeatureGates({"StorageCapacityScoring": on} if on else {}))


def _plugin(row: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> tuple[VolumeBinding, Any]:
    cluster = storage_cluster(
        [],
        [],
        persistentvolumeclaims=row.get("pvcs", []),
        persistentvolumes=row.get("pvs", []),
        storageclasses=CLASSES,
        csidrivers=DRIVERS,
        csistoragecapacities=row.get("capacities", []),
    )
    gate = bool(row.get("capacity_priority"))
    _gate(monkeypatch, gate)
    default = {"bindTimeoutSeconds": 300, **({"shape": TEST_SHAPE} if gate else {})}
    args = VolumeBindingArgs.model_validate(row.get("args", default))
    return VolumeBinding(args, Handle("p", cluster=cluster), storage_capacity_scoring=gate), cluster


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_volume_binding(row: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, _ = _plugin(row, monkeypatch)
    pod = pod_info(row["pod"])
    nodes = [node_info(n) for n in row["nodes"]]
    state = CycleState()
    assert plugin.pre_filter(state, pod, nodes) == (None, row.get("pre_filter", SUCCESS))
    if not plugin.pre_filter(CycleState(), pod, nodes)[1].is_success():
        return  # the framework skips Filter when PreFilter fails (or skips)
    data = state.read(volume_binding.STATE_KEY)
    assert isinstance(data, StateData) and data.pod_volume_claims is not None
    claims = data.pod_volume_claims
    assert ([c.name for c in claims.bound_claims], [c.name for c in claims.unbound_claims_delay_binding]) == row[
        "state"
    ]
    assert [plugin.filter(state, pod, n) for n in nodes] == row["filter"]
    assert plugin.pre_score(state, pod, nodes) == (SUCCESS if row.get("capacity_priority") else SKIP)
    assert [plugin.score(state, pod, n) for n in nodes] == [(score, SUCCESS) for score in row["scores"]]


def test_pre_score_skips_only_without_the_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """v1.36.3's PreScore: with the gate it scores whether or not Filter found a static binding
    (dynamic provisions are scored too); without it (v1.36's default) it skips."""
    row = next(r for r in ROWS if r["name"] == "local volumes with close capacity are preferred")
    plugin, _ = _plugin(row, monkeypatch)
    pod, nodes, state = pod_info(row["pod"]), [node_info(n) for n in row["nodes"]], CycleState()
    plugin.pre_filter(state, pod, nodes)
    assert plugin.pre_score(state, pod, nodes) == SUCCESS  # no static binding found yet
    for n in nodes:
        plugin.filter(state, pod, n)
    assert plugin.pre_score(state, pod, nodes) == SUCCESS
    without, _ = _plugin({**row, "capacity_priority": False, "args": {"bindTimeoutSeconds": 300}}, monkeypatch)
    assert without.pre_score(state, pod, nodes) == SKIP
    assert without.pre_score(CycleState(), pod, nodes) == SKIP  # no scorer: the state is not read


def test_the_gate_is_off_by_default() -> None:
    """``StorageCapacityScoring`` is alpha and off in v1.36: a plugin built without the flag has
    no scorer, and its default shape (with the gate) prefers the emptier node."""
    cluster = storage_cluster([], [])
    assert VolumeBinding(VolumeBindingArgs(), Handle("p", cluster=cluster)).scorer is None
    assert [(p.utilization, p.score) for p in volume_binding.DEFAULT_SHAPE] == [(0, 10), (100, 0)]
    gated = VolumeBinding(VolumeBindingArgs(), Handle("p", cluster=cluster), storage_capacity_scoring=True)
    assert gated.scorer is not None and gated.scorer.raw(0) == 100 and gated.scorer.raw(100) == 0


# Test_PreBindPreFlight: (name, node, state, status)
PRE_BIND_PRE_FLIGHT: list[tuple[str, str, StateData | None, Status]] = [
    ("all bound", "node-a", StateData(all_bound=True), SKIP),
    ("volume to be bound", "node-a", StateData(pod_volumes_by_node={"node-a": volume_binding.PodVolumes()}), SUCCESS),
    ("error: state is nil", "node-a", None, Status.error("not found")),
    (
        "error: node is not found in podVolumesByNode",
        "node-a",
        StateData(pod_volumes_by_node={"node-b": volume_binding.PodVolumes()}),
        Status.error('no pod volume found for node "node-a"'),
    ),
]


@pytest.mark.parametrize(("name", "node", "data", "want"), PRE_BIND_PRE_FLIGHT, ids=[c[0] for c in PRE_BIND_PRE_FLIGHT])
def test_pre_bind_pre_flight(name: str, node: str, data: StateData | None, want: Status) -> None:
    plugin = VolumeBinding(VolumeBindingArgs(), Handle("p", cluster=storage_cluster([], [])))
    state = CycleState()
    if data is not None:
        state.write(volume_binding.STATE_KEY, data)
    assert plugin.pre_bind_pre_flight(state, pod_info(make_pod()), node) == want


# -- VolumeBindingArgs (ValidateVolumeBindingArgsWithOptions) ----------------------------------------


def test_args_defaults_and_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    assert VolumeBindingArgs().bind_timeout_seconds == 600  # SetDefaults_VolumeBindingArgs
    with pytest.raises(pydantic.ValidationError, match="greater than or equal to 0"):
        VolumeBindingArgs.model_validate({"bindTimeoutSeconds": -10})
    shape = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    with pytest.raises(
        pydantic.ValidationError,
        match="unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
    ):
        VolumeBindingArgs.model_validate({"shape": shape})
    _gate(monkeypatch, True)
    assert VolumeBindingArgs.model_validate({"shape": shape}).shape is not None
    with pytest.raises(pydantic.ValidationError, match="at least one point must be specified"):
        VolumeBindingArgs.model_validate({"shape": []})
    with pytest.raises(pydantic.ValidationError, match=r"shape\[1\]\.utilization: should be greater than prior point"):
        VolumeBindingArgs.model_validate({"shape": [{"utilization": 10, "score": 1}, {"utilization": 10, "score": 2}]})
    with pytest.raises(pydantic.ValidationError, match="less than or equal to 10"):
        VolumeBindingArgs.model_validate({"shape": [{"utilization": 10, "score": 11}]})
    with pytest.raises(pydantic.ValidationError, match="bindTimeout"):
        VolumeBindingArgs.model_validate({"bindTimeout": 5})  # the field is bindTimeoutSeconds


# -- the extension points a cycle runs after Filter ---------------------------------------------------


def _wffc(monkeypatch: pytest.MonkeyPatch) -> tuple[VolumeBinding, Any, Any]:
    cluster = storage_cluster(
        [node_doc("node-a")],
        [make_pod("pvc-a")],
        persistentvolumeclaims=[
            {
                **make_pvc("pvc-a", "wait-sc"),
                "metadata": {"name": "pvc-a", "namespace": "default", "resourceVersion": "7"},
            }
        ],
        storageclasses=[storage_class("wait-sc", "WaitForFirstConsumer", "csi.example.com")],
    )
    _gate(monkeypatch, False)
    plugin = VolumeBinding(VolumeBindingArgs(bindTimeoutSeconds=1), Handle("p", cluster=cluster))
    return plugin, cluster, pod_info(make_pod("pvc-a"))


def test_reserve_assumes_the_selected_node_and_unreserve_reverts_it(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, cluster, pod = _wffc(monkeypatch)
    node, state = node_info(node_doc("node-a")), CycleState()
    assert plugin.pre_filter(state, pod, [node]) == (None, SUCCESS)
    assert plugin.filter(state, pod, node) == SUCCESS
    assert plugin.reserve(state, pod, node) == SUCCESS
    assumed = plugin.binder.get_pvc("default", "pvc-a")
    assert assumed is not None and (assumed.meta.annotations or {})["volume.kubernetes.io/selected-node"] == "node-a"
    assert cluster.volumes.claim("default", "pvc-a").meta.annotations is None  # the API's object is untouched
    # the next pod's Filter sees the assumption: another node cannot take the claim
    other, state2 = node_info(node_doc("node-b")), CycleState()
    plugin.pre_filter(state2, pod, [other])
    assert plugin.filter(state2, pod, other) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't find available persistent volumes to bind",)
    )
    plugin.unreserve(state, pod, "node-a")
    plugin.unreserve(state, pod, "node-a")  # idempotent
    assert plugin.binder.get_pvc("default", "pvc-a") is cluster.volumes.claim("default", "pvc-a")


def test_pre_bind_writes_selected_node_and_waits_for_the_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, cluster, pod = _wffc(monkeypatch)
    node, state = node_info(node_doc("node-a")), CycleState()
    plugin.pre_filter(state, pod, [node])
    plugin.filter(state, pod, node)
    plugin.reserve(state, pod, node)

    async def run() -> Status:
        task = asyncio.create_task(plugin.pre_bind(state, pod, "node-a"))
        await asyncio.sleep(0.1)
        assert not task.done()  # waiting for the claim to be bound
        [write] = cluster.volume_writes
        assert (write.kind, write.name, write.namespace, write.resource_version) == (
            "persistentvolumeclaims",
            "pvc-a",
            "default",
            "7",
        )
        assert dict(write.annotations) == {"volume.kubernetes.io/selected-node": "node-a"}
        # the provisioner binds it (a new version of the claim)
        bound = {
            "metadata": {
                "name": "pvc-a",
                "namespace": "default",
                "resourceVersion": "9",
                "annotations": {
                    "volume.kubernetes.io/selected-node": "node-a",
                    "pv.kubernetes.io/bind-completed": "yes",
                },
            },
            "spec": {"storageClassName": "wait-sc", "volumeName": "pv-1"},
        }
        cluster.volumes.load("persistentvolumes", [{"metadata": {"name": "pv-1"}, "spec": {}}])
        cluster.volumes.load("persistentvolumeclaims", [bound])
        return await asyncio.wait_for(task, 5)

    assert asyncio.run(run()) == SUCCESS


def test_pre_bind_error_names_the_write_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, cluster, pod = _wffc(monkeypatch)
    node, state = node_info(node_doc("node-a")), CycleState()
    plugin.pre_filter(state, pod, [node])
    plugin.filter(state, pod, node)
    plugin.reserve(state, pod, node)
    cluster.refuse_volume_write = (
        'Operation cannot be fulfilled on persistentvolumeclaims "pvc-a": the object has been modified'
    )
    status = asyncio.run(plugin.pre_bind(state, pod, "node-a"))
    assert status.code is Code.ERROR and status.message == cluster.refuse_volume_write
    assert plugin.binder.pvc_cache.assumed_keys() == []  # bindAPIUpdate reverted what it did not write


def test_a_pod_without_claims_skips_and_binds_without_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, cluster, _ = _wffc(monkeypatch)
    pod = pod_info(make_pod())
    node, state = node_info(node_doc("node-a")), CycleState()
    assert plugin.pre_filter(state, pod, [node]) == (None, SKIP)
    assert plugin.reserve(state, pod, node) == SUCCESS
    assert asyncio.run(plugin.pre_bind(state, pod, "node-a")) == SUCCESS
    assert cluster.volume_writes == []


def test_reserve_without_pre_filter_state_is_upstreams_error(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, _, pod = _wffc(monkeypatch)
    assert plugin.reserve(CycleState(), pod, node_info(node_doc("node-a"))) == Status.error("not found")


def test_registration_and_events() -> None:
    needs = PLUGIN.needs(VolumeBindingArgs(), 5.0)  # type: ignore[misc]
    assert needs.volumes and needs.csi_storage_capacities
    events = VolumeBinding.events_to_register(None)  # type: ignore[arg-type]
    assert ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE) in [e.event for e in events]
    with pytest.raises(ValueError, match="VolumeBinding needs cluster state"):
        VolumeBinding(VolumeBindingArgs(), Handle("p"))


def test_the_configurations_feature_gate_turns_storage_capacity_scoring_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """``featureGates: {StorageCapacityScoring: true}`` (kube-scheduler's ``--feature-gates``): the
    ``shape`` is accepted and VolumeBinding, built after the configuration is loaded, scores;
    without the gate the same ``shape`` is refused with upstream's words."""
    from app.config import ConfigError, parse_config
    from app.plugins import default_registry

    monkeypatch.setattr(features, "_current", features.DEFAULT)  # restored after the test
    registry = default_registry(False)
    document: dict[str, Any] = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "cluster": {},
        "profiles": [
            {
                "name": "s",
                "schedulerName": "s",
                "pluginConfig": [{"name": "VolumeBinding", "args": {"shape": TEST_SHAPE}}],
            }
        ],
    }
    with pytest.raises(ConfigError, match="unexpected field `shape`, remove it or turn on the feature gate"):
        parse_config(document, registry)
    parse_config({**document, "featureGates": {"StorageCapacityScoring": True}}, registry)
    assert features.current().enabled("StorageCapacityScoring")
    plugin = VolumeBinding(VolumeBindingArgs(shape=TEST_SHAPE), Handle("p", cluster=storage_cluster([], [])))
    assert plugin.storage_capacity_scoring and plugin.scorer is not None and plugin.scorer.raw(100) == 100

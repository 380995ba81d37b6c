"""VolumeRestrictions, ported from kube-scheduler v1.36.3's
pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions_test.go
(``TestGCEDiskConflicts``, ``TestAWSDiskConflicts``, ``TestRBDDiskConflicts``,
``TestISCSIDiskConflicts``: the pod, the node's pods, the PreFilter and Filter statuses;
``TestAccessModeConflicts``: the pods on the node, the claims, the PreFilter and Filter statuses),
run over the cluster state (the node's pods and the snapshot the PreFilter counts claim users in).
"""

from __future__ import annotations

from typing import Any

import pytest

from app.framework import SKIP, SUCCESS, Code, CycleState, Handle, NodeInfo, Status
from app.framework.types import NodeUsage
from app.plugins.volumes.volume_restrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)
from tests.unit.plugins.storage import node_doc, node_info, pod_info, storage_cluster

Obj = dict[str, Any]
DISK_CONFLICT = Status(Code.UNSCHEDULABLE, (ERR_REASON_DISK_CONFLICT,))


def spec(volume: Obj) -> Obj:
    return {"volumes": [{"name": "v", **volume}]}


def on_node(*pods: Obj) -> NodeInfo:
    """``framework.NewNodeInfo(pods...)``."""
    return NodeInfo("", None, NodeUsage(pods=tuple(pod_info(p) for p in pods)))


def a_pod(pod_spec: Obj | None = None, name: str = "p") -> Obj:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": pod_spec or {}}


GCE = (spec({"gcePersistentDisk": {"pdName": "foo"}}), spec({"gcePersistentDisk": {"pdName": "bar"}}))
AWS = (spec({"awsElasticBlockStore": {"volumeID": "foo"}}), spec({"awsElasticBlockStore": {"volumeID": "bar"}}))
RBD = (
    spec({"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}),
    spec({"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}),
)
ISCSI = (
    spec(
        {
            "iscsi": {
                "targetPortal": "127.0.0.1:3260",
                "iqn": "iqn.2016-12.server:storage.target01",
                "fsType": "ext4",
                "lun": 0,
            }
        }
    ),
    spec(
        {
            "iscsi": {
                "targetPortal": "127.0.0.1:3260",
                "iqn": "iqn.2017-12.server:storage.target01",
                "fsType": "ext4",
                "lun": 0,
            }
        }
    ),
)


def disk_cases(states: tuple[Obj, Obj]) -> list[tuple[str, Obj, NodeInfo, Status, Status]]:
    """The four rows of each ``Test*DiskConflicts``."""
    state, state2 = states
    return [
        ("nothing", a_pod(), on_node(), SKIP, SUCCESS),
        ("one state", a_pod(), on_node(a_pod(state)), SKIP, SUCCESS),
        ("same state", a_pod(state), on_node(a_pod(state)), SUCCESS, DISK_CONFLICT),
        ("different state", a_pod(state2), on_node(a_pod(state)), SUCCESS, SUCCESS),
    ]


DISKS = [
    (f"{kind}/{name}", *rest)
    for kind, states in (("gce", GCE), ("aws", AWS), ("rbd", RBD), ("iscsi", ISCSI))
    for name, *rest in disk_cases(states)
] + [
    # v1.36.3's TestGCEDiskConflicts adds a fifth row: a volume of no restricted kind skips
    (
        "gce/pod with a volume that doesn't have restrictions",
        a_pod({"volumes": [{"name": "volume with no restriction"}]}),
        on_node(),
        SKIP,
        SUCCESS,
    )
]


def _plugin(pvcs: list[Obj] = (), nodes: list[Obj] = (), pods: list[Obj] = ()) -> VolumeRestrictions:  # type: ignore[assignment]
    return VolumeRestrictions(
        None, Handle("p", cluster=storage_cluster(list(nodes), list(pods), persistentvolumeclaims=list(pvcs)))
    )


@pytest.mark.parametrize(("name", "pod", "node", "pre", "want"), DISKS, ids=[c[0] for c in DISKS])
def test_disk_conflicts(name: str, pod: Obj, node: NodeInfo, pre: Status, want: Status) -> None:
    plugin, info, state = _plugin(), pod_info(pod), CycleState()
    assert plugin.pre_filter(state, info, [node]) == (None, pre)
    if pre.code is not Code.SKIP:
        assert plugin.filter(state, info, node) == want


def test_read_only_gce_disks_and_rbd_images_share() -> None:
    """``isVolumeConflict``: the same GCE PD or RBD image read-only on both sides does not conflict;
    an EBS volume always does."""
    ro_pd = spec({"gcePersistentDisk": {"pdName": "foo", "readOnly": True}})
    rw_pd = spec({"gcePersistentDisk": {"pdName": "foo"}})
    ro_rbd = spec({"rbd": {"monitors": ["a"], "pool": "p", "image": "i", "readOnly": True}})
    ro_ebs = spec({"awsElasticBlockStore": {"volumeID": "v", "readOnly": True}})
    plugin = _plugin()
    for mine, theirs, want in (
        (ro_pd, ro_pd, SUCCESS),
        (ro_pd, rw_pd, DISK_CONFLICT),
        (ro_rbd, ro_rbd, SUCCESS),
        (ro_ebs, ro_ebs, DISK_CONFLICT),
    ):
        state, info, node = CycleState(), pod_info(a_pod(mine)), on_node(a_pod(theirs))
        plugin.pre_filter(state, info, [node])
        assert plugin.filter(state, info, node) == want


def claim(name: str, mode: str) -> Obj:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"accessModes": [mode]}}


def claim_pod(name: str, *claims: str, node: str = "node-1") -> Obj:
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"nodeName": node, "volumes": volumes},
    }


RWOP1, RWOP2, RWX = (
    claim("claim-with-rwop-1", "ReadWriteOncePod"),
    claim("claim-with-rwop-2", "ReadWriteOncePod"),
    claim("claim-with-rwx", "ReadWriteMany"),
)
WITH_ONE = claim_pod("pod-with-one-rwop", "claim-with-rwop-1")
WITH_TWO = claim_pod("pod-with-two-rwop", "claim-with-rwop-1", "claim-with-rwop-2")
WITH_RWX = claim_pod("pod-with-rwx", "claim-with-rwx")
NODE = node_doc("node-1")
RWOP_CONFLICT = Status(Code.UNSCHEDULABLE, (ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,))

# TestAccessModeConflicts (v1.36.3, unchanged since v1.30): (name, pod, pods on nodes, claims, PreFilter, Filter)
ACCESS_MODES: list[tuple[str, Obj, list[Obj], list[Obj], Status, Status]] = [
    ("nothing", a_pod(), [], [], SKIP, SUCCESS),
    (
        "failed to get PVC",
        claim_pod("p", "claim-with-rwop-1", node=""),
        [],
        [],
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolumeclaim "claim-with-rwop-1" not found',)),
        SUCCESS,
    ),
    ("no access mode conflict", claim_pod("p", "claim-with-rwop-1", node=""), [WITH_RWX], [RWOP1, RWX], SKIP, SUCCESS),
    (
        "access mode conflict, unschedulable",
        claim_pod("p", "claim-with-rwop-1", node=""),
        [WITH_ONE, WITH_RWX],
        [RWOP1, RWX],
        SUCCESS,
        RWOP_CONFLICT,
    ),
    (
        "two conflicts, unschedulable",
        claim_pod("p", "claim-with-rwop-1", "claim-with-rwop-2", node=""),
        [WITH_TWO, WITH_RWX],
        [RWOP1, RWOP2, RWX],
        SUCCESS,
        RWOP_CONFLICT,
    ),
]


@pytest.mark.parametrize(("name", "pod", "pods", "pvcs", "pre", "want"), ACCESS_MODES, ids=[c[0] for c in ACCESS_MODES])
def test_access_mode_conflicts(
    name: str, pod: Obj, pods: list[Obj], pvcs: list[Obj], pre: Status, want: Status
) -> None:
    cluster = storage_cluster([NODE], pods, persistentvolumeclaims=pvcs)
    plugin = VolumeRestrictions(None, Handle("p", cluster=cluster))
    snapshot = cluster.snapshot()
    state, info, node = CycleState(snapshot), pod_info(pod), snapshot.get("node-1")
    assert node is not None
    assert plugin.pre_filter(state, info, [node]) == (None, pre)
    if pre.is_success():
        assert plugin.filter(state, info, node) == want
        # without the other users (preemption's dry run), no conflict: PreFilter over the node
        # without them skips, and upstream's RemovePod on the cycle's state (a clone) lets it pass
        freed = CycleState(_Without(snapshot, node, [p for p in node.pods]))
        assert plugin.pre_filter(freed, info, [node]) == (None, SKIP)
        what_if = state.clone()
        for other in node.pods:
            assert plugin.remove_pod(what_if, info, other, node) == SUCCESS
        assert plugin.filter(what_if, info, node) == SUCCESS
        assert plugin.filter(state, info, node) == want  # the cycle's own state is untouched
        for other in node.pods:  # AddPod puts the conflict back
            assert plugin.add_pod(what_if, info, other, node) == SUCCESS
        assert plugin.filter(what_if, info, node) == want


class _Without:
    """The snapshot with a node standing without the given pods (the runtime's overlay)."""

    def __init__(self, base: Any, node: NodeInfo, pods: list[Any]) -> None:
        self.replaced = base.without_pods(node, pods)
        self.base = base

    def list(self) -> list[NodeInfo]:
        return [self.replaced if n.name == self.replaced.name else n for n in self.base.list()]


def test_a_claim_used_on_another_node_counts() -> None:
    """``IsPVCUsedByPods`` is cluster-wide: the user may run on any node."""
    other = claim_pod("elsewhere", "claim-with-rwop-1", node="node-2")
    cluster = storage_cluster([NODE, node_doc("node-2")], [other], persistentvolumeclaims=[RWOP1])
    plugin = VolumeRestrictions(None, Handle("p", cluster=cluster))
    snapshot = cluster.snapshot()
    state, info = CycleState(snapshot), pod_info(claim_pod("p", "claim-with-rwop-1", node=""))
    node = node_info(NODE)
    assert plugin.pre_filter(state, info, [node]) == (None, SUCCESS)
    assert plugin.filter(state, info, node) == RWOP_CONFLICT

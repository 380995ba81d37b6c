"""VolumeRestrictions: a disk that cannot be shared is not mounted twice on a node, and a
``ReadWriteOncePod`` claim has one pod at most.

Ports kube-scheduler v1.36.3's plugin,
pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go:

- **PreFilter**: the pod's ``persistentVolumeClaim`` volumes whose claim has the
  ``ReadWriteOncePod`` access mode, and how many of them a pod on a node (bound or assumed)
  already uses (the snapshot's ``IsPVCUsedByPods``: any pod of the claim's namespace with a volume
  of that claim). ``UnschedulableAndUnresolvable`` for a missing claim (``persistentvolumeclaim
  "x" not found``). ``Skip`` when the pod has no in-tree disk to check and no claim in use.
- **Filter**: ``Unschedulable`` ``node(s) had no available disk`` when a volume of the pod
  conflicts with one of a pod on the node (``isVolumeConflict``: the same GCE PD unless both are
  read-only, the same AWS EBS volume, the same iSCSI IQN unless both are read-only, an RBD image
  of an overlapping monitor, the same pool and image unless both are read-only); then
  ``Unschedulable`` ``node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod
  access mode already in-use by another pod`` when one of its ``ReadWriteOncePod`` claims is in
  use (v1.36.3's text).

The claims in use are read from ``state.snapshot`` (every node's pods), each node's set kept on
its :class:`~app.framework.types.NodeInfo` (``memo``); ``AddPod``/``RemovePod`` (a nominated pod,
a preemption's victim) adjust the count as upstream's ``updateWithPod``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.framework import objects, signers
from app.framework.events import (
    NODE,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    QUEUE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from app.framework.events import SKIP as QUEUE_SKIP
from app.framework.handle import Handle
from app.framework.interfaces import PreFilterStateExtensions, SignFragment
from app.framework.registry import PluginEntry
from app.framework.status import SKIP, SUCCESS, Code, Status
from app.framework.types import CycleState, NodeInfo, PodInfo, PreFilterResult
from app.framework.volumes import READ_WRITE_ONCE_POD, PersistentVolumeClaim, VolumeLister
from app.plugins.volumes.helpers import (
    changed_object,
    claim_not_found,
    contains_access_mode,
    deleted_object,
    is_claim_of_pod,
    needs_volumes,
    volume_cluster,
)

NAME = "VolumeRestrictions"
#: upstream's ``preFilterStateKey``
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
#: ``ErrReasonDiskConflict``
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
#: ``ErrReasonReadWriteOncePodConflict``
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)
_USED_CLAIMS = "VolumeRestrictions/used-claims"

_EVENTS = (
    ClusterEvent(POD, ActionType.DELETE),
    ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL),
    ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
)
_DISK_CONFLICT = Status(Code.UNSCHEDULABLE, (ERR_REASON_DISK_CONFLICT,))
_RWOP_CONFLICT = Status(Code.UNSCHEDULABLE, (ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,))


@dataclass
class PreFilterState:
    """``preFilterState``: the pod's ``ReadWriteOncePod`` claim names, and how many uses of them
    by pods on nodes there are (``conflictingPVCRefCount``, kept true by the PreFilter
    extensions: :meth:`update_with_pod`)."""

    read_write_once_pod_pvcs: frozenset[str]
    conflicting_pvc_ref_count: int

    def update_with_pod(self, pod: PodInfo, node: NodeInfo, delta: int) -> None:
        """``updateWithPod``: ``pod`` added (``delta`` 1) or removed (-1) counts each of its
        ``persistentVolumeClaim`` volumes naming one of the claims (by name, as upstream's
        ``conflictingPVCRefCountForPod``)."""
        claims = self.read_write_once_pod_pvcs
        conflicts = sum(
            1
            for volume in pod.volumes
            if volume.persistent_volume_claim is not None and volume.persistent_volume_claim.claim_name in claims
        )
        self.conflicting_pvc_ref_count += delta * conflicts

    def clone(self) -> PreFilterState:
        """``Clone``: a copy whose count may change apart."""
        return PreFilterState(self.read_write_once_pod_pvcs, self.conflicting_pvc_ref_count)


def needs_restrictions_check(volume: objects.Volume) -> bool:
    """``needsRestrictionsCheck``: a GCE PD, AWS EBS, RBD or iSCSI volume."""
    return (
        volume.gce_persistent_disk is not None
        or volume.aws_elastic_block_store is not None
        or volume.rbd is not None
        or volume.iscsi is not None
    )


def _have_overlap(a: Sequence[str] | None, b: Sequence[str] | None) -> bool:
    return bool(set(a or ()) & set(b or ()))


def is_volume_conflict(volume: objects.Volume, pod: PodInfo) -> bool:
    """``isVolumeConflict``: whether ``volume`` conflicts with a volume of ``pod``."""
    for existing in pod.volumes:
        disk, other = volume.gce_persistent_disk, existing.gce_persistent_disk
        if (
            disk is not None
            and other is not None
            and disk.pd_name == other.pd_name
            and not (disk.read_only and other.read_only)
        ):
            return True
        ebs, other_ebs = volume.aws_elastic_block_store, existing.aws_elastic_block_store
        if ebs is not None and other_ebs is not None and ebs.volume_id == other_ebs.volume_id:
            return True
        iscsi, other_iscsi = volume.iscsi, existing.iscsi
        if (
            iscsi is not None
            and other_iscsi is not None
            and iscsi.iqn == other_iscsi.iqn
            and not (iscsi.read_only and other_iscsi.read_only)
        ):
            return True
        rbd, other_rbd = volume.rbd, existing.rbd
        if (
            rbd is not None
            and other_rbd is not None
            and (
                _have_overlap(rbd.monitors, other_rbd.monitors)
                and (rbd.pool or "") == (other_rbd.pool or "")
                and (rbd.image or "") == (other_rbd.image or "")
                and not (rbd.read_only and other_rbd.read_only)
            )
        ):
            return True
    return False


def satisfy_volume_conflicts(pod: PodInfo, node: NodeInfo) -> bool:
    """``satisfyVolumeConflicts``: no volume of ``pod`` conflicts with one of the node's pods."""
    for volume in pod.volumes:
        if not needs_restrictions_check(volume):
            continue
        for existing in node.pods:
            if is_volume_conflict(volume, existing):
                return False
    return True


def claims_used_on(node: NodeInfo) -> frozenset[str]:
    """``NodeInfo.PVCRefCounts``' keys: ``namespace/claim`` of every ``persistentVolumeClaim``
    volume of the node's pods (kept on the NodeInfo)."""

    def compute(info: NodeInfo) -> frozenset[str]:
        return frozenset(
            f"{p.namespace}/{v.persistent_volume_claim.claim_name or ''}"
            for p in info.pods
            for v in p.volumes
            if v.persistent_volume_claim is not None
        )

    used: frozenset[str] = node.memo(_USED_CLAIMS, compute)
    return used


def read_write_once_pod_pvcs(volumes: VolumeLister, pod: PodInfo) -> tuple[frozenset[str], str]:
    """``readWriteOncePodPVCsForPod``: the names of the pod's claims with ``ReadWriteOncePod``, or
    a missing claim's NotFound error."""
    names = set()
    for volume in pod.volumes:
        if volume.persistent_volume_claim is None:
            continue
        name = volume.persistent_volume_claim.claim_name or ""
        pvc = volumes.claim(pod.namespace, name)
        if pvc is None:
            return frozenset(), claim_not_found(name)
        if contains_access_mode(pvc.specs.access_modes, READ_WRITE_ONCE_POD):
            names.add(pvc.name)
    return frozenset(names), ""


# -- queueing hints (v1.36.3 volume_restrictions.go) -------------------------------------------------------


def _claim_names(pod: PodInfo) -> set[str]:
    return {v.persistent_volume_claim.claim_name or "" for v in pod.volumes if v.persistent_volume_claim is not None}


def is_schedulable_after_pod_deleted(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPodDeleted``: ``Queue`` when the deleted pod, of the pod's namespace,
    had a disk one of the pod's volumes conflicts with (:func:`satisfy_volume_conflicts` against
    it alone) or a ``persistentVolumeClaim`` volume of a claim the pod uses (a ``ReadWriteOncePod``
    claim may be free now; the access mode is not read, as upstream)."""
    deleted = deleted_object(old, new, PodInfo)
    if deleted.namespace != pod.namespace:
        return QUEUE_SKIP
    for volume in pod.volumes:
        if needs_restrictions_check(volume) and is_volume_conflict(volume, deleted):
            return QUEUE
    claims = _claim_names(pod)
    return QUEUE if claims & _claim_names(deleted) else QUEUE_SKIP


def is_schedulable_after_persistent_volume_claim_added(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPersistentVolumeClaimAdded``: ``Queue`` when the new claim is one a
    ``persistentVolumeClaim`` volume of the pod names, in its namespace."""
    _, pvc = changed_object(old, new, PersistentVolumeClaim)
    return QUEUE if is_claim_of_pod(pvc, pod, ephemeral=False) else QUEUE_SKIP


#: ``EventsToRegister`` (v1.36.3, queueing hints on: Node Add only)
EVENTS = (
    ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), is_schedulable_after_pod_deleted),
    ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
    ClusterEventWithHint(
        ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD), is_schedulable_after_persistent_volume_claim_added
    ),
)


class VolumeRestrictions(PreFilterStateExtensions):
    """PreFilter (with its extensions ``AddPod``/``RemovePod``) + Filter (see the module doc).
    Takes no args."""

    name = NAME
    pre_filter_key = PRE_FILTER_STATE_KEY

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (volume_restrictions.go, v1.36.3): the pod's volume sources."""
        return [(signers.VOLUMES, signers.volumes(pod))], SUCCESS

    def __init__(self, args: None = None, handle: Handle | None = None) -> None:
        _, self.volumes = volume_cluster(handle, NAME)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """``PreFilter`` (no PreFilterResult); ``AddPod``/``RemovePod`` then keep its count true
        (:class:`~app.framework.interfaces.PreFilterStateExtensions` over
        :meth:`PreFilterState.update_with_pod`)."""
        needs_check = any(needs_restrictions_check(v) for v in pod.volumes)
        pvcs, error = read_write_once_pod_pvcs(self.volumes, pod)
        if error:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (error,))
        count = 0
        if pvcs:
            lister = state.snapshot
            every = lister.list() if lister is not None else nodes
            for pvc in pvcs:
                key = f"{pod.namespace}/{pvc}"
                if any(key in claims_used_on(node) for node in every):
                    count += 1  # at most one pod may use a ReadWriteOncePod claim
        if not needs_check and count == 0:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(pvcs, count))
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``Filter``: disk conflicts, then ``ReadWriteOncePod`` claims in use."""
        if not satisfy_volume_conflicts(pod, node):
            return _DISK_CONFLICT
        pre: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if pre is None:
            return Status.error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        return _RWOP_CONFLICT if pre.conflicting_pvc_ref_count > 0 else SUCCESS

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister`` (v1.36.3, :data:`EVENTS`): Pod Delete
        (:func:`is_schedulable_after_pod_deleted`), Node Add (no hint), PersistentVolumeClaim Add
        (:func:`is_schedulable_after_persistent_volume_claim_added`)."""
        return EVENTS


PLUGIN = PluginEntry(
    name=NAME,
    factory=VolumeRestrictions,
    args=None,
    needs_cluster=True,
    needs=needs_volumes,
    summary="filter: kube-scheduler's VolumeRestrictions (disk conflicts, ReadWriteOncePod claims)",
)

__all__ = [
    "ERR_REASON_DISK_CONFLICT",
    "ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT",
    "EVENTS",
    "NAME",
    "PLUGIN",
    "PreFilterState",
    "VolumeRestrictions",
    "claims_used_on",
    "is_schedulable_after_persistent_volume_claim_added",
    "is_schedulable_after_pod_deleted",
    "is_volume_conflict",
    "needs_restrictions_check",
    "read_write_once_pod_pvcs",
    "satisfy_volume_conflicts",
]

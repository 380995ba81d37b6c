"""VolumeZone: a pod whose claim is bound to a zonal (or regional) volume runs only on a node of
that zone (region).

Ports kube-scheduler v1.36.3's plugin, pkg/scheduler/framework/plugins/volumezone/volume_zone.go:

- **PreFilter**: for each ``persistentVolumeClaim`` volume of the pod (ephemeral volumes are not
  read), the bound volume's topology labels (``failure-domain.beta.kubernetes.io/zone``,
  ``.../region``, ``topology.kubernetes.io/zone``, ``.../region``; a value may list several zones
  separated by ``__``, ``volumehelpers.LabelZonesToSet``; an unparsable one is ignored).
  ``UnschedulableAndUnresolvable`` for a missing claim, class or volume (the listers' NotFound
  text: ``persistentvolumeclaim "x" not found``), a claim without a name, an unbound claim
  without a class (``PersistentVolumeClaim had no pv name and storageClass name``), of a class
  without a binding mode, or of an ``Immediate`` class (``PersistentVolume had no name``); an
  unbound ``WaitForFirstConsumer`` claim is skipped (VolumeBinding provisions it for the node).
  ``Skip`` when no volume has a topology label.
- **Filter**: a node without any of the four labels fits (a single-zone cluster); else every
  volume label must be on the node (a beta label also matches the node's GA one) with a value of
  the volume's set, or ``UnschedulableAndUnresolvable`` ``node(s) had no available volume zone``.
  Without PreFilter's state (upstream's fallback) Filter computes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.framework import signers
from app.framework.events import (
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    QUEUE,
    STORAGE_CLASS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    objects_as,
)
from app.framework.events import SKIP as QUEUE_SKIP
from app.framework.handle import Handle
from app.framework.interfaces import SignFragment
from app.framework.registry import PluginEntry
from app.framework.status import SKIP, SUCCESS, Code, Status
from app.framework.types import NO_NODE, CycleState, NodeInfo, PodInfo, PreFilterResult
from app.framework.volumes import (
    WAIT_FOR_FIRST_CONSUMER,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeLister,
    claim_class,
)
from app.plugins.volumes.helpers import (
    changed_object,
    claim_not_found,
    is_claim_of_pod,
    needs_volumes,
    storage_class_not_found,
    volume_cluster,
    volume_not_found,
)
from app.plugins.volumes.translation import (
    LABEL_BETA_REGION,
    LABEL_BETA_ZONE,
    LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE,
    MULTI_ZONE_DELIMITER,
)

NAME = "VolumeZone"
#: upstream's ``preFilterStateKey``
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
#: ``ErrReasonConflict``
ERR_REASON_CONFLICT = "node(s) had no available volume zone"
#: ``topologyLabels``, in upstream's order
TOPOLOGY_LABELS = (LABEL_BETA_ZONE, LABEL_BETA_REGION, LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION)
_GA = {LABEL_BETA_REGION: LABEL_TOPOLOGY_REGION, LABEL_BETA_ZONE: LABEL_TOPOLOGY_ZONE}


@dataclass(frozen=True)
class PVTopology:
    """``pvTopology``: a volume's topology label and the values it allows."""

    pv_name: str
    key: str
    values: frozenset[str]


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """``volumehelpers.LabelZonesToSet``: the ``__``-separated zones, trimmed; ``None`` when one is
    empty (upstream's error)."""
    zones = [z.strip() for z in value.split(MULTI_ZONE_DELIMITER)]
    if any(not z for z in zones):
        return None
    return frozenset(zones)


def _unresolvable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))


def pv_topologies(volumes: VolumeLister, pod: PodInfo) -> tuple[list[PVTopology], Status]:
    """``getPVbyPod``: the topologies of the volumes the pod's claims are bound to, or the status
    that rejects the pod (module doc)."""
    out: list[PVTopology] = []
    for volume in pod.volumes:
        if volume.persistent_volume_claim is None:
            continue
        name = volume.persistent_volume_claim.claim_name or ""
        if not name:
            return [], _unresolvable("PersistentVolumeClaim had no name")
        pvc = volumes.claim(pod.namespace, name)
        if pvc is None:
            return [], _unresolvable(claim_not_found(name))
        pv_name = pvc.specs.volume_name or ""
        if not pv_name:
            class_name = claim_class(pvc)
            if not class_name:
                return [], _unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
            sc = volumes.storage_class(class_name)
            if sc is None:
                return [], _unresolvable(storage_class_not_found(class_name))
            if sc.volume_binding_mode is None:
                return [], _unresolvable(f'VolumeBindingMode not set for StorageClass "{class_name}"')
            if sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER:
                continue  # unbound: VolumeBinding chooses a volume for the node
            return [], _unresolvable("PersistentVolume had no name")
        pv = volumes.volume(pv_name)
        if pv is None:
            return [], _unresolvable(volume_not_found(pv_name))
        out.extend(volume_topologies(pv))
    return out, SUCCESS


def volume_topologies(pv: PersistentVolume) -> list[PVTopology]:
    """``getPVTopologies``: the volume's topology labels in :data:`TOPOLOGY_LABELS` order, each
    with its zones (an unparsable value is ignored, logged upstream)."""
    out: list[PVTopology] = []
    labels = pv.meta.labels or {}
    for key in TOPOLOGY_LABELS:
        value = labels.get(key)
        if value is None:
            continue
        zones = label_zones_to_set(value)
        if zones is not None:
            out.append(PVTopology(pv.name, key, zones))
    return out


def fits_zones(topologies: Sequence[PVTopology], node: NodeInfo) -> bool:
    """``Filter``'s test: the node has no topology label, or matches every volume's."""
    labels = node.labels
    if not any(key in labels for key in TOPOLOGY_LABELS):
        return True
    for topology in topologies:
        value = labels.get(topology.key)
        if value is None:
            value = labels.get(_GA.get(topology.key, topology.key))
        if value is None or value not in topology.values:
            return False
    return True


# -- queueing hints (v1.36.3 volume_zone.go) -------------------------------------------------------------


def is_schedulable_after_storage_class_added(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterStorageClassAdded``: ``Queue`` only for a new ``WaitForFirstConsumer``
    class (``volumeBindingMode`` is immutable, so updates are not registered)."""
    _, added = changed_object(None, new, StorageClass)
    return QUEUE if added.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER else QUEUE_SKIP


def is_schedulable_after_persistent_volume_claim_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPersistentVolumeClaimChange``: ``Queue`` when the added or updated
    claim is one a ``persistentVolumeClaim`` volume of the pod names, in its namespace
    (``isPVCRequestedFromPod``; ephemeral volumes are not read). Upstream's ``nil`` claim is
    ``Skip`` there, which no informer event carries; a relist's event without objects raises
    here (``Queue``)."""
    _, pvc = changed_object(old, new, PersistentVolumeClaim)
    return QUEUE if is_claim_of_pod(pvc, pod, ephemeral=False) else QUEUE_SKIP


def is_schedulable_after_persistent_volume_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPersistentVolumeChange``: ``Queue`` for a new volume and for a change
    of its topology labels (:func:`volume_topologies`)."""
    original, modified = objects_as(old, new, PersistentVolume)
    if original is None:
        return QUEUE
    if modified is None:
        raise TypeError("no new PersistentVolume")
    return QUEUE if volume_topologies(original) != volume_topologies(modified) else QUEUE_SKIP


#: ``EventsToRegister`` (v1.36.3, queueing hints on: Node without UpdateNodeTaint)
EVENTS = (
    ClusterEventWithHint(ClusterEvent(STORAGE_CLASS, ActionType.ADD), is_schedulable_after_storage_class_added),
    ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
    ClusterEventWithHint(
        ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
        is_schedulable_after_persistent_volume_claim_change,
    ),
    ClusterEventWithHint(
        ClusterEvent(PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
        is_schedulable_after_persistent_volume_change,
    ),
)


_CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_CONFLICT,))


class VolumeZone:
    """PreFilter + Filter (see the module doc). Takes no args."""

    name = NAME

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (volume_zone.go, v1.36.3): the pod's volume sources."""
        return [(signers.VOLUMES, signers.volumes(pod))], SUCCESS

    def __init__(self, args: None = None, handle: Handle | None = None) -> None:
        _, self.volumes = volume_cluster(handle, NAME)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """``PreFilter``: the volumes' topologies, ``Skip`` when none (no PreFilterResult)."""
        topologies, status = pv_topologies(self.volumes, pod)
        if not status.is_success():
            return None, status
        if not topologies:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, topologies)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``Filter``: ``SUCCESS`` or ``node(s) had no available volume zone``."""
        if not pod.volumes:
            return SUCCESS
        topologies: list[PVTopology] | None = state.get(PRE_FILTER_STATE_KEY)
        if topologies is None:  # upstream's fallback: compute the list here
            topologies, status = pv_topologies(self.volumes, pod)
            if not status.is_success():
                return status
        if node.node is None:
            return Status.error(NO_NODE)
        return SUCCESS if fits_zones(topologies, node) else _CONFLICT

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister`` (v1.36.3, :data:`EVENTS`): StorageClass Add
        (:func:`is_schedulable_after_storage_class_added`), Node Add|UpdateNodeLabel (no hint),
        PersistentVolumeClaim Add|Update (:func:`is_schedulable_after_persistent_volume_claim_change`),
        PersistentVolume Add|Update (:func:`is_schedulable_after_persistent_volume_change`)."""
        return EVENTS


PLUGIN = PluginEntry(
    name=NAME,
    factory=VolumeZone,
    args=None,
    needs_cluster=True,
    needs=needs_volumes,
    summary="filter: kube-scheduler's VolumeZone (a zonal volume's pod runs in the volume's zone)",
)

__all__ = [
    "ERR_REASON_CONFLICT",
    "EVENTS",
    "NAME",
    "PLUGIN",
    "TOPOLOGY_LABELS",
    "PVTopology",
    "VolumeZone",
    "fits_zones",
    "is_schedulable_after_persistent_volume_change",
    "is_schedulable_after_persistent_volume_claim_change",
    "is_schedulable_after_storage_class_added",
    "label_zones_to_set",
    "pv_topologies",
    "volume_topologies",
]

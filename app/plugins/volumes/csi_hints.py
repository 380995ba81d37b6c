"""NodeVolumeLimits' (``CSILimits``) cluster events and queueing hints, as kube-scheduler v1.36.3's
pkg/scheduler/framework/plugins/nodevolumelimits/csi.go (``EventsToRegister``,
``isSchedulableAfter...``); apart from :mod:`app.plugins.volumes.node_volume_limits` for its size.

The cluster state watches VolumeAttachments (the Filter counts a node's), so a deleted one is
judged by :func:`is_schedulable_after_volume_attachment_deleted`.
"""

from __future__ import annotations

from app.framework.events import (
    CSI_NODE,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    QUEUE,
    VOLUME_ATTACHMENT,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    objects_as,
)
from app.framework.events import SKIP as QUEUE_SKIP
from app.framework.types import PodInfo
from app.framework.volumes import CSINode, PersistentVolumeClaim, VolumeAttachment
from app.plugins.volumes.helpers import changed_object, deleted_object, is_claim_of_pod
from app.plugins.volumes.translation import is_inline_migratable, translate_in_tree_inline_volume_to_csi


def is_schedulable_after_pod_deleted(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPodDeleted``: ``Queue`` when the deleted pod was on a node (or
    nominated to one) and had a claim (``persistentVolumeClaim``, generic ephemeral) or a
    migratable inline in-tree volume."""
    deleted = deleted_object(old, new, PodInfo)
    if not deleted.volumes:
        return QUEUE_SKIP
    if not deleted.node_name and not deleted.nominated_node_name:
        return QUEUE_SKIP
    for volume in deleted.volumes:
        if volume.persistent_volume_claim is not None or volume.ephemeral is not None or is_inline_migratable(volume):
            return QUEUE
    return QUEUE_SKIP


def is_schedulable_after_pvc_added(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPVCAdded``: ``Queue`` when the new claim is one of the pod's (a
    ``persistentVolumeClaim`` or generic ephemeral volume's), in its namespace."""
    _, pvc = changed_object(old, new, PersistentVolumeClaim)
    return QUEUE if is_claim_of_pod(pvc, pod, ephemeral=True) else QUEUE_SKIP


def is_schedulable_after_volume_attachment_deleted(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterVolumeAttachmentDeleted``: ``Queue`` when the pod has a
    ``persistentVolumeClaim`` volume, or a migratable inline volume whose CSI driver is the
    deleted attachment's attacher. Raises ``TranslationError`` for an inline volume that does not
    translate (upstream's ``Queue`` with an error)."""
    attachment = deleted_object(old, new, VolumeAttachment)
    attacher = (attachment.spec.attacher if attachment.spec is not None else None) or ""
    for volume in pod.volumes:
        if volume.persistent_volume_claim is not None:
            return QUEUE
        if not is_inline_migratable(volume):
            continue
        translated = translate_in_tree_inline_volume_to_csi(volume)  # TranslationError: Queue
        csi = translated.specs.csi
        if csi is not None and attacher == (csi.driver or ""):
            return QUEUE
    return QUEUE_SKIP


def _limits(csi_node: CSINode) -> dict[str, int]:
    drivers = csi_node.spec.drivers if csi_node.spec is not None else None
    return {
        d.name or "": (d.allocatable.count if d.allocatable is not None and d.allocatable.count is not None else 0)
        for d in drivers or ()
    }


def is_schedulable_after_csi_node_updated(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterCSINodeUpdated``: ``Queue`` when a driver's ``allocatable.count`` rose
    (a driver new to the CSINode counts from 0; an unset count is 0)."""
    original, modified = objects_as(old, new, CSINode)
    if original is None or modified is None:
        raise TypeError("a CSINode update needs its old and new object")
    old_limits = _limits(original)
    for name, limit in _limits(modified).items():
        if limit > old_limits.get(name, 0):
            return QUEUE
    return QUEUE_SKIP


#: ``EventsToRegister`` (v1.36.3): CSINode Add without a hint (any new CSINode may help)
EVENTS = (
    ClusterEventWithHint(ClusterEvent(CSI_NODE, ActionType.ADD)),
    ClusterEventWithHint(ClusterEvent(CSI_NODE, ActionType.UPDATE), is_schedulable_after_csi_node_updated),
    ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), is_schedulable_after_pod_deleted),
    ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD), is_schedulable_after_pvc_added),
    ClusterEventWithHint(
        ClusterEvent(VOLUME_ATTACHMENT, ActionType.DELETE), is_schedulable_after_volume_attachment_deleted
    ),
)

__all__ = [
    "EVENTS",
    "is_schedulable_after_csi_node_updated",
    "is_schedulable_after_pod_deleted",
    "is_schedulable_after_pvc_added",
    "is_schedulable_after_volume_attachment_deleted",
]

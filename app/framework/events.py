"""Cluster events a plugin can be woken by, in kube-scheduler's vocabulary
(``pkg/scheduler/framework/types.go`` v1.30: ``GVK``, ``ActionType``, ``ClusterEvent``).

A plugin that rejects pods says which events may make them schedulable again
(:class:`~app.framework.interfaces.EnqueueExtensions`); the scheduling queue moves a parked pod
back only on such an event (kube-scheduler's queueing hints, without the per-event hint
function: an event of a registered kind and action is enough).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntFlag


class ActionType(IntFlag):
    """``framework.ActionType``: what happened to an object (values as upstream's)."""

    ADD = 1
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_POD_LABEL = 1 << 7
    UPDATE_POD_SCALE_DOWN = 1 << 8
    UPDATE_POD_TOLERATIONS = 1 << 9
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 10
    #: any update (upstream's ``Update``: every update flag)
    UPDATE = (1 << 11) - 1 - ADD - DELETE
    ALL = (1 << 11) - 1


#: ``framework.GVK`` values for the kinds this service watches.
POD, NODE, POD_GROUP, WILDCARD = "Pod", "Node", "PodGroup", "*"
#: ``framework.GVK`` values of the storage kinds the volume plugins read (v1.30
#: pkg/scheduler/framework/types.go)
PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM = "PersistentVolume", "PersistentVolumeClaim"
STORAGE_CLASS, CSI_NODE = "storage.k8s.io/StorageClass", "storage.k8s.io/CSINode"
CSI_DRIVER, CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIDriver", "storage.k8s.io/CSIStorageCapacity"


@dataclass(frozen=True)
class ClusterEvent:
    """``framework.ClusterEvent``: a kind (:data:`POD`, :data:`NODE`, ...) and the actions on it."""

    resource: str
    action: ActionType

    def matches(self, other: ClusterEvent) -> bool:
        """Whether the event ``other`` that happened is one this registration covers
        (``ClusterEvent.Match``: a wildcard kind matches every kind)."""
        kind = self.resource == WILDCARD or self.resource == other.resource
        return kind and bool(self.action & other.action)


#: Every event of every kind (upstream's ``framework.EventUnschedulableTimeout``-free wildcard).
ANY_EVENT = ClusterEvent(WILDCARD, ActionType.ALL)

__all__ = [
    "ANY_EVENT",
    "CSI_DRIVER",
    "CSI_NODE",
    "CSI_STORAGE_CAPACITY",
    "NODE",
    "PERSISTENT_VOLUME",
    "PERSISTENT_VOLUME_CLAIM",
    "POD",
    "POD_GROUP",
    "STORAGE_CLASS",
    "WILDCARD",
    "ActionType",
    "ClusterEvent",
]

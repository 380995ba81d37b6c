"""Cluster events a plugin can be woken by, and its queueing hints, in kube-scheduler v1.36.3's
vocabulary (staging/src/k8s.io/kube-scheduler/framework/types.go: ``ActionType``,
``EventResource``, ``ClusterEvent``, ``ClusterEventWithHint``, ``QueueingHintFn``,
``QueueingHint``; pkg/scheduler/framework/types.go: ``MatchClusterEvents``; events.go: the
queue's own events).

A plugin that rejects pods says which events may make them schedulable again, each with a hint
function (:class:`~app.framework.interfaces.EnqueueExtensions`): ``hint(pod, old, new)`` returns
:data:`QUEUE` or :data:`SKIP` for the parked ``pod`` and the event's old and new objects (a
:class:`~app.framework.types.PodInfo` for a pod, a node object for a node, the storage record
for the others; ``None`` for the side an Add or a Delete has not). A hint that raises counts as
:data:`QUEUE`; a registration without a hint always queues.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from typing import Any, NamedTuple


class ActionType(IntFlag):
    """``framework.ActionType``: what happened to an object (values as v1.36.3's)."""

    ADD = 1
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    #: taints, or ``spec.unschedulable`` turned off
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_NODE_DECLARED_FEATURE = 1 << 7
    UPDATE_POD_LABEL = 1 << 8
    UPDATE_POD_SCALE_DOWN = 1 << 9
    #: ``UpdatePodToleration``: a toleration added
    UPDATE_POD_TOLERATIONS = 1 << 10
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 11
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 12
    #: any update (upstream's ``Update``: every update flag)
    UPDATE = (1 << 13) - 1 - ADD - DELETE
    ALL = (1 << 13) - 1


#: ``fwk.EventResource`` values for the kinds this service watches.
POD, NODE, POD_GROUP, WILDCARD = "Pod", "Node", "PodGroup", "*"
#: the incoming pod events' own resources (pkg/scheduler/framework/types.go ``assignedPod``,
#: ``unschedulablePod``): a registration of :data:`POD` matches both
ASSIGNED_POD, UNSCHEDULED_POD = "AssignedPod", "UnschedulablePod"
#: ``fwk.EventResource`` values of the storage kinds the volume plugins read
PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM = "PersistentVolume", "PersistentVolumeClaim"
STORAGE_CLASS, CSI_NODE = "storage.k8s.io/StorageClass", "storage.k8s.io/CSINode"
CSI_DRIVER, CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIDriver", "storage.k8s.io/CSIStorageCapacity"
VOLUME_ATTACHMENT = "storage.k8s.io/VolumeAttachment"
#: ``fwk.EventResource`` values of the DRA kinds DynamicResources reads
RESOURCE_CLAIM, RESOURCE_SLICE = "resource.k8s.io/ResourceClaim", "resource.k8s.io/ResourceSlice"
DEVICE_CLASS = "resource.k8s.io/DeviceClass"


@dataclass(frozen=True)
class ClusterEvent:
    """``framework.ClusterEvent``: a kind (:data:`POD`, :data:`NODE`, ...) and the actions on it;
    ``label``: a custom label (``EventUnschedulableTimeout``, ``EventForceActivate``)."""

    resource: str
    action: ActionType
    label: str = ""

    def matches(self, other: ClusterEvent) -> bool:
        """Whether the incoming event ``other`` is one this registration covers
        (``MatchClusterEvents``: a wildcard registration matches every event; otherwise the kinds
        match, :data:`POD` matching :data:`ASSIGNED_POD` and :data:`UNSCHEDULED_POD`, the actions
        share a flag and ``other``'s action is no wider than this one's)."""
        if self.is_wildcard():
            return True
        r = self.resource
        kind = r == WILDCARD or r == other.resource or (r == POD and other.resource in _POD_KINDS)
        return kind and bool(self.action & other.action) and other.action <= self.action

    def is_wildcard(self) -> bool:
        """``ClusterEventIsWildCard``: every kind and every action."""
        return self.resource == WILDCARD and self.action == ActionType.ALL


_POD_KINDS = frozenset((ASSIGNED_POD, UNSCHEDULED_POD))

#: Every event of every kind (upstream's ``WildCardEvent``).
ANY_EVENT = ClusterEvent(WILDCARD, ActionType.ALL)
#: the unschedulable pool's flush (events.go ``EventUnschedulableTimeout``)
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, ActionType.ALL, "UnschedulableTimeout")
#: a pod activated while in flight (events.go ``EventForceActivate``)
EVENT_FORCE_ACTIVATE = ClusterEvent(WILDCARD, ActionType.ALL, "ForceActivate")


class QueueingHint(IntEnum):
    """``fwk.QueueingHint``: whether an event may make a parked pod schedulable."""

    SKIP = 0
    QUEUE = 1


QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.SKIP

#: ``QueueingHintFn``: ``(pod, old, new) -> QUEUE | SKIP`` (raising counts as ``QUEUE``)
QueueingHintFn = Callable[[Any, Any, Any], QueueingHint]


@dataclass(frozen=True)
class ClusterEventWithHint:
    """``fwk.ClusterEventWithHint``: an event and the hint judging it (``None``: always queue)."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None


class ObservedEvent(NamedTuple):
    """An event that happened, with its objects: ``old`` (``None`` for an Add) and ``new``
    (``None`` for a Delete), the records the cache holds (no copies). ``max_priority``: only
    parked pods of at most this priority are considered for it (``getLEPriorityPreCheck``,
    v1.36.3 eventhandlers.go: a nominated pod's deletion or new nomination); ``None``: all."""

    event: ClusterEvent
    old: Any = None
    new: Any = None
    max_priority: int | None = None


def objects_as(old: Any, new: Any, kind: type[Any] | tuple[type[Any], ...]) -> tuple[Any, Any]:
    """``util.As[T](oldObj, newObj)`` (pkg/scheduler/util/utils.go): the event's objects when each
    is ``None`` or a ``kind``; raises ``TypeError`` otherwise (a hint's error: ``Queue``)."""
    for obj in (old, new):
        if obj is not None and not isinstance(obj, kind):
            raise TypeError(f"unexpected object of type {type(obj).__name__}")
    return old, new


def with_hints(events: tuple[ClusterEvent, ...] | list[ClusterEvent]) -> tuple[ClusterEventWithHint, ...]:
    """Registrations without hints (a plugin that returns plain events: always queue)."""
    return tuple(ClusterEventWithHint(e) for e in events)


__all__ = [
    "ANY_EVENT",
    "ASSIGNED_POD",
    "CSI_DRIVER",
    "CSI_NODE",
    "CSI_STORAGE_CAPACITY",
    "DEVICE_CLASS",
    "EVENT_FORCE_ACTIVATE",
    "EVENT_UNSCHEDULABLE_TIMEOUT",
    "NODE",
    "PERSISTENT_VOLUME",
    "PERSISTENT_VOLUME_CLAIM",
    "POD",
    "POD_GROUP",
    "QUEUE",
    "RESOURCE_CLAIM",
    "RESOURCE_SLICE",
    "SKIP",
    "STORAGE_CLASS",
    "UNSCHEDULED_POD",
    "VOLUME_ATTACHMENT",
    "WILDCARD",
    "ActionType",
    "ClusterEvent",
    "ClusterEventWithHint",
    "ObservedEvent",
    "QueueingHint",
    "QueueingHintFn",
    "objects_as",
    "with_hints",
]

"""SchedulingGates: a pod with ``spec.schedulingGates`` is not attempted.

Ports kube-scheduler v1.36.3's plugin (pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go):
PreEnqueue returns ``SUCCESS`` for a pod without gates, else ``UnschedulableAndUnresolvable`` with
``waiting for scheduling gates: [a b]`` (Go's ``fmt.Sprintf("%v", []string{...})``: the gate names
in spec order, separated by one space, in brackets).

``EventsToRegister`` (queueing hints GA since v1.34): Pod ``UpdatePodSchedulingGatesEliminated``
judged by :func:`is_schedulable_after_update_pod_scheduling_gates_eliminated` (``Queue`` for the
pod's own update only). v1.30 registered nothing (``SchedulerQueueingHints`` off), which counted
as every event.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from app.framework.events import POD, QUEUE, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, objects_as
from app.framework.events import SKIP as QUEUE_SKIP
from app.framework.handle import Handle
from app.framework.registry import PluginEntry
from app.framework.status import SUCCESS, Code, Status
from app.framework.types import PodInfo

NAME = "SchedulingGates"


def go_string_slice(values: tuple[str, ...]) -> str:
    """Go's ``%v`` of a ``[]string``: ``[a b]`` (``[]`` when empty)."""
    return "[" + " ".join(values) + "]"


@lru_cache(maxsize=1024)
def gated_status(gates: tuple[str, ...]) -> Status:
    """The ``UnschedulableAndUnresolvable`` status for ``gates``, one shared object per distinct
    list of gate names."""
    return Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        (f"waiting for scheduling gates: {go_string_slice(gates)}",),
        reason_code="SchedulingGated",
    )


def is_schedulable_after_update_pod_scheduling_gates_eliminated(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterUpdatePodSchedulingGatesEliminated``: ``Queue`` when the updated pod is
    the pod itself (same UID), ``Skip`` for another pod. Raises ``TypeError`` without a new pod."""
    _, modified = objects_as(old, new, PodInfo)
    if modified is None:
        raise TypeError("no new pod")
    return QUEUE if modified.uid == pod.uid else QUEUE_SKIP


#: ``EventsToRegister`` (v1.36.3)
EVENTS = (
    ClusterEventWithHint(
        ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
        is_schedulable_after_update_pod_scheduling_gates_eliminated,
    ),
)


class SchedulingGates:
    """PreEnqueue and EventsToRegister (see the module doc). Takes no args; stateless."""

    name = NAME

    def __init__(self, args: None = None, handle: Handle | None = None) -> None:
        pass

    def pre_enqueue(self, pod: PodInfo) -> Status:
        """``SUCCESS`` without scheduling gates, else ``UnschedulableAndUnresolvable`` naming them."""
        gates = pod.scheduling_gates
        if not gates:
            return SUCCESS
        return gated_status(gates)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister``: :data:`EVENTS`."""
        return EVENTS


PLUGIN = PluginEntry(
    name=NAME,
    factory=SchedulingGates,
    args=None,
    summary="preEnqueue: kube-scheduler's SchedulingGates (a pod with spec.schedulingGates waits in the queue)",
)

"""SchedulingGates: a pod with ``spec.schedulingGates`` is not attempted.

Ports kube-scheduler v1.30's plugin (pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go):
PreEnqueue returns ``SUCCESS`` for a pod without gates, else ``UnschedulableAndUnresolvable`` with
``waiting for scheduling gates: [a b]`` (Go's ``fmt.Sprintf("%v", []string{...})``: the gate names
in spec order, separated by one space, in brackets).

Upstream v1.30 registers events only with the ``SchedulerQueueingHints`` feature gate, off by
default in v1.30: a gated pod is re-examined when it is updated, not on cluster events, so this
plugin registers none (it is not an ``EnqueueExtensions``).
"""

from __future__ import annotations

from functools import lru_cache

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


class SchedulingGates:
    """PreEnqueue (see the module doc). Takes no args; stateless."""

    name = NAME

    def __init__(self, args: None = None, handle: Handle | None = None) -> None:
        pass

    def pre_enqueue(self, pod: PodInfo) -> Status:
        """``SUCCESS`` without scheduling gates, else ``UnschedulableAndUnresolvable`` naming them."""
        gates = pod.scheduling_gates
        if not gates:
            return SUCCESS
        return gated_status(gates)


PLUGIN = PluginEntry(
    name=NAME,
    factory=SchedulingGates,
    args=None,
    summary="preEnqueue: kube-scheduler's SchedulingGates (a pod with spec.schedulingGates waits in the queue)",
)

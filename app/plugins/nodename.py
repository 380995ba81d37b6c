"""NodeName: a pod whose ``spec.nodeName`` is set fits only that node.

Ports kube-scheduler v1.30's plugin (pkg/scheduler/framework/plugins/nodename/node_name.go):
Filter only (v1.30 has no PreFilter here), ``Fits``: ``len(pod.Spec.NodeName) == 0 ||
pod.Spec.NodeName == node.Name``; otherwise ``UnschedulableAndUnresolvable`` ``node(s) didn't
match the requested node name``.

Needs only the node's name, so it also judges nodes known only by name. (The standalone scheduler
never schedules a pod whose ``nodeName`` is set; the extender may still be asked about one.)
"""

from __future__ import annotations

from collections.abc import Sequence

from app.framework import signers
from app.framework.events import NODE, ActionType, ClusterEvent
from app.framework.handle import Handle
from app.framework.interfaces import SignFragment
from app.framework.registry import PluginEntry
from app.framework.status import SUCCESS, Code, Status
from app.framework.types import CycleState, NodeInfo, PodInfo

NAME = "NodeName"
#: ``ErrReason``
ERR_REASON = "node(s) didn't match the requested node name"

_REJECTED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON,), reason_code="NodeNameMismatch")


def fits(pod: PodInfo, node: NodeInfo) -> bool:
    """``nodename.Fits``: the pod names no node, or names this one."""
    return not pod.node_name or pod.node_name == node.name


#: the cluster events that may make a pod this plugin rejected schedulable
#: v1.36.3 ``EventsToRegister``: Node Add without a hint (preCheck is gone with queueing hints)
_EVENTS = (ClusterEvent(NODE, ActionType.ADD),)


class NodeName:
    """Filter (see the module doc). Takes no args."""

    name = NAME

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (node_name.go, v1.36.3): ``spec.nodeName``."""
        return [(signers.NODE_NAME, pod.node_name)], SUCCESS

    def __init__(self, args: None = None, handle: Handle | None = None) -> None:
        pass

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``SUCCESS`` or ``UnschedulableAndUnresolvable`` ``node(s) didn't match the requested node name``."""
        return SUCCESS if fits(pod, node) else _REJECTED

    def events_to_register(self) -> Sequence[ClusterEvent]:
        """``EventsToRegister`` (v1.36.3 node_name.go): Node Add, no hint (always ``Queue``)."""
        return _EVENTS


PLUGIN = PluginEntry(
    name=NAME,
    factory=NodeName,
    args=None,
    needs_cluster=False,
    summary="filter: kube-scheduler's NodeName (a pod with spec.nodeName fits only that node)",
)

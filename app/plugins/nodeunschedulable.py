"""NodeUnschedulable: a cordoned node (``spec.unschedulable: true``) takes only pods that tolerate
the ``node.kubernetes.io/unschedulable:NoSchedule`` taint.

Ports kube-scheduler v1.30's plugin (pkg/scheduler/framework/plugins/nodeunschedulable/
node_unschedulable.go): Filter only, ``UnschedulableAndUnresolvable`` ``node(s) were
unschedulable``; the toleration check is ``v1helper.TolerationsTolerateTaint`` with the taint
``{Key: node.kubernetes.io/unschedulable, Effect: NoSchedule}`` (no value), via
:func:`app.plugins.tainttoleration.tolerations_tolerate_taint`.

Reads only the pod and the node object (no cluster state). A node known only by name (no object)
is an ``ERROR`` (:data:`~app.framework.types.NO_NODE`): v1.30 always has the node object (older
releases answered ``node(s) had unknown conditions`` for a missing one).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.framework import objects, signers
from app.framework.events import (
    NODE,
    POD,
    QUEUE,
    SKIP,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    objects_as,
)
from app.framework.handle import Handle
from app.framework.interfaces import SignFragment
from app.framework.registry import PluginEntry
from app.framework.status import SUCCESS, Code, Status
from app.framework.taints import NO_SCHEDULE, tolerations_tolerate_taint
from app.framework.types import NO_NODE, CycleState, NodeInfo, PodInfo

NAME = "NodeUnschedulable"
#: ``v1.TaintNodeUnschedulable``
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
#: ``ErrReasonUnschedulable``
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"

_UNSCHEDULABLE_TAINT = objects.Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=NO_SCHEDULE)
_REJECTED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_UNSCHEDULABLE,), reason_code="NodeUnschedulable")
_NO_NODE_STATUS = Status.error(NO_NODE)


def tolerates_unschedulable(pod: PodInfo) -> bool:
    """Whether ``pod`` tolerates ``node.kubernetes.io/unschedulable:NoSchedule`` (and so a
    cordoned node)."""
    return tolerations_tolerate_taint(pod.tolerations, _UNSCHEDULABLE_TAINT)


#: the cluster events that may make a pod this plugin rejected schedulable


def is_schedulable_after_node_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterNodeChange`` (v1.36.3 node_unschedulable.go): ``Queue`` for a node
    uncordoned, or added schedulable."""
    original, modified = objects_as(old, new, objects.Node)
    if modified is None:
        raise TypeError("no new node")
    now = _cordoned(modified)
    if (original is not None and _cordoned(original) and not now) or (original is None and not now):
        return QUEUE
    return SKIP


def is_schedulable_after_pod_toleration_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPodTolerationChange`` (v1.36.3 node_unschedulable.go): ``Queue`` when
    the pod itself now tolerates ``node.kubernetes.io/unschedulable:NoSchedule``."""
    _, modified = objects_as(old, new, PodInfo)
    if modified is None:
        raise TypeError("no new pod")
    return QUEUE if modified.uid == pod.uid and tolerates_unschedulable(modified) else SKIP


def _cordoned(node: objects.Node) -> bool:
    return bool(node.spec is not None and node.spec.unschedulable)


#: v1.36.3 ``EventsToRegister`` with queueing hints (no UpdateNodeLabel without preCheck)
_EVENTS = (
    ClusterEventWithHint(
        ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), is_schedulable_after_node_change
    ),
    ClusterEventWithHint(
        ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATIONS), is_schedulable_after_pod_toleration_change
    ),
)


class NodeUnschedulable:
    """Filter (see the module doc). Takes no args."""

    name = NAME

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (node_unschedulable.go, v1.36.3): the tolerations."""
        return [(signers.TOLERATIONS, signers.tolerations(pod))], SUCCESS

    def __init__(self, args: None = None, handle: Handle | None = None) -> None:
        pass

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``SUCCESS``, or ``UnschedulableAndUnresolvable`` for a cordoned node the pod does not
        tolerate; ``ERROR`` for a node without its object."""
        if node.node is None:
            return _NO_NODE_STATUS
        if node.unschedulable and not tolerates_unschedulable(pod):
            return _REJECTED
        return SUCCESS

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister`` (v1.36.3): Node Add|UpdateNodeTaint and Pod UpdatePodToleration,
        each with its hint."""
        return _EVENTS


PLUGIN = PluginEntry(
    name=NAME,
    factory=NodeUnschedulable,
    args=None,
    needs_cluster=False,
    summary="filter: kube-scheduler's NodeUnschedulable (cordoned nodes, unless the pod tolerates them)",
)

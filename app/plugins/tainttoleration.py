"""TaintToleration: a pod goes only where it tolerates the NoSchedule/NoExecute taints, and
prefers nodes with fewer PreferNoSchedule taints it does not tolerate.

Ports kube-scheduler v1.36.3's plugin (pkg/scheduler/framework/plugins/tainttoleration/
taint_toleration.go) with the helpers it calls: ``v1helper.FindMatchingUntoleratedTaint`` and
``TolerationsTolerateTaint`` (k8s.io/component-helpers/scheduling/corev1/helpers.go),
``helper.DoNotScheduleTaintsFilterFunc`` (pkg/scheduler/framework/plugins/helper/taint.go) and
``Toleration.ToleratesTaint`` (k8s.io/api/core/v1/toleration.go).

- Filter: a taint of ``spec.taints`` with effect ``NoSchedule`` or ``NoExecute`` that no
  toleration tolerates rejects the node, ``UnschedulableAndUnresolvable``
  ``node(s) had untolerated taint(s)`` (v1.30 named the first such taint; v1.36.3 names none, so
  the FitError counts every such node under one reason). The
  ``TaintTolerationComparisonOperators`` gate (alpha, off: ``Lt``/``Gt`` tolerations) is not
  implemented.
- PreScore: the pod's tolerations with effect ``PreferNoSchedule`` or empty (empty means every
  effect); never ``Skip``.
- Score: how many ``PreferNoSchedule`` taints of the node those tolerations do not tolerate.
- NormalizeScore: ``DefaultNormalizeScore(MaxNodeScore, reverse=true)``: the node with the most
  such taints scores 0, a node with none 100.

Reads only the pod and the node object (no cluster state). A node known only by name (no object)
is an ``ERROR`` (:data:`~app.framework.types.NO_NODE`): upstream always has the node object.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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
from app.framework.scores import MAX_NODE_SCORE, default_normalize_score
from app.framework.status import SUCCESS, Code, Status
from app.framework.taints import (
    PREFER_NO_SCHEDULE,
    find_matching_untolerated_taint,
    tolerations_tolerate_taint,
)
from app.framework.types import NO_NODE, CycleState, NodeInfo, NodeScore, PodInfo

NAME = "TaintToleration"
#: CycleState key of PreScore's tolerations (upstream ``"PreScore" + Name``)
_PRE_SCORE = f"{NAME}/prefer-no-schedule-tolerations"

_NO_NODE_STATUS = Status.error(NO_NODE)


def prefer_no_schedule_tolerations(tolerations: Iterable[objects.Toleration]) -> tuple[objects.Toleration, ...]:
    """``getAllTolerationPreferNoSchedule``: the tolerations with effect ``PreferNoSchedule`` or
    empty (an empty effect means every effect)."""
    return tuple(t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


def count_intolerable_prefer_no_schedule(
    taints: Iterable[objects.Taint], tolerations: Sequence[objects.Toleration]
) -> int:
    """``countIntolerableTaintsPreferNoSchedule``: the ``PreferNoSchedule`` taints none of
    ``tolerations`` tolerates."""
    return sum(1 for t in taints if t.effect == PREFER_NO_SCHEDULE and not tolerations_tolerate_taint(tolerations, t))


#: ``Filter``'s reason for a node with an untolerated taint
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"
_UNTOLERATED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_UNTOLERATED,), reason_code="UntoleratedTaint")


def untolerated_status(key: str = "", value: str = "") -> Status:
    """The Filter rejection for an untolerated taint, one shared object whatever the taint:
    ``node(s) had untolerated taint(s)`` (v1.36.3; ``key`` and ``value`` are no longer part of
    it)."""
    return _UNTOLERATED


def is_schedulable_after_node_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterNodeChange`` (v1.36.3 taint_toleration.go): ``Queue`` when the added or
    updated node had an untolerated NoSchedule/NoExecute taint (or is new) and has none now."""
    original, modified = objects_as(old, new, objects.Node)
    if modified is None:
        raise TypeError("no new node")
    was_untolerated = (
        original is None or find_matching_untolerated_taint(_taints(original), pod.tolerations) is not None
    )
    is_untolerated = find_matching_untolerated_taint(_taints(modified), pod.tolerations) is not None
    return QUEUE if was_untolerated and not is_untolerated else SKIP


def is_schedulable_after_pod_toleration_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPodTolerationChange`` (v1.36.3 taint_toleration.go): ``Queue`` when
    the pod itself got a toleration, ``Skip`` for another pod."""
    _, modified = objects_as(old, new, PodInfo)
    if modified is None:
        raise TypeError("no new pod")
    return QUEUE if modified.uid == pod.uid else SKIP


def _taints(node: objects.Node) -> list[objects.Taint]:
    return (node.spec.taints if node.spec is not None else None) or []


#: the cluster events that may make a pod this plugin rejected schedulable (v1.36.3
#: ``EventsToRegister`` with queueing hints: preCheck is gone, so no UpdateNodeLabel)
_EVENTS = (
    ClusterEventWithHint(
        ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), is_schedulable_after_node_change
    ),
    ClusterEventWithHint(
        ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATIONS), is_schedulable_after_pod_toleration_change
    ),
)


class TaintToleration:
    """Filter, PreScore, Score and NormalizeScore (see the module doc). Takes no args."""

    name = NAME

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (taint_toleration.go, v1.36.3): the tolerations."""
        return [(signers.TOLERATIONS, signers.tolerations(pod))], SUCCESS

    def __init__(self, args: None = None, handle: Handle | None = None) -> None:
        pass

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``SUCCESS``, or ``UnschedulableAndUnresolvable`` when a NoSchedule/NoExecute taint is
        not tolerated; ``ERROR`` for a node without its object."""
        if node.node is None:
            return _NO_NODE_STATUS
        if find_matching_untolerated_taint(node.taints, pod.tolerations) is None:
            return SUCCESS
        return _UNTOLERATED

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """Keep the pod's PreferNoSchedule (or effect-less) tolerations for Score."""
        state.write(_PRE_SCORE, prefer_no_schedule_tolerations(pod.tolerations))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        """The raw score: the count of intolerable PreferNoSchedule taints (0..len(taints)).
        ``Error`` for a node without its object, and when PreScore did not run (upstream's
        ``failed to read "PreScoreTaintToleration" from cycleState``)."""
        if node.node is None:
            return 0, _NO_NODE_STATUS
        tolerations: tuple[objects.Toleration, ...] | None = state.get(_PRE_SCORE)
        if tolerations is None:
            return 0, Status.error(f'failed to read "PreScore{NAME}" from cycleState: not found')
        return count_intolerable_prefer_no_schedule(node.taints, tolerations), SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        """``DefaultNormalizeScore(MaxNodeScore, true, scores)``: fewer intolerable taints score higher."""
        return default_normalize_score(MAX_NODE_SCORE, True, scores)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister`` (v1.36.3): Node Add|UpdateNodeTaint judged by
        :func:`is_schedulable_after_node_change`, Pod UpdatePodToleration by
        :func:`is_schedulable_after_pod_toleration_change`."""
        return _EVENTS


PLUGIN = PluginEntry(
    name=NAME,
    factory=TaintToleration,
    args=None,
    needs_cluster=False,
    summary="filter + score: kube-scheduler's TaintToleration (NoSchedule/NoExecute taints, PreferNoSchedule count)",
)

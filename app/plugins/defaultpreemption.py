"""DefaultPreemption: kube-scheduler's PostFilter, for a pod no node passed Filter
(pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go and
pkg/scheduler/framework/preemption/preemption.go, v1.30).

- **Eligibility** (``PodEligibleToPreemptOthers``): a pod with ``preemptionPolicy: Never`` does not
  preempt ("not eligible due to preemptionPolicy=Never."); nor does a pod nominated to a node where
  a lower-priority pod is already terminating ("not eligible due to a terminating pod on the
  nominated node."), unless Filter found that node UnschedulableAndUnresolvable.
- **Candidates** (``findCandidates``, ``nodesWherePreemptionMightHelp``): the nodes Filter rejected
  as ``Unschedulable`` (an ``UnschedulableAndUnresolvable`` node gets "Preemption is not helpful for
  scheduling"); from a random offset, until ``numCandidates`` nodes with victims are found
  (``minCandidateNodesPercentage`` 10 % of them, at least ``minCandidateNodesAbsolute`` 100).
- **Victims on a node** (``SelectVictimsOnNode``): every pod of lower priority is removed; when the
  pod still does not fit (the profile's Filter, PreFilter recomputed with the node so changed),
  the node is no candidate (its Filter status); else the removed pods are put back one by one,
  most important first (``MoreImportantPod``: higher priority, then the earlier
  ``status.startTime``), PodDisruptionBudget-violating ones first, and each that still lets the pod
  fit is reprieved; the others are the victims. No lower-priority pod: "No preemption victims
  found for incoming pod" (UnschedulableAndUnresolvable).
- **PodDisruptionBudgets** (``filterPodsWithPDBViolation``): walking the potential victims most
  important first, each budget of the pod's namespace whose non-empty selector matches the pod's
  labels, and that does not list the pod in ``status.disruptedPods``, loses one of its
  ``status.disruptionsAllowed``; a pod that takes any such budget below zero violates it. Those
  are reprieved first; the ones that still must go are the candidate's PDB violations.
- **The candidate** (``pickOneNodeForPreemption``): the fewest PDB violations, then the lowest
  highest-priority victim, the lowest sum of priorities, the fewest victims, the latest earliest
  start time of the highest-priority victims, then the first.
- **Preparing it** (``prepareCandidate``): a victim waiting at Permit is rejected there
  ("preempted"); the others are marked ``DisruptionTarget=True`` (``PreemptionByScheduler``) and
  deleted (UID preconditions); the lower-priority pods nominated to the node lose their
  nomination (``getLowerPriorityNominatedPods``, ``ClearNominatedNodeName``); the pod is
  nominated to the node (``status.nominatedNodeName``); all through the cluster state
  (:meth:`~app.framework.handle.ClusterHandle.preempt`). Pods nominated to a node count there for
  pods of lower or equal priority, so the room is kept for it. Not written: the ``Preempted``
  Event on each victim.

With no candidate the answer is ``Unschedulable`` with "preemption: " and a FitError of the
candidates' statuses ("0/3 nodes are available: 1 No preemption victims found for incoming pod, 2
Preemption is not helpful for scheduling."), which the scheduler appends to its own FitError.

The budgets are the cluster state's watched ``policy/v1`` PodDisruptionBudgets (listed once per
preemption, as upstream's ``getPodDisruptionBudgets``).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from pydantic import Field

from app.framework import (
    SUCCESS,
    ClusterHandle,
    ClusterNeeds,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    PluginArgs,
    PluginEntry,
    PodDisruptionBudget,
    PodInfo,
    PolicyRule,
    Status,
)
from app.framework.labels import label_selector_matches
from app.framework.status import fit_error_message

NAME = "DefaultPreemption"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
_NOT_HELPFUL = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NOT_HELPFUL,))
_NO_VICTIMS = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,))
#: ``math.MaxInt32 + 1``: added to each victim's priority in the sum (so negative ones count)
_PRIORITY_OFFSET = 2**31


class DefaultPreemptionArgs(PluginArgs):
    """``DefaultPreemptionArgs``: how many candidate nodes a dry run looks for
    (``minCandidateNodesPercentage`` 10, 0..100; ``minCandidateNodesAbsolute`` 100, >= 0)."""

    min_candidate_nodes_percentage: int = Field(default=10, ge=0, le=100)
    min_candidate_nodes_absolute: int = Field(default=100, ge=0)


def start_time(pod: PodInfo, now: float) -> float:
    """``util.GetPodStartTime``: ``status.startTime`` in seconds, ``now`` when it is not set."""
    if not pod.start_time:
        return now
    try:
        return datetime.fromisoformat(pod.start_time.replace("Z", "+00:00")).astimezone(UTC).timestamp()
    except ValueError:
        return now


def more_important(a: PodInfo, b: PodInfo, now: float) -> bool:
    """``util.MoreImportantPod``: higher priority, or the same and started earlier."""
    if a.priority != b.priority:
        return a.priority > b.priority
    return start_time(a, now) < start_time(b, now)


def pick_one_node(candidates: Sequence[tuple[str, list[PodInfo], int]], now: float) -> str:
    """``pickOneNodeForPreemption`` over ``(node, victims most important first, PDB violations)``."""
    if not candidates:
        return ""

    def earliest_of_highest(victims: list[PodInfo]) -> float:
        top = victims[0].priority
        return min(start_time(v, now) for v in victims if v.priority == top)

    scores = (
        lambda c: -c[2],
        lambda c: -c[1][0].priority,
        lambda c: -sum(v.priority + _PRIORITY_OFFSET for v in c[1]),
        lambda c: -len(c[1]),
        lambda c: earliest_of_highest(c[1]),
    )
    remaining = list(candidates)
    for score in scores:
        best = max(score(c) for c in remaining)
        remaining = [c for c in remaining if score(c) == best]
        if len(remaining) == 1:
            break
    return remaining[0][0]


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], budgets: Sequence[PodDisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """``filterPodsWithPDBViolation``: ``(violating, non_violating)``, each in ``pods``' order (see
    the module doc)."""
    allowed = [b.disruptions_allowed for b in budgets]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        violated = False
        if pod.labels:  # a pod without labels matches no budget
            for i, budget in enumerate(budgets):
                if budget.namespace != pod.namespace:
                    continue
                selector = budget.selector
                if selector is None or not (selector.match_labels or selector.match_expressions):
                    continue  # a nil or empty selector matches nothing
                if not label_selector_matches(selector, pod.labels):
                    continue
                if pod.name in budget.disrupted_pods:
                    continue  # processed by the API server already: not a violation
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


class DefaultPreemption:
    """PostFilter (see the module doc). ``rng``: the dry run's random offset (tests pass their own)."""

    name = NAME

    def __init__(self, args: DefaultPreemptionArgs, handle: Handle, rng: random.Random | None = None) -> None:
        self.args = args
        self.cluster: ClusterHandle = handle.require_cluster(NAME)
        self.run_filter = handle.run_filter
        self.waiting_pods = handle.waiting_pods
        self._rng = rng or random.Random()

    def num_candidates(self, nodes: int) -> int:
        """``calculateNumCandidates``."""
        n = nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, nodes)

    def eligible(self, pod: PodInfo, statuses: Mapping[str, Status], nodes: Sequence[NodeInfo]) -> str:
        """Why ``pod`` may not preempt (``PodEligibleToPreemptOthers``), ``""`` when it may."""
        if pod.preemption_policy == "Never":
            return NEVER
        nominated = pod.nominated_node_name
        if nominated:
            status = statuses.get(nominated)
            if status is not None and status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return ""
            node = next((n for n in nodes if n.name == nominated), None)
            if node is not None and any(p.priority < pod.priority and p.deleting for p in node.pods):
                return TERMINATING
        return ""

    def select_victims(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        now: float,
        budgets: Sequence[PodDisruptionBudget] = (),
    ) -> tuple[list[PodInfo], int, Status]:
        """``SelectVictimsOnNode``: the victims (most important first), how many violate one of
        ``budgets``, and the status (``SUCCESS``, or why the node is no candidate)."""
        snapshot = state.snapshot
        potential = [p for p in node.pods if p.priority < pod.priority]
        if not potential:
            return [], 0, _NO_VICTIMS
        without = snapshot.without_pods(node, potential)
        status = self.run_filter(state, pod, without)
        if not status.is_success():
            return [], 0, status
        ordered = sorted(potential, key=lambda p: (-p.priority, start_time(p, now)))
        violating, non_violating = filter_pods_with_pdb_violation(ordered, budgets)
        victims: list[PodInfo] = []
        violations = 0
        current = without
        for candidate in (*violating, *non_violating):  # the PDB-violating ones reprieved first
            trial = snapshot.with_pods(current, [candidate])
            if self.run_filter(state, pod, trial).is_success():
                current = trial  # reprieved
            else:
                victims.append(candidate)
                violations += candidate in violating
        if violating and non_violating:  # most important first again
            victims.sort(key=lambda p: (-p.priority, start_time(p, now)))
        return victims, violations, SUCCESS

    def post_filter(self, state: CycleState, pod: PodInfo, statuses: Mapping[str, Status]) -> tuple[str, Status]:
        """Find the node where evicting the fewest, least important pods lets ``pod`` fit, evict
        them and nominate the pod there (see the module doc)."""
        snapshot = state.snapshot
        if snapshot is None:
            return "", Status(Code.ERROR, ("preemption needs the cluster state",))
        nodes = snapshot.list()
        reason = self.eligible(pod, statuses, nodes)
        if reason:
            return "", Status(Code.UNSCHEDULABLE, (reason,))
        node_statuses: dict[str, Status] = {}
        potential: list[NodeInfo] = []
        for node in nodes:
            status = statuses.get(node.name)
            if status is not None and status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                node_statuses[node.name] = _NOT_HELPFUL
            else:
                potential.append(node)
        candidates: list[tuple[str, list[PodInfo], int]] = []
        if potential:
            budgets = self.cluster.pod_disruption_budgets()
            now = datetime.now(UTC).timestamp()
            wanted = self.num_candidates(len(potential))
            offset = self._rng.randrange(len(potential))
            for i in range(len(potential)):
                node = potential[(offset + i) % len(potential)]
                victims, violations, status = self.select_victims(state, pod, node, now, budgets)
                if status.is_success() and victims:
                    candidates.append((node.name, victims, violations))
                    if len(candidates) >= wanted:
                        break
                elif status.is_success():
                    node_statuses[node.name] = Status.error(f"expected at least one victim pod on node {node.name!r}")
                else:
                    node_statuses[node.name] = status
        if not candidates:
            message = fit_error_message(len(nodes), node_statuses.values())
            return "", Status(Code.UNSCHEDULABLE, (f"preemption: {message}",))
        chosen = pick_one_node(candidates, datetime.now(UTC).timestamp())
        victims = next(v for name, v, _ in candidates if name == chosen)
        deleted = []
        for victim in victims:  # a victim waiting at Permit is rejected, not deleted (upstream)
            waiting = self.waiting_pods.get(victim.uid)
            if waiting is not None:
                waiting.reject(NAME, "preempted")
            else:
                deleted.append(victim)
        # lower-priority pods nominated to the node may no longer fit there (getLowerPriorityNominatedPods)
        lower = [p for p in snapshot.nominated_pods(chosen) if p.priority < pod.priority and p.uid != pod.uid]
        self.cluster.preempt(pod, chosen, deleted, lower)
        return chosen, SUCCESS


PLUGIN = PluginEntry(
    name=NAME,
    factory=DefaultPreemption,
    args=DefaultPreemptionArgs,
    needs_cluster=True,
    needs=lambda args, http_timeout: ClusterNeeds(pod_disruption_budgets=True),
    # DELETE the victims; PATCH pods/status for the preemptor's nominatedNodeName; watch the PDBs
    rbac=(
        PolicyRule(("",), ("pods",), ("delete",)),
        PolicyRule(("",), ("pods/status",), ("patch",)),
        PolicyRule(("policy",), ("poddisruptionbudgets",), ("list", "watch")),
    ),
    summary="postFilter: kube-scheduler's DefaultPreemption (evict lower-priority pods, nominate the node)",
)

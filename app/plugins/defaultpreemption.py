"""DefaultPreemption: kube-scheduler's PostFilter, for a pod no node passed Filter
(pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go and
pkg/scheduler/framework/preemption/preemption.go, v1.36.3; the victims preempted off the cycle by
:mod:`app.plugins.preemption_executor`, as with ``SchedulerAsyncPreemption`` on, v1.36's default).

What each step does (eligibility, candidates, victims on a node, PodDisruptionBudgets, the
candidate, preparing it) is in :class:`DefaultPreemption`'s docstring.

Every message gets upstream's ``preemption: `` prefix (``PostFilter``). The result carries
upstream's ``NominatingInfo`` (:class:`~app.framework.runtime.NominatingInfo`): the chosen node, or
with no candidate ``""`` in ``ModeOverride``, which clears a stale nomination of the pod. With no
candidate the answer is ``Unschedulable`` with a FitError over every node of the snapshot: the
dry run's statuses, and "Preemption is not helpful for scheduling" for each node the dry run did
not try (``SetAbsentNodesStatus``): "preemption: 0/3 nodes are available: 1 No preemption victims
found for incoming pod, 2 Preemption is not helpful for scheduling.", which the scheduler appends
to its own FitError; when the dry run erred on a node and found no candidate, ``Error`` with the
errors.

The budgets are the cluster state's watched ``policy/v1`` PodDisruptionBudgets (listed once per
preemption, as upstream's ``getPodDisruptionBudgets``).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import NamedTuple

from pydantic import Field

from app.framework import (
    SUCCESS,
    ClusterHandle,
    ClusterNeeds,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    NodeLister,
    PluginArgs,
    PluginEntry,
    PodDisruptionBudget,
    PodInfo,
    PolicyRule,
    Status,
    features,
)
from app.framework.events import POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from app.framework.events import SKIP as QUEUE_SKIP
from app.framework.labels import label_selector_matches
from app.framework.nominator import CLEAR_NOMINATED_NODE, NOMINATING_NOOP, NominatingInfo
from app.framework.status import fit_error_message
from app.framework.validation import aggregate
from app.plugins.preemption_executor import ASYNC_PREEMPTION_GATE, Executor

NAME = "DefaultPreemption"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
#: ``PostFilter``'s prefix of every message of ``Preempt``
PREFIX = "preemption: "
_NOT_HELPFUL = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NOT_HELPFUL,))
_NO_VICTIMS = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,))
#: PreEnqueue's answer while the pod's preemption is in flight
WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
_WAITING_FOR_PREEMPTION = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (WAITING_FOR_PREEMPTION,), NAME)
#: ``math.MaxInt32 + 1``: added to each victim's priority in the sum (so negative ones count)
_PRIORITY_OFFSET = 2**31


class DefaultPreemptionArgs(PluginArgs):
    """``DefaultPreemptionArgs``: how many candidate nodes a dry run looks for
    (``minCandidateNodesPercentage`` 10, 0..100; ``minCandidateNodesAbsolute`` 100, >= 0)."""

    min_candidate_nodes_percentage: int = Field(default=10, ge=0, le=100)
    min_candidate_nodes_absolute: int = Field(default=100, ge=0)


class Candidate(NamedTuple):
    """``preemption.candidate``: a node, its victims (most important first) and how many of them
    violate a PodDisruptionBudget (``extenderv1.Victims``)."""

    name: str
    victims: list[PodInfo]
    num_pdb_violations: int


def start_time(pod: PodInfo, now: float) -> float:
    """``util.GetPodStartTime``: ``status.startTime`` in seconds, ``now`` when it is not set."""
    if not pod.start_time:
        return now
    try:
        return datetime.fromisoformat(pod.start_time.replace("Z", "+00:00")).astimezone(UTC).timestamp()
    except ValueError:
        return now


def earliest_pod_start_time(victims: Sequence[PodInfo], now: float) -> float:
    """``util.GetEarliestPodStartTime``: the earliest start time of the highest-priority pods."""
    top = max(v.priority for v in victims)
    return min(start_time(v, now) for v in victims if v.priority == top)


def pick_one_node(candidates: Sequence[Candidate], now: float) -> Candidate | None:
    """``pickOneNodeForPreemption``: each score function in turn keeps the candidates of the
    highest score, until one is left; then the first (``None`` for no candidates)."""
    if not candidates:
        return None
    scores = (
        lambda c: -c.num_pdb_violations,  # minNumPDBViolatingScoreFunc
        lambda c: -c.victims[0].priority,  # minHighestPriorityScoreFunc (victims[0]: the highest)
        lambda c: -sum(v.priority + _PRIORITY_OFFSET for v in c.victims),  # minSumPrioritiesScoreFunc
        lambda c: -len(c.victims),  # minNumPodsScoreFunc
        lambda c: earliest_pod_start_time(c.victims, now),  # latestStartTimeScoreFunc
    )
    remaining = list(candidates)
    for score in scores:
        best = max(score(c) for c in remaining)
        remaining = [c for c in remaining if score(c) == best]
        if len(remaining) == 1:
            break
    return remaining[0]


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


def nodes_where_preemption_might_help(
    nodes: Sequence[NodeInfo], statuses: Mapping[str, Status]
) -> tuple[list[NodeInfo], dict[str, Status]]:
    """``nodesWherePreemptionMightHelp``: the nodes whose Filter status is ``Unschedulable``, and
    "Preemption is not helpful for scheduling" for those ``UnschedulableAndUnresolvable`` or
    without a status (a node of any other status is in neither)."""
    potential: list[NodeInfo] = []
    unhelpful: dict[str, Status] = {}
    for node in nodes:
        status = statuses.get(node.name)
        if status is not None and status.code is Code.UNSCHEDULABLE:
            potential.append(node)
        elif status is None or status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            unhelpful[node.name] = _NOT_HELPFUL
    return potential, unhelpful


def is_pod_schedulable_after_pod_deletion(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isPodSchedulableAfterPodDeletion`` (v1.36.3 default_preemption.go): always ``Skip``."""
    return QUEUE_SKIP


_EVENTS = (ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), is_pod_schedulable_after_pod_deletion),)


class DefaultPreemption:
    """PostFilter and PreEnqueue (see the module doc). ``rng``: the dry run's random offset (tests
    pass their own).

    - **Eligibility** (``PodEligibleToPreemptOthers``): a pod with ``preemptionPolicy: Never`` does not
      preempt ("not eligible due to preemptionPolicy=Never."); nor does a pod nominated to a node where
      a lower-priority pod is already terminating because of a preemption ("not eligible due to a
      terminating pod on the nominated node."; ``podTerminatingByPreemption`` with
      PodDisruptionConditions: ``deletionTimestamp`` set and a ``DisruptionTarget``
      condition ``True`` with reason ``PreemptionByScheduler``: :attr:`PodInfo.terminating_by_preemption`),
      unless Filter found that node UnschedulableAndUnresolvable.
    - **Candidates** (``findCandidates``, ``nodesWherePreemptionMightHelp``): only the nodes Filter
      rejected as ``Unschedulable``; an ``UnschedulableAndUnresolvable`` node, or one without a status,
      gets "Preemption is not helpful for scheduling" (nodes of any other status are left out). From
      a random offset (``GetOffsetAndNumCandidates``) the dry run (``DryRunPreemption``) visits them
      until it holds ``numCandidates`` candidates, one of them without PDB violations
      (``minCandidateNodesPercentage`` 10 % of the nodes, at least ``minCandidateNodesAbsolute`` 100;
      the candidates with and without violations are each kept up to that many, those without first).
    - **Victims on a node** (``SelectVictimsOnNode``), on a copy of the node and of the cycle's state:
      every pod of lower priority is removed (``RemovePod`` of the PreFilter extensions keeps the
      state true); when the pod still does not fit (the profile's
      ``RunFilterPluginsWithNominatedPods``: first with the pods nominated to the node of equal or
      higher priority, the pod itself excepted, counted as running there, then, when there were any
      and it passed, without them; it fits only if both pass), the node is no candidate (its Filter
      status); else the removed pods are put back one by one (``AddPod``), most important first
      (``MoreImportantPod``: higher priority, then the earlier ``status.startTime``),
      PodDisruptionBudget-violating ones first, and each that still lets the pod fit (both passes) is
      reprieved; the others are removed again and are the victims. No lower-priority pod: "No
      preemption victims found for incoming pod" (UnschedulableAndUnresolvable).
    - **PodDisruptionBudgets** (``filterPodsWithPDBViolation``): walking the potential victims most
      important first, each budget of the pod's namespace whose non-empty selector matches the pod's
      labels, and that does not list the pod in ``status.disruptedPods``, loses one of its
      ``status.disruptionsAllowed``; a pod that takes any such budget below zero violates it. Those
      are reprieved first; the ones that still must go are the candidate's PDB violations.
    - **The candidate** (``SelectCandidate``, ``pickOneNodeForPreemption``): the fewest PDB
      violations, then the lowest highest-priority victim, the lowest sum of priorities, the fewest
      victims, the latest earliest start time of the highest-priority victims, then the first.
    - **Preparing it** (``actuatePodPreemption``, :class:`~app.plugins.preemption_executor.Executor`):
      the victims are preempted (a victim waiting at Permit rejected there, the others marked
      ``DisruptionTarget=True`` and deleted) and the lower-priority pods nominated to the node lose
      their nomination, in a task off the cycle; the result nominates the pod to the node at once:
      the scheduler records it in the nominator and writes ``status.nominatedNodeName``
      (``handleSchedulingFailure``). Until its preemption is done the pod is kept out of the active
      queue: PreEnqueue says "waiting for the preemption for this pod to be finished"
      (UnschedulableAndUnresolvable) while ``IsPodRunningPreemption``. Pods nominated to a node count
      there for pods of lower or equal priority, so the room is kept for it.
    """

    name = NAME

    def __init__(self, args: DefaultPreemptionArgs, handle: Handle, rng: random.Random | None = None) -> None:
        self.args = args
        self.cluster: ClusterHandle = handle.require_cluster(NAME)
        #: the profile's framework: its Filter, PreFilter extensions and nominator
        self.handle = handle
        self.waiting_pods = handle.waiting_pods
        self._rng = rng or random.Random()
        #: carries out the chosen candidate (``preemption.Executor``)
        self.executor = Executor(handle, self.cluster, NAME, features.current().enabled(ASYNC_PREEMPTION_GATE))

    def num_candidates(self, nodes: int) -> int:
        """``calculateNumCandidates``."""
        n = nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, nodes)

    def offset_and_num_candidates(self, nodes: int) -> tuple[int, int]:
        """``GetOffsetAndNumCandidates``: a random offset in ``0..nodes-1`` and
        :meth:`num_candidates`."""
        return self._rng.randrange(nodes), self.num_candidates(nodes)

    def eligible(self, pod: PodInfo, nominated_status: Status | None, nodes: NodeLister) -> str:
        """Why ``pod`` may not preempt (``PodEligibleToPreemptOthers``), ``""`` when it may.
        ``nominated_status``: Filter's status of the pod's nominated node. Only a lower-priority
        pod terminating because of a preemption counts (``podTerminatingByPreemption``)."""
        if pod.preemption_policy == "Never":
            return NEVER
        nominated = pod.nominated_node_name
        if nominated:
            if nominated_status is not None and nominated_status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return ""
            node = nodes.get(nominated)
            if node is not None and any(p.priority < pod.priority and p.terminating_by_preemption for p in node.pods):
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
        ``budgets``, and the status (``SUCCESS``, or why the node is no candidate). ``state`` is
        this node's own copy of the cycle's state: the PreFilter extensions change it as pods are
        removed and put back. Each Filter is the profile's ``RunFilterPluginsWithNominatedPods``."""
        snapshot, handle = state.snapshot, self.handle
        potential = [p for p in node.pods if p.priority < pod.priority]
        if not potential:
            return [], 0, _NO_VICTIMS
        current = snapshot.without_pods(node, potential)
        for removed in potential:
            status = handle.run_pre_filter_extension_remove_pod(state, pod, removed, current)
            if not status.is_success():
                return [], 0, status
        status = handle.run_filter_plugins_with_nominated_pods(state, pod, current)
        if not status.is_success():
            return [], 0, status
        ordered = sorted(potential, key=lambda p: (-p.priority, start_time(p, now)))
        violating, non_violating = filter_pods_with_pdb_violation(ordered, budgets)
        victims: list[PodInfo] = []
        violations = 0
        for candidate in (*violating, *non_violating):  # the PDB-violating ones reprieved first
            trial = snapshot.with_pods(current, [candidate])
            status = handle.run_pre_filter_extension_add_pod(state, pod, candidate, trial)
            if not status.is_success():
                return [], 0, status
            if handle.run_filter_plugins_with_nominated_pods(state, pod, trial).is_success():
                current = trial  # reprieved
                continue
            status = handle.run_pre_filter_extension_remove_pod(state, pod, candidate, current)
            if not status.is_success():
                return [], 0, status
            victims.append(candidate)
            violations += candidate in violating
        if violating and non_violating:  # most important first again
            victims.sort(key=lambda p: (-p.priority, start_time(p, now)))
        return victims, violations, SUCCESS

    def dry_run(
        self,
        state: CycleState,
        pod: PodInfo,
        potential: Sequence[NodeInfo],
        budgets: Sequence[PodDisruptionBudget],
        offset: int,
        wanted: int,
    ) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """``DryRunPreemption``: :meth:`select_victims` on ``potential`` from ``offset`` on,
        wrapping around, until ``wanted`` candidates are held and one of them violates no budget;
        the candidates with and without violations are each kept up to ``wanted`` (``candidateList``).
        Returns the candidates (those without violations first), the other nodes' statuses and
        the errors met."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[str, Status] = {}
        errors: list[str] = []
        now = datetime.now(UTC).timestamp()
        for i in range(len(potential)):
            node = potential[(offset + i) % len(potential)]
            victims, violations, status = self.select_victims(state.clone(), pod, node, now, budgets)
            if status.is_success() and victims:
                held = violating if violations else non_violating
                if len(held) < wanted:
                    held.append(Candidate(node.name, victims, violations))
                if non_violating and len(non_violating) + len(violating) >= wanted:
                    break
                continue
            if status.is_success():
                status = Status.error(f'expected at least one victim pod on node "{node.name}"')
            if status.code is Code.ERROR:
                errors.append(status.message)
            statuses[node.name] = status
        return [*non_violating, *violating], statuses, errors

    def find_candidates(
        self, state: CycleState, pod: PodInfo, statuses: Mapping[str, Status], nodes: Sequence[NodeInfo]
    ) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """``findCandidates``: the dry run over :func:`nodes_where_preemption_might_help`; the
        statuses of the nodes that are no candidate (the unhelpful ones included) and the errors."""
        if not nodes:
            return [], {}, ["no nodes available"]
        potential, unhelpful = nodes_where_preemption_might_help(nodes, statuses)
        if not potential:
            return [], unhelpful, []
        budgets = self.cluster.pod_disruption_budgets()
        offset, wanted = self.offset_and_num_candidates(len(potential))
        candidates, node_statuses, errors = self.dry_run(state, pod, potential, budgets, offset, wanted)
        node_statuses.update(unhelpful)
        return candidates, node_statuses, errors

    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate | None:
        """``SelectCandidate``: none, the only one, or :func:`pick_one_node`'s."""
        if len(candidates) == 1:
            return candidates[0]
        return pick_one_node(candidates, datetime.now(UTC).timestamp())

    def pre_enqueue(self, pod: PodInfo) -> Status:
        """``PreEnqueue``: ``UnschedulableAndUnresolvable`` "waiting for the preemption for this
        pod to be finished" while the pod's preemption is in flight
        (:meth:`Executor.is_pod_running_preemption`), else ``SUCCESS`` (always with the gate off)."""
        if self.executor.asynchronous and self.executor.is_pod_running_preemption(pod.uid):
            return _WAITING_FOR_PREEMPTION
        return SUCCESS

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister`` (v1.36.3 default_preemption.go): with async preemption, Pod Delete
        judged by :func:`is_pod_schedulable_after_pod_deletion`, always ``Skip`` (a preemptor's
        other rejecting plugins decide when it is tried again); none with the gate off (PreEnqueue
        then rejects nothing)."""
        return _EVENTS if self.executor.asynchronous else ()

    def preempt(self, state: CycleState, pod: PodInfo, statuses: Mapping[str, Status]) -> tuple[NominatingInfo, Status]:
        """``Evaluator.Preempt``: the result and why there is no nominated node (messages without
        the ``preemption: `` prefix). The result is ``NewPostFilterResultWithNominatedNode`` of the
        chosen node on success and of ``""`` when no node is a candidate (the pod's stale
        nomination is cleared by the scheduler, :data:`CLEAR_NOMINATED_NODE`); upstream's nil
        (:data:`NOMINATING_NOOP`: the nomination stays) when the pod is not eligible, on an error,
        or with no best candidate. With no node where preemption might help, v1.36.3's
        ``findCandidates`` returns no candidate, so the result clears the nomination too."""
        snapshot = state.snapshot
        if snapshot is None:
            return NOMINATING_NOOP, Status(Code.ERROR, ("preemption needs the cluster state",))
        reason = self.eligible(pod, statuses.get(pod.nominated_node_name), snapshot)
        if reason:
            return NOMINATING_NOOP, Status(Code.UNSCHEDULABLE, (reason,))
        candidates, node_statuses, errors = self.find_candidates(state, pod, statuses, snapshot.list())
        unhelpful_names = {name for name, status in node_statuses.items() if status is _NOT_HELPFUL}
        if errors and not candidates:
            return NOMINATING_NOOP, Status.error(aggregate(errors))
        if not candidates:
            tried = [status for name, status in node_statuses.items() if name not in unhelpful_names]
            message = fit_error_message(len(snapshot.list()), tried, absent=_NOT_HELPFUL)
            return CLEAR_NOMINATED_NODE, Status(Code.UNSCHEDULABLE, (message,))
        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return NOMINATING_NOOP, Status(Code.UNSCHEDULABLE, ("no candidate node for preemption",))
        status = self.executor.actuate(pod, best.name, best.victims)
        if not status.is_success():
            return NOMINATING_NOOP, status
        return NominatingInfo(best.name), SUCCESS

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: Mapping[str, Status]
    ) -> tuple[NominatingInfo, Status]:
        """``PostFilter``: :meth:`preempt`, its message prefixed with ``preemption: ``."""
        nominated, status = self.preempt(state, pod, statuses)
        if status.message:
            return nominated, Status(status.code, (PREFIX + status.message,), status.plugin, status.reason_code)
        return nominated, status


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

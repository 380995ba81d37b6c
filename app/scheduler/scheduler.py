"""A profile scheduling, on its own, the pods whose ``spec.schedulerName`` names it, as
kube-scheduler v1.30's ``ScheduleOne`` does (pkg/scheduler/schedule_one.go):

- pods come from the cluster-state watch (pending, this ``schedulerName``, not assumed: a pod
  whose binding cycle holds it is never scheduled again, whatever its own updates) into the
  :class:`~app.scheduler.queue.SchedulingQueue`, which keeps the nominator (the pods nominated to
  nodes, in memory) in step with them; cluster events move parked pods back, and the pods a cycle
  asks to retry now (``PodsToActivate``: a gang's siblings) are activated;
- one pod at a time, the scheduling cycle (``schedulePod``): PreFilter; a pod nominated to a
  node tries that node first (``evaluateNominatedNode``); else Filter over the nodes in the node
  tree's order (zone by zone, round robin), starting where the previous search stopped
  (``nextStartNodeIndex``, advanced by the nodes processed), until ``numFeasibleNodesToFind``
  passed (one without Score plugins), each node judged with the pods nominated to it
  (``RunFilterPluginsWithNominatedPods``); a single feasible node is chosen at once; else PreScore
  and Score, and ``selectHost`` picks the highest ``TotalScore`` (the sum of each plugin's weight x
  0..100 score) with reservoir sampling among exact ties. Filter and Score run on the event loop
  for up to :data:`INLINE_NODES` nodes, else in the verb worker thread. Then, still in the
  scheduling cycle and on the loop, **Reserve** (the pod assumed in the cluster state with every
  Reserve plugin, atomically: the next cycle sees it; its nomination is dropped) and **Permit**;
- the binding cycle runs concurrently (an asyncio task on the same loop): WaitOnPermit, PreBind,
  Bind, PostBind; a failure runs Unreserve and forgets the assumption (a Binding whose outcome is
  unknown keeps it until the watch shows the pod or the assumption expires);
- a pod no node fits runs PostFilter (DefaultPreemption: victims deleted, the pod nominated to the
  node; it is retried once they are gone);
- every failure goes through one handler (``handleSchedulingFailure``): the cycle returns a
  :class:`~app.framework.status.Status`; a :class:`~app.framework.status.FitError` (no node fit;
  or a Reserve, Permit or WaitOnPermit rejection, with the rejecting plugin) is ``Unschedulable``
  with kube-scheduler's message ("0/N nodes are available: 3 reason, 2 reason."), anything else
  ``SchedulerError``; the pod goes back to the queue (the unschedulable pool, or backoff when an
  event of interest happened meanwhile, not its own, or no plugin rejected it by name); the
  nominator records the result's ``NominatingInfo`` at once (a preemption's node; ``""`` clears:
  every failure but a FitError, and a preemption that found no candidate); a ``FailedScheduling``
  Event is posted and ``PodScheduled=False`` (with ``status.nominatedNodeName`` when it changes)
  written. A bound pod gets a ``Scheduled`` Event ("Successfully assigned ns/pod to node");
- with ``scheduling.leaderElect``, only the holder of the Lease ``<leaseNamespace>/<schedulerName>``
  schedules (:class:`~app.cluster.leader.LeaseElector`). A new leader schedules as soon as the
  cluster state has synced: it acquired the Lease only once its holder had not renewed it for
  ``leaseDuration``, longer than any Binding of the holder can stay in flight (the bind deadline
  must be shorter; else it waits out that deadline, :meth:`ClusterRuntime.bind_admission`).
  Without leader election a start waits out one bind deadline (a previous process's Bindings).

A node a PreFilterResult excludes is not evaluated and has no status: the FitError counts it in
``0/N`` but gives it no reason (v1.30.12).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from app.cluster.runtime import ClusterRuntime
from app.framework import (
    BINDING_UNCERTAIN,
    PODS_TO_ACTIVATE,
    SUCCESS,
    Code,
    CycleState,
    NodeInfo,
    NodePluginScores,
    PodIndex,
    PodInfo,
    Status,
)
from app.framework.nominator import CLEAR_NOMINATED_NODE, NominatingInfo, NominatingMode
from app.framework.runtime import Framework, ScoreResult, filter_error
from app.framework.status import Diagnosis, FitError
from app.kube.timefmt import rfc3339_time
from app.lifecycle import TaskWorker
from app.observe.decisions import Decision
from app.observe.events import PodEvent
from app.scheduler.queue import SchedulingQueue

log = logging.getLogger(__name__)

#: ``ErrNoNodesAvailable``
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"
#: ``numberOfHighestScoredNodesToReport``: the top nodes selectHost lists (schedulePod drops them)
NUMBER_OF_HIGHEST_SCORED_NODES_TO_REPORT = 3
#: kube-scheduler's ``minFeasibleNodesToFind`` and ``minFeasibleNodesPercentageToFind``.
MIN_FEASIBLE_NODES_TO_FIND, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 100, 5
#: Scheduling cycles over at most this many nodes run Filter and Score on the event loop; larger
#: ones in the verb worker thread (the hop costs 0.4 to 2 ms; the verbs use the same bound).
INLINE_NODES = 1000
#: ``validation.NoteLengthLimit``: the longest Event note
NOTE_LENGTH_LIMIT = 1024
#: the fewest nodes one Filter pass evaluates at once while looking for feasible ones (a pass
#: evaluates what is still wanted, or this many when fewer are wanted)
MIN_FILTER_CHUNK = 32


def num_feasible_nodes_to_find(
    percentage_of_nodes_to_score: int, num_all_nodes: int, profile_percentage: int | None = None
) -> int:
    """kube-scheduler's ``numFeasibleNodesToFind``: every node below 100; else
    ``percentageOfNodesToScore`` percent of them (the profile's when set, else the global one;
    0: adaptive, 50 % less one per 125 nodes, at least 5 %), and at least 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    percentage = profile_percentage if profile_percentage is not None else percentage_of_nodes_to_score
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def select_host(
    node_scores: Sequence[NodePluginScores], count: int, rng: random.Random
) -> tuple[str, list[NodePluginScores]]:
    """kube-scheduler's ``selectHost``: the node with the highest ``total_score``, each of the
    nodes that tie for it with the same chance (reservoir sampling), and the top ``count`` nodes by
    ``total_score``, the chosen one first. Raises ``ValueError`` (``empty priorityList``) for no
    nodes."""
    if not node_scores:
        raise ValueError("empty priorityList")
    chosen, best, ties = 0, node_scores[0].total_score, 1
    for i in range(1, len(node_scores)):
        total = node_scores[i].total_score
        if total > best:
            chosen, best, ties = i, total, 1
        elif total == best:
            ties += 1
            if rng.randrange(ties) == 0:  # replace the candidate with probability 1/ties
                chosen = i
    ordered = sorted(range(len(node_scores)), key=lambda i: -node_scores[i].total_score)
    position = ordered.index(chosen)
    ordered[0], ordered[position] = ordered[position], ordered[0]
    return node_scores[chosen].name, [node_scores[i] for i in ordered[:count]]


def truncate_message(message: str) -> str:
    """``truncateMessage``: an Event note within :data:`NOTE_LENGTH_LIMIT`, cut with `` ...``."""
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    return message[: NOTE_LENGTH_LIMIT - 4] + " ..."


class SchedulerMetrics(Protocol):
    """What :class:`Scheduler` reports (kube-scheduler's names): ``attempt(profile, result,
    seconds)`` for ``scheduler_schedule_attempts_total{profile,result}`` and
    ``scheduler_scheduling_attempt_duration_seconds{profile,result}`` (``result``: ``scheduled``,
    ``unschedulable``, ``error``)."""

    def attempt(self, profile: str, result: str, seconds: float) -> None: ...


@dataclass
class Attempt:
    """What ``schedulePod`` found for one pod (built off the loop for large clusters): the number
    of nodes; the feasible nodes and the others' statuses (:class:`Diagnosis`); then either an
    ``error`` (a status that is no FitError: an ``ERROR``, or no node at all), a ``fit`` error, or
    the chosen ``host`` with the scores (``scored``, ``None`` when one node was feasible)."""

    num_all_nodes: int
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    feasible: list[NodeInfo] = field(default_factory=list)
    error: Status | None = None
    fit: FitError | None = None
    host: str = ""
    scored: ScoreResult | None = None

    def evaluated(self) -> tuple[list[str], list[Status]]:
        """The nodes evaluated and their verdicts (the feasible ones ``SUCCESS``), for the record."""
        names = [n.name for n in self.feasible]
        statuses: list[Status] = [SUCCESS] * len(names)
        for name, status in self.diagnosis.node_to_status.items():
            names.append(name)
            statuses.append(status)
        return names, statuses


class Scheduler(TaskWorker):
    """See the module doc. ``name``: the ``schedulerName``; ``framework``: its profile's plugins
    (its ``nominator`` the one the ``queue`` keeps); ``worker``: the executor of the verb worker
    thread (large cycles run there); ``record``: receives each decision (``/explain``, metrics,
    logs); ``events``: posts a :class:`PodEvent`; ``set_condition(namespace, name, condition)``:
    writes ``PodScheduled``, ``set_nominated_node(namespace, name, node)``: writes
    ``status.nominatedNodeName`` (both blocking; run on the cluster's API executor);
    ``is_leader()``: whether to schedule now; ``admission()``: why nothing may be reserved yet
    (default: the cluster state's :meth:`~ClusterRuntime.bind_admission`);
    ``percentage_of_nodes_to_score``: 0 for kube-scheduler's adaptive default. A
    :class:`~app.lifecycle.TaskWorker`: started on the server's event loop."""

    def __init__(
        self,
        name: str,
        framework: Framework,
        runtime: ClusterRuntime,
        queue: SchedulingQueue,
        worker: Executor | None = None,
        record: Callable[[Decision], None] = lambda d: None,
        events: Callable[[PodEvent], None] = lambda e: None,
        set_condition: Callable[[str, str, dict[str, Any]], None] | None = None,
        metrics: SchedulerMetrics | None = None,
        is_leader: Callable[[], bool] = lambda: True,
        admission: Callable[[], str | None] | None = None,
        percentage_of_nodes_to_score: int = 0,
        rng: random.Random | None = None,
        set_nominated_node: Callable[[str, str, str], None] | None = None,
    ) -> None:
        super().__init__(f"scheduler-{name}")
        if queue.nominator is not framework.nominator:
            raise ValueError("the scheduling queue must keep the framework's nominator")
        self.scheduler_name = name
        self.framework = framework
        self.nominator = framework.nominator
        self.runtime = runtime
        self.state = runtime.state
        self.queue = queue
        self.worker = worker
        self._record = record
        self._events = events
        self._set_condition = set_condition
        self._set_nominated_node = set_nominated_node
        self.metrics = metrics
        self._is_leader = is_leader
        self._admission = admission or runtime.bind_admission
        self._rng = rng or random.Random()
        self._index = f"scheduler/{name}"
        self.state.add_index(PodIndex(self._index, self._key))
        self.state.follow_index(self._index)
        #: the last cluster event the queue was told of (:meth:`ClusterState.events_since`)
        self._seen_event = self.state.event_seq
        self._conditions: dict[str, tuple[str, str]] = {}
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        #: where the next Filter search starts (``nextStartNodeIndex``)
        self.next_start_node_index = 0
        self._binds: set[asyncio.Task[None]] = set()

    def _key(self, pod: PodInfo) -> str | None:
        if pod.scheduler_name == self.scheduler_name and not pod.node_name and not pod.deleting:
            return self.scheduler_name
        return None

    # -- the loop --------------------------------------------------------------------------------

    async def run(self) -> None:
        """The loop of the module doc, until stopped; then the binding cycles in flight are waited
        for (within the stop's join: any left then are abandoned with the loop, their reservations
        expire), so a leader releases its Lease only once no Binding of its own can still land."""
        while not self.stopping.is_set():
            if not await self.step():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), 0.05)
        if self._binds:
            await asyncio.wait(set(self._binds))

    @property
    def binding_cycles(self) -> int:
        """Binding cycles in flight (WaitOnPermit to PostBind)."""
        return len(self._binds)

    async def step(self) -> bool:
        """Apply the watch's changes of this scheduler's pods and the cluster events to the
        queue, and try one pod; returns whether a pod was tried."""
        if not self._is_leader() or self._admission() is not None:
            await asyncio.sleep(0.15)  # not the leader, not synced, or warming up: nothing to do
            return False
        added = self.queue.apply(self.state.index_changes(self._index, self.scheduler_name))
        for entered in added:
            if self.queue.gated(entered.uid):
                self._gated(entered)
        self._seen_event, events = self.state.events_since(self._seen_event)
        if events is None or events:
            self.queue.move_on(events)
        pod = self.queue.pop()
        if pod is None:
            return False
        await self.schedule_one(pod)
        await asyncio.sleep(0)  # let the binding tasks move
        return True

    # -- schedulePod (off the loop for large clusters) ---------------------------------------------

    def schedule_pod(self, state: CycleState, pod: PodInfo) -> Attempt:
        """``schedulePod``: the nodes that fit (``findNodesThatFitPod``), then, with more than
        one, ``prioritizeNodes`` and ``selectHost``."""
        snapshot = self.state.snapshot()
        state.snapshot = snapshot
        nodes = snapshot.list()
        attempt = Attempt(len(nodes))
        if not nodes:
            attempt.error = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_NO_NODES_AVAILABLE,))
            return attempt
        self.find_nodes_that_fit_pod(state, pod, nodes, attempt)
        if attempt.error is not None:
            return attempt
        if not attempt.feasible:
            attempt.fit = FitError(len(nodes), attempt.diagnosis)
            return attempt
        if len(attempt.feasible) == 1:  # when only one node passes, it is the one
            attempt.host = attempt.feasible[0].name
            return attempt
        scores = self.prioritize_nodes(state, pod, attempt)
        if attempt.error is None:
            # schedulePod keeps the host only (``host, _, err := selectHost(...)``)
            attempt.host, _ = select_host(scores, NUMBER_OF_HIGHEST_SCORED_NODES_TO_REPORT, self._rng)
        return attempt

    def find_nodes_that_fit_pod(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], attempt: Attempt) -> None:
        """``findNodesThatFitPod``: PreFilter (a rejection gives every node its status); the pod's
        nominated node first (``evaluateNominatedNode``); else the nodes the PreFilterResult
        allows (the others left without a status), searched from ``nextStartNodeIndex``, which
        then advances by the nodes processed (feasible and failed)."""
        fw, diagnosis = self.framework, attempt.diagnosis
        result, status = fw.run_pre_filter_plugins(state, pod, nodes)
        if not status.is_success():
            if not status.is_rejected():
                message = f'running PreFilter plugin "{status.plugin}": {status.message}'
                attempt.error = Status(Code.ERROR, (message,), status.plugin, status.reason_code)
                return
            for node in nodes:
                diagnosis.node_to_status[node.name] = status
            diagnosis.pre_filter_msg = status.message
            diagnosis.add_plugin_status(status)
            return
        if pod.nominated_node_name:
            feasible = self.evaluate_nominated_node(state, pod, attempt)
            if feasible:
                attempt.feasible = feasible
                return
        candidates = nodes
        if result is not None and result.node_names is not None:
            names = result.node_names
            candidates = [n for n in nodes if n.name in names]
        feasible, error = self.find_nodes_that_pass_filters(state, pod, diagnosis, candidates)
        processed = len(feasible) + len(diagnosis.node_to_status)
        if candidates:
            self.next_start_node_index = (self.next_start_node_index + processed) % len(candidates)
        attempt.feasible, attempt.error = feasible, error

    def evaluate_nominated_node(self, state: CycleState, pod: PodInfo, attempt: Attempt) -> list[NodeInfo]:
        """``evaluateNominatedNode``: Filter on the pod's nominated node alone (its status, when it
        fails, stays in the diagnosis); ``[]`` when the node is unknown or an error occurred
        (logged)."""
        node = state.snapshot.get(pod.nominated_node_name) if state.snapshot is not None else None
        if node is None:
            log.info("pod %s: nominated node %s not found", pod.key(), pod.nominated_node_name)
            return []
        feasible, error = self.find_nodes_that_pass_filters(state, pod, attempt.diagnosis, [node])
        if error is not None:
            log.warning("pod %s: evaluation failed on nominated node %s: %s", pod.key(), node.name, error.message)
            return []
        return feasible

    def find_nodes_that_pass_filters(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodeInfo], Status | None]:
        """``findNodesThatPassFilters``: Filter over ``nodes`` from ``nextStartNodeIndex``, wrapping
        around, until ``numNodesToFind`` passed (``numFeasibleNodesToFind``; one without Score
        plugins); each failed node's status in ``diagnosis`` (its plugin among the unschedulable
        ones). Nodes are judged a chunk at a time, plugin by plugin (a node with pods nominated to
        it alone, ``RunFilterPluginsWithNominatedPods``), then taken in order: a node past the
        one that completed the search counts as not processed, as a sequential search would.
        Returns the feasible nodes and the first ``ERROR`` met (``None`` when none)."""
        fw = self.framework
        count = len(nodes)
        if not count:
            return [], None
        to_find = num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, count)
        if not fw.score_plugins:
            to_find = 1
        start = self.next_start_node_index
        if not fw.filter_plugins:
            return [nodes[(start + i) % count] for i in range(to_find)], None
        nominated = self.nominator.nominated_nodes()
        feasible: list[NodeInfo] = []
        position = 0
        while position < count and len(feasible) < to_find:
            size = min(max(to_find - len(feasible), MIN_FILTER_CHUNK), count - position)
            chunk = [nodes[(start + position + k) % count] for k in range(size)]
            position += size
            # chunk position -> the pods nominated there that count for pod (addNominatedPods)
            alone = {}
            for k, n in enumerate(chunk):
                if n.name in nominated and (added := fw.nominated_to_add(pod, n)):
                    alone[k] = added
            if alone:
                plain = [n for k, n in enumerate(chunk) if k not in alone]
                verdicts = iter(fw.filter_statuses(state, pod, plain))
                with_nominated = fw.filter_with_nominated_pods
                statuses = [
                    with_nominated(state, pod, n, alone[k]) if k in alone else filter_error(next(verdicts))
                    for k, n in enumerate(chunk)
                ]
            else:
                statuses = [filter_error(s) for s in fw.filter_statuses(state, pod, chunk)]
            for node, status in zip(chunk, statuses, strict=True):
                code = status.code
                if code is Code.SUCCESS:
                    feasible.append(node)
                    if len(feasible) == to_find:
                        break
                elif code is Code.ERROR:
                    return feasible, status
                else:
                    diagnosis.node_to_status[node.name] = status
                    diagnosis.add_plugin_status(status)
        return feasible, None

    def prioritize_nodes(self, state: CycleState, pod: PodInfo, attempt: Attempt) -> list[NodePluginScores]:
        """``prioritizeNodes``: PreScore and Score over the feasible nodes; each node's
        ``TotalScore`` (1 each without Score plugins). Sets ``attempt.error`` on failure."""
        fw, nodes = self.framework, attempt.feasible
        if not fw.score_plugins:
            return [NodePluginScores(n.name, total_score=1) for n in nodes]
        status = fw.run_pre_score_plugins(state, pod, nodes)
        if status.is_success():
            attempt.scored, status = fw.run_score_plugins(state, pod, nodes)
        if not status.is_success():
            attempt.error = status
            return []
        totals = attempt.scored.totals if attempt.scored is not None else [0] * len(nodes)
        return [NodePluginScores(n.name, total_score=t) for n, t in zip(nodes, totals, strict=True)]

    # -- one pod ---------------------------------------------------------------------------------

    async def schedule_one(self, pod: PodInfo) -> None:
        """The scheduling cycle of one pod (``schedulingCycle``), through Reserve and Permit; the
        binding cycle goes on in a task. Every failure ends in :meth:`handle_scheduling_failure`."""
        started = time.perf_counter()
        since = self.state.event_seq  # events from now on happen while this pod is in flight
        state = CycleState()
        state.write(PODS_TO_ACTIVATE, {})
        if self.worker is not None and len(self.state.snapshot().known) > INLINE_NODES:
            loop = asyncio.get_running_loop()
            attempt = await loop.run_in_executor(self.worker, self.schedule_pod, state, pod)
        else:
            attempt = self.schedule_pod(state, pod)
        names, statuses = attempt.evaluated()
        error = attempt.error.message if attempt.error is not None else ""
        self._decided(pod, "filter", started, names=names, statuses=statuses, error=error)
        if attempt.error is not None:
            self.handle_scheduling_failure(pod, attempt.error, None, CLEAR_NOMINATED_NODE, started, since)
            return
        if attempt.fit is not None:
            nominating = CLEAR_NOMINATED_NODE
            if self.framework.post_filter_plugins:  # preemption: room for it in a later cycle
                nominating, status = await self._post_filter(state, pod, attempt)
                attempt.fit.diagnosis.post_filter_msg = status.message
            status = Status(Code.UNSCHEDULABLE, (attempt.fit.error(),))
            self.handle_scheduling_failure(pod, status, attempt.fit, nominating, started, since)
            return
        host = attempt.host
        if attempt.scored is not None:
            result = attempt.scored
            self._decided(
                pod,
                "prioritize",
                started,
                names=[n.name for n in result.nodes],
                scores=result.totals,
                plugin_scores=result.plugin_scores,
            )
        status = self.framework.run_reserve(state, pod, host)  # AssumePod and Reserve
        if status.is_success():
            self.nominator.delete_nominated_pod_if_exists(pod)  # assumed: no longer nominated
        else:
            self._decided(pod, "bind", started, node=host, error=status.message)
            self._fail_on_node(pod, host, status, started, since)
            return
        status = self.framework.run_permit(state, pod, host)
        if not status.is_success() and status.code is not Code.WAIT:
            self.framework.run_unreserve(state, pod, host)
            self._decided(pod, "bind", started, node=host, error=status.message)
            self._fail_on_node(pod, host, status, started, since)
            return
        self._activate(state)
        task = asyncio.get_running_loop().create_task(self._bind(state, pod, host, started, since))
        self._binds.add(task)
        task.add_done_callback(self._binds.discard)

    def _fail_on_node(self, pod: PodInfo, node: str, status: Status, started: float, since: int) -> None:
        """A failure after a node was chosen (Reserve, Permit, WaitOnPermit, PreBind, Bind): a
        rejection becomes a FitError of that one node with its plugin (``NumAllNodes: 1``), the
        rest an error; either way the nomination is cleared."""
        fit = None
        if status.is_rejected():
            fit = FitError(1, Diagnosis({node: status}))
            fit.diagnosis.add_plugin_status(status)
            status = Status(status.code, (fit.error(),), status.plugin)
        self.handle_scheduling_failure(pod, status, fit, CLEAR_NOMINATED_NODE, started, since)

    async def _post_filter(self, state: CycleState, pod: PodInfo, attempt: Attempt) -> tuple[NominatingInfo, Status]:
        """PostFilter (DefaultPreemption) for a pod no node passed, as ``schedulingCycle`` runs
        ``RunPostFilterPlugins`` with the diagnosis's statuses; its result and status."""
        statuses = attempt.diagnosis.node_to_status
        run = partial(self.framework.run_post_filter, state, pod, statuses)
        if self.worker is not None and attempt.num_all_nodes > INLINE_NODES:
            nominating, status = await asyncio.get_running_loop().run_in_executor(self.worker, run)
        else:
            nominating, status = run()
        if status.code is Code.ERROR:
            log.warning("pod %s: PostFilter: %s", pod.key(), status.message)
        elif status.is_success() and nominating:
            log.info("pod %s/%s: nominated to %s (preemption)", pod.namespace, pod.name, nominating)
        return nominating, status

    def _activate(self, state: CycleState) -> None:
        pods: dict[str, PodInfo] | None = state.get(PODS_TO_ACTIVATE)
        if pods:
            self.queue.activate(pods.values())
            pods.clear()

    async def _bind(self, state: CycleState, pod: PodInfo, node: str, started: float, since: int) -> None:
        """The binding cycle (``bindingCycle``); a failure as ``handleBindingCycleError``."""
        status = await self.framework.run_binding_cycle(state, pod, node)
        error = "" if status.is_success() else status.message
        self._decided(pod, "bind", started, node=node, error=error)
        if error:
            if status.reason_code == BINDING_UNCERTAIN:
                # still assumed: not tried again until the watch shows it bound or the assumption expires
                self.queue.done(pod.uid)
                self._observe("error", started)
                log.warning("pod %s/%s: %s", pod.namespace, pod.name, error, extra={"pod": pod.key()})
                return
            self._fail_on_node(pod, node, status, started, since)
            return
        self._activate(state)
        self.queue.done(pod.uid)
        self._conditions.pop(pod.uid, None)
        self._observe("scheduled", started)
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node}"
        self._events(PodEvent(pod.namespace, pod.name, pod.uid, "Normal", "Scheduled", "Binding", note))
        log.info("pod %s/%s: %s", pod.namespace, pod.name, note, extra={"pod": pod.key(), "node": node})

    def _gated(self, pod: PodInfo) -> None:
        """A PreEnqueue plugin keeps ``pod`` out (SchedulingGates): ``PodScheduled=False`` with
        reason ``SchedulingGated``, as kube-apiserver writes it for a pod created with gates
        (pkg/registry/core/pod/strategy.go ``applySchedulingGatedCondition``); no event."""
        self._condition(pod, "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")
        log.info("pod %s/%s: waiting for its scheduling gates", pod.namespace, pod.name, extra={"pod": pod.key()})

    def handle_scheduling_failure(
        self,
        pod: PodInfo,
        status: Status,
        fit: FitError | None,
        nominating: NominatingInfo,
        started: float,
        since: int | None = None,
    ) -> None:
        """``handleSchedulingFailure``: the reason is ``Unschedulable`` for a rejection
        (``status.is_rejected()``), else ``SchedulerError``; a FitError's unschedulable plugins go
        with the pod back to the queue (``AddUnschedulableIfNotPresent``: the cluster events after
        number ``since`` happened while it was in flight, its own excepted); the nominator records
        ``nominating`` (``AddNominatedPod``); the ``FailedScheduling`` Event and
        ``PodScheduled=False`` are written, and ``status.nominatedNodeName`` when ``nominating``
        sets it to another node than the pod's (``updatePod``)."""
        unschedulable = status.is_rejected()
        plugins = fit.diagnosis.unschedulable_plugins if fit is not None else set()
        events = self.state.events_since(since, origin=pod.uid)[1] if since is not None else ()
        self.queue.failed(pod.uid, unschedulable, plugins, events)
        latest = self.state.pod(pod.uid) or pod
        self.nominator.add_nominated_pod(latest, nominating)
        self._observe("unschedulable" if unschedulable else "error", started)
        reason = "Unschedulable" if unschedulable else "SchedulerError"
        message = status.message
        self._events(
            PodEvent(
                pod.namespace, pod.name, pod.uid, "Warning", "FailedScheduling", "Scheduling", truncate_message(message)
            )
        )
        if nominating.mode is NominatingMode.OVERRIDE and str(nominating) != pod.nominated_node_name:
            self._nominate(pod, str(nominating))
        self._condition(pod, reason, message)
        log.info("pod %s/%s: %s", pod.namespace, pod.name, message, extra={"pod": pod.key(), "reason": reason})

    def _nominate(self, pod: PodInfo, node: str) -> None:
        """Write ``status.nominatedNodeName`` (``""``: clear it) on the API executor."""
        executor = self.runtime.executor
        if executor is None or self._set_nominated_node is None:
            return
        executor.submit(self._write_nomination, pod, node)

    def _write_nomination(self, pod: PodInfo, node: str) -> None:
        assert self._set_nominated_node is not None
        try:
            self._set_nominated_node(pod.namespace, pod.name, node)
        except Exception as exc:  # the pod may be gone
            log.warning("pod %s/%s: cannot write nominatedNodeName %r: %s", pod.namespace, pod.name, node, exc)

    def _condition(self, pod: PodInfo, reason: str, message: str) -> None:
        """Write ``PodScheduled=False`` with ``reason`` and ``message`` unless already written."""
        if self._conditions.get(pod.uid) != (reason, message) and self._set_condition is not None:
            if len(self._conditions) > 10_000:
                self._conditions.clear()
            self._conditions[pod.uid] = (reason, message)
            condition = {
                "type": "PodScheduled",
                "status": "False",
                "reason": reason,
                "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": rfc3339_time(time.time()),
            }
            executor = self.runtime.executor
            if executor is not None:
                executor.submit(self._write_condition, pod, condition)

    def _write_condition(self, pod: PodInfo, condition: dict[str, Any]) -> None:
        assert self._set_condition is not None
        try:
            self._set_condition(pod.namespace, pod.name, condition)
        except Exception as exc:  # the pod may be gone; the next attempt writes it again
            log.warning("pod %s/%s: cannot write PodScheduled: %s", pod.namespace, pod.name, exc)
            self._conditions.pop(pod.uid, None)

    def _observe(self, result: str, started: float) -> None:
        if self.metrics is not None:
            self.metrics.attempt(self.framework.profile, result, time.perf_counter() - started)

    def _decided(self, pod: PodInfo, verb: str, started: float, **fields: Any) -> None:
        self._record(Decision.since(started, self.framework.profile, verb, pod, **fields))


__all__ = [
    "ERR_NO_NODES_AVAILABLE",
    "INLINE_NODES",
    "Attempt",
    "Scheduler",
    "SchedulerMetrics",
    "num_feasible_nodes_to_find",
    "select_host",
    "truncate_message",
]

"""A profile scheduling, on its own, the pods whose ``spec.schedulerName`` names it, shaped as
kube-scheduler's pkg/scheduler/schedule_one.go (v1.36.3):

- :meth:`Scheduler.step` takes the watch's changes of its pods (pending, this ``schedulerName``,
  not assumed: a pod whose binding cycle holds it is never scheduled again) and the cluster
  events into the :class:`~app.scheduler.queue.SchedulingQueue`, pops a pod and runs
  :meth:`~Scheduler.schedule_one` (``ScheduleOne``): the scheduling cycle, then, on success, the
  binding cycle as an asyncio task on the same loop;
- ``schedulingCycle`` → ``schedulingAlgorithm`` → ``schedulePod``: PreFilter; the pod's
  nominated node (or opportunistic batching's hint) first; else Filter over the nodes in the node
  tree's order from where the previous search stopped, until ``numFeasibleNodesToFind`` passed,
  each node judged with the pods nominated to it; one feasible node is chosen at once, more are
  scored (``TotalScore``: weight x 0..100 summed) and the best of their heap chosen
  (``sortedNodeScores``); a pod no node fits runs PostFilter (DefaultPreemption). Filter and
  Score run on the loop over up to :data:`INLINE_NODES` nodes, else in the verb worker thread. Then
  ``prepareForBindingCycle``: Reserve (the pod assumed with every Reserve plugin, atomically)
  and Permit;
- ``bindingCycle``: WaitOnPermit, PreBind, Bind, PostBind;
- every failure of the scheduling cycle reaches the one failure handler call of
  :meth:`~Scheduler.schedule_one`, every one of the binding cycle that of
  :meth:`~Scheduler.handle_binding_cycle_error`: ``handleSchedulingFailure``, with the queue,
  the nominator, the Events, the metrics and the pod writes, in
  :class:`~app.scheduler.effects.SchedulerEffects` (as every side effect of the cycles);
- with ``scheduling.leaderElect``, only the holder of the Lease schedules (``is_leader``); it
  reserves nothing before its ``admission`` (the cluster state synced, the warm-up after a start
  or a takeover, :meth:`ClusterConnection.bind_admission`).

A node a PreFilterResult excludes is not evaluated: its FitError status is
``node(s) didn't satisfy plugin(s) [...]`` naming the plugins that narrowed (v1.36.3).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from functools import partial
from typing import TypeVar

from app.cluster.connection import ClusterConnection
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
    features,
)
from app.framework.nominator import CLEAR_NOMINATED_NODE
from app.framework.runtime import Framework, ScoreResult, filter_error
from app.framework.scores import SortedNodeScores
from app.framework.status import Diagnosis, FitError, absent_nodes_status
from app.lifecycle import TaskWorker
from app.scheduler.effects import Reports, SchedulerEffects, SchedulerMetrics, truncate_message
from app.scheduler.queue import SchedulingQueue
from app.scheduler.result import ScheduleResult, fit_error_of, fit_error_status, rejected_on_node

log = logging.getLogger(__name__)

T = TypeVar("T")

#: ``ErrNoNodesAvailable``
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"
#: kube-scheduler's ``minFeasibleNodesToFind`` and ``minFeasibleNodesPercentageToFind``.
MIN_FEASIBLE_NODES_TO_FIND, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 100, 5
#: Scheduling cycles over at most this many nodes run Filter and Score on the event loop; larger
#: ones in the verb worker thread (the hop costs 0.4 to 2 ms; the verbs use the same bound).
INLINE_NODES = 1000
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


def _always() -> bool:
    return True


@dataclass(frozen=True)
class SchedulerOptions:
    """How a :class:`Scheduler` runs: ``percentage_of_nodes_to_score`` (0: kube-scheduler's
    adaptive default); ``worker``: the executor of the verb worker thread, where cycles over more
    than :data:`INLINE_NODES` nodes run Filter, Score and PostFilter (``None``: on the loop);
    ``is_leader()``: whether to schedule now (leader
    election); ``admission()``: why nothing may be reserved yet, ``None`` when it may (default:
    the cluster's :meth:`~ClusterConnection.bind_admission`)."""

    percentage_of_nodes_to_score: int = 0
    worker: Executor | None = None
    is_leader: Callable[[], bool] = _always
    admission: Callable[[], str | None] | None = None


class Scheduler(TaskWorker):
    """See the module doc. ``name``: the ``schedulerName``; ``framework``: its profile's plugins;
    ``cluster``: the cluster state and connection; ``queue``: its scheduling queue, which keeps
    the framework's nominator (a ``ValueError`` otherwise); ``reports``: where its decisions,
    Events and metrics go; ``options``: :class:`SchedulerOptions`. A
    :class:`~app.lifecycle.TaskWorker`: started on the server's event loop."""

    def __init__(
        self,
        name: str,
        framework: Framework,
        cluster: ClusterConnection,
        queue: SchedulingQueue,
        reports: Reports | None = None,
        options: SchedulerOptions | None = None,
    ) -> None:
        super().__init__(f"scheduler-{name}")
        if queue.nominator is not framework.nominator:
            raise ValueError("the scheduling queue must keep the framework's nominator")
        self.scheduler_name = name
        self.framework = framework
        self.nominator = framework.nominator
        self.cluster = cluster
        self.cache = cluster.cache
        self.cluster_events = cluster.events
        self.queue = queue
        self.options = options or SchedulerOptions()
        self.effects = SchedulerEffects(framework.profile, queue, cluster, reports or Reports())
        framework.pod_activator = queue  # the framework's Activate (an async preemption's failure)
        self._admission = self.options.admission or cluster.bind_admission
        self._index = f"scheduler/{name}"
        self.cache.add_index(PodIndex(self._index, self._key))
        self.cluster_events.follow_index(self._index)
        #: the last cluster event the queue was told of (:meth:`ClusterEvents.events_since`)
        self._seen_event = self.cluster_events.event_seq
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
        loop = self.framework.loop = asyncio.get_running_loop()
        woken = asyncio.Event()
        pending = [False]

        def wake() -> None:  # any thread: one hop to the loop per batch of changes
            if not pending[0]:
                pending[0] = True
                with contextlib.suppress(RuntimeError):  # the loop closed: this scheduler stopped
                    loop.call_soon_threadsafe(set_woken)

        def set_woken() -> None:
            pending[0] = False
            woken.set()

        self.cluster_events.on_change(wake)
        while not self.stopping.is_set():
            woken.clear()  # before the step: a change while it runs is not lost
            if not await self.step():
                with contextlib.suppress(TimeoutError):  # a change, or the idle poll (stop, backoff)
                    await asyncio.wait_for(woken.wait(), 0.05)
        if self._binds:
            await asyncio.wait(set(self._binds))

    @property
    def binding_cycles(self) -> int:
        """Binding cycles in flight (WaitOnPermit to PostBind)."""
        return len(self._binds)

    async def step(self) -> bool:
        """Apply the watch's changes of this scheduler's pods and the cluster events to the
        queue, and try one pod; returns whether a pod was tried."""
        if not self.options.is_leader() or self._admission() is not None:
            await asyncio.sleep(0.15)  # not the leader, not synced, or warming up: nothing to do
            return False
        added = self.queue.apply(self.cluster_events.index_changes(self._index, self.scheduler_name))
        for entered in added:
            # the SchedulingGated condition is kube-apiserver's for a pod with gates; a pod another
            # PreEnqueue plugin keeps out (DynamicResources: a claim not created yet) gets none
            if entered.scheduling_gates and self.queue.gated(entered.uid):
                self.effects.gated(entered)
        self._seen_event, events = self.cluster_events.events_since(self._seen_event)
        if events is None or events:
            self.queue.move_on(events)
        pod = self.queue.pop()
        if pod is None:
            return False
        await self.schedule_one(pod)
        await asyncio.sleep(0)  # let the binding tasks move
        return True

    async def _run(self, offload: bool, call: Callable[[], T]) -> T:
        """``call()`` in the verb worker thread when ``offload`` and there is one, else here."""
        worker = self.options.worker
        if offload and worker is not None:
            return await asyncio.get_running_loop().run_in_executor(worker, call)
        return call()

    # -- ScheduleOne -----------------------------------------------------------------------------

    async def schedule_one(self, pod: PodInfo) -> None:
        """``ScheduleOne`` for a popped pod (``scheduleOnePod``): the scheduling cycle; on failure
        the failure handler, with the result's ``NominatingInfo``; on success the binding cycle
        in a task (``go sched.runBindingCycle``)."""
        started = time.perf_counter()
        since = self.cluster_events.event_seq  # events from now on happen while this pod is in flight
        state = CycleState()
        state.write(PODS_TO_ACTIVATE, {})
        result, status = await self.scheduling_cycle(state, pod, started)
        if not status.is_success():
            self.effects.handle_scheduling_failure(pod, status, result.nominating_info, started, since)
            return
        task = asyncio.get_running_loop().create_task(self.run_binding_cycle(state, pod, result, started, since))
        self._binds.add(task)
        task.add_done_callback(self._binds.discard)

    async def scheduling_cycle(self, state: CycleState, pod: PodInfo, started: float) -> tuple[ScheduleResult, Status]:
        """``schedulingCycle``: :meth:`scheduling_algorithm`, then
        :meth:`prepare_for_binding_cycle` on the chosen node; a failure of the latter clears the
        pod's nomination (``clearNominatedNode``)."""
        result, status = await self.scheduling_algorithm(state, pod, started)
        if not status.is_success():
            return result, status
        status = self.prepare_for_binding_cycle(state, pod, result.suggested_host, started)
        if not status.is_success():
            return ScheduleResult(nominating_info=CLEAR_NOMINATED_NODE), status
        return result, SUCCESS

    async def scheduling_algorithm(
        self, state: CycleState, pod: PodInfo, started: float
    ) -> tuple[ScheduleResult, Status]:
        """``schedulingAlgorithm``: :meth:`schedule_pod` (its decisions recorded); for a pod no
        node fits, PostFilter (``RunPostFilterPlugins`` with the FitError's statuses: preemption,
        room in a later cycle), its message added to the FitError's and its ``NominatingInfo``
        the result's; any other failure, or no PostFilter plugin, clears the nomination."""
        large = self.options.worker is not None and len(self.cache.snapshot().known) > INLINE_NODES
        result, status = await self._run(large, partial(self.schedule_pod, state, pod))
        self.effects.schedule_pod_decided(pod, started, result, status)
        if status.is_success():
            return result, status
        fit = fit_error_of(status)
        if fit is None or not self.framework.post_filter_plugins:
            return replace(result, nominating_info=CLEAR_NOMINATED_NODE), status
        post_filter = partial(self.framework.run_post_filter, state, pod, fit.diagnosis.node_to_status)
        nominating_info, post_status = await self._run(fit.num_all_nodes > INLINE_NODES, post_filter)
        fit.diagnosis.post_filter_msg = post_status.message
        if post_status.code is Code.ERROR:
            log.warning("pod %s: PostFilter: %s", pod.key(), post_status.message)
        elif post_status.is_success() and nominating_info:
            log.info("pod %s/%s: nominated to %s (preemption)", pod.namespace, pod.name, nominating_info)
        return replace(result, nominating_info=nominating_info), fit_error_status(fit)

    def prepare_for_binding_cycle(self, state: CycleState, pod: PodInfo, host: str, started: float) -> Status:
        """``prepareForBindingCycle``: ``assumeAndReserve`` (the pod assumed on ``host`` with
        every Reserve plugin, atomically: the next cycle sees it; its nomination dropped), then
        Permit (``WAIT``: the binding cycle waits for it), then the pods a plugin asked to
        activate. A failure (Unreserve run) is recorded as the bind decision and returned as
        :func:`~app.scheduler.result.rejected_on_node` gives it."""
        framework = self.framework
        status = framework.run_reserve(state, pod, host)  # on refusal every Unreserve has run
        if status.is_success():
            self.effects.assumed(pod)
            status = framework.run_permit(state, pod, host)
            if status.is_success() or status.code is Code.WAIT:
                self.effects.activate(state)
                return SUCCESS
            framework.run_unreserve(state, pod, host)  # unreserveAndForget
        self.effects.decided(pod, "bind", started, node=host, error=status.message)
        return rejected_on_node(host, status)

    # -- the binding cycle -----------------------------------------------------------------------

    async def run_binding_cycle(
        self, state: CycleState, pod: PodInfo, result: ScheduleResult, started: float, since: int
    ) -> None:
        """``runBindingCycle``: :meth:`binding_cycle`; a failure goes to
        :meth:`handle_binding_cycle_error`."""
        status = await self.binding_cycle(state, pod, result, started)
        if not status.is_success():
            self.handle_binding_cycle_error(pod, result, status, started, since)

    async def binding_cycle(self, state: CycleState, pod: PodInfo, result: ScheduleResult, started: float) -> Status:
        """``bindingCycle``: the PreBind pre-flights (``status.nominatedNodeName`` written when
        PreBind has work or the pod waits at Permit), WaitOnPermit, PreBind, Bind, PostBind
        (:meth:`Framework.run_binding_cycle`: a failure has run Unreserve and forgotten the
        assumption, but after a Binding of unknown outcome), recorded as the bind decision; once
        bound, the pods a plugin asked to activate, and the pod scheduled."""
        host = result.suggested_host
        nominate = partial(self.effects.pod_status.nominated_node, pod)  # nominatedNodeName for expectation
        status = await self.framework.run_binding_cycle(state, pod, host, nominate=nominate)
        self.effects.decided(pod, "bind", started, node=host, error="" if status.is_success() else status.message)
        if not status.is_success():
            return status
        self.effects.activate(state)
        self.effects.scheduled(pod, host, started)
        return SUCCESS

    def handle_binding_cycle_error(
        self, pod: PodInfo, result: ScheduleResult, status: Status, started: float, since: int
    ) -> None:
        """``handleBindingCycleError``: a Binding of unknown outcome (``BINDING_UNCERTAIN``)
        leaves the pod assumed, out of the queue until the watch shows it; any other failure goes
        to the failure handler (a rejection as a FitError of the node), the nomination cleared."""
        if status.reason_code == BINDING_UNCERTAIN:
            self.effects.binding_uncertain(pod, status, started)
            return
        failure = rejected_on_node(result.suggested_host, status)
        self.effects.handle_scheduling_failure(pod, failure, CLEAR_NOMINATED_NODE, started, since)

    # -- schedulePod (off the loop for large clusters) ---------------------------------------------

    def schedule_pod(self, state: CycleState, pod: PodInfo) -> tuple[ScheduleResult, Status]:
        """``schedulePod`` on a fresh snapshot: the nodes that fit (:meth:`find_nodes_that_fit_pod`);
        none: a FitError (``0/N``, every node of the snapshot counted; code ``Unschedulable``);
        one: that node; more: :meth:`prioritize_nodes`, the best of their
        :class:`~app.framework.scores.SortedNodeScores` (v1.36.3 has no ``selectHost`` draw: among
        equal totals the heap's order decides). With OpportunisticBatching, the pod's signature,
        the batch's hint and the ranking kept for the next pod (:mod:`app.framework.runtime.batch`).
        An empty cluster
        is ``ErrNoNodesAvailable`` (``UnschedulableAndUnresolvable``, no FitError); an ``ERROR``
        of PreFilter, Filter, PreScore or Score is returned as it is. The result keeps what was
        evaluated (see :class:`ScheduleResult`)."""
        snapshot = self.cache.snapshot()
        state.snapshot = snapshot
        nodes = snapshot.list()
        if not nodes:
            return ScheduleResult(), Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_NO_NODES_AVAILABLE,))
        batching = self.framework.batchable_plugins is not None and features.current().enabled("OpportunisticBatching")
        cycle, signature = self.queue.scheduling_cycle, self.framework.sign_pod(pod) if batching else None
        feasible, diagnosis, hint, status = self.find_nodes_that_fit_pod(state, pod, nodes, batching, signature, cycle)
        if not status.is_success():
            return ScheduleResult(feasible=feasible, diagnosis=diagnosis), status
        if not feasible:
            return ScheduleResult(diagnosis=diagnosis), fit_error_status(FitError(len(nodes), diagnosis))
        if len(feasible) == 1:  # when only one node passes, it is the one
            if batching:
                self.framework.batch.store_schedule_results(signature, hint, feasible[0].name, None, cycle)
            return ScheduleResult(feasible[0].name, feasible=feasible, diagnosis=diagnosis), SUCCESS
        priority_list, scores, status = self.prioritize_nodes(state, pod, feasible)
        if not status.is_success():
            return ScheduleResult(feasible=feasible, diagnosis=diagnosis), status
        # schedulePod keeps the host only (``host, _, err := selectHost(...)``)
        ranking = SortedNodeScores(priority_list)  # v1.36.3: the heap's best, no random draw
        host = ranking.pop()
        if batching:
            self.framework.batch.store_schedule_results(signature, hint, host, ranking, cycle)
        return ScheduleResult(host, feasible=feasible, diagnosis=diagnosis, scores=scores), SUCCESS

    def find_nodes_that_fit_pod(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: list[NodeInfo],
        batching: bool = False,
        signature: bytes | None = None,
        cycle: int = 0,
    ) -> tuple[list[NodeInfo], Diagnosis, str, Status]:
        """``findNodesThatFitPod``: the feasible nodes, the :class:`Diagnosis` of the others, the
        batch's node hint (``""``: none) and ``SUCCESS`` or an ``ERROR``. PreFilter (a rejection
        gives every node its status and no node is feasible); with ``batching``, the batch's hint
        for the pod's ``signature`` in the queue's scheduling ``cycle``; the pod's nominated node,
        else the hint, first (:meth:`evaluate_nominated_node`); else the nodes the PreFilterResult
        allows (the others with the status of the plugins that narrowed), searched from
        ``nextStartNodeIndex``, which then advances by the nodes processed (feasible and failed)."""
        diagnosis = Diagnosis()
        result, status, narrowed = self.framework.run_pre_filter_plugins(state, pod, nodes)
        diagnosis.unschedulable_plugins.update(narrowed)
        if not status.is_success():
            if not status.is_rejected():
                message = f'running PreFilter plugin "{status.plugin}": {status.message}'
                return [], diagnosis, "", Status(Code.ERROR, (message,), status.plugin, status.reason_code)
            for node in nodes:
                diagnosis.node_to_status[node.name] = status
            diagnosis.pre_filter_msg = status.message
            diagnosis.add_plugin_status(status)
            return [], diagnosis, "", SUCCESS
        hint = ""
        if batching and state.snapshot is not None:
            hint = self.framework.batch.get_node_hint(state, pod, signature, cycle, state.snapshot.get)
        if pod.nominated_node_name or hint:
            feasible = self.evaluate_nominated_node(state, pod, diagnosis, hint)
            if feasible:
                return feasible, diagnosis, hint, SUCCESS
        candidates = nodes
        if result is not None and result.node_names is not None:
            names = result.node_names
            candidates = [n for n in nodes if n.name in names]
            diagnosis.absent_nodes_status = absent_nodes_status(narrowed)
        feasible, status = self.find_nodes_that_pass_filters(state, pod, diagnosis, candidates)
        processed = len(feasible) + len(diagnosis.node_to_status)
        if nodes:  # v1.36.3 advances over every node of the snapshot, not the PreFilterResult's
            self.next_start_node_index = (self.next_start_node_index + processed) % len(nodes)
        return feasible, diagnosis, hint, status

    def evaluate_nominated_node(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis, hint: str = ""
    ) -> list[NodeInfo]:
        """``evaluateNominatedNode``: Filter on the pod's nominated node alone, or without one on
        the batch's ``hint`` (its status, when it fails, goes into ``diagnosis``); ``[]`` when the
        node is unknown or an error occurred (logged)."""
        name = pod.nominated_node_name or hint
        node = state.snapshot.get(name) if state.snapshot is not None else None
        if node is None:
            log.info("pod %s: nominated node %s not found", pod.key(), name)
            return []
        feasible, status = self.find_nodes_that_pass_filters(state, pod, diagnosis, [node])
        if not status.is_success():
            log.warning("pod %s: evaluation failed on nominated node %s: %s", pod.key(), node.name, status.message)
            return []
        return feasible

    def find_nodes_that_pass_filters(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodeInfo], Status]:
        """``findNodesThatPassFilters``: Filter over ``nodes`` from ``nextStartNodeIndex``, wrapping
        around, until ``numNodesToFind`` passed (``numFeasibleNodesToFind``; one without Score
        plugins); each failed node's status in ``diagnosis`` (its plugin among the unschedulable
        ones). Nodes are judged a chunk at a time, plugin by plugin (a node with pods nominated to
        it alone, ``RunFilterPluginsWithNominatedPods``), then taken in order: a node past the
        one that completed the search counts as not processed, as a sequential search would.
        Returns the feasible nodes and ``SUCCESS``, or the first ``ERROR`` met."""
        fw = self.framework
        count = len(nodes)
        if not count:
            return [], SUCCESS
        to_find = num_feasible_nodes_to_find(self.options.percentage_of_nodes_to_score, count)
        if not fw.score_plugins:
            to_find = 1
        start = self.next_start_node_index
        if not fw.filter_plugins:
            return [nodes[(start + i) % count] for i in range(to_find)], SUCCESS
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
        return feasible, SUCCESS

    def prioritize_nodes(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodePluginScores], ScoreResult | None, Status]:
        """``prioritizeNodes``: PreScore and Score over the feasible ``nodes``. Returns the list
        selectHost reads (each node's ``TotalScore``; 1 each without Score plugins), the
        framework's :class:`ScoreResult` (the plugins' scores the decision records; ``None``
        without Score plugins) and ``SUCCESS``, or ``[]``, ``None`` and the failure."""
        fw = self.framework
        if not fw.score_plugins:
            return [NodePluginScores(n.name, total_score=1) for n in nodes], None, SUCCESS
        status = fw.run_pre_score_plugins(state, pod, nodes)
        if not status.is_success():
            return [], None, status
        scores, status = fw.run_score_plugins(state, pod, nodes)
        if not status.is_success():
            return [], None, status
        priority_list = [NodePluginScores(n.name, total_score=t) for n, t in zip(nodes, scores.totals, strict=True)]
        return priority_list, scores, SUCCESS


__all__ = [
    "ERR_NO_NODES_AVAILABLE",
    "INLINE_NODES",
    "Reports",
    "ScheduleResult",
    "Scheduler",
    "SchedulerMetrics",
    "SchedulerOptions",
    "num_feasible_nodes_to_find",
    "truncate_message",
]

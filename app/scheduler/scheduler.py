"""A profile scheduling, on its own, the pods whose ``spec.schedulerName`` names it (the chaos-scheduler
and ip-scheduler cases), with kube-scheduler's semantics where they exist
(pkg/scheduler/schedule_one.go):

- pods come from the cluster-state watch (pending, this ``schedulerName``, not assumed: a pod
  whose binding cycle holds it is never scheduled again, whatever its own updates) into the
  :class:`~app.scheduler.queue.SchedulingQueue`; the cluster state's freed-capacity events (a pod
  deleted, a node added or changed, a reservation dropped) move parked pods back, and the pods a
  cycle asks to retry now (``PodsToActivate``: a gang's siblings) are activated;
- one pod at a time (the scheduling cycle): the profile's Filter (kube-scheduler's default plugins
  and the profile's own, :mod:`app.framework.defaults`) over every node the cluster state knows
  (with the pods nominated to them),
  Score with the profile's weights, and among the top-scored nodes one chosen at random with
  reservoir sampling (``selectHost``); a single feasible node is not scored. Filter and Score run
  on the event loop for up to :data:`INLINE_NODES` nodes, else in the verb worker thread (the
  loop keeps serving). Then, still in the scheduling cycle and on the loop, **Reserve** (the pod
  assumed in the cluster state with every Reserve plugin, atomically: the next cycle sees it)
  and **Permit** (a gang member may wait, keeping its reservation);
- the binding cycle runs concurrently (an asyncio task on the same loop): WaitOnPermit, PreBind,
  Bind (``DefaultBinder``: the Binding with the pod's UID as precondition), PostBind; a failure
  runs Unreserve and forgets the assumption (a Binding whose outcome is unknown keeps it until
  the watch shows the pod or the assumption expires, and the pod is not retried meanwhile);
- a pod no node fits gets ``PodScheduled=False`` (reason ``Unschedulable``) with kube-scheduler's
  message (``FitError.Error``: "0/N nodes are available: 3 reason, 2 reason.", counts per reason
  sorted as strings) and a ``FailedScheduling`` Event; an error gets reason ``SchedulerError``;
  a bound pod a ``Scheduled`` Event ("Successfully assigned ns/pod to node"). The condition is
  written only when it changes; Events are aggregated and rate-limited by
  :class:`~app.observe.events.EventRecorder`;
- with ``scheduling.leaderElect``, only the holder of the Lease ``<leaseNamespace>/<schedulerName>``
  schedules (:class:`~app.cluster.leader.LeaseElector`). A new leader schedules as soon as the
  cluster state has synced: it acquired the Lease only once its holder had not renewed it for
  ``leaseDuration``, longer than any Binding of the holder can stay in flight (the bind deadline
  must be shorter; else it waits out that deadline, :meth:`ClusterRuntime.bind_admission`).
  Without leader election a start waits out one bind deadline (a previous process's Bindings).

Filter stops once ``numFeasibleNodesToFind`` nodes passed (``scheduling.percentageOfNodesToScore``,
kube-scheduler's adaptive default when 0: every node below 100 nodes, 10 % of 5,000), starting
where the previous cycle stopped, and only those are scored.

A pod no node fits runs PostFilter (DefaultPreemption: victims deleted, the pod nominated to the
node; it is scheduled there once they are gone). As ``handleSchedulingFailure`` applies the
result's ``NominatingInfo``, a pod whose preemption finds no candidate loses a nomination it held
(``status.nominatedNodeName`` and its room in the cluster state); so does one whose attempt failed
otherwise (an error, Reserve, Permit or binding: ``clearNominatedNode``), not one without a
PostFilter plugin or whose PostFilter erred (nil: ``ModeNoop``). Not done here: queueing hints (every
freed-capacity event moves every parked pod).
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
    Framework,
    FrameworkError,
    NodeInfo,
    PodIndex,
    PodInfo,
    ScoreOutcome,
    Status,
)
from app.framework.runtime import CLEAR_NOMINATED_NODE, NOMINATING_NOOP, NominatingInfo, num_feasible_nodes_to_find
from app.framework.status import fit_error_message
from app.kube.timefmt import rfc3339_time
from app.lifecycle import TaskWorker
from app.observe.decisions import Decision
from app.observe.events import PodEvent
from app.scheduler.queue import SchedulingQueue

log = logging.getLogger(__name__)


def select_host(nodes: Sequence[NodeInfo], scores: Sequence[int], rng: random.Random) -> NodeInfo:
    """One of the top-scored ``nodes``, each with the same chance: reservoir sampling over the
    nodes in order, as kube-scheduler's ``selectHost``. Raises ``ValueError`` for no nodes."""
    if not nodes:
        raise ValueError("no nodes to select from")
    best, chosen, seen = scores[0], nodes[0], 1
    for node, score in zip(nodes[1:], scores[1:], strict=True):
        if score > best:
            best, chosen, seen = score, node, 1
        elif score == best:
            seen += 1
            if rng.randrange(seen) == 0:
                chosen = node
    return chosen


class SchedulerMetrics(Protocol):
    """What :class:`Scheduler` reports (kube-scheduler's names): ``attempt(profile, result,
    seconds)`` for ``scheduler_schedule_attempts_total{profile,result}`` and
    ``scheduler_scheduling_attempt_duration_seconds{profile,result}`` (``result``: ``scheduled``,
    ``unschedulable``, ``error``)."""

    def attempt(self, profile: str, result: str, seconds: float) -> None: ...


#: Scheduling cycles over at most this many nodes run Filter and Score on the event loop; larger
#: ones in the verb worker thread (the hop costs 0.4 to 2 ms; the verbs use the same bound).
INLINE_NODES = 1000


@dataclass
class _Found:
    """What Filter and Score found for one pod (built off the loop for large clusters)."""

    nodes: list[NodeInfo]
    statuses: list[Status]
    error: str = ""
    pre_filter: Status | None = None
    feasible: list[NodeInfo] = field(default_factory=list)
    scored: ScoreOutcome | None = None
    score_error: str = ""

    def rejectors(self) -> tuple[str, ...]:
        """The plugins that rejected the pod (``Diagnosis.UnschedulablePlugins``): the PreFilter
        that did, else each node's rejecting Filter plugin."""
        if self.pre_filter is not None and self.pre_filter.plugin:
            return (self.pre_filter.plugin,)
        seen: dict[int, Status] = {}
        for status in self.statuses:
            if status.code is not Code.SUCCESS:
                seen.setdefault(id(status), status)
        return tuple(sorted({s.plugin for s in seen.values() if s.plugin}))


class Scheduler(TaskWorker):
    """See the module doc. ``name``: the ``schedulerName``; ``framework``: its profile's plugins;
    ``worker``: the executor of the verb worker thread (large cycles run there); ``record``:
    receives each decision (``/explain``, metrics, logs); ``events``: posts a :class:`PodEvent`;
    ``set_condition(namespace, name, condition)``: writes ``PodScheduled`` (blocking; run on the
    cluster's API executor); ``is_leader()``: whether to schedule now; ``admission()``: why nothing
    may be reserved yet (default: the cluster state's :meth:`~ClusterRuntime.bind_admission`). A
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
    ) -> None:
        super().__init__(f"scheduler-{name}")
        self.scheduler_name = name
        self.framework = framework
        self.runtime = runtime
        self.state = runtime.state
        self.queue = queue
        self.worker = worker
        self._record = record
        self._events = events
        self._set_condition = set_condition
        self.metrics = metrics
        self._is_leader = is_leader
        self._admission = admission or runtime.bind_admission
        self._rng = rng or random.Random()
        self._index = f"scheduler/{name}"
        self.state.add_index(PodIndex(self._index, self._key))
        #: the last cluster event the queue was told of (:meth:`ClusterState.events_since`)
        self._seen_event = self.state.event_seq
        self._conditions: dict[str, tuple[str, str]] = {}
        #: ``percentageOfNodesToScore`` (0: kube-scheduler's adaptive default) and where the next
        #: Filter search starts (``nextStartNodeIndex``: nodes are judged in turn across cycles)
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self._next_start = 0
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
        """Sync the queue with the watch, apply cluster events, and try one pod; returns whether a
        pod was tried."""
        if not self._is_leader() or self._admission() is not None:
            await asyncio.sleep(0.15)  # not the leader, not synced, or warming up: nothing to do
            return False
        added = self.queue.sync(self.state.indexed(self._index, self.scheduler_name, unassumed=True))
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

    # -- one pod ---------------------------------------------------------------------------------

    def _find(self, state: CycleState, pod: PodInfo) -> _Found:
        """``findNodesThatFitPod`` and ``prioritizeNodes`` (pkg/scheduler/schedule_one.go): Filter
        (the node constraints, then the profile's plugins; each node with the pods nominated to it
        too, ``RunFilterPluginsWithNominatedPods``, before it counts as feasible:
        :meth:`Framework.run_filter`) from where the last search stopped until
        ``numFeasibleNodesToFind`` nodes passed, then Score over those."""
        snapshot = self.state.snapshot()
        state.snapshot = snapshot
        nodes = list(snapshot.known.values())
        wanted = num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, len(nodes))
        start = self._next_start % len(nodes) if nodes else 0
        outcome = self.framework.run_filter(pod, nodes, state, wanted, start)
        statuses = outcome.statuses or [SUCCESS] * len(nodes)
        found = _Found(nodes, statuses, outcome.error, outcome.pre_filter)
        if outcome.error:
            return found
        if nodes:
            self._next_start = (start + outcome.evaluated) % len(nodes)
        order = [(start + i) % len(nodes) for i in range(len(nodes))] if wanted < len(nodes) else range(len(nodes))
        found.feasible = [nodes[i] for i in order if statuses[i].code is Code.SUCCESS][:wanted]
        if len(found.feasible) > 1:
            try:
                found.scored = self.framework.run_score(pod, found.feasible, state)
            except FrameworkError as exc:
                found.score_error = str(exc)
        return found

    async def schedule_one(self, pod: PodInfo) -> None:
        """The scheduling cycle of one pod, through Reserve and Permit; the binding cycle goes on
        in a task."""
        started = time.perf_counter()
        since = self.state.event_seq  # events from now on happen while this pod is in flight
        state = CycleState()
        if self.worker is not None and len(self.state.snapshot().known) > INLINE_NODES:
            found = await asyncio.get_running_loop().run_in_executor(self.worker, self._find, state, pod)
        else:
            found = self._find(state, pod)
        names = [n.name for n in found.nodes]
        self._decided(pod, "filter", started, names=names, statuses=found.statuses, error=found.error)
        if found.error:
            self._failed(pod, started, f"running filter plugins: {found.error}", unschedulable=False)
            return
        if not found.feasible:
            message = fit_error_message(len(found.nodes), found.statuses, found.pre_filter)
            nominating = NOMINATING_NOOP  # no PostFilter plugin: upstream's ScheduleResult{}
            if self.framework.post_filter_plugins:  # preemption: room for it in a later cycle
                message, nominating = await self._post_filter(state, pod, found, message)
            if not found.nodes:  # ErrNoNodesAvailable
                nominating = CLEAR_NOMINATED_NODE
            plugins = found.rejectors()
            self._failed(pod, started, message, unschedulable=True, plugins=plugins, since=since, nominating=nominating)
            return
        node = found.feasible[0]
        if found.score_error:
            self._decided(pod, "prioritize", started, error=found.score_error)
            self._failed(pod, started, f"running score plugins: {found.score_error}", unschedulable=False)
            return
        if found.scored is not None:
            node = select_host(found.feasible, found.scored.scores, self._rng)
            self._decided(
                pod,
                "prioritize",
                started,
                names=[n.name for n in found.feasible],
                scores=found.scored.scores,
                plugin_scores=found.scored.plugin_scores,
            )
        status = self.framework.run_reserve(state, pod, node.name)
        if not status.is_success():
            self._decided(pod, "bind", started, node=node.name, error=status.message)
            self._failed(pod, started, f"running Reserve plugin {status.plugin}: {status.message}", unschedulable=False)
            return
        status = self.framework.run_permit(state, pod, node.name)
        self._activate(state)
        if not status.is_success() and status.code is not Code.WAIT:
            self.framework.run_unreserve(state, pod, node.name)
            self._decided(pod, "bind", started, node=node.name, error=status.message)
            plugins = (status.plugin,) if status.plugin else ()
            self._failed(pod, started, status.message, status.is_rejected(), plugins=plugins, since=since)
            return
        task = asyncio.get_running_loop().create_task(self._bind(state, pod, node.name, started, since))
        self._binds.add(task)
        task.add_done_callback(self._binds.discard)

    async def _post_filter(
        self, state: CycleState, pod: PodInfo, found: _Found, message: str
    ) -> tuple[str, NominatingInfo]:
        """PostFilter (DefaultPreemption) for a pod no node passed, as ``schedulingCycle``
        (pkg/scheduler/schedule_one.go) runs ``RunPostFilterPlugins``: returns the FitError message
        with the PostFilter's (``PostFilterMsg``: ``preemption: 0/N nodes are available: ...``) and
        the result's ``NominatingInfo`` for :meth:`_failed` (``NOOP`` for a nil result)."""
        statuses = {n.name: s for n, s in zip(found.nodes, found.statuses, strict=True)}
        run = partial(self.framework.run_post_filter, state, pod, statuses)
        if self.worker is not None and len(found.nodes) > INLINE_NODES:
            nominated, status = await asyncio.get_running_loop().run_in_executor(self.worker, run)
        else:
            nominated, status = run()
        if status.is_success() and nominated:
            log.info("pod %s/%s: nominated to %s (preemption)", pod.namespace, pod.name, nominated)
            return message, nominated
        return (f"{message} {status.message}" if status.message else message), nominated

    def _activate(self, state: CycleState) -> None:
        pods: dict[str, PodInfo] | None = state.get(PODS_TO_ACTIVATE)
        if pods:
            self.queue.activate(pods.values())

    async def _bind(self, state: CycleState, pod: PodInfo, node: str, started: float, since: int) -> None:
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
            plugins = (status.plugin,) if status.plugin else ()
            self._failed(pod, started, f"binding rejected: {error}", status.is_rejected(), plugins=plugins, since=since)
            return
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

    def _failed(
        self,
        pod: PodInfo,
        started: float,
        message: str,
        unschedulable: bool,
        plugins: Sequence[str] = (),
        since: int | None = None,
        nominating: NominatingInfo = CLEAR_NOMINATED_NODE,
    ) -> None:
        """The attempt failed (``handleSchedulingFailure``, pkg/scheduler/schedule_one.go): the
        queue parks or backs off the pod (rejected by ``plugins``; the cluster events after number
        ``since`` happened while it was in flight), a ``nominating`` that clears (``ModeOverride``
        with ``""``: upstream's ``clearNominatedNode`` of every failure but a FitError, and
        PostFilter's result with no candidate) drops the pod's nomination
        (:meth:`ClusterRuntime.clear_nomination`: ``AddNominatedPod`` and ``updatePod``), and the
        ``FailedScheduling`` event and ``PodScheduled=False`` condition are written."""
        events = self.state.events_since(since)[1] if since is not None else ()
        self.queue.failed(pod.uid, unschedulable, plugins, events)
        if nominating.clears() and self.runtime.clear_nomination(pod):
            log.info("pod %s/%s: nomination cleared", pod.namespace, pod.name, extra={"pod": pod.key()})
        self._observe("unschedulable" if unschedulable else "error", started)
        reason = "Unschedulable" if unschedulable else "SchedulerError"
        self._events(
            PodEvent(pod.namespace, pod.name, pod.uid, "Warning", "FailedScheduling", "Scheduling", message[:1024])
        )
        self._condition(pod, reason, message)
        log.info("pod %s/%s: %s", pod.namespace, pod.name, message, extra={"pod": pod.key(), "reason": reason})

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


__all__ = ["INLINE_NODES", "Scheduler", "SchedulerMetrics", "select_host"]

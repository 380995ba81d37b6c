"""A profile scheduling, on its own, the pods whose ``spec.schedulerName`` names it (the chaos-scheduler
and ip-scheduler cases), with kube-scheduler's semantics where they exist
(pkg/scheduler/schedule_one.go):

- pods come from the cluster-state watch (pending, this ``schedulerName``) into the
  :class:`~app.scheduling.queue.SchedulingQueue`; the cluster state's freed-capacity events (a pod
  deleted, a node added or changed, a reservation dropped) move parked pods back, and a pod of a
  pod group arriving activates its parked siblings (Coscheduling's ``ActivateSiblings``);
- one pod at a time (the scheduling cycle): the node constraints of every kube-scheduler profile
  (:mod:`app.scheduling.constraints`: cordoned nodes, untolerated taints, ``nodeSelector``), then
  the profile's Filter over every node the cluster state knows (with
  the pods nominated to them, and the pods whose binding cycle has not reserved them yet: as
  kube-scheduler assumes a pod before scheduling the next), Score with the profile's weights,
  and among the top-scored nodes one chosen at random with reservoir sampling (``selectHost``);
  a single feasible node is not scored;
- the binding cycle runs concurrently (an asyncio task): the profile's Permit (a gang waits for
  its siblings), then its bind plugin (``DefaultBinder``: Reserve in the ledger atomically, then
  the Binding with the pod's UID as precondition);
- a pod no node fits gets ``PodScheduled=False`` (reason ``Unschedulable``) with kube-scheduler's
  message (``FitError.Error``: "0/N nodes are available: 3 reason, 2 reason.", counts per reason
  sorted as strings) and a ``FailedScheduling`` Event; an error gets reason ``SchedulerError``;
  a bound pod a ``Scheduled`` Event ("Successfully assigned ns/pod to node"). The condition is
  written only when it changes; Events are aggregated and rate-limited by
  :class:`~app.observe.events.EventRecorder`;
- with ``scheduling.leaderElect``, only the holder of the Lease ``<leaseNamespace>/<schedulerName>``
  schedules (:class:`~app.cluster.leader.LeaseElector`); a new leader first waits out the binds a
  predecessor may still have in flight (:meth:`ClusterRuntime.bind_admission`).

Not done here: preemption (PostFilter), the adaptive ``percentageOfNodesToScore`` (every node is
filtered), and queueing hints (every freed-capacity event moves every parked pod).
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from app.cluster.runtime import ClusterRuntime
from app.cluster.state import PodIndex
from app.framework.runtime import Framework, FrameworkError
from app.framework.status import SUCCESS, Code, Status
from app.framework.types import NodeInfo, PodInfo, PodRef
from app.observe.decisions import Decision
from app.observe.events import PodEvent
from app.scheduling.constraints import split_by_constraints
from app.scheduling.queue import SchedulingQueue

log = logging.getLogger(__name__)

#: kube-scheduler's ``NoNodeAvailableMsg``.
NO_NODE_AVAILABLE = "0/{} nodes are available"


def fit_error_message(total: int, statuses: Sequence[Status]) -> str:
    """kube-scheduler's ``FitError.Error()`` (pkg/scheduler/framework/types.go): ``0/N nodes are
    available: `` then ``"<count> <reason>"`` for each distinct reason of the rejected nodes
    (a node counts once per reason it has), sorted as strings, joined by ``, `` and ended with a
    period."""
    histogram: dict[str, int] = {}
    for status in statuses:
        if status.code is not Code.SUCCESS:
            for reason in status.reasons:
                histogram[reason] = histogram.get(reason, 0) + 1
    parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
    message = NO_NODE_AVAILABLE.format(total) + ":"
    return message + (f" {', '.join(parts)}." if parts else "")


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


class Scheduler:
    """See the module doc. ``name``: the ``schedulerName``; ``framework``: its profile's plugins;
    ``record``: receives each decision (``/explain``, metrics, logs); ``events``: posts a
    :class:`PodEvent`; ``set_condition(namespace, name, condition)``: writes ``PodScheduled``
    (blocking; called from a worker thread); ``is_leader()``: whether to schedule now."""

    def __init__(
        self,
        name: str,
        framework: Framework,
        runtime: ClusterRuntime,
        queue: SchedulingQueue,
        record: Callable[[Decision], None] = lambda d: None,
        events: Callable[[PodEvent], None] = lambda e: None,
        set_condition: Callable[[str, str, dict[str, Any]], None] | None = None,
        metrics: SchedulerMetrics | None = None,
        is_leader: Callable[[], bool] = lambda: True,
        rng: random.Random | None = None,
    ) -> None:
        self.name = name
        self.framework = framework
        self.runtime = runtime
        self.state = runtime.state
        self.queue = queue
        self._record = record
        self._events = events
        self._set_condition = set_condition
        self.metrics = metrics
        self._is_leader = is_leader
        self._rng = rng or random.Random()
        self._index = f"scheduler/{name}"
        self.state.add_index(PodIndex(self._index, self._key))
        self._seen_generation = self.state.freed_generation
        self._conditions: dict[str, tuple[str, str]] = {}
        self._binds: set[asyncio.Task[None]] = set()
        #: node -> pods sent to their binding cycle and not finished: counted by the next cycles
        #: until the cluster state has them (the Reserve happens in the binding task)
        self._placing: dict[str, dict[str, PodInfo]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: plugins that know a pod's group (Coscheduling): siblings are activated together
        self._groups = [p.plugin for p in framework.filter_plugins if hasattr(p.plugin, "group_of")]

    def _key(self, pod: PodInfo) -> str | None:
        if pod.scheduler_name == self.name and not pod.node_name and not pod.deleting:
            return self.name
        return None

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Run the scheduling loop (and its binding tasks) in a daemon thread."""
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self.run()), name=f"scheduler-{self.name}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop scheduling (binds in flight are abandoned; their reservations expire)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    async def run(self) -> None:
        """The loop of the module doc, until :meth:`stop`."""
        while not self._stop.is_set():
            if not await self.step():
                await asyncio.sleep(0.05)

    async def step(self) -> bool:
        """Sync the queue with the watch, apply cluster events, and try one pod; returns whether a
        pod was tried."""
        if not self._is_leader() or self.runtime.bind_admission() is not None:
            await asyncio.sleep(0.15)  # not the leader, not synced, or warming up: nothing to do
            return False
        added = self.queue.sync(self.state.indexed(self._index, self.name))
        if added and self._groups:
            self._activate_siblings(added)
        generation = self.state.freed_generation
        if generation != self._seen_generation:
            self._seen_generation = generation
            self.queue.move_all()
        pod = self.queue.pop()
        if pod is None:
            return False
        self.schedule_one(pod)
        await asyncio.sleep(0)  # let the binding tasks move
        return True

    def _activate_siblings(self, added: Sequence[PodInfo]) -> None:
        for plugin in self._groups:
            groups = {plugin.group_of(p) for p in added} - {None}
            if not groups:
                continue
            pending = self.state.indexed(self._index, self.name)
            self.queue.activate(p.uid for p in pending if plugin.group_of(p) in groups)

    # -- one pod ---------------------------------------------------------------------------------

    def schedule_one(self, pod: PodInfo) -> None:
        """The scheduling cycle of one pod; the binding cycle continues in a task."""
        started = time.perf_counter()
        snapshot = self.state.snapshot()
        nodes = list(snapshot.known.values())
        if snapshot.nominated:
            nodes = [snapshot.with_nominated(n, pod) for n in nodes]
        if self._placing:
            placing = self._placing
            nodes = [snapshot.with_pods(n, tuple(placing[n.name].values())) if n.name in placing else n for n in nodes]
        passing, statuses = split_by_constraints(pod, nodes)  # kube-scheduler's default node filters
        outcome = self.framework.run_filter(pod, [nodes[i] for i in passing])
        all_statuses = [statuses.get(i, SUCCESS) for i in range(len(nodes))]
        for i, status in zip(passing, outcome.statuses, strict=False):
            all_statuses[i] = status
        names = [n.name for n in nodes]
        self._decided(pod, "filter", started, names=names, statuses=all_statuses, error=outcome.error)
        if outcome.error:
            self._failed(pod, started, f"running filter plugins: {outcome.error}", unschedulable=False)
            return
        feasible = [n for n, s in zip(nodes, all_statuses, strict=True) if s.code is Code.SUCCESS]
        if not feasible:
            self._failed(pod, started, fit_error_message(len(nodes), all_statuses), unschedulable=True)
            return
        node = feasible[0]
        if len(feasible) > 1:
            try:
                scored = self.framework.run_score(pod, feasible)
            except FrameworkError as exc:
                self._decided(pod, "prioritize", started, error=str(exc))
                self._failed(pod, started, f"running score plugins: {exc}", unschedulable=False)
                return
            node = select_host(feasible, scored.scores, self._rng)
            self._decided(
                pod,
                "prioritize",
                started,
                names=[n.name for n in feasible],
                scores=scored.scores,
                plugin_scores=scored.plugin_scores,
            )
        self._placing.setdefault(node.name, {})[pod.uid] = pod
        task = asyncio.get_running_loop().create_task(self._bind(pod, node.name, started))
        self._binds.add(task)
        task.add_done_callback(self._binds.discard)

    async def _bind(self, pod: PodInfo, node: str, started: float) -> None:
        try:
            status = await self.framework.run_bind(PodRef(pod.namespace, pod.name, pod.uid), node)
        finally:
            placing = self._placing.get(node, {})
            placing.pop(pod.uid, None)
            if not placing:
                self._placing.pop(node, None)
        error = "" if status.is_success() else status.message
        self._decided(pod, "bind", started, node=node, error=error)
        if error:
            self._failed(pod, started, f"binding rejected: {error}", unschedulable=False)
            return
        self.queue.done(pod.uid)
        self._conditions.pop(pod.uid, None)
        self._observe("scheduled", started)
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node}"
        self._events(PodEvent(pod.namespace, pod.name, pod.uid, "Normal", "Scheduled", "Binding", note))
        log.info("pod %s/%s: %s", pod.namespace, pod.name, note, extra={"pod": pod.key(), "node": node})

    def _failed(self, pod: PodInfo, started: float, message: str, unschedulable: bool) -> None:
        self.queue.failed(pod.uid, unschedulable)
        self._observe("unschedulable" if unschedulable else "error", started)
        reason = "Unschedulable" if unschedulable else "SchedulerError"
        self._events(
            PodEvent(pod.namespace, pod.name, pod.uid, "Warning", "FailedScheduling", "Scheduling", message[:1024])
        )
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
                "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
            executor = self.runtime.executor
            if executor is not None:
                executor.submit(self._write_condition, pod, condition)
        log.info("pod %s/%s: %s", pod.namespace, pod.name, message, extra={"pod": pod.key(), "reason": reason})

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


__all__ = ["NO_NODE_AVAILABLE", "Scheduler", "SchedulerMetrics", "fit_error_message", "select_host"]

"""What a standalone scheduler changes outside its cycles' :class:`~app.framework.CycleState`, in
one object (:class:`SchedulerEffects`): the scheduling queue and the nominator, the decision
records (``/explain``, metrics, logs), the pod Events, the attempt metrics and the pod's status
(``PodScheduled``, ``status.nominatedNodeName``). kube-scheduler spreads them over
``handleSchedulingFailure``, ``bindingCycle`` and ``updatePod`` (pkg/scheduler/schedule_one.go);
the cycle (:mod:`app.scheduler.scheduler`) calls this object for each.

- A failure (:meth:`SchedulerEffects.handle_scheduling_failure`, ``handleSchedulingFailure``):
  the pod goes back to the queue with the plugins that rejected it, the nominator records the
  result's ``NominatingInfo`` at once, a ``FailedScheduling`` Event is posted and
  ``PodScheduled=False`` (with ``status.nominatedNodeName`` when it changes) written.
- A pod bound (:meth:`SchedulerEffects.scheduled`): out of the queue, a ``Scheduled`` Event
  ("Successfully assigned ns/pod to node").
- The pod writes are blocking API calls, made on the cluster's API executor with its client
  (:class:`PodStatusWriter`); a ``PodScheduled`` condition already written is not written again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from app.cluster.connection import ClusterConnection
from app.framework import PODS_TO_ACTIVATE, CycleState, PodInfo, Status
from app.framework.nominator import NominatingInfo, NominatingMode
from app.kube.timefmt import rfc3339_time
from app.observe.decisions import Decision
from app.observe.events import PodEvent
from app.scheduler.queue import SchedulingQueue
from app.scheduler.result import ScheduleResult, fit_error_of

# the scheduler's own logger: its lines are the scheduler's, wherever the code sits
log = logging.getLogger("app.scheduler.scheduler")

#: ``validation.NoteLengthLimit``: the longest Event note
NOTE_LENGTH_LIMIT = 1024
#: the most pods whose last ``PodScheduled`` condition is remembered (then all are forgotten)
MAX_REMEMBERED_CONDITIONS = 10_000


def truncate_message(message: str) -> str:
    """``truncateMessage``: an Event note within :data:`NOTE_LENGTH_LIMIT`, cut with `` ...``."""
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    return message[: NOTE_LENGTH_LIMIT - 4] + " ..."


class SchedulerMetrics(Protocol):
    """What a scheduler reports (kube-scheduler's names): ``attempt(profile, result, seconds)``
    for ``scheduler_schedule_attempts_total{profile,result}`` and
    ``scheduler_scheduling_attempt_duration_seconds{profile,result}`` (``result``: ``scheduled``,
    ``unschedulable``, ``error``)."""

    def attempt(self, profile: str, result: str, seconds: float) -> None: ...


def _ignore(_: Any) -> None:
    return None


@dataclass(frozen=True)
class Reports:
    """Where a scheduler reports what it did, each optional: ``record`` receives each
    :class:`Decision` (``/explain``, the decision metrics, logs); ``post`` posts a
    :class:`PodEvent` (an event writer's queue; it must not block); ``metrics`` counts the
    attempts (:class:`SchedulerMetrics`)."""

    record: Callable[[Decision], None] = _ignore
    post: Callable[[PodEvent], None] = _ignore
    metrics: SchedulerMetrics | None = None


class PodStatusWriter:
    """kube-scheduler's ``updatePod`` for a failed pod: ``PodScheduled=False`` with a reason and
    message, and ``status.nominatedNodeName``, written with ``cluster.client`` on
    ``cluster.executor`` (nothing is written before the cluster is connected). A condition equal
    to the one last written for the pod is not written again; a failed write is logged (the pod
    may be gone) and the next attempt writes it again."""

    def __init__(self, cluster: ClusterConnection) -> None:
        self.cluster = cluster
        #: pod UID -> the (reason, message) of the last PodScheduled condition written
        self._conditions: dict[str, tuple[str, str]] = {}

    def _submit(self, write: Callable[..., None], *args: Any) -> None:
        executor = self.cluster.executor
        if executor is not None and self.cluster.client is not None:
            executor.submit(write, *args)

    def condition(self, pod: PodInfo, reason: str, message: str) -> None:
        """Write ``PodScheduled=False`` with ``reason`` and ``message`` unless already written."""
        if self._conditions.get(pod.uid) == (reason, message):
            return
        if len(self._conditions) > MAX_REMEMBERED_CONDITIONS:
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
        self._submit(self._write_condition, pod, condition)

    def forget(self, pod: PodInfo) -> None:
        """The pod is bound: its next condition, if any, is written whatever it says."""
        self._conditions.pop(pod.uid, None)

    def nominated_node(self, pod: PodInfo, node: str) -> None:
        """Write ``status.nominatedNodeName`` (``""``: clear it)."""
        self._submit(self._write_nomination, pod, node)

    def _write_condition(self, pod: PodInfo, condition: dict[str, Any]) -> None:
        client = self.cluster.client
        assert client is not None
        try:
            client.set_pod_condition(pod.namespace, pod.name, condition)
        except Exception as exc:  # the pod may be gone; the next attempt writes it again
            log.warning("pod %s/%s: cannot write PodScheduled: %s", pod.namespace, pod.name, exc)
            self._conditions.pop(pod.uid, None)

    def _write_nomination(self, pod: PodInfo, node: str) -> None:
        client = self.cluster.client
        assert client is not None
        try:
            client.set_nominated_node(pod.namespace, pod.name, node)
        except Exception as exc:  # the pod may be gone
            log.warning("pod %s/%s: cannot write nominatedNodeName %r: %s", pod.namespace, pod.name, node, exc)


class SchedulerEffects:
    """Every side effect of one scheduler's cycles (see the module doc). ``profile``: the
    profile's name (decisions and metrics); ``queue``: the scheduler's queue (its nominator is
    the one recorded into); ``cluster``: the cluster state read for the events that happened while
    a pod was in flight and the pod as the watch shows it now, and the pod writes
    (:class:`PodStatusWriter`); ``reports``: where decisions, Events and metrics go."""

    def __init__(self, profile: str, queue: SchedulingQueue, cluster: ClusterConnection, reports: Reports) -> None:
        self.profile = profile
        self.queue = queue
        self.nominator = queue.nominator
        self.cache = cluster.cache
        self.cluster_events = cluster.events
        self.reports = reports
        self.pod_status = PodStatusWriter(cluster)

    # -- decisions ---------------------------------------------------------------------------------

    def decided(self, pod: PodInfo, verb: str, started: float, **fields: Any) -> None:
        """Record the ``verb`` decision about ``pod`` begun at ``started`` (``time.perf_counter()``);
        ``fields`` as :class:`Decision`'s."""
        self.reports.record(Decision.since(started, self.profile, verb, pod, **fields))

    def schedule_pod_decided(self, pod: PodInfo, started: float, result: ScheduleResult, status: Status) -> None:
        """The decisions of ``schedulePod``: the ``filter`` one (each evaluated node's verdict;
        ``error`` the status's message unless it succeeded or is a FitError), then, when the pod
        was placed after Score, the ``prioritize`` one (each scored node's ``TotalScore``)."""
        names, statuses = result.verdicts()
        failed = not status.is_success() and fit_error_of(status) is None
        self.decided(pod, "filter", started, names=names, statuses=statuses, error=status.message if failed else "")
        scores = result.scores
        if status.is_success() and scores is not None:
            names = [n.name for n in scores.nodes]
            self.decided(
                pod, "prioritize", started, names=names, total_scores=scores.totals, plugin_scores=scores.plugin_scores
            )

    # -- the queue ---------------------------------------------------------------------------------

    def activate(self, state: CycleState) -> None:
        """Move the pods a plugin asked for (``PodsToActivate``: a gang's siblings) to activeQ,
        and clear the request."""
        pods: dict[str, PodInfo] | None = state.get(PODS_TO_ACTIVATE)
        if pods:
            self.queue.activate(pods.values())
            pods.clear()

    def assumed(self, pod: PodInfo) -> None:
        """``pod`` is assumed on its node: no longer nominated (``DeleteNominatedPodIfExists``,
        as upstream's ``assume``)."""
        self.nominator.delete_nominated_pod_if_exists(pod)

    def gated(self, pod: PodInfo) -> None:
        """A PreEnqueue plugin keeps ``pod`` out (SchedulingGates): ``PodScheduled=False`` with
        reason ``SchedulingGated``, as kube-apiserver writes it for a pod created with gates
        (pkg/registry/core/pod/strategy.go ``applySchedulingGatedCondition``); no Event."""
        self.pod_status.condition(pod, "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")
        log.info("pod %s/%s: waiting for its scheduling gates", pod.namespace, pod.name, extra={"pod": pod.key()})

    # -- outcomes ----------------------------------------------------------------------------------

    def scheduled(self, pod: PodInfo, node: str, started: float) -> None:
        """``pod`` is bound to ``node``: out of the queue, the ``scheduled`` attempt counted, the
        ``Scheduled`` Event posted."""
        self.queue.done(pod.uid)
        self.pod_status.forget(pod)
        self._attempt("scheduled", started)
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node}"
        self.reports.post(PodEvent(pod.namespace, pod.name, pod.uid, "Normal", "Scheduled", "Binding", note))
        log.info("pod %s/%s: %s", pod.namespace, pod.name, note, extra={"pod": pod.key(), "node": node})

    def binding_uncertain(self, pod: PodInfo, status: Status, started: float) -> None:
        """A Binding whose outcome is unknown (``BINDING_UNCERTAIN``): the pod stays assumed and is
        not tried again until the watch shows it bound or the assumption expires; counted as an
        ``error`` attempt."""
        self.queue.done(pod.uid)
        self._attempt("error", started)
        log.warning("pod %s/%s: %s", pod.namespace, pod.name, status.message, extra={"pod": pod.key()})

    def handle_scheduling_failure(
        self, pod: PodInfo, status: Status, nominating_info: NominatingInfo, started: float, since: int
    ) -> None:
        """``handleSchedulingFailure``: the reason is ``Unschedulable`` for a rejection
        (``status.is_rejected()``), else ``SchedulerError``; a FitError's unschedulable plugins go
        with the pod back to the queue (``AddUnschedulableIfNotPresent``: the cluster events after
        number ``since`` happened while it was in flight, its own excepted); the nominator records
        ``nominating_info`` (``AddNominatedPod``); the ``FailedScheduling`` Event and
        ``PodScheduled=False`` are written, and ``status.nominatedNodeName`` when
        ``nominating_info`` sets it to another node than the pod's (``updatePod``)."""
        unschedulable = status.is_rejected()
        fit = fit_error_of(status)
        plugins = fit.diagnosis.unschedulable_plugins if fit is not None else set()
        events = self.cluster_events.events_since(since, origin=pod.uid)[1]
        self.queue.failed(pod.uid, unschedulable, plugins, events)
        latest = self.cache.pod(pod.uid) or pod
        self.nominator.add_nominated_pod(latest, nominating_info)
        self._attempt("unschedulable" if unschedulable else "error", started)
        reason = "Unschedulable" if unschedulable else "SchedulerError"
        message = status.message
        note = truncate_message(message)
        self.reports.post(PodEvent(pod.namespace, pod.name, pod.uid, "Warning", "FailedScheduling", "Scheduling", note))
        if nominating_info.mode is NominatingMode.OVERRIDE and str(nominating_info) != pod.nominated_node_name:
            self.pod_status.nominated_node(pod, str(nominating_info))
        self.pod_status.condition(pod, reason, message)
        log.info("pod %s/%s: %s", pod.namespace, pod.name, message, extra={"pod": pod.key(), "reason": reason})

    def _attempt(self, result: str, started: float) -> None:
        if self.reports.metrics is not None:
            self.reports.metrics.attempt(self.profile, result, time.perf_counter() - started)


__all__ = [
    "NOTE_LENGTH_LIMIT",
    "PodStatusWriter",
    "Reports",
    "SchedulerEffects",
    "SchedulerMetrics",
    "truncate_message",
]

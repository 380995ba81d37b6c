"""Kubernetes Events (``events.k8s.io/v1``) on pods, for the decisions an operator must see.

Which decisions (:func:`event_for`), each an Event ``regarding`` the pod, ``reportingController``
``scheduler-extender``:

- every node rejected by a filter: ``Warning`` ``FilterRejected`` (``PoolExhausted`` when a
  resource pool was among the reasons), action ``Filter``; the note aggregates the reasons with
  their node counts, as kube-scheduler's "0/N nodes are available: ...";
- a gang held or denied by Coscheduling's PreFilter: ``Normal`` ``GangWaiting`` / ``Warning``
  ``GangDenied``, action ``PreFilter``;
- a failed bind (a Permit timeout of a gang included): ``Warning`` ``BindFailed``, action ``Bind``;
- with ``auditEvents: true``, a pod an audited plugin (``enforcement: audit``) would have left no
  node: ``Warning`` ``AuditFailedScheduling``, action ``Filter`` (what enforcing it would do).

Aggregation follows client-go's events library (``k8s.io/client-go/tools/events``,
``event_broadcaster.go``, ``recordToSink``): events are *isomorphic* when type, reason, action,
reporting controller and instance, and the pod are the same (the note is not compared). The first
is created; the second turns it into a series (``series.count`` 2) with a PATCH; later ones only
count, and the series is written again when it ends (no repeat for ``series_window``, upstream's
``finishTime`` of 6 minutes) or every 30 minutes while it goes on (``refreshTime``). So a pod
rejected at every retry makes two API calls, then one per 30 minutes, not one per request.

The listener runs on the request path and only queues (at most 1000 events waiting, the rest
dropped and counted, as upstream's ``DropIfChannelFull``); one daemon thread writes, at most
``qps`` calls per second with bursts of ``burst`` *per pod* (client-go's ``EventSourceObjectSpamFilter``
in ``tools/record/events_cache.go``: a token bucket per involved object, 25 then one per 5 minutes),
so a busy scheduler's ``Scheduled`` and ``FailedScheduling`` events for many pods are all written
while one pod that keeps failing cannot flood the API server; calls over a pod's budget are
dropped and counted. The pods' buckets are bounded (:data:`MAX_BUCKETS`, the oldest forgotten).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.framework.status import Code
from app.kube.errors import APIError
from app.kube.timefmt import micro_time
from app.lifecycle import ThreadWorker
from app.observe.decisions import Decision

log = logging.getLogger(__name__)

REPORTING_CONTROLLER = "scheduler-extender"
#: client-go's ``finishTime`` and ``refreshTime`` (seconds)
FINISH_TIME = 6 * 60.0
REFRESH_TIME = 30 * 60.0
#: upstream's ``maxQueuedEvents``
MAX_QUEUED = 1000
#: the most pods whose event budget is remembered (the least recently used are forgotten)
MAX_BUCKETS = 10_000
#: the longest note the API server accepts (``validation.NoteLengthLimit``: 1 KiB)
NOTE_LIMIT = 1024


@dataclass(frozen=True)
class PodEvent:
    """What to say about a pod: ``type`` (``Normal``/``Warning``), ``reason`` (CamelCase),
    ``action`` (what the service was doing), ``note`` (at most 1 KiB)."""

    namespace: str
    name: str
    uid: str
    type: str
    reason: str
    action: str
    note: str


def event_for(decision: Decision) -> PodEvent | None:
    """The event a decision deserves (see the module doc), or ``None``."""
    ident = (decision.namespace, decision.name, decision.uid)
    if not decision.name or not decision.namespace:
        return None
    if decision.verb == "filter":
        if decision.error_code in ("PodGroupWaiting", "PodGroupDenied"):
            waiting = decision.error_code == "PodGroupWaiting"
            kind, reason = ("Normal", "GangWaiting") if waiting else ("Warning", "GangDenied")
            return PodEvent(*ident, kind, reason, "PreFilter", _note(decision.error))
        if decision.rejected() and decision.statuses:
            counts = decision.reason_counts()
            pool = any(s.reason_code == "PoolExhausted" for s in decision.statuses if s.code is not Code.SUCCESS)
            summary = ", ".join(f"{n} {reason}" for reason, n in counts.items())
            note = f"0/{len(decision.statuses)} nodes are available to extender profile {decision.profile}: {summary}."
            return PodEvent(*ident, "Warning", "PoolExhausted" if pool else "FilterRejected", "Filter", _note(note))
        if decision.audit_events and decision.audit:
            return _audit_event(decision, ident)
        return None
    if decision.verb == "bind" and decision.error:
        return PodEvent(*ident, "Warning", "BindFailed", "Bind", _note(f"binding to {decision.node}: {decision.error}"))
    return None


def _audit_event(decision: Decision, ident: tuple[str, str, str]) -> PodEvent | None:
    """``AuditFailedScheduling`` when an audited plugin would have left the pod no node."""
    failing = decision.audit_fails()
    if not failing:
        return None
    passed = sum(1 for s in decision.statuses if s.code is Code.SUCCESS)
    parts = []
    for plugin in failing:
        counts: dict[str, int] = {}
        for status in decision.audit[plugin]:
            if status.plugin == plugin and status.is_rejected():
                counts[status.message] = counts.get(status.message, 0) + 1
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        parts.append(f"{plugin} ({reasons})")
    note = (
        f"audit: 0/{len(decision.statuses)} nodes would be available to extender profile {decision.profile} "
        f"if {' and '.join(failing)} were enforced ({passed} pass today): {'; '.join(parts)}."
    )
    return PodEvent(*ident, "Warning", "AuditFailedScheduling", "Filter", _note(note))


def _note(text: str) -> str:
    data = text.encode()
    return text if len(data) <= NOTE_LIMIT else data[: NOTE_LIMIT - 3].decode("utf-8", "ignore") + "..."


@dataclass
class _Series:
    """The cached Event of one isomorphism key (upstream's ``eventCache`` entry)."""

    body: dict[str, Any]
    count: int = 1
    last_observed: float = 0.0
    written_count: int = 1
    refreshed: float = 0.0


class EventRecorder(ThreadWorker):
    """Posts :func:`event_for` events through ``create(namespace, body)`` and
    ``patch(namespace, name, patch)`` (blocking API calls raising :class:`APIError`), aggregated and
    rate-limited as the module doc says. ``observe`` is the decision listener; ``start``/``stop``
    run the writer thread (a :class:`~app.lifecycle.ThreadWorker` named ``event-recorder``;
    ``stop()`` does not wait: ``await join(timeout)`` does). ``posted``/``dropped`` count API
    writes made and events dropped; a failed write is the worker's ``error`` until one succeeds."""

    def __init__(
        self,
        create: Callable[[str, dict[str, Any]], None],
        patch: Callable[[str, str, dict[str, Any]], None],
        qps: float = 1 / 300,
        burst: int = 25,
        finish_time: float = FINISH_TIME,
        refresh_time: float = REFRESH_TIME,
        instance: str | None = None,
        clock: Callable[[], float] = time.time,
        reporting_controller: str = REPORTING_CONTROLLER,
    ) -> None:
        super().__init__("event-recorder")
        self._create = create
        self._patch = patch
        self.qps = qps
        self.burst = burst
        self.finish_time = finish_time
        self.refresh_time = refresh_time
        self.reporting_controller = reporting_controller
        self.instance = instance or f"{reporting_controller}-{os.environ.get('HOSTNAME') or socket.gethostname()}"
        self._clock = clock
        #: the events to write; ``None`` wakes the writer to see it was stopped
        self._queue: queue.Queue[PodEvent | None] = queue.Queue(MAX_QUEUED)
        self._cache: dict[tuple[str, ...], _Series] = {}
        #: (namespace, name) -> [tokens, refilled at]: one token bucket per pod
        self._buckets: dict[tuple[str, str], list[float]] = {}
        self.posted = 0
        self.dropped = 0

    # -- the request path ----------------------------------------------------------------------

    def observe(self, decision: Decision) -> None:
        """Queue the event ``decision`` deserves, if any (never blocks)."""
        event = event_for(decision)
        if event is not None:
            self.post(event)

    def post(self, event: PodEvent) -> None:
        """Queue ``event`` (never blocks; dropped and counted when 1000 are waiting)."""
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1

    # -- the writer ----------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask the writer to end after its current write (events still queued are not written),
        waking it if it waits for an event; does not wait (see :meth:`join`)."""
        super().stop()
        with contextlib.suppress(queue.Full):  # a full queue: the writer is busy, not waiting
            self._queue.put_nowait(None)

    def run(self) -> None:
        """The writer: takes the queued events (waiting at most 1 s for one), aggregates and writes
        them, and ends the series due (:meth:`tick`), until stopped."""
        while not self.stopping.is_set():
            try:
                event = self._queue.get(timeout=1.0)
            except queue.Empty:
                event = None
            if event is not None:
                self.record(event)
            self.tick()

    def record(self, event: PodEvent) -> None:
        """Aggregate ``event`` into its series and write what upstream writes (see the module doc)."""
        now = self._clock()
        key = (event.namespace, event.name, event.uid, event.type, event.reason, event.action)
        series = self._cache.get(key)
        if series is None:
            body = self._body(event, now)
            self._cache[key] = _Series(body, last_observed=now, refreshed=now)
            self._write(event.namespace, body, None)
            return
        series.count += 1
        series.last_observed = now
        if series.count == 2:  # becomes a series: written at once
            self._write_series(series)

    def tick(self) -> None:
        """End the series not observed for ``finish_time`` (write their final count) and refresh
        the others every ``refresh_time`` (upstream's ``finishSeries``/``refreshExistingEventSeries``)."""
        now = self._clock()
        for key, series in list(self._cache.items()):
            if now - series.last_observed >= self.finish_time:
                if series.count > series.written_count:
                    self._write_series(series)
                del self._cache[key]
            elif (
                series.count > 1 and now - series.refreshed >= self.refresh_time and series.count > series.written_count
            ):
                self._write_series(series)

    def _body(self, event: PodEvent, now: float) -> dict[str, Any]:
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            # upstream's name: the regarding object's name and the time in hex nanoseconds
            "metadata": {"name": f"{event.name}.{int(now * 1e9):x}", "namespace": event.namespace},
            "eventTime": micro_time(now),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.instance,
            "action": event.action,
            "reason": event.reason,
            "type": event.type,
            "note": event.note,
            "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": event.namespace, "name": event.name}
            | ({"uid": event.uid} if event.uid else {}),
        }

    def _write_series(self, series: _Series) -> None:
        series.refreshed = self._clock()
        patch = {"series": {"count": series.count, "lastObservedTime": micro_time(series.last_observed)}}
        meta = series.body["metadata"]
        if self._write(meta["namespace"], series.body, patch):
            series.written_count = series.count

    def _write(self, namespace: str, body: dict[str, Any], patch: dict[str, Any] | None) -> bool:
        """One API write within the rate budget: create, or patch the series (create again when the
        Event is gone, as upstream). Returns whether it was written."""
        if not self._take_token((namespace, body["regarding"]["name"])):
            self.dropped += 1
            return False
        try:
            if patch is None:
                self._create(namespace, body)
            else:
                try:
                    self._patch(namespace, body["metadata"]["name"], patch)
                except APIError as exc:
                    if exc.status != 404:
                        raise
                    self._create(namespace, body | patch)
        except APIError as exc:
            self.dropped += 1
            log.warning(
                "cannot post a %s event on pod %s/%s: %s", body["reason"], namespace, body["regarding"]["name"], exc
            )
            self.failed(f"posting a {body['reason']} event: {exc}")
            return False
        self.posted += 1
        self.recovered()
        return True

    def _take_token(self, pod: tuple[str, str]) -> bool:
        now = self._clock()
        bucket = self._buckets.pop(pod, None)  # re-inserted last: the dict is oldest-used first
        if bucket is None:
            bucket = [float(self.burst), now]
            while len(self._buckets) >= MAX_BUCKETS:
                del self._buckets[next(iter(self._buckets))]
        bucket[0] = min(float(self.burst), bucket[0] + (now - bucket[1]) * self.qps)
        bucket[1] = now
        self._buckets[pod] = bucket
        if bucket[0] < 1:
            return False
        bucket[0] -= 1
        return True


__all__ = ["REPORTING_CONTROLLER", "EventRecorder", "PodEvent", "event_for"]

"""The standalone scheduler's scheduling queue, as kube-scheduler v1.36.3's ``PriorityQueue``
(pkg/scheduler/backend/queue/scheduling_queue.go, active_queue.go, backoff_queue.go):

- **activeQ**: pods ready to be tried, in the profile's QueueSort order (``PrioritySort``:
  priority, then ``Timestamp``, when the pod last entered the queue);
- **backoffQ**: pods backing off, ordered by the end of their backoff, aligned to 1 s windows
  (``alignToWindow``), then as activeQ; a pod's backoff is ``initial_backoff`` (1 s) doubled per
  rejection (or, after an error, per consecutive error) up to ``max_backoff`` (10 s), counted
  from its last failure. A pod that failed with an error (no rejecting plugin) waits in the
  error backoffQ. When activeQ is empty, :meth:`SchedulingQueue.pop` takes the head of the
  backoffQ at once (SchedulerPopFromBackoffQ, on since v1.33: ``popBackoff``), not of the error
  backoffQ;
- **unschedulable pool**: pods rejected by plugins. A cluster event moves a parked pod back
  (:meth:`~SchedulingQueue.move_on`: ``MoveAllToActiveOrBackoffQueue`` → ``isPodWorthRequeuing``)
  only when a queueing hint of one of the plugins that rejected it (its unschedulable and pending
  plugins) registered for the event returns ``Queue`` (a hint raising counts as ``Queue``; a
  pod no plugin rejected by name moves on any event; the wildcard event moves every pod); so do
  its own updates (``Update``, one event per property changed), a sibling of its pod group
  (``activate``), and, as the safety net, ``max_unschedulable`` seconds (5 minutes) in the pool
  (``flushUnschedulablePodsLeftover``). The events that happen while a pod is in flight are
  replayed against it when it fails (``AddUnschedulableIfNotPresent`` →
  ``determineSchedulingHintForInFlightPod``): a ``Queue`` sends it to backoffQ (or activeQ once
  its backoff is over) instead of the pool.

The pods come in as changes (:meth:`SchedulingQueue.apply`); a cycle costs the queue O(log n)
(heaps, the pool a FIFO, stale entries skipped on the way out), flushed as it is popped rather than
by upstream's 1 s and 30 s timers. Not thread-safe: its scheduler, on the event loop, owns it.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.cluster.events import pod_events
from app.framework import SUCCESS, PodNominator, QueuedPodInfo, Status
from app.framework.events import (
    ANY_EVENT,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    QUEUE,
    ClusterEvent,
    ClusterEventWithHint,
    ObservedEvent,
)
from app.framework.types import PodInfo

log = logging.getLogger(__name__)

ACTIVE, BACKOFF, UNSCHEDULABLE, IN_FLIGHT = "active", "backoff", "unschedulable", "in_flight"
#: a pod a PreEnqueue plugin keeps out of the active queue (SchedulingGates): never attempted
GATED = "gated"
#: ``less(a, b)``: the profile's QueueSort (PrioritySort: priority, then arrival)
Less = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
#: the profile's PreEnqueue plugins as one check: ``SUCCESS`` admits the pod to the active queue
PreEnqueue = Callable[[PodInfo], Status]
#: ``registered(plugin)``: the events that may make a pod ``plugin`` rejected schedulable, each
#: with its queueing hint (a plain :class:`ClusterEvent`: a registration without a hint)
Registered = Callable[[str], Sequence["ClusterEventWithHint | ClusterEvent"]]
#: a change the watch shows: the pod's UID and its record, ``None`` when it no longer waits for
#: this scheduler (deleted, bound, another ``schedulerName``)
Change = tuple[str, "PodInfo | None"]
#: an event as :meth:`SchedulingQueue.move_on` takes it (a bare event has no objects)
Event = ObservedEvent | ClusterEvent
#: ``backoffQOrderingWindowDuration``: backoff ends are aligned to windows of this many seconds
BACKOFF_WINDOW = 1.0
#: ``queueingStrategy`` (scheduling_queue.go): the pool, backoffQ (or activeQ once backed off), activeQ
QUEUE_SKIP, QUEUE_AFTER_BACKOFF, QUEUE_IMMEDIATELY = 0, 1, 2
_STATUS_FIELDS = ("pod", "phase", "nominated_node_name", "start_time", "terminating_by_preemption")
_SPEC_FIELDS = (*(f for f in PodInfo.__slots__ if not f.startswith("_") and f not in _STATUS_FIELDS), "requests")
_NO_EXPIRY = -math.inf


def is_pod_updated(old: PodInfo, new: PodInfo) -> bool:
    """Whether ``new`` differs from ``old`` in more than its status (kube-scheduler's
    ``isPodUpdated``; the queue judges a parked pod's update by its hints, this is for callers
    that ask whether a pod changed at all)."""
    return old is not new and any(getattr(old, f) != getattr(new, f) for f in _SPEC_FIELDS)


@dataclass
class QueuedPod:
    """A pod in the queue (``QueuedPodInfo``): its latest record, attempts so far, when it last
    entered the queue (``Timestamp``), where it is, the end of its backoff (``ready_at``,
    aligned: it backs off while ``ready_at >= floor(now)``), the plugins that rejected it in its
    last attempt, and the events of its own updates while in flight."""

    pod: PodInfo
    added: float
    attempts: int = 0
    where: str = ACTIVE
    ready_at: float = _NO_EXPIRY
    #: the plugins that rejected it in its last attempt (``UnschedulablePlugins``)
    unschedulable_plugins: frozenset[str] = frozenset()
    #: the plugins that left it pending in its last attempt (``PendingPlugins``)
    pending_plugins: frozenset[str] = frozenset()
    #: rejections so far (``UnschedulableCount``) and errors in a row (``ConsecutiveErrorsCount``)
    unschedulable_count: int = 0
    consecutive_errors: int = 0
    #: the number of its current place: a heap or FIFO item with another number is stale
    token: int = 0
    #: it left the cluster (or this scheduler) while being tried: dropped when the attempt ends
    gone: bool = False
    #: its own updates while in flight (``addEventsIfPodInFlight``)
    in_flight_events: list[ObservedEvent] = field(default_factory=list)

    @property
    def rejectors(self) -> frozenset[str]:
        """``UnschedulablePlugins.Union(PendingPlugins)``."""
        return self.unschedulable_plugins | self.pending_plugins


class SchedulingQueue:
    """See the module doc. ``clock``: monotonic seconds (tests pass their own); ``less``: the
    profile's QueueSort (``None``: PrioritySort's order as a key); ``pre_enqueue``: its PreEnqueue
    plugins; ``registered``: each plugin's events with their hints (``queueingHintMap``);
    ``nominator``: the pods nominated to nodes, kept in step with this queue's pods
    (``AddNominatedPod`` on add, ``UpdateNominatedPod``, ``DeleteNominatedPodIfExists``);
    ``interest``: every event some plugin registered (``isEventOfInterest``)."""

    def __init__(
        self,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_unschedulable: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        less: Less | None = None,
        pre_enqueue: PreEnqueue | None = None,
        registered: Registered | None = None,
        nominator: PodNominator | None = None,
        interest: Sequence[ClusterEvent] = (ANY_EVENT,),
    ) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_unschedulable = max_unschedulable
        self._clock = clock
        self._less = less
        self._pre_enqueue = pre_enqueue
        self._registered = registered
        self._hints: dict[str, tuple[ClusterEventWithHint, ...]] = {}
        #: the pods nominated to nodes, kept in step with the pods of this queue
        self.nominator = nominator if nominator is not None else PodNominator()
        #: every event some plugin registered (``isEventOfInterest``)
        self.interest = tuple(interest)
        self._pods: dict[str, QueuedPod] = {}
        #: pods popped so far (``SchedulingCycle()``): the cycle number opportunistic batching compares
        self.scheduling_cycle = 0
        self._counts = dict.fromkeys((ACTIVE, BACKOFF, UNSCHEDULABLE, GATED, IN_FLIGHT), 0)
        #: activeQ: ``(-priority, added, token, uid)`` or :class:`_Ordered`
        self._active: list[Any] = []
        #: backoffQ (``podBackoffQ``): ``(ready_at, -priority, added, token, uid)``
        self._backoff: list[tuple[float, int, float, int, str]] = []
        #: the error backoffQ (``podErrorBackoffQ``): ``(ready_at, token, uid)``
        self._error_backoff: list[tuple[float, int, str]] = []
        #: the unschedulable pool by parking time: ``(parked at, token, uid)``
        self._parked: deque[tuple[float, int, str]] = deque()
        #: the pods of the unschedulable pool
        self._unschedulable: dict[str, QueuedPod] = {}
        #: the pods kept out at their arrival by a PreEnqueue plugin (DynamicResources while a claim
        #: is missing): a cluster event its hints accept runs PreEnqueue again (v1.36.3's gated pods
        #: in unschedulablePods, their gating plugin among their unschedulable plugins)
        self._gated_by: dict[str, QueuedPod] = {}
        self._tokens = itertools.count(1)

    def __len__(self) -> int:
        return len(self._pods)

    def counts(self) -> dict[str, int]:
        """Pods per queue (``active``, ``backoff``, ``unschedulable``, ``gated``; and being
        scheduled, ``in_flight``)."""
        return dict(self._counts)

    def get(self, uid: str) -> QueuedPod | None:
        """The queued pod with ``uid``."""
        return self._pods.get(uid)

    # -- what the watch shows ------------------------------------------------------------------

    def apply(self, changes: Iterable[Change]) -> list[PodInfo]:
        """The watch's changes (``PriorityQueue.Add``, ``Update``, ``Delete``): a new pod enters
        activeQ (or waits at PreEnqueue), an updated one replaces its record (a parked pod moves
        back when a hint of its rejecting plugins accepts one of its update's events; one in
        flight keeps the events for its failure; a gated one is admitted once its gates are
        gone), a gone one leaves (one being tried leaves when its attempt ends). Returns the pods
        that entered."""
        now = self._clock()
        added: list[PodInfo] = []
        for uid, pod in changes:
            entry = self._pods.get(uid)
            if pod is None:
                if entry is None:
                    continue
                if entry.where == IN_FLIGHT:
                    entry.gone = True
                else:
                    self._drop(entry)
            elif entry is None:
                entry = self._pods[uid] = QueuedPod(pod, now, where=GATED)
                self._counts[GATED] += 1
                self.nominator.add_nominated_pod(pod)
                status = self._pre_enqueue(pod) if self._pre_enqueue is not None else None
                if status is None or status.is_success():
                    self._to_active(entry)
                elif status.plugin:
                    entry.unschedulable_plugins = frozenset({status.plugin})
                    self._gated_by[uid] = entry
                added.append(pod)
            elif entry.pod is not pod:
                old = entry.pod
                self.nominator.update_nominated_pod(old, pod)
                entry.pod, entry.gone = pod, False
                if entry.where == GATED:  # its gates may be gone (PriorityQueue.Update)
                    if self._admitted(pod):
                        self._to_active(entry)
                elif entry.where == IN_FLIGHT:
                    entry.in_flight_events.extend(ObservedEvent(e, old, pod) for e in pod_events(old, pod))
                elif entry.where == UNSCHEDULABLE:
                    for event in pod_events(old, pod):
                        strategy = self._worth(entry, ObservedEvent(event, old, pod))
                        if strategy != QUEUE_SKIP:
                            self._requeue(entry, strategy, now)
                            break
        return added

    def sync(self, pending: Iterable[PodInfo]) -> list[PodInfo]:
        """Make the queue hold exactly ``pending`` (a full list of the pods waiting for this
        scheduler): :meth:`apply` of each, and of the others' leaving. O(n): for a relist and
        tests; the scheduler applies changes."""
        records = {p.uid: p for p in pending}
        gone: list[Change] = [(uid, None) for uid in self._pods if uid not in records]
        return self.apply([*records.items(), *gone])

    # -- the scheduling loop -------------------------------------------------------------------

    def pop(self) -> PodInfo | None:
        """The next pod to try (marked in flight), or ``None`` when none is ready. Backed-off
        pods whose time has come and pods parked for ``max_unschedulable`` join activeQ first
        (``flushBackoffQCompleted``, ``flushUnschedulablePodsLeftover``); with activeQ empty, the
        head of the backoffQ, backed off or not (``popBackoff``)."""
        now = self._clock()
        self._flush(now)
        pods = self._pods
        while self._active:
            item = heapq.heappop(self._active)
            if isinstance(item, tuple):
                token, uid = item[2], item[3]
            else:
                token, uid = item.seq, item.uid
            found = pods.get(uid)
            if found is not None and found.token == token and found.where == ACTIVE and not self._refused(found, now):
                return self._in_flight(found)
        while self._backoff:
            _, _, _, token, uid = heapq.heappop(self._backoff)
            found = pods.get(uid)
            if found is not None and found.token == token and found.where == BACKOFF and not self._refused(found, now):
                return self._in_flight(found)
        return None

    def _refused(self, entry: QueuedPod, now: float) -> bool:
        """``runPreEnqueuePlugins`` before a pod is tried again (v1.36.3 scheduling_queue.go runs
        them in ``moveToActiveQ``/``moveToBackoffQ``; here as the pod leaves for its attempt, the
        same pods): a pod a PreEnqueue plugin refuses now (DefaultPreemption while its preemption
        runs) is parked, not tried, with that plugin among its unschedulable plugins (its
        ``GatingPlugin``) until an event moves it."""
        if self._pre_enqueue is None or entry.attempts == 0:  # a new pod was checked as it arrived
            return False
        status = self._pre_enqueue(entry.pod)
        if status.is_success():
            return False
        if status.plugin:
            entry.unschedulable_plugins = entry.unschedulable_plugins | {status.plugin}
        self._park(entry, now)
        return True

    def _in_flight(self, entry: QueuedPod) -> PodInfo:
        self.scheduling_cycle += 1  # Pop: ``p.schedulingCycle++``
        self._place(entry, IN_FLIGHT)
        entry.attempts += 1
        entry.in_flight_events = []
        return entry.pod

    def _flush(self, now: float) -> None:
        window, pods = self._window(now), self._pods
        heaps: tuple[list[Any], ...] = (self._backoff, self._error_backoff)
        for heap in heaps:
            while heap and heap[0][0] < window:
                item = heapq.heappop(heap)
                entry = pods.get(item[-1])
                if entry is not None and entry.token == item[-2] and entry.where == BACKOFF:
                    self._to_active(entry)
        parked, limit = self._parked, now - self.max_unschedulable
        timeout = ObservedEvent(EVENT_UNSCHEDULABLE_TIMEOUT)
        while parked and parked[0][0] < limit:
            _, token, uid = parked.popleft()
            entry = pods.get(uid)
            if entry is not None and entry.token == token and entry.where == UNSCHEDULABLE:
                self._requeue(entry, self._worth(entry, timeout), now)

    def done(self, uid: str) -> None:
        """The pod was bound (or assumed for good): it leaves the queue (and the nominator)."""
        entry = self._pods.get(uid)
        if entry is not None:
            self._drop(entry)

    def failed(
        self,
        uid: str,
        unschedulable: bool,
        plugins: Iterable[str] = (),
        events: Sequence[Event] | None = (),
        pending: Iterable[str] = (),
    ) -> None:
        """The attempt failed (``AddUnschedulableIfNotPresent``): the pod re-enters the queue now
        (its timestamp refreshed: behind the pods of its priority already waiting) and backs off
        from now. ``plugins`` rejected it (a FitError's unschedulable plugins; ``pending``: its
        pending plugins): it goes to the unschedulable pool unless a hint of one of them accepts
        an event that happened while it was in flight (``events``, the cluster's, and its own
        updates; ``None``: unknown, as the wildcard event): then to backoffQ, or to activeQ once
        backed off. An error, or a rejection no plugin made by name, sends it to the error
        backoffQ (``unschedulable`` is kept for the callers: the plugins decide). A pod that left
        the cluster meanwhile is forgotten."""
        del unschedulable  # the rejecting plugins say it (upstream reads the plugin sets alone)
        entry = self._pods.get(uid)
        if entry is None:
            return
        if entry.gone:
            self._drop(entry)
            return
        now = self._clock()
        entry.unschedulable_plugins, entry.pending_plugins = frozenset(plugins), frozenset(pending)
        if entry.rejectors:
            entry.unschedulable_count += 1
            entry.consecutive_errors = 0
        else:
            entry.consecutive_errors += 1
        entry.added = now
        entry.ready_at = self._backoff_end(entry)
        own, entry.in_flight_events = entry.in_flight_events, []
        replay: list[Event] | None = None if events is None else [*own, *events]
        self._requeue(entry, self._in_flight_strategy(entry, replay), now)

    def _in_flight_strategy(self, entry: QueuedPod, events: Sequence[Event] | None) -> int:
        """``determineSchedulingHintForInFlightPod``: the strongest strategy the events of the
        attempt give (``None``: unknown events, as the wildcard)."""
        if not entry.rejectors or events is None:
            return QUEUE_AFTER_BACKOFF
        strategy = QUEUE_SKIP
        for event in events:
            found = self._worth(entry, event)
            if found == QUEUE_IMMEDIATELY or (found == QUEUE_AFTER_BACKOFF and not entry.pending_plugins):
                return found
            strategy = max(strategy, found)
        return strategy

    def backoff(self, attempts: int) -> float:
        """Seconds of backoff after ``attempts`` rejections (or consecutive errors): 1 s doubling
        to 10 s (``calculateBackoffDuration``)."""
        if attempts <= 0:
            return 0.0
        return float(min(self.initial_backoff * 2.0 ** (attempts - 1), self.max_backoff))

    def _backoff_end(self, entry: QueuedPod) -> float:
        """``getBackoffTime``: the end of the pod's backoff from its timestamp, aligned."""
        count = entry.consecutive_errors or entry.unschedulable_count
        if self.max_backoff == 0 or count == 0:
            return _NO_EXPIRY
        return self._window(entry.added + self.backoff(count))

    @staticmethod
    def _window(t: float) -> float:
        """``alignToWindow``: ``t`` truncated to its :data:`BACKOFF_WINDOW`."""
        return math.floor(t / BACKOFF_WINDOW) * BACKOFF_WINDOW

    def backing_off(self, entry: QueuedPod, now: float | None = None) -> bool:
        """``isPodBackingoff``: its aligned backoff end is not before ``now``'s window."""
        return entry.ready_at >= self._window(self._clock() if now is None else now)

    def move_on(self, events: Sequence[Event] | None) -> int:
        """Cluster events happened (``None``: too many to know which, as the wildcard event):
        each moves the parked pods it is worth requeuing (``MoveAllToActiveOrBackoffQueue``:
        ``isEventOfInterest``, the event's ``preCheck`` (its ``max_priority``), then
        ``isPodWorthRequeuing`` per pod, in the events' order).
        Returns how many moved."""
        if events is None:
            events = [ANY_EVENT]
        moved = 0
        for item in events:
            if not self._counts[UNSCHEDULABLE] and not self._gated_by:
                break
            event = item if isinstance(item, ObservedEvent) else ObservedEvent(item)
            if not self._interesting(event.event):
                continue
            now = self._clock()
            ceiling = event.max_priority
            for entry in list(self._unschedulable.values()):
                if ceiling is not None and entry.pod.priority > ceiling:  # the event's preCheck
                    continue
                strategy = self._worth(entry, event)
                if strategy != QUEUE_SKIP:
                    self._requeue(entry, strategy, now)
                    moved += 1
            for entry in list(self._gated_by.values()):  # moveToActiveQ: PreEnqueue again
                if self._worth(entry, event) != QUEUE_SKIP and self._admitted(entry.pod):
                    self._to_active(entry)
                    moved += 1
        return moved

    def _interesting(self, event: ClusterEvent) -> bool:
        """``isEventOfInterest``: the wildcard event, or one some plugin registered."""
        return event.is_wildcard() or any(registered.matches(event) for registered in self.interest)

    def _registrations(self, plugin: str) -> tuple[ClusterEventWithHint, ...]:
        found = self._hints.get(plugin)
        if found is None:
            raw = self._registered(plugin) if self._registered is not None else (ANY_EVENT,)
            found = self._hints[plugin] = tuple(
                r if isinstance(r, ClusterEventWithHint) else ClusterEventWithHint(r) for r in raw
            )
        return found

    def _worth(self, entry: QueuedPod, observed: Event) -> int:
        """``isPodWorthRequeuing``: the strategy ``observed`` gives the pod: after backoff for a
        pod no plugin rejected by name and for the wildcard event; otherwise immediately when a
        hint of one of its pending plugins says ``Queue``, after backoff when one of its
        unschedulable plugins' does (a hint raising counts as ``Queue``), else skip."""
        if not isinstance(observed, ObservedEvent):
            observed = ObservedEvent(observed)
        rejectors = entry.rejectors
        event = observed.event
        if not rejectors or event.is_wildcard():
            return QUEUE_AFTER_BACKOFF
        strategy = QUEUE_SKIP
        for plugin in sorted(rejectors):
            for registration in self._registrations(plugin):
                if not registration.event.matches(event):
                    continue
                if registration.hint is not None:
                    try:
                        hint = registration.hint(entry.pod, observed.old, observed.new)
                    except Exception:
                        log.debug("queueing hint of %s failed on %s", plugin, event, exc_info=True)
                        hint = QUEUE
                    if hint != QUEUE:
                        continue
                if plugin in entry.pending_plugins:
                    return QUEUE_IMMEDIATELY
                if not entry.pending_plugins:
                    return QUEUE_AFTER_BACKOFF
                strategy = QUEUE_AFTER_BACKOFF
        return strategy

    def _requeue(self, entry: QueuedPod, strategy: int, now: float) -> None:
        """``requeuePodWithQueueingStrategy``: the pool, backoffQ while backing off, or activeQ."""
        if strategy == QUEUE_SKIP:
            if entry.where != UNSCHEDULABLE:
                self._park(entry, now)
        elif strategy == QUEUE_AFTER_BACKOFF and self.backing_off(entry, now):
            self._to_backoff(entry)
        else:
            self._to_active(entry)

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """Move these pods (a gang's siblings: ``PodsToActivate``) straight to activeQ, backoff or
        not (:class:`~app.framework.handle.PodActivator`)."""
        for pod in pods:
            entry = self._pods.get(pod.uid)
            if entry is not None and entry.where in (BACKOFF, UNSCHEDULABLE):
                self._to_active(entry)

    def gated(self, uid: str) -> bool:
        """Whether the pod is kept out by a PreEnqueue plugin."""
        entry = self._pods.get(uid)
        return entry is not None and entry.where == GATED

    # -- places ----------------------------------------------------------------------------------

    def _admitted(self, pod: PodInfo) -> bool:
        return self._pre_enqueue is None or self._pre_enqueue(pod).is_success()

    def _place(self, entry: QueuedPod, where: str) -> int:
        """Move ``entry`` to ``where``; its new token (items of its old place go stale)."""
        self._counts[entry.where] -= 1
        self._counts[where] += 1
        if entry.where == UNSCHEDULABLE:
            del self._unschedulable[entry.pod.uid]
        if entry.where == GATED:
            self._gated_by.pop(entry.pod.uid, None)
        if where == UNSCHEDULABLE:
            self._unschedulable[entry.pod.uid] = entry
        entry.where = where
        entry.token = next(self._tokens)
        return entry.token

    def _drop(self, entry: QueuedPod) -> None:
        self._counts[entry.where] -= 1
        self._unschedulable.pop(entry.pod.uid, None)
        self._gated_by.pop(entry.pod.uid, None)
        del self._pods[entry.pod.uid]
        entry.token = 0
        self.nominator.delete_nominated_pod_if_exists(entry.pod)

    def _to_backoff(self, entry: QueuedPod) -> None:
        token = self._place(entry, BACKOFF)
        uid = entry.pod.uid
        if entry.rejectors:
            heapq.heappush(self._backoff, (entry.ready_at, -entry.pod.priority, entry.added, token, uid))
        else:
            heapq.heappush(self._error_backoff, (entry.ready_at, token, uid))

    def _park(self, entry: QueuedPod, now: float) -> None:
        token = self._place(entry, UNSCHEDULABLE)
        self._parked.append((now, token, entry.pod.uid))

    def _to_active(self, entry: QueuedPod) -> None:
        token = self._place(entry, ACTIVE)
        uid = entry.pod.uid
        if self._less is None:  # PrioritySort's order as a key: priority, then arrival
            heapq.heappush(self._active, (-entry.pod.priority, entry.added, token, uid))
        else:
            heapq.heappush(self._active, _Ordered(self._less, QueuedPodInfo(entry.pod, entry.added), token, uid))


class _Ordered:
    """A heap item ordered by the profile's QueueSort (``less``), then by insertion."""

    __slots__ = ("info", "less", "seq", "uid")

    def __init__(self, less: Less, info: QueuedPodInfo, seq: int, uid: str) -> None:
        self.less, self.info, self.seq, self.uid = less, info, seq, uid

    def __lt__(self, other: _Ordered) -> bool:
        if self.less(self.info, other.info):
            return True
        if self.less(other.info, self.info):
            return False
        return self.seq < other.seq


def pre_enqueue_of(plugins: Sequence[Any]) -> PreEnqueue | None:
    """The PreEnqueue plugins as one check (``RunPreEnqueuePlugins``: the first non-success
    status), or ``None`` without any."""
    if not plugins:
        return None

    def check(pod: PodInfo) -> Status:
        for plugin in plugins:
            status: Status = plugin.pre_enqueue(pod)
            if not status.is_success():
                return status if status.plugin else status.with_plugin(plugin.name)
        return SUCCESS

    return check


__all__ = [
    "ACTIVE",
    "BACKOFF",
    "BACKOFF_WINDOW",
    "GATED",
    "IN_FLIGHT",
    "UNSCHEDULABLE",
    "Change",
    "QueuedPod",
    "SchedulingQueue",
    "pre_enqueue_of",
]

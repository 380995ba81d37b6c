"""The standalone scheduler's scheduling queue, as kube-scheduler's ``PriorityQueue``
(pkg/scheduler/internal/queue/scheduling_queue.go, v1.30):

- **activeQ**: pods ready to be tried, highest ``spec.priority`` first, then the earliest added
  (``PrioritySort``: ``pInfo.Timestamp``, the time the pod last entered the queue);
- **backoffQ**: pods that failed with an error, or that left the unschedulable pool while still
  backing off, ordered by the end of their backoff; a pod's backoff is ``initial_backoff`` (1 s)
  doubled per attempt up to ``max_backoff`` (10 s) (``podInitialBackoffSeconds``,
  ``podMaxBackoffSeconds``), counted from its last failure;
- **unschedulable pool**: pods no node fits. They move back (to activeQ, or to backoffQ while
  backing off) on a cluster event that one of the plugins that rejected them registered
  (``move_on``, ``MoveAllToActiveOrBackoffQueue`` with each plugin's ``EventsToRegister``; a plugin
  that registers none is woken by every event, and so is a pod no plugin rejected by name), when
  their own object changes, when a sibling of their pod group arrives (``activate``, as
  Coscheduling's ``ActivateSiblings``), or after ``max_unschedulable`` seconds
  (``podMaxInUnschedulablePodsDuration``, 5 minutes). An event of interest that happens while a
  pod is being tried counts for it when it fails (upstream's ``moveRequestCycle``): it goes to
  backoffQ instead of the pool.

The pods come in as changes (:meth:`SchedulingQueue.apply`: a pod added or updated, or gone), so
a scheduling cycle costs the queue O(log n): activeQ and backoffQ are heaps, the unschedulable
pool a FIFO by parking time, and a pod's place is checked on the way out (an entry left behind
by a move is skipped). The backoffQ and the pool are flushed as the queue is popped, not by
upstream's 1 s and 30 s timers: a pod is ready no later than upstream would make it.

Not thread-safe: its scheduler, on the event loop, owns it.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from app.framework import SUCCESS, PodNominator, QueuedPodInfo, Status
from app.framework.events import ANY_EVENT, ClusterEvent
from app.framework.types import PodInfo

ACTIVE, BACKOFF, UNSCHEDULABLE, IN_FLIGHT = "active", "backoff", "unschedulable", "in_flight"
#: a pod a PreEnqueue plugin keeps out of the active queue (SchedulingGates): never attempted
GATED = "gated"
#: ``less(a, b)``: the profile's QueueSort (PrioritySort: priority, then arrival)
Less = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
#: the profile's PreEnqueue plugins as one check: ``SUCCESS`` admits the pod to the active queue
PreEnqueue = Callable[[PodInfo], Status]
#: ``registered(plugin)``: the cluster events that may make a pod ``plugin`` rejected schedulable
Registered = Callable[[str], Sequence[ClusterEvent]]
#: a change the watch shows: the pod's UID and its record, ``None`` when it no longer waits for
#: this scheduler (deleted, bound, another ``schedulerName``)
Change = tuple[str, "PodInfo | None"]
#: what a pod's own update is judged by: its record's fields but those its status sets (phase,
#: nomination, start time) and the raw object, plus its requests
_STATUS_FIELDS = ("pod", "phase", "nominated_node_name", "start_time", "terminating_by_preemption")
_SPEC_FIELDS = (*(f for f in PodInfo.__slots__ if not f.startswith("_") and f not in _STATUS_FIELDS), "requests")


def is_pod_updated(old: PodInfo, new: PodInfo) -> bool:
    """Whether ``new`` differs from ``old`` in more than its status (kube-scheduler's
    ``isPodUpdated``: the scheduler's own ``PodScheduled`` condition or a nomination does not
    make a parked pod worth another try)."""
    return old is not new and any(getattr(old, f) != getattr(new, f) for f in _SPEC_FIELDS)


@dataclass
class QueuedPod:
    """A pod in the queue: its latest record, attempts so far, when it last entered the queue
    (``Timestamp``), where it is, and when its backoff ends (``ready_at``; the unschedulable
    pool's FIFO holds when it was parked)."""

    pod: PodInfo
    added: float
    attempts: int = 0
    where: str = ACTIVE
    ready_at: float = 0.0
    #: the plugins that rejected it in its last attempt (``UnschedulablePlugins``)
    unschedulable_plugins: frozenset[str] = frozenset()
    #: the number of its current place: a heap or FIFO item with another number is stale
    token: int = 0
    #: it left the cluster (or this scheduler) while being tried: dropped when the attempt ends
    gone: bool = False


class SchedulingQueue:
    """See the module doc. ``clock``: monotonic seconds (tests pass their own); ``less``: the
    profile's QueueSort (``None``: PrioritySort's order as a key); ``pre_enqueue``: its PreEnqueue
    plugins; ``registered``: each plugin's events; ``nominator``: the pods nominated to nodes, kept
    in step with this queue's pods (``AddNominatedPod`` on add, ``UpdateNominatedPod``,
    ``DeleteNominatedPodIfExists`` when a pod leaves); ``interest``: every event some plugin
    registered (``isEventOfInterest``)."""

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
        #: the pods nominated to nodes, kept in step with the pods of this queue
        self.nominator = nominator if nominator is not None else PodNominator()
        #: every event some plugin registered (``isEventOfInterest``)
        self.interest = tuple(interest)
        self._pods: dict[str, QueuedPod] = {}
        self._counts = dict.fromkeys((ACTIVE, BACKOFF, UNSCHEDULABLE, GATED, IN_FLIGHT), 0)
        #: activeQ: ``(-priority, added, token, uid)`` or :class:`_Ordered`
        self._active: list[Any] = []
        #: backoffQ: ``(ready_at, token, uid)``
        self._backoff: list[tuple[float, int, str]] = []
        #: the unschedulable pool by parking time: ``(parked at, token, uid)``
        self._parked: deque[tuple[float, int, str]] = deque()
        #: the pods of the unschedulable pool
        self._unschedulable: dict[str, QueuedPod] = {}
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
        activeQ (or waits at PreEnqueue), an updated one replaces its record (a parked pod whose
        spec changed moves back; a gated one is admitted once its gates are gone), a gone one
        leaves (one being tried leaves when its attempt ends). Returns the pods that entered."""
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
                if self._admitted(pod):
                    self._to_active(entry)
                added.append(pod)
            elif entry.pod is not pod:
                updated = is_pod_updated(entry.pod, pod)
                self.nominator.update_nominated_pod(entry.pod, pod)
                entry.pod, entry.gone = pod, False
                if entry.where == GATED:  # its gates may be gone (PriorityQueue.Update)
                    if self._admitted(pod):
                        self._to_active(entry)
                elif entry.where == UNSCHEDULABLE and updated:  # its spec changed: worth another try
                    self._move_back(entry, now)
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
        (``flushBackoffQCompleted``, ``flushUnschedulablePodsLeftover``)."""
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
            if found is not None and found.token == token and found.where == ACTIVE:
                self._place(found, IN_FLIGHT)
                found.attempts += 1
                return found.pod
        return None

    def _flush(self, now: float) -> None:
        backoff, pods = self._backoff, self._pods
        while backoff and backoff[0][0] <= now:
            _, token, uid = heapq.heappop(backoff)
            entry = pods.get(uid)
            if entry is not None and entry.token == token and entry.where == BACKOFF:
                self._to_active(entry)
        parked, limit = self._parked, now - self.max_unschedulable
        while parked and parked[0][0] <= limit:
            _, token, uid = parked.popleft()
            entry = pods.get(uid)
            if entry is not None and entry.token == token and entry.where == UNSCHEDULABLE:
                self._move_back(entry, now)

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
        events: Sequence[ClusterEvent] | None = (),
    ) -> None:
        """The attempt failed (``AddUnschedulableIfNotPresent``, v1.30 without queueing hints):
        the pod re-enters the queue now (its timestamp refreshed: behind the pods of its priority
        already waiting) and backs off from now. A rejection by ``plugins`` (a FitError's
        unschedulable plugins) parks it in the unschedulable pool, unless an event of interest
        happened during the attempt (``events``; ``None``: unknown, as if one did: upstream's
        ``moveRequestCycle``); an error, or a rejection no plugin made by name, sends it to
        backoffQ. A pod that left the cluster meanwhile is forgotten."""
        entry = self._pods.get(uid)
        if entry is None:
            return
        if entry.gone:
            self._drop(entry)
            return
        now = self._clock()
        entry.added = now
        entry.ready_at = now + self.backoff(entry.attempts)
        entry.unschedulable_plugins = frozenset(plugins)
        if unschedulable and entry.unschedulable_plugins and not self._interesting(events):
            self._park(entry, now)
        else:
            self._to_backoff(entry)

    def _interesting(self, events: Sequence[ClusterEvent] | None) -> bool:
        """Whether one of ``events`` is of interest to a plugin (``isEventOfInterest``; ``None``:
        unknown events, as if one were)."""
        if events is None:
            return True
        interest = self.interest
        return any(registered.matches(event) for event in events for registered in interest)

    def backoff(self, attempts: int) -> float:
        """Seconds of backoff after ``attempts`` attempts (1 s doubling to 10 s)."""
        return float(min(self.initial_backoff * 2.0 ** max(attempts - 1, 0), self.max_backoff))

    def move_on(self, events: Sequence[ClusterEvent] | None) -> int:
        """Cluster events happened (``None``: too many to know which): every parked pod one of
        whose rejecting plugins registered one of them goes back (``MoveAllToActiveOrBackoffQueue``;
        each distinct set of rejecting plugins is judged once). Returns how many moved."""
        if (events is not None and not events) or not self._counts[UNSCHEDULABLE]:
            return 0
        distinct = None if events is None else tuple(set(events))
        now = self._clock()
        judged: dict[frozenset[str], bool] = {}
        moved = []
        for entry in self._unschedulable.values():
            plugins = entry.unschedulable_plugins
            woken = judged.get(plugins)
            if woken is None:
                woken = judged[plugins] = self._woken(plugins, distinct)
            if woken:
                moved.append(entry)
        for entry in moved:
            self._move_back(entry, now)
        return len(moved)

    def _woken(self, plugins: frozenset[str], events: Sequence[ClusterEvent] | None) -> bool:
        """Whether ``events`` may make a pod ``plugins`` rejected schedulable
        (``isPodWorthRequeuing``)."""
        if events is None:
            return True
        if not plugins or self._registered is None:
            return True
        for plugin in plugins:
            for registered in self._registered(plugin):
                if any(registered.matches(event) for event in events):
                    return True
        return False

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
        if where == UNSCHEDULABLE:
            self._unschedulable[entry.pod.uid] = entry
        entry.where = where
        entry.token = next(self._tokens)
        return entry.token

    def _drop(self, entry: QueuedPod) -> None:
        self._counts[entry.where] -= 1
        self._unschedulable.pop(entry.pod.uid, None)
        del self._pods[entry.pod.uid]
        entry.token = 0
        self.nominator.delete_nominated_pod_if_exists(entry.pod)

    def _move_back(self, entry: QueuedPod, now: float) -> None:
        if entry.ready_at > now:
            self._to_backoff(entry)
        else:
            self._to_active(entry)

    def _to_backoff(self, entry: QueuedPod) -> None:
        token = self._place(entry, BACKOFF)
        heapq.heappush(self._backoff, (entry.ready_at, token, entry.pod.uid))

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
                return status
        return SUCCESS

    return check


__all__ = [
    "ACTIVE",
    "BACKOFF",
    "GATED",
    "IN_FLIGHT",
    "UNSCHEDULABLE",
    "Change",
    "QueuedPod",
    "SchedulingQueue",
    "pre_enqueue_of",
]

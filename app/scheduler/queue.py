"""The standalone scheduler's scheduling queue, as kube-scheduler's ``PriorityQueue``
(pkg/scheduler/backend/queue/scheduling_queue.go, v1.30's ``internal/queue``):

- **activeQ**: pods ready to be tried, highest ``spec.priority`` first, then the earliest added
  (``PrioritySort``: ``pInfo.Timestamp``, the time the pod entered the queue);
- **backoffQ**: pods that failed with an error, or that left the unschedulable pool while still
  backing off; a pod's backoff is ``initial_backoff`` (1 s) doubled per attempt up to
  ``max_backoff`` (10 s) (``podInitialBackoffSeconds``/``podMaxBackoffSeconds``);
- **unschedulable pool**: pods no node fits. They move back (to activeQ, or to backoffQ while
  backing off) on a cluster event that one of the plugins that rejected them registered
  (``move_on``, kube-scheduler's ``MoveAllToActiveOrBackoffQueue`` with each plugin's
  ``EventsToRegister``; a plugin that registers none is woken by every event, and so is a pod no
  plugin rejected by name), when their own object changes, when a sibling of their pod group
  arrives (``activate``, as Coscheduling's ``ActivateSiblings``), or after ``max_unschedulable``
  seconds (``podMaxInUnschedulablePodsDuration``, 5 minutes). An event that happens while a pod
  is being tried counts for it when it fails (upstream's in-flight events): it goes to backoffQ
  instead of the pool.

Not thread-safe: its scheduler, on the event loop, owns it.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from app.framework import SUCCESS, QueuedPodInfo, Status
from app.framework.events import ClusterEvent
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
    """A pod in the queue: its latest record, attempts so far, when it entered the queue, where
    it is, and (backoff) when it may be tried again / (unschedulable) since when it is parked."""

    pod: PodInfo
    added: float
    attempts: int = 0
    where: str = ACTIVE
    ready_at: float = 0.0
    parked_at: float = 0.0
    #: the plugins that rejected it in its last attempt (``UnschedulablePlugins``)
    unschedulable_plugins: frozenset[str] = frozenset()


class SchedulingQueue:
    """See the module doc. ``clock``: monotonic seconds (tests pass their own)."""

    def __init__(
        self,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_unschedulable: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        less: Less | None = None,
        pre_enqueue: PreEnqueue | None = None,
        registered: Registered | None = None,
    ) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_unschedulable = max_unschedulable
        self._clock = clock
        self._less = less
        self._pre_enqueue = pre_enqueue
        self._registered = registered
        self._pods: dict[str, QueuedPod] = {}
        self._active: list[Any] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._pods)

    def counts(self) -> dict[str, int]:
        """Pods per queue (``active``, ``backoff``, ``unschedulable``; and being scheduled)."""
        out = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 0, IN_FLIGHT: 0}
        for entry in self._pods.values():
            out[entry.where] += 1
        return out

    def get(self, uid: str) -> QueuedPod | None:
        """The queued pod with ``uid``."""
        return self._pods.get(uid)

    # -- what the watch shows ------------------------------------------------------------------

    def sync(self, pending: Iterable[PodInfo]) -> list[PodInfo]:
        """Make the queue hold exactly ``pending`` (the pods waiting for this scheduler, as the
        watch shows them): new pods enter activeQ, a changed pod in the unschedulable pool is moved
        back, pods no longer pending (bound, deleted) leave, except one being scheduled. Returns
        the pods that entered."""
        now = self._clock()
        seen: set[str] = set()
        added: list[PodInfo] = []
        for pod in pending:
            seen.add(pod.uid)
            entry = self._pods.get(pod.uid)
            if entry is None:
                entry = self._pods[pod.uid] = QueuedPod(pod, now)
                if self._admitted(pod):
                    self._push(pod.uid)
                else:
                    entry.where = GATED
                added.append(pod)
            elif entry.pod is not pod:
                updated = is_pod_updated(entry.pod, pod)
                entry.pod = pod
                if entry.where == GATED:  # its gates may be gone (PriorityQueue.Update)
                    if self._admitted(pod):
                        entry.where = ACTIVE
                        self._push(pod.uid)
                elif entry.where == UNSCHEDULABLE and updated:  # its spec changed: worth another try
                    self._move_back(entry, now)
        for uid in [u for u, e in self._pods.items() if u not in seen and e.where != IN_FLIGHT]:
            del self._pods[uid]
        return added

    # -- the scheduling loop -------------------------------------------------------------------

    def pop(self) -> PodInfo | None:
        """The next pod to try (marked in flight), or ``None`` when none is ready. Backed-off
        pods whose time has come and pods parked for ``max_unschedulable`` join activeQ first."""
        now = self._clock()
        for uid, entry in self._pods.items():
            if entry.where == BACKOFF and entry.ready_at <= now:
                entry.where = ACTIVE
                self._push(uid)
            elif entry.where == UNSCHEDULABLE and now - entry.parked_at >= self.max_unschedulable:
                self._move_back(entry, now)
        while self._active:
            item = heapq.heappop(self._active)
            uid = item[3] if isinstance(item, tuple) else item.uid
            found = self._pods.get(uid)
            if found is not None and found.where == ACTIVE:
                found.where = IN_FLIGHT
                found.attempts += 1
                return found.pod
        return None

    def done(self, uid: str) -> None:
        """The pod was bound: it leaves the queue."""
        self._pods.pop(uid, None)

    def failed(
        self,
        uid: str,
        unschedulable: bool,
        plugins: Iterable[str] = (),
        events: Sequence[ClusterEvent] | None = (),
    ) -> None:
        """The attempt failed: no node fits (``unschedulable``: to the unschedulable pool, rejected
        by ``plugins``) or an error (to backoffQ). ``events``: the cluster events during the
        attempt (``None``: unknown); one a rejecting plugin registered sends the pod to backoffQ
        instead of the pool. A pod that left the cluster meanwhile is forgotten."""
        entry = self._pods.get(uid)
        if entry is None:
            return
        now = self._clock()
        entry.ready_at = now + self.backoff(entry.attempts)
        if unschedulable:
            entry.unschedulable_plugins = frozenset(plugins)
            if self._woken(entry, events):
                entry.where = BACKOFF
            else:
                entry.where, entry.parked_at = UNSCHEDULABLE, now
        else:
            entry.where = BACKOFF

    def backoff(self, attempts: int) -> float:
        """Seconds of backoff after ``attempts`` attempts (1 s doubling to 10 s)."""
        return float(min(self.initial_backoff * 2.0 ** max(attempts - 1, 0), self.max_backoff))

    def move_all(self) -> int:
        """A cluster event that may let parked pods fit: every unschedulable pod goes back to
        activeQ (or backoffQ while backing off). Returns how many moved."""
        now = self._clock()
        parked = [e for e in self._pods.values() if e.where == UNSCHEDULABLE]
        for entry in parked:
            self._move_back(entry, now)
        return len(parked)

    def move_on(self, events: Sequence[ClusterEvent] | None) -> int:
        """Cluster events happened (``None``: too many to know which): every parked pod one of
        whose rejecting plugins registered one of them goes back (``MoveAllToActiveOrBackoffQueue``).
        Returns how many moved."""
        if events is not None and not events:
            return 0
        distinct = None if events is None else tuple(set(events))
        now = self._clock()
        moved = 0
        for entry in self._pods.values():
            if entry.where == UNSCHEDULABLE and self._woken(entry, distinct):
                self._move_back(entry, now)
                moved += 1
        return moved

    def _woken(self, entry: QueuedPod, events: Sequence[ClusterEvent] | None) -> bool:
        """Whether ``events`` may make ``entry`` schedulable (``isPodWorthRequeuing``)."""
        if events is None:
            return True
        if not events:
            return False
        if not entry.unschedulable_plugins or self._registered is None:
            return True
        for plugin in entry.unschedulable_plugins:
            for registered in self._registered(plugin):
                if any(registered.matches(event) for event in events):
                    return True
        return False

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """Move these pods (a gang's siblings: ``PodsToActivate``) straight to activeQ, backoff or
        not (:class:`~app.framework.handle.PodActivator`)."""
        for pod in pods:
            uid = pod.uid
            entry = self._pods.get(uid)
            if entry is not None and entry.where in (BACKOFF, UNSCHEDULABLE):
                entry.where = ACTIVE
                self._push(uid)

    def _move_back(self, entry: QueuedPod, now: float) -> None:
        if entry.ready_at > now:
            entry.where = BACKOFF
        else:
            entry.where = ACTIVE
            self._push(entry.pod.uid)

    def gated(self, uid: str) -> bool:
        """Whether the pod is kept out by a PreEnqueue plugin."""
        entry = self._pods.get(uid)
        return entry is not None and entry.where == GATED

    def _admitted(self, pod: PodInfo) -> bool:
        return self._pre_enqueue is None or self._pre_enqueue(pod).is_success()

    def _push(self, uid: str) -> None:
        entry = self._pods[uid]
        if self._less is None:  # PrioritySort's order as a key: priority, then arrival
            heapq.heappush(self._active, (-entry.pod.priority, entry.added, next(self._seq), uid))
        else:
            heapq.heappush(
                self._active, _Ordered(self._less, QueuedPodInfo(entry.pod, entry.added), next(self._seq), uid)
            )


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
    "QueuedPod",
    "SchedulingQueue",
    "pre_enqueue_of",
]

"""The cluster events the scheduling queues follow: who moves parked pods.

kube-scheduler's informer handlers (pkg/scheduler/eventhandlers.go) write each watch event into
the cache and tell the scheduling queue (pkg/scheduler/backend/queue/scheduling_queue.go) what it
means for the pods waiting there. Here the cache (:class:`~app.cluster.cache.Cache`) records what
changed, as it applies the watch and its assumptions, in its :class:`ClusterEvents` (the storage
stores add their kinds' events: :meth:`ClusterEvents.record_event`). Three readers move pods:

- a standalone scheduler takes its pending pods from the pod index it follows
  (:meth:`~ClusterEvents.follow_index`, :meth:`~ClusterEvents.index_changes`: added, updated,
  gone) into its queue (``SchedulingQueue.apply``: ``addPodToSchedulingQueue``,
  ``updatePodInSchedulingQueue``, ``deletePodFromSchedulingQueue``); an assumed pod is left out
  until its assumption ends (``IsAssumedPod``);
- it moves its parked pods on the numbered cluster events, each with its old and new object
  (:meth:`~ClusterEvents.events_since`: ``SchedulingQueue.move_on``,
  ``MoveAllToActiveOrBackoffQueue`` with the rejecting plugins' queueing hints), and replays
  the events of a pod's attempt against it when it fails (``SchedulingQueue.failed``,
  ``determineSchedulingHintForInFlightPod``);
- in extender mode, kube-scheduler's parked pods: when capacity may have been freed
  (:attr:`ClusterEvents.freed_generation`), the :class:`~app.cluster.requeue.Requeuer`
  annotates the pods a filter rejected on every node, which moves them (``PriorityQueue.Update``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from app.framework import objects
from app.framework.events import ASSIGNED_POD, NODE, UNSCHEDULED_POD, ActionType, ClusterEvent, ObservedEvent
from app.framework.types import PodInfo

#: How many cluster events are kept at least for the schedulers' queues
#: (:meth:`ClusterEvents.events_since`); a queue that falls further behind moves every parked pod.
#: Each keeps references to its old and new objects (the cache's own records, never copies), so
#: at most ``2 x EVENT_LOG_SIZE`` superseded records stay alive for it.
EVENT_LOG_SIZE = 4096

#: a change of a followed index: the pod's UID and its record, ``None`` when it left the key
Change = tuple[str, "PodInfo | None"]


def node_events(old: objects.Node | None, new: objects.Node) -> list[ClusterEvent]:
    """The cluster events of a node's ADDED/MODIFIED (v1.36.3 pkg/scheduler/framework/events.go
    ``NodeSchedulingPropertiesChange``, in its extractors' order): ``Node/Add`` for a new node;
    for a changed one ``UpdateNodeTaint`` when ``spec.unschedulable`` was turned off,
    ``UpdateNodeAllocatable``, ``UpdateNodeLabel``, ``UpdateNodeTaint`` (taints),
    ``UpdateNodeAnnotation``, ``UpdateNodeDeclaredFeature``; none for a status heartbeat.
    Conditions are not kept, so never ``UpdateNodeCondition``."""
    if old is None:
        return [_NODE_ADD]
    out: list[ClusterEvent] = []
    old_meta, new_meta = old.metadata or objects.EMPTY_META, new.metadata or objects.EMPTY_META
    old_spec, new_spec = old.spec or _NO_SPEC, new.spec or _NO_SPEC
    old_status, new_status = old.status or _NO_STATUS, new.status or _NO_STATUS
    if bool(old_spec.unschedulable) != bool(new_spec.unschedulable) and not new_spec.unschedulable:
        out.append(_node(ActionType.UPDATE_NODE_TAINT))
    if (old_status.allocatable or {}) != (new_status.allocatable or {}):
        out.append(_node(ActionType.UPDATE_NODE_ALLOCATABLE))
    if (old_meta.labels or {}) != (new_meta.labels or {}):
        out.append(_node(ActionType.UPDATE_NODE_LABEL))
    if (old_spec.taints or []) != (new_spec.taints or []):
        out.append(_node(ActionType.UPDATE_NODE_TAINT))
    if (old_meta.annotations or {}) != (new_meta.annotations or {}):
        out.append(_node(ActionType.UPDATE_NODE_ANNOTATION))
    if (old_status.declared_features or []) != (new_status.declared_features or []):
        out.append(_node(ActionType.UPDATE_NODE_DECLARED_FEATURE))
    return out


def pod_events(old: PodInfo, new: PodInfo) -> list[ClusterEvent]:
    """The cluster events of a pod's update (v1.36.3 pkg/scheduler/framework/events.go
    ``PodSchedulingPropertiesChange``): on ``AssignedPod`` when ``new`` is on a node, else on
    ``UnschedulablePod``, ``UpdatePodLabel``, ``UpdatePodScaleDown`` (a request lowered or
    dropped), ``UpdatePodSchedulingGatesEliminated``, ``UpdatePodToleration`` (their count
    changed), ``UpdatePodGeneratedResourceClaim`` (``status.resourceClaimStatuses``), in that
    order; the general ``Update`` when none of those."""
    resource = ASSIGNED_POD if new.node_name else UNSCHEDULED_POD
    out: list[ClusterEvent] = []
    if old.labels != new.labels:
        out.append(ClusterEvent(resource, ActionType.UPDATE_POD_LABEL))
    if _scaled_down(old, new):
        out.append(ClusterEvent(resource, ActionType.UPDATE_POD_SCALE_DOWN))
    if old.scheduling_gates and not new.scheduling_gates:
        out.append(ClusterEvent(resource, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED))
    if len(old.tolerations) != len(new.tolerations):
        out.append(ClusterEvent(resource, ActionType.UPDATE_POD_TOLERATIONS))
    if old.resource_claim_statuses != new.resource_claim_statuses:
        out.append(ClusterEvent(resource, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM))
    return out or [ClusterEvent(resource, ActionType.UPDATE)]


def _scaled_down(old: PodInfo, new: PodInfo) -> bool:
    """``extractPodScaleDown``: a request of ``old`` that ``new`` lowers or drops."""
    try:
        new_requests = new.requests
        return any(name not in new_requests or value > new_requests[name] for name, value in old.requests.items())
    except ValueError:  # an unparsable quantity: no judgement
        return False


def _node(action: ActionType) -> ClusterEvent:
    return ClusterEvent(NODE, action)


_NO_SPEC = objects.NodeSpec()
_NO_STATUS = objects.NodeStatus()
_NODE_ADD = ClusterEvent(NODE, ActionType.ADD)


class PodSource(Protocol):
    """What the index feeds read of the cache (implemented by :class:`~app.cluster.cache.Cache`);
    each call takes the cache's lock."""

    def expire_assumed(self) -> None:
        """End the assumptions past their deadline (each is a change of its pod)."""
        ...

    def index_members(self, name: str) -> list[str]:
        """The UIDs in index ``name``, whatever their key. Raises ``KeyError`` for an unknown index."""
        ...

    def unassumed(self, name: str, key: str, uids: Iterable[str]) -> list[Change]:
        """``(uid, record)`` for each of ``uids`` not assumed onto a node now: its record when its
        key in index ``name`` is ``key``, else ``None``; in the order of ``uids``."""
        ...


class ClusterEvents:
    """The log of cluster events, the changes of the followed pod indexes, and the count of
    capacity freed; thread-safe (see the module doc).

    Written by ``pods`` (the cache, holding its own lock: the order is the cache's lock, then
    this one, and this object calls the cache only without its own lock) and by the storage
    stores; read by the schedulers and the requeuer.
    """

    def __init__(self, pods: PodSource) -> None:
        self._pods = pods
        self._lock = threading.Lock()
        #: ``_events[i]`` is event number ``_events_base + i``
        self._events: list[ObservedEvent] = []
        #: the pod UID whose own change each event is (its reservation dropped), ``""`` for others
        self._origins: list[str] = []
        self._events_base = 1
        #: the last event's number (0: none yet)
        self.event_seq = 0
        #: incremented whenever capacity may have been freed: a counted pod deleted (or gone
        #: terminal), a node added or changed, a reservation forgotten or expired
        self.freed_generation = 0
        #: index name -> the UIDs whose membership or record changed since the last
        #: :meth:`index_changes` (the indexes some scheduler follows: :meth:`follow_index`)
        self._feeds: dict[str, dict[str, None]] = {}
        #: the followed index names (read without the lock by the cache, which marks them)
        self.following: frozenset[str] = frozenset()
        #: called (from whichever thread recorded it) after an event or a followed pod's change:
        #: a scheduler's wake-up, so it does not wait out its idle poll (:meth:`on_change`)
        self._wakers: tuple[Callable[[], None], ...] = ()

    def on_change(self, waker: Callable[[], None]) -> None:
        """Call ``waker()`` after every recorded event and every change of a followed pod index;
        it must be cheap and thread-safe (it runs in the recording thread, under no lock)."""
        self._wakers = (*self._wakers, waker)

    def _wake(self) -> None:
        for waker in self._wakers:
            waker()

    # -- written by the cache and the storage stores --------------------------------------------------

    def record_event(
        self,
        resource: str,
        action: ActionType,
        origin: str = "",
        frees: bool = False,
        old: object = None,
        new: object = None,
        max_priority: int | None = None,
    ) -> None:
        """Record one cluster event (``fwk.EventResource`` ``resource``, ``action``) with its
        objects (``old``: ``None`` for an Add; ``new``: ``None`` for a Delete; the records the
        cache or the store holds, kept by reference): the cache's nodes and pods, or another
        watched kind (a storage object of :mod:`app.cluster.volumes`). ``origin``: the pod UID
        whose own reservation the event is (its Unreserve is no event for itself). ``frees``:
        capacity may have been freed (:attr:`freed_generation`). ``max_priority``: see
        :class:`~app.framework.events.ObservedEvent`. The log keeps the last
        :data:`EVENT_LOG_SIZE` to :data:`EVENT_LOG_SIZE` x 2."""
        self.record_events((ClusterEvent(resource, action),), origin, frees, old, new, max_priority)

    def record_events(
        self,
        events: Iterable[ClusterEvent],
        origin: str = "",
        frees: bool = False,
        old: object = None,
        new: object = None,
        max_priority: int | None = None,
    ) -> None:
        """:meth:`record_event` for each of ``events``, all of the same objects (a node's or a
        pod's update is one event per property changed, as upstream's handlers call
        ``MoveAllToActiveOrBackoffQueue`` once per event)."""
        with self._lock:
            if frees:
                self.freed_generation += 1
            for event in events:
                self.event_seq += 1
                self._events.append(ObservedEvent(event, old, new, max_priority))
                self._origins.append(origin)
            if len(self._events) > 2 * EVENT_LOG_SIZE:
                drop = len(self._events) - EVENT_LOG_SIZE
                del self._events[:drop]
                del self._origins[:drop]
                self._events_base += drop
        self._wake()

    def pod_changed(self, uid: str, indexes: Iterable[str] | None = None) -> None:
        """Pod ``uid`` may have changed in ``indexes`` (``None``: in every followed index; an
        index nobody follows is skipped)."""
        marked = False
        with self._lock:
            feeds = self._feeds
            for name in feeds if indexes is None else indexes:
                dirty = feeds.get(name)
                if dirty is not None:
                    dirty[uid] = None
                    marked = True
        if marked:
            self._wake()

    def relisted(self, members: Mapping[str, Iterable[str]]) -> None:
        """A relist of pods: every pod that was in a followed index (``members``: index name ->
        its UIDs before the relist) is a change."""
        with self._lock:
            for name, dirty in self._feeds.items():
                uids = members.get(name)
                if uids is not None:
                    dirty.update(dict.fromkeys(uids))

    # -- read by the queues ---------------------------------------------------------------------------

    def follow_index(self, name: str) -> None:
        """Record the changes of pod index ``name`` for :meth:`index_changes` (its current members
        are the first changes). Raises ``KeyError`` for an unknown index."""
        with self._lock:
            self._feeds[name] = {}
            self.following = frozenset(self._feeds)
        try:  # after the feed is in place: a change meanwhile is marked, not lost
            members = self._pods.index_members(name)
        except KeyError:
            with self._lock:
                del self._feeds[name]
                self.following = frozenset(self._feeds)
            raise
        with self._lock:
            self._feeds[name].update(dict.fromkeys(members))

    def index_changes(self, name: str, key: str) -> list[Change]:
        """The changes of followed index ``name`` since the last call (see :meth:`follow_index`),
        in the order they happened: ``(uid, record)`` for a pod whose key is ``key`` now (added or
        updated), ``(uid, None)`` for one that left it (deleted, bound, keyed otherwise). A pod
        assumed onto a node is left out until its assumption ends (confirmed: it leaves;
        forgotten or expired: it is a change again). Raises ``KeyError`` for an index not
        followed."""
        self._pods.expire_assumed()
        with self._lock:
            dirty = self._feeds[name]
            if not dirty:
                return []
            self._feeds[name] = {}
        return self._pods.unassumed(name, key, dirty)

    def events_since(self, seq: int, origin: str = "") -> tuple[int, list[ObservedEvent] | None]:
        """``(last, events)``: the cluster events after number ``seq`` up to number ``last``, each
        with its old and new object;
        ``events`` is ``None`` when some of them are no longer kept (treat it as every event).
        The events: a node added, deleted or changed in what scheduling reads
        (:func:`node_events`); an ``AssignedPod`` added (bound), updated (:func:`pod_events`),
        deleted or gone terminal, a reservation forgotten or expired (Delete, the assumed
        record as ``old``); a relist (the wildcard event); a storage object's change.
        ``origin``: leave out the events of that pod's own reservation."""
        with self._lock:
            if seq >= self.event_seq:
                return self.event_seq, []
            if seq + 1 < self._events_base:
                return self.event_seq, None
            first = seq + 1 - self._events_base
            if origin:
                origins = self._origins
                kept = [e for i, e in enumerate(self._events[first:], first) if origins[i] != origin]
                return self.event_seq, kept
            return self.event_seq, self._events[first:]


__all__ = ["EVENT_LOG_SIZE", "Change", "ClusterEvents", "PodSource", "node_events", "pod_events"]

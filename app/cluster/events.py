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
- it moves its parked pods on the numbered cluster events (:meth:`~ClusterEvents.events_since`:
  ``SchedulingQueue.move_on``, ``MoveAllToActiveOrBackoffQueue`` with the rejecting plugins'
  queueing hints), and a failed pod goes to backoffQ when an event of interest happened during
  its attempt (``SchedulingQueue.failed``, upstream's ``moveRequestCycle``);
- in extender mode, kube-scheduler's parked pods: when capacity may have been freed
  (:attr:`ClusterEvents.freed_generation`), the :class:`~app.cluster.requeue.Requeuer`
  annotates the pods a filter rejected on every node, which moves them (``PriorityQueue.Update``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Protocol

from app.framework import objects
from app.framework.events import ActionType, ClusterEvent
from app.framework.types import PodInfo

#: How many cluster events are kept at least for the schedulers' queues
#: (:meth:`ClusterEvents.events_since`); a queue that falls further behind moves every parked pod.
EVENT_LOG_SIZE = 4096

#: a change of a followed index: the pod's UID and its record, ``None`` when it left the key
Change = tuple[str, "PodInfo | None"]


def node_change(old: objects.Node | None, new: objects.Node) -> ActionType:
    """The cluster event of a node's ADDED/MODIFIED (kube-scheduler's
    ``nodeSchedulingPropertiesChange``, pkg/scheduler/eventhandlers.go): ``ADD`` for a new node;
    for a changed one the union of ``UPDATE_NODE_TAINT`` (taints or ``spec.unschedulable``),
    ``UPDATE_NODE_ALLOCATABLE``, ``UPDATE_NODE_LABEL`` and ``UPDATE_NODE_ANNOTATION``; ``0`` when
    none of those changed (a status heartbeat). Conditions are not kept, so never
    ``UPDATE_NODE_CONDITION``."""
    if old is None:
        return ActionType.ADD
    action = ActionType(0)
    old_meta, new_meta = old.metadata or objects.EMPTY_META, new.metadata or objects.EMPTY_META
    old_spec, new_spec = old.spec or _NO_SPEC, new.spec or _NO_SPEC
    if bool(old_spec.unschedulable) != bool(new_spec.unschedulable) or (old_spec.taints or []) != (
        new_spec.taints or []
    ):
        action |= ActionType.UPDATE_NODE_TAINT
    if (old.status.allocatable if old.status else None) != (new.status.allocatable if new.status else None):
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if (old_meta.labels or {}) != (new_meta.labels or {}):
        action |= ActionType.UPDATE_NODE_LABEL
    if (old_meta.annotations or {}) != (new_meta.annotations or {}):
        action |= ActionType.UPDATE_NODE_ANNOTATION
    return action


_NO_SPEC = objects.NodeSpec()


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
        self._events: list[ClusterEvent] = []
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

    # -- written by the cache and the storage stores --------------------------------------------------

    def record_event(self, resource: str, action: ActionType, origin: str = "", frees: bool = False) -> None:
        """Record one cluster event (``framework.GVK`` ``resource``, ``action``): the cache's
        nodes and pods, or another watched kind (a storage object of :mod:`app.cluster.volumes`).
        ``origin``: the pod UID whose own reservation the event is (its Unreserve is no event for
        itself). ``frees``: capacity may have been freed (:attr:`freed_generation`). The log keeps
        the last :data:`EVENT_LOG_SIZE` to :data:`EVENT_LOG_SIZE` x 2."""
        with self._lock:
            if frees:
                self.freed_generation += 1
            self.event_seq += 1
            self._events.append(ClusterEvent(resource, action))
            self._origins.append(origin)
            if len(self._events) > 2 * EVENT_LOG_SIZE:
                drop = len(self._events) - EVENT_LOG_SIZE
                del self._events[:drop]
                del self._origins[:drop]
                self._events_base += drop

    def pod_changed(self, uid: str, indexes: Iterable[str] | None = None) -> None:
        """Pod ``uid`` may have changed in ``indexes`` (``None``: in every followed index; an
        index nobody follows is skipped)."""
        with self._lock:
            feeds = self._feeds
            for name in feeds if indexes is None else indexes:
                dirty = feeds.get(name)
                if dirty is not None:
                    dirty[uid] = None

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

    def events_since(self, seq: int, origin: str = "") -> tuple[int, list[ClusterEvent] | None]:
        """``(last, events)``: the cluster events after number ``seq`` up to number ``last``;
        ``events`` is ``None`` when some of them are no longer kept (treat it as every event).
        The events: a node added, deleted or changed in what scheduling reads (allocatable,
        labels, taints, ``spec.unschedulable``, annotations); a pod assigned to a node (Add), one
        whose labels changed (UpdatePodLabel), one deleted or gone terminal, a reservation
        forgotten or expired (Delete); a relist (every event); a storage object's change.
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


__all__ = ["EVENT_LOG_SIZE", "Change", "ClusterEvents", "PodSource", "node_change"]

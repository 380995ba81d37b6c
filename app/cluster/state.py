"""The cluster-state cache: nodes, pods, per-node aggregates and the assumed-pod ledger.

Written by the reflectors' threads (:mod:`app.cluster.reflector`), read by requests through an
immutable :class:`Snapshot`. The model is kube-scheduler's scheduler cache
(``pkg/scheduler/backend/cache/cache.go``): a pod counts on a node when the API server shows it
bound there (``spec.nodeName``) or when this service bound it and the watch has not confirmed the
binding yet (an *assumed* pod, ``AssumePod``/``FinishBinding``/``ForgetPod``). An assumption the
watch never confirms expires after ``assumed_ttl`` seconds (``cleanupAssumedPods``), so a lost
binding cannot hold capacity for ever; a deleted pod frees what it held at once.

Units follow :class:`app.framework.types.NodeUsage`: cpu in millicores, memory and storage in
bytes, other resources as counts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from app.cluster.node_tree import NodeTree
from app.framework import objects
from app.framework.events import NODE, POD, WILDCARD, ActionType, ClusterEvent
from app.framework.handle import ClusterNeeds, PodIndex, PoolSpec, Reservation
from app.framework.status import Status
from app.framework.types import EMPTY_USAGE, NodeInfo, NodeUsage, PodInfo

#: ``labels(namespace)``: a namespace's labels, ``None`` when it is not known
NamespaceLabels = Callable[[str], "Mapping[str, str] | None"]
#: ``check(node_info)`` at reservation time (the Reserve plugins): ``SUCCESS`` to admit the pod.
ReserveCheck = Callable[[NodeInfo], Status]

log = logging.getLogger(__name__)

#: Pod phases that free a pod's resources; kube-scheduler's pod informer excludes them with the
#: field selector ``status.phase!=Succeeded,status.phase!=Failed``.
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
KINDS = ("nodes", "pods")


@dataclass
class _Assumption:
    pod: PodInfo
    node: str
    deadline: float
    #: a binding cycle holds it (until ``finish_binding``)
    binding: bool = True


@dataclass
class _KindState:
    synced: bool = False
    #: monotonic time since when list/watch has been failing; ``None`` while connected
    failing_since: float | None = None
    last_error: str = ""
    #: monotonic time of the last completed list or working watch; ``None`` before the first
    ok_at: float | None = None
    relists: int = 0
    watch_restarts: int = 0
    errors: int = 0


class Snapshot:
    """An immutable view of the cache for one request.

    ``nodes`` maps node name -> :class:`NodeInfo` (with :attr:`NodeInfo.usage`); a name may map to
    a NodeInfo whose ``node`` is ``None`` when pods are bound to a node the node watch has not
    shown yet. ``known`` is the part of ``nodes`` whose node object is known. ``synced`` tells
    whether both reflectors had completed their first list when the snapshot was taken. ``order``:
    the names of ``known`` in the node tree's order (:mod:`app.cluster.node_tree`; ``None``: the
    order of ``known``).
    """

    __slots__ = (
        "_list",
        "_namespaces",
        "_order",
        "_pools",
        "changed",
        "generation",
        "known",
        "nodes",
        "nominated",
        "synced",
    )

    def __init__(
        self,
        nodes: Mapping[str, NodeInfo],
        known: Mapping[str, NodeInfo],
        synced: bool,
        nominated: Mapping[str, tuple[PodInfo, ...]] | None = None,
        pools: Sequence[PoolSpec] = (),
        order: Sequence[str] | None = None,
        namespaces: NamespaceLabels | None = None,
        generation: int = 0,
        changed: frozenset[str] | None = None,
    ) -> None:
        self.nodes = nodes
        #: the cluster state's count of the snapshots it built, this one's (0: not the state's)
        self.generation = generation
        #: the node names whose NodeInfo may differ from the snapshot of ``generation - 1`` (a
        #: node or its pods changed; ``None``: unknown): every other name maps to the same object
        self.changed = changed
        #: the NodeInfos whose node object is known (what ``NodeNames`` resolve to)
        self.known = known
        self.synced = synced
        #: node name -> the pending pods nominated to it (:meth:`ClusterState.nominated`)
        self.nominated = nominated or {}
        self._pools = pools
        self._order = order
        self._list: tuple[NodeInfo, ...] | None = None
        self._namespaces = namespaces

    def with_nominated(self, info: NodeInfo, pod: PodInfo) -> NodeInfo:
        """``info`` with the pods nominated to its node whose priority is at least ``pod``'s
        (``pod`` itself excepted) counted as if they ran there, as kube-scheduler's
        ``addNominatedPods`` does before Filter (pkg/scheduler/framework/runtime/framework.go,
        ``RunFilterPluginsWithNominatedPods``), so a preemptor's room is not given away. ``info``
        itself when none apply."""
        nominated = self.nominated.get(info.name, ())
        return self.with_pods(info, [p for p in nominated if p.uid != pod.uid and p.priority >= pod.priority])

    def with_pods(self, info: NodeInfo, pods: Sequence[PodInfo]) -> NodeInfo:
        """``info`` with ``pods`` counted as if bound there (those it already counts excepted),
        ``info`` itself when there are none: the pods nominated to the node, or the standalone
        scheduler's placements whose binding cycle has not reserved them yet, as
        kube-scheduler's scheduling cycle assumes a pod before the next one is scheduled."""
        if not pods:
            return info
        counted = {p.uid for p in info.usage.pods}
        extra = tuple(p for p in pods if p.uid not in counted)
        if not extra:
            return info
        usage = info.usage
        return NodeInfo(info.name, info.node, _account(usage, (*usage.pods, *extra), extra, 1, self._pools))

    def without_pods(self, info: NodeInfo, pods: Sequence[PodInfo]) -> NodeInfo:
        """``info`` with ``pods`` no longer counted (preemption's dry run: the node as it would be
        once they are gone; ``NodeInfo.RemovePod``)."""
        gone = {p.uid for p in pods}
        removed = tuple(p for p in info.usage.pods if p.uid in gone)
        if not removed:
            return info
        usage = info.usage
        kept = tuple(p for p in usage.pods if p.uid not in gone)
        return NodeInfo(info.name, info.node, _account(usage, kept, removed, -1, self._pools))

    def get(self, name: str) -> NodeInfo | None:
        """The cached NodeInfo of ``name`` when the node object is known, else ``None``."""
        return self.known.get(name)

    def list(self) -> list[NodeInfo]:
        """Every NodeInfo whose node object is known, in the node tree's order (round robin
        across zones: ``nodeInfoList``)."""
        if self._list is None:
            known = self.known
            self._list = tuple(known.values()) if self._order is None else tuple(known[n] for n in self._order)
        return list(self._list)

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The labels of ``namespace`` (``GetNamespaceLabelsSnapshot``); ``None`` when it is not
        known or namespaces are not watched (no plugin declared ``ClusterNeeds.namespaces``)."""
        return self._namespaces(namespace) if self._namespaces is not None else None

    def usage(self, name: str) -> NodeUsage | None:
        """What is accounted on ``name`` (``None`` when nothing is)."""
        info = self.nodes.get(name)
        return info.usage if info is not None else None

    def pod(self, node: str, uid: str) -> PodInfo | None:
        """The pod with ``uid`` among those accounted on ``node``."""
        info = self.nodes.get(node)
        if info is None:
            return None
        for pod in info.usage.pods:
            if pod.uid == uid:
                return pod
        return None


#: How many cluster events the state keeps at least for the schedulers' queues
#: (:meth:`ClusterState.events_since`); a queue that falls further behind moves every parked pod.
EVENT_LOG_SIZE = 4096


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


class ClusterState:
    """Nodes, pods, per-node :class:`NodeUsage` and the assumed-pod ledger; thread-safe.

    ``assumed_ttl``: seconds an assumed pod counts on its node without the watch confirming the
    binding. ``keep_annotations``: the pod annotation keys records keep (policies register theirs
    with :meth:`want_pod_annotations`). ``stale_after``: seconds of failing list/watch after which
    :meth:`ready` reports not ready. ``clock``: a monotonic clock in seconds (tests pass their own).
    """

    def __init__(
        self,
        assumed_ttl: float = 30.0,
        keep_annotations: Iterable[str] = (),
        stale_after: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.assumed_ttl = assumed_ttl
        self.stale_after = stale_after
        self._clock = clock
        self._keep_annotations = frozenset(keep_annotations)
        #: records keep their containers' images and nodes their status.images (ImageLocality)
        self.keep_images = False
        self._pools: list[PoolSpec] = []
        self._indexes: dict[str, tuple[PodIndex, dict[str, dict[str, PodInfo]], dict[str, str]]] = {}
        self._lock = threading.Lock()
        self._views: dict[str, objects.Node] = {}
        self._pods: dict[str, PodInfo] = {}
        self._ledger: dict[str, _Assumption] = {}
        self._next_deadline = float("inf")
        self._placed: dict[str, tuple[str, PodInfo]] = {}
        self._usage: dict[str, NodeUsage] = {}
        self._infos: dict[str, NodeInfo] = {}
        self._known: dict[str, NodeInfo] = {}
        #: the known nodes by zone (``nodeTree``) and, until it changes, its order
        self._tree = NodeTree()
        self._order: tuple[str, ...] | None = None
        self._dirty: set[str] = set()
        #: the names flushed since the last snapshot (:attr:`Snapshot.changed`), and its generation
        self._flushed: set[str] = set()
        self._generation = 0
        self._snapshot: Snapshot | None = None
        self._kinds = {kind: _KindState() for kind in KINDS}
        self.confirmed = 0
        self.expired = 0
        #: incremented whenever capacity may have been freed: a counted pod deleted (or gone
        #: terminal), a node added or changed, a reservation forgotten or expired
        self.freed_generation = 0
        #: the cluster events so far (:meth:`events_since`): ``_events[i]`` is event number
        #: ``_events_base + i``; ``event_seq`` is the last one's number
        self._events: list[ClusterEvent] = []
        #: the pod UID whose own change each event is (its reservation dropped), ``""`` for others
        self._origins: list[str] = []
        self._events_base = 1
        self.event_seq = 0
        #: the watched namespaces' labels by name (set when a plugin needs them:
        #: :class:`~app.cluster.namespaces.NamespaceStore`); every Snapshot reads through it
        self.namespace_labels: NamespaceLabels | None = None
        #: index name -> the UIDs whose membership or record changed since the last
        #: :meth:`index_changes` (indexes some consumer follows: :meth:`follow_index`)
        self._feeds: dict[str, dict[str, None]] = {}
        self.add_index(PodIndex(NOMINATED, _nominated_node))

    # -- registration (before the reflectors start) ------------------------------------------------

    def want_pod_annotations(self, keys: Iterable[str]) -> None:
        """Keep these pod annotation keys in pod records (call before the reflectors start)."""
        self._keep_annotations = self._keep_annotations | frozenset(keys)

    @property
    def keep_annotations(self) -> frozenset[str]:
        """The pod annotation keys pod records keep."""
        return self._keep_annotations

    def register(self, plugin: str, needs: ClusterNeeds) -> None:
        """Keep what ``plugin`` declared (call before the reflectors start): its pools (a pool
        name may be counted once: ``ValueError`` when another plugin counts it already), pod
        indexes (one per name), pod annotation keys, and images."""
        for pool in needs.pools:
            if self.has_pool(pool.name):
                raise ValueError(f"{plugin}: resource pool {pool.name!r} is counted already: give each its own name")
            self.add_pool(pool)
        for index in needs.indexes:
            if not self.has_index(index.name):
                self.add_index(index)
        if needs.pod_annotations:
            self.want_pod_annotations(needs.pod_annotations)
        if needs.images:
            self.keep_images = True

    def add_pool(self, pool: PoolSpec) -> None:
        """Count ``pool`` per node. Raises ``ValueError`` if the name is taken."""
        with self._lock:
            if any(p.name == pool.name for p in self._pools):
                raise ValueError(f"resource pool {pool.name!r} is already registered")
            self._pools.append(pool)
            self._rebuild_usage()

    def add_index(self, index: PodIndex) -> None:
        """Index the watched pods by ``index.key``. Raises ``ValueError`` if the name is taken."""
        with self._lock:
            if index.name in self._indexes:
                raise ValueError(f"pod index {index.name!r} is already registered")
            self._indexes[index.name] = (index, {}, {})
            for pod in self._pods.values():
                self._index_pod(pod)

    def indexed(self, name: str, key: str, unassumed: bool = False) -> tuple[PodInfo, ...]:
        """The watched pods whose key in index ``name`` is ``key`` (``unassumed``: except those
        assumed onto a node and not yet shown bound). Raises ``KeyError`` for an unknown index."""
        with self._lock:
            members = self._indexes[name][1].get(key, {}).values()
            if unassumed and self._ledger:
                ledger = self._ledger
                return tuple(p for p in members if p.uid not in ledger)
            return tuple(members)

    def follow_index(self, name: str) -> None:
        """Record the changes of index ``name`` for :meth:`index_changes` (its current members
        are the first changes). Raises ``KeyError`` for an unknown index."""
        with self._lock:
            members = self._indexes[name][2]
            self._feeds[name] = dict.fromkeys(members)

    def index_changes(self, name: str, key: str) -> list[tuple[str, PodInfo | None]]:
        """The changes of index ``name`` since the last call (see :meth:`follow_index`), in the
        order they happened: ``(uid, record)`` for a pod whose key is ``key`` now (added or
        updated), ``(uid, None)`` for one that left it (deleted, bound, keyed otherwise). A pod
        assumed onto a node is left out until its assumption ends (confirmed: it leaves;
        forgotten or expired: it is a change again)."""
        with self._lock:
            self._expire()
            dirty = self._feeds[name]
            if not dirty:
                return []
            self._feeds[name] = {}
            members = self._indexes[name][1].get(key, {})
            ledger = self._ledger
            return [(uid, members.get(uid)) for uid in dirty if uid not in ledger]

    def _changed(self, uid: str) -> None:
        """``uid`` may have changed for every followed index (under the lock)."""
        for dirty in self._feeds.values():
            dirty[uid] = None

    def has_index(self, name: str) -> bool:
        """Whether index ``name`` is registered."""
        with self._lock:
            return name in self._indexes

    def has_pool(self, name: str) -> bool:
        """Whether pool ``name`` is registered."""
        with self._lock:
            return any(p.name == name for p in self._pools)

    # -- writes from the node reflector ------------------------------------------------------------

    def replace_nodes(self, nodes: Iterable[objects.Node]) -> None:
        """Replace every node (a completed list); nodes absent from ``nodes`` are removed."""
        views = {n.metadata.name: n for n in nodes if n.metadata is not None and n.metadata.name}
        with self._lock:
            tree, old = self._tree, self._views
            for name in old.keys() - views.keys():
                tree.remove_node(name, _labels(old[name]))
            for name, node in views.items():
                if name in old:
                    tree.update_node(name, _labels(old[name]), _labels(node))
                else:
                    tree.add_node(name, _labels(node))
            self._order = None
            self._dirty.update(self._views.keys() ^ views.keys())
            self._dirty.update(views)
            self._views = views
            self._emit(WILDCARD, ActionType.ALL)  # a relist: anything may have changed
            self._touch()

    def upsert_node(self, node: objects.Node) -> None:
        """An ADDED or MODIFIED node; a change of what scheduling reads is a cluster event
        (:func:`node_change`), a status heartbeat is none."""
        name = node.metadata.name if node.metadata is not None else None
        if not name:
            return
        with self._lock:
            old = self._views.get(name)
            action = node_change(old, node)
            if old is None:
                self._tree.add_node(name, _labels(node))
                self._order = None
            elif self._tree.update_node(name, _labels(old), _labels(node)):
                self._order = None
            self._views[name] = node
            self._dirty.add(name)
            if action:
                self.freed_generation += 1
                self._emit(NODE, action)
            self._touch()

    def delete_node(self, node: objects.Node) -> None:
        """A DELETED node. Pods still bound to it keep counting until they are deleted."""
        name = node.metadata.name if node.metadata is not None else None
        with self._lock:
            old = self._views.pop(name, None) if name else None
            if name and old is not None:
                self._tree.remove_node(name, _labels(old))
                self._order = None
                self._dirty.add(name)
                self._emit(NODE, ActionType.DELETE)
                self._touch()

    # -- cluster events (the schedulers' queueing hints) -------------------------------------------

    def _emit(self, resource: str, action: ActionType, origin: str = "") -> None:
        """Record one cluster event (under the lock), ``origin`` the pod UID whose own reservation
        it is; the log keeps the last :data:`EVENT_LOG_SIZE` to :data:`EVENT_LOG_SIZE` x 2."""
        self.event_seq += 1
        self._events.append(ClusterEvent(resource, action))
        self._origins.append(origin)
        if len(self._events) > 2 * EVENT_LOG_SIZE:
            drop = len(self._events) - EVENT_LOG_SIZE
            del self._events[:drop]
            del self._origins[:drop]
            self._events_base += drop

    def record_event(self, resource: str, action: ActionType) -> None:
        """Record a cluster event of another watched kind (a storage object of
        :mod:`app.cluster.volumes`: ``framework.GVK`` ``resource``, ``action``) in the log the
        schedulers' queues read (:meth:`events_since`). Call it without holding another lock
        that a Reserve check may take (the cache's lock is taken here)."""
        with self._lock:
            self._emit(resource, action)

    def events_since(self, seq: int, origin: str = "") -> tuple[int, list[ClusterEvent] | None]:
        """``(last, events)``: the cluster events after number ``seq`` up to number ``last``;
        ``events`` is ``None`` when some of them are no longer kept (treat it as every event).
        The events: a node added, deleted or changed in what scheduling reads (allocatable,
        labels, taints, ``spec.unschedulable``, annotations); a pod assigned to a node (Add), one
        whose labels changed (UpdatePodLabel), one deleted or gone terminal, a reservation
        forgotten or expired (Delete); a relist (every event). ``origin``: leave out the events of
        that pod's own reservation (its Unreserve is no event for itself)."""
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

    # -- writes from the pod reflector -------------------------------------------------------------

    def record(self, pod: objects.Pod) -> PodInfo:
        """The slim record the cache keeps for ``pod`` (computed outside the lock)."""
        return PodInfo.record(pod, self._keep_annotations, keep_images=self.keep_images)

    def replace_pods(self, pods: Iterable[PodInfo]) -> None:
        """Replace every pod (a completed list). Assumptions stay: they are confirmed, dropped or
        expired by what the list shows."""
        records = {p.uid: p for p in pods if p.uid and p.phase not in TERMINAL_PHASES}
        with self._lock:
            for name, dirty in self._feeds.items():
                dirty.update(dict.fromkeys(self._indexes[name][2]))
            self._pods = records
            for _, keys, by_uid in self._indexes.values():
                keys.clear()
                by_uid.clear()
            for pod in records.values():
                self._index_pod(pod)
            for uid, pod in records.items():
                self._settle_assumption(uid, pod)
            self._rebuild_usage()
            self._emit(WILDCARD, ActionType.ALL)  # a relist: anything may have changed

    def upsert_pod(self, pod: PodInfo) -> None:
        """An ADDED or MODIFIED pod (a terminal phase counts as a deletion)."""
        if not pod.uid:
            return
        if pod.phase in TERMINAL_PHASES:
            self.delete_pod(pod)
            return
        with self._lock:
            if pod.node_name:
                prior = self._pods.get(pod.uid)
                if prior is None or prior.node_name != pod.node_name:
                    self._emit(POD, ActionType.ADD)  # assigned to a node (AssignedPodAdd)
                elif prior.labels != pod.labels:
                    self._emit(POD, ActionType.UPDATE_POD_LABEL)
            self._pods[pod.uid] = pod
            self._index_pod(pod)
            self._settle_assumption(pod.uid, pod)
            self._recount(pod.uid)
            self._touch()

    def delete_pod(self, pod: PodInfo) -> None:
        """A DELETED pod: whatever it held (bound or assumed) is freed."""
        with self._lock:
            if pod.uid in self._placed:
                self.freed_generation += 1
                self._emit(POD, ActionType.DELETE)
            self._pods.pop(pod.uid, None)
            self._unindex_pod(pod.uid)
            self._ledger.pop(pod.uid, None)
            self._recount(pod.uid)
            self._touch()

    def seed(self, nodes: Iterable[objects.Node], pods: Iterable[objects.Pod]) -> None:
        """Load ``nodes`` and ``pods`` as a completed list of each would, and mark every kind
        synced (a :meth:`track_kind` one as listed empty): cluster state without an API server
        (``replay --cluster-state``, tests).

        Raises :class:`~app.framework.types.ObjectDecodeError` (a ``ValueError``) for a malformed
        pod quantity.
        """
        self.replace_nodes(nodes)
        self.replace_pods([self.record(p) for p in pods])
        for kind in list(self._kinds):
            self.mark_synced(kind)

    # -- reflector health --------------------------------------------------------------------------

    def track_kind(self, kind: str) -> None:
        """Count ``kind``'s list and watch in the state's health as nodes' and pods' (the
        namespaces a plugin needs): :meth:`has_synced` and :meth:`ready` wait for it too."""
        with self._lock:
            self._kinds.setdefault(kind, _KindState())

    def mark_synced(self, kind: str) -> None:
        """``kind`` (``nodes``, ``pods``, or a :meth:`track_kind` one) completed a list."""
        with self._lock:
            state = self._kinds[kind]
            if not state.synced:
                log.info("cluster state: %s synced", kind)
            state.synced = True
            state.failing_since = None
            state.ok_at = self._clock()
            self._snapshot = None

    def mark_ok(self, kind: str) -> None:
        """``kind``'s list or watch is working."""
        with self._lock:
            state = self._kinds[kind]
            state.failing_since = None
            state.ok_at = self._clock()

    def mark_failing(self, kind: str, error: str) -> None:
        """``kind``'s list or watch failed with ``error``."""
        with self._lock:
            state = self._kinds[kind]
            state.errors += 1
            state.last_error = error
            if state.failing_since is None:
                state.failing_since = self._clock()

    def count(self, kind: str, what: str) -> None:
        """Count a ``relist`` or a ``watch_restart`` of ``kind`` (for metrics)."""
        with self._lock:
            state = self._kinds[kind]
            if what == "relist":
                state.relists += 1
            else:
                state.watch_restarts += 1

    def has_synced(self) -> bool:
        """Whether nodes, pods (and the :meth:`track_kind` kinds) completed their first list."""
        with self._lock:
            return self._synced()

    def _synced(self) -> bool:
        return all(s.synced for s in self._kinds.values())

    def ready(self) -> tuple[bool, str]:
        """``(ready, reason)``: synced, and no reflector failing for longer than ``stale_after``."""
        now = self._clock()
        with self._lock:
            for kind, state in self._kinds.items():
                if not state.synced:
                    detail = f": {state.last_error}" if state.last_error else ""
                    return False, f"{kind} have not synced yet{detail}"
                if state.failing_since is not None and now - state.failing_since > self.stale_after:
                    return False, (
                        f"{kind} list/watch has failed for {now - state.failing_since:.0f}s "
                        f"(cache may be stale): {state.last_error}"
                    )
        return True, "synced"

    def stats(self) -> dict[str, float]:
        """Counters and sizes for metrics: nodes, pods, assumed pods, per-kind relists, watch
        restarts and errors, seconds since the last completed list or working watch (-1 before the
        first), confirmed and expired assumptions."""
        with self._lock:
            out: dict[str, float] = {
                "nodes": len(self._views),
                "pods": len(self._pods),
                "assumed_pods": len(self._ledger),
                "assumed_confirmed": self.confirmed,
                "assumed_expired": self.expired,
            }
            now = self._clock()
            for kind, state in self._kinds.items():
                out[f"{kind}_synced"] = 1 if state.synced else 0
                out[f"{kind}_since_ok"] = now - state.ok_at if state.ok_at is not None else -1
                out[f"{kind}_relists"] = state.relists
                out[f"{kind}_watch_restarts"] = state.watch_restarts
                out[f"{kind}_errors"] = state.errors
            return out

    # -- reads -------------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The current state as an immutable :class:`Snapshot` (shared until the next write)."""
        with self._lock:
            self._expire()
            if self._snapshot is None:
                self._flush()
                nominated = self._nominated() if self._indexes[NOMINATED][1] else None
                if self._order is None:
                    self._order = tuple(self._tree.list())
                self._generation += 1
                self._snapshot = Snapshot(
                    dict(self._infos),
                    dict(self._known),
                    self._synced(),
                    nominated,
                    tuple(self._pools),
                    self._order,
                    self.namespace_labels,
                    self._generation,
                    frozenset(self._flushed),
                )
                self._flushed.clear()
            return self._snapshot

    def pod(self, uid: str) -> PodInfo | None:
        """The watched pod with ``uid`` (bound or pending), or ``None``."""
        with self._lock:
            return self._pods.get(uid)

    def assumed(self) -> dict[str, str]:
        """Pod UID -> node of every unconfirmed assumption."""
        with self._lock:
            self._expire()
            return {uid: a.node for uid, a in self._ledger.items()}

    def placement(self, uid: str) -> str | None:
        """The node pod ``uid`` is bound to or assumed on, or ``None``."""
        with self._lock:
            self._expire()
            found = self._effective(uid)
            return found[0] if found is not None else None

    # -- the assumed-pod ledger --------------------------------------------------------------------

    def assume(self, pod: PodInfo, node: str, check: ReserveCheck | None = None) -> Reservation:
        """Atomically check and reserve: count ``pod`` on ``node`` before its binding exists
        (kube-scheduler's ``AssumePod``, together with the Reserve plugins: ``check``).

        ``check(node_info)`` sees the node with everything bound and assumed so far and may
        refuse (a full pool, no room); two concurrent calls never both pass a check for the last
        slot, because both run under the cache's lock. Assuming the same pod on the same node
        again renews the assumption. Refused when the pod is bound or assumed on another node.
        ``pod`` is the cache's record when the watch has shown the pod, else the pod as read from
        the API server (or a placeholder known only by identity).
        """
        uid = pod.uid
        with self._lock:
            self._expire()
            cached = self._pods.get(uid)
            if cached is not None and cached.node_name:
                if cached.node_name == node:
                    return Reservation(True, already_bound=True)
                return Reservation(False, reason=f"pod is already bound to node {cached.node_name!r}")
            existing = self._ledger.get(uid)
            if existing is not None and (existing.node != node or existing.binding):
                return Reservation(False, reason=f"pod is being bound to node {existing.node!r}")
            candidate = cached if cached is not None else pod
            if check is not None:
                self._flush()
                if existing is not None:  # the node as it would be without this pod
                    del self._ledger[uid]
                    self._recount(uid)
                    self._flush()
                info = self._infos.get(node) or NodeInfo(node, self._views.get(node), EMPTY_USAGE)
                status = check(info)
                if not status.is_success():
                    if existing is not None:
                        self._ledger[uid] = existing
                        self._recount(uid)
                    self._touch()
                    return Reservation(False, reason=status.message, status=status)
            deadline = self._clock() + self.assumed_ttl
            self._ledger[uid] = _Assumption(candidate, node, deadline)
            self._next_deadline = min(self._next_deadline, deadline)
            self._recount(uid)
            self._touch()
            return Reservation(True)

    def finish_binding(self, uid: str) -> None:
        """The binding cycle of ``uid`` ended with its assumption still standing (bound, or a
        Binding whose outcome is unknown): the assumption now only waits for the watch or its
        expiry, and a new cycle may assume the pod again on the same node (``FinishBinding``)."""
        with self._lock:
            existing = self._ledger.get(uid)
            if existing is not None:
                existing.binding = False

    def forget(self, uid: str, node: str) -> None:
        """Drop the assumption of ``uid`` on ``node`` (its binding failed: ``ForgetPod``)."""
        with self._lock:
            existing = self._ledger.get(uid)
            if existing is not None and existing.node == node:
                del self._ledger[uid]
                self._recount(uid)
                self._changed(uid)
                self.freed_generation += 1
                self._emit(POD, ActionType.DELETE, uid)  # the reserved room is free again
                self._touch()

    # -- internals (hold the lock) -----------------------------------------------------------------

    def _index_pod(self, pod: PodInfo) -> None:
        feeds = self._feeds
        for name, (index, keys, by_uid) in self._indexes.items():
            key = index.key(pod)
            old = by_uid.get(pod.uid)
            if feeds and (key is not None or old is not None) and name in feeds:
                feeds[name][pod.uid] = None
            if old is not None and old != key:
                members = keys.get(old)
                if members is not None:
                    members.pop(pod.uid, None)
                    if not members:
                        del keys[old]
            if key is None:
                by_uid.pop(pod.uid, None)
            else:
                keys.setdefault(key, {})[pod.uid] = pod
                by_uid[pod.uid] = key

    def _unindex_pod(self, uid: str) -> None:
        feeds = self._feeds
        for name, (_, keys, by_uid) in self._indexes.items():
            old = by_uid.pop(uid, None)
            if old is not None:
                if name in feeds:
                    feeds[name][uid] = None
                members = keys.get(old)
                if members is not None:
                    members.pop(uid, None)
                    if not members:
                        del keys[old]

    def _touch(self) -> None:
        self._snapshot = None

    def _settle_assumption(self, uid: str, pod: PodInfo) -> None:
        assumption = self._ledger.get(uid)
        if assumption is None:
            return
        if pod.node_name:
            del self._ledger[uid]
            if pod.node_name == assumption.node:
                self.confirmed += 1
            else:
                log.warning(
                    "pod %s was assumed on %s but the API server shows it bound to %s",
                    pod.key(),
                    assumption.node,
                    pod.node_name,
                )
        else:
            assumption.pod = pod  # the real record (requests) replaces the placeholder

    def _expire(self) -> None:
        now = self._clock()
        if now < self._next_deadline:
            return
        expired = [uid for uid, a in self._ledger.items() if a.deadline <= now]
        for uid in expired:
            a = self._ledger.pop(uid)
            self._changed(uid)
            self.expired += 1
            log.warning(
                "assumed pod %s on %s expired: the watch did not show it bound within %.0fs",
                a.pod.key(),
                a.node,
                self.assumed_ttl,
            )
            self._recount(uid)
        self._next_deadline = min((a.deadline for a in self._ledger.values()), default=float("inf"))
        if expired:
            self.freed_generation += 1
            self._emit(POD, ActionType.DELETE)
            self._touch()

    def _effective(self, uid: str) -> tuple[str, PodInfo] | None:
        pod = self._pods.get(uid)
        if pod is not None and pod.node_name:
            return pod.node_name, pod
        assumption = self._ledger.get(uid)
        if assumption is not None:
            return assumption.node, assumption.pod
        return None

    def nominated(self) -> dict[str, tuple[PodInfo, ...]]:
        """Node name -> the pending pods nominated to it (``status.nominatedNodeName``: a
        preemptor waiting for its victims to leave), except those this service already assumed
        onto a node at bind. Usually empty. Each :class:`Snapshot` carries it."""
        with self._lock:
            return self._nominated()

    def _nominated(self) -> dict[str, tuple[PodInfo, ...]]:
        out: dict[str, tuple[PodInfo, ...]] = {}
        for node, pods in self._indexes[NOMINATED][1].items():
            waiting = tuple(p for p in pods.values() if p.uid not in self._ledger)
            if waiting:
                out[node] = waiting
        return out

    def _recount(self, uid: str) -> None:
        want = self._effective(uid)
        have = self._placed.get(uid)
        if want == have:  # same node, same record (PodInfo compares by identity)
            return
        if have is not None:
            old = self._usage.get(have[0], EMPTY_USAGE)
            kept = tuple(p for p in old.pods if p.uid != uid)
            self._usage[have[0]] = _account(old, kept, (have[1],), -1, self._pools)
            self._dirty.add(have[0])
            del self._placed[uid]
        if want is not None:
            old = self._usage.get(want[0], EMPTY_USAGE)
            self._usage[want[0]] = _account(old, (*old.pods, want[1]), (want[1],), 1, self._pools)
            self._dirty.add(want[0])
            self._placed[uid] = want

    def _rebuild_usage(self) -> None:
        grouped: dict[str, list[PodInfo]] = {}
        placed: dict[str, tuple[str, PodInfo]] = {}
        for uid in self._pods.keys() | self._ledger.keys():
            want = self._effective(uid)
            if want is not None:
                grouped.setdefault(want[0], []).append(want[1])
                placed[uid] = want
        self._dirty.update(self._usage.keys() | grouped.keys())
        self._usage = {node: _account(EMPTY_USAGE, tuple(pods), pods, 1, self._pools) for node, pods in grouped.items()}
        self._placed = placed
        self._touch()

    def _flush(self) -> None:
        self._flushed |= self._dirty
        for name in self._dirty:
            view = self._views.get(name)
            usage = self._usage.get(name)
            if usage is not None and not usage.pods:
                del self._usage[name]
                usage = None
            if view is None and usage is None:
                self._infos.pop(name, None)
            else:
                self._infos[name] = NodeInfo(name, view, usage or EMPTY_USAGE)
            if view is None:
                self._known.pop(name, None)
            else:
                self._known[name] = self._infos[name]
        self._dirty.clear()


#: The built-in pod index of pending pods by ``status.nominatedNodeName``.
NOMINATED = "cluster/nominated-node"


def _labels(node: objects.Node) -> Mapping[str, str] | None:
    return node.metadata.labels if node.metadata is not None else None


def _nominated_node(pod: PodInfo) -> str | None:
    return pod.nominated_node_name if pod.nominated_node_name and not pod.node_name else None


def _account(
    usage: NodeUsage, pods: tuple[PodInfo, ...], changed: Iterable[PodInfo], sign: int, pools: Sequence[PoolSpec]
) -> NodeUsage:
    """``usage`` with the ``changed`` pods' requests, non-zero requests and pool slots added
    (``sign`` 1) or taken away (-1); ``pods`` is the node's new pod list. Zero totals are dropped."""
    requested = dict(usage.requested)
    pool_usage = dict(usage.pool_usage)
    cpu, mem = usage.non_zero_requested
    for pod in changed:
        _add_counts(requested, pod.requests, sign)
        nz_cpu, nz_mem = pod.non_zero_requests
        cpu += sign * nz_cpu
        mem += sign * nz_mem
        if pools:
            _add_counts(pool_usage, {pool.name: pool.consumes(pod) for pool in pools}, sign)
    return NodeUsage(pods, requested, (cpu, mem), pool_usage)


def _add_counts(into: dict[str, int], amounts: Mapping[str, int], sign: int) -> None:
    for name, value in amounts.items():
        if value:
            total = into.get(name, 0) + sign * value
            if total:
                into[name] = total
            else:
                into.pop(name, None)


__all__ = [
    "KINDS",
    "TERMINAL_PHASES",
    "ClusterState",
    "ReserveCheck",
    "Snapshot",
]

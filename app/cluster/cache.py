"""The scheduler cache: nodes, pods, per-node aggregates, pools, pod indexes and the assumed pods.

Written by the reflectors' threads (:mod:`app.cluster.reflector`), read by requests and
scheduling cycles through an immutable :class:`~app.cluster.snapshot.Snapshot`. The model is
kube-scheduler's scheduler cache (pkg/scheduler/backend/cache/cache.go): a pod counts on a node
when the API server shows it bound there (``spec.nodeName``) or when this service bound it and
the watch has not confirmed the binding yet (an *assumed* pod: :meth:`Cache.assume_pod`,
:meth:`~Cache.finish_binding`, :meth:`~Cache.forget_pod`). An assumption the watch never confirms
expires after ``assumed_ttl`` seconds (``cleanupAssumedPods``), so a lost binding cannot hold
capacity for ever; a deleted pod frees what it held at once. The known nodes are kept by zone in
a :class:`~app.cluster.node_tree.NodeTree`, whose order :meth:`Snapshot.list` gives.

What changes as the watch is applied is recorded in :attr:`Cache.events` (:mod:`app.cluster.events`:
what the scheduling queues follow); whether the watched kinds synced is :attr:`Cache.health`'s
(:mod:`app.cluster.health`), which each snapshot carries.

Units follow :class:`app.framework.types.NodeUsage`: cpu in millicores, memory and storage in
bytes, other resources as counts.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from app.cluster.events import Change, ClusterEvents, node_events, pod_events
from app.cluster.health import SyncHealth
from app.cluster.node_tree import NodeTree
from app.cluster.snapshot import NamespaceLabels, Snapshot, account
from app.framework import objects
from app.framework.events import ASSIGNED_POD, NODE, WILDCARD, ActionType
from app.framework.handle import ClusterNeeds, PodIndex, PoolSpec, Reservation
from app.framework.status import Status
from app.framework.types import EMPTY_USAGE, Interner, NodeInfo, NodeUsage, PodInfo

#: ``check(node_info)`` at reservation time (the Reserve plugins): ``SUCCESS`` to admit the pod.
ReserveCheck = Callable[[NodeInfo], Status]

log = logging.getLogger(__name__)

#: Pod phases that free a pod's resources; kube-scheduler's pod informer excludes them with the
#: field selector ``status.phase!=Succeeded,status.phase!=Failed``.
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
#: The built-in pod index of pending pods by ``status.nominatedNodeName``.
NOMINATED = "cluster/nominated-node"


@dataclass
class _Assumption:
    pod: PodInfo
    node: str
    deadline: float
    #: a binding cycle holds it (until ``finish_binding``)
    binding: bool = True


class Cache:
    """Nodes, pods, per-node :class:`NodeUsage`, pools, pod indexes and the assumed pods;
    thread-safe (one lock; see the module doc).

    ``assumed_ttl``: seconds an assumed pod counts on its node without the watch confirming the
    binding. ``keep_annotations``: the pod annotation keys records keep (plugins add theirs:
    :meth:`register`). ``clock``: a monotonic clock in seconds (tests pass their own).
    ``health``: the watched kinds' sync health, which snapshots carry (a new :class:`SyncHealth`
    on ``clock`` when not given). :attr:`events`: what changed, for the queues
    (:class:`ClusterEvents`, built here over this cache).
    """

    def __init__(
        self,
        assumed_ttl: float = 30.0,
        keep_annotations: Iterable[str] = (),
        clock: Callable[[], float] = time.monotonic,
        health: SyncHealth | None = None,
    ) -> None:
        self.health = health if health is not None else SyncHealth(clock=clock)
        self.assumed_ttl = assumed_ttl
        self._clock = clock
        self._keep_annotations = frozenset(keep_annotations)
        #: one shared copy of equal tolerations, affinities and spread constraints among the records
        self._interner = Interner()
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
        self.confirmed = 0
        self.expired = 0
        #: the cluster events and pod changes the schedulers' queues follow (written under the lock)
        self.events = ClusterEvents(self)
        #: the watched namespaces' labels by name (set when a plugin needs them:
        #: :class:`~app.cluster.namespaces.NamespaceStore`); every Snapshot reads through it
        self.namespace_labels: NamespaceLabels | None = None
        self.add_index(PodIndex(NOMINATED, _nominated_node))
        #: told ``(pending, bound)`` when the watch shows a known pending pod bound, before the
        #: cache counts it on its node (the shadow scheduler, :mod:`app.shadow`); ``None``: off
        self.before_bind: Callable[[PodInfo, PodInfo], None] | None = None

    # -- registration (before the reflectors start) ------------------------------------------------

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
            self._keep_annotations = self._keep_annotations | frozenset(needs.pod_annotations)
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

    def index_members(self, name: str) -> list[str]:
        """The UIDs in index ``name``, whatever their key (:class:`~app.cluster.events.PodSource`).
        Raises ``KeyError`` for an unknown index."""
        with self._lock:
            return list(self._indexes[name][2])

    def unassumed(self, name: str, key: str, uids: Iterable[str]) -> list[Change]:
        """``(uid, record)`` for each of ``uids`` not assumed onto a node now: its record when its
        key in index ``name`` is ``key``, else ``None`` (:meth:`ClusterEvents.index_changes`)."""
        with self._lock:
            members = self._indexes[name][1].get(key, {})
            ledger = self._ledger
            return [(uid, members.get(uid)) for uid in uids if uid not in ledger]

    def expire_assumed(self) -> None:
        """End the assumptions past their deadline now (else the next read does)."""
        with self._lock:
            self._expire()

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
            self.events.record_event(WILDCARD, ActionType.ALL)  # a relist: anything may have changed
            self._touch()

    def upsert_node(self, node: objects.Node) -> None:
        """An ADDED or MODIFIED node; a change of what scheduling reads is a cluster event
        (:func:`node_events`, with the old and the new node), a status heartbeat is none."""
        name = node.metadata.name if node.metadata is not None else None
        if not name:
            return
        with self._lock:
            old = self._views.get(name)
            events = node_events(old, node)
            if old is None:
                self._tree.add_node(name, _labels(node))
                self._order = None
            elif self._tree.update_node(name, _labels(old), _labels(node)):
                self._order = None
            self._views[name] = node
            self._dirty.add(name)
            if events:
                self.events.record_events(events, frees=True, old=old, new=node)
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
                self.events.record_event(NODE, ActionType.DELETE, old=old)
                self._touch()

    # -- writes from the pod reflector -------------------------------------------------------------

    def record(self, pod: objects.Pod) -> PodInfo:
        """The slim record the cache keeps for ``pod`` (computed outside the lock)."""
        return PodInfo.record(pod, self._keep_annotations, self._interner, keep_images=self.keep_images)

    def replace_pods(self, pods: Iterable[PodInfo]) -> None:
        """Replace every pod (a completed list). Assumptions stay: they are confirmed, dropped or
        expired by what the list shows."""
        records = {p.uid: p for p in pods if p.uid and p.phase not in TERMINAL_PHASES}
        with self._lock:
            followed = self.events.following
            self.events.relisted({name: list(self._indexes[name][2]) for name in followed if name in self._indexes})
            self._pods = records
            for _, keys, by_uid in self._indexes.values():
                keys.clear()
                by_uid.clear()
            for pod in records.values():
                self._index_pod(pod)
            for uid, pod in records.items():
                self._settle_assumption(uid, pod)
            self._rebuild_usage()
            self.events.record_event(WILDCARD, ActionType.ALL)  # a relist: anything may have changed

    def upsert_pod(self, pod: PodInfo) -> None:
        """An ADDED or MODIFIED pod (a terminal phase counts as a deletion)."""
        if not pod.uid:
            return
        if pod.phase in TERMINAL_PHASES:
            self.delete_pod(pod)
            return
        if self.before_bind is not None and pod.node_name:
            prior = self._pods.get(pod.uid)  # only the pod reflector's thread writes pods
            if prior is not None and not prior.node_name:
                self.before_bind(prior, pod)  # outside the lock: it may take a snapshot
        with self._lock:
            prior = self._pods.get(pod.uid)
            if pod.node_name:
                if prior is None or prior.node_name != pod.node_name:  # assigned to a node (AssignedPodAdd)
                    self.events.record_event(ASSIGNED_POD, ActionType.ADD, new=pod)
                elif prior is not pod:  # AssignedPodUpdate, one event per property changed
                    self.events.record_events(pod_events(prior, pod), old=prior, new=pod)
            elif prior is not None and _nomination_dropped(prior, pod) and pod.uid not in self._placed:
                self._nominated_gone(prior)
            self._pods[pod.uid] = pod
            self._index_pod(pod)
            self._settle_assumption(pod.uid, pod)
            self._recount(pod.uid)
            self._touch()

    def delete_pod(self, pod: PodInfo) -> None:
        """A DELETED pod: whatever it held (bound or assumed) is freed."""
        with self._lock:
            old = self._pods.get(pod.uid) or pod
            if pod.uid in self._placed:
                self.events.record_event(ASSIGNED_POD, ActionType.DELETE, frees=True, old=old)
            elif old.nominated_node_name and not old.node_name:
                self._nominated_gone(old)
            self._pods.pop(pod.uid, None)
            self._unindex_pod(pod.uid)
            self._ledger.pop(pod.uid, None)
            self._recount(pod.uid)
            self._touch()

    def _nominated_gone(self, old: PodInfo) -> None:
        """A pending pod nominated to a node was deleted, or its nomination changed: the pods
        of at most its priority, which counted it on that node, may fit now (v1.36.3
        eventhandlers.go: ``AssignedPodDelete`` with ``getLEPriorityPreCheck``)."""
        self.events.record_event(ASSIGNED_POD, ActionType.DELETE, old=old, max_priority=old.priority)

    def seed(self, nodes: Iterable[objects.Node], pods: Iterable[objects.Pod]) -> None:
        """Load ``nodes`` and ``pods`` as a completed list of each would, and mark every kind
        synced in :attr:`health` (a :meth:`~SyncHealth.track_kind` one as listed empty): cluster
        state without an API server (``replay --cluster-state``, tests).

        Raises :class:`~app.framework.types.ObjectDecodeError` (a ``ValueError``) for a malformed
        pod quantity.
        """
        self.replace_nodes(nodes)
        self.replace_pods([self.record(p) for p in pods])
        for kind in self.health.kinds:
            self.health.mark_synced(kind)

    # -- reads -------------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The current state as an immutable :class:`Snapshot` (shared until the next write, or
        until every watched kind synced)."""
        with self._lock:
            self._expire()
            cached = self._snapshot
            if cached is not None and cached.synced:
                return cached
            synced = self.health.has_synced()
            if cached is not None and not synced:
                return cached
            self._flush()
            nominated = self._nominated() if self._indexes[NOMINATED][1] else None
            if self._order is None:
                self._order = tuple(self._tree.list())
            self._generation += 1
            self._snapshot = Snapshot(
                dict(self._infos),
                dict(self._known),
                synced,
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

    def stats(self) -> dict[str, float]:
        """For metrics: ``nodes``, ``pods`` and ``assumed_pods`` in the cache, and the assumptions
        ``assumed_confirmed`` by the watch and ``assumed_expired`` unconfirmed so far."""
        with self._lock:
            return {
                "nodes": len(self._views),
                "pods": len(self._pods),
                "assumed_pods": len(self._ledger),
                "assumed_confirmed": self.confirmed,
                "assumed_expired": self.expired,
            }

    # -- the assumed pods (AssumePod, FinishBinding, ForgetPod) ------------------------------------

    def assume_pod(self, pod: PodInfo, node: str, check: ReserveCheck | None = None) -> Reservation:
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

    def forget_pod(self, uid: str, node: str) -> None:
        """Drop the assumption of ``uid`` on ``node`` (its binding failed: ``ForgetPod``)."""
        with self._lock:
            existing = self._ledger.get(uid)
            if existing is not None and existing.node == node:
                del self._ledger[uid]
                self._recount(uid)
                self.events.pod_changed(uid)
                # the reserved room is free again (EventAssignedPodDelete with the assumed pod)
                self.events.record_event(ASSIGNED_POD, ActionType.DELETE, uid, True, _on_node(existing.pod, node))
                self._touch()

    # -- internals (hold the lock) -----------------------------------------------------------------

    def _index_pod(self, pod: PodInfo) -> None:
        followed = self.events.following
        changed: list[str] = []
        for name, (index, keys, by_uid) in self._indexes.items():
            key = index.key(pod)
            old = by_uid.get(pod.uid)
            if followed and (key is not None or old is not None) and name in followed:
                changed.append(name)
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
        if changed:
            self.events.pod_changed(pod.uid, changed)

    def _unindex_pod(self, uid: str) -> None:
        followed = self.events.following
        changed: list[str] = []
        for name, (_, keys, by_uid) in self._indexes.items():
            old = by_uid.pop(uid, None)
            if old is not None:
                if name in followed:
                    changed.append(name)
                members = keys.get(old)
                if members is not None:
                    members.pop(uid, None)
                    if not members:
                        del keys[old]
        if changed:
            self.events.pod_changed(uid, changed)

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
            self.events.record_event(ASSIGNED_POD, ActionType.DELETE, frees=True, old=_on_node(a.pod, a.node))
            self.events.pod_changed(uid)
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
            self._usage[have[0]] = account(old, kept, (have[1],), -1, self._pools)
            self._dirty.add(have[0])
            del self._placed[uid]
        if want is not None:
            old = self._usage.get(want[0], EMPTY_USAGE)
            self._usage[want[0]] = account(old, (*old.pods, want[1]), (want[1],), 1, self._pools)
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
        self._usage = {node: account(EMPTY_USAGE, tuple(pods), pods, 1, self._pools) for node, pods in grouped.items()}
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


def _labels(node: objects.Node) -> Mapping[str, str] | None:
    return node.metadata.labels if node.metadata is not None else None


def _nomination_dropped(old: PodInfo, new: PodInfo) -> bool:
    """``hasNominatedNodeNameChanged``: ``old`` was nominated and ``new`` is not, or elsewhere."""
    return bool(old.nominated_node_name) and old.nominated_node_name != new.nominated_node_name


def _nominated_node(pod: PodInfo) -> str | None:
    return pod.nominated_node_name if pod.nominated_node_name and not pod.node_name else None


def _on_node(pod: PodInfo, node: str) -> PodInfo:
    """The assumed pod as kube-scheduler's assumed copy (``spec.nodeName`` set): the old object of
    the Delete event of its forgotten or expired reservation."""
    if pod.node_name == node:
        return pod
    placed = copy.copy(pod)
    placed.node_name = node
    return placed


__all__ = ["NOMINATED", "TERMINAL_PHASES", "Cache", "ReserveCheck"]

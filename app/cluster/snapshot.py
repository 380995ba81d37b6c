"""The cache's snapshot for one request or scheduling cycle (kube-scheduler's ``Snapshot``,
pkg/scheduler/backend/cache/snapshot.go): the NodeInfos of one moment, immutable, in the node
tree's order; and how a node's :class:`~app.framework.types.NodeUsage` changes as pods are counted
on it or taken off (:func:`account`).

Units follow :class:`~app.framework.types.NodeUsage`: cpu in millicores, memory and storage in
bytes, other resources as counts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from app.framework.handle import PoolSpec
from app.framework.types import NodeInfo, NodeUsage, PodInfo

#: ``labels(namespace)``: a namespace's labels, ``None`` when it is not known
NamespaceLabels = Callable[[str], "Mapping[str, str] | None"]


class Snapshot:
    """An immutable view of the cache for one request.

    ``nodes`` maps node name -> :class:`NodeInfo` (with :attr:`NodeInfo.usage`); a name may map to
    a NodeInfo whose ``node`` is ``None`` when pods are bound to a node the node watch has not
    shown yet. ``known`` is the part of ``nodes`` whose node object is known. ``synced`` tells
    whether every watched kind had completed its first list when the snapshot was taken
    (:meth:`SyncHealth.has_synced <app.cluster.health.SyncHealth.has_synced>`). ``order``:
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
        #: the cache's count of the snapshots it built, this one's (0: not the cache's)
        self.generation = generation
        #: the node names whose NodeInfo may differ from the snapshot of ``generation - 1`` (a
        #: node or its pods changed; ``None``: unknown): every other name maps to the same object
        self.changed = changed
        #: the NodeInfos whose node object is known (what ``NodeNames`` resolve to)
        self.known = known
        self.synced = synced
        #: node name -> the pending pods nominated to it (:meth:`Cache.nominated <app.cluster.cache.Cache.nominated>`)
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
        return NodeInfo(info.name, info.node, account(usage, (*usage.pods, *extra), extra, 1, self._pools))

    def without_pods(self, info: NodeInfo, pods: Sequence[PodInfo]) -> NodeInfo:
        """``info`` with ``pods`` no longer counted (preemption's dry run: the node as it would be
        once they are gone; ``NodeInfo.RemovePod``)."""
        gone = {p.uid for p in pods}
        removed = tuple(p for p in info.usage.pods if p.uid in gone)
        if not removed:
            return info
        usage = info.usage
        kept = tuple(p for p in usage.pods if p.uid not in gone)
        return NodeInfo(info.name, info.node, account(usage, kept, removed, -1, self._pools))

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


def account(
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


__all__ = ["NamespaceLabels", "Snapshot", "account"]

"""A small in-memory :class:`~app.framework.handle.ClusterHandle` for plugin tests: the cluster
state's cache (:class:`~app.cluster.cache.Cache`, filled from documents, no API server),
the needs plugins declare, the pods nominated to nodes (a :class:`~app.framework.PodNominator`
filled from the seeded pods' ``status.nominatedNodeName``, as the scheduling queue fills it), and
Bindings recorded instead of sent. Stateful plugins are tested against it, not against a connected
``ClusterConnection``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from app.cluster.cache import Cache, ReserveCheck
from app.cluster.podgroups import PodGroup, PodGroupStore
from app.cluster.selectors import SpreadSelectors
from app.cluster.snapshot import Snapshot
from app.cluster.volumes import CLAIMS, VOLUMES, VolumeStores
from app.framework import (
    SUCCESS,
    ClusterNeeds,
    Handle,
    PluginEntry,
    PodDisruptionBudget,
    PodInfo,
    PodNominator,
    PodRef,
    Reservation,
    Status,
    objects,
)
from app.framework.volumes import VolumeWrite, VolumeWriteResult


class MemoryCluster:
    """The cluster as tests describe it (see the module doc). ``bindings`` lists ``(pod uid,
    node)`` in the order bound; ``refuse_binding`` makes :meth:`bind` fail with that message."""

    def __init__(self, assumed_ttl: float = 30.0) -> None:
        self.cache = Cache(assumed_ttl=assumed_ttl)
        self.events = self.cache.events
        self.health = self.cache.health
        self._podgroups: PodGroupStore | None = None
        self._selectors: SpreadSelectors | None = None
        self.bindings: list[tuple[str, str]] = []
        self.refuse_binding = ""
        self.admission: str | None = None
        self.pdbs: list[PodDisruptionBudget] = []
        self.unnominated: list[str] = []
        #: the pods nominated to nodes; :meth:`seed` records the pending pods that say they are
        self.nominator = PodNominator(self.pod)
        self.preemptions: list[tuple[str, str, list[str]]] = []
        self.refuse_preemption: dict[str, Status] = {}
        self.preempted_events: list[tuple[str, str, str, bool]] = []
        self._volumes: VolumeStores | None = None
        #: every :meth:`update_volume` write, in order; ``refuse_volume_write``: answer them with that error
        self.volume_writes: list[VolumeWrite] = []
        self.refuse_volume_write = ""

    # -- what tests set up ---------------------------------------------------------------------------

    def register(self, plugin: str, needs: ClusterNeeds) -> None:
        """Keep what ``plugin`` declared (pools, indexes, annotations, PodGroups, the spread
        selectors' objects), as the cluster state does; a pool counted twice is a ``ValueError``."""
        self.cache.register(plugin, needs)
        if needs.pod_groups and self._podgroups is None:
            self._podgroups = PodGroupStore()
        if needs.spread_selectors and self._selectors is None:
            self._selectors = SpreadSelectors()
        if (needs.volumes or needs.csi_storage_capacities) and self._volumes is None:
            self._volumes = VolumeStores(self.health, self.events)
        if needs.csi_storage_capacities and self._volumes is not None:
            self._volumes.want_capacities()

    def seed_storage(self, kind: str, documents: list[dict[str, Any]]) -> None:
        """Load storage objects (``kind`` as :data:`app.cluster.volumes.KINDS`, or
        ``csistoragecapacities``) as a completed list would; ``ValueError`` unless a plugin
        declared ``volumes``."""
        if self._volumes is None:
            raise ValueError("no plugin declared volumes")
        self._volumes.load(kind, documents)

    def build(
        self, entry: PluginEntry, args: dict[str, Any] | None = None, http_timeout: float = 5.0, **kw: Any
    ) -> Any:
        """``entry``'s plugin with ``args`` (camelCase, validated), its needs registered first, as
        the composition root does; ``kw`` go to the factory."""
        validated = entry.args.model_validate(args or {}) if entry.args is not None else None
        if entry.needs is not None:
            self.register(entry.name, entry.needs(validated, http_timeout))
        return entry.factory(validated, Handle("p", http_timeout, self, nominator=self.nominator), **kw)  # type: ignore[call-arg]

    def seed(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]], groups: list[dict[str, Any]] = ()) -> None:  # type: ignore[assignment]
        """Load node, pod (and PodGroup) documents as a completed sync would."""
        docs = [msgspec.convert(p, objects.Pod) for p in pods]
        self.cache.seed([msgspec.convert(n, objects.Node) for n in nodes], docs)
        for doc in docs:
            info = PodInfo(doc)
            if info.nominated_node_name and not info.node_name:
                self.nominator.add_nominated_pod(info)
        if self._podgroups is not None and groups:
            self._podgroups.replace([msgspec.convert(g, PodGroup) for g in groups])
            self._podgroups.mark_synced("podgroups")

    def seed_selecting(self, kind: str, documents: list[dict[str, Any]]) -> None:
        """Load the Services, ReplicationControllers, ReplicaSets or StatefulSets (``kind`` as
        :data:`app.cluster.selectors.KINDS`) :meth:`default_selector` reads, as a completed list
        would; ``ValueError`` unless a plugin declared ``spread_selectors``."""
        if self._selectors is None:
            raise ValueError("no plugin declared spread_selectors")
        self._selectors.stores[kind].load(documents)

    # -- ClusterHandle -------------------------------------------------------------------------------

    @property
    def podgroups(self) -> PodGroupStore | None:
        return self._podgroups

    @property
    def volumes(self) -> VolumeStores | None:
        return self._volumes

    async def update_volume(self, write: VolumeWrite, timeout: float) -> VolumeWriteResult:
        """Recorded in :attr:`volume_writes`, then applied to the stored object as the API server
        would (the ``resourceVersion`` precondition, the annotations merged, the ``claimRef`` set,
        the version increased), unless :attr:`refuse_volume_write` is set."""
        self.volume_writes.append(write)
        if self.refuse_volume_write:
            return VolumeWriteResult(error=self.refuse_volume_write)
        assert self._volumes is not None
        obj: Any = (
            self._volumes.claim(write.namespace, write.name)
            if write.kind == CLAIMS
            else self._volumes.volume(write.name)
        )
        if obj is None:
            return VolumeWriteResult(error=f'{write.kind} "{write.name}" not found')
        if write.resource_version and write.resource_version != obj.meta.resource_version:
            return VolumeWriteResult(error=f'Operation cannot be fulfilled on {write.kind} "{write.name}": modified')
        version = str(int(obj.meta.resource_version or "0") + 1)
        annotations = {**(obj.meta.annotations or {}), **write.annotations} or None
        meta = msgspec.structs.replace(obj.meta, resource_version=version, annotations=annotations)
        obj = msgspec.structs.replace(obj, metadata=meta)
        if write.claim_ref is not None and write.kind == VOLUMES:
            obj = msgspec.structs.replace(obj, spec=msgspec.structs.replace(obj.specs, claim_ref=write.claim_ref))
        self._volumes.apply(write.kind, "MODIFIED", obj)
        return VolumeWriteResult(resource_version=version)

    def snapshot(self) -> Snapshot:
        return self.cache.snapshot()

    def pod(self, uid: str) -> PodInfo | None:
        return self.cache.pod(uid)

    def indexed(self, index: str, key: str) -> tuple[PodInfo, ...]:
        return self.cache.indexed(index, key)

    def placement(self, uid: str) -> str | None:
        return self.cache.placement(uid)

    async def read_pod(self, pod: PodRef, timeout: float) -> PodInfo | None:
        return self.cache.pod(pod.uid)

    def assume(self, pod: PodInfo, node: str, check: ReserveCheck | None = None) -> Reservation:
        return self.cache.assume_pod(pod, node, check)

    def forget(self, uid: str, node: str) -> None:
        self.cache.forget_pod(uid, node)

    def finish_binding(self, uid: str) -> None:
        self.cache.finish_binding(uid)

    async def bind(self, pod: PodInfo, node: str, timeout: float) -> Status:
        if self.refuse_binding:
            return Status.error(self.refuse_binding)
        self.bindings.append((pod.uid, node))
        return SUCCESS

    def bind_admission(self, warm_up: bool = True) -> str | None:
        return self.admission

    def bind_admission_wait(self, warm_up: bool = True, asked_at: float | None = None) -> float | None:
        """``0.0`` when :attr:`admission` admits, else ``None`` (waiting does not help)."""
        return 0.0 if self.admission is None else None

    def pod_disruption_budgets(self) -> Sequence[PodDisruptionBudget]:
        """:attr:`pdbs`, as the test set them."""
        return self.pdbs

    def default_selector(self, pod: PodInfo) -> objects.LabelSelector | None:
        """``helper.DefaultSelector`` over the seeded objects (:meth:`seed_selecting`), ``None``
        unless a plugin declared ``spread_selectors``."""
        return self._selectors.default_selector(pod) if self._selectors is not None else None

    async def preempt_pod(self, preemptor: PodInfo, node: str, victim: PodInfo) -> Status:
        """Recorded in :attr:`preemptions` as ``(preemptor uid, node, [victim uids])`` (a victim
        of the same preemptor and node as the last entry joins it); ``refuse_preemption``: the
        victim UIDs answered with that status instead (``SKIP``: gone already)."""
        refused = self.refuse_preemption.get(victim.uid)
        if refused is not None:
            return refused
        if self.preemptions and self.preemptions[-1][:2] == (preemptor.uid, node):
            self.preemptions[-1][2].append(victim.uid)
        else:
            self.preemptions.append((preemptor.uid, node, [victim.uid]))
        return SUCCESS

    async def clear_nominated_node_name(self, pods: Sequence[PodInfo]) -> Status:
        """Recorded in :attr:`unnominated` (the uids whose nomination is cleared)."""
        self.unnominated.extend(p.uid for p in pods if p.nominated_node_name)
        return SUCCESS

    def preempted(self, victim: PodInfo, preemptor: PodInfo, node: str, in_memory: bool = False) -> None:
        """Recorded in :attr:`preempted_events` as ``(victim uid, preemptor uid, node, in_memory)``."""
        self.preempted_events.append((victim.uid, preemptor.uid, node, in_memory))


__all__ = ["MemoryCluster"]

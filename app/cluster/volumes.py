"""The storage objects the volume plugins read, watched like nodes and pods: PersistentVolumeClaims,
PersistentVolumes (``v1``), StorageClasses, CSINodes, CSIDrivers, VolumeAttachments (v1.36.3's
NodeVolumeLimits counts them, indexed by node) and, where declared, CSIStorageCapacities
(``storage.k8s.io/v1``).

kube-scheduler v1.36.3 reads them through informer listers (the volume plugins' ``New`` in
pkg/scheduler/framework/plugins/volumebinding, volumezone, volumerestrictions, nodevolumelimits).
Here one :class:`VolumeStores` holds them for every plugin that declared ``ClusterNeeds.volumes``
(``csi_storage_capacities`` adds the capacities), as slim views of :mod:`app.framework.volumes`:
claims keep their three scheduling annotations and their owner references (generic ephemeral
volumes), volumes their labels and two annotations, CSINodes the migrated-plugins annotation;
everything else of an object is dropped when it is decoded. Volumes are also indexed by class
(the assume cache's ``ListPVs``).

Each kind has its own reflector (:class:`KindStore` is its :class:`~app.cluster.reflector.Store`);
the stores report their health to the cluster state's :class:`~app.cluster.health.SyncHealth`,
whose ``has_synced`` and ``/readyz`` then cover them (kube-scheduler waits for every informer
before it schedules), and record each change in the cluster events the scheduling queues follow
(:class:`~app.cluster.events.ClusterEvents`: ``PersistentVolumeClaim
Add``, ``storage.k8s.io/CSINode Update``, ...), which moves the pods the volume plugins parked
(``EventsToRegister``). A collection the API server does not serve (404) counts as an empty,
synced one (logged), so an old or trimmed API server does not stop scheduling.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Sequence
from typing import Any

import msgspec

from app.cluster.events import ClusterEvents
from app.cluster.health import SyncHealth
from app.cluster.kinds import KindStore
from app.framework import objects
from app.framework.events import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    VOLUME_ATTACHMENT,
    ActionType,
    ClusterEvent,
)
from app.framework.volumes import (
    CLAIM_ANNOTATIONS,
    CSI_NODE_ANNOTATIONS,
    VOLUME_ANNOTATIONS,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
    volume_class,
)

log = logging.getLogger(__name__)

CLAIMS = "persistentvolumeclaims"
VOLUMES = "persistentvolumes"
STORAGE_CLASSES = "storageclasses"
CSI_NODES = "csinodes"
CSI_DRIVERS = "csidrivers"
CAPACITIES = "csistoragecapacities"
VOLUME_ATTACHMENTS = "volumeattachments"
#: the kinds of ``ClusterNeeds.volumes``, in the order their reflectors start
KINDS = (CLAIMS, VOLUMES, STORAGE_CLASSES, CSI_NODES, CSI_DRIVERS, VOLUME_ATTACHMENTS)
#: ``framework.GVK`` of each kind (the cluster events it records)
GVK = {
    CLAIMS: PERSISTENT_VOLUME_CLAIM,
    VOLUMES: PERSISTENT_VOLUME,
    STORAGE_CLASSES: STORAGE_CLASS,
    CSI_NODES: CSI_NODE,
    CSI_DRIVERS: CSI_DRIVER,
    CAPACITIES: CSI_STORAGE_CAPACITY,
    VOLUME_ATTACHMENTS: VOLUME_ATTACHMENT,
}
_TYPES: dict[str, type[Any]] = {
    CLAIMS: PersistentVolumeClaim,
    VOLUMES: PersistentVolume,
    STORAGE_CLASSES: StorageClass,
    CSI_NODES: CSINode,
    CSI_DRIVERS: CSIDriver,
    CAPACITIES: CSIStorageCapacity,
    VOLUME_ATTACHMENTS: VolumeAttachment,
}
_ACTIONS = {"ADDED": ActionType.ADD, "MODIFIED": ActionType.UPDATE, "DELETED": ActionType.DELETE}
#: a relist: objects may have been added, changed or deleted
_RELIST = (ActionType.ADD, ActionType.UPDATE, ActionType.DELETE)


def _cut(
    meta: objects.ObjectMeta | None, annotations: frozenset[str], labels: bool, owners: bool
) -> objects.ObjectMeta:
    """``meta`` with the annotations cut to ``annotations``, labels and owner references kept only
    when asked, and the creation time dropped."""
    meta = meta or objects.EMPTY_META
    kept = {k: v for k, v in (meta.annotations or {}).items() if k in annotations} or None
    return objects.ObjectMeta(
        name=meta.name,
        namespace=meta.namespace,
        uid=meta.uid,
        resource_version=meta.resource_version,
        deletion_timestamp=meta.deletion_timestamp,
        labels=meta.labels if labels else None,
        annotations=kept,
        owner_references=meta.owner_references if owners else None,
    )


def compact(kind: str, obj: Any) -> Any:
    """The record the store keeps of ``obj`` (a decoded object of ``kind``): its metadata cut
    (:func:`_cut`) to what the volume plugins read."""
    if kind == CLAIMS:
        return msgspec.structs.replace(obj, metadata=_cut(obj.metadata, CLAIM_ANNOTATIONS, False, True))
    if kind == VOLUMES:
        return msgspec.structs.replace(obj, metadata=_cut(obj.metadata, VOLUME_ANNOTATIONS, True, False))
    if kind == CSI_NODES:
        return msgspec.structs.replace(obj, metadata=_cut(obj.metadata, CSI_NODE_ANNOTATIONS, False, False))
    return msgspec.structs.replace(obj, metadata=_cut(obj.metadata, frozenset(), False, False))


def _key(kind: str, obj: Any) -> str:
    meta = obj.metadata or objects.EMPTY_META
    if kind in (CLAIMS, CAPACITIES):
        return f"{meta.namespace or ''}/{meta.name or ''}"
    return meta.name or ""


class VolumeStores:
    """The watched storage objects (:class:`~app.framework.volumes.VolumeLister`); thread-safe.

    ``health``: where the stores report their health (the kinds are added to it at once);
    ``events``: where they record their changes. ``capacities``: also watch
    CSIStorageCapacities (:meth:`want_capacities` adds them later, before the reflectors start).
    """

    def __init__(self, health: SyncHealth, events: ClusterEvents, capacities: bool = False) -> None:
        self.health = health
        self.events = events
        self._lock = threading.Lock()
        self._objects: dict[str, dict[str, Any]] = {kind: {} for kind in _TYPES}
        self._by_class: dict[str, dict[str, PersistentVolume]] = {}
        self._capacity_list: tuple[CSIStorageCapacity, ...] = ()
        self._attachments_by_node: dict[str, dict[str, VolumeAttachment]] = {}
        self._generation = 0
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self.kinds: list[str] = list(KINDS)
        for kind in KINDS:
            health.track_kind(kind)
        if capacities:
            self.want_capacities()

    def want_capacities(self) -> None:
        """Watch CSIStorageCapacities too (``ClusterNeeds.csi_storage_capacities``)."""
        if CAPACITIES not in self.kinds:
            self.kinds.append(CAPACITIES)
            self.health.track_kind(CAPACITIES)

    @property
    def stores(self) -> dict[str, KindStore]:
        """Kind -> its reflector's store, for every watched kind."""
        return {kind: KindStore(kind, self, msgspec.json.Decoder(_TYPES[kind]), compact) for kind in self.kinds}

    # -- VolumeLister ---------------------------------------------------------------------------------

    def claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        """The PersistentVolumeClaim ``namespace/name``, or ``None``."""
        found: PersistentVolumeClaim | None = self._objects[CLAIMS].get(f"{namespace}/{name}")
        return found

    def volume(self, name: str) -> PersistentVolume | None:
        """The PersistentVolume ``name``, or ``None``."""
        found: PersistentVolume | None = self._objects[VOLUMES].get(name)
        return found

    def volumes_of_class(self, class_name: str) -> Sequence[PersistentVolume]:
        """The PersistentVolumes of class ``class_name`` (:func:`volume_class`), by name."""
        with self._lock:
            members = self._by_class.get(class_name)
            return [members[name] for name in sorted(members)] if members else []

    def storage_class(self, name: str) -> StorageClass | None:
        """The StorageClass ``name``, or ``None``."""
        found: StorageClass | None = self._objects[STORAGE_CLASSES].get(name)
        return found

    def csi_node(self, name: str) -> CSINode | None:
        """The CSINode ``name``, or ``None``."""
        found: CSINode | None = self._objects[CSI_NODES].get(name)
        return found

    def csi_driver(self, name: str) -> CSIDriver | None:
        """The CSIDriver ``name``, or ``None``."""
        found: CSIDriver | None = self._objects[CSI_DRIVERS].get(name)
        return found

    def storage_capacities(self) -> Sequence[CSIStorageCapacity]:
        """Every CSIStorageCapacity (a snapshot)."""
        return self._capacity_list

    def volume_attachments(self, node_name: str) -> Sequence[VolumeAttachment]:
        """The VolumeAttachments whose ``spec.nodeName`` is ``node_name`` (the ``va.spec.nodename``
        index of v1.36.3's NodeVolumeLimits), by name."""
        with self._lock:
            members = self._attachments_by_node.get(node_name)
            return [members[name] for name in sorted(members)] if members else []

    @property
    def generation(self) -> int:
        """Grows with every change of a watched storage object."""
        return self._generation

    async def changed(self, generation: int, timeout: float) -> int:
        """Wait until :attr:`generation` is past ``generation`` (a change arrived) or ``timeout``
        seconds passed; the generation then. On the event loop."""
        if self._generation > generation or timeout <= 0:
            return self._generation
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        waiter = (loop, future)
        with self._lock:
            if self._generation > generation:
                return self._generation
            self._waiters.append(waiter)
        try:
            await asyncio.wait_for(future, timeout)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        return self._generation

    # -- writes (the reflectors' threads) -------------------------------------------------------------

    def load(self, kind: str, documents: Sequence[Any]) -> None:
        """Load ``kind`` from JSON-like documents as a completed list would, and mark it synced
        (tests and tools: no API server)."""
        decoded = [compact(kind, msgspec.convert(d, _TYPES[kind])) for d in documents]
        self.replace(kind, decoded)
        self.health.mark_synced(kind)

    def replace(self, kind: str, items: Sequence[Any]) -> None:
        """Replace every object of ``kind`` (a completed list)."""
        with self._lock:
            self._objects[kind] = {_key(kind, item): item for item in items}
            if kind == VOLUMES:
                self._by_class = {}
                for pv in items:
                    self._by_class.setdefault(volume_class(pv), {})[pv.name] = pv
            if kind == CAPACITIES:
                self._capacity_list = tuple(self._objects[CAPACITIES].values())
            if kind == VOLUME_ATTACHMENTS:
                self._attachments_by_node = {}
                for va in items:
                    self._attachments_by_node.setdefault(_attachment_node(va), {})[va.name] = va
            waiters = self._changed()
        self._notify(waiters)
        # a relist: an Add, an Update and a Delete of unknown objects (hints judging no object queue)
        self.events.record_events(ClusterEvent(GVK[kind], action) for action in _RELIST)

    def apply(self, kind: str, event: str, item: Any) -> None:
        """A watch event (``ADDED``, ``MODIFIED``, ``DELETED``) of ``kind``."""
        key = _key(kind, item)
        with self._lock:
            store = self._objects[kind]
            old = store.get(key)
            if event == "DELETED":
                store.pop(key, None)
            else:
                store[key] = item
            if kind == VOLUMES:
                if old is not None:
                    members = self._by_class.get(volume_class(old))
                    if members is not None:
                        members.pop(old.name, None)
                if event != "DELETED":
                    self._by_class.setdefault(volume_class(item), {})[item.name] = item
            if kind == CAPACITIES:
                self._capacity_list = tuple(store.values())
            if kind == VOLUME_ATTACHMENTS:
                if old is not None:
                    self._attachments_by_node.get(_attachment_node(old), {}).pop(old.name, None)
                if event != "DELETED":
                    self._attachments_by_node.setdefault(_attachment_node(item), {})[item.name] = item
            waiters = self._changed()
        self._notify(waiters)
        action = _ACTIONS.get(event)
        if action is not None:
            self.events.record_event(GVK[kind], action, old=old, new=None if event == "DELETED" else item)

    def _changed(self) -> list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]:
        """Count a change and take the waiters (under the lock)."""
        self._generation += 1
        waiters, self._waiters = self._waiters, []
        return waiters

    @staticmethod
    def _notify(waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]) -> None:
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_wake, future)

    def stats(self) -> dict[str, int]:
        """How many objects of each watched kind are kept."""
        with self._lock:
            return {kind: len(self._objects[kind]) for kind in self.kinds}


def _attachment_node(va: VolumeAttachment) -> str:
    return (va.spec.node_name if va.spec is not None else None) or ""


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


__all__ = [
    "CAPACITIES",
    "CLAIMS",
    "CSI_DRIVERS",
    "CSI_NODES",
    "GVK",
    "KINDS",
    "STORAGE_CLASSES",
    "VOLUMES",
    "VOLUME_ATTACHMENTS",
    "KindStore",
    "VolumeStores",
    "compact",
]

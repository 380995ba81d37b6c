"""The DRA objects DynamicResources reads, watched like nodes and pods: ResourceClaims,
ResourceSlices and DeviceClasses (``resource.k8s.io/v1``), with the allocation tracker of
kube-scheduler v1.36.3's DRA manager (pkg/scheduler/framework/plugins/dynamicresources/
``dra_manager.go`` ``claimTracker``, ``allocateddevices.go``, and the claims' assume cache,
pkg/scheduler/util/assumecache/assume_cache.go).

One :class:`DRAStores` serves every profile (:class:`~app.framework.dra.DRALister`), as upstream's
one manager does:

- claims: the watch's version and the latest (an assumed one, written by PreBind, stays until the
  watch shows a version at least as new: ``Assume``/``Restore``), objects as JSON dicts with
  ``managedFields`` dropped; slices and classes as they come;
- the allocated devices of the latest claims (``allocatedDevices``: added when a claim gains its
  ``status.allocation``, removed when it loses it or is deleted; admin access does not count;
  with ``DRAConsumableCapacity`` a result with a ``shareID`` counts by share and its consumed
  capacity is summed per device);
- the in-flight allocations (``inFlightAllocations``: Reserve's, until PreBind's write is assumed
  or Unreserve drops them), counted as allocated by :meth:`DRAStores.gather_allocated_state`.

One lock covers all of it, so a gathered state is consistent without upstream's revision retry.
Each change is recorded in the cluster events (``resource.k8s.io/ResourceClaim Update``, ...) for
DynamicResources' queueing hints, with the claim dicts as old and new objects; a relist records
an Add, an Update and a Delete without objects. A collection the API server does not serve (404)
counts as an empty, synced one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import msgspec

from app.cluster.events import ClusterEvents
from app.cluster.health import SyncHealth
from app.cluster.kinds import KindStore
from app.framework.dra import AllocatedDevices, DeviceID, Object, SharedDeviceID
from app.framework.events import DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_SLICE, ActionType, ClusterEvent
from app.framework.resources import QuantityError, parse_quantity

log = logging.getLogger(__name__)

CLAIMS = "resourceclaims"
SLICES = "resourceslices"
CLASSES = "deviceclasses"
#: the kinds of ``ClusterNeeds.dynamic_resources``, in the order their reflectors start
KINDS = (CLAIMS, SLICES, CLASSES)
#: ``fwk.EventResource`` of each kind
GVK = {CLAIMS: RESOURCE_CLAIM, SLICES: RESOURCE_SLICE, CLASSES: DEVICE_CLASS}
_ACTIONS = {"ADDED": ActionType.ADD, "MODIFIED": ActionType.UPDATE, "DELETED": ActionType.DELETE}
_RELIST = (ActionType.ADD, ActionType.UPDATE, ActionType.DELETE)
_DECODER: msgspec.json.Decoder[dict[str, Any]] = msgspec.json.Decoder(dict[str, Any])


def _meta(obj: Object) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def object_key(kind: str, obj: Object) -> str:
    """``namespace/name`` of a claim, ``name`` of a slice or class."""
    meta = _meta(obj)
    if kind == CLAIMS:
        return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
    return str(meta.get("name") or "")


def _version(obj: Object) -> int:
    """``metadata.resourceVersion`` as a number (the assume cache's ``getObjVersion``), 0 when
    it is not one."""
    try:
        return int(_meta(obj).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def _slim(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without ``metadata.managedFields`` (nothing reads them)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        meta.pop("managedFields")
    return obj


def allocation_of(claim: Object | None) -> Mapping[str, Any] | None:
    """``status.allocation`` of ``claim`` (``None`` when unallocated)."""
    if claim is None:
        return None
    status = claim.get("status")
    allocation = status.get("allocation") if isinstance(status, Mapping) else None
    return allocation if isinstance(allocation, Mapping) else None


@dataclass(frozen=True)
class _Used:
    """What one claim's allocation takes: devices, shares and consumed capacity."""

    devices: tuple[DeviceID, ...]
    shared: tuple[SharedDeviceID, ...]
    capacity: tuple[tuple[DeviceID, str, Decimal], ...]


def allocated_devices(claim: Object | None, consumable_capacity: bool) -> _Used:
    """``foreachAllocatedDevice``: the devices of ``claim``'s allocation, less admin access; with
    ``consumable_capacity`` a result with a ``shareID`` is a share (and its ``consumedCapacity``)."""
    devices: list[DeviceID] = []
    shared: list[SharedDeviceID] = []
    capacity: list[tuple[DeviceID, str, Decimal]] = []
    for result in _results(allocation_of(claim)):
        if result.get("adminAccess") is True:
            continue
        device: DeviceID = (
            str(result.get("driver") or ""),
            str(result.get("pool") or ""),
            str(result.get("device") or ""),
        )
        share = result.get("shareID")
        if consumable_capacity and share is not None:
            shared.append((*device, str(share)))
            for name, quantity in (result.get("consumedCapacity") or {}).items():
                try:
                    capacity.append((device, str(name), parse_quantity(quantity)))
                except QuantityError:
                    log.warning(
                        "claim %s: consumed capacity %s=%r is not a quantity",
                        object_key(CLAIMS, claim or {}),
                        name,
                        quantity,
                    )
            continue
        devices.append(device)
    return _Used(tuple(devices), tuple(shared), tuple(capacity))


def _results(allocation: Mapping[str, Any] | None) -> Iterator[Mapping[str, Any]]:
    if allocation is None:
        return
    devices = allocation.get("devices")
    results = devices.get("results") if isinstance(devices, Mapping) else None
    for result in results or ():
        if isinstance(result, Mapping):
            yield result


class _Meta:
    """The ``metadata`` the reflector reads of a decoded object: its ``resource_version``."""

    __slots__ = ("resource_version",)

    def __init__(self, resource_version: str | None) -> None:
        self.resource_version = resource_version


class Decoded(dict[str, Any]):
    """A decoded DRA object: its JSON as a dict, with the :class:`_Meta` view the reflector reads
    (``obj.metadata.resource_version``)."""

    @property
    def metadata(self) -> _Meta:
        """``metadata.resourceVersion``."""
        return _Meta(_meta(self).get("resourceVersion"))


class _Decoder:
    """The reflector's ``object_decoder`` of the DRA kinds: JSON into :class:`Decoded`."""

    def decode(self, data: bytes | str) -> Decoded:
        return Decoded(_DECODER.decode(data))


def _prepare(kind: str, obj: Any) -> Any:
    return _slim(obj)


class _ClaimEntry:
    """A claim as the watch shows it (``api``) and as the scheduler knows it (``latest``)."""

    __slots__ = ("api", "latest")

    def __init__(self, obj: dict[str, Any]) -> None:
        self.api = obj
        self.latest = obj


class DRAStores:
    """The watched DRA objects and the allocation tracker (see the module doc); thread-safe.
    ``consumable_capacity``: the ``DRAConsumableCapacity`` gate (shares counted apart)."""

    def __init__(self, health: SyncHealth, events: ClusterEvents, consumable_capacity: bool = True) -> None:
        self.health = health
        self.events = events
        self.consumable_capacity = consumable_capacity
        self._lock = threading.Lock()
        self._claims: dict[str, _ClaimEntry] = {}
        self._slices: dict[str, dict[str, Any]] = {}
        self._slice_list: tuple[dict[str, Any], ...] | None = ()
        self._classes: dict[str, dict[str, Any]] = {}
        self._devices: set[DeviceID] = set()
        self._shared: set[SharedDeviceID] = set()
        self._capacity: dict[DeviceID, dict[str, Decimal]] = {}
        #: claim UID -> [claim with its allocation, sharers] (``inFlightAllocations``)
        self._in_flight: dict[str, list[Any]] = {}
        self.kinds: tuple[str, ...] = KINDS
        for kind in KINDS:
            health.track_kind(kind)

    @property
    def stores(self) -> dict[str, KindStore]:
        """Kind -> its reflector's store."""
        return {kind: KindStore(kind, self, _Decoder(), _prepare) for kind in self.kinds}

    # -- DRALister: reads ------------------------------------------------------------------------------

    def claim(self, namespace: str, name: str) -> Object | None:
        """The latest ResourceClaim ``namespace/name``, or ``None``."""
        entry = self._claims.get(f"{namespace}/{name}")
        return entry.latest if entry is not None else None

    def claims(self) -> list[Object]:
        """Every claim's latest version."""
        with self._lock:
            return [entry.latest for entry in self._claims.values()]

    def device_class(self, name: str) -> Object | None:
        """The DeviceClass ``name``, or ``None``."""
        return self._classes.get(name)

    def device_classes(self) -> Mapping[str, Object]:
        """Every DeviceClass by name (a copy of the map)."""
        with self._lock:
            return dict(self._classes)

    def slices(self) -> Sequence[Object]:
        """Every ResourceSlice, by name (one tuple shared until a slice changes)."""
        with self._lock:
            if self._slice_list is None:
                self._slice_list = tuple(self._slices[name] for name in sorted(self._slices))
            return self._slice_list

    def gather_allocated_state(self) -> AllocatedDevices:
        """``GatherAllocatedState``: the claims' devices plus the in-flight allocations'."""
        with self._lock:
            state = AllocatedDevices(
                set(self._devices), set(self._shared), {d: dict(c) for d, c in self._capacity.items()}
            )
            for claim, _ in self._in_flight.values():
                used = allocated_devices(claim, self.consumable_capacity)
                state.devices.update(used.devices)
                state.shared.update(used.shared)
                for device, name, amount in used.capacity:
                    per_device = state.capacity.setdefault(device, {})
                    per_device[name] = per_device.get(name, Decimal(0)) + amount
        return state

    def pending_allocation(self, uid: str) -> Object | None:
        """``GetPendingAllocation``: the in-flight allocation of claim ``uid``, or ``None``."""
        with self._lock:
            found = self._in_flight.get(uid)
        return allocation_of(found[0]) if found is not None else None

    # -- DRALister: the tracker ------------------------------------------------------------------------

    def signal_pending_allocation(self, uid: str, claim: Object) -> None:
        """``SignalClaimPendingAllocation``: in flight, or one sharer more."""
        with self._lock:
            found = self._in_flight.get(uid)
            if found is not None:
                found[1] += 1
            else:
                self._in_flight[uid] = [claim, 1]

    def maybe_remove_pending_allocation(self, uid: str, force: bool) -> bool:
        """``MaybeRemoveClaimPendingAllocation``: whether the in-flight allocation is gone."""
        with self._lock:
            found = self._in_flight.get(uid)
            if found is None:
                return False
            if force or found[1] <= 1:
                del self._in_flight[uid]
                return True
            found[1] -= 1
            return False

    def in_flight(self) -> dict[str, int]:
        """Claim UID -> sharers of every in-flight allocation (diagnostics and tests)."""
        with self._lock:
            return {uid: found[1] for uid, found in self._in_flight.items()}

    def assume_claim(self, claim: Object) -> str:
        """``AssumeClaimAfterAPICall`` (``AssumeCache.Assume``): ``""``, or why not kept."""
        key = object_key(CLAIMS, claim)
        with self._lock:
            entry = self._claims.get(key)
            if entry is None:
                return f'could not find ResourceClaim "{key}"'
            stored, new = _version(entry.latest), _version(claim)
            if new < stored:
                return f'ResourceClaim "{key}" is out of sync (stored: {stored}, assume: {new})'
            old = entry.latest
            entry.latest = dict(claim)
            self._track(old, entry.latest)
        self.events.record_event(RESOURCE_CLAIM, ActionType.UPDATE, old=old, new=entry.latest)
        return ""

    def restore_claim(self, namespace: str, name: str) -> None:
        """``AssumedClaimRestore``: the watch's version again."""
        with self._lock:
            entry = self._claims.get(f"{namespace}/{name}")
            if entry is None or entry.latest is entry.api:
                return
            old, entry.latest = entry.latest, entry.api
            self._track(old, entry.latest)
        self.events.record_event(RESOURCE_CLAIM, ActionType.UPDATE, old=old, new=entry.latest)

    # -- writes (the reflectors' threads) -------------------------------------------------------------

    def load(self, kind: str, documents: Sequence[Mapping[str, Any]]) -> None:
        """Load ``kind`` from documents as a completed list would, and mark it synced (tests and
        tools: no API server)."""
        self.replace(kind, [_slim(dict(d)) for d in documents])
        self.health.mark_synced(kind)

    def replace(self, kind: str, items: Sequence[dict[str, Any]]) -> None:
        """Replace every object of ``kind`` (a completed list); assumed claims the list does not
        supersede stay."""
        with self._lock:
            if kind == CLAIMS:
                listed = {object_key(CLAIMS, item): item for item in items}
                for key in [k for k in self._claims if k not in listed]:
                    self._track(self._claims.pop(key).latest, None)
                for key, item in listed.items():
                    self._set_claim(key, item)
            elif kind == SLICES:
                self._slices = {object_key(kind, item): item for item in items}
                self._slice_list = None
            else:
                self._classes = {object_key(kind, item): item for item in items}
        self.events.record_events(ClusterEvent(GVK[kind], action) for action in _RELIST)

    def apply(self, kind: str, event: str, item: dict[str, Any]) -> None:
        """A watch event (``ADDED``, ``MODIFIED``, ``DELETED``) of ``kind``."""
        key = object_key(kind, item)
        old: Object | None
        new: Object | None = None if event == "DELETED" else item
        with self._lock:
            if kind == CLAIMS:
                entry = self._claims.get(key)
                old = entry.latest if entry is not None else None
                if event == "DELETED":
                    if entry is not None:
                        self._track(self._claims.pop(key).latest, None)
                else:
                    changed = self._set_claim(key, item)
                    if not changed:  # an older version than the assumed one: no event
                        return
            else:
                store = self._slices if kind == SLICES else self._classes
                old = store.get(key)
                if event == "DELETED":
                    store.pop(key, None)
                else:
                    store[key] = item
                if kind == SLICES:
                    self._slice_list = None
        action = _ACTIONS.get(event)
        if action is not None:
            self.events.record_event(GVK[kind], action, old=old, new=new)

    def _set_claim(self, key: str, item: dict[str, Any]) -> bool:
        """The watch's ``item`` for claim ``key`` (under the lock), kept only when newer than the
        latest (``AssumeCache.add``: a relist does not override an assumed claim); whether kept."""
        entry = self._claims.get(key)
        if entry is None:
            self._claims[key] = _ClaimEntry(item)
            self._track(None, item)
            return True
        if _version(item) <= _version(entry.latest):
            return False
        old = entry.latest
        entry.api = entry.latest = item
        self._track(old, item)
        return True

    def _track(self, old: Object | None, new: Object | None) -> None:
        """``allocatedDevices`` ``onAdd``/``onUpdate``/``onDelete`` (under the lock): the devices
        of an allocation that appeared are added, of one that went away removed."""
        had, has = allocation_of(old) is not None, allocation_of(new) is not None
        if had and not has:
            self._count(allocated_devices(old, self.consumable_capacity), -1)
        elif has and not had:
            self._count(allocated_devices(new, self.consumable_capacity), 1)

    def _count(self, used: _Used, sign: int) -> None:
        if sign > 0:
            self._devices.update(used.devices)
            self._shared.update(used.shared)
        else:
            self._devices.difference_update(used.devices)
            self._shared.difference_update(used.shared)
        for device, name, amount in used.capacity:
            per_device = self._capacity.setdefault(device, {})
            total = per_device.get(name, Decimal(0)) + sign * amount
            if total:
                per_device[name] = total
            else:
                per_device.pop(name, None)
            if not per_device:
                self._capacity.pop(device, None)

    def stats(self) -> dict[str, int]:
        """How many objects of each kind are kept, and the in-flight allocations."""
        with self._lock:
            return {
                CLAIMS: len(self._claims),
                SLICES: len(self._slices),
                CLASSES: len(self._classes),
                "inFlightAllocations": len(self._in_flight),
            }


__all__ = [
    "CLAIMS",
    "CLASSES",
    "GVK",
    "KINDS",
    "SLICES",
    "DRAStores",
    "allocated_devices",
    "allocation_of",
    "object_key",
]

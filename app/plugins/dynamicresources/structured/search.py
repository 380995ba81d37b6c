"""The allocator's backtracking search, as v1.36.3's
``structured/internal/incubating/allocator_incubating.go`` (``allocateOne``, ``isSelectable``,
``selectorsMatch``, ``allocateDevice`` and its rollback, ``checkAvailableCounters``,
``taintPreventsAllocation``): claims in order, each claim's requests in order, each request's
devices tried pool by pool (sorted by driver and name), slice by slice (sorted by name), device by
device as the slice lists them; the first full solution wins. Within one request only
combinations are tried (a device after the previous one), never permutations.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from app.plugins.dynamicresources.cel.quantity import Quantity
from app.plugins.dynamicresources.structured import capacity as cap
from app.plugins.dynamicresources.structured.api import AllocationError, AllocationTimeoutError, DeviceID, Object
from app.plugins.dynamicresources.structured.pools import Pool
from app.plugins.dynamicresources.structured.requests import ALL, Constraint, RequestAccessor
from app.plugins.dynamicresources.structured.taints import taint_prevents_allocation

if TYPE_CHECKING:
    from app.plugins.dynamicresources.structured.allocator import StructuredAllocator

#: resourceapi.AllocationResultsMaxSize
ALLOCATION_RESULTS_MAX_SIZE = 32
RequestKey = tuple[int, int, int]  # claim index, request index, subrequest index
#: claim index, request index, subrequest index, device index
DeviceKey = tuple[int, int, int, int]


class _StopError(Exception):
    """``errAllocationResultMaxSizeExceeded``: backtrack further."""


@dataclass
class DeviceWithID:
    """A candidate device with its ID, slice and pool."""

    id: DeviceID
    device: Object
    slice: Object
    pool: Pool


@dataclass
class RequestData:
    """``requestData``: one request or subrequest to allocate."""

    request: RequestAccessor
    parent: RequestAccessor | None
    device_class: Object | None = None
    num_devices: int = 0
    selected_sub_request_index: int = 0
    all_devices: list[DeviceWithID] = field(default_factory=list)

    def request_name(self) -> str:
        return f"{self.parent.name}/{self.request.name}" if self.parent else self.request.name


@dataclass
class DeviceResult:
    """``internalDeviceResult``: one allocated device."""

    request: str
    parent_request: str
    id: DeviceID
    device: Object
    slice: Object
    tolerations: list[Object] | None = None
    share_id: str | None = None
    consumed_capacity: dict[str, Quantity] | None = None
    admin_access: bool | None = None

    def request_name(self) -> str:
        return f"{self.parent_request}/{self.request}" if self.parent_request else self.request


def claim_ref(claim: Object) -> str:
    """``klog.KObj(claim)``: ``namespace/name``."""
    meta = claim.get("metadata") or {}
    return f"{meta['namespace']}/{meta.get('name', '')}" if meta.get("namespace") else str(meta.get("name", ""))


def _spec(obj: Object) -> Any:
    return obj.get("spec") or {}


class Search:
    """One ``Allocate`` call's state (upstream's ``allocator``)."""

    def __init__(
        self,
        owner: StructuredAllocator,
        node: Object,
        claims: list[Object],
        pools: list[Pool],
        deadline: float | None = None,
    ) -> None:
        self.deadline = deadline
        self.owner = owner
        self.features = owner.features
        self.node = node
        self.claims = claims
        self.pools = pools
        self.request_data: dict[RequestKey, RequestData] = {}
        self.constraints: list[list[Constraint]] = [[] for _ in claims]
        self.matches: dict[tuple[DeviceID, RequestKey], bool] = {}
        self.capacity_memo: dict[tuple[DeviceID, int], bool] = {}
        self.consumed_counters: dict[str, dict[str, dict[str, Decimal]]] = {}
        self.allocating_devices: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, cap.ConsumedCapacity] = {}
        self.results: list[list[DeviceResult]] = [[] for _ in claims]
        self.invocations = 0

    # --- selection -------------------------------------------------------------------------

    def is_selectable(self, key: RequestKey, data: RequestData, slice_: Object, device: Object) -> bool:
        """``isSelectable``: class and request selectors, and per-device node selection."""
        if not self.features.device_binding_and_status and device.get("bindingConditions"):
            return False
        spec = _spec(slice_)
        device_id = (spec.get("driver", ""), (spec.get("pool") or {}).get("name", ""), device.get("name", ""))
        cached = self.matches.get((device_id, key))
        if cached is not None:
            return cached
        result = True
        if (
            data.device_class is not None
            and not self.selectors_match(
                key, device, device_id, data.device_class, (data.device_class.get("spec") or {}).get("selectors") or []
            )
        ) or not self.selectors_match(key, device, device_id, None, data.request.selectors):
            result = False
        elif spec.get("perDeviceNodeSelection"):
            from app.plugins.dynamicresources.structured.pools import node_matches

            result = node_matches(
                self.node, device.get("nodeName") or "", bool(device.get("allNodes")), device.get("nodeSelector")
            )
        self.matches[(device_id, key)] = result
        return result

    def selectors_match(
        self, key: RequestKey, device: Object, device_id: DeviceID, device_class: Object | None, selectors: list[Object]
    ) -> bool:
        """``selectorsMatch``: every CEL selector matches; a compile or runtime error is fatal."""
        for i, selector in enumerate(selectors):
            where = (
                f"class {(device_class.get('metadata') or {}).get('name', '')}"
                if device_class is not None
                else f"claim {claim_ref(self.claims[key[0]])}"
            )
            expression = (selector.get("cel") or {}).get("expression")
            if expression is None:
                continue  # validated in allocate
            compiled = self.owner.cel_cache.get_or_compile(expression)
            if compiled.error is not None:
                raise AllocationError(f"{where}: selector #{i}: CEL compile error: {compiled.error}")
            try:
                cel_device = self.owner.cel_input(device_id[0], device)
            except ValueError as exc:
                raise AllocationError(f"{where}: selector #{i}: CEL runtime error: {exc}") from None
            matched, error = compiled.device_matches(cel_device)
            if error is not None:
                raise AllocationError(f"{where}: selector #{i}: CEL runtime error: {error}")
            if not matched:
                return False
        return True

    def capacity_fits(self, request: RequestAccessor, device_id: DeviceID, device: Object) -> bool:
        """``CmpRequestOverCapacity`` of the allocator (an error counts as not fitting). While
        nothing of the device is consumed or being allocated, the answer depends on the request
        and the device only and is remembered."""
        capacities = device.get("capacity")
        if not capacities and request.capacity is None:
            return True
        allocating = self.allocating_capacity.get(device_id)
        current = self.owner.aggregated_capacity.get(device_id)
        if allocating is None and current is None:
            key = (device_id, id(request))
            fits = self.capacity_memo.get(key)
            if fits is None:
                fits = self.capacity_memo[key] = bool(
                    cap.cmp_request_over_capacity({}, request.capacity, capacities or {}, None)
                )
            return fits
        return bool(cap.cmp_request_over_capacity(current or {}, request.capacity, capacities or {}, allocating))

    # --- the search ------------------------------------------------------------------------

    def allocate_one(
        self, r: tuple[int, int, int, int], allocate_sub_request: bool, start: tuple[int, int, int]
    ) -> bool:
        """``allocateOne`` for device ``r`` = (claim, request, subrequest, device index)."""
        self.invocations += 1
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise AllocationTimeoutError("filter operation aborted: context deadline exceeded")
        claim_index, request_index, sub_index, device_index = r
        if claim_index >= len(self.claims):
            return True
        requests = (_spec(self.claims[claim_index]).get("devices") or {}).get("requests") or []
        if request_index >= len(requests):
            try:
                return self.allocate_one((claim_index + 1, 0, 0, 0), False, (0, 0, 0))
            except _StopError:
                return False
        key = (claim_index, request_index, sub_index)
        data = self.request_data[key]
        if not allocate_sub_request and data.parent is not None:
            all_exceeded = True
            sub = 0
            while (claim_index, request_index, sub) in self.request_data:
                try:
                    success = self.allocate_one((claim_index, request_index, sub, device_index), True, (0, 0, 0))
                except _StopError:
                    sub += 1
                    continue
                all_exceeded = False
                if success:
                    data.selected_sub_request_index = sub
                    return True
                sub += 1
            if all_exceeded:
                raise _StopError
            return False

        request = data.request
        do_all = request.allocation_mode == ALL
        if do_all and not data.all_devices:
            return False
        if device_index >= data.num_devices:
            return self.allocate_one((claim_index, request_index + 1, 0, 0), False, (0, 0, 0))
        if len(self.results[claim_index]) + data.num_devices - device_index > ALLOCATION_RESULTS_MAX_SIZE:
            raise _StopError
        next_r = (claim_index, request_index, sub_index, device_index + 1)
        if do_all:
            candidate = data.all_devices[device_index]
            undo = self.allocate_device(r, candidate, must=True)
            if undo is None:
                return False
            try:
                done = self.allocate_one(next_r, allocate_sub_request, (0, 0, 0))
            except _StopError:
                undo()
                raise
            if not done:
                undo()
            return done

        admin = request.admin_access
        for pool_index in range(start[0], len(self.pools)):
            pool = self.pools[pool_index]
            if pool.is_incomplete or pool.is_invalid:
                continue
            slices = pool.device_slices_targeting_node
            for slice_index in range(start[1] if pool_index == start[0] else 0, len(slices)):
                slice_ = slices[slice_index]
                devices = _spec(slice_).get("devices") or []
                first = start[2] if pool_index == start[0] and slice_index == start[1] else 0
                for idx in range(first, len(devices)):
                    device = devices[idx]
                    device_id = (pool.driver, pool.pool, device.get("name", ""))
                    if admin:
                        if claim_index in self.allocating_devices.get(device_id, ()):
                            continue
                    elif self.device_in_use(device_id):
                        continue
                    if not self.is_selectable(key, data, slice_, device):
                        continue
                    if self.features.consumable_capacity and not self.capacity_fits(data.request, device_id, device):
                        continue
                    undo = self.allocate_device(r, DeviceWithID(device_id, device, slice_, pool), must=False)
                    if undo is None:
                        continue
                    try:
                        done = self.allocate_one(next_r, allocate_sub_request, (pool_index, slice_index, idx + 1))
                    except _StopError:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def device_in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.owner.allocated_devices or bool(self.allocating_devices.get(device_id))

    def _capacity_in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.owner.aggregated_capacity or device_id in self.allocating_capacity

    def allocate_device(
        self, r: tuple[int, int, int, int], candidate: DeviceWithID, must: bool
    ) -> Callable[[], None] | None:
        """``allocateDevice``: the rollback when ``candidate`` was taken, ``None`` when not."""
        claim_index = r[0]
        data = self.request_data[(r[0], r[1], r[2])]
        request = data.request
        device, device_id = candidate.device, candidate.id
        multi = self.features.consumable_capacity and bool(device.get("allowMultipleAllocations"))
        if not multi and request.admin_access and claim_index in self.allocating_devices.get(device_id, ()):
            return None
        if not request.admin_access and self.device_in_use(device_id):
            return None
        consumes = device.get("consumesCounters") or []
        if not self.features.partitionable_devices and consumes:
            return None
        counters_reserved = False
        if consumes and not (multi and self._capacity_in_use(device_id)):
            if not self.check_available_counters(candidate):
                return None
            counters_reserved = True
        if data.parent is None:
            base, sub_name, parent_name = request.name, "", ""
        else:
            base = parent_name = data.parent.name
            sub_name = request.name
        added: list[Constraint] = []
        marked = False
        consumed: dict[str, Quantity] | None = None
        had_entry = False
        previous = len(self.results[claim_index])

        def rollback() -> None:
            del self.results[claim_index][previous:]
            if consumed is not None:
                entry = self.allocating_capacity.get(device_id)
                if entry is not None:
                    cap.sub_capacity(entry, consumed)
                    if all(v == 0 for v in entry.values()):
                        del self.allocating_capacity[device_id]
                if had_entry and device_id not in self.allocating_capacity:
                    self.allocating_capacity[device_id] = {}
            if marked:
                self.allocating_devices[device_id].discard(claim_index)
            for constraint in reversed(added):
                constraint.remove(base, sub_name)
            if counters_reserved:
                self.deallocate_counters(candidate)

        if self.features.device_taints and taint_prevents_allocation(device, request.tolerations):
            rollback()
            return None
        for constraint in self.constraints[claim_index]:
            if not constraint.add(base, sub_name, device, device_id):
                rollback()
                if must:
                    raise AllocationError(
                        f"claim {claim_ref(self.claims[claim_index])}, request {request.name}: cannot add device "
                        f"{'/'.join(device_id)} because a claim constraint would not be satisfied"
                    )
                return None
            added.append(constraint)
        if not multi:
            self.allocating_devices.setdefault(device_id, set()).add(claim_index)
            marked = True
        share_id = None
        if self.features.consumable_capacity:
            if not self.capacity_fits(request, device_id, device):
                rollback()
                return None
            if multi:
                consumed = cap.consumed_capacity_from_request(request.capacity, device.get("capacity") or {})
                share_id = str(uuid.uuid4())
                had_entry = device_id in self.allocating_capacity
                cap.add_capacity(self.allocating_capacity.setdefault(device_id, {}), consumed)
        self.results[claim_index].append(
            DeviceResult(
                request=request.name,
                parent_request=parent_name,
                id=device_id,
                device=device,
                slice=candidate.slice,
                tolerations=request.tolerations,
                share_id=share_id,
                consumed_capacity=consumed or None,
                admin_access=True if request.admin_access else None,
            )
        )
        return rollback

    # --- counters --------------------------------------------------------------------------

    def check_available_counters(self, candidate: DeviceWithID) -> bool:
        """``checkAvailableCounters``: reserve the device's counters if the pool has them left."""
        pool = candidate.pool
        available = self.owner.available_counters(pool)
        consumed_pool = self.consumed_counters.setdefault(pool.pool, {})
        for consumption in candidate.device.get("consumesCounters") or []:
            consumed_set = consumed_pool.setdefault(consumption.get("counterSet", ""), {})
            for name, counter in (consumption.get("counters") or {}).items():
                consumed_set[name] = consumed_set.get(name, Decimal(0)) + cap.counter_value(counter)
        for set_name, counters in available.items():
            consumed_set = consumed_pool.get(set_name, {})
            for name, value in counters.items():
                if value < consumed_set.get(name, Decimal(0)):
                    self.deallocate_counters(candidate)
                    return False
        return True

    def deallocate_counters(self, candidate: DeviceWithID) -> None:
        """``deallocateCountersForDevice``."""
        consumed_pool = self.consumed_counters.get(candidate.pool.pool, {})
        for consumption in candidate.device.get("consumesCounters") or []:
            consumed_set = consumed_pool.setdefault(consumption.get("counterSet", ""), {})
            for name, counter in (consumption.get("counters") or {}).items():
                consumed_set[name] = consumed_set.get(name, Decimal(0)) - cap.counter_value(counter)

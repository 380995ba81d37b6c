"""The structured allocator, as v1.36.3's "incubating" variant
(``structured/internal/incubating/allocator_incubating.go``: ``NewAllocator``, ``Allocate``,
``validateDeviceRequest``, ``createNodeSelector`` and the result's configs). ``structured.NewAllocator``
picks the first variant whose features cover the enabled ones: with v1.36.3's default gates
(DRAConsumableCapacity and DRADeviceBindingConditions on, DRAListTypeAttributes off) that is
"incubating"; "stable" lacks consumable capacity and binding conditions, "experimental" only adds
list-type attributes. The search itself is :mod:`.search`, pools :mod:`.pools`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from app.plugins.dynamicresources.cel import Cache, DeviceContext
from app.plugins.dynamicresources.structured import capacity as cap
from app.plugins.dynamicresources.structured.api import (
    AllocatedState,
    AllocationError,
    DeviceID,
    Features,
    NodeAllocationError,
    Object,
)
from app.plugins.dynamicresources.structured.pools import Pool, gather_pools
from app.plugins.dynamicresources.structured.requests import ALL, EXACT_COUNT, Constraint, RequestAccessor
from app.plugins.dynamicresources.structured.search import (
    ALLOCATION_RESULTS_MAX_SIZE,
    DeviceResult,
    DeviceWithID,
    RequestData,
    Search,
    _StopError,
    claim_ref,
)

_MAX_INT = (1 << 63) - 1


def _spec(obj: Object) -> Any:
    return obj.get("spec") or {}


class StructuredAllocator:
    """``incubating.Allocator``: built once per scheduling cycle, :meth:`allocate` per node."""

    def __init__(
        self,
        features: Features,
        allocated_state: AllocatedState,
        classes: Mapping[str, Object],
        slices: Sequence[Object],
        cel_cache: Cache,
    ) -> None:
        self.features = features
        self.allocated_devices = allocated_state.allocated_devices
        self.allocated_shared = allocated_state.allocated_shared_device_ids
        self.aggregated_capacity: dict[DeviceID, dict[str, Decimal]] = {
            device: {name: Decimal(v) if not isinstance(v, Decimal) else v for name, v in consumed.items()}
            for device, consumed in allocated_state.aggregated_capacity.items()
        }
        self.classes = classes
        self.cel_cache = cel_cache
        self.all_slices = list(slices)
        self.slices_on_node: dict[str, list[Object]] = {}
        self.slices_shared: list[Object] = []
        for slice_ in self.all_slices:
            spec = _spec(slice_)
            node_name = spec.get("nodeName") or ""
            if not node_name or spec.get("sharedCounters"):
                self.slices_shared.append(slice_)
            else:
                self.slices_on_node.setdefault(node_name, []).append(slice_)
        self._counters: dict[str, dict[str, dict[str, Decimal]]] = {}
        self.num_allocate_one_invocations = 0

    def cel_input(self, driver: str, device: Object) -> DeviceContext:
        """The device's CEL input, converted once (kept by the CEL cache across allocators).
        Raises ``ValueError`` for an attribute CEL cannot represent."""
        return self.cel_cache.device_context(driver, device)

    def is_allocated(self, device_id: DeviceID) -> bool:
        """``internal.IsDeviceAllocated``: exclusively, by a share, or with consumed capacity."""
        return (
            device_id in self.allocated_devices
            or any(shared[:3] == device_id for shared in self.allocated_shared)
            or device_id in self.aggregated_capacity
        )

    def available_counters(self, pool: Pool) -> dict[str, dict[str, Decimal]]:
        """The pool's counters less what allocated devices consume, computed once per pool."""
        found = self._counters.get(pool.pool)
        if found is not None:
            return found
        available = {
            name: {c: cap.counter_value(v) for c, v in (counter_set.get("counters") or {}).items()}
            for name, counter_set in pool.counter_sets.items()
        }
        for slice_ in pool.device_slices_targeting_node + pool.device_slices_not_targeting_node:
            spec = _spec(slice_)
            for device in spec.get("devices") or ():
                device_id = (spec.get("driver", ""), (spec.get("pool") or {}).get("name", ""), device.get("name", ""))
                if not self.is_allocated(device_id):
                    continue
                for consumption in device.get("consumesCounters") or ():
                    counters = available.get(consumption.get("counterSet", ""), {})
                    for name, counter in (consumption.get("counters") or {}).items():
                        if name in counters:
                            counters[name] -= cap.counter_value(counter)
        self._counters[pool.pool] = available
        return available

    def allocate(
        self, node: Object, claims: Sequence[Object], deadline: float | None = None
    ) -> list[dict[str, Any]] | None:
        """``Allocate``: one AllocationResult per claim, ``None`` when they do not fit ``node``.
        Raises :class:`AllocationError` (fatal), :class:`NodeAllocationError` (this node only) or
        :class:`AllocationTimeoutError` (``time.monotonic()`` passed ``deadline``)."""
        node_name = (node.get("metadata") or {}).get("name", "")
        claims = list(claims)
        pools = gather_pools(
            self.slices_on_node.get(node_name, []) + self.slices_shared, node, self.features, self.all_slices
        )
        search = Search(self, node, claims, pools, deadline)
        for claim_index, claim in enumerate(claims):
            self._prepare_claim(search, claim_index, claim, pools)
        try:
            done = search.allocate_one((0, 0, 0, 0), False, (0, 0, 0))
        except _StopError:
            done = False
        finally:
            self.num_allocate_one_invocations += search.invocations
        if not done:
            if any(pool.is_invalid for pool in pools):
                raise NodeAllocationError("invalid resource pools were encountered")
            return None
        return [self._result(search, i, claim, node_name) for i, claim in enumerate(claims)]

    def _prepare_claim(self, search: Search, claim_index: int, claim: Object, pools: list[Pool]) -> None:
        devices = _spec(claim).get("devices") or {}
        min_devices = 0
        for request_index, request in enumerate(devices.get("requests") or []):
            sub_requests = request.get("firstAvailable") or []
            if sub_requests and not self.features.prioritized_list:
                raise AllocationError(
                    f"claim {claim_ref(claim)}, request {request.get('name', '')}: has subrequests, "
                    "but the DRAPrioritizedList feature is disabled"
                )
            if not self.features.consumable_capacity:
                if (request.get("exactly") or {}).get("capacity") is not None:
                    raise AllocationError(
                        f"claim {claim_ref(claim)}, request {request.get('name', '')}: has capacity requests, "
                        "but the DRAConsumableCapacity feature is disabled"
                    )
                for sub in sub_requests:
                    if sub.get("capacity") is not None:
                        raise AllocationError(
                            f"claim {claim_ref(claim)}, subrequest {sub.get('name', '')}: has capacity requests, "
                            "but the DRAConsumableCapacity feature is disabled"
                        )
            if sub_requests:
                parent = RequestAccessor(request, sub_request=False)
                least = None
                for sub_index, sub in enumerate(sub_requests):
                    key = (claim_index, request_index, sub_index)
                    data = self._validate(search, RequestAccessor(sub, sub_request=True), parent, key, pools)
                    search.request_data[key] = data
                    least = data.num_devices if least is None else min(least, data.num_devices)
                min_devices += least or 0
            else:
                key = (claim_index, request_index, 0)
                data = self._validate(search, RequestAccessor(request, sub_request=False), None, key, pools)
                search.request_data[key] = data
                min_devices += data.num_devices
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(
                f"claim {claim_ref(claim)}: number of requested devices {min_devices} exceeds the claim limit "
                f"of {ALLOCATION_RESULTS_MAX_SIZE}"
            )
        constraints: list[Constraint] = []
        for i, constraint in enumerate(devices.get("constraints") or []):
            names = frozenset(constraint.get("requests") or ())
            if constraint.get("matchAttribute") is not None:
                constraints.append(Constraint(names, constraint["matchAttribute"], distinct=False))
            elif constraint.get("distinctAttribute") is not None:
                constraints.append(Constraint(names, constraint["distinctAttribute"], distinct=True))
            else:
                raise AllocationError(
                    f"claim {claim_ref(claim)}, constraint #{i}: empty constraint (unsupported constraint type?)"
                )
        search.constraints[claim_index] = constraints

    def _validate(
        self,
        search: Search,
        request: RequestAccessor,
        parent: RequestAccessor | None,
        key: tuple[int, int, int],
        pools: list[Pool],
    ) -> RequestData:
        """``validateDeviceRequest``."""
        claim = search.claims[key[0]]
        data = RequestData(request, parent)
        for i, selector in enumerate(request.selectors):
            if (selector.get("cel") or {}).get("expression") is None:
                raise AllocationError(
                    f"claim {claim_ref(claim)}, request {request.name}, selector #{i}: CEL expression empty "
                    "(unsupported selector type?)"
                )
        if not self.features.admin_access and request.has_admin_access:
            raise AllocationError(
                f"claim {claim_ref(claim)}, request {request.name}: admin access is requested, "
                "but the feature is disabled"
            )
        class_name = request.device_class_name
        if not class_name:
            raise AllocationError(
                f"claim {claim_ref(claim)}, request {request.name}: missing device class name "
                "(unsupported request type?)"
            )
        device_class = self.classes.get(class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {claim_ref(claim)}, request {request.name}: could not retrieve device class {class_name}: "
                f'deviceclass.resource.k8s.io "{class_name}" not found'
            )
        data.device_class = device_class
        mode = request.allocation_mode
        if mode == EXACT_COUNT:
            if request.count > _MAX_INT:
                raise AllocationError(
                    f"claim {claim_ref(claim)}, request {request.name}: exact count {request.count} is too large"
                )
            data.num_devices = request.count
        elif mode == ALL:
            for pool in pools:
                if pool.is_incomplete:
                    raise AllocationError(
                        f"claim {claim_ref(claim)}, request {request.name}: asks for all devices, but resource pool "
                        f"{pool.driver}/{pool.pool} is currently being updated"
                    )
                if pool.is_invalid:
                    raise AllocationError(
                        f"claim {claim_ref(claim)}, request {request.name}: asks for all devices, but resource pool "
                        f"{pool.driver}/{pool.pool} is currently invalid"
                    )
                for slice_ in pool.device_slices_targeting_node:
                    spec = _spec(slice_)
                    for device in spec.get("devices") or ():
                        if not search.is_selectable(key, data, slice_, device):
                            continue
                        device_id = (
                            spec.get("driver", ""),
                            (spec.get("pool") or {}).get("name", ""),
                            device.get("name", ""),
                        )
                        if self.features.consumable_capacity and not search.capacity_fits(request, device_id, device):
                            continue
                        data.all_devices.append(DeviceWithID(device_id, device, slice_, pool))
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(f"claim {claim_ref(claim)}, request {request.name}: unsupported count mode {mode}")
        return data

    def _result(self, search: Search, claim_index: int, claim: Object, node_name: str) -> dict[str, Any]:
        """The claim's AllocationResult: device results, configs, node selector."""
        results = [self._device_result(d) for d in search.results[claim_index]]
        devices = _spec(claim).get("devices") or {}
        requests = devices.get("requests") or []
        configs: list[dict[str, Any]] = []
        class_ranges: dict[str, tuple[int, int]] = {}
        for request_index in range(len(requests)):
            data = search.request_data[(claim_index, request_index, 0)]
            if data.parent is not None:
                data = search.request_data[(claim_index, request_index, data.selected_sub_request_index)]
            device_class = data.device_class
            if device_class is None:
                continue
            class_name = (device_class.get("metadata") or {}).get("name", "")
            if class_name in class_ranges:
                start, end = class_ranges[class_name]
                for i in range(start, end):
                    configs[i]["requests"].append(data.request_name())
                continue
            start = len(configs)
            for config in _spec(device_class).get("config") or []:
                configs.append({"source": "FromClass", "requests": [data.request_name()], **_device_config(config)})
            class_ranges[class_name] = (start, len(configs))
        for config in devices.get("config") or []:
            wanted = config.get("requests") or []
            entry = {"source": "FromClaim", **({"requests": list(wanted)} if wanted else {}), **_device_config(config)}
            if not wanted:
                configs.append(entry)
                continue
            for request_index, request in enumerate(requests):
                if request.get("name") in wanted:
                    configs.append(dict(entry))
                    continue
                data = search.request_data[(claim_index, request_index, 0)]
                if data.parent is None:
                    continue
                sub = (request.get("firstAvailable") or [])[data.selected_sub_request_index]
                if f"{request.get('name', '')}/{sub.get('name', '')}" in wanted:
                    configs.append(dict(entry))
        allocation: dict[str, Any] = {"devices": {"results": results}}
        if configs:
            allocation["devices"]["config"] = configs
        node_selector = _node_selector(
            search.results[claim_index], node_name, (claim.get("metadata") or {}).get("name", "")
        )
        if node_selector is not None:
            allocation["nodeSelector"] = node_selector
        return allocation

    def _device_result(self, d: DeviceResult) -> dict[str, Any]:
        out: dict[str, Any] = {"request": d.request_name(), "driver": d.id[0], "pool": d.id[1], "device": d.id[2]}
        if d.admin_access is not None:
            out["adminAccess"] = d.admin_access
        if d.tolerations:
            out["tolerations"] = d.tolerations
        if self.features.device_binding_and_status:
            if d.device.get("bindingConditions"):
                out["bindingConditions"] = list(d.device["bindingConditions"])
            if d.device.get("bindingFailureConditions"):
                out["bindingFailureConditions"] = list(d.device["bindingFailureConditions"])
        if d.share_id is not None:
            out["shareID"] = d.share_id
        if d.consumed_capacity:
            out["consumedCapacity"] = {name: cap.quantity_string(q) for name, q in d.consumed_capacity.items()}
        return out


def _device_config(config: Object) -> dict[str, Any]:
    """The ``DeviceConfiguration`` of a class or claim config (``opaque``)."""
    return {k: v for k, v in config.items() if k not in ("requests", "source")}


def _node_selector(results: list[DeviceResult], node_name: str, claim_name: str) -> dict[str, Any] | None:
    """``createNodeSelector``: the node when a device is local to it or binds to it, else the
    union of the slices' single-term selectors, else none (available everywhere)."""
    fields: list[Object] = []
    expressions: list[Object] = []
    for result in results:
        spec = _spec(result.slice)
        if spec.get("perDeviceNodeSelection"):
            name, selector = result.device.get("nodeName"), result.device.get("nodeSelector")
        else:
            name, selector = spec.get("nodeName"), spec.get("nodeSelector")
        if name is not None or result.device.get("bindsToNode"):
            return {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
                ]
            }
        if selector is not None:
            terms = selector.get("nodeSelectorTerms") or []
            if len(terms) == 1:
                _add_requirements(terms[0].get("matchFields") or [], fields)
                _add_requirements(terms[0].get("matchExpressions") or [], expressions)
            elif len(terms) > 1:
                raise AllocationError(
                    f"create NodeSelector for claim {claim_name}: unsupported ResourceSlice.NodeSelector "
                    f"with {len(terms)} terms"
                )
    if not fields and not expressions:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = expressions
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


def _add_requirements(new: list[Object], into: list[Object]) -> None:
    for requirement in new:
        values = set(requirement.get("values") or ())
        if not any(
            r.get("key") == requirement.get("key")
            and r.get("operator") == requirement.get("operator")
            and set(r.get("values") or ()) == values
            for r in into
        ):
            into.append(requirement)

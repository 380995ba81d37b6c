"""Which resource pools a node can allocate from, as v1.36.3's
``structured/internal/incubating/pools_incubating.go`` (``NodeMatches``, ``GatherPools``,
``buildPool``, the pool validations and ``checkSlicesInPool``).

Pools are sorted by (driver, pool) and their slices by name, so the first-fit search tries devices
in upstream's order; pools with binding conditions come last. A pool whose slices of the newest
generation are not all published is incomplete (nothing is allocated from it, and "All" requests
fail), one with duplicate device names or unknown counters is invalid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from app.framework import objects
from app.framework.labels import node_selector_matches
from app.plugins.dynamicresources.structured.api import Features, Object

PoolID = tuple[str, str]


@dataclass
class Pool:
    """One pool's slices relevant for the node (``Pool``); ``counter_sets`` by name."""

    pool_id: PoolID
    is_incomplete: bool = False
    is_invalid: bool = False
    invalid_reason: str = ""
    device_slices_targeting_node: list[Object] = field(default_factory=list)
    device_slices_not_targeting_node: list[Object] = field(default_factory=list)
    counter_sets: dict[str, Object] = field(default_factory=dict)

    @property
    def driver(self) -> str:
        return self.pool_id[0]

    @property
    def pool(self) -> str:
        return self.pool_id[1]


def node_matches(node: Object | None, node_name: str, all_nodes: bool, node_selector: Object | None) -> bool:
    """``NodeMatches``: by name, all nodes, or the node selector against the node's labels."""
    if node_name:
        return node is not None and (node.get("metadata") or {}).get("name") == node_name
    if all_nodes:
        return True
    if node_selector is not None:
        if node is None:
            return False
        try:
            selector = msgspec.convert(node_selector, objects.NodeSelector)
        except msgspec.ValidationError:
            return False
        meta = node.get("metadata") or {}
        return node_selector_matches(selector, meta.get("name") or "", meta.get("labels") or {})
    return False


def _spec(slice_: Object) -> Mapping[str, Any]:
    spec: Mapping[str, Any] = slice_.get("spec") or {}
    return spec


def slice_pool(slice_: Object) -> tuple[PoolID, int, int]:
    """A slice's pool ID, generation and resourceSliceCount."""
    spec = _spec(slice_)
    pool = spec.get("pool") or {}
    return (
        (spec.get("driver", ""), pool.get("name", "")),
        int(pool.get("generation", 0)),
        int(pool.get("resourceSliceCount", 0)),
    )


def _add_slice(pools: dict[PoolID, list[Object]], slice_: Object) -> None:
    pool_id, generation, _ = slice_pool(slice_)
    existing = pools.get(pool_id)
    if existing is None:
        pools[pool_id] = [slice_]
        return
    current = slice_pool(existing[0])[1]
    if generation < current:
        return
    if generation > current:
        pools[pool_id] = [slice_]
        return
    existing.append(slice_)


def gather_pools(
    slices_for_node: Sequence[Object], node: Object, features: Features, all_slices: Sequence[Object]
) -> list[Pool]:
    """``GatherPools``: the pools with devices accessible from ``node``."""
    pools: dict[PoolID, list[Object]] = {}
    for slice_ in slices_for_node:
        spec = _spec(slice_)
        if not features.partitionable_devices and (
            spec.get("perDeviceNodeSelection") is not None or spec.get("sharedCounters")
        ):
            continue
        node_name, all_nodes, selector = (
            spec.get("nodeName") or "",
            bool(spec.get("allNodes")),
            spec.get("nodeSelector"),
        )
        if spec.get("sharedCounters"):
            relevant = True
        elif node_name or all_nodes or selector is not None:
            relevant = node_matches(node, node_name, all_nodes, selector)
        elif spec.get("perDeviceNodeSelection"):
            relevant = any(
                node_matches(node, d.get("nodeName") or "", bool(d.get("allNodes")), d.get("nodeSelector"))
                for d in spec.get("devices") or ()
            )
        else:
            continue
        if relevant:
            _add_slice(pools, slice_)

    result: list[Pool] = []
    with_binding_conditions: list[Pool] = []
    for pool_id, slices_for_pool in pools.items():
        _, generation, count = slice_pool(slices_for_pool[0])
        all_for_pool: list[Object] | None = None
        if len(slices_for_pool) != count:
            obsolete, all_for_pool = _check_slices_in_pool(all_slices, pool_id, generation)
            if obsolete:
                continue
            if len(all_for_pool) != count:
                result.append(Pool(pool_id, is_incomplete=True))
                continue
        pool = _build_pool(pool_id, slices_for_pool, features, all_for_pool)
        (with_binding_conditions if _has_binding_conditions(pool) else result).append(pool)
    result.sort(key=lambda p: p.pool_id)
    with_binding_conditions.sort(key=lambda p: p.pool_id)
    return result + with_binding_conditions


def _build_pool(pool_id: PoolID, slices: list[Object], features: Features, all_for_pool: list[Object] | None) -> Pool:
    slices = sorted(slices, key=lambda s: (s.get("metadata") or {}).get("name", ""))
    if features.partitionable_devices:
        device_slices = [s for s in slices if not _spec(s).get("sharedCounters")]
        counter_slices = [s for s in slices if _spec(s).get("sharedCounters")]
    else:
        device_slices, counter_slices = slices, []
    names: set[str] = set()
    for slice_ in device_slices:
        for device in _spec(slice_).get("devices") or ():
            if device.get("name") in names:
                return Pool(pool_id, is_invalid=True, invalid_reason=f"duplicate device name {device.get('name')}")
            names.add(device.get("name"))
    if not features.partitionable_devices:
        return Pool(pool_id, device_slices_targeting_node=device_slices)
    counter_sets: dict[str, Object] = {}
    for slice_ in counter_slices:
        for counter_set in _spec(slice_).get("sharedCounters") or ():
            if counter_set.get("name") in counter_sets:
                return Pool(
                    pool_id, is_invalid=True, invalid_reason=f"duplicate counter set name {counter_set['name']}"
                )
            counter_sets[counter_set.get("name", "")] = counter_set
    reason = _validate_counter_consumption(counter_sets, slices)
    if reason:
        return Pool(pool_id, is_invalid=True, invalid_reason=reason)
    if all_for_pool is None or len(slices) == len(all_for_pool):
        return Pool(pool_id, device_slices_targeting_node=device_slices, counter_sets=counter_sets)
    seen = {(s.get("metadata") or {}).get("name") for s in slices}
    not_targeting = [s for s in all_for_pool if (s.get("metadata") or {}).get("name") not in seen]
    reason = _validate_counter_consumption(counter_sets, not_targeting)
    if reason:
        return Pool(pool_id, is_invalid=True, invalid_reason=reason)
    return Pool(
        pool_id,
        device_slices_targeting_node=device_slices,
        device_slices_not_targeting_node=not_targeting,
        counter_sets=counter_sets,
    )


def _validate_counter_consumption(counter_sets: Mapping[str, Object], slices: Sequence[Object]) -> str:
    for slice_ in slices:
        for device in _spec(slice_).get("devices") or ():
            for consumption in device.get("consumesCounters") or ():
                counter_set = counter_sets.get(consumption.get("counterSet", ""))
                if counter_set is None:
                    return f"counter set {consumption.get('counterSet', '')} not found"
                for name in consumption.get("counters") or {}:
                    if name not in (counter_set.get("counters") or {}):
                        return f"counter {name} not found in counter set {counter_set.get('name', '')}"
    return ""


def _has_binding_conditions(pool: Pool) -> bool:
    return any(
        device.get("bindingConditions") is not None
        for slice_ in pool.device_slices_targeting_node
        for device in _spec(slice_).get("devices") or ()
    )


def _check_slices_in_pool(slices: Sequence[Object], pool_id: PoolID, generation: int) -> tuple[bool, list[Object]]:
    """``checkSlicesInPool``: whether ``generation`` is obsolete, else the pool's slices of it."""
    found = []
    for slice_ in slices:
        other_id, other_generation, _ = slice_pool(slice_)
        if other_id != pool_id:
            continue
        if other_generation == generation:
            found.append(slice_)
        elif other_generation > generation:
            return True, []
    return False, found

"""The structured allocator's interface, as v1.36.3's
``staging/src/k8s.io/dynamic-resource-allocation/structured/allocator.go`` and
``structured/schedulerapi/types.go``.

Objects crossing this interface are the ``resource.k8s.io/v1`` JSON the API server serves, as
dicts (``Mapping[str, Any]``): a ResourceClaim, a ResourceSlice, a DeviceClass, a Node, and the
``AllocationResult`` an allocation returns (``{"devices": {"results": [...], "config": [...]},
"nodeSelector": {...}}`` as ``status.allocation`` is written). Device IDs are
``(driver, pool, device)`` tuples.

Usage, as the DynamicResources plugin's Filter calls it::

    allocator = new_allocator(features, allocated_state, classes, slices, cel_cache)
    results = allocator.allocate(node, claims, deadline)   # None: these claims do not fit this node

Errors: ``AllocationError`` (fatal: a selector that does not compile or fails, a missing class;
upstream's Error status), its ``NodeAllocationError`` (this node only: invalid pools; upstream's
``ErrFailedAllocationOnNode``, Unschedulable) and ``AllocationTimeoutError`` (past ``deadline``).
The implementation is v1.36.3's "incubating" allocator, which its default gates select: pools in
:mod:`.pools`, the search in :mod:`.search`, results in :mod:`.allocator`, consumable capacity in
:mod:`.capacity`, taints in :mod:`.taints`; CEL in :mod:`app.plugins.dynamicresources.cel`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.plugins.dynamicresources.cel import Cache
from app.plugins.dynamicresources.structured import pools
from app.plugins.dynamicresources.structured.allocator import StructuredAllocator
from app.plugins.dynamicresources.structured.api import (
    AllocatedState,
    AllocationError,
    AllocationTimeoutError,
    Allocator,
    CELCache,
    DeviceID,
    Features,
    NodeAllocationError,
    Object,
    SharedDeviceID,
)

__all__ = [
    "AllocatedState",
    "AllocationError",
    "AllocationTimeoutError",
    "Allocator",
    "CELCache",
    "DeviceID",
    "Features",
    "NodeAllocationError",
    "Object",
    "SharedDeviceID",
    "StructuredAllocator",
    "is_device_allocated",
    "new_allocator",
    "new_cel_cache",
    "node_matches",
]


def new_cel_cache(max_entries: int = 10) -> CELCache:
    """A cache of ``max_entries`` compiled selectors (upstream: ``cel.NewCache(10, ...)``)."""
    return Cache(max_entries)


def new_allocator(
    features: Features,
    allocated_state: AllocatedState,
    classes: Mapping[str, Object],
    slices: Sequence[Object],
    cel_cache: CELCache,
) -> Allocator:
    """The allocator for ``features`` (``structured.NewAllocator``) over the DeviceClasses by
    name and the ResourceSlices (all of the cluster's; the allocator picks each node's).
    ``cel_cache`` must come from :func:`new_cel_cache`. v1.36.3 picks its "incubating" variant for
    the default features, ported here (:mod:`.allocator`); the features select its behaviour."""
    if not isinstance(cel_cache, Cache):
        raise AllocationError("internal error: the CEL cache was not made by new_cel_cache")
    return StructuredAllocator(features, allocated_state, classes, slices, cel_cache)


def node_matches(
    features: Features, node: Object, node_name: str, all_nodes: bool, node_selector: Object | None
) -> bool:
    """Whether a slice's ``nodeName``/``allNodes``/``nodeSelector`` selects ``node``
    (``structured.NodeMatches``; the same in every variant)."""
    return pools.node_matches(node, node_name, all_nodes, node_selector)


def is_device_allocated(device_id: DeviceID, allocated_state: AllocatedState) -> bool:
    """Whether the device is allocated, exclusively or by a share of its capacity
    (``structured.IsDeviceAllocated``, ``internal/allocatedstate.go``)."""
    return (
        device_id in allocated_state.allocated_devices
        or any(shared[:3] == device_id for shared in allocated_state.allocated_shared_device_ids)
        or device_id in allocated_state.aggregated_capacity
    )

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
    results = allocator.allocate(node, claims)   # None: these claims do not fit this node
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.framework.errors import SchedulerExtenderError

#: ``(driver, pool, device)``: schedulerapi.DeviceID.
DeviceID = tuple[str, str, str]
#: ``(driver, pool, device, shareID or "")``: schedulerapi.SharedDeviceID.
SharedDeviceID = tuple[str, str, str, str]
#: A ResourceClaim, ResourceSlice, DeviceClass, Node or AllocationResult as API JSON.
Object = Mapping[str, Any]


@dataclass(frozen=True)
class Features:
    """The allocator's features (``structured/internal/types.go`` Features), each from its
    feature gate; the defaults are v1.36.3's default gates."""

    admin_access: bool = True  # DRAAdminAccess (GA)
    consumable_capacity: bool = True  # DRAConsumableCapacity (beta, on)
    device_binding_and_status: bool = True  # DRADeviceBindingConditions + DRAResourceClaimDeviceStatus
    device_taints: bool = True  # DRADeviceTaints (beta, on)
    list_type_attributes: bool = False  # DRAListTypeAttributes (alpha, off)
    partitionable_devices: bool = True  # DRAPartitionableDevices (beta, on)
    prioritized_list: bool = True  # DRAPrioritizedList (GA)


@dataclass
class AllocatedState:
    """What is allocated already, cluster-wide (schedulerapi.AllocatedState): devices allocated
    exclusively, devices shared by consumable capacity (with their share IDs), and the capacity
    consumed of each shared device (quantities in the capacity's canonical integer unit)."""

    allocated_devices: set[DeviceID] = field(default_factory=set)
    allocated_shared_device_ids: set[SharedDeviceID] = field(default_factory=set)
    aggregated_capacity: dict[DeviceID, dict[str, int]] = field(default_factory=dict)


class Allocator(Protocol):
    """One allocation attempt's allocator, built for one PreFilter's claims and state."""

    def allocate(self, node: Object, claims: Sequence[Object]) -> list[dict[str, Any]] | None:
        """One ``AllocationResult`` per claim (in ``claims`` order) allocating every claim on
        ``node``, or ``None`` when they cannot all be allocated there (incomplete slices
        included). Raises ``AllocationError`` for a fatal problem of the input (a CEL selector
        that does not compile or exceeds the cost limit), which the caller reports on the pod."""
        ...


class AllocationError(SchedulerExtenderError, ValueError):
    """A fatal problem of the allocation's input (upstream's non-nil error of ``Allocate``): a
    class or request selector that fails to compile or exceeds the CEL cost limit, an invalid
    claim. The message names the claim, request or class; the scheduler reports it on the pod."""


class CELCache(Protocol):
    """Compiled CEL selectors shared across allocations (``dynamic-resource-allocation/cel``
    ``Cache``); built by ``new_cel_cache``."""


def new_cel_cache(max_entries: int = 10) -> CELCache:
    """A cache of ``max_entries`` compiled selectors (upstream: ``cel.NewCache(10, ...)``)."""
    raise NotImplementedError("the structured allocator is not built yet")


def new_allocator(
    features: Features,
    allocated_state: AllocatedState,
    classes: Mapping[str, Object],
    slices: Sequence[Object],
    cel_cache: CELCache,
) -> Allocator:
    """The allocator for ``features`` (``structured.NewAllocator``) over the DeviceClasses by
    name and the ResourceSlices (all of the cluster's; the allocator picks each node's)."""
    raise NotImplementedError("the structured allocator is not built yet")


def node_matches(
    features: Features, node: Object, node_name: str, all_nodes: bool, node_selector: Object | None
) -> bool:
    """Whether a slice's ``nodeName``/``allNodes``/``nodeSelector`` selects ``node``
    (``structured.NodeMatches``)."""
    raise NotImplementedError("the structured allocator is not built yet")

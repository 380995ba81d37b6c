"""The structured allocator's types (v1.36.3 ``structured/schedulerapi/types.go``,
``structured/internal/types.go``), re-exported by :mod:`app.plugins.dynamicresources.structured`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
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
    consumed of each shared device: capacity name -> the sum of the allocations'
    ``consumedCapacity`` quantities, exact (a ``Decimal``, e.g. from
    ``app.plugins.dynamicresources.cel.quantity.quantity("500m").value``) or an ``int``."""

    allocated_devices: set[DeviceID] = field(default_factory=set)
    allocated_shared_device_ids: set[SharedDeviceID] = field(default_factory=set)
    aggregated_capacity: dict[DeviceID, dict[str, int | Decimal]] = field(default_factory=dict)


class Allocator(Protocol):
    """One allocation attempt's allocator, built for one PreFilter's claims and state."""

    def allocate(
        self, node: Object, claims: Sequence[Object], deadline: float | None = None
    ) -> list[dict[str, Any]] | None:
        """One ``AllocationResult`` per claim (in ``claims`` order) allocating every claim on
        ``node``, or ``None`` when they cannot all be allocated there (incomplete slices
        included). Raises ``AllocationError`` for a fatal problem of the input (a CEL selector
        that does not compile or fails on a device), which the caller reports on the pod;
        ``NodeAllocationError`` when only this node fails (invalid pools: the node is
        unschedulable with the message); ``AllocationTimeoutError`` once ``time.monotonic()``
        passes ``deadline`` (upstream's context deadline, the Filter timeout)."""
        ...


class AllocationError(SchedulerExtenderError, ValueError):
    """A fatal problem of the allocation's input (upstream's non-nil error of ``Allocate``): a
    class or request selector that fails to compile or exceeds the CEL cost limit, an invalid
    claim. The message names the claim, request or class; the scheduler reports it on the pod."""


class CELCache(Protocol):
    """Compiled CEL selectors shared across allocations (``dynamic-resource-allocation/cel``
    ``Cache``); built by ``new_cel_cache``."""


class NodeAllocationError(AllocationError):
    """Allocation failed on this one node only (upstream's ``ErrFailedAllocationOnNode``, e.g.
    ``invalid resource pools were encountered``): the caller marks the node unschedulable with
    this message and goes on with other nodes, instead of failing the whole attempt."""


class AllocationTimeoutError(AllocationError):
    """The allocation passed its deadline (upstream: the Filter's context deadline,
    ``DRASchedulerFilterTimeout``): ``filter operation aborted: context deadline exceeded``. The
    plugin returns an Error status ("node NAME: timed out trying to allocate devices") so the pod
    retries with backoff."""

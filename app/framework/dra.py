"""What the DynamicResources plugin may ask of the cluster state about Dynamic Resource
Allocation: kube-scheduler v1.36.3's ``fwk.SharedDRAManager`` (staging/src/k8s.io/kube-scheduler/
framework/interface.go; implemented in pkg/scheduler/framework/plugins/dynamicresources/
``dra_manager.go`` and ``allocateddevices.go``) and the claim writes its PreBind, PostFilter and
Unreserve make.

Objects are the ``resource.k8s.io/v1`` JSON the API server serves, as dicts (ResourceClaim,
ResourceSlice, DeviceClass); device IDs are ``(driver, pool, device)``, shared device IDs add the
share ID. The cluster state (``app.cluster.dra``) keeps them for every plugin that declares
``ClusterNeeds.dynamic_resources`` and serves them through a :class:`DRALister`, shared by every
profile as upstream's one DRA manager is: the allocated devices follow the claims' latest
``status.allocation`` (the assume cache's view), and the in-flight allocations of claims reserved
but not yet written count as allocated, so two pods never receive one device between their
scheduling cycles and their binds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

#: A ResourceClaim, ResourceSlice or DeviceClass as API JSON.
Object = Mapping[str, Any]
#: ``(driver, pool, device)``
DeviceID = tuple[str, str, str]
#: ``(driver, pool, device, shareID)``
SharedDeviceID = tuple[str, str, str, str]

#: ``resourceapi.Finalizer``: added to a claim before its allocation is written
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"


@dataclass
class AllocatedDevices:
    """What is allocated cluster-wide (``GatherAllocatedState``): devices allocated exclusively,
    shared devices by share ID, and the capacity consumed of each shared device (exact decimal
    quantities, by capacity name)."""

    devices: set[DeviceID] = field(default_factory=set)
    shared: set[SharedDeviceID] = field(default_factory=set)
    capacity: dict[DeviceID, dict[str, Decimal]] = field(default_factory=dict)


class DRALister(Protocol):
    """The watched DRA objects and the allocation tracker (``SharedDRAManager``); thread-safe."""

    def claim(self, namespace: str, name: str) -> Object | None:
        """The ResourceClaim ``namespace/name`` as the scheduler knows it (the latest of the watch
        and of its own writes, ``ResourceClaims().Get``), or ``None``."""
        ...

    def device_class(self, name: str) -> Object | None:
        """The DeviceClass ``name``, or ``None``."""
        ...

    def device_classes(self) -> Mapping[str, Object]:
        """Every DeviceClass by name (a snapshot)."""
        ...

    def slices(self) -> Sequence[Object]:
        """Every ResourceSlice (a snapshot; ``ListWithDeviceTaintRules`` without taint rules: the
        ``DRADeviceTaintRules`` gate is off in v1.36)."""
        ...

    def gather_allocated_state(self) -> AllocatedDevices:
        """The devices allocated by the claims plus those of in-flight allocations
        (``GatherAllocatedState``); with ``consumable_capacity`` off, shared devices count as
        allocated exclusively."""
        ...

    def pending_allocation(self, uid: str) -> Object | None:
        """The in-flight ``AllocationResult`` of claim ``uid`` (``GetPendingAllocation``)."""
        ...

    def signal_pending_allocation(self, uid: str, claim: Object) -> None:
        """``SignalClaimPendingAllocation``: ``claim`` (with its ``status.allocation``) is in
        flight; a second signal for the same claim adds a sharer."""
        ...

    def maybe_remove_pending_allocation(self, uid: str, force: bool) -> bool:
        """``MaybeRemoveClaimPendingAllocation``: one sharer less (all with ``force``); whether the
        in-flight allocation is gone."""
        ...

    def assume_claim(self, claim: Object) -> str:
        """``AssumeClaimAfterAPICall``: the claim the API server returned after a write replaces
        the known one until the watch shows a newer version; ``""`` or why it was not kept."""
        ...

    def restore_claim(self, namespace: str, name: str) -> None:
        """``AssumedClaimRestore``: back to the watch's version of the claim."""
        ...


@dataclass(frozen=True)
class ClaimWrite:
    """One API call on a ResourceClaim: ``verb`` is ``get``, ``update`` (PUT of the claim: its
    finalizers), ``update_status`` (PUT of ``/status``; ``body.metadata.resourceVersion`` is the
    precondition: 409 Conflict when the claim changed) or ``patch_status`` (a strategic-merge
    PATCH of ``/status``)."""

    verb: str
    namespace: str
    name: str
    body: Object | None = None


@dataclass(frozen=True)
class ClaimWriteResult:
    """The API server's answer: the claim it returned, or the error and its HTTP status (409 a
    conflict, 404 not found, 0 no answer)."""

    claim: dict[str, Any] | None = None
    error: str = ""
    code: int = 0

    @property
    def conflict(self) -> bool:
        """A 409 Conflict (``apierrors.IsConflict``): the claim changed since it was read."""
        return self.code == 409


__all__ = [
    "CLAIM_FINALIZER",
    "AllocatedDevices",
    "ClaimWrite",
    "ClaimWriteResult",
    "DRALister",
    "DeviceID",
    "Object",
    "SharedDeviceID",
]

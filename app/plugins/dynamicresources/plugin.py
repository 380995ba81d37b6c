"""DynamicResources: a pod's ResourceClaims are allocated devices on the node chosen, and the
allocation and the pod's reservation are written to each claim before the pod is bound.

Ports kube-scheduler v1.36.3's plugin (pkg/scheduler/framework/plugins/dynamicresources/
``dynamicresources.go``; ``claims.go`` in :mod:`.claims`, the DRA manager and
``allocateddevices.go`` in :mod:`app.cluster.dra`, the hints in :mod:`.hints`, ``bindClaim`` in
:mod:`.binding`) over the structured allocator (:mod:`.structured`). Args
(``DynamicResourcesArgs``): ``filterTimeout`` (default ``10s`` with ``DRASchedulerFilterTimeout``,
``0`` none, never negative) and ``bindingTimeout`` (default ``600s``, at least ``1s``).

- **PreEnqueue**: every claim exists (by ``resourceClaimName``, or a template's claim named in
  ``status.resourceClaimStatuses``), is not being deleted and, a template's, is owned by the pod.
- **PreFilter**: ``Skip`` without claims; ``UnschedulableAndUnresolvable`` for a claim in flight
  for another pod, a missing class (``request r: device class c does not exist``); then the
  allocator over the slices, classes and the allocated devices (in-flight ones included).
- **Filter**: an allocated claim's node selector (``resourceclaim not available on the node``);
  the allocator on the node (``cannot allocate all claims``; a broken selector is an ``Error``),
  within ``filterTimeout`` (the allocator's deadline: ``node n: timed out trying to allocate
  devices``, an ``Error``).
- **PostFilter**: a claim allocated but unavailable and reserved by nobody else is deallocated
  (``deallocation of ResourceClaim completed``); else ``no new claims to deallocate`` or
  ``still not schedulable``. The write runs on the event loop without being awaited.
- **Score** (``DRAPrioritizedList``): ``firstAvailable`` subrequests chosen earlier score more.
- **Reserve/Unreserve**: the node's allocations put in flight / dropped (the claim restored, the
  pod's reservation removed by a strategic-merge patch sent without waiting).
- **PreBind**: :func:`~.binding.bind_claim` per claim not reserved for the pod, then waits for
  binding conditions (polling every 5 s, up to ``bindingTimeout``); no ``BindingConditionsPending``
  event is written.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import msgspec
from pydantic import model_validator

from app.framework import SignFragment, features, objects
from app.framework.args import PluginArgs
from app.framework.dra import AllocatedDevices, ClaimWrite, DRALister, Object
from app.framework.events import ClusterEventWithHint
from app.framework.handle import ClusterHandle, ClusterNeeds, Handle
from app.framework.labels import node_selector_matches
from app.framework.profile import Duration, parse_duration
from app.framework.registry import PluginEntry
from app.framework.scores import MAX_NODE_SCORE, default_normalize_score
from app.framework.status import SKIP, SUCCESS, Code, Status
from app.framework.types import CycleState, NodeInfo, NodeScore, PodInfo, PreFilterResult
from app.plugins.dynamicresources import binding, claims, hints, structured
from app.plugins.dynamicresources.claims import ClaimError, ClaimStore, allocation, kobj

log = logging.getLogger(__name__)

NAME = "DynamicResources"
STATE_KEY = NAME
#: ``DynamicResourcesFilterTimeoutDefault`` and ``DynamicResourcesBindingTimeoutDefault`` (seconds)
DEFAULT_FILTER_TIMEOUT, DEFAULT_BINDING_TIMEOUT = 10.0, 600.0
#: ``resourceapi.FirstAvailableDeviceRequestMaxSize``
FIRST_AVAILABLE_MAX = 8
#: how often PreBind looks at binding conditions (seconds)
BINDING_POLL = 5.0
_NOT_FOUND = "not found"


class DynamicResourcesArgs(PluginArgs):
    """``DynamicResourcesArgs``: ``filterTimeout`` (how long Filter's allocation may take on one
    node, a Go duration: ``10s`` when unset, ``0`` no limit, never negative) and
    ``bindingTimeout`` (how long PreBind waits for binding conditions: ``600s`` when unset, at
    least ``1s``)."""

    filter_timeout: Duration | None = None
    binding_timeout: Duration | None = None

    @model_validator(mode="after")
    def _validate(self) -> DynamicResourcesArgs:
        """``ValidateDynamicResourcesArgs`` under the process's feature gates."""
        gates = features.current()
        if self.filter_timeout is not None:
            if not gates.enabled("DRASchedulerFilterTimeout"):
                raise ValueError("filterTimeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled")
            if parse_duration(self.filter_timeout) < 0:
                raise ValueError(f"filterTimeout: Invalid value: {self.filter_timeout!r}: must be zero or positive")
        if self.binding_timeout is not None:
            if not _binding_conditions(gates):
                raise ValueError(
                    "bindingTimeout: Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus "
                    "feature gate is disabled"
                )
            if parse_duration(self.binding_timeout) < 1:
                raise ValueError(f"bindingTimeout: Invalid value: {self.binding_timeout!r}: must be at least 1 second")
        return self


def _binding_conditions(gates: features.FeatureGates) -> bool:
    return gates.enabled("DRADeviceBindingConditions") and gates.enabled("DRAResourceClaimDeviceStatus")


def allocator_features(gates: features.FeatureGates) -> structured.Features:
    """``AllocatorFeatures``: the allocator's features from the gates."""
    return structured.Features(
        admin_access=gates.enabled("DRAAdminAccess"),
        consumable_capacity=gates.enabled("DRAConsumableCapacity"),
        device_binding_and_status=_binding_conditions(gates),
        device_taints=gates.enabled("DRADeviceTaints"),
        list_type_attributes=gates.enabled("DRAListTypeAttributes"),
        partitionable_devices=gates.enabled("DRAPartitionableDevices"),
        prioritized_list=gates.enabled("DRAPrioritizedList"),
    )


@dataclass
class ClaimInfo:
    """``informationForClaim``: an allocated claim's node selector; Reserve's allocation."""

    available_on_nodes: objects.NodeSelector | None = None
    allocation: Object | None = None


@dataclass
class StateData:
    """``stateData``: written at PreFilter, filled by Filter per node (under ``lock``), read by
    PostFilter, Score, Reserve, PreBind and Unreserve. Shared, not copied, by clones."""

    claims: ClaimStore = field(default_factory=ClaimStore)
    allocator: structured.Allocator | None = None
    informations: list[ClaimInfo] = field(default_factory=list)
    unavailable_claims: set[int] = field(default_factory=set)
    node_allocations: dict[str, list[Object]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clone(self) -> StateData:
        """``Clone``: the same state."""
        return self


def _state(state: CycleState) -> StateData | None:
    data = state.get(STATE_KEY)
    return data if isinstance(data, StateData) else None


def _unresolvable(reason: str) -> Status:
    """``statusUnschedulable``."""
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,))


def to_allocated_state(gathered: AllocatedDevices) -> structured.AllocatedState:
    """The cluster state's :class:`~app.framework.dra.AllocatedDevices` as the allocator's
    ``AllocatedState`` (consumed capacity as exact decimals)."""
    capacity: dict[structured.DeviceID, dict[str, int | Decimal]] = {
        device: dict(per) for device, per in gathered.capacity.items()
    }
    return structured.AllocatedState(
        allocated_devices=set(gathered.devices),
        allocated_shared_device_ids=set(gathered.shared),
        aggregated_capacity=capacity,
    )


def node_object(info: NodeInfo) -> dict[str, Any]:
    """The node as API JSON for the allocator (``metadata.name`` at least)."""
    if info.node is None:
        return {"metadata": {"name": info.name}}
    node: dict[str, Any] = msgspec.to_builtins(info.node)
    node.setdefault("metadata", {})["name"] = info.name
    return node


def compute_score(pod_claims: Sequence[Object], results: Sequence[Object]) -> int:
    """``computeScore``: for each claim (its ``status.allocation``, else the next of ``results``,
    the node's allocations of the claims to allocate), ``8 - i`` per ``firstAvailable`` request
    whose subrequest ``i`` was chosen. Raises ``ValueError`` when ``results`` are too few."""
    score, pending = 0, iter(results)
    for claim in pod_claims:
        alloc = allocation(claim)
        if alloc is None:
            alloc = next(pending, None)
            if alloc is None:
                raise ValueError(
                    f"number of allocations {len(results)} is smaller than number of claims needing allocation"
                )
        chosen = {
            str(r.get("request"))
            for r in ((alloc.get("devices") or {}).get("results") or ())
            if len(str(r.get("request")).split("/")) == 2
        }
        for request in claims.requests(claim):
            if request.get("exactly") is not None:
                continue
            for i, sub in enumerate(request.get("firstAvailable") or ()):
                if f"{request.get('name')}/{(sub or {}).get('name')}" in chosen:
                    score += FIRST_AVAILABLE_MAX - i
    return score


class DynamicResources:
    """PreEnqueue, PreFilter, Filter, PostFilter, Score, Reserve, Unreserve, PreBind (module
    doc); ``EventsToRegister`` in :mod:`.hints`."""

    name = NAME

    def __init__(self, args: DynamicResourcesArgs | None = None, handle: Handle | None = None) -> None:
        args = args or DynamicResourcesArgs()
        self.handle = handle or Handle("")
        self.cluster: ClusterHandle = self.handle.require_cluster(NAME)
        dra = self.cluster.dra
        if dra is None:
            raise ValueError(f"{NAME} needs the DRA objects: its registration declares ClusterNeeds.dynamic_resources")
        self.dra: DRALister = dra
        gates = features.current()
        self.features = allocator_features(gates)
        self.prioritized_list = gates.enabled("DRAPrioritizedList")
        self.binding_conditions = _binding_conditions(gates)
        timeout = args.filter_timeout
        if timeout is None:
            self.filter_timeout = DEFAULT_FILTER_TIMEOUT if gates.enabled("DRASchedulerFilterTimeout") else 0.0
        else:
            self.filter_timeout = parse_duration(timeout)
        self.binding_timeout = (
            parse_duration(args.binding_timeout) if args.binding_timeout is not None else DEFAULT_BINDING_TIMEOUT
        )
        self._cel_cache: structured.CELCache | None = None
        #: the writes sent without waiting (PostFilter's, Unreserve's), until they end
        self._tasks: set[asyncio.Future[None] | concurrent.futures.Future[None]] = set()

    def cel_cache(self) -> structured.CELCache:
        """``cel.NewCache(10, ...)``, built at the first allocation."""
        if self._cel_cache is None:
            self._cel_cache = structured.new_cel_cache(10)
        return self._cel_cache

    # -- PreEnqueue / hints -----------------------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status:
        """``PreEnqueue``: the pod's claims exist (module doc)."""
        if not pod.resource_claims:
            return SUCCESS
        try:
            claims.foreach_pod_resource_claim(self.dra, pod)
        except ClaimError as exc:
            return _unresolvable(str(exc))
        return SUCCESS

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister`` (:func:`.hints.events`)."""
        return hints.events(self.dra)

    # -- PreFilter ----------------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """``PreFilter`` (module doc)."""
        data = StateData()
        state.write(STATE_KEY, data)
        if not pod.resource_claims:
            return None, SKIP
        try:
            user_claims = claims.pod_resource_claims(self.dra, pod)
        except ClaimError as exc:
            return None, _unresolvable(str(exc))
        store = ClaimStore(user_claims)
        if store.empty():
            return None, SKIP
        to_allocate = 0
        data.informations = [ClaimInfo() for _ in range(len(store))]
        for index, claim in store.all():
            alloc = allocation(claim)
            if alloc is not None:
                selector = alloc.get("nodeSelector")
                if selector is not None:
                    try:
                        data.informations[index].available_on_nodes = msgspec.convert(selector, objects.NodeSelector)
                    except msgspec.ValidationError as exc:
                        return None, Status.error(f"claim {kobj(claim)}: status.allocation.nodeSelector: {exc}")
                continue
            to_allocate += 1
            if self.dra.pending_allocation(claims.claim_uid(claim)) is not None:
                return None, _unresolvable(f"resource claim {kobj(claim)} is in the process of being allocated")
            status = self._validate_requests(claim)
            if status is not None:
                return None, status
        if to_allocate:
            try:
                allocated = to_allocated_state(self.dra.gather_allocated_state())
                data.allocator = structured.new_allocator(
                    self.features, allocated, self.dra.device_classes(), self.dra.slices(), self.cel_cache()
                )
            except Exception as exc:  # the allocator refused its input
                return None, Status.error(str(exc) or type(exc).__name__)
        data.claims = store
        return None, SUCCESS

    def _validate_requests(self, claim: Object) -> Status | None:
        """PreFilter's check of every request's device class."""
        for request in claims.requests(claim):
            name = str(request.get("name") or "")
            exactly, first_available = request.get("exactly"), request.get("firstAvailable")
            if exactly is not None:
                status = self._validate_device_class(str((exactly or {}).get("deviceClassName") or ""), name)
                if status is not None:
                    return status
            elif first_available:
                if not self.prioritized_list:
                    return _unresolvable(
                        f"resource claim {kobj(claim)}, request {name}: has subrequests, but the DRAPrioritizedList "
                        "feature is disabled"
                    )
                for sub in first_available:
                    sub_name = f"{name}/{(sub or {}).get('name') or ''}"
                    status = self._validate_device_class(str((sub or {}).get("deviceClassName") or ""), sub_name)
                    if status is not None:
                        return status
            else:
                return _unresolvable(f"resource claim {kobj(claim)}, request {name}: unknown request type")
        return None

    def _validate_device_class(self, class_name: str, request_name: str) -> Status | None:
        """``validateDeviceClass``."""
        if not class_name:
            return Status.error(f"request {request_name}: unsupported request type")
        if self.dra.device_class(class_name) is None:
            return _unresolvable(f"request {request_name}: device class {class_name} does not exist")
        return None

    # -- Filter / PostFilter ------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``Filter`` (module doc)."""
        data = _state(state)
        if data is None:
            return Status.error(_NOT_FOUND)
        if data.claims.empty():
            return SUCCESS
        unavailable: list[int] = []
        for index, claim in data.claims.all():
            selector = data.informations[index].available_on_nodes
            if selector is not None and not node_selector_matches(selector, node.name, node.labels):
                unavailable.append(index)
                continue
            if allocation(claim) is None:
                continue
            if self.binding_conditions:
                try:
                    ready = binding.is_claim_ready_for_binding(claim)
                except binding.BindError:
                    unavailable.append(index)
                else:
                    if not ready and binding.is_claim_timeout(claim, self.binding_timeout):
                        unavailable.append(index)
        results: list[Object] = []
        if data.allocator is not None:
            to_allocate = [c for i, c in data.claims.to_allocate() if data.informations[i].allocation is None]
            deadline = time.monotonic() + self.filter_timeout if self.filter_timeout > 0 else None
            try:
                allocated = data.allocator.allocate(node.memo(node_object, node_object), to_allocate, deadline)
            except structured.AllocationTimeoutError:  # context.DeadlineExceeded: retried with backoff
                return Status.error(f"node {node.name}: timed out trying to allocate devices")
            except structured.NodeAllocationError as exc:  # ErrFailedAllocationOnNode: this node only
                return _unresolvable(str(exc))
            except structured.AllocationError as exc:
                return Status.error(str(exc))
            if allocated is None or len(allocated) != len(to_allocate):
                return _unresolvable("cannot allocate all claims")
            results = list(allocated)
        if unavailable:
            with data.lock:
                data.unavailable_claims.update(unavailable)
            return _unresolvable("resourceclaim not available on the node")
        if data.allocator is not None:
            with data.lock:
                data.node_allocations[node.name] = results
        return SUCCESS

    def post_filter(self, state: CycleState, pod: PodInfo, statuses: Any) -> tuple[str, Status]:
        """``PostFilter``: deallocate one unavailable claim nobody else reserved (module doc)."""
        data = _state(state)
        if data is None:
            return "", Status.error(_NOT_FOUND)
        if data.claims.empty():
            return "", Status.unschedulable("no new claims to deallocate")
        for index in sorted(data.unavailable_claims):
            claim = data.claims.get(index)
            reserved = claims.reserved_for(claim)
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == pod.uid):
                body = binding._copy(claim)
                status = body.setdefault("status", {})
                status["reservedFor"] = None
                status["allocation"] = None
                status["devices"] = None
                write = ClaimWrite("update_status", claims.claim_namespace(claim), claims.claim_name(claim), body)
                self._later(self._write_logged(write, "deallocate"))
                return "", Status.unschedulable("deallocation of ResourceClaim completed")
        return "", Status.unschedulable("still not schedulable")

    async def _write_logged(self, write: ClaimWrite, what: str) -> None:
        result = await self.cluster.write_resource_claim(write, binding.API_TIMEOUT)
        if result.claim is None:
            log.warning("%s: %s resourceclaim %s/%s: %s", NAME, what, write.namespace, write.name, result.error)

    def _later(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` on the scheduler's event loop without waiting (none: dropped)."""
        loop = self.handle.loop
        if loop is None or loop.is_closed():
            coro.close()
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        # from the loop a task; from a cycle offloaded to the verb worker thread, a thread-safe call
        future: asyncio.Future[None] | concurrent.futures.Future[None] = (
            loop.create_task(coro) if running is loop else asyncio.run_coroutine_threadsafe(coro, loop)
        )
        self._tasks.add(future)
        future.add_done_callback(self._tasks.discard)

    # -- Score --------------------------------------------------------------------------------------------

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        """``Score`` (``computeScore``): ``8 - i`` for each claim's ``firstAvailable`` subrequest
        ``i`` the node's allocation chose; 0 without claims or without ``DRAPrioritizedList``."""
        data = _state(state)
        if not self.prioritized_list or data is None or data.claims.empty():
            return 0, SUCCESS
        results = data.node_allocations.get(node.name)
        if results is None:
            return 0, SUCCESS
        try:
            return compute_score(data.claims.claims, results), SUCCESS
        except ValueError as exc:
            return 0, Status.error(str(exc))

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        """``NormalizeScore``: ``DefaultNormalizeScore(MaxNodeScore, false)``."""
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    # -- Reserve / Unreserve / PreBind --------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``Reserve``: the node's allocations in flight (``SignalClaimPendingAllocation``)."""
        data = _state(state)
        if data is None:
            return Status.error(_NOT_FOUND) if pod.resource_claims else SUCCESS
        pending = [(i, c) for i, c in data.claims.to_allocate()]
        if not pending or data.allocator is None:
            return SUCCESS
        results = data.node_allocations.get(node.name)
        if not results:
            return Status.error("claim allocation not found for node")
        if len(results) != len(pending):
            return Status.error(
                f"internal error, have {len(results)} allocations, {len(pending)} claims to allocate, "
                f"want {len(pending)} claims"
            )
        for (index, claim), alloc in zip(pending, results, strict=True):
            data.informations[index].allocation = alloc
            updated = binding._copy(claim)
            updated.setdefault("status", {})["allocation"] = alloc
            self.dra.signal_pending_allocation(claims.claim_uid(claim), updated)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """``Unreserve``: in-flight allocations dropped (the claim restored), the pod's reservation
        removed from allocated claims (idempotent)."""
        data = _state(state)
        if data is None:
            return
        for _, claim in data.claims.all():
            if self.dra.maybe_remove_pending_allocation(claims.claim_uid(claim), False):
                self.dra.restore_claim(claims.claim_namespace(claim), claims.claim_name(claim))
            if allocation(claim) is not None and claims.is_reserved_for_pod(pod, claim):
                patch = {
                    "metadata": {"uid": claims.claim_uid(claim)},
                    "status": {"reservedFor": [{"$patch": "delete", "uid": pod.uid}]},
                }
                write = ClaimWrite("patch_status", claims.claim_namespace(claim), claims.claim_name(claim), patch)
                self._later(self._write_logged(write, "unreserve"))

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (dynamicresources.go, v1.36.3): a pod with claims is unsignable."""
        if pod.resource_claims:
            return [], Status(Code.UNSCHEDULABLE, ("pods with dra resource claims are not signable",))
        return [], SUCCESS

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """``PreBindPreFlight`` (dynamicresources.go, v1.36.3): ``SKIP`` without claims to bind,
        ``SUCCESS`` with some (PreBind writes them)."""
        data = _state(state)
        if data is None:
            return Status.error(_NOT_FOUND) if pod.resource_claims else SKIP
        return SKIP if data.claims.empty() else SUCCESS

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """``PreBind``: write each claim not reserved for the pod, then wait for binding
        conditions (module doc)."""
        data = _state(state)
        if data is None:
            return Status.error(_NOT_FOUND) if pod.resource_claims else SUCCESS
        if data.claims.empty():
            return SUCCESS
        for index, claim in data.claims.all():
            if claims.is_reserved_for_pod(pod, claim):
                continue
            try:
                written = await binding.bind_claim(
                    self.cluster, self.dra, claim, data.informations[index].allocation, pod, self.binding_conditions
                )
            except binding.BindError as exc:
                return Status.error(str(exc))
            data.claims.set(index, written)
        if not self.binding_conditions or not binding.has_binding_conditions(data.claims.claims):
            return SUCCESS
        return await self._wait_for_binding_conditions(data)

    async def _wait_for_binding_conditions(self, data: StateData) -> Status:
        """``isPodReadyForBinding`` every :data:`BINDING_POLL` seconds up to ``bindingTimeout``."""
        deadline = time.monotonic() + self.binding_timeout
        while True:
            try:
                if self._pod_ready_for_binding(data):
                    return SUCCESS
            except binding.BindError as exc:
                return Status.error(str(exc))
            if time.monotonic() + BINDING_POLL > deadline:
                return Status.error(f"{binding.ERR_BINDING_TIMEOUT}: context deadline exceeded")
            await asyncio.sleep(BINDING_POLL)

    def _pod_ready_for_binding(self, data: StateData) -> bool:
        for index, claim in data.claims.all():
            latest = self.dra.claim(claims.claim_namespace(claim), claims.claim_name(claim))
            if latest is None:
                raise binding.BindError(f'could not find ResourceClaim "{kobj(claim)}"')
            data.claims.set(index, latest)
            if not binding.is_claim_ready_for_binding(latest):
                if binding.is_claim_timeout(latest, self.binding_timeout):
                    raise binding.BindError(f"{binding.ERR_BINDING_TIMEOUT}: claim={claims.claim_name(latest)}")
                return False
        return True


def _needs(args: object, http_timeout: float) -> ClusterNeeds:
    """The DRA objects; and its Reserve guards devices as NodeResourcesFit's guards cpu and memory
    (a claim write a previous leader may still have in flight: binds wait out the warm-up)."""
    return ClusterNeeds(dynamic_resources=True, reserves_capacity=True)


PLUGIN = PluginEntry(
    name=NAME,
    factory=DynamicResources,
    args=DynamicResourcesArgs,
    needs_cluster=True,
    needs=_needs,
    summary="filter+reserve+preBind: kube-scheduler's DynamicResources (ResourceClaims allocated from ResourceSlices)",
)

__all__ = [
    "DEFAULT_BINDING_TIMEOUT",
    "DEFAULT_FILTER_TIMEOUT",
    "NAME",
    "PLUGIN",
    "STATE_KEY",
    "DynamicResources",
    "DynamicResourcesArgs",
    "StateData",
    "allocator_features",
    "compute_score",
    "node_object",
    "to_allocated_state",
]

"""VolumeBinding's volume binder: kube-scheduler's
pkg/scheduler/framework/plugins/volumebinding/binder.go (``SchedulerVolumeBinder``) and
``assume_cache.go`` of v1.36.3, over the watched storage objects
(:class:`~app.framework.volumes.VolumeLister`).

- :meth:`VolumeBinder.get_pod_volume_claims` (PreFilter): the pod's claims split into bound,
  unbound ``WaitForFirstConsumer`` (delayed) and unbound immediate ones (a claim pre-bound to a
  volume counts as immediate), with the volumes of each delayed claim's class.
- :meth:`VolumeBinder.find_pod_volumes` (Filter, per node): a bound claim's volume must accept
  the node (its node affinity, after CSI translation where the node migrated the plugin); each
  delayed claim gets the smallest matching available volume (``FindMatchingVolume``), else must
  be provisionable there: a class with a provisioner, ``allowedTopologies`` matching the node,
  and, for a CSI driver that publishes capacity, a ``CSIStorageCapacity`` for the class whose
  ``nodeTopology`` selects the node and whose ``maximumVolumeSize`` (else ``capacity``) holds
  the request. The reasons are upstream's (:data:`ERR_REASON_BIND_CONFLICT` and the others).
- :meth:`VolumeBinder.assume_pod_volumes` (Reserve): the chosen volumes assumed bound to their
  claims (``claimRef``, ``pv.kubernetes.io/bound-by-controller``) and the claims to provision
  assumed annotated ``volume.kubernetes.io/selected-node``, in this binder's assume caches, so
  the next pods' Filter sees them; :meth:`VolumeBinder.revert_assumed_pod_volumes` (Unreserve).
- :meth:`VolumeBinder.bind_pod_volumes` (PreBind): the writes (each volume's ``claimRef``, each
  claim's ``selected-node``, with the assumed object's ``resourceVersion`` as precondition),
  then a wait until every claim is fully bound (``spec.volumeName`` and
  ``pv.kubernetes.io/bind-completed``, by the PV controller or the external provisioner), checked
  on every change the watch brings and every second (upstream polls every second), within
  ``bindTimeoutSeconds``; the errors that stop it early are upstream's (``checkBindings``: the
  pod deleted, a provisioner giving up by removing ``selected-node``, a ``claimRef`` reset).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from typing import Generic, TypeVar

import msgspec

from app.framework.errors import SchedulerExtenderError
from app.framework.handle import ClusterHandle
from app.framework.labels import label_selector_matches
from app.framework.resources import quantity_value
from app.framework.types import NodeInfo, PodInfo
from app.framework.volumes import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    CLAIMS,
    NOT_SUPPORTED_PROVISIONER,
    VOLUMES,
    WAIT_FOR_FIRST_CONSUMER,
    CSINode,
    CSIStorageCapacity,
    ObjectReference,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeLister,
    VolumeWrite,
    claim_class,
)
from app.plugins.volumes.helpers import (
    STORAGE,
    check_node_affinity,
    find_matching_volume,
    is_volume_bound_to_claim,
    match_topology_selector_terms,
    pod_claims,
    storage_capacity,
    storage_request,
    volume_is_for_pod,
)
from app.plugins.volumes.translation import (
    TranslationError,
    in_tree_plugin_name,
    is_csi_migration_on_for_plugin,
    is_plugin_migrated_to_csi_on_node,
    is_pv_migratable,
    translate_in_tree_pv_to_csi,
)

#: ``ErrReasonBindConflict`` (VolumeBindingNoMatch)
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
#: ``ErrReasonNodeConflict`` (VolumeNodeAffinityConflict)
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
#: ``ErrReasonNotEnoughSpace``
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
#: ``ErrReasonPVNotExist``
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

#: seconds between two checks of a PreBind's claims when the watch brings nothing (upstream's
#: ``wait.PollUntilContextTimeout`` interval)
POLL_INTERVAL = 1.0


class BinderError(SchedulerExtenderError):
    """A binder step failed (upstream's ``error``; its text is the status message)."""


@dataclass
class BindingInfo:
    """``BindingInfo``: a claim and the volume chosen for it."""

    pvc: PersistentVolumeClaim
    pv: PersistentVolume

    def storage_class_name(self) -> str:
        """The volume's ``spec.storageClassName``."""
        return self.pv.specs.storage_class_name or ""

    def storage_resource(self) -> tuple[int, int]:
        """``StorageResource``: ``(requested, capacity)`` in bytes (``Quantity.Value``)."""
        return quantity_bytes(storage_request(self.pvc)), quantity_bytes(storage_capacity(self.pv))


def quantity_bytes(amount: Decimal) -> int:
    """``Quantity.Value()`` of an exact amount: rounded up to a whole number."""
    return int(amount.to_integral_value(rounding=ROUND_CEILING))


@dataclass
class DynamicProvision:
    """``DynamicProvision``: a claim to provision and the ``CSIStorageCapacity`` that holds it on
    the node (``None`` when capacity is not tracked; StorageCapacityScoring reads it)."""

    pvc: PersistentVolumeClaim
    node_capacity: CSIStorageCapacity | None = None


@dataclass
class PodVolumes:
    """``PodVolumes``: the volumes to bind statically and the claims to provision (``None`` for
    none, as upstream normalises empty to nil)."""

    static_bindings: list[BindingInfo] | None = None
    dynamic_provisions: list[DynamicProvision] | None = None


@dataclass
class PodVolumeClaims:
    """``PodVolumeClaims``: the pod's claims by state, and the volumes of the classes of its
    delayed claims (class -> volumes)."""

    bound_claims: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_claims_delay_binding: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_claims_immediate: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_volumes_delay_binding: dict[str, list[PersistentVolume]] = field(default_factory=dict)


def resource_version(obj: PersistentVolume | PersistentVolumeClaim) -> int:
    """The object's ``resourceVersion`` as a number (``APIObjectVersioner``; 0 when not one)."""
    text = obj.meta.resource_version or ""
    return int(text) if text.isdigit() else 0


T = TypeVar("T", PersistentVolume, PersistentVolumeClaim)


class AssumeCache(Generic[T]):
    """``assumeCache`` over a lister: the objects a binder assumed (by key), each standing for the
    API object until the watch shows a newer ``resourceVersion`` of it. ``description``: the kind
    its errors name (``v1.PersistentVolume``). Thread-safe."""

    def __init__(self, description: str) -> None:
        self.description = description
        self._lock = threading.Lock()
        self._assumed: dict[str, T] = {}

    def latest(self, key: str, api: T | None) -> T | None:
        """``Get``: the assumed object of ``key`` while it is at least as new as ``api``, else
        ``api`` (``None``: not found; the assumption is dropped with its object)."""
        assumed = self._assumed.get(key)
        if assumed is None:
            return api
        if api is None or resource_version(api) > resource_version(assumed):
            with self._lock:
                if self._assumed.get(key) is assumed:
                    del self._assumed[key]
            return api
        return assumed

    def assume(self, key: str, obj: T, api: T | None) -> None:
        """``Assume``: ``obj`` stands for ``key`` from now on. Raises :class:`BinderError` when
        the object is not known or ``obj`` is older than what is stored."""
        current = self.latest(key, api)
        if current is None:
            raise BinderError(f"could not find {self.description} {key!r}")
        if resource_version(obj) < resource_version(current):
            raise BinderError(
                f"{self.description} {key!r} is out of sync "
                f"(stored: {resource_version(current)}, assume: {resource_version(obj)})"
            )
        with self._lock:
            self._assumed[key] = obj

    def restore(self, key: str) -> None:
        """``Restore``: the API object stands for ``key`` again."""
        with self._lock:
            self._assumed.pop(key, None)

    def assumed_keys(self) -> list[str]:
        """The keys assumed now (tests)."""
        with self._lock:
            return sorted(self._assumed)


def _with_version(obj: T, version: str) -> T:
    return msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.meta, resource_version=version))


def _with_annotation(obj: T, key: str, value: str) -> T:
    annotations = {**(obj.meta.annotations or {}), key: value}
    return msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.meta, annotations=annotations))


def bind_volume_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> tuple[PersistentVolume, bool]:
    """``GetBindVolumeToClaim``: the volume with ``claimRef`` set to the claim (kind, namespace,
    name, UID, ``apiVersion``, the claim's ``resourceVersion``: ``reference.GetReference``) and
    ``pv.kubernetes.io/bound-by-controller: "yes"`` unless it was pre-bound; whether it changed."""
    dirty = False
    set_bound_by_controller = not is_volume_bound_to_claim(pv, pvc)
    new = pv
    ref = pv.specs.claim_ref
    uid = pvc.meta.uid or ""
    if ref is None or ref.name != pvc.name or (ref.namespace or "") != pvc.namespace or (ref.uid or "") != uid:
        claim_ref = ObjectReference(
            kind="PersistentVolumeClaim",
            namespace=pvc.namespace,
            name=pvc.name,
            uid=uid or None,
            api_version="v1",
            resource_version=pvc.meta.resource_version,
        )
        new = msgspec.structs.replace(new, spec=msgspec.structs.replace(new.specs, claim_ref=claim_ref))
        dirty = True
    if set_bound_by_controller and ANN_BOUND_BY_CONTROLLER not in (new.meta.annotations or {}):
        new = _with_annotation(new, ANN_BOUND_BY_CONTROLLER, "yes")
        dirty = True
    return new, dirty


def is_pvc_fully_bound(pvc: PersistentVolumeClaim) -> bool:
    """``isPVCFullyBound``: ``spec.volumeName`` set and ``pv.kubernetes.io/bind-completed`` present."""
    return bool(pvc.specs.volume_name) and ANN_BIND_COMPLETED in (pvc.meta.annotations or {})


def capacity_sufficient(capacity: CSIStorageCapacity, size: int) -> bool:
    """``capacitySufficient``: ``maximumVolumeSize`` (else ``capacity``) is set and holds ``size``
    bytes."""
    limit = capacity.maximum_volume_size if capacity.maximum_volume_size is not None else capacity.capacity
    return limit is not None and quantity_value(limit) >= size


def node_has_access(labels: Mapping[str, str], capacity: CSIStorageCapacity) -> bool:
    """``nodeHasAccess``: the capacity's ``nodeTopology`` selects the node (none: unavailable)."""
    return capacity.node_topology is not None and label_selector_matches(capacity.node_topology, labels)


class VolumeBinder:
    """``volumeBinder`` (see the module doc). ``volumes``: the watched storage objects;
    ``bind_timeout``: seconds PreBind waits for the claims (``bindTimeoutSeconds``).

    The assume caches follow ``assumeCache``: an assumed object stands for its API object until the
    watch brings a newer ``resourceVersion`` of it (our own write, or anyone's), or until it is
    restored; one per binder (per profile's plugin), as upstream.
    """

    def __init__(self, volumes: VolumeLister, bind_timeout: float = 600.0) -> None:
        self.volumes = volumes
        self.bind_timeout = bind_timeout
        self.pv_cache: AssumeCache[PersistentVolume] = AssumeCache("v1.PersistentVolume")
        self.pvc_cache: AssumeCache[PersistentVolumeClaim] = AssumeCache("v1.PersistentVolumeClaim")

    # -- the caches ----------------------------------------------------------------------------------

    def get_pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        """``pvcCache.GetPVC``: the claim as assumed, else as watched."""
        return self.pvc_cache.latest(f"{namespace}/{name}", self.volumes.claim(namespace, name))

    def get_pv(self, name: str) -> PersistentVolume | None:
        """``pvCache.GetPV``: the volume as assumed, else as watched."""
        return self.pv_cache.latest(name, self.volumes.volume(name))

    def list_pvs(self, class_name: str) -> list[PersistentVolume]:
        """``pvCache.ListPVs``: the volumes of a class, each as assumed or watched."""
        out = []
        for pv in self.volumes.volumes_of_class(class_name):
            latest = self.pv_cache.latest(pv.name, pv)
            if latest is not None:
                out.append(latest)
        return out

    # -- PreFilter -----------------------------------------------------------------------------------

    def _is_pvc_bound(self, namespace: str, name: str) -> tuple[bool, PersistentVolumeClaim]:
        pvc = self.get_pvc(namespace, name)
        if pvc is None:
            key = f"{namespace}/{name}"
            raise BinderError(f'error getting PVC "{key}": could not find v1.PersistentVolumeClaim "{key}"')
        return is_pvc_fully_bound(pvc), pvc

    def _claim_bound(self, pod: PodInfo, name: str, ephemeral: bool) -> tuple[bool, PersistentVolumeClaim]:
        """``isVolumeBound`` of a volume backed by claim ``name``: whether it is fully bound, and
        the claim. Raises :class:`BinderError` (claim missing; an ephemeral claim the pod does not
        own)."""
        bound, pvc = self._is_pvc_bound(pod.namespace, name)
        if ephemeral:
            error = volume_is_for_pod(pod, pvc)
            if error:
                raise BinderError(error)
        return bound, pvc

    def is_delay_binding_mode(self, pvc: PersistentVolumeClaim) -> bool:
        """``IsDelayBindingMode``: the claim's class exists and binds ``WaitForFirstConsumer``.
        Raises :class:`BinderError` for a class without a binding mode."""
        name = claim_class(pvc)
        if not name:
            return False
        sc = self.volumes.storage_class(name)
        if sc is None:
            return False
        if sc.volume_binding_mode is None:
            raise BinderError(f'VolumeBindingMode not set for StorageClass "{name}"')
        return sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER

    def get_pod_volume_claims(self, pod: PodInfo) -> PodVolumeClaims:
        """``GetPodVolumeClaims`` (see the module doc). Raises :class:`BinderError`."""
        claims = PodVolumeClaims()
        for _, name, ephemeral in pod_claims(pod):
            bound, pvc = self._claim_bound(pod, name, ephemeral)
            if bound:
                claims.bound_claims.append(pvc)
            elif self.is_delay_binding_mode(pvc) and not pvc.specs.volume_name:
                claims.unbound_claims_delay_binding.append(pvc)
            else:
                claims.unbound_claims_immediate.append(pvc)
        for pvc in claims.unbound_claims_delay_binding:
            name = claim_class(pvc)
            if name not in claims.unbound_volumes_delay_binding:
                # Upstream keeps the class's whole list; a volume whose claimRef names a claim that
                # is not one of this pod's is skipped first thing by FindMatchingVolume on every
                # node, so it is left out here once per pod: the same decisions, without walking
                # every bound volume of the class on every node.
                mine = [c for c in claims.unbound_claims_delay_binding if claim_class(c) == name]
                claims.unbound_volumes_delay_binding[name] = [
                    pv
                    for pv in self.list_pvs(name)
                    if pv.specs.claim_ref is None or any(is_volume_bound_to_claim(pv, c) for c in mine)
                ]
        return claims

    # -- Filter --------------------------------------------------------------------------------------

    def find_pod_volumes(self, pod: PodInfo, claims: PodVolumeClaims, node: NodeInfo) -> tuple[PodVolumes, list[str]]:
        """``FindPodVolumes``: the pod's volumes on ``node`` and, when it does not fit, the
        reasons (in upstream's order). Raises :class:`BinderError`."""
        bound_satisfied = pvs_found = unbound_satisfied = sufficient = True
        static: list[BindingInfo] = []
        dynamic: list[DynamicProvision] = []
        if claims.bound_claims:
            bound_satisfied, pvs_found = self._check_bound_claims(claims.bound_claims, node)
        if claims.unbound_claims_delay_binding:
            unbound_satisfied, sufficient, static, dynamic = self._unbound(claims, node)
        reasons = []
        if not bound_satisfied:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_satisfied:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not sufficient:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return PodVolumes(static or None, dynamic or None), reasons

    def _unbound(
        self, claims: PodVolumeClaims, node: NodeInfo
    ) -> tuple[bool, bool, list[BindingInfo], list[DynamicProvision]]:
        """The delay-binding claims of ``FindPodVolumes`` on ``node``: ``(satisfied, enough
        storage, static bindings, claims to provision)``."""
        to_match: list[PersistentVolumeClaim] = []
        to_provision: list[PersistentVolumeClaim] = []
        for claim in claims.unbound_claims_delay_binding:
            selected = (claim.meta.annotations or {}).get(ANN_SELECTED_NODE)
            if selected is not None:
                if selected != node.name:
                    return False, True, [], []  # fast path: another node was selected
                to_provision.append(claim)
            else:
                to_match.append(claim)
        satisfied, sufficient = True, True
        static: list[BindingInfo] = []
        dynamic: list[DynamicProvision] = []
        if to_match:
            satisfied, static, unmatched = self._find_matching_volumes(
                to_match, claims.unbound_volumes_delay_binding, node.labels
            )
            to_provision += unmatched
        if to_provision:
            satisfied, sufficient, dynamic = self._check_volume_provisions(to_provision, node)
        return satisfied, sufficient, static, dynamic

    def try_translate_pv_to_csi(self, pv: PersistentVolume, csi_node: CSINode | None) -> PersistentVolume:
        """``tryTranslatePVToCSI``: the volume translated to CSI when its plugin's migration is on
        and the node's CSINode lists the plugin as migrated, else as it is. Raises
        :class:`BinderError`."""
        if not is_pv_migratable(pv):
            return pv
        try:
            plugin = in_tree_plugin_name(pv)
        except TranslationError as exc:
            raise BinderError(f"could not get plugin name from pv: {exc}") from None
        if not is_csi_migration_on_for_plugin(plugin) or not is_plugin_migrated_to_csi_on_node(plugin, csi_node):
            return pv
        try:
            return translate_in_tree_pv_to_csi(pv)
        except TranslationError as exc:
            raise BinderError(f"could not translate pv: {exc}") from None

    def _check_bound_claims(self, claims: Sequence[PersistentVolumeClaim], node: NodeInfo) -> tuple[bool, bool]:
        """``checkBoundClaims``: ``(node affinity satisfied, volumes found)``."""
        csi_node = self.volumes.csi_node(node.name)
        labels = node.labels
        for pvc in claims:
            pv = self.get_pv(pvc.specs.volume_name or "")
            if pv is None:
                return True, False
            pv = self.try_translate_pv_to_csi(pv, csi_node)
            if not check_node_affinity(pv, labels):
                return False, True
        return True, True

    def _find_matching_volumes(
        self,
        claims: list[PersistentVolumeClaim],
        volumes: Mapping[str, Sequence[PersistentVolume]],
        labels: Mapping[str, str],
    ) -> tuple[bool, list[BindingInfo], list[PersistentVolumeClaim]]:
        """``findMatchingVolumes``: claims by increasing request, each with the smallest fitting
        volume not chosen yet; ``(all matched, bindings, the claims left to provision)``."""
        if len(claims) > 1:
            claims.sort(key=storage_request)
        chosen: set[str] = set()
        bindings: list[BindingInfo] = []
        unmatched: list[PersistentVolumeClaim] = []
        for pvc in claims:
            pv = find_matching_volume(pvc, volumes.get(claim_class(pvc), ()), labels, chosen, True)
            if pv is None:
                unmatched.append(pvc)
                continue
            chosen.add(pv.name)
            bindings.append(BindingInfo(pvc, pv))
        return not unmatched, bindings, unmatched

    def _check_volume_provisions(
        self, claims: Sequence[PersistentVolumeClaim], node: NodeInfo
    ) -> tuple[bool, bool, list[DynamicProvision]]:
        """``checkVolumeProvisions``: ``(provisionable, enough storage, claims to provision)``.
        Raises :class:`BinderError`."""
        dynamic: list[DynamicProvision] = []
        labels = node.labels
        for claim in claims:
            name = claim_class(claim)
            if not name:
                raise BinderError(f'no class for claim "{claim.key()}"')
            sc = self.volumes.storage_class(name)
            if sc is None:
                raise BinderError(f'failed to find storage class "{name}"')
            provisioner = sc.provisioner or ""
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not match_topology_selector_terms(sc.allowed_topologies, labels):
                return False, True, []
            enough, capacity = self.has_enough_capacity(provisioner, claim, sc, labels)
            if not enough:
                return True, False, []
            dynamic.append(DynamicProvision(claim, capacity))
        return True, True, dynamic

    def has_enough_capacity(
        self, provisioner: str, claim: PersistentVolumeClaim, sc: StorageClass, labels: Mapping[str, str]
    ) -> tuple[bool, CSIStorageCapacity | None]:
        """``hasEnoughCapacity``: whether there is room for the claim on the node (no storage
        request, a provisioner that is no CSI driver or one without ``storageCapacity``, or a
        matching ``CSIStorageCapacity``: module doc), and the capacity that holds it."""
        resources = claim.specs.resources
        requests = (resources.requests if resources is not None else None) or {}
        if STORAGE not in requests:
            return True, None
        driver = self.volumes.csi_driver(provisioner)
        if driver is None or driver.spec is None or not driver.spec.storage_capacity:
            return True, None
        size = quantity_bytes(storage_request(claim))
        for capacity in self.volumes.storage_capacities():
            if (
                capacity.storage_class_name == sc.name
                and capacity_sufficient(capacity, size)
                and node_has_access(labels, capacity)
            ):
                return True, capacity
        return False, None

    # -- Reserve / Unreserve --------------------------------------------------------------------------

    def are_pod_volumes_bound(self, pod: PodInfo) -> bool:
        """``arePodVolumesBound``: every claim of the pod is fully bound (a claim that cannot be
        read counts as not)."""
        for _, name, ephemeral in pod_claims(pod):
            try:
                bound, _ = self._claim_bound(pod, name, ephemeral)
            except BinderError:
                return False
            if not bound:
                return False
        return True

    def assume_pod_volumes(self, pod: PodInfo, node_name: str, volumes: PodVolumes) -> bool:
        """``AssumePodVolumes``: ``True`` when every claim is bound already; else the bindings and
        provisionings assumed (``volumes`` updated to the assumed objects) and ``False``. Raises
        :class:`BinderError` (nothing stays assumed)."""
        if self.are_pod_volumes_bound(pod):
            return True
        new_bindings: list[BindingInfo] = []
        for binding in volumes.static_bindings or ():
            new_pv, dirty = bind_volume_to_claim(binding.pv, binding.pvc)
            if dirty:
                try:
                    self.pv_cache.assume(new_pv.name, new_pv, self.volumes.volume(new_pv.name))
                except BinderError:
                    self._revert_pvs(new_bindings)
                    raise
            new_bindings.append(BindingInfo(binding.pvc, new_pv))
        new_claims: list[DynamicProvision] = []
        for provision in volumes.dynamic_provisions or ():
            clone = _with_annotation(provision.pvc, ANN_SELECTED_NODE, node_name)
            try:
                self.pvc_cache.assume(clone.key(), clone, self.volumes.claim(clone.namespace, clone.name))
            except BinderError:
                self._revert_pvs(new_bindings)
                self._revert_pvcs([p.pvc for p in new_claims])
                raise
            new_claims.append(DynamicProvision(clone))  # upstream keeps no capacity once assumed
        volumes.static_bindings = new_bindings
        volumes.dynamic_provisions = new_claims
        return False

    def _revert_pvs(self, bindings: Sequence[BindingInfo]) -> None:
        for binding in bindings:
            self.pv_cache.restore(binding.pv.name)

    def _revert_pvcs(self, claims: Sequence[PersistentVolumeClaim]) -> None:
        for claim in claims:
            self.pvc_cache.restore(claim.key())

    def revert_assumed_pod_volumes(self, volumes: PodVolumes) -> None:
        """``RevertAssumedPodVolumes``."""
        self._revert_pvs(volumes.static_bindings or ())
        self._revert_pvcs([p.pvc for p in volumes.dynamic_provisions or ()])

    # -- PreBind ---------------------------------------------------------------------------------------

    async def bind_pod_volumes(self, pod: PodInfo, node_name: str, volumes: PodVolumes, cluster: ClusterHandle) -> None:
        """``BindPodVolumes`` (module doc). Raises :class:`BinderError`: a write's error as the API
        server worded it, else ``binding volumes: <why>`` (``context deadline exceeded`` after
        ``bind_timeout`` seconds)."""
        await self.bind_api_update(pod, volumes, cluster)
        deadline = time.monotonic() + self.bind_timeout
        generation = self.volumes.generation
        while True:
            try:
                if self.check_bindings(pod, node_name, volumes, cluster):
                    return
            except BinderError as exc:
                raise BinderError(f"binding volumes: {exc}") from None
            left = deadline - time.monotonic()
            if left <= 0:
                raise BinderError("binding volumes: context deadline exceeded")
            generation = await self.volumes.changed(generation, min(left, POLL_INTERVAL))

    async def bind_api_update(self, pod: PodInfo, volumes: PodVolumes, cluster: ClusterHandle) -> None:
        """``bindAPIUpdate``: write each volume's binding, then each claim's ``selected-node``;
        on a failure the assumptions not yet written are reverted and the error raised."""
        bindings = volumes.static_bindings
        provisions = volumes.dynamic_provisions
        claims = [p.pvc for p in provisions] if provisions is not None else None
        if bindings is None:
            raise BinderError(f'failed to get cached bindings for pod "{pod.key()}"')
        if claims is None or provisions is None:
            raise BinderError(f'failed to get cached claims to provision for pod "{pod.key()}"')
        done_bindings = done_claims = 0
        try:
            for binding in bindings:
                pv = binding.pv
                annotations = {}
                if ANN_BOUND_BY_CONTROLLER in (pv.meta.annotations or {}):
                    annotations[ANN_BOUND_BY_CONTROLLER] = (pv.meta.annotations or {})[ANN_BOUND_BY_CONTROLLER]
                write = VolumeWrite(
                    VOLUMES, pv.name, "", pv.meta.resource_version or "", annotations, pv.specs.claim_ref
                )
                result = await cluster.update_volume(write, self.bind_timeout)
                if result.error:
                    raise BinderError(result.error)
                binding.pv = _with_version(pv, result.resource_version)
                done_bindings += 1
            for i, claim in enumerate(claims):
                selected = (claim.meta.annotations or {}).get(ANN_SELECTED_NODE, "")
                write = VolumeWrite(
                    CLAIMS,
                    claim.name,
                    claim.namespace,
                    claim.meta.resource_version or "",
                    {ANN_SELECTED_NODE: selected},
                )
                result = await cluster.update_volume(write, self.bind_timeout)
                if result.error:
                    raise BinderError(result.error)
                claims[i] = _with_version(claim, result.resource_version)
                provisions[i] = DynamicProvision(claims[i], provisions[i].node_capacity)
                done_claims += 1
        finally:
            if done_bindings < len(bindings):
                self._revert_pvs(bindings[done_bindings:])
            if done_claims < len(claims):
                self._revert_pvcs(claims[done_claims:])

    def check_bindings(self, pod: PodInfo, node_name: str, volumes: PodVolumes, cluster: ClusterHandle) -> bool:
        """``checkBindings``: whether every written claim is fully bound, on the watched (API)
        objects; raises :class:`BinderError` when binding must be retried (the pod gone, a
        ``claimRef`` reset, a provisioner that removed ``selected-node``, a volume whose node
        affinity does not accept the node)."""
        bindings = volumes.static_bindings
        claims = [p.pvc for p in volumes.dynamic_provisions] if volumes.dynamic_provisions is not None else None
        if bindings is None:
            raise BinderError(f'failed to get cached bindings for pod "{pod.key()}"')
        if claims is None:
            raise BinderError(f'failed to get cached claims to provision for pod "{pod.key()}"')
        node = cluster.snapshot().get(node_name)
        if node is None or node.node is None:
            raise BinderError(f'failed to get node "{node_name}": node "{node_name}" not found')
        labels = node.labels
        csi_node = self.volumes.csi_node(node_name)
        if cluster.pod(pod.uid) is None:
            raise BinderError(f'pod does not exist any more: pod "{pod.name}" not found')
        for binding in bindings:
            pv = self.volumes.volume(binding.pv.name)
            if pv is None:
                raise BinderError(f'failed to check binding: could not find v1.PersistentVolume "{binding.pv.name}"')
            pvc = self.volumes.claim(binding.pvc.namespace, binding.pvc.name)
            if pvc is None:
                key = binding.pvc.key()
                raise BinderError(f'failed to check binding: could not find v1.PersistentVolumeClaim "{key}"')
            if resource_version(binding.pv) > resource_version(pv):
                return False  # the watch has not shown our write yet
            try:
                pv = self.try_translate_pv_to_csi(pv, csi_node)
            except BinderError as exc:
                raise BinderError(f"failed to translate pv to csi: {exc}") from None
            if not check_node_affinity(pv, labels):
                raise BinderError(
                    f'pv "{pv.name}" node affinity doesn\'t match node "{node_name}": no matching NodeSelectorTerms'
                )
            ref = pv.specs.claim_ref
            if ref is None or not ref.uid:
                raise BinderError(f'ClaimRef got reset for pv "{pv.name}"')
            if not is_pvc_fully_bound(pvc):
                return False
        for claim in claims:
            pvc = self.volumes.claim(claim.namespace, claim.name)
            if pvc is None:
                raise BinderError(
                    f'failed to check provisioning pvc: could not find v1.PersistentVolumeClaim "{claim.key()}"'
                )
            if resource_version(claim) > resource_version(pvc):
                return False
            annotations = pvc.meta.annotations
            if annotations is None:
                raise BinderError(f'selectedNode annotation reset for PVC "{pvc.name}"')
            if annotations.get(ANN_SELECTED_NODE, "") != node_name:
                raise BinderError(f'provisioning failed for PVC "{pvc.name}"')
            if pvc.specs.volume_name:
                pv = self.volumes.volume(pvc.specs.volume_name)
                if pv is None:
                    return False  # not in the watch yet (or deleted: the claim will be unbound)
                pv = self.try_translate_pv_to_csi(pv, csi_node)
                if not check_node_affinity(pv, labels):
                    raise BinderError(
                        f'pv "{pv.name}" node affinity doesn\'t match node "{node_name}": no matching NodeSelectorTerms'
                    )
            if not is_pvc_fully_bound(pvc):
                return False
        return True


__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "POLL_INTERVAL",
    "AssumeCache",
    "BinderError",
    "BindingInfo",
    "DynamicProvision",
    "PodVolumeClaims",
    "PodVolumes",
    "VolumeBinder",
    "bind_volume_to_claim",
    "capacity_sufficient",
    "is_pvc_fully_bound",
    "node_has_access",
    "quantity_bytes",
    "resource_version",
]

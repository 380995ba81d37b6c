"""VolumeBinding: a pod's claims must be bound, or bindable on the node, before it runs there;
``WaitForFirstConsumer`` claims are bound (or provisioned) for the node chosen.

Ports kube-scheduler v1.36.3's plugin, pkg/scheduler/framework/plugins/volumebinding/
(``volume_binding.go``, ``scorer.go``; the binder in :mod:`app.plugins.volumes.binder`), with its
args (``VolumeBindingArgs``: ``bindTimeoutSeconds``, default 600, not negative; ``shape``, refused
while the ``StorageCapacityScoring`` feature gate is off, as it is in v1.36).

- **PreFilter**: ``Skip`` for a pod without claims (``persistentVolumeClaim`` or generic
  ``ephemeral`` volumes). ``UnschedulableAndUnresolvable`` when a claim is missing
  (``persistentvolumeclaim "x" not found``; an ephemeral one: ``waiting for ephemeral volume
  controller to create the persistentvolumeclaim "x"``), lost, being deleted or, ephemeral, not
  owned by the pod; or when an unbound claim binds ``Immediate`` (``pod has unbound immediate
  PersistentVolumeClaims``). No ``PreFilterResult``.
- **Filter** (:meth:`VolumeBinder.find_pod_volumes`): ``UnschedulableAndUnresolvable`` with
  upstream's reasons (``node(s) didn't match PersistentVolume's node affinity``, ``node(s) didn't find
  available persistent volumes to bind``, ``node(s) did not have enough free storage``,
  ``node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)``).
- **PreScore/Score**: only with the ``StorageCapacityScoring`` gate (alpha, off in v1.36:
  ``Skip``): the static bindings' utilization by class, else (no static binding) the dynamic
  provisions' against their node's ``CSIStorageCapacity``; default shape 0 -> 10, 100 -> 0.
- **Reserve/Unreserve**: the node's volumes assumed in the binder's caches / reverted.
- **PreBindPreFlight/PreBind**: the claims' ``volume.kubernetes.io/selected-node`` (and the chosen
  volumes' ``claimRef``) written, then the Binding waits until the claims are bound, within
  ``bindTimeoutSeconds`` (``binding volumes: context deadline exceeded`` after it).

Needs cluster state: the watched storage objects (``ClusterNeeds.volumes`` and
``csi_storage_capacities``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import Field, model_validator

from app.framework import features, signers
from app.framework.args import PluginArgs
from app.framework.events import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    QUEUE,
    STORAGE_CLASS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    objects_as,
)
from app.framework.events import SKIP as QUEUE_SKIP
from app.framework.handle import ClusterNeeds, Handle
from app.framework.interfaces import SignFragment
from app.framework.registry import PluginEntry
from app.framework.resources import quantity_value
from app.framework.scores import MAX_NODE_SCORE
from app.framework.status import SKIP, SUCCESS, Code, Status
from app.framework.types import NO_NODE, CycleState, NodeInfo, PodInfo, PreFilterResult
from app.framework.volumes import (
    CLAIM_LOST,
    MIGRATED_PLUGINS_ANNOTATION,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolumeClaim,
    StorageClass,
    TopologySelectorTerm,
    VolumeLister,
)
from app.plugins.noderesources.fit import UtilizationShapePoint
from app.plugins.noderesources.resource_allocation import MAX_CUSTOM_PRIORITY_SCORE, broken_linear
from app.plugins.volumes.binder import BinderError, PodVolumeClaims, PodVolumes, VolumeBinder, quantity_bytes
from app.plugins.volumes.helpers import (
    changed_object,
    claim_not_found,
    is_claim_of_pod,
    pod_claims,
    storage_request,
    volume_cluster,
    volume_is_for_pod,
)

NAME = "VolumeBinding"
#: upstream's ``stateKey`` (the plugin's name)
STATE_KEY = NAME
#: ``VolumeBindingArgs.bindTimeoutSeconds``'s default (v1/defaults.go)
DEFAULT_BIND_TIMEOUT_SECONDS = 600
#: the ``StorageCapacityScoring`` feature gate (alpha and off in v1.36: ``shape`` is refused and
#: Score skips); a factory given ``storage_capacity_scoring=True`` scores as with the gate on
STORAGE_CAPACITY_SCORING = "StorageCapacityScoring"
#: ``maxUtilization``
MAX_UTILIZATION = 100
#: ``errNoPodVolumeForNode`` (PreBindPreFlight, PreBind), followed by the quoted node name
ERR_NO_POD_VOLUME_FOR_NODE = "no pod volume found for node"
#: the reason of an unbound immediate claim (PreFilter)
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


def storage_capacity_scoring_enabled() -> bool:
    """Whether the ``StorageCapacityScoring`` gate is on (the process's gates)."""
    return features.current().enabled(STORAGE_CAPACITY_SCORING)


#: ``SetDefaults_VolumeBindingArgs``' shape with the gate on: the emptier node scores higher
DEFAULT_SHAPE = (
    UtilizationShapePoint(utilization=0, score=MAX_CUSTOM_PRIORITY_SCORE),
    UtilizationShapePoint(utilization=100, score=0),
)


class VolumeBindingArgs(PluginArgs):
    """``VolumeBindingArgs``: ``bindTimeoutSeconds`` (how long PreBind waits for the claims to be
    bound, seconds, default 600) and ``shape`` (the capacity scoring function: only with the
    ``StorageCapacityScoring`` feature gate, alpha and off in v1.36)."""

    bind_timeout_seconds: int = Field(default=DEFAULT_BIND_TIMEOUT_SECONDS, ge=0)
    shape: list[UtilizationShapePoint] | None = None

    @model_validator(mode="after")
    def _shape(self) -> VolumeBindingArgs:
        if not storage_capacity_scoring_enabled():
            if self.shape is not None:
                raise ValueError(
                    "shape: unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"
                )
            return self
        if self.shape is not None:
            validate_shape(self.shape)
        return self


def validate_shape(shape: Sequence[UtilizationShapePoint]) -> None:
    """``validateFunctionShape``: at least one point, utilization strictly increasing. Raises
    ``ValueError``."""
    if not shape:
        raise ValueError("shape: at least one point must be specified")
    for i, (a, b) in enumerate(itertools.pairwise(shape), start=1):
        if a.utilization >= b.utilization:
            raise ValueError(f"shape[{i}].utilization: should be greater than prior point")


def build_scorer(shape: Sequence[UtilizationShapePoint]) -> VolumeCapacityScorer:
    """``buildScorerFunction`` (scorer.go): each class's utilization (``requested * 100 /
    capacity``, 100 when over or without capacity) through the shape (scores x 10), averaged
    over the classes and rounded half away from zero."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    return VolumeCapacityScorer(broken_linear([(p.utilization, p.score * scale) for p in shape]))


@dataclass(frozen=True)
class VolumeCapacityScorer:
    """``volumeCapacityScorer``: ``scorer({class: (requested, capacity)})`` (bytes) is a node's
    0..100 score (see :func:`build_scorer`); ``raw`` maps a utilization percentage to a score."""

    raw: Callable[[int], int]

    def __call__(self, classes: dict[str, tuple[int, int]]) -> int:
        if not classes:
            return 0
        total = 0
        for requested, capacity in classes.values():
            if capacity == 0 or requested > capacity:
                total += self.raw(MAX_UTILIZATION)
            else:
                total += self.raw(requested * MAX_UTILIZATION // capacity)
        return math.floor(total / len(classes) + 0.5)


@dataclass
class StateData:
    """``stateData``: written at PreFilter, filled by Filter per node, read by Reserve, PreBind
    and Unreserve."""

    all_bound: bool = False
    pod_volumes_by_node: dict[str, PodVolumes] = field(default_factory=dict)
    pod_volume_claims: PodVolumeClaims | None = None
    has_static_bindings: bool = False


def pod_has_pvcs(volumes: VolumeLister, pod: PodInfo) -> tuple[bool, str]:
    """``podHasPVCs``: whether the pod uses a claim, and why it cannot be scheduled now (``""``
    when it can): a missing, lost or deleted claim, or an ephemeral claim it does not own. Reads
    the watched claims (the PVC lister), not the binder's assumptions."""
    has = False
    for _, name, ephemeral in pod_claims(pod):
        has = True
        pvc = volumes.claim(pod.namespace, name)
        if pvc is None:
            if ephemeral:
                return has, f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
            return has, claim_not_found(name)
        if pvc.status is not None and pvc.status.phase == CLAIM_LOST:
            volume_name = pvc.specs.volume_name or ""
            return has, f'persistentvolumeclaim "{pvc.name}" bound to non-existent persistentvolume "{volume_name}"'
        if pvc.meta.deletion_timestamp:
            return has, f'persistentvolumeclaim "{pvc.name}" is being deleted'
        if ephemeral:
            error = volume_is_for_pod(pod, pvc)
            if error:
                return has, error
    return has, ""


def _state(state: CycleState) -> StateData | None:
    data = state.get(STATE_KEY)
    return data if isinstance(data, StateData) else None


#: upstream's ``CycleState.Read`` error (``framework.ErrNotFound``)
_NOT_FOUND = "not found"


# -- queueing hints (v1.36.3 volume_binding.go) --------------------------------------------------------


def is_schedulable_after_csi_node_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterCSINodeChange``: ``Queue`` for a new CSINode (or a relist's event) and
    for a change of its ``storage.alpha.kubernetes.io/migrated-plugins`` annotation."""
    if old is None:
        return QUEUE
    original, modified = changed_object(old, new, CSINode)
    assert original is not None
    key = MIGRATED_PLUGINS_ANNOTATION
    return QUEUE if original.annotations.get(key, "") != modified.annotations.get(key, "") else QUEUE_SKIP


def is_schedulable_after_persistent_volume_claim_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPersistentVolumeClaimChange``: ``Queue`` when the added or updated
    claim is one of the pod's (a ``persistentVolumeClaim`` or generic ephemeral volume's)."""
    _, pvc = changed_object(old, new, PersistentVolumeClaim)
    return QUEUE if is_claim_of_pod(pvc, pod, ephemeral=True) else QUEUE_SKIP


def _topologies(terms: Sequence[TopologySelectorTerm] | None) -> tuple[tuple[tuple[str, tuple[str, ...]], ...], ...]:
    """``allowedTopologies`` for ``apiequality.Semantic.DeepEqual`` (an empty list equals none)."""
    return tuple(
        tuple((r.key or "", tuple(r.values or ())) for r in term.match_label_expressions or ()) for term in terms or ()
    )


def is_schedulable_after_storage_class_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterStorageClassChange``: ``Queue`` for a new class and for a change of
    ``allowedTopologies`` (``volumeBindingMode`` is immutable)."""
    original, modified = objects_as(old, new, StorageClass)
    if original is None:
        return QUEUE
    if modified is None:
        raise TypeError("no new StorageClass")
    return QUEUE if _topologies(original.allowed_topologies) != _topologies(modified.allowed_topologies) else QUEUE_SKIP


def volume_limit(capacity: CSIStorageCapacity) -> int | None:
    """``volumeLimit`` (binder.go) as ``Quantity.Value()``: ``maximumVolumeSize``, else
    ``capacity`` (bytes, rounded up); ``None`` when neither is set."""
    limit = capacity.maximum_volume_size if capacity.maximum_volume_size is not None else capacity.capacity
    return None if limit is None else quantity_value(limit)


def is_schedulable_after_csi_storage_capacity_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterCSIStorageCapacityChange``: ``Queue`` for a new capacity and for a
    volume limit (:func:`volume_limit`) set or raised."""
    original, modified = objects_as(old, new, CSIStorageCapacity)
    if original is None:
        return QUEUE
    if modified is None:
        raise TypeError("no new CSIStorageCapacity")
    old_limit, new_limit = volume_limit(original), volume_limit(modified)
    return QUEUE if new_limit is not None and (old_limit is None or new_limit > old_limit) else QUEUE_SKIP


def is_schedulable_after_csi_driver_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterCSIDriverChange``: ``Queue`` when the pod has an inline ``csi`` volume
    of the updated driver and the update turned ``storageCapacity`` off. Registered for Update
    only: an event without both objects (a relist's) raises (``Queue``)."""
    original, modified = objects_as(old, new, CSIDriver)
    if original is None or modified is None:
        raise TypeError("a CSIDriver update needs its old and new object")
    was = original.spec is not None and original.spec.storage_capacity is True
    now = modified.spec is not None and modified.spec.storage_capacity is True
    for volume in pod.volumes:
        if volume.csi is None or (volume.csi.driver or "") != modified.name:
            continue
        if was and not now:
            return QUEUE
    return QUEUE_SKIP


#: ``EventsToRegister`` (v1.36.3, queueing hints on: Node without UpdateNodeTaint)
EVENTS = (
    ClusterEventWithHint(
        ClusterEvent(STORAGE_CLASS, ActionType.ADD | ActionType.UPDATE), is_schedulable_after_storage_class_change
    ),
    ClusterEventWithHint(
        ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
        is_schedulable_after_persistent_volume_claim_change,
    ),
    ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE)),
    ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
    ClusterEventWithHint(
        ClusterEvent(CSI_NODE, ActionType.ADD | ActionType.UPDATE), is_schedulable_after_csi_node_change
    ),
    ClusterEventWithHint(ClusterEvent(CSI_DRIVER, ActionType.UPDATE), is_schedulable_after_csi_driver_change),
    ClusterEventWithHint(
        ClusterEvent(CSI_STORAGE_CAPACITY, ActionType.ADD | ActionType.UPDATE),
        is_schedulable_after_csi_storage_capacity_change,
    ),
)


class VolumeBinding:
    """PreFilter, Filter, PreScore, Score, Reserve, Unreserve, PreBind (see the module doc).
    ``storage_capacity_scoring``: score as with the ``StorageCapacityScoring`` gate on (the
    args' ``shape``, else :data:`DEFAULT_SHAPE`); the process's gate when not given."""

    name = NAME

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (volume_binding.go, v1.36.3): the pod's volume sources."""
        return [(signers.VOLUMES, signers.volumes(pod))], SUCCESS

    def __init__(
        self,
        args: VolumeBindingArgs | None = None,
        handle: Handle | None = None,
        storage_capacity_scoring: bool | None = None,
    ) -> None:
        args = args or VolumeBindingArgs()
        self.cluster, self.volumes = volume_cluster(handle, NAME)
        self.binder = VolumeBinder(self.volumes, float(args.bind_timeout_seconds))
        #: ``fts.EnableStorageCapacityScoring``
        self.storage_capacity_scoring = (
            storage_capacity_scoring_enabled() if storage_capacity_scoring is None else storage_capacity_scoring
        )
        self.scorer: VolumeCapacityScorer | None = None
        if self.storage_capacity_scoring:
            self.scorer = build_scorer(args.shape or DEFAULT_SHAPE)

    # -- PreFilter / Filter ----------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """``PreFilter`` (module doc). Upstream returns ``(nil, status)``: no PreFilterResult (its
        eligible-node result was dropped in kubernetes#125398)."""
        has, error = pod_has_pvcs(self.volumes, pod)
        if error:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (error,))
        if not has:
            state.write(STATE_KEY, StateData())
            return None, SKIP
        try:
            claims = self.binder.get_pod_volume_claims(pod)
        except BinderError as exc:
            return None, Status.error(str(exc))
        if claims.unbound_claims_immediate:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_UNBOUND_IMMEDIATE,))
        kept = PodVolumeClaims(
            bound_claims=claims.bound_claims,
            unbound_claims_delay_binding=claims.unbound_claims_delay_binding,
            unbound_volumes_delay_binding=claims.unbound_volumes_delay_binding,
        )
        state.write(STATE_KEY, StateData(pod_volume_claims=kept))
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``Filter``: the node's volumes for the pod, or ``UnschedulableAndUnresolvable`` with
        the reasons it cannot have them."""
        data = _state(state)
        if data is None or data.pod_volume_claims is None:
            return Status.error(_NOT_FOUND)
        if node.node is None:
            return Status.error(NO_NODE)
        try:
            volumes, reasons = self.binder.find_pod_volumes(pod, data.pod_volume_claims, node)
        except BinderError as exc:
            return Status.error(str(exc))
        if reasons:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(reasons))
        data.pod_volumes_by_node[node.name] = volumes
        data.has_static_bindings = data.has_static_bindings or bool(volumes.static_bindings)
        return SUCCESS

    # -- PreScore / Score ------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """``PreScore``: ``Skip`` without the gate (no scorer); with it, ``Success`` (static
        bindings and dynamic provisions are both scored)."""
        if self.scorer is None:
            return SKIP
        data = _state(state)
        if data is None:
            return Status.error(_NOT_FOUND)
        return SUCCESS if data.has_static_bindings or self.storage_capacity_scoring else SKIP

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        """``Score``: the utilization score, by class, of the node's statically bound volumes or,
        when there are none, of its dynamic provisions against the ``CSIStorageCapacity`` found
        for each (its ``capacity``; the requests summed)."""
        if self.scorer is None:
            return 0, SUCCESS
        data = _state(state)
        if data is None:
            return 0, Status.error(_NOT_FOUND)
        volumes = data.pod_volumes_by_node.get(node.name)
        if volumes is None:
            return 0, SUCCESS
        classes: dict[str, tuple[int, int]] = {}
        if volumes.static_bindings or not self.storage_capacity_scoring:
            for binding in volumes.static_bindings or ():
                requested, capacity = binding.storage_resource()
                old = classes.get(binding.storage_class_name(), (0, 0))
                classes[binding.storage_class_name()] = (old[0] + requested, old[1] + capacity)
        else:
            for provision in volumes.dynamic_provisions or ():
                if provision.node_capacity is None:
                    continue
                name = provision.pvc.specs.storage_class_name or ""
                node_capacity = provision.node_capacity.capacity
                total = quantity_value(node_capacity) if node_capacity is not None else 0
                requested = quantity_bytes(storage_request(provision.pvc))
                # the capacity is the node's for the class: set, not summed, per claim
                classes[name] = (classes.get(name, (0, 0))[0] + requested, total)
        return self.scorer(classes), SUCCESS

    # -- Reserve / Unreserve / PreBind ------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``Reserve``: assume the node's volumes (nothing to do when the pod has no claim or all
        are bound)."""
        data = _state(state)
        if data is None:
            return Status.error(_NOT_FOUND)
        volumes = data.pod_volumes_by_node.get(node.name)
        if volumes is None:
            data.all_bound = True
            return SUCCESS
        try:
            data.all_bound = self.binder.assume_pod_volumes(pod, node.name, volumes)
        except BinderError as exc:
            return Status.error(str(exc))
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """``Unreserve``: revert what Reserve assumed (idempotent)."""
        data = _state(state)
        volumes = data.pod_volumes_by_node.get(node_name) if data is not None else None
        if volumes is not None:
            self.binder.revert_assumed_pod_volumes(volumes)

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """``PreBindPreFlight`` (volume_binding.go, v1.36.3): ``SKIP`` when every claim is bound,
        an error when the node has no volumes decided, else ``SUCCESS`` (PreBind has work)."""
        data = _state(state)
        if data is None:
            return Status.error(_NOT_FOUND)
        if data.all_bound:
            return SKIP
        if node_name not in data.pod_volumes_by_node:
            return Status.error(f'{ERR_NO_POD_VOLUME_FOR_NODE} "{node_name}"')
        return SUCCESS

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """``PreBind``: write the bindings and wait for the claims to be bound (module doc)."""
        data = _state(state)
        if data is None:
            return Status.error(_NOT_FOUND)
        if data.all_bound:
            return SUCCESS
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is None:
            return Status.error(f'{ERR_NO_POD_VOLUME_FOR_NODE} "{node_name}"')
        try:
            await self.binder.bind_pod_volumes(pod, node_name, volumes, self.cluster)
        except BinderError as exc:
            return Status.error(str(exc))
        return SUCCESS

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister`` (v1.36.3, :data:`EVENTS`): StorageClass Add|Update
        (:func:`is_schedulable_after_storage_class_change`), PersistentVolumeClaim Add|Update
        (:func:`is_schedulable_after_persistent_volume_claim_change`), PersistentVolume Add|Update
        and Node Add|UpdateNodeLabel (no hint), CSINode Add|Update
        (:func:`is_schedulable_after_csi_node_change`), CSIDriver Update
        (:func:`is_schedulable_after_csi_driver_change`), CSIStorageCapacity Add|Update
        (:func:`is_schedulable_after_csi_storage_capacity_change`)."""
        return EVENTS


PLUGIN = PluginEntry(
    name=NAME,
    factory=VolumeBinding,
    args=VolumeBindingArgs,
    needs_cluster=True,
    needs=lambda args, http_timeout: ClusterNeeds(volumes=True, csi_storage_capacities=True),
    summary="filter+reserve+preBind: kube-scheduler's VolumeBinding (claims bound or provisioned for the node)",
)

__all__ = [
    "DEFAULT_BIND_TIMEOUT_SECONDS",
    "DEFAULT_SHAPE",
    "ERR_NO_POD_VOLUME_FOR_NODE",
    "EVENTS",
    "NAME",
    "PLUGIN",
    "STATE_KEY",
    "STORAGE_CAPACITY_SCORING",
    "StateData",
    "VolumeBinding",
    "VolumeBindingArgs",
    "VolumeCapacityScorer",
    "build_scorer",
    "is_schedulable_after_csi_driver_change",
    "is_schedulable_after_csi_node_change",
    "is_schedulable_after_csi_storage_capacity_change",
    "is_schedulable_after_persistent_volume_claim_change",
    "is_schedulable_after_storage_class_change",
    "pod_has_pvcs",
    "storage_capacity_scoring_enabled",
    "validate_shape",
    "volume_limit",
]

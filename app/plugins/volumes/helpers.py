"""The storage helpers the volume plugins share, ported from v1.36.3's ``k8s.io/component-helpers``
(``storage/volume/helpers.go``, ``pv_helpers.go``; ``storage/ephemeral/ephemeral.go``;
``scheduling/corev1``) and ``pkg/apis/core/v1/helper`` (``MatchTopologySelectorTerms``,
``ContainsAccessMode``): which claim a pod volume uses, volume node affinity, access and volume
modes, ``FindMatchingVolume``, and the lister errors' messages (``persistentvolumeclaim "x" not
found``, as client-go's listers word them). For the plugins' queueing hints
(pkg/scheduler/util/utils.go ``As``): the event's objects checked (:func:`changed_object`,
:func:`deleted_object`) and whether a claim is one the pod uses (:func:`is_claim_of_pod`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import TypeVar

from app.framework import objects
from app.framework.events import objects_as
from app.framework.handle import ClusterHandle, ClusterNeeds, Handle
from app.framework.labels import label_selector_matches, node_selector_matches
from app.framework.resources import QuantityError, parse_quantity
from app.framework.types import PodInfo
from app.framework.volumes import (
    FILESYSTEM,
    VOLUME_AVAILABLE,
    PersistentVolume,
    PersistentVolumeClaim,
    TopologySelectorTerm,
    VolumeLister,
    claim_class,
    volume_class,
)

_T = TypeVar("_T")

#: ``v1.ResourceStorage``
STORAGE = "storage"


def claim_not_found(name: str) -> str:
    """The PVC lister's NotFound message (``errors.NewNotFound(v1.Resource("persistentvolumeclaim"),
    name)``)."""
    return f'persistentvolumeclaim "{name}" not found'


def volume_not_found(name: str) -> str:
    """The PV lister's NotFound message."""
    return f'persistentvolume "{name}" not found'


def storage_class_not_found(name: str) -> str:
    """The StorageClass lister's NotFound message (``storage.k8s.io`` group)."""
    return f'storageclass.storage.k8s.io "{name}" not found'


def pod_claims(pod: PodInfo) -> Iterator[tuple[objects.Volume, str, bool]]:
    """``(volume, claim name, is_ephemeral)`` of every pod volume backed by a claim, in the pod's
    order: a ``persistentVolumeClaim``'s ``claimName``, or a generic ephemeral volume's claim
    ``<pod name>-<volume name>`` (``ephemeral.VolumeClaimName``)."""
    for volume in pod.volumes:
        claim = volume_claim(pod, volume)
        if claim is not None:
            yield volume, *claim


def volume_claim(pod: PodInfo, volume: objects.Volume) -> tuple[str, bool] | None:
    """``(claim name, is_ephemeral)`` of one volume of ``pod`` (:func:`pod_claims`), ``None`` for
    a volume not backed by a claim."""
    if volume.persistent_volume_claim is not None:
        return volume.persistent_volume_claim.claim_name or "", False
    if volume.ephemeral is not None:
        return f"{pod.name}-{volume.name or ''}", True
    return None


def volume_is_for_pod(pod: PodInfo, pvc: PersistentVolumeClaim) -> str:
    """``ephemeral.VolumeIsForPod``: ``""`` when the pod controls the claim (an owner reference
    with ``controller: true`` and the pod's UID), else the error."""
    for ref in pvc.meta.owner_references or ():
        if ref.controller and ref.uid == pod.uid:
            return ""
    return f"PVC {pvc.namespace}/{pvc.name} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"


def changed_object(old: object, new: object, kind: type[_T]) -> tuple[_T | None, _T]:
    """``util.As[T](oldObj, newObj)`` for an Add or an Update: ``(old, new)``, each a ``kind``
    (``old`` ``None`` for an Add). Raises ``TypeError`` for another type or no ``new`` (a relist's
    event carries no object: the queue counts the error as ``Queue``)."""
    original, modified = objects_as(old, new, kind)
    if modified is None:
        raise TypeError(f"no new {kind.__name__}")
    return original, modified


def deleted_object(old: object, new: object, kind: type[_T]) -> _T:
    """``util.As[T](oldObj, newObj)`` for a Delete: the deleted ``kind``. Raises ``TypeError``
    for another type or no object (as :func:`changed_object`)."""
    deleted, _ = objects_as(old, new, kind)
    if deleted is None:
        raise TypeError(f"no deleted {kind.__name__}")
    found: _T = deleted
    return found


def is_claim_of_pod(pvc: PersistentVolumeClaim, pod: PodInfo, ephemeral: bool) -> bool:
    """Whether ``pvc`` is in the pod's namespace and named by one of its ``persistentVolumeClaim``
    volumes (with ``ephemeral``, also its generic ephemeral volumes' claims,
    ``ephemeral.VolumeClaimName``): the test of the hints on a claim's Add or Update."""
    if pvc.namespace != pod.namespace:
        return False
    return any(name == pvc.name for _, name, is_ephemeral in pod_claims(pod) if ephemeral or not is_ephemeral)


def quantity(value: objects.QuantityValue | None) -> Decimal:
    """A quantity exactly (``Quantity`` for ``Cmp``); a missing or malformed one is 0, as a zero
    ``Quantity`` of a missing map key."""
    if value is None:
        return Decimal(0)
    try:
        return parse_quantity(value)
    except QuantityError:
        return Decimal(0)


def storage_request(pvc: PersistentVolumeClaim) -> Decimal:
    """``spec.resources.requests[storage]`` (0 when absent)."""
    resources = pvc.specs.resources
    requests = resources.requests if resources is not None else None
    return quantity((requests or {}).get(STORAGE))


def storage_capacity(pv: PersistentVolume) -> Decimal:
    """``spec.capacity[storage]`` (0 when absent)."""
    return quantity((pv.specs.capacity or {}).get(STORAGE))


def check_node_affinity(pv: PersistentVolume, node_labels: Mapping[str, str]) -> bool:
    """``CheckNodeAffinity`` succeeds: the volume has no required node affinity, or a node with
    ``node_labels`` and no name matches one of its terms (``MatchNodeSelectorTerms``; no term
    matches nothing; ``matchFields`` are not compared, as upstream's nameless node has no fields)."""
    affinity = pv.specs.node_affinity
    if affinity is None or affinity.required is None:
        return True
    return node_selector_matches(affinity.required, "", node_labels)


def volume_cluster(handle: Handle | None, plugin: str) -> tuple[ClusterHandle, VolumeLister]:
    """The cluster handle of a volume plugin named ``plugin`` and its watched storage objects
    (``ClusterHandle.volumes``). Raises ``ValueError`` without a cluster or without them."""
    cluster = (handle or Handle("")).require_cluster(plugin)
    if cluster.volumes is None:
        raise ValueError(f"{plugin} needs the storage objects: its registration declares ClusterNeeds.volumes")
    return cluster, cluster.volumes


def needs_volumes(args: object, http_timeout: float) -> ClusterNeeds:
    """A volume plugin's registration ``needs``: the watched storage objects."""
    return ClusterNeeds(volumes=True)


def is_volume_bound_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> bool:
    """``IsVolumeBoundToClaim``: the volume's ``claimRef`` names the claim (and, when it has a UID,
    the claim's UID)."""
    ref = pv.specs.claim_ref
    if ref is None:
        return False
    if ref.name != pvc.name or (ref.namespace or "") != pvc.namespace:
        return False
    return not ref.uid or ref.uid == (pvc.meta.uid or "")


def check_volume_mode_mismatches(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """``CheckVolumeModeMismatches``: whether the modes differ (``Filesystem`` when unset)."""
    return (pvc.specs.volume_mode or FILESYSTEM) != (pv.specs.volume_mode or FILESYSTEM)


def check_access_modes(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """``CheckAccessModes``: the volume offers every access mode the claim asks for."""
    offered = set(pv.specs.access_modes or ())
    return all(mode in offered for mode in pvc.specs.access_modes or ())


def contains_access_mode(modes: Sequence[str] | None, mode: str) -> bool:
    """``v1helper.ContainsAccessMode``."""
    return mode in (modes or ())


def find_matching_volume(
    pvc: PersistentVolumeClaim,
    volumes: Sequence[PersistentVolume],
    node_labels: Mapping[str, str] | None,
    excluded: Collection[str],
    delay_binding: bool,
) -> PersistentVolume | None:
    """``FindMatchingVolume`` (pv_helpers.go, v1.36.3; the ``VolumeAttributesClass`` gate is GA and
    locked on): a volume pre-bound to the claim (``None`` when its node affinity does not match the
    node), else the smallest available one of the claim's class, large enough, of the claim's
    volume mode and ``volumeAttributesClassName`` (unset equals unset only), not being deleted,
    matching the claim's selector, the node (``node_labels``: the scheduler's path) and the access
    modes; ``None`` when none. ``excluded``: volume names already chosen for other claims of the
    pod."""
    if not volumes:
        return None
    requested = storage_request(pvc)
    requested_class = claim_class(pvc)
    selector = pvc.specs.selector
    smallest: PersistentVolume | None = None
    smallest_size = Decimal(0)
    for pv in volumes:
        if pv.name in excluded:
            continue
        spec = pv.specs
        bound_to_claim = is_volume_bound_to_claim(pv, pvc)
        if spec.claim_ref is not None and not bound_to_claim:
            continue
        size = storage_capacity(pv)
        if size < requested:
            continue
        if check_volume_mode_mismatches(pvc, pv):
            continue
        if (pvc.specs.volume_attributes_class_name or "") != (spec.volume_attributes_class_name or ""):
            continue
        if pv.meta.deletion_timestamp:
            continue
        affinity_valid = node_labels is None or check_node_affinity(pv, node_labels)
        if bound_to_claim:
            return pv if affinity_valid else None
        if node_labels is None and delay_binding:
            continue
        if (pv.status.phase if pv.status is not None else None) != VOLUME_AVAILABLE:
            continue
        if selector is not None and not label_selector_matches(selector, pv.meta.labels or {}):
            continue
        if volume_class(pv) != requested_class:
            continue
        if not affinity_valid:
            continue
        if node_labels is not None and not check_access_modes(pvc, pv):
            continue
        if smallest is None or smallest_size > size:
            smallest, smallest_size = pv, size
    return smallest


def match_topology_selector_terms(terms: Sequence[TopologySelectorTerm] | None, labels: Mapping[str, str]) -> bool:
    """``v1helper.MatchTopologySelectorTerms``: no term matches everything; a term with no
    requirement (or one without values) matches nothing; a term matches when every label has one
    of its values."""
    if not terms:
        return True
    for term in terms:
        requirements = term.match_label_expressions or ()
        if not requirements:
            continue
        if any(not r.values for r in requirements):
            continue  # TopologySelectorRequirementsAsSelector refuses an empty value list
        if all(labels.get(r.key or "") in (r.values or ()) for r in requirements):
            return True
    return False


__all__ = [
    "STORAGE",
    "changed_object",
    "check_access_modes",
    "check_node_affinity",
    "check_volume_mode_mismatches",
    "claim_not_found",
    "contains_access_mode",
    "deleted_object",
    "find_matching_volume",
    "is_claim_of_pod",
    "is_volume_bound_to_claim",
    "match_topology_selector_terms",
    "pod_claims",
    "quantity",
    "storage_capacity",
    "storage_class_not_found",
    "storage_request",
    "volume_claim",
    "volume_is_for_pod",
    "volume_not_found",
]

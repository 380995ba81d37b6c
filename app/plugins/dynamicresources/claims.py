"""A pod's ResourceClaims: v1.36.3's ``claims.go`` (``claimStore``) and the helpers of
``staging/src/k8s.io/dynamic-resource-allocation/resourceclaim/resourceclaim.go`` the plugin calls
(``Name``, ``IsForPod``, ``IsReservedForPod``), with the plugin's ``foreachPodResourceClaim``.

Claims are ``resource.k8s.io/v1`` JSON dicts as the cluster state holds them (read-only: a change
is a new dict). Without ``DRAWorkloadResourceClaims`` (alpha, off) a claim is always bound to the
pod itself; the special claim of extended resources backed by DRA is not built here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from app.framework.dra import DRALister, Object
from app.framework.errors import SchedulerExtenderError
from app.framework.types import PodInfo

#: ``resourceclaim.ErrClaimNotFound``
ERR_CLAIM_NOT_FOUND = "ResourceClaim not created yet"
#: ``resourceclaim.ErrAPIUnsupported``
ERR_API_UNSUPPORTED = "none of the supported fields are set"


class ClaimError(SchedulerExtenderError):
    """Why a pod's claims cannot be used now (``foreachPodResourceClaim``'s error: the pod is
    unschedulable until a claim or the pod changes)."""


def _meta(obj: Object) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _status(obj: Object) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def claim_name(obj: Object) -> str:
    """``metadata.name``."""
    return str(_meta(obj).get("name") or "")


def claim_namespace(obj: Object) -> str:
    """``metadata.namespace``."""
    return str(_meta(obj).get("namespace") or "")


def claim_uid(obj: Object) -> str:
    """``metadata.uid``."""
    return str(_meta(obj).get("uid") or "")


def kobj(obj: Object) -> str:
    """``klog.KObj``: ``namespace/name``."""
    return f"{claim_namespace(obj)}/{claim_name(obj)}"


def allocation(obj: Object) -> Mapping[str, Any] | None:
    """``status.allocation`` (``None`` when unallocated)."""
    found = _status(obj).get("allocation")
    return found if isinstance(found, Mapping) else None


def reserved_for(obj: Object) -> list[Mapping[str, Any]]:
    """``status.reservedFor``."""
    return [r for r in _status(obj).get("reservedFor") or () if isinstance(r, Mapping)]


def requests(obj: Object) -> list[Mapping[str, Any]]:
    """``spec.devices.requests``."""
    spec = obj.get("spec")
    devices = spec.get("devices") if isinstance(spec, Mapping) else None
    found = devices.get("requests") if isinstance(devices, Mapping) else None
    return [r for r in found or () if isinstance(r, Mapping)]


def resource_claim_name(
    pod: PodInfo, entry_name: str, by_name: str | None, by_template: str | None
) -> tuple[str | None, bool]:
    """``resourceclaim.Name``: the claim's name and whether its owner must be checked (a
    template's claim), ``None`` when the template's claim was deliberately not generated. Raises
    :class:`ClaimError` when it is not generated yet or the entry names nothing."""
    if by_name is not None:
        return by_name, False
    if by_template is not None:
        for status in pod.resource_claim_statuses:
            if status.name == entry_name:
                return status.resource_claim_name, True
        raise ClaimError(f'pod "{pod.namespace}/{pod.name}": {ERR_CLAIM_NOT_FOUND}')
    raise ClaimError(f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{entry_name}": {ERR_API_UNSUPPORTED}')


def is_for_pod(pod: PodInfo, claim: Object) -> str:
    """``resourceclaim.IsForPod``: ``""``, or why ``claim`` was not made for ``pod`` (its
    controller owner is not the pod)."""
    ns, name = claim_namespace(claim), claim_name(claim)
    if ns != pod.namespace:
        return f"ResourceClaim {ns}/{name} is not in the same namespace as Pod {pod.namespace}/{pod.name}"
    for ref in _meta(claim).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            if ref.get("uid") == pod.uid:
                return ""
            break
    return f"ResourceClaim {ns}/{name} was not created for Pod {pod.namespace}/{pod.name} (Pod is not owner)"


def is_reserved_for_pod(pod: PodInfo, claim: Object) -> bool:
    """``resourceclaim.IsReservedForPod`` (no PodGroup reservations): the pod's UID is in
    ``status.reservedFor``."""
    return any(r.get("uid") == pod.uid for r in reserved_for(claim))


def foreach_pod_resource_claim(
    dra: DRALister, pod: PodInfo, callback: Callable[[str, Object], None] | None = None
) -> None:
    """``foreachPodResourceClaim``: every claim of ``pod.spec.resourceClaims`` exists, is not
    being deleted and (a template's) belongs to the pod; ``callback(entry name, claim)`` for each.
    Raises :class:`ClaimError` with upstream's message otherwise."""
    for entry in pod.resource_claims:
        name, must_check_owner = resource_claim_name(
            pod, entry.name or "", entry.resource_claim_name, entry.resource_claim_template_name
        )
        if name is None:
            continue
        claim = dra.claim(pod.namespace, name)
        if claim is None:
            raise ClaimError(f'could not find ResourceClaim "{pod.namespace}/{name}"')
        if _meta(claim).get("deletionTimestamp"):
            raise ClaimError(f'resourceclaim "{claim_name(claim)}" is being deleted')
        if must_check_owner:
            error = is_for_pod(pod, claim)
            if error:
                raise ClaimError(error)
        if callback is not None:
            callback(entry.name or "", claim)


def pod_resource_claims(dra: DRALister, pod: PodInfo) -> list[Object]:
    """``podResourceClaims``: the pod's claims in ``spec.resourceClaims`` order. Raises
    :class:`ClaimError`."""
    claims: list[Object] = []
    foreach_pod_resource_claim(dra, pod, lambda _, claim: claims.append(claim))
    return claims


class ClaimStore:
    """``claimStore``: the pod's claims (user claims only here), replaced one by one as PreBind
    writes them."""

    def __init__(self, claims: Sequence[Object] = ()) -> None:
        self.claims: list[Object] = list(claims)

    def empty(self) -> bool:
        """No claim."""
        return not self.claims

    def __len__(self) -> int:
        return len(self.claims)

    def all(self) -> Iterator[tuple[int, Object]]:
        """``(index, claim)`` of every claim."""
        return iter(enumerate(self.claims))

    def to_allocate(self) -> Iterator[tuple[int, Object]]:
        """``(index, claim)`` of the claims without ``status.allocation`` (original indices)."""
        return ((i, c) for i, c in enumerate(self.claims) if allocation(c) is None)

    def get(self, index: int) -> Object:
        """The claim at ``index``."""
        return self.claims[index]

    def set(self, index: int, claim: Object) -> None:
        """Replace the claim at ``index`` (after PreBind wrote it)."""
        self.claims[index] = claim

    def binding(self, pod: PodInfo) -> dict[str, str]:
        """``getBinding``: the ``ResourceClaimConsumerReference`` of the pod (``apiGroup`` ``""``,
        ``resource`` ``pods``, its name and UID)."""
        return {"resource": "pods", "name": pod.name, "uid": pod.uid}


__all__ = [
    "ERR_API_UNSUPPORTED",
    "ERR_CLAIM_NOT_FOUND",
    "ClaimError",
    "ClaimStore",
    "allocation",
    "claim_name",
    "claim_namespace",
    "claim_uid",
    "foreach_pod_resource_claim",
    "is_for_pod",
    "is_reserved_for_pod",
    "kobj",
    "pod_resource_claims",
    "requests",
    "reserved_for",
    "resource_claim_name",
]

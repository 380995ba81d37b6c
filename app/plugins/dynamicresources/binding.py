"""DynamicResources' PreBind writes and binding conditions, as v1.36.3's ``bindClaim``,
``isClaimReadyForBinding``, ``isClaimTimeout`` and ``isPodReadyForBinding``
(pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go).

:func:`bind_claim` records what Reserve decided: the claim's finalizer
(``resource.kubernetes.io/delete-protection``, a PUT of the claim), then ``status.allocation``
and the pod in ``status.reservedFor`` (a PUT of ``/status`` with the claim's ``resourceVersion``:
optimistic concurrency). A 409 Conflict reads the claim again and retries
(``retry.RetryOnConflict`` with ``retry.DefaultRetry``: 5 attempts 10 ms apart); a claim
allocated elsewhere meanwhile is an error (the pod is tried again), never a second allocation.
The written claim is assumed in the cluster state and its in-flight allocation dropped.
"""

from __future__ import annotations

import asyncio
import datetime
import random
from collections.abc import Mapping
from typing import Any

from app.framework.dra import CLAIM_FINALIZER, ClaimWrite, ClaimWriteResult, DRALister, Object
from app.framework.errors import SchedulerExtenderError
from app.framework.handle import ClusterHandle
from app.framework.types import PodInfo
from app.plugins.dynamicresources.claims import allocation, claim_name, claim_namespace, claim_uid, kobj

#: seconds a claim call may take
API_TIMEOUT = 10.0
#: ``retry.DefaultRetry``: attempts, pause (seconds), jitter
RETRY_STEPS, RETRY_PAUSE, RETRY_JITTER = 5, 0.010, 0.1
#: ``ErrDeviceBindingTimeout`` and ``ErrDeviceBindingFailed``
ERR_BINDING_TIMEOUT = "device binding timeout"
ERR_BINDING_FAILED = "device binding failed"


class BindError(SchedulerExtenderError):
    """A PreBind failure (the message as upstream's error); ``conflict``: a 409 to retry."""

    def __init__(self, message: str, conflict: bool = False) -> None:
        super().__init__(message)
        self.conflict = conflict


def now_rfc3339() -> str:
    """The current time as ``metav1.Time`` writes it (seconds, UTC)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_time(text: Any) -> datetime.datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _check(result: ClaimWriteResult, what: str) -> dict[str, Any]:
    if result.claim is None:
        raise BindError(f"{what}: {result.error or 'no answer'}", conflict=result.conflict)
    return result.claim


async def bind_claim(
    cluster: ClusterHandle,
    dra: DRALister,
    claim: Object,
    alloc: Object | None,
    pod: PodInfo,
    binding_conditions: bool,
) -> Object:
    """``bindClaim``: write ``alloc`` (``None``: the claim is allocated already, only reserve it)
    and the pod's reservation to ``claim``; the claim as written. Raises :class:`BindError`."""
    uid, modified = claim_uid(claim), False
    current: dict[str, Any] = _copy(claim)
    try:
        for attempt in range(RETRY_STEPS):
            if attempt:
                await asyncio.sleep(RETRY_PAUSE * (1 + RETRY_JITTER * random.random()))
                result = await cluster.write_resource_claim(
                    ClaimWrite("get", claim_namespace(claim), claim_name(claim)), API_TIMEOUT
                )
                current = _check(result, f"get updated claim {kobj(claim)} after conflict")
            try:
                current = await _write_once(cluster, current, alloc, pod, binding_conditions)
            except BindError as exc:
                if exc.conflict and attempt + 1 < RETRY_STEPS:
                    continue
                raise
            modified = True
            return current
        raise BindError(f"claim {kobj(claim)}: too many conflicts")  # not reached
    finally:
        force = False
        if modified and not dra.assume_claim(current):
            force = True
        if alloc is not None:
            dra.maybe_remove_pending_allocation(uid, force)


async def _write_once(
    cluster: ClusterHandle, claim: dict[str, Any], alloc: Object | None, pod: PodInfo, binding_conditions: bool
) -> dict[str, Any]:
    """One attempt of ``bindClaim``'s retry loop."""
    meta = claim.setdefault("metadata", {})
    if meta.get("deletionTimestamp"):
        raise BindError(f"claim {kobj(claim)} got deleted in the meantime")
    ns, name = claim_namespace(claim), claim_name(claim)
    if alloc is not None:
        if allocation(claim) is not None:
            raise BindError(f"claim {kobj(claim)} got allocated elsewhere in the meantime")
        finalizers = list(meta.get("finalizers") or ())
        if CLAIM_FINALIZER not in finalizers:
            meta["finalizers"] = [*finalizers, CLAIM_FINALIZER]
            result = await cluster.write_resource_claim(ClaimWrite("update", ns, name, claim), API_TIMEOUT)
            claim = _copy(_check(result, f"add finalizer to claim {kobj(claim)}"))
        claim.setdefault("status", {})["allocation"] = _copy(alloc)
    status = claim.setdefault("status", {})
    reserved = list(status.get("reservedFor") or ())
    status["reservedFor"] = [*reserved, {"resource": "pods", "name": pod.name, "uid": pod.uid}]
    if binding_conditions:
        current = status.get("allocation")
        if not isinstance(current, dict):
            raise BindError(f"claim {kobj(claim)} got deallocated elsewhere in the meantime")
        current.setdefault("allocationTimestamp", now_rfc3339())
    result = await cluster.write_resource_claim(ClaimWrite("update_status", ns, name, claim), API_TIMEOUT)
    what = "add allocation and reservation to claim" if alloc is not None else "add reservation to claim"
    return _check(result, f"{what} {kobj(claim)}")


def _copy(obj: Any) -> Any:
    """A deep copy of JSON data (dicts and lists copied, scalars shared)."""
    if isinstance(obj, Mapping):
        return {k: _copy(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_copy(v) for v in obj]
    return obj


def _device_status(claim: Object, result: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``getAllocatedDeviceStatus``: the claim's ``status.devices`` entry of ``result``'s device."""
    for device in (claim.get("status") or {}).get("devices") or ():
        if all(device.get(k) == result.get(k) for k in ("device", "driver", "pool")):
            found: Mapping[str, Any] = device
            return found
    return None


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in status.get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return None


def _results(claim: Object) -> list[Mapping[str, Any]]:
    alloc = allocation(claim)
    devices = (alloc or {}).get("devices") or {}
    return [r for r in devices.get("results") or () if isinstance(r, Mapping)]


def is_claim_ready_for_binding(claim: Object) -> bool:
    """``isClaimReadyForBinding``: every binding condition of every allocated device true and no
    binding failure condition true (none at all: ready). Raises :class:`BindError`
    (``device binding failed: ...``) when a failure condition is true."""
    if allocation(claim) is None:
        return False
    for result in _results(claim):
        conditions = result.get("bindingConditions") or ()
        if not conditions:
            continue
        status = _device_status(claim, result)
        if status is None:
            return False
        for kind in result.get("bindingFailureConditions") or ():
            failed = _condition(status, kind)
            if failed is not None and failed.get("status") == "True":
                reason, message = failed.get("reason") or "", failed.get("message") or ""
                raise BindError(
                    f'{ERR_BINDING_FAILED}: claim={claim_name(claim)}, reason={reason}, message="{message}"'
                )
        for kind in conditions:
            cond = _condition(status, kind)
            if cond is None or cond.get("status") != "True":
                return False
    return True


def is_claim_timeout(claim: Object, binding_timeout: float) -> bool:
    """``isClaimTimeout``: a device with binding conditions whose claim was allocated more than
    ``binding_timeout`` seconds ago."""
    alloc = allocation(claim)
    stamp = _parse_time((alloc or {}).get("allocationTimestamp"))
    if stamp is None:
        return False
    deadline = stamp + datetime.timedelta(seconds=binding_timeout)
    expired = deadline < datetime.datetime.now(datetime.UTC)
    return any(r.get("bindingConditions") is not None and expired for r in _results(claim))


def has_binding_conditions(claims: list[Object]) -> bool:
    """``hasBindingConditions``: an allocated device of the claims has binding conditions."""
    return any(r.get("bindingConditions") for claim in claims for r in _results(claim))


__all__ = [
    "API_TIMEOUT",
    "ERR_BINDING_FAILED",
    "ERR_BINDING_TIMEOUT",
    "BindError",
    "bind_claim",
    "has_binding_conditions",
    "is_claim_ready_for_binding",
    "is_claim_timeout",
    "now_rfc3339",
]

"""Device taints and tolerations, as v1.36.3's ``taintPreventsAllocation`` in
``structured/internal/incubating/allocator_incubating.go`` and ``ToleratesTaint`` in
``dynamic-resource-allocation/resourceclaim/devicetoleration.go``: only ``NoSchedule`` and
``NoExecute`` taints keep a device from being allocated, unless a toleration of the request
tolerates them."""

from __future__ import annotations

from collections.abc import Sequence

from app.plugins.dynamicresources.structured.api import Object

_EFFECTS = ("NoSchedule", "NoExecute")


def tolerates_taint(toleration: Object, taint: Object) -> bool:
    """``ToleratesTaint``: effect and key (when set) equal, then ``Equal`` values or ``Exists``."""
    effect, key = toleration.get("effect") or "", toleration.get("key") or ""
    if effect and effect != taint.get("effect"):
        return False
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or ""
    if operator in ("", "Equal"):
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


def taint_prevents_allocation(device: Object, tolerations: Sequence[Object] | None) -> bool:
    """Whether an untolerated ``NoSchedule``/``NoExecute`` taint of ``device`` forbids it."""
    for taint in device.get("taints") or ():
        if taint.get("effect") in _EFFECTS and not any(tolerates_taint(t, taint) for t in tolerations or ()):
            return True
    return False

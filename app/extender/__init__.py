"""Wire types of ``k8s.io/kube-scheduler/extender/v1`` as pydantic v2 models (the public contract)."""

from app.extender.models import (
    MIN_EXTENDER_PRIORITY,
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriority,
    HostPriorityList,
    MetaPod,
    MetaVictims,
    NodeList,
    Victims,
)
from app.framework.runtime import MAX_EXTENDER_PRIORITY  # the one definition: the Score range on the wire

__all__ = [
    "MAX_EXTENDER_PRIORITY",
    "MIN_EXTENDER_PRIORITY",
    "ExtenderArgs",
    "ExtenderBindingArgs",
    "ExtenderBindingResult",
    "ExtenderFilterResult",
    "ExtenderPreemptionArgs",
    "ExtenderPreemptionResult",
    "HostPriority",
    "HostPriorityList",
    "MetaPod",
    "MetaVictims",
    "NodeList",
    "Victims",
]

"""Wire types of ``k8s.io/kube-scheduler/extender/v1`` as pydantic v2 models (the public contract)."""

from app.extender.models import (
    MAX_EXTENDER_PRIORITY,
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

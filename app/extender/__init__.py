"""The extender: the wire types of ``k8s.io/kube-scheduler/extender/v1`` as pydantic v2 models (the
public contract), their codec, and the verbs over a profile's Framework (:mod:`app.extender.verbs`)."""

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
from app.framework.scores import MAX_EXTENDER_PRIORITY  # the one definition: the Score range on the wire

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

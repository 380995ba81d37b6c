"""Taints and tolerations as the API defines them (``k8s.io/api/core/v1/toleration.go``
``ToleratesTaint``, ``k8s.io/kubernetes/pkg/apis/core/v1/helper`` ``TolerationsTolerateTaint`` and
``FindMatchingUntoleratedTaint``): shared by TaintToleration, NodeUnschedulable and
PodTopologySpread's ``nodeTaintsPolicy``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from app.framework import objects

#: ``v1.TaintEffectNoSchedule``, ``v1.TaintEffectPreferNoSchedule``, ``v1.TaintEffectNoExecute``
NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "PreferNoSchedule", "NoExecute"
#: ``v1.TolerationOpEqual``, ``v1.TolerationOpExists``
OP_EQUAL, OP_EXISTS = "Equal", "Exists"


def tolerates_taint(toleration: objects.Toleration, taint: objects.Taint) -> bool:
    """``Toleration.ToleratesTaint`` of k8s.io/api v1.30 (core/v1/toleration.go).

    An empty toleration effect matches every effect and an empty key every key; the operator
    ``""`` or ``Equal`` needs the same value (``""`` when unset), ``Exists`` any value; any other
    operator tolerates nothing. ``tolerationSeconds`` is not looked at.
    """
    effect = toleration.effect or ""
    if effect and effect != (taint.effect or ""):
        return False
    key = toleration.key or ""
    if key and key != (taint.key or ""):
        return False
    operator = toleration.operator or ""
    if operator in ("", OP_EQUAL):
        return (toleration.value or "") == (taint.value or "")
    return operator == OP_EXISTS


def tolerations_tolerate_taint(tolerations: Iterable[objects.Toleration], taint: objects.Taint) -> bool:
    """``v1helper.TolerationsTolerateTaint``: whether any of ``tolerations`` tolerates ``taint``."""
    return any(tolerates_taint(t, taint) for t in tolerations)


def find_matching_untolerated_taint(
    taints: Iterable[objects.Taint], tolerations: Sequence[objects.Toleration]
) -> objects.Taint | None:
    """``v1helper.FindMatchingUntoleratedTaint(taints, tolerations, DoNotScheduleTaintsFilterFunc())``:
    the first taint with effect ``NoSchedule`` or ``NoExecute`` that none of ``tolerations``
    tolerates, or ``None``."""
    for taint in taints:
        if taint.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


__all__ = [
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "OP_EQUAL",
    "OP_EXISTS",
    "PREFER_NO_SCHEDULE",
    "find_matching_untolerated_taint",
    "tolerates_taint",
    "tolerations_tolerate_taint",
]

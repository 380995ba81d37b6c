"""The node constraints every scheduler honours before a profile's own Filter plugins: kube-scheduler
runs them in every profile (its default plugins), and a standalone scheduler that skipped them
would place pods on cordoned nodes or on the control plane.

- ``NodeUnschedulable`` (pkg/scheduler/framework/plugins/nodeunschedulable): a node with
  ``spec.unschedulable`` is rejected unless the pod tolerates the taint
  ``node.kubernetes.io/unschedulable:NoSchedule``: "node(s) were unschedulable".
- ``TaintToleration`` (plugins/tainttoleration, Filter): the first taint with effect ``NoSchedule``
  or ``NoExecute`` the pod does not tolerate rejects the node: "node(s) had untolerated taint
  {key: value}" (``v1helper.FindMatchingUntoleratedTaint``, ``Toleration.ToleratesTaint``).
- ``NodeAffinity``, its ``spec.nodeSelector`` part (plugins/nodeaffinity): every label of the
  selector must be on the node: "node(s) didn't match Pod's node affinity/selector".

All three are ``UnschedulableAndUnresolvable`` (preemption cannot help). Required node affinity
terms (``spec.affinity``) are not read (the pod records do not keep them).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.framework import objects
from app.framework.status import Code, Status
from app.framework.types import NodeInfo, PodInfo

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
_UNSCHEDULABLE = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) were unschedulable",), "NodeUnschedulable", "NodeUnschedulable"
)
_SELECTOR = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ("node(s) didn't match Pod's node affinity/selector",),
    "NodeAffinity",
    "NodeSelectorMismatch",
)


def tolerates(toleration: objects.Toleration, key: str, value: str, effect: str) -> bool:
    """``v1.Toleration.ToleratesTaint``: an empty effect matches every effect, an empty key with
    ``Exists`` every key; ``Exists`` ignores the value, ``Equal`` (or no operator) compares it."""
    if toleration.effect and toleration.effect != effect:
        return False
    if toleration.key and toleration.key != key:
        return False
    if toleration.operator == "Exists":
        return True
    if toleration.operator in (None, "", "Equal"):
        return (toleration.value or "") == value
    return False


def node_constraints(pod: PodInfo, node: NodeInfo) -> Status | None:
    """The first constraint of the module doc ``node`` breaks for ``pod``, or ``None``."""
    tolerations = pod.tolerations
    if node.unschedulable and not any(tolerates(t, UNSCHEDULABLE_TAINT, "", "NoSchedule") for t in tolerations):
        return _UNSCHEDULABLE
    for taint in node.taints:
        effect = taint.effect or ""
        if effect not in ("NoSchedule", "NoExecute"):
            continue
        key, value = taint.key or "", taint.value or ""
        if not any(tolerates(t, key, value, effect) for t in tolerations):
            return Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                (f"node(s) had untolerated taint {{{key}: {value}}}",),
                "TaintToleration",
                "UntoleratedTaint",
            )
    if pod.node_selector:
        labels = node.labels
        if any(labels.get(k) != v for k, v in pod.node_selector.items()):
            return _SELECTOR
    return None


def split_by_constraints(pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], dict[int, Status]]:
    """The indexes of ``nodes`` that meet the constraints, and the rejections of the others."""
    passing: list[int] = []
    rejected: dict[int, Status] = {}
    for i, node in enumerate(nodes):
        status = node_constraints(pod, node)
        if status is None:
            passing.append(i)
        else:
            rejected[i] = status
    return passing, rejected


__all__ = ["UNSCHEDULABLE_TAINT", "node_constraints", "split_by_constraints", "tolerates"]

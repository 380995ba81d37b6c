"""AnnotationNodeAffinity: pods with a given annotation run only on nodes with a given label.

The "SpaceCloud" case: pods annotated ``type: space`` may only land on edge nodes
(``kubernetes.io/role: edge``); with ``exclusive: true`` other pods are also kept off those nodes,
so the edge pool stays free for space workloads.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from app.framework.args import PluginArgs
from app.framework.handle import ClusterNeeds, Handle
from app.framework.registry import PluginEntry
from app.framework.status import SKIP, SUCCESS, Status
from app.framework.types import CycleState, NodeInfo, PodInfo, PreFilterResult

NAME = "AnnotationNodeAffinity"
_STATE_KEY = f"{NAME}/matches"
_NO_NODE = Status.error(
    "node object unavailable: the request carries only NodeNames (nodeCacheCapable: true) "
    "and this profile has no cluster state"
)


class AnnotationNodeAffinityArgs(PluginArgs):
    """Which pod annotation selects pods, which node label those pods need, and whether other
    pods are kept off labelled nodes (``exclusive``)."""

    annotation_key: str = Field(default="type", min_length=1)
    annotation_value: str = "space"
    node_label_key: str = Field(default="kubernetes.io/role", min_length=1)
    node_label_value: str = "edge"
    exclusive: bool = False


class AnnotationNodeAffinity:
    """PreFilter + Filter. Rejections are ``UnschedulableAndUnresolvable`` (evicting pods cannot
    change a node's labels, so kube-scheduler does not try preemption for them).

    Reasons, stable and without the node name:
    ``pod annotation type=space requires node label kubernetes.io/role=edge`` and, with
    ``exclusive``, ``node label kubernetes.io/role=edge is reserved for pods annotated type=space``.
    A node whose object is unknown (cache mode without cluster state) is an ``Error``, handled by
    the plugin's failure policy, unless the pod's verdict does not depend on the node.
    """

    name = NAME

    def __init__(self, args: AnnotationNodeAffinityArgs, handle: Handle) -> None:
        self.args = args
        a = args
        self._requires = Status.unresolvable(
            f"pod annotation {a.annotation_key}={a.annotation_value} requires node label "
            f"{a.node_label_key}={a.node_label_value}",
            code="NodeLabelRequired",
        )
        self._reserved = Status.unresolvable(
            f"node label {a.node_label_key}={a.node_label_value} is reserved for pods annotated "
            f"{a.annotation_key}={a.annotation_value}",
            code="NodeReserved",
        )

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Record whether the pod carries the annotation; ``SKIP`` when nothing can reject it."""
        matches = pod.annotations.get(self.args.annotation_key) == self.args.annotation_value
        if not matches and not self.args.exclusive:
            return None, SKIP
        state.write(_STATE_KEY, matches)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """Reject a node that lacks the label for an annotated pod, or (``exclusive``) a labelled
        node for a pod without the annotation."""
        if node.node is None:
            return _NO_NODE
        labelled = node.labels.get(self.args.node_label_key) == self.args.node_label_value
        if state.read(_STATE_KEY):
            return SUCCESS if labelled else self._requires
        return self._reserved if labelled else SUCCESS


PLUGIN = PluginEntry(
    name=NAME,
    factory=AnnotationNodeAffinity,
    args=AnnotationNodeAffinityArgs,
    # the pod annotation it reads: cluster-state pod records keep it (a standalone scheduler's pods)
    needs=lambda args, http_timeout: ClusterNeeds(pod_annotations=(args.annotation_key,)),
    summary="filter: pods with an annotation only on nodes with a label (and optionally only they)",
)

"""NodeResourcesBalancedAllocation: favour nodes whose resource use stays balanced.

Ports kube-scheduler's plugin (pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go):
for each of ``resources`` (default cpu and memory; weights are accepted but unused, as upstream)
the fraction ``(requested on the node + the pod's request) / allocatable``, capped at 1, from the
requests as they are (not the non-zero defaults); the score is ``(1 - std) * 100`` truncated,
std being the fractions' standard deviation. PreScore returns ``Skip`` for a pod that requests
none of the resources (a best-effort pod: kubernetes issue #129138). Needs cluster state.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.framework.handle import Handle
from app.framework.registry import PluginEntry
from app.framework.status import SKIP, SUCCESS, Status
from app.framework.types import NO_NODE, CycleState, NodeInfo, PodInfo
from app.plugins.noderesources.resource_allocation import (
    ResourcesArgs,
    balanced,
    balanced_nodes,
    node_vectors,
    pod_request_list,
)

NAME = "NodeResourcesBalancedAllocation"
_PRE_SCORE = f"{NAME}/pod-requests"


class NodeResourcesBalancedAllocationArgs(ResourcesArgs):
    """``NodeResourcesBalancedAllocationArgs``: ``resources`` (names unique, weights 1..100)."""


class NodeResourcesBalancedAllocation:
    """PreScore + Score (see the module doc)."""

    name = NAME

    def __init__(self, args: NodeResourcesBalancedAllocationArgs, handle: Handle) -> None:
        self.names = [r.name for r in args.resources]
        self.nodes_scorer = balanced_nodes(self.names)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """The pod's requests of the resources; ``Skip`` when they are all zero."""
        requests = pod_request_list(pod, self.names, use_requested=True)
        if not any(requests):
            return SKIP
        state.write(_PRE_SCORE, requests)
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """0..100 (PreScore has skipped best-effort pods). Raises ``LookupError`` for an unknown
        node object."""
        if node.node is None:
            raise LookupError(NO_NODE)
        requested, allocatable = node_vectors(node, self.names, state.read(_PRE_SCORE), use_requested=True)
        return balanced(requested, allocatable)

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """:meth:`score` for every node in one loop (two native resources), else node by node."""
        if self.nodes_scorer is None:
            return [self.score(state, pod, node) for node in nodes]
        return self.nodes_scorer(nodes, state.read(_PRE_SCORE))


PLUGIN = PluginEntry(
    name=NAME,
    factory=NodeResourcesBalancedAllocation,
    args=NodeResourcesBalancedAllocationArgs,
    needs_cluster=True,
    summary="score: kube-scheduler's NodeResourcesBalancedAllocation (balanced cpu/memory use) on the cluster state",
)

"""NodeResourcesBalancedAllocation: favour nodes whose resource use the pod makes more balanced.

Ports kube-scheduler v1.36.3's plugin (pkg/scheduler/framework/plugins/noderesources/
balanced_allocation.go): for each of ``resources`` (default cpu and memory; weights are accepted
but unused, as upstream) the fraction ``requested / allocatable``, capped at 1, from the requests
as they are (not the non-zero defaults; pod-level resources and an in-place resize counted as the
node accounts them); ``balancedResourceScore`` is ``(1 - std) * 100`` truncated, std being the
fractions' standard deviation, and the score is ``50 + (50 + with - without) / 2`` of that with
the pod and without it (:func:`~app.plugins.noderesources.resource_allocation.balanced`).
PreScore returns ``Skip`` for a pod that requests none of the resources (a BestEffort pod, kubernetes
issue #129138), and Score without PreScore gives such a pod 0. Score has one implementation over many
nodes (``score_nodes``); ``score`` is that for one node. Needs cluster state.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.framework import signers
from app.framework.handle import Handle
from app.framework.interfaces import SignFragment
from app.framework.registry import PluginEntry
from app.framework.status import SKIP, SUCCESS, Status
from app.framework.types import CycleState, NodeInfo, PodInfo
from app.plugins.noderesources.resource_allocation import (
    ResourcesArgs,
    balanced,
    is_best_effort,
    pod_request_list,
    score_nodes,
    vector_reader,
)

NAME = "NodeResourcesBalancedAllocation"
_PRE_SCORE = f"{NAME}/pod-requests"


class NodeResourcesBalancedAllocationArgs(ResourcesArgs):
    """``NodeResourcesBalancedAllocationArgs``: ``resources`` (names unique, weights 1..100)."""


class NodeResourcesBalancedAllocation:
    """PreScore + Score (see the module doc)."""

    name = NAME

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (balanced_allocation.go, v1.36.3): the pod's requests."""
        return [(signers.RESOURCES, signers.resources(pod))], SUCCESS

    def __init__(self, args: NodeResourcesBalancedAllocationArgs, handle: Handle) -> None:
        self.names = [r.name for r in args.resources]
        self.read = vector_reader(self.names, use_requested=True)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """The pod's requests of the resources (``balancedAllocationPreScoreState``); ``Skip`` for a
        pod that requests none of them."""
        requests = pod_request_list(pod, self.names, use_requested=True)
        if is_best_effort(requests):
            return SKIP
        state.write(_PRE_SCORE, requests)
        return SUCCESS

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]:
        """50..100 per node (0 for a pod requesting none of the resources when PreScore did not
        run: upstream's fallback computes the requests itself); ``Error`` naming a node whose
        object is unknown."""
        requests: list[int] | None = state.get(_PRE_SCORE)
        if requests is None:
            requests = pod_request_list(pod, self.names, use_requested=True)
            if is_best_effort(requests):
                return [0] * len(nodes), SUCCESS
        return score_nodes(nodes, requests, self.read, balanced)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        """:meth:`score_nodes` for one node."""
        scores, status = self.score_nodes(state, pod, (node,))
        return (scores[0] if scores else 0), status


PLUGIN = PluginEntry(
    name=NAME,
    factory=NodeResourcesBalancedAllocation,
    args=NodeResourcesBalancedAllocationArgs,
    needs_cluster=True,
    summary="score: kube-scheduler's NodeResourcesBalancedAllocation (balanced cpu/memory use) on the cluster state",
)

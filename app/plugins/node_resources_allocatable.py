"""NodeResourcesAllocatable: score nodes by their allocatable resources, from the node objects alone.

Mirrors the ``NodeResourcesAllocatable`` plugin of kubernetes-sigs/scheduler-plugins
(``pkg/noderesources/allocatable.go`` and ``resource_allocation.go``): a node's raw score is the
weighted mean of its allocatable amounts (cpu in millicores, memory and storage in bytes, others
as counts), negated in mode ``Least``, with Go's truncating integer division; NormalizeScore then
maps the lowest raw score to 0 and the highest to 100 (all equal -> 0). Defaults are upstream's:
mode ``Least``, weights cpu ``1<<20`` and memory ``1`` (one millicore weighs like one MiB).
It needs no cluster state, so prioritize is useful without one.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from typing import Literal

from pydantic import Field, field_validator

from app.framework.args import PluginArgs, ResourceSpec
from app.framework.handle import Handle
from app.framework.registry import PluginEntry
from app.framework.scores import MAX_NODE_SCORE
from app.framework.status import SUCCESS, Code, Status
from app.framework.types import CycleState, NodeInfo, NodeScore, PodInfo
from app.plugins.noderesources.resource_allocation import go_div

NAME = "NodeResourcesAllocatable"


class NodeResourcesAllocatableArgs(PluginArgs):
    """``mode``: ``Least`` favours nodes with the least allocatable, ``Most`` the most.
    ``resources``: the resources and weights; names must not repeat."""

    mode: Literal["Least", "Most"] = "Least"
    resources: list[ResourceSpec] = Field(
        default_factory=lambda: [
            ResourceSpec(name="cpu", weight=1 << 20),
            ResourceSpec(name="memory", weight=1),
        ],
        min_length=1,
    )

    @field_validator("resources")
    @classmethod
    def _unique(cls, resources: list[ResourceSpec]) -> list[ResourceSpec]:
        names = [r.name for r in resources]
        if len(set(names)) != len(names):
            raise ValueError("resource names must not repeat")
        return resources


_NO_NODE = Status.error("node object unavailable (NodeNames-only request without cluster state)")


class NodeResourcesAllocatable:
    """Score + NormalizeScore (see module doc). A node whose object is unknown (cache mode without
    cluster state) is an ``Error`` for the failure policy."""

    name = NAME

    def __init__(self, args: NodeResourcesAllocatableArgs, handle: Handle) -> None:
        self.sign = -1 if args.mode == "Least" else 1
        self.weights = [(r.name, r.weight) for r in args.resources]
        self.weight_sum = sum(w for _, w in self.weights)
        #: the last nodes scored and their raw scores; and the last raw scores normalized and
        #: their result (kube-scheduler sends the same candidates pod after pod; each pair is
        #: replaced whole, as requests may run on two threads)
        self._scored: tuple[Sequence[NodeInfo], list[int]] = ((), [])
        self._normalized: tuple[list[int], list[int]] = ([], [])

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]:
        """Each node's raw score: ``sum(sign * allocatable[r] * weight[r]) / sum(weight)`` (any
        integer), kept on the NodeInfo (it depends on allocatable only); ``Error`` naming the first
        node whose object is unknown (a NodeNames request without cluster state)."""
        raw = self._raw_score
        last_nodes, last_scores = self._scored
        if last_nodes and len(nodes) == len(last_nodes):
            # the candidates of the last call (kube-scheduler's next pod): only the NodeInfos that
            # are not the same objects (a node or its pods changed) are read, found in C
            scores = list(last_scores)
            for i in itertools.compress(range(len(nodes)), map(operator.is_not, nodes, last_nodes)):
                node = nodes[i]
                if node.node is None:
                    return [], Status(Code.ERROR, (f"node {node.name}: {_NO_NODE.message}",))
                scores[i] = node.memo(self, raw)
        else:
            scores = []
            append = scores.append
            for node in nodes:
                if node.node is None:
                    return [], Status(Code.ERROR, (f"node {node.name}: {_NO_NODE.message}",))
                append(node.memo(self, raw))
        self._scored = (nodes, list(scores))
        return scores, SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        """:meth:`score_nodes` of ``node`` alone."""
        scores, status = self.score_nodes(state, pod, (node,))
        return (scores[0] if scores else 0), status

    def _raw_score(self, node: NodeInfo) -> int:
        get = node.allocatable.get
        total = 0
        for name, weight in self.weights:
            total += get(name, 0) * weight
        return go_div(self.sign * total, self.weight_sum)

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: list[int]) -> Status:
        """Min-max to 0..100 in place: ``(s - lowest) * 100 / (highest - lowest)``; all equal -> 0."""
        if not scores:
            return SUCCESS
        last_raw, last_out = self._normalized
        if scores == last_raw:
            scores[:] = last_out
            return SUCCESS
        raw = list(scores)
        lowest = min(scores)
        spread = max(scores) - lowest
        if spread == 0:
            scores[:] = [0] * len(scores)
        else:
            scores[:] = [(s - lowest) * MAX_NODE_SCORE // spread for s in scores]
        self._normalized = (raw, list(scores))
        return SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        """:meth:`normalize_scores` of the NodeScores' scores."""
        values = [s.score for s in scores]
        status = self.normalize_scores(state, pod, values)
        for s, value in zip(scores, values, strict=True):
            s.score = value
        return status


PLUGIN = PluginEntry(
    name=NAME,
    factory=NodeResourcesAllocatable,
    args=NodeResourcesAllocatableArgs,
    summary="score: favour nodes with the least (or most) allocatable cpu/memory, from node objects",
)

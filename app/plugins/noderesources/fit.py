"""NodeResourcesFit: Filter nodes by the pod's requests, Score them by a strategy.

Ports kube-scheduler's ``NodeResourcesFit`` (pkg/scheduler/framework/plugins/noderesources/fit.go):

- **Filter** (``fitsRequest``, see :mod:`app.framework.fit`): room for one more pod, and each
  requested resource within ``allocatable - requested`` of the node, where the node's requests
  are the pods bound or assumed there by the cluster-state cache. A failing node gets upstream's
  reasons (``Insufficient cpu``, ``Too many pods``: kept verbatim so kube-scheduler's event
  aggregates them with its own plugin's) as ``Unschedulable``, or ``UnschedulableAndUnresolvable``
  when a request exceeds the node's whole allocatable (preemption cannot help).
- **Score** with ``scoringStrategy.type``: ``LeastAllocated`` (default), ``MostAllocated`` or
  ``RequestedToCapacityRatio`` (``shape`` points of utilization 0..100 -> score 0..10), over
  ``scoringStrategy.resources`` with weights 1..100 (default cpu and memory, weight 1). cpu and
  memory use non-zero requests (100m / 200 MiB for a container that requests none); an extended
  resource counts only when the pod requests it and the node offers it.
- **Reserve**: at bind the same fit is checked again, atomically with the reservation, so two
  pods filtered onto the last room of a node cannot both bind.

``ignoredResources``/``ignoredResourceGroups`` name extended resources (or their domains, the part
before ``/``) that Filter does not check. Needs cluster state: a node's pods come from the cache.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal

from pydantic import Field, field_validator, model_validator

from app.framework.args import PluginArgs
from app.framework.fit import insufficient
from app.framework.registry import Handle, PluginEntry
from app.framework.status import SUCCESS, Code, Status
from app.framework.types import CycleState, NodeInfo, PodInfo
from app.plugins.noderesources.resource_allocation import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    ResourcesArgs,
    Scorer,
    least_allocated,
    most_allocated,
    node_vectors,
    pod_request_list,
    requested_to_capacity_ratio,
)

NAME = "NodeResourcesFit"
_PRE_SCORE = f"{NAME}/pod-requests"
NO_NODE = "node object unavailable: the node is not in the extender's cluster state"


class UtilizationShapePoint(PluginArgs):
    """A point of the RequestedToCapacityRatio function: ``utilization`` 0..100 (percent),
    ``score`` 0..10 (``config.UtilizationShapePoint``)."""

    utilization: int = Field(ge=0, le=MAX_UTILIZATION)
    score: int = Field(ge=0, le=MAX_CUSTOM_PRIORITY_SCORE)


class RequestedToCapacityRatioParam(PluginArgs):
    """``shape``: at least one point, utilization strictly increasing."""

    shape: list[UtilizationShapePoint] = Field(min_length=1)

    @field_validator("shape")
    @classmethod
    def _increasing(cls, shape: list[UtilizationShapePoint]) -> list[UtilizationShapePoint]:
        for a, b in itertools.pairwise(shape):
            if b.utilization <= a.utilization:
                raise ValueError("utilization values must be sorted in increasing order")
        return shape


class ScoringStrategy(ResourcesArgs):
    """``config.ScoringStrategy``: the strategy, its ``resources`` (names unique, weights 1..100)
    and, for RequestedToCapacityRatio, its shape."""

    type: Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"] = "LeastAllocated"
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    @model_validator(mode="after")
    def _shape_given(self) -> ScoringStrategy:
        if self.type == "RequestedToCapacityRatio" and self.requested_to_capacity_ratio is None:
            raise ValueError("requestedToCapacityRatio.shape is required for type RequestedToCapacityRatio")
        return self


class NodeResourcesFitArgs(PluginArgs):
    """``NodeResourcesFitArgs`` (kube-scheduler's field names)."""

    ignored_resources: list[str] = Field(default_factory=list)
    ignored_resource_groups: list[str] = Field(default_factory=list)
    scoring_strategy: ScoringStrategy = Field(default_factory=ScoringStrategy)

    @field_validator("ignored_resource_groups")
    @classmethod
    def _no_slash(cls, groups: list[str]) -> list[str]:
        for group in groups:
            if "/" in group:
                raise ValueError(f"resource group name {group!r} can't contain '/'")
        return groups


class NodeResourcesFit:
    """Filter + PreScore + Score + Reserve (see the module doc)."""

    name = NAME

    def __init__(self, args: NodeResourcesFitArgs, handle: Handle) -> None:
        self.ignored = frozenset(args.ignored_resources)
        self.ignored_groups = frozenset(args.ignored_resource_groups)
        strategy = args.scoring_strategy
        self.names = [r.name for r in strategy.resources]
        weights = [r.weight for r in strategy.resources]
        self.scorer: Scorer
        if strategy.type == "LeastAllocated":
            self.scorer = least_allocated(weights)
        elif strategy.type == "MostAllocated":
            self.scorer = most_allocated(weights)
        else:
            assert strategy.requested_to_capacity_ratio is not None
            shape = [(p.utilization, p.score) for p in strategy.requested_to_capacity_ratio.shape]
            self.scorer = requested_to_capacity_ratio(weights, shape)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``Unschedulable`` (or ``UnschedulableAndUnresolvable``) with upstream's reasons when the
        pod does not fit; ``Error`` when the node object is unknown."""
        if node.node is None:
            return Status.error(NO_NODE)
        short = insufficient(node, pod.requests, self.ignored, self.ignored_groups)
        if not short:
            return SUCCESS
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if any(r.unresolvable for r in short) else Code.UNSCHEDULABLE
        return Status(code, tuple(r.reason for r in short))

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """Compute the pod's (non-zero) requests of the scored resources once."""
        state.write(_PRE_SCORE, pod_request_list(pod, self.names, use_requested=False))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """0..100 by the strategy. Raises ``LookupError`` for an unknown node object."""
        if node.node is None:
            raise LookupError(NO_NODE)
        requested, allocatable = node_vectors(node, self.names, state.read(_PRE_SCORE), use_requested=False)
        return self.scorer(requested, allocatable)

    def reserve(self, pod: PodInfo, node: NodeInfo) -> str | None:
        """At bind: the Filter's check against everything bound and assumed on the node."""
        if node.node is None:
            return NO_NODE
        short = insufficient(node, pod.requests, self.ignored, self.ignored_groups)
        return ", ".join(r.reason for r in short) or None


PLUGIN = PluginEntry(
    name=NAME,
    factory=NodeResourcesFit,
    args=NodeResourcesFitArgs,
    needs_cluster=True,
    summary="filter/score: kube-scheduler's NodeResourcesFit (fit, LeastAllocated/MostAllocated/"
    "RequestedToCapacityRatio) on the cluster state's pods; re-checked at bind",
)

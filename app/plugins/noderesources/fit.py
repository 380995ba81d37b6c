"""NodeResourcesFit: Filter nodes by the pod's requests, Score them by a strategy.

Ports kube-scheduler's ``NodeResourcesFit`` (pkg/scheduler/framework/plugins/noderesources/fit.go):

- **Filter** (``fitsRequest``, see :mod:`app.framework.fit`): room for one more pod, and each
  requested resource within ``allocatable - requested`` of the node, where the node's requests
  are the pods bound or assumed there by the cluster-state cache. A failing node gets upstream's
  reasons (``Insufficient cpu``, ``Too many pods``: kept verbatim so kube-scheduler's event
  aggregates them with its own plugin's) as ``Unschedulable``, as v1.30 does even when a request
  exceeds the node's whole allocatable (``UnschedulableAndUnresolvable`` for that case came with
  kubernetes/kubernetes#131345, v1.34): DefaultPreemption then tries such a node and finds no
  victims, and its message says so as v1.30's does.
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

import functools
import itertools
from collections.abc import Sequence
from typing import Literal

from pydantic import Field, field_validator, model_validator

from app.framework.args import PluginArgs
from app.framework.events import NODE, POD, ActionType, ClusterEvent
from app.framework.fit import NATIVE as _NATIVE
from app.framework.fit import insufficient, is_ignored
from app.framework.handle import ClusterNeeds, Handle
from app.framework.registry import PluginEntry
from app.framework.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from app.framework.status import SUCCESS, Code, Status
from app.framework.types import NO_NODE, CycleState, NodeInfo, PodInfo
from app.plugins.noderesources.resource_allocation import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    NodesScorer,
    ResourcesArgs,
    Scorer,
    least_allocated,
    least_allocated_nodes,
    most_allocated,
    most_allocated_nodes,
    node_vectors,
    pod_request_list,
    requested_to_capacity_ratio,
)

NAME = "NodeResourcesFit"
_PRE_SCORE = f"{NAME}/pod-requests"


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


#: the cluster events that may make a pod this plugin rejected schedulable
_EVENTS = (
    ClusterEvent(POD, ActionType.DELETE),
    ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE),
)


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
        self.nodes_scorer: NodesScorer | None = None
        if strategy.type == "LeastAllocated":
            self.scorer = least_allocated(weights)
            self.nodes_scorer = least_allocated_nodes(self.names, weights)
        elif strategy.type == "MostAllocated":
            self.scorer = most_allocated(weights)
            self.nodes_scorer = most_allocated_nodes(self.names, weights)
        else:
            assert strategy.requested_to_capacity_ratio is not None
            shape = [(p.utilization, p.score) for p in strategy.requested_to_capacity_ratio.shape]
            self.scorer = requested_to_capacity_ratio(weights, shape)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``Unschedulable`` with upstream's reasons when the pod does not fit; ``Error`` when the
        node object is unknown."""
        if node.node is None:
            return Status.error(NO_NODE)
        short = insufficient(node, pod.requests, self.ignored, self.ignored_groups)
        if not short:
            return SUCCESS
        return Status(
            Code.UNSCHEDULABLE, tuple(r.reason for r in short), reason_code=shortage_code([r.resource for r in short])
        )

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status]:
        """:meth:`filter` for every node in one loop over :class:`NodeResources` (computed once
        per node version), with one shared status per combination of shortages. A pod requesting
        an extended resource Filter checks goes through :meth:`filter` node by node."""
        requests = pod.requests
        if any(w and name not in _NATIVE and not self._ignored(name) for name, w in requests.items()):
            return [self.filter(state, pod, node) for node in nodes]
        cpu, memory, storage = requests.get(CPU, 0), requests.get(MEMORY, 0), requests.get(EPHEMERAL_STORAGE, 0)
        anything = any(requests.values())  # fitsRequest checks resources only for a pod requesting any
        out: list[Status] = []
        append = out.append
        for node in nodes:
            r = node.resources
            if r is None:
                append(_NO_NODE_STATUS)
                continue
            short = 1 if r.pod_count >= r.allowed_pod_number else 0
            if anything:
                if cpu and cpu > r.milli_cpu - r.requested_milli_cpu:
                    short |= 2
                if memory and memory > r.memory - r.requested_memory:
                    short |= 4
                if storage and storage > r.ephemeral_storage - r.requested_ephemeral_storage:
                    short |= 8
            append(_shortage_status(short) if short else SUCCESS)
        return out

    def _ignored(self, name: str) -> bool:
        return bool(self.ignored or self.ignored_groups) and is_ignored(name, self.ignored, self.ignored_groups)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """Compute the pod's (non-zero) requests of the scored resources once."""
        state.write(_PRE_SCORE, pod_request_list(pod, self.names, use_requested=False))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """0..100 by the strategy. Raises ``LookupError`` for an unknown node object."""
        if node.node is None:
            raise LookupError(NO_NODE)
        requested, allocatable = node_vectors(node, self.names, self._pod_requests(state, pod), use_requested=False)
        return self.scorer(requested, allocatable)

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """:meth:`score` for every node in one loop (two native resources, LeastAllocated or
        MostAllocated), else node by node."""
        if self.nodes_scorer is None:
            return [self.score(state, pod, node) for node in nodes]
        return self.nodes_scorer(nodes, self._pod_requests(state, pod))

    def _pod_requests(self, state: CycleState, pod: PodInfo) -> list[int]:
        """What :meth:`pre_score` wrote, or computed now when it did not run, as upstream's
        ``Fit.Score`` does when ``getPreScoreState`` fails (``calculatePodResourceRequestList``)."""
        requests: list[int] | None = state.get(_PRE_SCORE)
        if requests is None:
            requests = pod_request_list(pod, self.names, use_requested=False)
        return requests

    def reserve(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """Reserve, atomically with the pod's assumption: the Filter's check again, against
        everything bound and assumed on the node by then (two cycles racing for the last room
        never both pass). Not upstream's: kube-scheduler's serial cycle needs no such check."""
        if node.node is None:
            return _NO_NODE_STATUS
        short = insufficient(node, pod.requests, self.ignored, self.ignored_groups)
        return Status.unschedulable(", ".join(r.reason for r in short)) if short else SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Nothing to undo: the assumption is the framework's."""

    def events_to_register(self) -> Sequence[ClusterEvent]:
        """``EventsToRegister`` (v1.30, queueing hints off): Pod Delete, Node Add|Update."""
        return _EVENTS


_NO_NODE_STATUS = Status.error(NO_NODE)
#: shortage bits of :meth:`NodeResourcesFit.filter_nodes` and their reasons, in upstream's order
_SHORTAGES: tuple[tuple[int, str], ...] = (
    (1, "Too many pods"),
    (2, f"Insufficient {CPU}"),
    (4, f"Insufficient {MEMORY}"),
    (8, f"Insufficient {EPHEMERAL_STORAGE}"),
)


@functools.cache
def _shortage_status(short: int) -> Status:
    """The shared status for a combination of shortage bits (at most 2**4 of them)."""
    reasons = tuple(reason for bit, reason in _SHORTAGES if short & bit)
    resources = [resource for (bit, _), resource in zip(_SHORTAGES, _NATIVE_ORDER, strict=True) if short & bit]
    return Status(Code.UNSCHEDULABLE, reasons, reason_code=shortage_code(resources))


_NATIVE_ORDER = (PODS, CPU, MEMORY, EPHEMERAL_STORAGE)
_SHORTAGE_CODES = {
    PODS: "TooManyPods",
    CPU: "InsufficientCPU",
    MEMORY: "InsufficientMemory",
    EPHEMERAL_STORAGE: "InsufficientEphemeralStorage",
}


def shortage_code(resources: Sequence[str]) -> str:
    """The reason code of a fit failure: ``TooManyPods``, ``InsufficientCPU``,
    ``InsufficientMemory``, ``InsufficientEphemeralStorage``, ``InsufficientExtendedResource``,
    or ``InsufficientResources`` when several resources fall short."""
    if len(resources) != 1:
        return "InsufficientResources"
    return _SHORTAGE_CODES.get(resources[0], "InsufficientExtendedResource")


PLUGIN = PluginEntry(
    name=NAME,
    factory=NodeResourcesFit,
    args=NodeResourcesFitArgs,
    needs_cluster=True,
    needs=lambda args, http_timeout: ClusterNeeds(reserves_capacity=True),
    summary="filter/score: kube-scheduler's NodeResourcesFit (fit, LeastAllocated/MostAllocated/"
    "RequestedToCapacityRatio) on the cluster state's pods; re-checked at bind",
)

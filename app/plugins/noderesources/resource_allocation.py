"""The scoring core shared by NodeResourcesFit and NodeResourcesBalancedAllocation.

Mirrors v1.36.3's ``resourceAllocationScorer`` in
pkg/scheduler/framework/plugins/noderesources/resource_allocation.go and the scorers of
``least_allocated.go``, ``most_allocated.go``, ``requested_to_capacity_ratio.go``
(with ``helper.BuildBrokenLinearFunction`` of pkg/scheduler/framework/plugins/helper/shape_score.go)
and ``balanced_allocation.go``. A scorer reads three vectors per node, as upstream's
``scorer(requested, allocated, allocatable)``: what the node's pods request with the pod, without
it, and the node's allocatable. Units: cpu in millicores, memory and ephemeral-storage in bytes,
other resources as counts; scores on 0..100 (``MaxNodeScore``). Integer arithmetic truncates as
Go's int64 division does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from operator import attrgetter

from pydantic import Field, field_validator

from app.framework.args import PluginArgs, ResourceSpec, bounded_weights
from app.framework.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, is_scalar_resource_name
from app.framework.scores import MAX_NODE_SCORE
from app.framework.status import SUCCESS, Status
from app.framework.types import NO_NODE, NodeInfo, PodInfo

#: ``config.MaxCustomPriorityScore``: the top of a RequestedToCapacityRatio shape's score.
MAX_CUSTOM_PRIORITY_SCORE = 10
#: ``maxUtilization`` of requested_to_capacity_ratio.go.
MAX_UTILIZATION = 100


def default_resources() -> list[ResourceSpec]:
    """cpu and memory, weight 1 each (upstream's ``defaultResourceSpec``)."""
    return [ResourceSpec(name=CPU, weight=1), ResourceSpec(name=MEMORY, weight=1)]


def unique_names(resources: list[ResourceSpec]) -> list[ResourceSpec]:
    """Raise ``ValueError`` when a resource name repeats or a weight is outside 1..100 (upstream's
    validation refuses weights outside 1..``MaxNodeScore``)."""
    return bounded_weights(resources, MAX_NODE_SCORE)


class ResourcesArgs(PluginArgs):
    """Args naming the resources a scorer considers (``NodeResourcesBalancedAllocationArgs``)."""

    resources: list[ResourceSpec] = Field(default_factory=default_resources, min_length=1)

    _unique = field_validator("resources")(unique_names)


def pod_request_list(pod: PodInfo, names: Sequence[str], use_requested: bool) -> list[int]:
    """The pod's request of each resource in ``names`` (``calculatePodResourceRequestList``).
    BalancedAllocation (``use_requested``) reads the requests as the node accounts them (pod-level
    resources and an in-place resize included: its scorer is built with those features).
    NodeResourcesFit's scorer is built without them in v1.36.3 (``nodeResourceStrategyTypeMap``
    sets neither ``enablePodLevelResources`` nor ``enableInPlacePodVerticalScaling``), so its cpu
    and memory are the containers' with the scoring defaults (100m / 200 MiB per container that
    requests none: ``NonMissingContainerRequests``) and ``spec.resources`` is not read:
    :attr:`~app.framework.types.PodInfo.container_level_requests`."""
    requests = pod.requests
    if use_requested:
        return [requests.get(n, 0) for n in names]
    cpu, memory = pod.container_level_requests
    return [cpu if n == CPU else memory if n == MEMORY else requests.get(n, 0) for n in names]


def is_best_effort(requests: Sequence[int]) -> bool:
    """``isBestEffortPod``: the pod requests none of the scored resources."""
    return not any(requests)


#: ``(requested with the pod, allocated without it, allocatable)`` per resource -> 0..100
Scorer = Callable[[Sequence[int], Sequence[int], Sequence[int]], int]


def _least_resource(req: int, alloc: int) -> int:
    """One resource of ``leastResourceScorer``: ``(alloc - req) * 100 / alloc``, 0 beyond allocatable."""
    return 0 if req > alloc else (alloc - req) * MAX_NODE_SCORE // alloc


def _most_resource(req: int, alloc: int) -> int:
    """One resource of ``mostResourceScorer``: ``min(req, alloc) * 100 / alloc``."""
    return min(req, alloc) * MAX_NODE_SCORE // alloc


def _weighted_mean(weights: Sequence[int], resource_score: Callable[[int, int], int]) -> Scorer:
    """``sum(resource_score(req, alloc) * w) / sum(w)`` over the resources the node offers."""

    def score(requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
        total = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            total += resource_score(req, alloc) * weight
            weight_sum += weight
        return total // weight_sum if weight_sum else 0

    return score


def least_allocated(weights: Sequence[int]) -> Scorer:
    """``leastResourceScorer``: ``sum((alloc - req) * 100 / alloc * w) / sum(w)`` over resources
    the node offers; a resource requested beyond allocatable scores 0."""
    return _weighted_mean(weights, _least_resource)


def most_allocated(weights: Sequence[int]) -> Scorer:
    """``mostResourceScorer``: ``sum(min(req, alloc) * 100 / alloc * w) / sum(w)``."""
    return _weighted_mean(weights, _most_resource)


def broken_linear(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """``helper.BuildBrokenLinearFunction``: the piecewise-linear function through ``shape``'s
    ``(utilization, score)`` points, flat before the first and after the last (Go's truncating
    division between points)."""

    def f(p: int) -> int:
        for i, (x, y) in enumerate(shape):
            if p <= x:
                if i == 0:
                    return y
                x0, y0 = shape[i - 1]
                return y0 + go_div((y - y0) * (p - x0), x - x0)
        return shape[-1][1]

    return f


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's ``/`` on int64 (``b`` non-zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def requested_to_capacity_ratio(weights: Sequence[int], shape: Sequence[tuple[int, int]]) -> Scorer:
    """``buildRequestedToCapacityRatioScorerFunction``: each resource's utilization
    (``requested * 100 / allocatable``, 100 when over) mapped through the shape, whose scores
    (0..10) are scaled by 10 to 0..100; the weighted mean over resources scoring above 0, rounded
    half away from zero (``math.Round``)."""
    raw = broken_linear([(u, s * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in shape])

    def resource_score(req: int, alloc: int) -> int:
        if req >= alloc:
            return raw(MAX_UTILIZATION)
        return raw(req * MAX_UTILIZATION // alloc if req > 0 else 0)

    def score(requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
        total = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            value = resource_score(req, alloc)
            if value > 0:
                total += value * weight
                weight_sum += weight
        if weight_sum == 0:
            return 0
        return math.floor(total / weight_sum + 0.5)

    return score


def balanced(requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
    """``balancedResourceScorer`` (v1.36.3): how adding the pod changes the node's balance,
    ``50 + (50 + with - without) / 2`` where ``with`` and ``without`` are
    :func:`balanced_resource_score` of the node with the pod (``requested``) and without it
    (``allocated``), each in 50..100: about 75 for a pod that changes little, towards 100 for one
    that improves the balance, towards 50 for one that worsens it."""
    with_pod = balanced_resource_score(requested, allocatable)
    without_pod = balanced_resource_score(allocated, allocatable)
    return MAX_NODE_SCORE // 2 + go_div(MAX_NODE_SCORE // 2 + with_pod - without_pod, 2)


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``balancedResourceScore``: ``(1 - std) * 100`` truncated, where std is the standard
    deviation of the resources' requested fractions (each capped at 1, resources of allocatable 0
    left out); with two resources it is ``|f1 - f2| / 2``, with one or none it is 0."""
    fractions = [min(req / alloc, 1.0) for req, alloc in zip(requested, allocatable, strict=True) if alloc != 0]
    if len(fractions) == 2:
        return _balanced_pair(fractions[0], fractions[1])
    std = 0.0
    if len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def _balanced_pair(f1: float, f2: float) -> int:
    """``balancedResourceScore`` of two fractions: their standard deviation is ``|f1 - f2| / 2``."""
    return int((1 - abs((f1 - f2) / 2)) * MAX_NODE_SCORE)


def node_vectors(
    node: NodeInfo, names: Sequence[str], pod_requests: Sequence[int], use_requested: bool
) -> tuple[list[int], list[int], list[int]]:
    """``calculateNodeAllocatableRequest``: ``(requested, allocated, allocatable)`` per resource
    for a scorer, the node's pods' requests with the pod and without it; all 0 where the resource
    is not scored (a scalar resource the pod does not request, or one the node does not offer).
    The node's side of it is remembered on the NodeInfo (:meth:`NodeInfo.memo`: once per node
    version in cache mode)."""
    sides: tuple[tuple[int, int, bool], ...] = node.memo(
        (_NODE_SIDE, tuple(names), use_requested), lambda n: _node_side(n, names, use_requested)
    )
    requested = [0] * len(names)
    allocated = [0] * len(names)
    allocatable = [0] * len(names)
    for i, (alloc, used, scalar) in enumerate(sides):
        want = pod_requests[i]
        if alloc and (want or not scalar):
            allocatable[i], allocated[i], requested[i] = alloc, used, used + want
    return requested, allocated, allocatable


_NODE_SIDE = "noderesources/node-side"


def _node_side(node: NodeInfo, names: Sequence[str], use_requested: bool) -> tuple[tuple[int, int, bool], ...]:
    """Per resource, ``calculateResourceAllocatableRequest`` without the pod: the node's
    allocatable, what is requested on it (non-zero requests for cpu and memory unless
    ``use_requested``), and whether the resource is scalar (scored only when the pod requests it).
    ``(0, 0)`` for ``pods`` and for a resource the node does not offer."""
    allocatable, requested = node.allocatable, node.requested
    nz_cpu, nz_memory = node.non_zero_requested
    out = []
    for name in names:
        if name == PODS or name not in allocatable:
            alloc = used = 0
        elif name in (CPU, MEMORY) and not use_requested:
            alloc, used = allocatable[name], nz_cpu if name == CPU else nz_memory
        else:
            alloc, used = allocatable[name], requested.get(name, 0)
        out.append((alloc, used, is_scalar_resource_name(name)))
    return tuple(out)


# -- reading the vectors of many nodes ---------------------------------------------------------------
#
# A scheduling cycle may score thousands of nodes (``percentageOfNodesToScore: 100``); building
# each node's vectors through ``node_vectors`` costs more than the arithmetic. For the common
# case, two of cpu, memory and ephemeral-storage, :func:`vector_reader` reads them from each
# node's :class:`NodeResources` (computed once per node version) instead; either way the one
# scorer of the plugin turns the vectors into the score.

#: NodeResources attributes of a native resource: allocatable, requested, non-zero requested.
_COLUMNS = {
    CPU: ("milli_cpu", "requested_milli_cpu", "non_zero_milli_cpu"),
    MEMORY: ("memory", "requested_memory", "non_zero_memory"),
    EPHEMERAL_STORAGE: ("ephemeral_storage", "requested_ephemeral_storage", "requested_ephemeral_storage"),
}
#: ``(node, the pod's request per resource) -> (requested, allocated, allocatable)`` per
#: resource, as :func:`node_vectors`; raises ``LookupError`` for a node whose object is unknown.
VectorReader = Callable[[NodeInfo, Sequence[int]], tuple[Sequence[int], Sequence[int], Sequence[int]]]


def vector_reader(names: Sequence[str], use_requested: bool) -> VectorReader:
    """How a scorer reads a node's ``(requested, allocated, allocatable)`` vectors for ``names``:
    from its :class:`NodeResources` when ``names`` are two of cpu, memory and ephemeral-storage (a
    resource the node does not offer has allocatable 0, which every scorer skips, as
    :func:`node_vectors` zeroes it), else :func:`node_vectors`."""
    if len(names) == 2 and all(n in _COLUMNS for n in names):
        used = 1 if use_requested else 2
        first, second = _COLUMNS[names[0]], _COLUMNS[names[1]]
        read = attrgetter(first[0], first[used], second[0], second[used])

        def pair(node: NodeInfo, pod: Sequence[int]) -> tuple[Sequence[int], Sequence[int], Sequence[int]]:
            r = node.resources
            if r is None:
                raise LookupError(NO_NODE)
            a1, u1, a2, u2 = read(r)
            return (u1 + pod[0], u2 + pod[1]), (u1, u2), (a1, a2)

        return pair

    def generic(node: NodeInfo, pod: Sequence[int]) -> tuple[Sequence[int], Sequence[int], Sequence[int]]:
        if node.node is None:
            raise LookupError(NO_NODE)
        return node_vectors(node, names, pod, use_requested)

    return generic


def score_nodes(
    nodes: Sequence[NodeInfo], pod: Sequence[int], read: VectorReader, scorer: Scorer
) -> tuple[list[int], Status]:
    """``resourceAllocationScorer.score`` for each of ``nodes``: ``scorer`` over the vectors
    ``read`` gives; an ``ERROR`` naming a node whose object is unknown."""
    out: list[int] = []
    append = out.append
    for node in nodes:
        try:
            requested, allocated, allocatable = read(node, pod)
        except LookupError:
            return [], Status.error(f"node {node.name}: {NO_NODE}")
        append(scorer(requested, allocated, allocatable))
    return out, SUCCESS

"""NodeResourcesFit: Filter nodes by the pod's requests, Score them by a strategy.

Ports kube-scheduler v1.36.3's ``NodeResourcesFit`` (pkg/scheduler/framework/plugins/noderesources/
fit.go):

- **Filter** (``fitsRequest``, see :mod:`app.framework.fit`): room for one more pod, and each
  requested resource within ``allocatable - requested`` of the node, where the node's requests
  are the pods bound or assumed there by the cluster-state cache. A failing node gets upstream's
  reasons (``Insufficient cpu``, ``Too many pods``: kept verbatim so kube-scheduler's event
  aggregates them with its own plugin's) as ``Unschedulable``, or ``UnschedulableAndUnresolvable``
  when a request exceeds the node's whole allocatable (kubernetes/kubernetes#131345, v1.34:
  evicting pods could not make room, so DefaultPreemption does not try the node).
- **Score** with ``scoringStrategy.type``: ``LeastAllocated`` (default), ``MostAllocated`` or
  ``RequestedToCapacityRatio`` (``shape`` points of utilization 0..100 -> score 0..10), over
  ``scoringStrategy.resources`` with weights 1..100 (default cpu and memory, weight 1). cpu and
  memory use non-zero requests (100m / 200 MiB for a container that requests none) of the
  containers: v1.36.3's scorer does not read pod-level resources
  (:func:`~app.plugins.noderesources.resource_allocation.pod_request_list`); an extended
  resource counts only when the pod requests it and the node offers it.
- **Reserve**: at bind the same fit is checked again, atomically with the reservation, so two
  pods filtered onto the last room of a node cannot both bind.

Filter and Score each have one implementation over many nodes (``filter_nodes``, ``score_nodes``);
``filter`` and ``score`` are those for one node.

``ignoredResources``/``ignoredResourceGroups`` name extended resources (or their domains, the part
before ``/``) that Filter does not check. Needs cluster state: a node's pods come from the cache.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from typing import Literal

from pydantic import Field, field_validator, model_validator

from app.framework import objects, signers
from app.framework.args import PluginArgs
from app.framework.events import (
    NODE,
    POD,
    QUEUE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    objects_as,
)
from app.framework.events import SKIP as QUEUE_SKIP
from app.framework.fit import shortages
from app.framework.handle import ClusterNeeds, Handle
from app.framework.interfaces import SignFragment
from app.framework.registry import PluginEntry
from app.framework.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from app.framework.status import SUCCESS, Code, Status
from app.framework.types import NO_NODE, CycleState, NodeInfo, PodInfo
from app.plugins.noderesources.resource_allocation import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    ResourcesArgs,
    Scorer,
    least_allocated,
    most_allocated,
    pod_request_list,
    requested_to_capacity_ratio,
    score_nodes,
    vector_reader,
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


def is_schedulable_after_pod_event(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPodEvent`` (v1.36.3 fit.go, InPlacePodVerticalScaling on): a deleted
    pod that was on a node (or nominated to one) queues; an update queues when it is the pod's
    own scale-down, or a scale-down on a node of a resource the pod requests
    (``isSchedulableAfterPodScaleDown``)."""
    original, modified = objects_as(old, new, PodInfo)
    if modified is None:
        if original is None:
            raise TypeError("no pod")
        return QUEUE if original.node_name or original.nominated_node_name else QUEUE_SKIP
    if modified.uid == pod.uid:
        return QUEUE
    if not modified.node_name or original is None:
        return QUEUE_SKIP
    before, after = original.requests, modified.requests
    for name, value in pod.requests.items():
        if value and before.get(name, 0) > after.get(name, 0):
            return QUEUE
    return QUEUE_SKIP


def is_schedulable_after_node_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterNodeChange`` (v1.36.3 fit.go): ``Skip`` unless the pod fits the added
    or updated node empty (``isFit``); ``Queue`` for an added node, and for an updated one whose
    allocatable grew in a resource the pod requests or in pods (``haveAnyRequestedResourcesIncreased``)."""
    original, modified = objects_as(old, new, objects.Node)
    if modified is None:
        raise TypeError("no new node")
    requests = pod.requests
    short = shortages([NodeInfo(_node_name(modified), modified)], requests)[0]
    if short is None or short[0]:
        return QUEUE_SKIP
    if original is None:
        return QUEUE
    before = NodeInfo(_node_name(original), original).allocatable
    after = NodeInfo(_node_name(modified), modified).allocatable
    if after.get(PODS, 0) > before.get(PODS, 0):
        return QUEUE
    for name, value in requests.items():
        if value and name != PODS and after.get(name, 0) > before.get(name, 0):
            return QUEUE
    return QUEUE_SKIP


def _node_name(node: objects.Node) -> str:
    return (node.metadata.name if node.metadata is not None else None) or ""


#: the cluster events that may make a pod this plugin rejected schedulable (v1.36.3
#: ``EventsToRegister``: Pod Delete|UpdatePodScaleDown, Node Add|UpdateNodeAllocatable)
_EVENTS = (
    ClusterEventWithHint(
        ClusterEvent(POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN), is_schedulable_after_pod_event
    ),
    ClusterEventWithHint(
        ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE), is_schedulable_after_node_change
    ),
)


class NodeResourcesFit:
    """Filter + PreScore + Score + Reserve (see the module doc)."""

    name = NAME

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (fit.go, v1.36.3): the pod's requests (without DRA-backed extended
        resources here: the DRAExtendedResource case is DynamicResources')."""
        return [(signers.RESOURCES, signers.resources(pod))], SUCCESS

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
        self.read = vector_reader(self.names, use_requested=False)

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status]:
        """``Unschedulable`` with upstream's reasons for each node the pod does not fit,
        ``UnschedulableAndUnresolvable`` when a request exceeds the node's allocatable
        (:func:`~app.framework.fit.shortages`: one shared status per combination); ``Error`` for
        a node whose object is unknown."""
        found = shortages(nodes, pod.requests, self.ignored, self.ignored_groups)
        return [
            _NO_NODE_STATUS if short is None else _shortage_status(*short) if short[0] else SUCCESS for short in found
        ]

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """:meth:`filter_nodes` for one node."""
        return self.filter_nodes(state, pod, (node,))[0]

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """Compute the pod's (non-zero) requests of the scored resources once."""
        state.write(_PRE_SCORE, pod_request_list(pod, self.names, use_requested=False))
        return SUCCESS

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]:
        """0..100 per node by the strategy; ``Error`` naming a node whose object is unknown."""
        return score_nodes(nodes, self._pod_requests(state, pod), self.read, self.scorer)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        """:meth:`score_nodes` for one node."""
        scores, status = self.score_nodes(state, pod, (node,))
        return (scores[0] if scores else 0), status

    def _pod_requests(self, state: CycleState, pod: PodInfo) -> list[int]:
        """What :meth:`pre_score` wrote, or computed now when it did not run, as upstream's
        ``Fit.Score`` does when ``getPreScoreState`` fails (``calculatePodResourceRequestList``)."""
        requests: list[int] | None = state.get(_PRE_SCORE)
        if requests is None:
            requests = pod_request_list(pod, self.names, use_requested=False)
        return requests

    def reserve(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """Reserve, atomically with the pod's assumption: the Filter again, against everything
        bound and assumed on the node by then (two cycles racing for the last room never both
        pass). Not upstream's: kube-scheduler's serial cycle needs no such check."""
        return self.filter(state, pod, node)

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Nothing to undo: the assumption is the framework's."""

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister`` (v1.36.3): Pod Delete|UpdatePodScaleDown judged by
        :func:`is_schedulable_after_pod_event`, Node Add|UpdateNodeAllocatable by
        :func:`is_schedulable_after_node_change` (no DeviceClass: DRA extended resources are
        not implemented)."""
        return _EVENTS


_NO_NODE_STATUS = Status.error(NO_NODE)


@functools.cache
def _shortage_status(resources: tuple[str, ...], unresolvable: bool = False) -> Status:
    """The shared status of a combination of short resources, reasons in their order: ``Too many
    pods``, ``Insufficient <resource>``; ``UnschedulableAndUnresolvable`` when one request is
    beyond the node's allocatable, else ``Unschedulable``."""
    reasons = tuple("Too many pods" if r == PODS else f"Insufficient {r}" for r in resources)
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
    return Status(code, reasons, reason_code=shortage_code(resources))


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

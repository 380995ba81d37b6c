"""NodeResourcePool: a named, countable per-node pool (such as underlay IPs), never over-committed.

The case of IP-aware schedulers that cap the pods needing an underlay IP per node (10 in the
classic setup). For each node:

- **capacity** comes from a node annotation (``capacityAnnotation``) or label (``capacityLabel``),
  else ``defaultCapacity``; nodes carrying one of ``excludedNodeLabels`` (``key`` or
  ``key=value``; default the control-plane role) are not in the pool;
- **usage** is the number of slots taken by the pods bound or assumed on the node, counted by
  the cluster-state cache (the plugin declares its :class:`~app.framework.handle.PoolSpec`), so a
  pod counts from the moment it is reserved and is freed when it is deleted or finishes.

Which pods consume: a pod matching any of ``consumers`` (an annotation, a label - ``key`` or
``key=value`` - or one of ``schedulerNames``) takes one slot; with ``consumers.resource`` (an
extended resource such as ``ipam.example.com/ip``) a pod takes as many slots as it requests.

- **Filter**: a node outside the pool or with no capacity is ``UnschedulableAndUnresolvable``;
  a node whose free slots do not cover the pod is ``Unschedulable`` with
  ``pool <name> exhausted: <used>/<capacity> in use`` (evicting consumers frees slots).
- **Score**: the node's free slots, normalized so the freest node scores 100.
- **Reserve**: the check runs again atomically with the pod's assumption, so concurrent binds
  never take more slots than a node has. The pool's slots are the same whichever profile binds:
  every profile's Reserve runs this check (``cluster_wide_reserve``).
- **Preemption**: for a consuming preemptor, a candidate node is dropped unless evicting its
  victims frees enough slots.

Pods that do not consume are never rejected (PreFilter/PreScore ``Skip``). Needs cluster state.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field, model_validator

from app.framework import (
    MAX_NODE_SCORE,
    NO_NODE,
    SKIP,
    SUCCESS,
    ClusterNeeds,
    CycleState,
    Handle,
    NodeInfo,
    NodeScore,
    PluginArgs,
    PluginEntry,
    PodInfo,
    PoolSpec,
    PreFilterResult,
    Status,
    Victims,
)

NAME = "NodeResourcePool"
_SLOTS = f"{NAME}/slots"


class PoolConsumers(PluginArgs):
    """Which pods take slots: any match counts. ``annotation``/``label``: ``key`` (present) or
    ``key=value``; ``schedulerNames``: pods with one of these ``spec.schedulerName``;
    ``resource``: an extended resource, one slot per unit requested."""

    annotation: str | None = None
    label: str | None = None
    scheduler_names: list[str] = Field(default_factory=list)
    resource: str | None = None

    @model_validator(mode="after")
    def _something(self) -> PoolConsumers:
        if not (self.annotation or self.label or self.scheduler_names or self.resource):
            raise ValueError("name at least one of annotation, label, schedulerNames, resource")
        return self


class NodeResourcePoolArgs(PluginArgs):
    """See the module doc. ``pool`` names the pool in reasons and metrics; capacities are slot
    counts (non-negative integers)."""

    pool: str = Field(min_length=1, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    capacity_annotation: str | None = None
    capacity_label: str | None = None
    default_capacity: int = Field(default=10, ge=0)
    excluded_node_labels: list[str] = Field(default_factory=lambda: ["node-role.kubernetes.io/control-plane"])
    consumers: PoolConsumers


def _matcher(spec: str | None) -> tuple[str, str | None] | None:
    if not spec:
        return None
    key, eq, value = spec.partition("=")
    return key, (value if eq else None)


def _matches(found: object, want: str | None) -> bool:
    return found is not None and (want is None or found == want)


class Consumers:
    """How many slots a pod takes under ``args.consumers`` (0 when it is not a consumer): one
    function shared by the cache's count (:class:`PoolSpec`) and the plugin's checks."""

    def __init__(self, args: NodeResourcePoolArgs) -> None:
        consumers = args.consumers
        self.annotation = _matcher(consumers.annotation)
        self.label = _matcher(consumers.label)
        self.scheduler_names = frozenset(consumers.scheduler_names)
        self.resource = consumers.resource

    def __call__(self, pod: PodInfo) -> int:
        if self.resource is not None:
            wanted = pod.requests.get(self.resource, 0)
            if wanted:
                return wanted
        if self.annotation is not None and _matches(pod.annotations.get(self.annotation[0]), self.annotation[1]):
            return 1
        if self.label is not None and _matches(pod.labels.get(self.label[0]), self.label[1]):
            return 1
        return 1 if pod.scheduler_name in self.scheduler_names else 0


def needs(args: NodeResourcePoolArgs, http_timeout: float) -> ClusterNeeds:
    """The pool to count, the consumer annotation pod records must keep, and a Reserve check that
    holds for every profile."""
    consumers = Consumers(args)
    annotations = (consumers.annotation[0],) if consumers.annotation is not None else ()
    return ClusterNeeds(pools=(PoolSpec(args.pool, consumers),), pod_annotations=annotations, cluster_wide_reserve=True)


class NodeResourcePool:
    """PreFilter + Filter + PreScore + Score + NormalizeScore + Reserve + preemption (see the
    module doc)."""

    name = NAME

    def __init__(self, args: NodeResourcePoolArgs, handle: Handle) -> None:
        self.args = args
        self.pool = args.pool
        self.cluster = handle.require_cluster(NAME)
        #: how many slots a pod takes (0 when it is not a consumer)
        self.slots = Consumers(args)
        self._excluded = [m for m in map(_matcher, args.excluded_node_labels) if m is not None]

    def capacity(self, node: NodeInfo) -> int | str:
        """The node's capacity in slots, or the reason it has none (outside the pool, malformed)."""
        result: int | str = node.memo((NAME, self.pool), self._capacity)
        return result

    def _capacity(self, node: NodeInfo) -> int | str:
        if node.node is None:
            return NO_NODE
        labels = node.labels
        for key, value in self._excluded:
            if _matches(labels.get(key), value):
                return f"node is excluded from pool {self.pool} (label {key})"
        a = self.args
        raw, where = None, ""
        if a.capacity_annotation and a.capacity_annotation in node.annotations:
            raw, where = node.annotations[a.capacity_annotation], f"annotation {a.capacity_annotation}"
        elif a.capacity_label and a.capacity_label in labels:
            raw, where = labels[a.capacity_label], f"label {a.capacity_label}"
        if raw is None:
            return a.default_capacity
        try:
            count = int(raw)
        except ValueError:
            count = -1
        if count < 0:
            return f"pool {self.pool} capacity {where}={raw!r} is not a non-negative integer"
        return count

    def used(self, node: NodeInfo) -> int:
        """Slots taken on ``node`` by pods bound or assumed there."""
        return node.usage.pool_usage.get(self.pool, 0)

    def _refusal(self, node: NodeInfo, slots: int) -> Status | None:
        if node.node is None:
            return Status.error(NO_NODE)
        capacity = self.capacity(node)
        if isinstance(capacity, str):
            code = "NodeExcludedFromPool" if capacity.startswith("node is excluded") else "PoolCapacityInvalid"
            return Status.unresolvable(capacity, code=code)
        if capacity == 0:
            return Status.unresolvable(f"pool {self.pool} has no capacity on this node", code="PoolNoCapacity")
        used = self.used(node)
        if used + slots > capacity:
            return Status.unschedulable(f"pool {self.pool} exhausted: {used}/{capacity} in use", code="PoolExhausted")
        return None

    # -- Filter --------------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """``Skip`` for a pod that takes no slot."""
        slots = self.slots(pod)
        if not slots:
            return None, SKIP
        state.write(_SLOTS, slots)
        return None, SUCCESS

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status]:
        """Reject each node outside the pool or without enough free slots, in one loop; nodes
        with free slots (most of them) are passed after two lookups (the capacity is kept per node
        version). ``Error`` when PreFilter did not run."""
        slots: int | None = state.get(_SLOTS)
        if slots is None:
            return [Status.error(f'reading "{_SLOTS}" from cycleState: not found')] * len(nodes)
        key, capacity_of, pool = (NAME, self.pool), self._capacity, self.pool
        out: list[Status] = []
        append = out.append
        refusals: dict[tuple[int | str, int], Status] = {}  # one status per distinct refusal
        for node in nodes:
            capacity = node.memo(key, capacity_of)
            used = node.usage.pool_usage.get(pool, 0) if type(capacity) is int else 0
            if type(capacity) is int and capacity and used + slots <= capacity:
                append(SUCCESS)
                continue
            refusal = refusals.get((capacity, used))
            if refusal is None:
                refusal = refusals[capacity, used] = self._refusal(node, slots) or SUCCESS
            append(refusal)
        return out

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """:meth:`filter_nodes` for one node."""
        return self.filter_nodes(state, pod, (node,))[0]

    # -- Score ---------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """``Skip`` for a pod that takes no slot."""
        return self.pre_filter(state, pod, nodes)[1]

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]:
        """Free slots on each node (0 outside the pool), raw (see :meth:`normalize_score`), in
        one loop; ``Error`` naming a node whose object is unknown."""
        key, capacity_of, pool = (NAME, self.pool), self._capacity, self.pool
        out: list[int] = []
        append = out.append
        for node in nodes:
            capacity = node.memo(key, capacity_of)
            if type(capacity) is int:
                free = capacity - node.usage.pool_usage.get(pool, 0)
                append(free if free > 0 else 0)
            elif capacity == NO_NODE:
                return [], Status.error(f"node {node.name}: {NO_NODE}")
            else:
                append(0)
        return out, SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        """:meth:`score_nodes` for one node."""
        scores, status = self.score_nodes(state, pod, (node,))
        return (scores[0] if scores else 0), status

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        """``free * 100 / max(free)`` (kube-scheduler's ``DefaultNormalizeScore``); all 0 stay 0."""
        highest = max((s.score for s in scores), default=0)
        for s in scores:
            s.score = s.score * MAX_NODE_SCORE // highest if highest else 0
        return SUCCESS

    # -- Reserve -------------------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """Under the cache's lock, with the pod's assumption: refuse when the node's free slots no
        longer cover the pod."""
        slots = self.slots(pod)
        if not slots:
            return SUCCESS
        return self._refusal(node, slots) or SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Nothing to undo: the cache counts the slots of assumed pods, and forgets them with the
        assumption."""

    # -- preemption ----------------------------------------------------------------------------------

    def process_preemption(
        self, state: CycleState, pod: PodInfo, candidates: dict[str, Victims]
    ) -> tuple[dict[str, Victims], Status]:
        """For a consuming preemptor, keep only the candidates where evicting the victims frees
        enough slots (victims the cache cannot resolve free none)."""
        slots = self.slots(pod)
        if not slots:
            return candidates, SUCCESS
        snapshot = self.cluster.snapshot()
        kept: dict[str, Victims] = {}
        for name, victims in candidates.items():
            node = snapshot.get(name)
            if node is None:
                continue
            capacity = self.capacity(node)
            if isinstance(capacity, str):
                continue
            freed = sum(self.slots(v) for v in victims.pods)
            if self.used(node) - freed + slots <= capacity:
                kept[name] = victims
        return kept, SUCCESS


PLUGIN = PluginEntry(
    name=NAME,
    factory=NodeResourcePool,
    args=NodeResourcePoolArgs,
    needs_cluster=True,
    needs=needs,
    sees_every_pod=False,
    summary="filter/score/bind: a countable per-node pool (e.g. 10 underlay IPs), reserved atomically at bind",
)

"""PodTopologySpread's PreFilter, its extensions and Filter, for the ``DoNotSchedule`` constraints
(podtopologyspread/filtering.go).

- **PreFilter** (``calPreFilterState``): the pod's ``DoNotSchedule`` constraints (or the default
  ones, :class:`~app.plugins.podtopologyspread.common.SpreadConstraints`); for each, over every
  node of the cluster (``state.snapshot.list()``, else the nodes given) that has all the
  constraints' topology keys and passes the constraint's node inclusion policies
  (``nodeAffinityPolicy`` Honor by default: the pod's nodeSelector and required node affinity;
  ``nodeTaintsPolicy`` Ignore by default, Honor: no untolerated NoSchedule/NoExecute taint), the
  number of pods in the pod's namespace, not being deleted, matching the constraint's selector
  (``labelSelector`` plus the pod's values of ``matchLabelKeys``), per topology value. ``Skip``
  when the pod has no such constraint.
- **AddPod/RemovePod** (PreFilter extensions): a pod added to or removed from a node (the pods
  nominated to it, a preemption's dry run) changes its domain's count and the critical paths
  (``updateWithPod``).
- **Filter**: a node without one of the topology keys is ``UnschedulableAndUnresolvable``
  "node(s) didn't match pod topology spread constraints (missing required label)"; a node where
  ``matching pods in its domain + (1 if the pod matches its own selector) - global minimum >
  maxSkew`` is ``Unschedulable`` "node(s) didn't match pod topology spread constraints". The global
  minimum is the first of the constraint's two critical paths (``criticalPaths``), 0 when there
  are fewer domains than ``minDomains`` (1 when unset).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.framework.interfaces import PreFilterStateExtensions
from app.framework.status import SKIP, SUCCESS, Status
from app.framework.types import NO_NODE, CycleState, NodeInfo, PodInfo, PreFilterResult
from app.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    NAME,
    Constraint,
    Selector,
    SelectorError,
    SpreadConstraints,
    count_matching,
    match_node_inclusion_policies,
    required_node_affinity,
)

_PRE_FILTER = f"{NAME}/pre-filter"

#: ``ErrReasonConstraintsNotMatch`` (plugin.go)
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
#: ``ErrReasonNodeLabelNotMatch`` (plugin.go)
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

_MAX_INT32 = 2**31 - 1

_LABEL_MISSING = Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH, code="NodeLabelNotMatch")
_SKEWED = Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH, code="ConstraintsNotMatch")
_NO_NODE = Status.error(NO_NODE)


class CriticalPaths:
    """``criticalPaths``: the two domains of a hard constraint with the fewest matching pods
    (``values[i]`` with ``counts[i]``); ``counts[0]`` is the global minimum. As upstream, only two
    are tracked: after an update the minimum can be a domain's old count (upstream's
    approximation, kept as is)."""

    __slots__ = ("counts", "values")

    def __init__(self) -> None:
        self.values = ["", ""]
        self.counts = [_MAX_INT32, _MAX_INT32]

    def update(self, value: str, count: int) -> None:
        """``criticalPaths.update``: record ``value``'s new ``count``."""
        values, counts = self.values, self.counts
        i = 0 if value == values[0] else 1 if value == values[1] else -1
        if i >= 0:
            counts[i] = count
            if counts[0] > counts[1]:
                values.reverse()
                counts.reverse()
        elif count < counts[0]:
            values[1], counts[1] = values[0], counts[0]
            values[0], counts[0] = value, count
        elif count < counts[1]:
            values[1], counts[1] = value, count

    @property
    def minimum(self) -> int:
        """The tracked global minimum (``paths[0].MatchNum``)."""
        return self.counts[0]

    def clone(self) -> CriticalPaths:
        """A copy."""
        copy = CriticalPaths()
        copy.values, copy.counts = list(self.values), list(self.counts)
        return copy


class PreFilterState:
    """What Filter reads (``preFilterState``): the hard constraints and, per constraint, the
    matching pods per topology value of its key (``TpPairToMatchNum``), its critical paths
    (``TpKeyToCriticalPaths``: the global minimum) and its number of domains
    (``TpKeyToDomainsNum``). :meth:`update_with_pod` keeps it true when a pod is added to or
    removed from a node (the PreFilter extensions); :meth:`clone` copies what that changes."""

    __slots__ = ("affinity", "constraints", "counts", "domains", "matchers", "namespace", "paths", "tolerations")

    def __init__(
        self,
        pod: PodInfo,
        constraints: Sequence[Constraint],
        counts: list[dict[str, int]],
    ) -> None:
        self.constraints = tuple(constraints)
        self.counts = counts
        self.domains = tuple(len(c) for c in counts)
        self.paths = []
        for domain_counts in counts:
            paths = CriticalPaths()
            for value, count in domain_counts.items():
                paths.update(value, count)
            self.paths.append(paths)
        self.matchers = tuple(c.selector.matcher() for c in constraints)
        self.namespace = pod.namespace
        self.affinity = required_node_affinity(pod)
        self.tolerations = pod.tolerations

    def min_match(self, i: int) -> int:
        """``minMatchNum`` of constraint ``i``: its tracked global minimum, 0 when it has fewer
        domains than ``minDomains``."""
        if self.domains[i] < self.constraints[i].min_domains:
            return 0
        return self.paths[i].minimum

    def clone(self) -> PreFilterState:
        """A copy whose counts and critical paths can change on their own."""
        copy = PreFilterState.__new__(PreFilterState)
        copy.constraints, copy.domains, copy.matchers = self.constraints, self.domains, self.matchers
        copy.namespace, copy.affinity, copy.tolerations = self.namespace, self.affinity, self.tolerations
        copy.counts = [dict(c) for c in self.counts]
        copy.paths = [p.clone() for p in self.paths]
        return copy

    def update_with_pod(self, other: PodInfo, node: NodeInfo, delta: int) -> None:
        """``updateWithPod``: count (``delta`` 1) or uncount (-1) ``other`` on ``node`` for each
        constraint whose selector matches it and whose inclusion policies the node passes, when
        ``other`` is in the incoming pod's namespace and the node has every topology key."""
        if other.namespace != self.namespace or node.node is None:
            return
        labels = node.labels
        if not all(c.topology_key in labels for c in self.constraints):
            return
        memo: list[bool | None] = [None, None]
        for i, c in enumerate(self.constraints):
            if not self.matchers[i](other.labels):
                continue
            if not match_node_inclusion_policies(c, node, labels, self.affinity, self.tolerations, memo):
                continue
            value = labels[c.topology_key]
            count = self.counts[i].get(value, 0) + delta
            self.counts[i][value] = count
            self.paths[i].update(value, count)


class Filtering(SpreadConstraints, PreFilterStateExtensions):
    """PodTopologySpread's PreFilter (with its extensions ``AddPod``/``RemovePod``, from
    :class:`PreFilterStateExtensions` over :class:`PreFilterState`) and Filter; see the module
    doc."""

    pre_filter_key = _PRE_FILTER

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Count the matching pods per topology domain of each ``DoNotSchedule`` constraint over
        every node of the cluster; ``Skip`` without such constraints."""
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError as exc:
            return None, Status.error(f"obtaining pod's hard topology spread constraints: {exc}")
        if not constraints:
            return None, SKIP
        snapshot = state.snapshot
        all_nodes = snapshot.list() if snapshot is not None else nodes
        state.write(_PRE_FILTER, PreFilterState(pod, constraints, _count_domains(pod, constraints, all_nodes)))
        return None, SUCCESS

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status]:
        """For each node: ``SUCCESS``; ``UnschedulableAndUnresolvable`` when it lacks a topology
        label; ``Unschedulable`` when ``matching pods in its domain + selfMatch - global minimum
        > maxSkew``; ``Error`` for an unknown node object, and when PreFilter did not run."""
        s: PreFilterState | None = state.get(_PRE_FILTER)
        if s is None:
            return [Status.error(f'reading "{_PRE_FILTER}" from cycleState: not found')] * len(nodes)
        pod_labels = pod.labels
        # a node passes a constraint when counts.get(value, 0) <= maxSkew + minimum - selfMatch
        checks = [
            (c.topology_key, c.max_skew + s.min_match(i) - (1 if s.matchers[i](pod_labels) else 0), s.counts[i])
            for i, c in enumerate(s.constraints)
        ]
        out: list[Status] = []
        append = out.append
        for node in nodes:
            if node.node is None:
                append(_NO_NODE)
                continue
            labels = node.labels
            verdict = SUCCESS
            for key, limit, counts in checks:
                value = labels.get(key)
                if value is None:
                    verdict = _LABEL_MISSING
                    break
                if counts.get(value, 0) > limit:
                    verdict = _SKEWED
                    break
            append(verdict)
        return out

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """:meth:`filter_nodes` for one node."""
        return self.filter_nodes(state, pod, (node,))[0]


def _count_domains(pod: PodInfo, constraints: Sequence[Constraint], nodes: Sequence[NodeInfo]) -> list[dict[str, int]]:
    """The PreFilter pass (``calPreFilterState``): per constraint, matching pods per topology
    value over ``nodes`` that have every topology key and pass the constraint's inclusion
    policies. One pass over the nodes; a selector shared by several constraints is counted once
    per node."""
    keys = [c.topology_key for c in constraints]
    counts: list[dict[str, int]] = [{} for _ in constraints]
    selectors: list[Selector] = []
    slot: list[int] = []
    for c in constraints:
        if c.selector in selectors:
            slot.append(selectors.index(c.selector))
        else:
            slot.append(len(selectors))
            selectors.append(c.selector)
    matchers = [s.matcher() for s in selectors]
    affinity = required_node_affinity(pod)
    namespace = pod.namespace
    tolerations = pod.tolerations
    indexed = list(enumerate(constraints))
    for node in nodes:
        if node.node is None:
            continue  # upstream: "Node not found", skipped
        labels = node.labels
        if not all(k in labels for k in keys):
            continue
        memo: list[bool | None] = [None, None]
        per_selector: list[int | None] = [None] * len(selectors)
        for i, c in indexed:
            if not match_node_inclusion_policies(c, node, labels, affinity, tolerations, memo):
                continue
            j = slot[i]
            count = per_selector[j]
            if count is None:
                count = per_selector[j] = count_matching(node.pods, selectors[j], matchers[j], namespace)
            domain_counts = counts[i]
            value = labels[c.topology_key]
            domain_counts[value] = domain_counts.get(value, 0) + count
    return counts


__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "CriticalPaths",
    "Filtering",
    "PreFilterState",
]

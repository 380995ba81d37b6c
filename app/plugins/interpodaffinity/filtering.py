"""InterPodAffinity's PreFilter, its extensions and Filter (interpodaffinity/filtering.go).

**PreFilter** looks at every node of the cluster (``state.snapshot.list()``, else the candidate
nodes) and counts, per topology pair ``(topologyKey, node's value of it)``:

- ``existingAntiAffinityCounts``: the required anti-affinity terms of the pods already placed
  (only ``NodeInfo.pods_with_required_anti_affinity`` is read) that match the incoming pod;
- ``affinityCounts``: the existing pods matching *all* of the incoming pod's required affinity
  terms, once per term whose topology key the pod's node has;
- ``antiAffinityCounts``: the existing pods matching each of the incoming pod's required
  anti-affinity terms (every pod is read, only when the incoming pod has required terms).

It returns ``Skip`` when the pod has no required term and no existing pod's anti-affinity
matches it, and ``UnschedulableAndUnresolvable`` ``parsing pod: ...`` when one of the pod's label
selectors is invalid (``metav1.LabelSelectorAsSelector``'s error, byte for byte).
**AddPod/RemovePod** (PreFilter extensions) update those counts as if a pod were added to or
removed from a node: the pods nominated to a node, a preemption's dry run.

**Filter**, per node, in upstream's order (a few dict lookups):

1. the pod's required affinity: the node must have every term's topology key, and a matching pod
   must exist in the node's domain of each term; unless no pod matches at all (``affinityCounts``
   is empty) and the pod matches its own terms (the first pod of a group) -> ``UnschedulableAndUnresolvable``
   "node(s) didn't match pod affinity rules";
2. the pod's required anti-affinity -> ``Unschedulable`` "node(s) didn't match pod anti-affinity
   rules";
3. the existing pods' required anti-affinity -> ``Unschedulable`` "node(s) didn't satisfy
   existing pods anti-affinity rules".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.framework.interfaces import PreFilterStateExtensions
from app.framework.status import SKIP, SUCCESS, Code, Status
from app.framework.types import CycleState, NodeInfo, PodInfo, PreFilterResult
from app.plugins.interpodaffinity.common import (
    NAME,
    NO_NODE_STATUS,
    IncomingTerm,
    cluster_nodes,
    existing_term_matches,
    namespace_lookup,
    pod_parse_error,
    required_terms,
)

_PRE_FILTER = f"{NAME}/pre-filter"

#: ``ErrReasonExistingAntiAffinityRulesNotMatch`` (filtering.go)
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
#: ``ErrReasonAffinityRulesNotMatch``
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
#: ``ErrReasonAntiAffinityRulesNotMatch``
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

_AFFINITY_FAIL = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_AFFINITY_RULES_NOT_MATCH,), reason_code="PodAffinityRulesNotMatch"
)
_ANTI_AFFINITY_FAIL = Status(
    Code.UNSCHEDULABLE, (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,), reason_code="PodAntiAffinityRulesNotMatch"
)
_EXISTING_ANTI_AFFINITY_FAIL = Status(
    Code.UNSCHEDULABLE,
    (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,),
    reason_code="ExistingPodsAntiAffinityRulesNotMatch",
)


def _all_match(terms: Sequence[IncomingTerm], pod: PodInfo) -> bool:
    """``podMatchesAllAffinityTerms``: false for no terms."""
    if not terms:
        return False
    return all(t.matches(pod) for t in terms)


Pair = tuple[str, str]


def _update(counts: dict[Pair, int], labels: Mapping[str, str], key: str, value: int) -> None:
    """``topologyToMatchedTermCount.update``: add ``value`` to the node's pair of ``key`` (when
    the node has the label), dropping a count that reaches 0."""
    found = labels.get(key)
    if found is None:
        return
    pair = (key, found)
    total = counts.get(pair, 0) + value
    if total:
        counts[pair] = total
    else:
        counts.pop(pair, None)


class PreFilterState:
    """What Filter reads (``preFilterState``): the three counts by ``(topologyKey, value)``, the
    incoming pod's required terms, its namespace's labels and whether it matches all its own
    affinity terms. :meth:`update_with_pod` keeps the counts true when a pod is added to or
    removed from a node (the PreFilter extensions); :meth:`clone` copies the counts."""

    __slots__ = (
        "affinity_counts",
        "affinity_terms",
        "anti_affinity_counts",
        "anti_terms",
        "existing_anti_affinity_counts",
        "ns_labels",
        "pod",
        "self_match",
    )

    def __init__(
        self,
        pod: PodInfo,
        affinity_terms: Sequence[IncomingTerm],
        anti_terms: Sequence[IncomingTerm],
        ns_labels: Mapping[str, str],
        existing_anti_affinity_counts: dict[Pair, int],
        affinity_counts: dict[Pair, int],
        anti_affinity_counts: dict[Pair, int],
    ) -> None:
        self.pod = pod
        self.affinity_terms = tuple(affinity_terms)
        self.anti_terms = tuple(anti_terms)
        self.ns_labels = ns_labels
        self.existing_anti_affinity_counts = existing_anti_affinity_counts
        self.affinity_counts = affinity_counts
        self.anti_affinity_counts = anti_affinity_counts
        #: ``podMatchesAllAffinityTerms(RequiredAffinityTerms, pod)``: the pod may be the first
        #: of a group with affinity to itself
        self.self_match = _all_match(self.affinity_terms, pod)

    def clone(self) -> PreFilterState:
        """A copy whose counts can change on their own (``preFilterState.Clone``)."""
        copy = PreFilterState.__new__(PreFilterState)
        copy.pod, copy.ns_labels, copy.self_match = self.pod, self.ns_labels, self.self_match
        copy.affinity_terms, copy.anti_terms = self.affinity_terms, self.anti_terms
        copy.existing_anti_affinity_counts = dict(self.existing_anti_affinity_counts)
        copy.affinity_counts = dict(self.affinity_counts)
        copy.anti_affinity_counts = dict(self.anti_affinity_counts)
        return copy

    def update_with_pod(self, other: PodInfo, node: NodeInfo, multiplier: int) -> None:
        """``updateWithPod``: count (``multiplier`` 1) or uncount (-1) ``other`` on ``node``:
        its required anti-affinity terms that match the incoming pod, the incoming pod's
        affinity terms when ``other`` matches them all, and each of its anti-affinity terms
        ``other`` matches. Nothing for a node without its object."""
        if node.node is None:
            return
        labels = node.labels
        aff = other.affinity
        if aff is not None:
            for term in required_terms(aff.pod_anti_affinity):
                if existing_term_matches(term, other.namespace, self.pod, self.ns_labels):
                    _update(self.existing_anti_affinity_counts, labels, term.topology_key or "", multiplier)
        if _all_match(self.affinity_terms, other):
            for t in self.affinity_terms:
                _update(self.affinity_counts, labels, t.topology_key, multiplier)
        for t in self.anti_terms:
            if t.matches(other):
                _update(self.anti_affinity_counts, labels, t.topology_key, multiplier)


def _verdict(s: PreFilterState, labels: Mapping[str, str]) -> Status:
    """``Filter``: satisfyPodAffinity, satisfyPodAntiAffinity, satisfyExistingPodsAntiAffinity."""
    if s.affinity_terms:
        counts = s.affinity_counts
        pods_exist = True
        for t in s.affinity_terms:
            value = labels.get(t.topology_key)
            if value is None:
                return _AFFINITY_FAIL  # all topology labels must exist on the node
            if counts.get((t.topology_key, value), 0) <= 0:
                pods_exist = False
        # the first pod of a group with affinity to itself: no other pod matches, it does
        if not pods_exist and not (not counts and s.self_match):
            return _AFFINITY_FAIL
    anti = s.anti_affinity_counts
    if anti:
        for t in s.anti_terms:
            value = labels.get(t.topology_key)
            if value is not None and anti.get((t.topology_key, value), 0) > 0:
                return _ANTI_AFFINITY_FAIL
    existing = s.existing_anti_affinity_counts
    if existing:
        for pair in labels.items():
            if existing.get(pair, 0) > 0:
                return _EXISTING_ANTI_AFFINITY_FAIL
    return SUCCESS


class Filtering(PreFilterStateExtensions):
    """InterPodAffinity's PreFilter (with its extensions ``AddPod``/``RemovePod``, from
    :class:`PreFilterStateExtensions` over :class:`PreFilterState`) and Filter; see the module
    doc."""

    pre_filter_key = _PRE_FILTER

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Count the topology pairs over every node of the cluster; ``Skip`` when nothing applies."""
        error = pod_parse_error(pod)
        if error is not None:
            return None, Status.unresolvable(f"parsing pod: {error}")
        aff = pod.affinity
        lookup = namespace_lookup(state)
        affinity_terms = [IncomingTerm(t, pod, lookup) for t in required_terms(aff.pod_affinity)] if aff else []
        anti_terms = [IncomingTerm(t, pod, lookup) for t in required_terms(aff.pod_anti_affinity)] if aff else []
        all_nodes = cluster_nodes(state, nodes)
        ns_labels = lookup(pod.namespace) or {}

        existing = self._existing_anti_affinity_counts(pod, ns_labels, all_nodes)
        affinity_counts: dict[Pair, int] = {}
        anti_counts: dict[Pair, int] = {}
        if affinity_terms or anti_terms:
            self._incoming_counts(affinity_terms, anti_terms, all_nodes, affinity_counts, anti_counts)
        if not existing and not affinity_terms and not anti_terms:
            return None, SKIP
        state.write(
            _PRE_FILTER,
            PreFilterState(pod, affinity_terms, anti_terms, ns_labels, existing, affinity_counts, anti_counts),
        )
        return None, SUCCESS

    @staticmethod
    def _existing_anti_affinity_counts(
        pod: PodInfo, ns_labels: Mapping[str, str], all_nodes: Sequence[NodeInfo]
    ) -> dict[Pair, int]:
        """``getExistingAntiAffinityCounts``: only the pods with required anti-affinity are read."""
        counts: dict[Pair, int] = {}
        for node in all_nodes:
            holders = node.pods_with_required_anti_affinity
            if not holders or node.node is None:
                continue
            labels = node.labels
            for existing in holders:
                anti = existing.affinity.pod_anti_affinity if existing.affinity is not None else None
                for term in required_terms(anti):
                    key = term.topology_key or ""
                    value = labels.get(key)
                    if value is not None and existing_term_matches(term, existing.namespace, pod, ns_labels):
                        pair = (key, value)
                        counts[pair] = counts.get(pair, 0) + 1
        return counts

    @staticmethod
    def _incoming_counts(
        affinity_terms: list[IncomingTerm],
        anti_terms: list[IncomingTerm],
        all_nodes: Sequence[NodeInfo],
        affinity_counts: dict[Pair, int],
        anti_counts: dict[Pair, int],
    ) -> None:
        """``getIncomingAffinityAntiAffinityCounts``: every pod of every node that has one of the
        terms' topology keys (a node without any cannot add to a count)."""
        for node in all_nodes:
            if node.node is None:
                continue
            labels = node.labels
            affinity_pairs = [
                (t.topology_key, labels[t.topology_key]) for t in affinity_terms if t.topology_key in labels
            ]
            anti_pairs = [(t, (t.topology_key, labels[t.topology_key])) for t in anti_terms if t.topology_key in labels]
            if not affinity_pairs and not anti_pairs:
                continue
            for existing in node.pods:
                if affinity_pairs and _all_match(affinity_terms, existing):
                    for pair in affinity_pairs:
                        affinity_counts[pair] = affinity_counts.get(pair, 0) + 1
                for term, pair in anti_pairs:
                    if term.matches(existing):
                        anti_counts[pair] = anti_counts.get(pair, 0) + 1

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """The node's verdict from PreFilter's counts; ``Error`` for an unknown node object and
        when PreFilter did not run."""
        s: PreFilterState | None = state.get(_PRE_FILTER)
        if s is None:
            return Status.error(f'reading "{_PRE_FILTER}" from cycleState: not found')
        if node.node is None:
            return NO_NODE_STATUS
        return _verdict(s, node.labels)


__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "Filtering",
    "Pair",
    "PreFilterState",
]

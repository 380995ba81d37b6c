"""InterPodAffinity: required and preferred pod affinity and anti-affinity, as kube-scheduler v1.30.

Ports kube-scheduler's plugin (pkg/scheduler/framework/plugins/interpodaffinity: ``plugin.go``,
``filtering.go``, ``scoring.go``; the affinity terms of ``pkg/scheduler/framework/types.go``
``AffinityTerm``/``NewPodInfo``; the args and their validation of pkg/scheduler/apis/config
``InterPodAffinityArgs``, ``v1/defaults.go``, ``validation/validation_pluginargs.go``).

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

**PreScore/Score/NormalizeScore**: per topology pair, the sum of the incoming pod's preferred
affinity weights (minus its preferred anti-affinity weights) over the existing pods matching
them, plus, for every existing pod whose terms match the incoming pod, ``hardPodAffinityWeight``
per required affinity term, its preferred affinity weights, minus its preferred anti-affinity
weights. A node scores the sum over its labels; NormalizeScore maps min..max to 0..100
(``int(100 * (s - min) / (max - min))``, all 0 when equal). PreScore returns ``Skip`` when nothing
matched, and, with ``ignorePreferredTermsOfExistingPods``, for a pod without preferred terms.

Namespaces of a term (``AffinityTerm.Matches``): the term's ``namespaces``, plus those its
``namespaceSelector`` selects; the owner pod's namespace when both are empty/unset. For the
incoming pod's terms the selector is resolved against the known namespaces
(``mergeAffinityTermNamespacesIfNotEmpty``: ``state.snapshot.namespace_labels``; an unknown
namespace is not selected), an empty selector ``{}`` selects every namespace. For existing pods'
terms the selector is matched against the incoming pod's namespace labels, an empty set when the
namespace is unknown (``GetNamespaceLabelsSnapshot``). The cluster state watches the namespaces'
labels for this plugin (``ClusterNeeds.namespaces``). Label selectors follow
``metav1.LabelSelectorAsSelector`` (:func:`app.framework.labels.label_selector_matches`: ``None``
selects nothing, ``{}`` everything). ``matchLabelKeys``/``mismatchLabelKeys`` of terms are alpha
in v1.30 (``MatchLabelKeysInPodAffinity``, off by default) and ignored. Needs cluster state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pydantic import Field, field_validator

from app.framework import objects
from app.framework.args import PluginArgs
from app.framework.events import NODE, POD, ActionType, ClusterEvent
from app.framework.handle import ClusterNeeds, Handle
from app.framework.interfaces import PreFilterStateExtensions
from app.framework.labels import label_selector_matches
from app.framework.registry import PluginEntry
from app.framework.scores import MAX_NODE_SCORE
from app.framework.status import SKIP, SUCCESS, Code, Status
from app.framework.types import NO_NODE, CycleState, NodeInfo, NodeScore, PodInfo, PreFilterResult
from app.framework.validation import aggregate, selector_error

NAME = "InterPodAffinity"
_PRE_FILTER = f"{NAME}/pre-filter"
_PRE_SCORE = f"{NAME}/pre-score"

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
_NO_NODE_STATUS = Status.error(NO_NODE)

#: the bounds of ``hardPodAffinityWeight`` (validation_pluginargs.go ``validateHardPodAffinityWeight``)
MIN_HARD_POD_AFFINITY_WEIGHT, MAX_HARD_POD_AFFINITY_WEIGHT = 0, 100


class InterPodAffinityArgs(PluginArgs):
    """``InterPodAffinityArgs``: ``hardPodAffinityWeight`` (the score an existing pod's required
    affinity term matching the incoming pod adds, 0..100, default 1) and
    ``ignorePreferredTermsOfExistingPods`` (default ``false``: when ``true``, PreScore skips a pod
    that has no preferred term of its own)."""

    hard_pod_affinity_weight: int = Field(default=1, strict=True)
    ignore_preferred_terms_of_existing_pods: bool = False

    @field_validator("hard_pod_affinity_weight")
    @classmethod
    def _in_range(cls, weight: int) -> int:
        if not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
            raise ValueError(f"not in valid range [{MIN_HARD_POD_AFFINITY_WEIGHT}-{MAX_HARD_POD_AFFINITY_WEIGHT}]")
        return weight


# -- parse errors (framework.NewPodInfo: metav1.LabelSelectorAsSelector of each term) -------------


def _terms_error(terms: Sequence[objects.PodAffinityTerm | None]) -> str | None:
    """``getAffinityTerms``: the first term whose labelSelector, then namespaceSelector, fails."""
    for term in terms:
        if term is None:
            continue
        err = selector_error(term.label_selector) or selector_error(term.namespace_selector)
        if err is not None:
            return err
    return None


def pod_parse_error(pod: PodInfo) -> str | None:
    """``framework.NewPodInfo``'s error for ``pod``'s affinity terms (``None`` when all parse)."""
    aff = pod.affinity
    if aff is None:
        return None
    pa, anti = aff.pod_affinity, aff.pod_anti_affinity
    errors: list[str] = []
    for label, terms in (
        ("requiredAffinityTerms", _required(pa)),
        ("requiredAntiAffinityTerms", _required(anti)),
        ("preferredAffinityTerms", [w.pod_affinity_term for w in _preferred(pa)]),
        ("preferredAntiAffinityTerms", [w.pod_affinity_term for w in _preferred(anti)]),
    ):
        err = _terms_error(terms)
        if err is not None:
            errors.append(f"{label}: {err}")
    return aggregate(errors) if errors else None


# -- terms ---------------------------------------------------------------------------------------


def _required(pa: objects.PodAffinity | None) -> list[objects.PodAffinityTerm]:
    return (pa.required_during_scheduling_ignored_during_execution or []) if pa is not None else []


def _preferred(pa: objects.PodAffinity | None) -> list[objects.WeightedPodAffinityTerm]:
    return (pa.preferred_during_scheduling_ignored_during_execution or []) if pa is not None else []


NamespaceLookup = Callable[[str], "Mapping[str, str] | None"]


def _namespace_lookup(state: CycleState) -> NamespaceLookup:
    """``namespace -> labels`` (``None`` when unknown) from the cycle's snapshot, memoized for
    the call; without a snapshot every namespace is unknown."""
    snapshot = state.snapshot
    if snapshot is None:
        return lambda ns: None
    cache: dict[str, Mapping[str, str] | None] = {}

    def lookup(ns: str) -> Mapping[str, str] | None:
        try:
            return cache[ns]
        except KeyError:
            found: Mapping[str, str] | None = snapshot.namespace_labels(ns)
            cache[ns] = found
            return found

    return lookup


class IncomingTerm:
    """An incoming pod's term with ``namespaceSelector`` merged into its namespaces
    (``mergeAffinityTermNamespacesIfNotEmpty``): ``namespaces`` (a set), ``all_namespaces`` (the
    selector is ``{}``), ``namespace_selector`` (a non-empty selector, resolved through
    ``lookup``: an unknown namespace is not selected), ``selector``, ``topology_key``."""

    __slots__ = (
        "_lookup",
        "_ns_memo",
        "all_namespaces",
        "namespace_selector",
        "namespaces",
        "selector",
        "topology_key",
    )

    def __init__(self, term: objects.PodAffinityTerm | None, owner: PodInfo, lookup: NamespaceLookup) -> None:
        term = term if term is not None else _EMPTY_TERM
        ns_sel = term.namespace_selector
        if not term.namespaces and ns_sel is None:
            self.namespaces: frozenset[str] = frozenset((owner.namespace,))
        else:
            self.namespaces = frozenset(term.namespaces or ())
        self.all_namespaces = ns_sel is not None and not ns_sel.match_labels and not ns_sel.match_expressions
        self.namespace_selector = ns_sel if ns_sel is not None and not self.all_namespaces else None
        self.selector = term.label_selector
        self.topology_key = term.topology_key or ""
        self._lookup = lookup
        self._ns_memo: dict[str, bool] = {}

    def namespace_matches(self, ns: str) -> bool:
        """Whether a pod in ``ns`` is within the term's namespaces."""
        if ns in self.namespaces or self.all_namespaces:
            return True
        sel = self.namespace_selector
        if sel is None:
            return False
        memo = self._ns_memo
        found = memo.get(ns)
        if found is None:
            labels = self._lookup(ns)
            found = memo[ns] = labels is not None and label_selector_matches(sel, labels)
        return found

    def matches(self, pod: PodInfo) -> bool:
        """``AffinityTerm.Matches(pod, nil)``."""
        return self.namespace_matches(pod.namespace) and label_selector_matches(self.selector, pod.labels)


_EMPTY_TERM = objects.PodAffinityTerm()


def existing_term_matches(
    term: objects.PodAffinityTerm, owner_namespace: str, pod: PodInfo, ns_labels: Mapping[str, str]
) -> bool:
    """``AffinityTerm.Matches(pod, nsLabels)`` for a term of an existing pod in
    ``owner_namespace``: ``ns_labels`` are the labels of ``pod``'s namespace (empty when unknown)."""
    namespaces, ns_sel = term.namespaces, term.namespace_selector
    if not namespaces and ns_sel is None:
        if pod.namespace != owner_namespace:
            return False
    elif not ((namespaces is not None and pod.namespace in namespaces) or label_selector_matches(ns_sel, ns_labels)):
        return False
    return label_selector_matches(term.label_selector, pod.labels)


def _all_match(terms: Sequence[IncomingTerm], pod: PodInfo) -> bool:
    """``podMatchesAllAffinityTerms``: false for no terms."""
    if not terms:
        return False
    return all(t.matches(pod) for t in terms)


def _all_nodes(state: CycleState, nodes: Sequence[NodeInfo]) -> Sequence[NodeInfo]:
    snapshot = state.snapshot
    return snapshot.list() if snapshot is not None else nodes


# -- state ---------------------------------------------------------------------------------------

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
            for term in _required(aff.pod_anti_affinity):
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


# -- the plugin ----------------------------------------------------------------------------------


#: the cluster events that may make a pod this plugin rejected schedulable
_EVENTS = (
    ClusterEvent(POD, ActionType.ALL),
    ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
)


class InterPodAffinity(PreFilterStateExtensions):
    """PreFilter (with its extensions ``AddPod``/``RemovePod``) + Filter + PreScore + Score +
    NormalizeScore (see the module doc)."""

    name = NAME
    pre_filter_key = _PRE_FILTER

    def __init__(self, args: InterPodAffinityArgs, handle: Handle) -> None:
        self.hard_pod_affinity_weight = args.hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = args.ignore_preferred_terms_of_existing_pods

    # -- filter ----------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Count the topology pairs over every node of the cluster; ``Skip`` when nothing applies."""
        error = pod_parse_error(pod)
        if error is not None:
            return None, Status.unresolvable(f"parsing pod: {error}")
        aff = pod.affinity
        lookup = _namespace_lookup(state)
        affinity_terms = [IncomingTerm(t, pod, lookup) for t in _required(aff.pod_affinity)] if aff else []
        anti_terms = [IncomingTerm(t, pod, lookup) for t in _required(aff.pod_anti_affinity)] if aff else []
        all_nodes = _all_nodes(state, nodes)
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
                for term in _required(anti):
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
            return _NO_NODE_STATUS
        return _verdict(s, node.labels)

    # -- score -----------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """Sum the weights per topology pair over every node of the cluster; ``Skip`` when none."""
        aff = pod.affinity
        preferred_affinity = _preferred(aff.pod_affinity) if aff else []
        preferred_anti = _preferred(aff.pod_anti_affinity) if aff else []
        has_constraints = bool(preferred_affinity or preferred_anti)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return SKIP
        error = pod_parse_error(pod)
        if error is not None:
            return Status.error(f"failed to parse pod: {error}")
        lookup = _namespace_lookup(state)
        incoming = [(IncomingTerm(w.pod_affinity_term, pod, lookup), w.weight or 0) for w in preferred_affinity]
        incoming += [(IncomingTerm(w.pod_affinity_term, pod, lookup), -(w.weight or 0)) for w in preferred_anti]
        ns_labels = lookup(pod.namespace) or {}
        hard = self.hard_pod_affinity_weight
        scores: dict[str, dict[str, int]] = {}
        touched = False

        def add(key: str, value: str, weight: int) -> None:
            by_value = scores.get(key)
            if by_value is None:
                by_value = scores[key] = {}
            by_value[value] = by_value.get(value, 0) + weight

        for node in _all_nodes(state, nodes):
            if node.node is None:
                continue
            labels = node.labels
            if not labels:
                continue
            for existing in node.pods if has_constraints else node.pods_with_affinity:
                for term, weight in incoming:
                    value = labels.get(term.topology_key)
                    if value is not None and term.matches(existing):
                        add(term.topology_key, value, weight)
                        touched = True
                existing_aff = existing.affinity
                if existing_aff is None:
                    continue
                for raw, weight in self._existing_terms(existing_aff, hard):
                    key = raw.topology_key or ""
                    value = labels.get(key)
                    if value is not None and existing_term_matches(raw, existing.namespace, pod, ns_labels):
                        add(key, value, weight)
                        touched = True
        if not touched:
            return SKIP
        state.write(_PRE_SCORE, scores)
        return SUCCESS

    @staticmethod
    def _existing_terms(aff: objects.Affinity, hard: int) -> list[tuple[objects.PodAffinityTerm, int]]:
        """An existing pod's scoring terms with their signed weights: required affinity (``hard``,
        when above 0), preferred affinity, preferred anti-affinity (negative)."""
        out: list[tuple[objects.PodAffinityTerm, int]] = []
        if hard > 0:
            out += [(t, hard) for t in _required(aff.pod_affinity)]
        out += [(w.pod_affinity_term, w.weight or 0) for w in _preferred(aff.pod_affinity) if w.pod_affinity_term]
        out += [
            (w.pod_affinity_term, -(w.weight or 0)) for w in _preferred(aff.pod_anti_affinity) if w.pod_affinity_term
        ]
        return out

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        """The sum of PreScore's weights over the node's topology pairs (may be negative; see
        :meth:`normalize_score`). ``Error`` for an unknown node object and when PreScore did not
        run."""
        scores: dict[str, dict[str, int]] | None = state.get(_PRE_SCORE)
        if scores is None:
            return 0, Status.error(f'reading "{_PRE_SCORE}" from cycleState: not found')
        if node.node is None:
            return 0, _NO_NODE_STATUS
        labels = node.labels
        total = 0
        for key, by_value in scores.items():
            value = labels.get(key)
            if value is not None:
                total += by_value.get(value, 0)
        return total, SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        """Map min..max of ``scores`` onto 0..100 in place (``int(100 * (s - min) / (max - min))``,
        float64 as upstream); all 0 when every node has the same score."""
        if not state.read(_PRE_SCORE) or not scores:
            return SUCCESS
        low = min(s.score for s in scores)
        high = max(s.score for s in scores)
        diff = high - low
        for s in scores:
            s.score = int(float(MAX_NODE_SCORE) * (float(s.score - low) / float(diff))) if diff > 0 else 0
        return SUCCESS

    def events_to_register(self) -> Sequence[ClusterEvent]:
        """``EventsToRegister`` (v1.30, queueing hints off): Pod All, Node Add|UpdateNodeLabel."""
        return _EVENTS


PLUGIN = PluginEntry(
    name=NAME,
    factory=InterPodAffinity,
    args=InterPodAffinityArgs,
    needs_cluster=True,
    # the namespaces' labels, for namespaceSelector (listed and watched as kube-scheduler's informer)
    needs=lambda args, http_timeout: ClusterNeeds(namespaces=True),
    summary="filter+score: kube-scheduler's InterPodAffinity (pod affinity and anti-affinity) on the cluster state",
)

"""What InterPodAffinity's Filter and Score share: the pod's affinity terms and their parse errors
(``framework.NewPodInfo``'s ``AffinityTerm``s, pkg/scheduler/framework/types.go), the namespaces of
a term (``AffinityTerm.Matches``; ``mergeAffinityTermNamespacesIfNotEmpty`` and
``GetNamespaceLabelsSnapshot``, interpodaffinity/plugin.go) and the nodes a pass counts over.

Namespaces of a term: the term's ``namespaces``, plus those its ``namespaceSelector`` selects;
the owner pod's namespace when both are empty/unset. For the incoming pod's terms the selector is
resolved against the known namespaces (``state.snapshot.namespace_labels``; an unknown namespace
is not selected), an empty selector ``{}`` selects every namespace. For existing pods' terms the
selector is matched against the incoming pod's namespace labels, an empty set when the namespace
is unknown. The cluster state watches the namespaces' labels for this plugin
(``ClusterNeeds.namespaces``). Label selectors follow ``metav1.LabelSelectorAsSelector``
(:func:`app.framework.labels.label_selector_matches`: ``None`` selects nothing, ``{}``
everything). ``matchLabelKeys``/``mismatchLabelKeys`` of terms are alpha in v1.30
(``MatchLabelKeysInPodAffinity``, off by default) and ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from app.framework import objects
from app.framework.labels import label_selector_matches
from app.framework.status import Status
from app.framework.types import NO_NODE, CycleState, NodeInfo, PodInfo
from app.framework.validation import aggregate, selector_error

NAME = "InterPodAffinity"

#: an unknown node object (Filter and Score)
NO_NODE_STATUS = Status.error(NO_NODE)


# -- parse errors (framework.NewPodInfo: metav1.LabelSelectorAsSelector of each term) -------------


def terms_error(terms: Sequence[objects.PodAffinityTerm | None]) -> str | None:
    """``GetAffinityTerms``' error: the first term whose labelSelector, then namespaceSelector,
    fails to parse (``None`` when all parse)."""
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
        ("requiredAffinityTerms", required_terms(pa)),
        ("requiredAntiAffinityTerms", required_terms(anti)),
        ("preferredAffinityTerms", [w.pod_affinity_term for w in preferred_terms(pa)]),
        ("preferredAntiAffinityTerms", [w.pod_affinity_term for w in preferred_terms(anti)]),
    ):
        err = terms_error(terms)
        if err is not None:
            errors.append(f"{label}: {err}")
    return aggregate(errors) if errors else None


# -- terms ---------------------------------------------------------------------------------------


def required_terms(pa: objects.PodAffinity | None) -> list[objects.PodAffinityTerm]:
    """The required terms of a pod (anti-)affinity (none for ``None``)."""
    return (pa.required_during_scheduling_ignored_during_execution or []) if pa is not None else []


def preferred_terms(pa: objects.PodAffinity | None) -> list[objects.WeightedPodAffinityTerm]:
    """The preferred (weighted) terms of a pod (anti-)affinity (none for ``None``)."""
    return (pa.preferred_during_scheduling_ignored_during_execution or []) if pa is not None else []


NamespaceLookup = Callable[[str], "Mapping[str, str] | None"]


def namespace_lookup(state: CycleState) -> NamespaceLookup:
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


def cluster_nodes(state: CycleState, nodes: Sequence[NodeInfo]) -> Sequence[NodeInfo]:
    """Every node of the cluster (``state.snapshot.list()``), else ``nodes``."""
    snapshot = state.snapshot
    return snapshot.list() if snapshot is not None else nodes


__all__ = [
    "NAME",
    "NO_NODE_STATUS",
    "IncomingTerm",
    "NamespaceLookup",
    "cluster_nodes",
    "existing_term_matches",
    "namespace_lookup",
    "pod_parse_error",
    "preferred_terms",
    "required_terms",
    "terms_error",
]

"""InterPodAffinity's PreScore, Score and NormalizeScore (interpodaffinity/scoring.go): per
topology pair, the sum of the incoming pod's preferred affinity weights (minus its preferred
anti-affinity weights) over the existing pods matching them, plus, for every existing pod whose
terms match the incoming pod, ``hardPodAffinityWeight`` per required affinity term, its preferred
affinity weights, minus its preferred anti-affinity weights. A node scores the sum over its
labels; NormalizeScore maps min..max to 0..100 (``int(100 * (s - min) / (max - min))``, all 0 when
equal). PreScore returns ``Skip`` when nothing matched, and, with
``ignorePreferredTermsOfExistingPods``, for a pod without preferred terms.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.framework import objects
from app.framework.scores import MAX_NODE_SCORE
from app.framework.status import SKIP, SUCCESS, Status
from app.framework.types import CycleState, NodeInfo, NodeScore, PodInfo
from app.plugins.interpodaffinity.common import (
    NAME,
    NO_NODE_STATUS,
    IncomingTerm,
    cluster_nodes,
    existing_term_matches,
    namespace_lookup,
    pod_parse_error,
    preferred_terms,
    required_terms,
)

_PRE_SCORE = f"{NAME}/pre-score"


class Scoring:
    """InterPodAffinity's PreScore, Score and NormalizeScore; see the module doc."""

    #: ``hardPodAffinityWeight`` and ``ignorePreferredTermsOfExistingPods`` (set by the plugin)
    hard_pod_affinity_weight: int
    ignore_preferred_terms_of_existing_pods: bool

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """Sum the weights per topology pair over every node of the cluster; ``Skip`` when none."""
        aff = pod.affinity
        preferred_affinity = preferred_terms(aff.pod_affinity) if aff else []
        preferred_anti = preferred_terms(aff.pod_anti_affinity) if aff else []
        has_constraints = bool(preferred_affinity or preferred_anti)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return SKIP
        error = pod_parse_error(pod)
        if error is not None:
            return Status.error(f"failed to parse pod: {error}")
        lookup = namespace_lookup(state)
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

        for node in cluster_nodes(state, nodes):
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
            out += [(t, hard) for t in required_terms(aff.pod_affinity)]
        out += [(w.pod_affinity_term, w.weight or 0) for w in preferred_terms(aff.pod_affinity) if w.pod_affinity_term]
        out += [
            (w.pod_affinity_term, -(w.weight or 0))
            for w in preferred_terms(aff.pod_anti_affinity)
            if w.pod_affinity_term
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
            return 0, NO_NODE_STATUS
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


__all__ = ["Scoring"]

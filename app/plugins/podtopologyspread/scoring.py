"""PodTopologySpread's PreScore, Score and NormalizeScore, for the ``ScheduleAnyway`` constraints
(podtopologyspread/scoring.go): a node's raw score is ``sum(count * log(domains + 2) + maxSkew -
1)`` over the constraints, rounded half away from zero; NormalizeScore maps it to ``100 * (max +
min - score) / max`` so that fewer matching pods score higher; nodes missing a topology key are
ignored (score 0). The counts are taken over every node of the cluster, the domains over the
filtered nodes (``initPreScoreState``); a hostname constraint is counted at Score, per node.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from app.framework.scores import MAX_NODE_SCORE
from app.framework.status import SKIP, SUCCESS, Status
from app.framework.types import CycleState, NodeInfo, NodeScore, PodInfo
from app.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    NAME,
    SCHEDULE_ANYWAY,
    Constraint,
    LabelMatcher,
    SelectorError,
    SpreadConstraints,
    count_matching,
    match_node_inclusion_policies,
    required_node_affinity,
)

_PRE_SCORE = f"{NAME}/pre-score"


def go_round(value: float) -> int:
    """Go's ``math.Round``: half away from zero."""
    whole = math.trunc(value)
    if abs(value - whole) >= 0.5:
        whole += 1 if value > 0 else -1
    return int(whole)


def topology_normalizing_weight(size: int) -> float:
    """``topologyNormalizingWeight``: ``log(size + 2)``."""
    return math.log(size + 2)


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """What Score and NormalizeScore read (``preScoreState``): the soft constraints, the nodes
    ignored for missing a topology key, per constraint the matching pods per topology value
    (hostname constraints are counted at Score) and the normalizing weight."""

    constraints: tuple[Constraint, ...]
    matchers: tuple[LabelMatcher, ...]
    ignored: frozenset[str]
    counts: tuple[dict[str, int], ...]
    weights: tuple[float, ...]
    namespace: str


class Scoring(SpreadConstraints):
    """PodTopologySpread's PreScore, Score and NormalizeScore; see the module doc."""

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """``initPreScoreState`` over ``nodes`` (the filtered nodes) and the counts over every node
        of the cluster; ``Skip`` without ``ScheduleAnyway`` constraints or without nodes."""
        snapshot = state.snapshot
        all_nodes = snapshot.list() if snapshot is not None else nodes
        if not all_nodes:
            return SKIP
        try:
            constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        except SelectorError as exc:
            return Status.error(f"calculating preScoreState: obtaining pod's soft topology spread constraints: {exc}")
        if not constraints:
            return SKIP
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        keys = [c.topology_key for c in constraints]
        counts: list[dict[str, int]] = [{} for _ in constraints]
        ignored: set[str] = set()
        for node in nodes:
            labels = node.labels
            if require_all and not all(k in labels for k in keys):
                ignored.add(node.name)
                continue
            for i, key in enumerate(keys):
                if key == LABEL_HOSTNAME:
                    continue  # per-node counts are computed at Score
                counts[i].setdefault(labels.get(key, ""), 0)
        weights = tuple(
            topology_normalizing_weight(len(nodes) - len(ignored) if key == LABEL_HOSTNAME else len(counts[i]))
            for i, key in enumerate(keys)
        )

        matchers = tuple(c.selector.matcher() for c in constraints)
        affinity = required_node_affinity(pod)
        namespace = pod.namespace
        tolerations = pod.tolerations
        for node in all_nodes:
            if node.node is None:
                continue
            labels = node.labels
            if require_all and not all(k in labels for k in keys):
                continue
            memo: list[bool | None] = [None, None]
            for i, c in enumerate(constraints):
                domain_counts = counts[i]
                value = labels.get(c.topology_key, "")
                if value not in domain_counts:
                    continue
                if not match_node_inclusion_policies(c, node, labels, affinity, tolerations, memo):
                    continue
                domain_counts[value] += count_matching(node.pods, c.selector, matchers[i], namespace)
        state.write(
            _PRE_SCORE,
            PreScoreState(tuple(constraints), matchers, frozenset(ignored), tuple(counts), weights, namespace),
        )
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        """The raw score: ``sum(count * weight + maxSkew - 1)`` over the constraints whose key the
        node has, rounded half away from zero; 0 for an ignored node. ``Error`` when PreScore did
        not run."""
        s: PreScoreState | None = state.get(_PRE_SCORE)
        if s is None:
            return 0, Status.error(f'reading "{_PRE_SCORE}" from cycleState: not found')
        if node.name in s.ignored:
            return 0, SUCCESS
        labels = node.labels
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                count = count_matching(node.pods, c.selector, s.matchers[i], s.namespace)
            else:
                count = s.counts[i].get(value, 0)
            total += count * s.weights[i] + (c.max_skew - 1)
        return go_round(total), SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        """``100 * (max + min - score) // max`` for the scored nodes (100 each when the highest is
        0), 0 for the ignored ones."""
        s: PreScoreState | None = state.get(_PRE_SCORE)
        if s is None:
            return SUCCESS
        ignored = s.ignored
        counted = [ns.score for ns in scores if ns.name not in ignored]
        lowest = min(counted, default=0)
        highest = max(0, max(counted, default=0))
        for ns in scores:
            if ns.name in ignored:
                ns.score = 0
            elif highest == 0:
                ns.score = MAX_NODE_SCORE
            else:
                ns.score = MAX_NODE_SCORE * (highest + lowest - ns.score) // highest
        return SUCCESS


__all__ = ["PreScoreState", "Scoring", "go_round", "topology_normalizing_weight"]

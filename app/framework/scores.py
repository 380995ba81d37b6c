"""The range of a score and the default NormalizeScore: what a Score plugin needs beside its
protocol, so that no plugin reaches into the runtime for it.

:data:`MAX_NODE_SCORE` and :data:`MIN_NODE_SCORE` are ``framework.MaxNodeScore`` and
``MinNodeScore`` (pkg/scheduler/framework/interface.go); :func:`default_normalize_score` is
``helper.DefaultNormalizeScore`` (pkg/scheduler/framework/plugins/helper/normalize_score.go).
:data:`MAX_EXTENDER_PRIORITY` is ``extenderv1.MaxExtenderPriority``, the top of the score range on
the extender's wire: here because a plugin may aim at it (DiceRoll rolls 0..10), and
:mod:`app.extender` re-exports it. :class:`SortedNodeScores` is how v1.36.3 picks the node
(``sortedNodeScores``, pkg/scheduler/schedule_one.go), shared by the cycle and opportunistic
batching.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.framework.status import SUCCESS, Status
from app.framework.types import NodePluginScores, NodeScore

#: ``framework.MaxNodeScore`` and ``MinNodeScore``: the range of a Score plugin's score after
#: NormalizeScore (the runtime refuses any other).
MAX_NODE_SCORE, MIN_NODE_SCORE = 100, 0
#: ``extenderv1.MaxExtenderPriority``: the top of the score range on the wire (0..10).
MAX_EXTENDER_PRIORITY = 10


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> Status:
    """kube-scheduler's ``helper.DefaultNormalizeScore``
    (pkg/scheduler/framework/plugins/helper/normalize_score.go): scale ``scores`` in place to
    0..``max_priority`` by the highest (integer division, as upstream); all zero: ``max_priority``
    each when ``reverse``, else unchanged; ``reverse`` then flips every score
    (``max_priority - score``). Always ``SUCCESS``."""
    highest = max((s.score for s in scores), default=0)
    if highest == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return SUCCESS
    for s in scores:
        score = max_priority * s.score // highest
        s.score = max_priority - score if reverse else score
    return SUCCESS


class SortedNodeScores:
    """v1.36.3's ``sortedNodeScores`` (pkg/scheduler/schedule_one.go): the scored nodes as Go's
    ``container/heap`` keeps them (``heap.Init`` over the list in its given order, then ``Pop``),
    with ``nodeScoreHeap.Less``: the higher ``total_score`` first, on a tie the higher
    ``randomizer`` (set only when extenders score; 0 otherwise, so ties go by the heap's own
    order, deterministic for one feasible-node order). ``pop()`` raises ``IndexError`` when empty.
    The heap's sift-down is Go's, step for step, so the node chosen among ties is upstream's."""

    __slots__ = ("_h",)

    def __init__(self, node_scores: Sequence[NodePluginScores]) -> None:
        self._h = [(s.total_score, s.randomizer, s.name) for s in node_scores]
        n = len(self._h)
        for i in range(n // 2 - 1, -1, -1):
            self._down(i, n)

    @staticmethod
    def _less(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
        return a[0] > b[0] or (a[0] == b[0] and a[1] > b[1])

    def _down(self, i: int, n: int) -> None:
        h, less = self._h, self._less
        while True:
            j = 2 * i + 1
            if j >= n:
                return
            if j + 1 < n and less(h[j + 1], h[j]):
                j += 1
            if not less(h[j], h[i]):
                return
            h[i], h[j] = h[j], h[i]
            i = j

    def pop(self) -> str:
        """``heap.Pop``: the best node's name (removed)."""
        return self.pop_score()[2]

    def pop_score(self) -> tuple[int, int, str]:
        """``PopScore``: the best node's ``(total_score, randomizer, name)`` (removed)."""
        h = self._h
        n = len(h) - 1
        if n < 0:
            raise IndexError("pop from an empty SortedNodeScores")
        h[0], h[n] = h[n], h[0]
        self._down(0, n)
        return h.pop()

    def __len__(self) -> int:
        return len(self._h)


__all__ = ["MAX_EXTENDER_PRIORITY", "MAX_NODE_SCORE", "MIN_NODE_SCORE", "SortedNodeScores", "default_normalize_score"]

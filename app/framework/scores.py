"""The range of a score and the default NormalizeScore: what a Score plugin needs beside its
protocol, so that no plugin reaches into the runtime for it.

:data:`MAX_NODE_SCORE` and :data:`MIN_NODE_SCORE` are ``framework.MaxNodeScore`` and
``MinNodeScore`` (pkg/scheduler/framework/interface.go); :func:`default_normalize_score` is
``helper.DefaultNormalizeScore`` (pkg/scheduler/framework/plugins/helper/normalize_score.go).
:data:`MAX_EXTENDER_PRIORITY` is ``extenderv1.MaxExtenderPriority``, the top of the score range on
the extender's wire: here because a plugin may aim at it (DiceRoll rolls 0..10), and
:mod:`app.extender` re-exports it.
"""

from __future__ import annotations

from app.framework.status import SUCCESS, Status
from app.framework.types import NodeScore

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


__all__ = ["MAX_EXTENDER_PRIORITY", "MAX_NODE_SCORE", "MIN_NODE_SCORE", "default_normalize_score"]

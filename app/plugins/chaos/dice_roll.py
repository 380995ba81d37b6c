"""DiceRoll: a Score plugin that rolls a die per node."""

from __future__ import annotations

from app.framework.args import PluginArgs
from app.framework.handle import Handle
from app.framework.registry import PluginEntry
from app.framework.scores import MAX_EXTENDER_PRIORITY, MAX_NODE_SCORE
from app.framework.status import SUCCESS, Status
from app.framework.types import CycleState, NodeInfo, PodInfo
from app.plugins.chaos import draw

NAME = "DiceRoll"


class DiceRollArgs(PluginArgs):
    """``seed``: makes rolls reproducible per (pod, node)."""

    seed: int | None = None


class DiceRoll:
    """Score: a roll of 0..10 (``MaxExtenderPriority``) per node, returned as 0..100 in steps of
    10, so a profile with DiceRoll alone answers exactly the roll on the wire."""

    name = NAME

    def __init__(self, args: DiceRollArgs, handle: Handle) -> None:
        self.seed = args.seed

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        """The roll times 10 (0, 10, ..., 100)."""
        roll = int(draw(self.seed, NAME, pod, node) * (MAX_EXTENDER_PRIORITY + 1))
        return roll * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY), SUCCESS


PLUGIN = PluginEntry(
    name=NAME,
    factory=DiceRoll,
    args=DiceRollArgs,
    sees_every_pod=False,
    summary="score: a random 0..10 per node (chaos testing)",
)

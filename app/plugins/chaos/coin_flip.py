"""CoinFlip: a Filter plugin that keeps a node on heads and rejects it on tails."""

from __future__ import annotations

from pydantic import Field

from app.framework.args import PluginArgs
from app.framework.handle import Handle
from app.framework.registry import PluginEntry
from app.framework.status import SUCCESS, Status
from app.framework.types import CycleState, NodeInfo, PodInfo
from app.plugins.chaos import draw

NAME = "CoinFlip"
TAILS = Status.unschedulable("coin is tails", code="CoinTails")


class CoinFlipArgs(PluginArgs):
    """``seed``: makes flips reproducible per (pod, node); ``headsProbability``: the chance in
    [0, 1] that a node is kept (0.5 is a fair coin)."""

    seed: int | None = None
    heads_probability: float = Field(default=0.5, ge=0.0, le=1.0)


class CoinFlip:
    """Filter: heads keeps the node, tails rejects it as ``Unschedulable`` with ``coin is tails``.

    The chaos-testing half of the classic random extender: it proves kube-scheduler copes with an
    extender that rejects arbitrary nodes. Reads only the node name, so it works in both cache
    modes without cluster state.
    """

    name = NAME

    def __init__(self, args: CoinFlipArgs, handle: Handle) -> None:
        self.seed = args.seed
        self.heads = args.heads_probability

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``SUCCESS`` on heads, ``Unschedulable("coin is tails")`` on tails."""
        return SUCCESS if draw(self.seed, NAME, pod, node) < self.heads else TAILS


PLUGIN = PluginEntry(
    name=NAME,
    factory=CoinFlip,
    args=CoinFlipArgs,
    sees_every_pod=False,
    summary="filter: keeps a node on heads, rejects it on tails (chaos testing)",
)

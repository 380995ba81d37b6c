"""The random "chaos" extender of the classic scheduler-extender example: CoinFlip and DiceRoll.

With a ``seed`` every draw is a pure function of (seed, pod UID, node name), so the same pod and
node always get the same coin and dice whatever the request order or concurrency: replays,
tests and demos are reproducible. Without a seed the draws come from Python's ``random``.
"""

from __future__ import annotations

import hashlib
import random

from app.framework.types import NodeInfo, PodInfo

_SCALE = float(1 << 64)


def draw(seed: int | None, purpose: str, pod: PodInfo, node: NodeInfo) -> float:
    """A number in [0, 1): deterministic for a given ``seed`` (see module doc), else random."""
    if seed is None:
        return random.random()
    key = f"{seed}\x00{purpose}\x00{pod.uid or pod.key()}\x00{node.name}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") / _SCALE

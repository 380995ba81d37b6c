"""Opportunistic batching (KEP-5598, beta and on in v1.36.3): v1.36.3's
pkg/scheduler/framework/runtime/batch.go, and the signature it compares
(``frameworkImpl.SignPod``/``computeBatchablePlugins``, framework/runtime/framework.go).

A pod's signature is the JSON (keys sorted, as Go's ``json.Marshal`` of a map) of its
``schedulerName`` and every fragment the profile's PreFilter, Filter, PreScore and Score plugins
sign (:class:`~app.framework.interfaces.SignPlugin`); ``None`` when one of them cannot sign it, or
when one of them does not implement signing (then the profile never batches; with v1.36.3's
default profile that is always the case: PodTopologySpread's system-default constraints make every
pod unsignable).

After a cycle that scored its feasible nodes, the rest of the ranking (the chosen node popped) is
kept with the pod's signature. The next cycle, when it is the very next one, its pod has the same
signature, the ranking is under :data:`MAX_BATCH_AGE` seconds old and the node chosen last time
now rejects the pod (one pod per node), takes the next node of that ranking as its hint: the cycle
tries it first, as a nominated node, and keeps it without scoring when it passes Filter.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from app.framework.interfaces import SignPlugin
from app.framework.points import EnabledPlugin
from app.framework.scores import SortedNodeScores
from app.framework.types import CycleState, NodeInfo, PodInfo

#: ``maxBatchAge``: how long a kept ranking may be reused, in seconds
MAX_BATCH_AGE = 0.5
#: ``fwk.SchedulerNameSignerName``
SCHEDULER_NAME_SIGNER = "v1.Pod.Spec.SchedulerName"

#: ``metrics.BatchFlush*``: why a kept ranking was not used
#: (upstream's ``pod_failed`` cannot happen: only a successful cycle stores results, so a failed one
#: shows as ``pod_skipped``, the next cycle's number not following the stored one)
FLUSH_POD_SKIPPED, FLUSH_POD_INCOMPATIBLE = "pod_skipped", "pod_incompatible"
FLUSH_EXPIRED, FLUSH_NODE_MISSING, FLUSH_NODE_NOT_FULL = "expired", "node_missing", "node_not_full"
FLUSH_POD_NOT_BATCHABLE, FLUSH_EMPTY_LIST = "pod_not_batchable", "empty_list"
#: ``metrics.BatchAttempt*``
HINT_USED, HINT_NOT_USED, NO_HINT = "hint_used", "hint_not_used", "no_hint"


def batchable_plugins(lists: Sequence[Sequence[EnabledPlugin]]) -> tuple[SignPlugin, ...] | None:
    """``computeBatchablePlugins``: the distinct plugins of the PreFilter, Filter, PreScore and
    Score lists (in that order), or ``None`` when one of them does not sign pods."""
    plugins: dict[str, SignPlugin] = {}
    for point in lists:
        for ep in point:
            if ep.name in plugins:
                continue
            if not isinstance(ep.plugin, SignPlugin):
                return None
            plugins[ep.name] = ep.plugin
    return tuple(plugins.values())


def sign_pod(plugins: tuple[SignPlugin, ...] | None, pod: PodInfo) -> bytes | None:
    """``SignPod``: the pod's signature, or ``None`` (no signing in this profile, a plugin that
    cannot sign this pod, or a fragment that does not serialize)."""
    if plugins is None:
        return None
    sig: dict[str, Any] = {SCHEDULER_NAME_SIGNER: pod.scheduler_name}
    for plugin in plugins:
        fragments, status = plugin.sign_pod(pod)
        if not status.is_success():
            return None
        for key, value in fragments:
            sig[key] = value
    try:
        return json.dumps(sig, sort_keys=True, separators=(",", ":")).encode()
    except (TypeError, ValueError):
        return None


@dataclass
class _BatchState:
    signature: bytes
    sorted_nodes: SortedNodeScores
    creation_time: float


class OpportunisticBatch:
    """``OpportunisticBatch``: one per profile (its Framework's). ``run_filter(state, pod, node)``
    is the profile's ``RunFilterPlugins`` for one node; ``clock``: seconds (monotonic). ``stats``
    counts hints (``hint_used``, ``hint_not_used``, ``no_hint``) and flushes by reason;
    ``batched_pods`` the pods placed on their hint."""

    def __init__(
        self, run_filter: Callable[[CycleState, PodInfo, NodeInfo], Any], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._run_filter = run_filter
        self._clock = clock
        self._state: _BatchState | None = None
        self._last_cycle = -1
        self._last_chosen = ""
        self.batched_pods = 0
        self.stats: Counter[str] = Counter()

    def get_node_hint(
        self,
        state: CycleState,
        pod: PodInfo,
        signature: bytes | None,
        cycle: int,
        get_node: Callable[[str], NodeInfo | None],
    ) -> str:
        """``GetNodeHint``: the next node of the kept ranking for this cycle's pod, or ``""``
        (see the module doc); ``get_node`` reads the cycle's snapshot."""
        if not self._compatible(state, pod, signature, cycle, get_node):
            self.stats[NO_HINT] += 1
            return ""
        assert self._state is not None
        return self._state.sorted_nodes.pop()

    def store_schedule_results(
        self, signature: bytes | None, hinted: str, chosen: str, others: SortedNodeScores | None, cycle: int
    ) -> None:
        """``StoreScheduleResults``, after a cycle chose ``chosen`` (``others``: the rest of its
        ranking, ``None`` when one node was feasible)."""
        self._last_cycle, self._last_chosen = cycle, chosen
        if hinted and hinted == chosen:
            self.stats[HINT_USED] += 1
            self.batched_pods += 1
            return
        if hinted:
            self.stats[HINT_NOT_USED] += 1
        if signature is not None and others is not None and len(others) > 0:
            self._state = _BatchState(signature, others, self._clock())
            return
        self.stats[FLUSH_EMPTY_LIST if others is None or len(others) == 0 else FLUSH_POD_NOT_BATCHABLE] += 1
        self._state = None

    def _flush(self, reason: str) -> bool:
        self.stats[reason] += 1
        return False

    def _compatible(
        self,
        state: CycleState,
        pod: PodInfo,
        signature: bytes | None,
        cycle: int,
        get_node: Callable[[str], NodeInfo | None],
    ) -> bool:
        kept = self._state
        if kept is None or len(kept.sorted_nodes) == 0:
            return False
        if cycle != self._last_cycle + 1:
            return self._flush(FLUSH_POD_SKIPPED)
        if signature is None or signature != kept.signature:
            return self._flush(FLUSH_POD_INCOMPATIBLE)
        if self._clock() > kept.creation_time + MAX_BATCH_AGE:
            return self._flush(FLUSH_EXPIRED)
        node = get_node(self._last_chosen)
        if node is None:
            return self._flush(FLUSH_NODE_MISSING)
        if not self._run_filter(state, pod, node).is_rejected():
            return self._flush(FLUSH_NODE_NOT_FULL)
        return True


__all__ = ["MAX_BATCH_AGE", "OpportunisticBatch", "batchable_plugins", "sign_pod"]

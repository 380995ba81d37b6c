"""Decision records: what the service decided for each pod, kept for ``/explain``.

Every filter, prioritize, preempt and bind the handlers answer becomes a :class:`Decision`: time,
profile, verb, the pod's identity, and references to what the answer was built from (the node
names, the filter statuses, the per-plugin scores, the victims, the bind's node and error) plus the
duration. Nothing is formatted on the request path: a record holds references to lists the answer
already built, and :meth:`Decision.explain` turns it into per-node verdicts only when someone
reads it. A filter of a profile that audits plugins also holds what each audited plugin would have
decided of each node (``audit``), and later, once the pod is seen bound, the audited plugins that
would have rejected its node (``violated``): audit records live in the same ring.

:class:`DecisionStore` keeps the last ``attempts_per_pod`` decisions of each pod, at most
``max_records`` in all and none older than ``max_age`` seconds (the oldest pods' records are
dropped first). Thread-safe: filter and prioritize may run in the verb worker thread.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from app.framework.status import Code, Status, code_name
from app.framework.types import PodInfo, PodRef

#: node name -> {verdict, plugin, reason, reasonCode, scores, score}
NodeVerdicts = dict[str, dict[str, Any]]


@dataclass(slots=True)
class Decision:
    """One verb's decision for one pod (see the module doc). Lists are the answer's own.

    - ``names``: candidate node names in request order, or a callable producing them (a listener
      that needs them calls :meth:`node_names` at once; the store resolves it when it keeps the
      record, so no record keeps a request body alive).
    - ``statuses`` (filter): the verdict per node, in the same order.
    - prioritize: each node's final score, one of two kinds: ``extender_scores``, the
      extender's 0..10 (what kube-scheduler received; it multiplies it by the extender's
      weight), or ``total_scores``, the standalone scheduler's ``TotalScore`` (the sum of each
      plugin's weight x 0..100, what ``selectHost`` compared); :attr:`scores` reads the one set.
      ``plugin_scores``: plugin -> its 0..100 per *resolved* node; ``unknown``: the request
      indexes the cluster state did not know (no plugin scored them).
    - ``victims`` (preempt): node -> victim UIDs kept; ``dropped``: node -> the plugin that
      dropped it.
    - ``node`` (bind): the target node.
    - ``error``: the answer's ``Error`` (or the failed call's message), ``""`` when decided; for
      a filter, ``error_plugin`` and ``error_code`` name the plugin and its reason code.
    - ``seconds``: time to decide.
    - ``audit`` (filter): audited plugin -> its verdict per node, in the order of ``names``
      (:meth:`~app.framework.runtime.filter.FilterPoints.audit_filter`); ``audit_events``: the
      profile posts ``AuditFailedScheduling`` events (``auditEvents``); ``violated``: audited
      plugin -> the node the pod was then bound to though the plugin would have rejected it.
    """

    time: float
    profile: str
    verb: str
    namespace: str
    name: str
    uid: str
    names: Sequence[str] | bytes | Callable[[], Sequence[str]] = ()
    statuses: Sequence[Status] = ()
    extender_scores: Sequence[int] = ()
    total_scores: Sequence[int] = ()
    plugin_scores: dict[str, list[int]] = field(default_factory=dict)
    unknown: Sequence[int] = ()
    victims: dict[str, list[str]] = field(default_factory=dict)
    dropped: dict[str, str] = field(default_factory=dict)
    node: str = ""
    error: str = ""
    error_plugin: str = ""
    error_code: str = ""
    #: filter: plugin -> nodes on which its error was ignored (``failurePolicy: Ignore``)
    ignored: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    audit: dict[str, Sequence[Status]] = field(default_factory=dict)
    audit_events: bool = False
    violated: dict[str, str] = field(default_factory=dict)
    #: node entries it holds (set by the store)
    entries: int = 1

    @classmethod
    def since(cls, started: float, profile: str, verb: str, pod: PodInfo | PodRef, **fields: Any) -> Decision:
        """The decision about ``pod`` that began at ``started`` (``time.perf_counter()``) and ends
        now; ``fields`` as the dataclass's."""
        seconds = time.perf_counter() - started
        return cls(time.time(), profile, verb, pod.namespace, pod.name, pod.uid, seconds=seconds, **fields)

    @property
    def scores(self) -> Sequence[int]:
        """Prioritize: each node's final score, :attr:`extender_scores` (0..10) or
        :attr:`total_scores` (``TotalScore``), whichever the decision holds (``()`` for none)."""
        return self.extender_scores or self.total_scores

    def node_names(self) -> Sequence[str]:
        """The candidate node names (resolving a deferred or packed list)."""
        names = self.names() if callable(self.names) else self.names
        if isinstance(names, bytes):
            unpacked: list[str] = orjson.loads(names)
            return unpacked
        return names

    def rejected(self) -> bool:
        """Filter only: every node was rejected (kube-scheduler parks the pod)."""
        return self.verb == "filter" and not self.error and all(s.code is not Code.SUCCESS for s in self.statuses)

    def reason_counts(self) -> dict[str, int]:
        """Filter only: rejection message -> how many nodes it rejected, most first (what
        kube-scheduler aggregates into "0/N nodes are available: ...")."""
        counts: dict[str, int] = {}
        for status in self.statuses:
            if status.code is not Code.SUCCESS:
                message = status.message
                counts[message] = counts.get(message, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def audit_counts(self) -> dict[str, tuple[int, int]]:
        """Filter: audited plugin -> ``(would reject, would admit)``, in nodes (a node it could not
        judge, an error or a node the cluster state does not know, is neither)."""
        out: dict[str, tuple[int, int]] = {}
        for plugin, statuses in self.audit.items():
            reject = admit = 0
            for status in statuses:
                if status.code is Code.SUCCESS:
                    admit += 1
                elif status.plugin == plugin and status.is_rejected():
                    reject += 1
            out[plugin] = (reject, admit)
        return out

    def would_reject(self, node: str) -> dict[str, Status]:
        """Filter: audited plugin -> its rejection of ``node``, for each that would have rejected
        it (empty when none, or the node was not a candidate)."""
        if not self.audit:
            return {}
        names = self.node_names()
        try:
            i = list(names).index(node)
        except ValueError:
            return {}
        out: dict[str, Status] = {}
        for plugin, statuses in self.audit.items():
            status = statuses[i] if i < len(statuses) else None
            if status is not None and status.plugin == plugin and status.is_rejected():
                out[plugin] = status
        return out

    def audit_fails(self) -> list[str]:
        """Filter: the audited plugins that, enforced, would have left the pod no node: each
        rejects every node the profile passed (empty when the profile passed none)."""
        passed = [i for i, s in enumerate(self.statuses) if s.code is Code.SUCCESS]
        if not passed or self.error:
            return []
        out = []
        for plugin, statuses in self.audit.items():
            if all(i < len(statuses) and statuses[i].is_rejected() for i in passed):
                out.append(plugin)
        return out

    def outcome(self) -> dict[str, Any]:
        """The decision's result in brief: filter ``passed``/``rejected`` counts; prioritize the
        ``topNodes`` (highest score, ties in request order); preempt ``victims``/``dropped``;
        bind ``boundNode``; ``error`` when the answer carried one."""
        out: dict[str, Any] = {}
        if self.error:
            out["error"] = self.error
        if self.verb == "filter" and self.statuses:
            passed = sum(1 for s in self.statuses if s.code is Code.SUCCESS)
            out |= {"passed": passed, "rejected": len(self.statuses) - passed}
        elif self.verb == "prioritize" and self.scores:
            best = max(self.scores)
            names = self.node_names()
            out["topNodes"] = [n for n, s in zip(names, self.scores, strict=False) if s == best][:10]
            out["topScore"] = best
        elif self.verb == "preempt":
            out["victims"] = self.victims
            if self.dropped:
                out["dropped"] = self.dropped
        elif self.verb == "bind" and not self.error:
            out["boundNode"] = self.node
        if self.audit:
            out["audit"] = {p: {"wouldReject": r, "wouldAdmit": a} for p, (r, a) in self.audit_counts().items()}
        if self.violated:
            out["auditViolated"] = dict(self.violated)
        return out

    def explain(self) -> dict[str, Any]:
        """The record as the ``/explain`` attempt (:class:`app.api.explain.Attempt`'s shape)."""
        nodes: NodeVerdicts = {}
        names = self.node_names()
        if self.verb == "filter":
            for name, status in zip(names, self.statuses, strict=False):
                if status.code is Code.SUCCESS:
                    nodes[name] = {"verdict": "Success"}
                else:
                    nodes[name] = {
                        "verdict": code_name(status.code),
                        "plugin": status.plugin,
                        "reason": status.message,
                        "reasonCode": status.reason_code or code_name(status.code),
                    }
        elif self.verb == "prioritize":
            skip = set(self.unknown)
            resolved = [i for i in range(len(names)) if i not in skip]
            for i, name in enumerate(names):
                nodes[name] = {"score": self.scores[i] if i < len(self.scores) else 0, "scores": {}}
            for plugin, values in self.plugin_scores.items():
                for j, value in zip(resolved, values, strict=False):
                    nodes[names[j]]["scores"][plugin] = value
        for plugin, statuses in self.audit.items():
            for name, status in zip(names, statuses, strict=False):
                if status.code is not Code.SUCCESS and status.plugin == plugin:
                    verdict = {
                        "plugin": plugin,
                        "verdict": code_name(status.code),
                        "reason": status.message,
                        "reasonCode": status.reason_code or code_name(status.code),
                    }
                    nodes.setdefault(name, {}).setdefault("audit", []).append(verdict)
        return {
            "time": rfc3339(self.time),
            "profile": self.profile,
            "verb": self.verb,
            "durationSeconds": round(self.seconds, 6),
            "nodes": nodes,
            "outcome": self.outcome(),
        }


def rfc3339(seconds: float) -> str:
    """``seconds`` since the epoch as RFC 3339 in UTC with milliseconds (``2026-11-22T20:12:55.278Z``)."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class DecisionStore:
    """The last decisions per pod (see the module doc). ``max_records``: decisions kept in all;
    ``max_node_verdicts``: node entries (names with their verdicts or scores) kept in all, which
    bounds the memory (about 60 bytes each: names are kept as one JSON bytes object per
    decision); ``max_age``: seconds a decision is kept; ``attempts_per_pod``: the most recent
    kept per pod. ``clock``: wall-clock seconds (tests pass their own)."""

    def __init__(
        self,
        max_records: int = 10_000,
        max_age: float = 900.0,
        attempts_per_pod: int = 8,
        max_node_verdicts: int = 1_000_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.max_records = max_records
        self.max_node_verdicts = max_node_verdicts
        self.max_age = max_age
        self.attempts_per_pod = attempts_per_pod
        self._clock = clock
        self._lock = threading.Lock()
        #: (namespace, name) -> its decisions, oldest first; pods in order of their last decision
        self._pods: OrderedDict[tuple[str, str], list[Decision]] = OrderedDict()
        self._count = 0
        self._entries = 0
        #: decisions recorded and dropped (by count, size or age) since start
        self.recorded = 0
        self.evicted = 0

    def __len__(self) -> int:
        return self._count

    @property
    def node_verdicts(self) -> int:
        """Node entries kept in all."""
        return self._entries

    def add(self, decision: Decision) -> None:
        """Keep ``decision`` (a pod without a name is not kept). Its node names are packed into
        one JSON bytes object (no string object per node, and no reference to the request)."""
        if not decision.name:
            return
        names = decision.names() if callable(decision.names) else decision.names
        if not isinstance(names, bytes):
            decision.names = orjson.dumps(names if isinstance(names, list) else list(names))
        decision.entries = max(len(decision.statuses), len(decision.scores), 1) + sum(map(len, decision.audit.values()))
        key = (decision.namespace, decision.name)
        with self._lock:
            attempts = self._pods.pop(key, None)
            if attempts is None:
                attempts = []
            attempts.append(decision)
            self._pods[key] = attempts
            self._count += 1
            self._entries += decision.entries
            self.recorded += 1
            if len(attempts) > self.attempts_per_pod:
                self._drop(attempts, 1)
            self._trim(decision.time)

    def _drop(self, attempts: list[Decision], n: int) -> None:
        for dropped in attempts[:n]:
            self._entries -= dropped.entries
        del attempts[:n]
        self._count -= n
        self.evicted += n

    def _over(self) -> bool:
        return self._count > self.max_records or self._entries > self.max_node_verdicts

    def _trim(self, now: float) -> None:
        pods = self._pods
        oldest = now - self.max_age
        while pods:
            key, attempts = next(iter(pods.items()))
            if self._over():
                drop = 1
            elif attempts[0].time < oldest:
                drop = sum(1 for a in attempts if a.time < oldest)
            else:
                return
            self._drop(attempts, drop)
            if not attempts:
                del pods[key]
            elif not self._over() and attempts[0].time >= oldest:
                return

    def last_audited(self, namespace: str, name: str, uid: str = "") -> Decision | None:
        """The pod's most recent filter decision that holds audit verdicts (of the pod ``uid``
        when given), or ``None``."""
        for decision in reversed(self.get(namespace, name)):
            if decision.verb == "filter" and decision.audit and (not uid or decision.uid == uid):
                return decision
        return None

    def get(self, namespace: str, name: str) -> list[Decision]:
        """The pod's kept decisions, oldest first (empty when none, or all expired)."""
        oldest = self._clock() - self.max_age
        with self._lock:
            return [d for d in self._pods.get((namespace, name), ()) if d.time >= oldest]


__all__ = ["Decision", "DecisionStore", "NodeVerdicts", "rfc3339"]

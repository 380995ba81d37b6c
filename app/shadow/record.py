"""What the shadow scheduler records of one observed bind: :class:`ShadowRecord` (its JSON shape,
one line of ``shadow --record FILE`` and one item of ``GET /shadow``), :class:`ShadowDecision`
(the same as an ``/explain`` attempt, kept in the service's decision store) and
:class:`ShadowLog`, the bounded ring of records with the counts since start.

``agreement`` is ``same`` (the bound node is feasible for the profile and its ``TotalScore`` is the
highest: among tied best nodes, as kube-scheduler's ``selectHost`` draws one of them at random),
``feasible`` (feasible but ranked lower), ``infeasible`` (the profile's PreFilter or Filter rejects
it, or the cluster state does not know it), or ``error`` (a plugin failed: not counted in the
agreement).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import IO, Any

import orjson

from app.framework.status import Code, code_name
from app.observe.decisions import Decision, NodeVerdicts, rfc3339

SAME, FEASIBLE, INFEASIBLE, ERROR = "same", "feasible", "infeasible", "error"
#: the agreements counted (``scheduler_shadow_decisions_total``'s ``agreement`` label)
AGREEMENTS = (SAME, FEASIBLE, INFEASIBLE)
#: the tied best nodes a record lists at most
MAX_BEST_NODES = 10

_CAMEL = {
    "scheduler_name": "schedulerName",
    "bound_node": "boundNode",
    "chosen_node": "chosenNode",
    "best_nodes": "bestNodes",
    "feasible_nodes": "feasibleNodes",
    "bound_total": "boundTotal",
    "chosen_total": "chosenTotal",
    "bound_scores": "boundScores",
    "chosen_scores": "chosenScores",
    "rejected_by": "rejectedBy",
    "rejected_reason": "rejectedReason",
    "difference_score": "differenceScore",
}
_SNAKE = {v: k for k, v in _CAMEL.items()}


@dataclass
class ShadowRecord:
    """One observed bind (see the module doc). ``time``: seconds since the epoch; ``bound_node``:
    where ``scheduler_name`` bound the pod; ``chosen_node``: the profile's choice (the bound node
    when it is among the tied best), ``best_nodes`` the tied best (at most
    :data:`MAX_BEST_NODES`); ``rank``: the bound node's rank by ``TotalScore`` among the feasible
    nodes (1 + the nodes scored strictly higher; ``None`` when infeasible); ``nodes`` and
    ``feasible_nodes``: counts; ``bound_total``/``chosen_total``: ``TotalScore``;
    ``bound_scores``/``chosen_scores``: plugin -> weight x its 0..100 score (kube-scheduler's
    ``-v 10`` score lines); ``rejected_by``/``rejected_reason``: the plugin and reason that made
    the bound node infeasible; ``difference``: the plugin whose weighted score difference between
    the chosen and the bound node is the largest (``difference_score``), or the rejecting plugin;
    ``error``: a plugin's failure; ``seconds``: the shadow cycle's duration."""

    time: float
    profile: str
    scheduler_name: str
    namespace: str
    name: str
    uid: str
    bound_node: str
    agreement: str
    chosen_node: str = ""
    best_nodes: list[str] = field(default_factory=list)
    rank: int | None = None
    nodes: int = 0
    feasible_nodes: int = 0
    bound_total: int | None = None
    chosen_total: int | None = None
    bound_scores: dict[str, int] = field(default_factory=dict)
    chosen_scores: dict[str, int] = field(default_factory=dict)
    rejected_by: str = ""
    rejected_reason: str = ""
    difference: str = ""
    difference_score: int = 0
    error: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The record as JSON (camelCase keys, ``time`` as RFC 3339)."""
        out = {_CAMEL.get(k, k): v for k, v in asdict(self).items()}
        out["time"] = rfc3339(self.time)
        out["seconds"] = round(self.seconds, 6)
        return out

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> ShadowRecord:
        """The record of :meth:`to_json`'s JSON (``time`` kept as 0: the report does not read it).
        Raises ``ValueError`` for a document that is not a record."""
        if not isinstance(doc, dict):
            raise ValueError(f"a shadow record is a JSON object, not {type(doc).__name__}")
        known = {f.name for f in fields(cls)}
        values = {_SNAKE.get(k, k): v for k, v in doc.items()}
        values = {k: v for k, v in values.items() if k in known}
        values["time"] = 0.0
        try:
            return cls(**values)
        except TypeError as exc:
            raise ValueError(f"not a shadow record: {exc}") from None


@dataclass(slots=True)
class ShadowDecision(Decision):
    """A shadow cycle as a decision record (verb ``shadow``): ``statuses`` every node's Filter
    verdict in ``names``' order, ``total_scores`` and ``plugin_scores`` (0..100) aligned with them
    (0 for an infeasible node), ``record`` the :class:`ShadowRecord` (its outcome)."""

    record: ShadowRecord | None = None

    def outcome(self) -> dict[str, Any]:
        """The shadow record's JSON, without the pod's identity."""
        if self.record is None:
            return {}
        drop = {"time", "profile", "namespace", "name", "uid", "seconds"}
        return {k: v for k, v in self.record.to_json().items() if k not in drop and v not in ("", None, [], {})}

    def explain(self) -> dict[str, Any]:
        """The ``/explain`` attempt: each node's verdict and, for a feasible one, its
        ``TotalScore`` (``score``) and its plugins' 0..100 (``scores``)."""
        nodes: NodeVerdicts = {}
        for i, (name, status) in enumerate(zip(self.node_names(), self.statuses, strict=False)):
            if status.code is Code.SUCCESS:
                scores = {p: values[i] for p, values in self.plugin_scores.items() if i < len(values)}
                total = self.total_scores[i] if i < len(self.total_scores) else 0
                nodes[name] = {"verdict": "Success", "score": total, "scores": scores}
            else:
                nodes[name] = {
                    "verdict": code_name(status.code),
                    "plugin": status.plugin,
                    "reason": status.message,
                    "reasonCode": status.reason_code or code_name(status.code),
                }
        return {
            "time": rfc3339(self.time),
            "profile": self.profile,
            "verb": self.verb,
            "durationSeconds": round(self.seconds, 6),
            "nodes": nodes,
            "outcome": self.outcome(),
        }


class ShadowLog:
    """The last ``max_records`` records (a ring) and, since start, the records per profile and
    agreement and the binds not shadowed (``skipped``: observed before the cluster state synced,
    or while the shadow was ``max_pending`` binds behind). ``record_file``: each record also
    appended to it as one JSON line (``shadow --record``). ``listeners`` are told of each record
    (the metrics). Thread-safe."""

    def __init__(
        self,
        max_records: int = 10_000,
        record_file: str | Path | None = None,
        listeners: Iterable[Callable[[ShadowRecord], None]] = (),
    ) -> None:
        self._lock = threading.Lock()
        self._ring: deque[ShadowRecord] = deque(maxlen=max_records)
        self.counts: dict[tuple[str, str], int] = {}
        self.skipped: dict[str, int] = {}
        self.listeners = list(listeners)
        self._file: IO[bytes] | None = open(record_file, "ab") if record_file is not None else None  # noqa: SIM115

    def add(self, record: ShadowRecord) -> None:
        """Keep ``record``, count it, write it to the record file and tell the listeners."""
        line = orjson.dumps(record.to_json()) + b"\n" if self._file is not None else b""
        with self._lock:
            self._ring.append(record)
            key = (record.profile, record.agreement)
            self.counts[key] = self.counts.get(key, 0) + 1
            if self._file is not None:
                self._file.write(line)
                self._file.flush()
        for listener in self.listeners:
            listener(record)

    def skip(self, why: str) -> None:
        """A bind not shadowed, and ``why`` (a short fixed word)."""
        with self._lock:
            self.skipped[why] = self.skipped.get(why, 0) + 1

    def records(self) -> list[ShadowRecord]:
        """The records kept, oldest first."""
        with self._lock:
            return list(self._ring)

    def snapshot(self) -> dict[str, Any]:
        """``GET /shadow``'s body: ``records`` (kept, oldest first, as JSON), ``counts`` (profile ->
        agreement -> records since start) and ``skipped`` (why -> binds)."""
        with self._lock:
            records = [r.to_json() for r in self._ring]
            counts: dict[str, dict[str, int]] = {}
            for (profile, agreement), n in sorted(self.counts.items()):
                counts.setdefault(profile, {})[agreement] = n
            skipped = dict(self.skipped)
        return {"counts": counts, "skipped": skipped, "records": records}

    def close(self) -> None:
        """Close the record file."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


__all__ = [
    "AGREEMENTS",
    "ERROR",
    "FEASIBLE",
    "INFEASIBLE",
    "MAX_BEST_NODES",
    "SAME",
    "ShadowDecision",
    "ShadowLog",
    "ShadowRecord",
]

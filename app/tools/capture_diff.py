"""``replay --capture``: run captured traffic through another configuration and diff the decisions.

Each captured filter, prioritize and preempt request (:mod:`app.observe.capture`) is answered
again, offline, by the same verb code the server runs (:data:`app.api.verbs.VERBS`) under the
other configuration's profile of the same name, and the new answer is compared with the captured
one:

- filter: the nodes whose verdict changed (``Success``, ``Unschedulable``,
  ``UnschedulableAndUnresolvable``, or ``Error`` for an answer carrying ``Error``);
- prioritize: the score of each node, the deltas, and the top-scored nodes;
- preempt: the candidate nodes kept and their victims.

Per pod (its last filter and prioritize), the *landing* nodes are the top-scored nodes among those
that pass filter (without a captured prioritize: those that pass). A pod *would land elsewhere*
when the new landing set shares no node with the old one, and *becomes unschedulable* when no node
passes any more. The new prioritize scores the nodes of the captured prioritize body (what passed
the old filter): a node that only the new filter passes is reported as unscored.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from app.api.service import Answer, ExtenderService
from app.api.verbs import VERBS
from app.extender import codec
from app.framework.runtime import Framework

log = logging.getLogger(__name__)

Verdicts = dict[str, tuple[str, str]]  # node -> (verdict, reason)


@dataclass
class PodDiff:
    """What changed for one pod (see the module doc)."""

    filter_changed: dict[str, tuple[str, str]] = field(default_factory=dict)  # node -> (old, new) verdicts
    score_deltas: dict[str, tuple[int, int]] = field(default_factory=dict)  # node -> (old, new) scores
    preempt_changed: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)
    old_passed: set[str] | None = None
    new_passed: set[str] | None = None
    old_scores: dict[str, int] | None = None
    new_scores: dict[str, int] | None = None

    def landing(self, new: bool) -> set[str] | None:
        """The nodes the pod would land on (module doc); ``None`` without a captured filter."""
        passed = self.new_passed if new else self.old_passed
        scores = self.new_scores if new else self.old_scores
        if passed is None:
            return None
        if scores:
            scored = {n: s for n, s in scores.items() if n in passed}
            if scored:
                best = max(scored.values())
                return {n for n, s in scored.items() if s == best}
        return set(passed)

    def elsewhere(self) -> bool:
        """The new landing set shares no node with the old one (both non-empty)."""
        old, new = self.landing(False), self.landing(True)
        return bool(old) and bool(new) and not (old & new)  # type: ignore[operator]

    def unschedulable(self) -> bool:
        """Some node passed before, none now."""
        return bool(self.old_passed) and self.new_passed is not None and not self.new_passed

    def changed(self) -> bool:
        return bool(self.filter_changed or self.score_deltas or self.preempt_changed)


@dataclass
class ReplayReport:
    """The diff of a whole capture: per pod (``namespace/name``), counts per verb, skipped lines."""

    pods: dict[str, PodDiff] = field(default_factory=dict)
    verbs: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, int]:
        """Pods replayed, changed, landing elsewhere, becoming unschedulable."""
        return {
            "pods": len(self.pods),
            "changed": sum(1 for d in self.pods.values() if d.changed()),
            "landElsewhere": sum(1 for d in self.pods.values() if d.elsewhere()),
            "becomeUnschedulable": sum(1 for d in self.pods.values() if d.unschedulable()),
        }

    def as_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (``replay --capture --json``)."""
        pods: dict[str, Any] = {}
        for key, d in sorted(self.pods.items()):
            old, new = d.landing(False), d.landing(True)
            pods[key] = {
                "filterChanged": {n: list(v) for n, v in sorted(d.filter_changed.items())},
                "scoreDeltas": {n: list(v) for n, v in sorted(d.score_deltas.items())},
                "preemptChanged": {n: [o, w] for n, (o, w) in sorted(d.preempt_changed.items())},
                "landing": {"old": _sorted(old), "new": _sorted(new)},
                "landsElsewhere": d.elsewhere(),
                "becomesUnschedulable": d.unschedulable(),
            }
        return {"summary": self.summary(), "requests": self.verbs, "skipped": self.skipped, "pods": pods}

    def text(self, limit: int = 10) -> str:
        """The report for people: changed pods only, then the summary."""
        lines = [
            "replayed "
            + ", ".join(f"{n} {verb}" for verb, n in sorted(self.verbs.items()))
            + (
                f"; skipped {', '.join(f'{n} {why}' for why, n in sorted(self.skipped.items()))}"
                if self.skipped
                else ""
            )
        ]
        for key, d in sorted(self.pods.items()):
            if not d.changed():
                continue
            lines.append(f"pod {key}:")
            if d.filter_changed:
                lines.append(f"  filter: {len(d.filter_changed)} node(s) changed verdict")
                for node, (old, new) in sorted(d.filter_changed.items())[:limit]:
                    lines.append(f"    {node}: {old} -> {new}")
            if d.score_deltas:
                deltas = sorted(d.score_deltas.items(), key=lambda kv: (-abs(kv[1][1] - kv[1][0]), kv[0]))
                shown = ", ".join(f"{n} {o}->{w} ({w - o:+d})" for n, (o, w) in deltas[:limit])
                lines.append(f"  prioritize: {len(deltas)} score(s) changed: {shown}")
            was, now = d.landing(False), d.landing(True)
            if was != now:
                lines.append(f"  top: {_names(was)} -> {_names(now)}")
            for node, (before, after) in sorted(d.preempt_changed.items())[:limit]:
                lines.append(f"  preempt {node}: victims {before or 'dropped'} -> {after or 'dropped'}")
        s = self.summary()
        lines.append(
            f"summary: {s['changed']} of {s['pods']} pod(s) decided differently; {s['landElsewhere']} would land "
            f"elsewhere; {s['becomeUnschedulable']} would become unschedulable"
        )
        return "\n".join(lines) + "\n"


def _verdict(verdict: tuple[str, str]) -> str:
    return f"{verdict[0]} ({verdict[1]})" if verdict[1] else verdict[0]


def _sorted(nodes: set[str] | None) -> list[str] | None:
    return sorted(nodes) if nodes is not None else None


def _names(nodes: set[str] | None) -> str:
    if nodes is None:
        return "(no filter captured)"
    if not nodes:
        return "(none: unschedulable)"
    shown = sorted(nodes)
    return ", ".join(shown[:3]) + (f" (+{len(shown) - 3})" if len(shown) > 3 else "")


def read_capture(paths: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The captured lines of ``paths`` in order (rotated files first when given oldest first).
    Raises ``ValueError`` naming the file and line for a line that is not JSON."""
    for path in paths:
        with Path(path).open("rb") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    yield orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{number}: not a captured line: {exc}") from None


def filter_verdicts(answer: Any) -> Verdicts | None:
    """node -> (verdict, reason) of an ``ExtenderFilterResult``; ``None`` for an ``Error`` answer."""
    if not isinstance(answer, dict) or answer.get("Error"):
        return None
    out: Verdicts = {}
    nodes = answer.get("Nodes") or {}
    for item in nodes.get("items") or [] if isinstance(nodes, dict) else []:
        out[str(((item or {}).get("metadata") or {}).get("name"))] = ("Success", "")
    for name in answer.get("NodeNames") or []:
        out[str(name)] = ("Success", "")
    for name, reason in (answer.get("FailedNodes") or {}).items():
        out[name] = ("Unschedulable", str(reason))
    for name, reason in (answer.get("FailedAndUnresolvableNodes") or {}).items():
        out[name] = ("UnschedulableAndUnresolvable", str(reason))
    return out


def _scores(answer: Any) -> dict[str, int]:
    return {str(h["Host"]): int(h["Score"]) for h in answer} if isinstance(answer, list) else {}


def _victims(answer: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for node, meta in ((answer or {}).get("NodeNameToMetaVictims") or {}).items():
        out[node] = sorted(str(p.get("UID")) for p in (meta or {}).get("Pods") or [])
    return out


def _answer_json(answer: Answer) -> Any:
    body = answer.body if isinstance(answer.body, bytes) else b"".join(bytes(c) for c in answer.body)
    return orjson.loads(body)


def replay_capture(
    service: ExtenderService, lines: Iterable[dict[str, Any]], profile: str | None = None
) -> ReplayReport:
    """Answer every captured request again with ``service`` (the other configuration) and diff
    (module doc). ``profile`` overrides each line's profile. Lines of other verbs, non-200
    answers and unknown profiles are counted in ``skipped``."""
    report = ReplayReport()
    for line in lines:
        verb_name = str(line.get("verb"))
        if verb_name not in ("filter", "prioritize", "preempt"):
            report.skipped[f"{verb_name} lines"] = report.skipped.get(f"{verb_name} lines", 0) + 1
            continue
        if line.get("status") != 200:
            report.skipped["non-200 answers"] = report.skipped.get("non-200 answers", 0) + 1
            continue
        verb = VERBS[verb_name]
        target = service.resolve(profile or line.get("profile"), verb_name)
        if not isinstance(target, Framework):
            report.skipped["unknown profile"] = report.skipped.get("unknown profile", 0) + 1
            continue
        body = orjson.dumps(line.get("request"))
        new = verb.run(service, target, body)
        if new.status != 200 or new.pod is None:
            report.skipped["requests the new configuration refused"] = (
                report.skipped.get("requests the new configuration refused", 0) + 1
            )
            continue
        report.verbs[verb_name] = report.verbs.get(verb_name, 0) + 1
        diff = report.pods.setdefault(new.pod.key(), PodDiff())
        old_answer, new_answer = line.get("answer"), _answer_json(new)
        if verb_name == "filter":
            old, now = filter_verdicts(old_answer), filter_verdicts(new_answer)
            if old is None or now is None:  # an Error answer: every node of the request errs
                errs = dict.fromkeys(_request_names(body), ("Error", ""))
                old, now = old or errs, now or errs
            diff.filter_changed = {
                n: (_verdict(old[n]), _verdict(now[n])) for n in old.keys() & now.keys() if old[n][0] != now[n][0]
            }
            diff.old_passed = {n for n, v in old.items() if v[0] == "Success"}
            diff.new_passed = {n for n, v in now.items() if v[0] == "Success"}
        elif verb_name == "prioritize":
            old_scores, new_scores = _scores(old_answer), _scores(new_answer)
            diff.old_scores, diff.new_scores = old_scores, new_scores
            diff.score_deltas = {
                n: (old_scores[n], new_scores[n])
                for n in old_scores.keys() & new_scores.keys()
                if old_scores[n] != new_scores[n]
            }
        else:
            was, now_victims = _victims(old_answer), _victims(new_answer)
            diff.preempt_changed = {
                n: (was.get(n, []), now_victims.get(n, []))
                for n in was.keys() | now_victims.keys()
                if was.get(n) != now_victims.get(n)
            }
    return report


def _request_names(body: bytes) -> list[str]:
    try:
        return codec.decode_extender_args(body, keep_raw=False).node_name_list()
    except codec.DecodeError:
        return []


__all__ = ["PodDiff", "ReplayReport", "filter_verdicts", "read_capture", "replay_capture"]

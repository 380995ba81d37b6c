"""The ``/explain`` answer's documented shape (pydantic models, in the OpenAPI document) and its
rendering as a table for people (``python -m app explain``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class PodIdentity(_Model):
    """The pod explained."""

    namespace: str
    name: str
    uid: str = ""


class AuditVerdict(_Model):
    """What a plugin the profile audits (``enforcement: audit``) would have decided of the node:
    the rejection it would have made (``verdict``, ``reason``, ``reasonCode``), never applied."""

    plugin: str
    verdict: str
    reason: str
    reason_code: str = Field(alias="reasonCode")


class NodeDecision(_Model):
    """One node in one attempt. Filter: ``verdict`` (``Success``, ``Unschedulable``,
    ``UnschedulableAndUnresolvable``), and for a rejection the ``plugin`` that decided, its
    ``reason`` (the text kube-scheduler received) and ``reasonCode`` (short and stable).
    Prioritize: ``scores`` (plugin -> 0..100 after NormalizeScore) and the final ``score``: from
    the extender 0..10, what kube-scheduler received (it multiplies it by the extender's weight);
    from the standalone scheduler the ``TotalScore``, the sum of weight x 0..100 it compared."""

    verdict: str | None = None
    plugin: str | None = None
    reason: str | None = None
    reason_code: str | None = Field(default=None, alias="reasonCode")
    scores: dict[str, int] | None = None
    score: int | None = None
    audit: list[AuditVerdict] | None = None


class Attempt(_Model):
    """One verb's decision for the pod: when (RFC 3339, UTC), which profile and verb, per node,
    the ``outcome`` in brief (filter ``passed``/``rejected``; prioritize ``topNodes``/``topScore``;
    preempt ``victims`` (node -> UIDs) and ``dropped`` (node -> plugin); bind ``boundNode``;
    ``error`` when the answer carried one) and the time taken in seconds. A filter of a profile
    that audits plugins: ``outcome.audit`` (plugin -> ``wouldReject``/``wouldAdmit`` node counts),
    each node's ``audit`` (the rejections those plugins would have made) and, once the pod was seen
    bound to a node one of them would have rejected, ``outcome.auditViolated`` (plugin -> node)."""

    time: str
    profile: str
    verb: str
    duration_seconds: float = Field(alias="durationSeconds")
    nodes: dict[str, NodeDecision]
    outcome: dict[str, Any]


class Explanation(_Model):
    """``GET /explain/{namespace}/{name}``: the pod's recent attempts, oldest first."""

    pod: PodIdentity
    attempts: list[Attempt]


def render(explanation: dict[str, Any], top: int = 5) -> str:
    """``explanation`` (the ``/explain`` JSON) as text a person reads in one look: per attempt,
    filter's nodes grouped by reason with counts, as kube-scheduler's "0/N nodes are available:
    ..." (most first), prioritize's ``top`` nodes with their per-plugin scores, and the outcome."""
    pod = explanation.get("pod", {})
    lines = [f"pod {pod.get('namespace')}/{pod.get('name')}" + (f" (uid {pod['uid']})" if pod.get("uid") else "")]
    for attempt in explanation.get("attempts", []):
        nodes: dict[str, dict[str, Any]] = attempt.get("nodes", {})
        outcome: dict[str, Any] = attempt.get("outcome", {})
        head = (
            f"{attempt.get('time')}  {attempt.get('verb')}  profile {attempt.get('profile')}"
            f"  {1000 * float(attempt.get('durationSeconds', 0)):.1f} ms"
        )
        lines += ["", head]
        if outcome.get("error"):
            lines.append(f"  error: {outcome['error']}")
        verb = attempt.get("verb")
        if verb == "filter" and nodes:
            passed = sorted(n for n, d in nodes.items() if d.get("verdict") == "Success")
            groups: dict[tuple[str, str], list[str]] = {}
            for name, d in nodes.items():
                if d.get("verdict") != "Success":
                    groups.setdefault((str(d.get("reason")), str(d.get("plugin"))), []).append(name)
            lines.append(f"  {len(passed)}/{len(nodes)} nodes passed" + (": " + _names(passed) if passed else ""))
            for (reason, plugin), names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
                lines.append(f"  {len(names):>5}  {reason}  [{plugin}]  {_names(sorted(names))}")
            lines += _audit_lines(nodes, outcome, top)
        elif verb == "prioritize" and nodes:
            ranked = sorted(nodes.items(), key=lambda kv: (-(kv[1].get("score") or 0), kv[0]))[:top]
            plugins = sorted({p for _, d in ranked for p in (d.get("scores") or {})})
            rows = [["node", "score", *plugins]]
            rows += [
                [n, str(d.get("score")), *(str((d.get("scores") or {}).get(p, "-")) for p in plugins)]
                for n, d in ranked
            ]
            widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
            lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
            if len(nodes) > top:
                lines.append(f"  ({len(nodes) - top} more nodes)")
        elif verb == "preempt":
            victims: dict[str, list[str]] = outcome.get("victims", {})
            lines.append(f"  {len(victims)} candidate node(s) kept")
            for node, uids in sorted(victims.items()):
                lines.append(
                    f"    {node}: {len(uids)} victim(s) {', '.join(uids[:5])}{' ...' if len(uids) > 5 else ''}"
                )
            for node, plugin in sorted(outcome.get("dropped", {}).items()):
                lines.append(f"    {node}: dropped by {plugin}")
        elif verb == "bind" and outcome.get("boundNode"):
            lines.append(f"  bound to {outcome['boundNode']}")
    if not explanation.get("attempts"):
        lines.append("no attempts recorded")
    return "\n".join(lines) + "\n"


def _audit_lines(nodes: dict[str, dict[str, Any]], outcome: dict[str, Any], top: int) -> list[str]:
    """A filter's audit verdicts: per audited plugin, its counts, then ``audit: P would have
    rejected node X: reason`` for its first ``top`` x 4 nodes by name, then a count of the rest;
    and the nodes the pod was bound to though an audited plugin would have rejected them."""
    lines: list[str] = []
    limit = max(top, 1) * 4
    for plugin, counts in sorted((outcome.get("audit") or {}).items()):
        reject, admit = counts.get("wouldReject", 0), counts.get("wouldAdmit", 0)
        lines.append(f"  audit: {plugin} (not enforced) would reject {reject}, admit {admit} of {len(nodes)} nodes")
        rejected = sorted(
            (name, verdict)
            for name, d in nodes.items()
            for verdict in d.get("audit") or ()
            if verdict.get("plugin") == plugin
        )
        for name, verdict in rejected[:limit]:
            lines.append(f"  audit: {plugin} would have rejected node {name}: {verdict.get('reason')}")
        if len(rejected) > limit:
            lines.append(f"  audit: {plugin} would have rejected {len(rejected) - limit} more nodes")
    for plugin, node in sorted((outcome.get("auditViolated") or {}).items()):
        lines.append(f"  audit: {plugin} violated: the pod was bound to node {node}, which it would have rejected")
    return lines


def _names(names: list[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


__all__ = ["Attempt", "AuditVerdict", "Explanation", "NodeDecision", "PodIdentity", "render"]

"""``shadow-report``'s content: the agreement rate over a set of shadow records and the pods on
which the profile disagreed with the scheduler that bound them, as JSON (:func:`report`) and as
text (:func:`render`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.shadow.record import AGREEMENTS, ERROR, FEASIBLE, INFEASIBLE, SAME, ShadowRecord


def report(records: Iterable[ShadowRecord]) -> dict[str, Any]:
    """The report: ``shadowed`` (records with an agreement), ``counts`` (agreement -> records,
    ``error`` included), ``agreementRate`` (``same`` / the records counted; ``None`` for none),
    ``profiles`` and ``schedulers`` seen, and ``disagreements``: per pod that was not ``same``
    (``error`` ones too), its namespace/name, the bound and the chosen node, their
    ``TotalScore``, the bound node's rank, and the plugin that made the difference (the one whose
    weighted score difference is the largest, or the one that rejected the bound node) with its
    reason or score difference."""
    counts = dict.fromkeys((*AGREEMENTS, ERROR), 0)
    disagreements: list[dict[str, Any]] = []
    profiles: dict[str, None] = {}
    schedulers: dict[str, None] = {}
    for r in records:
        counts[r.agreement] = counts.get(r.agreement, 0) + 1
        profiles.setdefault(r.profile)
        schedulers.setdefault(r.scheduler_name)
        if r.agreement == SAME:
            continue
        item: dict[str, Any] = {
            "pod": f"{r.namespace}/{r.name}",
            "agreement": r.agreement,
            "profile": r.profile,
            "boundNode": r.bound_node,
            "boundTotal": r.bound_total,
            "chosenNode": r.chosen_node,
            "chosenTotal": r.chosen_total,
            "rank": r.rank,
            "feasibleNodes": r.feasible_nodes,
            "difference": r.difference,
        }
        if r.agreement == INFEASIBLE:
            item["reason"] = r.rejected_reason
        elif r.agreement == FEASIBLE:
            item["differenceScore"] = r.difference_score
        elif r.error:
            item["error"] = r.error
        disagreements.append(item)
    counted = sum(counts[a] for a in AGREEMENTS)
    return {
        "shadowed": counted,
        "counts": counts,
        "agreementRate": round(counts[SAME] / counted, 6) if counted else None,
        "profiles": list(profiles),
        "schedulers": list(schedulers),
        "disagreements": disagreements,
    }


def render(body: dict[str, Any]) -> str:
    """:func:`report`'s body as text: the agreement line, then one line per disagreement."""
    counts = body.get("counts", {})
    rate = body.get("agreementRate")
    shown = "n/a" if rate is None else f"{100 * rate:.1f}%"
    lines = [
        f"shadowed {body.get('shadowed', 0)} binds of {', '.join(body.get('schedulers', [])) or '-'} "
        f"with profile {', '.join(body.get('profiles', [])) or '-'}: agreement {shown}",
        "  " + "  ".join(f"{a} {counts.get(a, 0)}" for a in (*AGREEMENTS, ERROR)),
    ]
    disagreements = body.get("disagreements", [])
    if disagreements:
        lines.append("")
        lines.append(f"disagreements ({len(disagreements)}):")
    for d in disagreements:
        bound = f"bound to {d['boundNode']}" + (f" ({d['boundTotal']}, rank {d['rank']})" if d.get("rank") else "")
        chosen = f"would choose {d['chosenNode'] or 'no node'}" + (
            f" ({d['chosenTotal']})" if d.get("chosenTotal") is not None else ""
        )
        if d["agreement"] == INFEASIBLE:
            why = f"{d['difference'] or '-'}: {d.get('reason', '')}"
        elif d["agreement"] == FEASIBLE:
            why = f"{d['difference']} {d.get('differenceScore', 0):+d}"
        else:
            why = f"error: {d.get('error', '')}"
        lines.append(f"  {d['pod']}  {d['agreement']}  {bound}; {chosen}; {why}")
    return "\n".join(lines) + "\n"


def render_explained(explanation: dict[str, Any]) -> str:
    """The shadow attempts of an ``/explain`` answer (verb ``shadow``) as text, one block each:
    where the pod was bound and by whom, the agreement, the profile's choice, the bound node's
    rank and the plugin that made the difference; ``""`` when there are none (what ``explain``
    prints after the other attempts)."""
    lines: list[str] = []
    for attempt in explanation.get("attempts", []):
        if attempt.get("verb") != "shadow":
            continue
        o: dict[str, Any] = attempt.get("outcome", {})
        lines += [
            "",
            f"{attempt.get('time')}  shadow of {o.get('schedulerName', '?')}'s bind  profile {attempt.get('profile')}",
        ]
        lines.append(f"  bound to {o.get('boundNode')}: {o.get('agreement')}")
        if o.get("chosenNode"):
            lines.append(f"  would choose {o['chosenNode']} (TotalScore {o.get('chosenTotal')})")
        if o.get("rank"):
            feasible, total = o.get("feasibleNodes"), o.get("boundTotal")
            lines.append(f"  bound node ranked {o['rank']} of {feasible} feasible (TotalScore {total})")
        if o.get("agreement") == INFEASIBLE:
            lines.append(f"  rejected by {o.get('rejectedBy') or '-'}: {o.get('rejectedReason', '')}")
        elif o.get("agreement") == FEASIBLE:
            lines.append(f"  difference: {o.get('difference')} {o.get('differenceScore', 0):+d}")
        if o.get("error"):
            lines.append(f"  error: {o['error']}")
    return "\n".join(lines) + "\n" if lines else ""


__all__ = ["render", "render_explained", "report"]

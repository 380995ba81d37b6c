"""``replay``: run a recorded request body through a configuration offline, through the server's
own path (:func:`answer`: the same limits, profile resolution, decoding and verb handlers, so
replay answers exactly what the server would, and exits 1 when that is an error); send it to a
running service (``--url``); or diff captured traffic against another configuration
(``--capture``, :mod:`app.tools.capture_diff`).

Offline, the service is assembled as ``serve`` would (:func:`app.bootstrap.build_service`) but
not connected: cluster state comes from ``--cluster-state`` files (:func:`load_cluster_state`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import orjson
import yaml

from app.api.edge import INTERNAL_ERROR, body_too_large
from app.api.service import Answer, ExtenderService
from app.api.verbs import VERBS
from app.bootstrap import build_service
from app.cluster.podgroups import PodGroup
from app.config import did_you_mean
from app.extender import codec
from app.framework import objects
from app.observe.decisions import Decision

log = logging.getLogger(__name__)


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def load_cluster_state(service: ExtenderService, paths: Sequence[str]) -> None:
    """Seed the service's cluster state from files instead of an API server (``replay``).

    Each file is JSON or YAML: a ``List`` (``kubectl get nodes,pods -A -o json``), a
    ``NodeList``/``PodList``, or a single object; items of kind ``Node``, ``Pod`` and ``PodGroup``
    (``scheduling.x-k8s.io``) are loaded, others ignored. Raises ``SystemExit`` with a message when
    the configuration has no ``cluster:`` section or a file cannot be read.
    """
    cluster = service.cluster
    if cluster is None:
        raise SystemExit("error: --cluster-state needs a configuration with a `cluster:` section")
    nodes: list[objects.Node] = []
    pods: list[objects.Pod] = []
    groups: list[Any] = []
    for path in paths:
        try:
            doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise SystemExit(f"error: cannot read {path}: {exc}") from exc
        items = doc.get("items", [doc]) if isinstance(doc, dict) else []
        kind_of_list = str(doc.get("kind", "")) if isinstance(doc, dict) else ""
        for item in items or []:
            kind = item.get("kind") or kind_of_list.removesuffix("List")
            try:
                if kind == "Node":
                    nodes.append(msgspec.convert(item, objects.Node))
                elif kind == "Pod":
                    pods.append(msgspec.convert(item, objects.Pod))
                elif kind == "PodGroup":
                    groups.append(msgspec.convert(item, PodGroup))
            except msgspec.ValidationError as exc:
                raise SystemExit(f"error: {path}: a {kind} is malformed: {exc}") from exc
    try:
        cluster.cache.seed(nodes, pods)
    except ValueError as exc:  # a malformed quantity in a pod's requests
        raise SystemExit(f"error: --cluster-state: {exc}") from exc
    if cluster.podgroups is not None:
        if groups:
            cluster.podgroups.replace(groups)
            cluster.podgroups.mark_synced("podgroups")
        else:
            cluster.podgroups.missing("no PodGroups in --cluster-state")


def replay(args: argparse.Namespace) -> int:
    if bool(args.capture) == bool(args.body):
        print("error: give a request body file or --capture FILE (not both)", file=sys.stderr)
        return 2
    if args.capture:
        return _replay_capture(args)
    if args.url:
        return _replay_remote(args.url, args.profile, Path(args.body).read_bytes(), args.body)
    decisions: list[Decision] = []
    service = build_service(args.config, listeners=[decisions.append])
    if (refused := _unknown_profile(service, args.profile)) is not None:
        print(refused, file=sys.stderr)
        return 2
    if args.cluster_state:
        load_cluster_state(service, args.cluster_state)
    elif service.cluster is not None:
        print(
            "note: the configuration has cluster state but --cluster-state was not given: "
            "replaying against an empty cluster",
            file=sys.stderr,
        )
        load_cluster_state(service, [])
    body = Path(args.body).read_bytes()
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        print(f"error: {args.body} is not JSON: {exc}", file=sys.stderr)
        return 1
    _one_line_logs()
    keys = {k.casefold() for k in doc} if isinstance(doc, dict) else set()
    if keys & {"nodenametovictims", "nodenametometavictims"}:
        return _replay_preempt(service, args.profile, body, decisions, args.json)
    if "podname" in keys:
        target = service.resolve(args.profile, "bind")
        if isinstance(target, Answer):  # answered without binding: exactly what the server says
            return _report({"bind": target}, args.json)
        print("error: bind bodies are not replayed offline (binding needs a cluster)", file=sys.stderr)
        return 1
    return _replay_args(service, args.profile, body, args.verb, decisions, args.json)


def _unknown_profile(service: ExtenderService, profile: str | None) -> str | None:
    """The usage error for ``--profile`` naming no profile (or for no ``--profile`` when the
    configuration has no default profile), listing the profiles; ``None`` when it names one."""
    names = list(service.frameworks)
    if profile is None:
        if service.default_profile is not None:
            return None
        return f"error: no default profile: choose one with --profile (profiles: {', '.join(names)})"
    if profile in service.frameworks:
        return None
    return f"error: unknown profile {profile!r}{did_you_mean(profile, names)}: the profiles are {', '.join(names)}"


class _OneLine(logging.Formatter):
    """``warning: message (ExceptionClass: text)``: what a plugin's failure logs, without a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"{record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" ({type(exc).__name__}: {exc})"
        return text


def _one_line_logs() -> None:
    """Warnings and errors of the verb path (a plugin that erred, a failure ignored) to standard
    error, one line each: replay prints what the server would log, never a traceback."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(logging.WARNING)


def answer(service: ExtenderService, verb_name: str, profile: str | None, body: bytes) -> Answer:
    """What the server answers ``POST /{profile}/{verb}`` (``profile`` ``None``: ``/{verb}``) with
    ``body``: the same limits, profile resolution, decoding and handler (:data:`VERBS`), and the
    same 500 for a failure of ours or a plugin's. Blocking verbs only (filter, prioritize, preempt)."""
    verb = VERBS[verb_name]
    limit = service.config.server.max_request_bytes
    if len(body) > limit:
        return verb.error(413, body_too_large(limit))
    target = service.resolve(profile, verb.name)
    if isinstance(target, Answer):
        return target
    try:
        return verb.run(service, target, body)
    except Exception:
        log.exception("%s on profile %s failed", verb.name, target.profile)
        return verb.error(500, INTERNAL_ERROR.format(verb=verb.name))


def _decoded(a: Answer) -> Any:
    return orjson.loads(codec.join(a.body))


def _report(answers: dict[str, Answer], as_json: bool) -> int:
    """With ``--json``: the answers as ``{verb: {"status", "answer"}}``; else, for an error answer,
    the verb, its HTTP status and ``Error``. Exit 1 when an answer is an error, else 0."""
    if as_json:
        out = {verb: {"status": a.status, "answer": _decoded(a)} for verb, a in answers.items()}
        print(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode())
    failed = [(verb, a) for verb, a in answers.items() if a.error]
    if not as_json:
        for verb, a in failed:
            doc = _decoded(a)
            error = doc.get("Error", "") if isinstance(doc, dict) else ""
            print(f"{verb} answers HTTP {a.status} with Error: {error}")
    return 1 if failed else 0


def _replay_capture(args: argparse.Namespace) -> int:
    """``replay --capture FILE... --config NEW``: the decisions NEW would change (app.tools.capture_diff)."""
    from app.tools.capture_diff import read_capture, replay_capture

    service = build_service(args.config)
    if service.cluster is not None:
        load_cluster_state(service, args.cluster_state or [])
    try:
        report = replay_capture(service, read_capture(args.capture), args.profile)
    except ValueError as exc:  # a line that is not JSON (an OSError is reported by main)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(orjson.dumps(report.as_json(), option=orjson.OPT_INDENT_2).decode())
    else:
        print(report.text(), end="")
    return 0


def _replay_args(
    service: ExtenderService,
    profile: str | None,
    body: bytes,
    verb: str,
    decisions: list[Decision],
    as_json: bool,
) -> int:
    """Filter, then prioritize with the nodes that passed (as kube-scheduler calls them), or the
    one ``verb``, through :func:`answer`; a per-node table of the answers (or them as JSON)."""
    answers: dict[str, Answer] = {}
    if verb in ("filter", "all"):
        answers["filter"] = answer(service, "filter", profile, body)
        if answers["filter"].error or answers["filter"].status != 200:
            return _report(answers, as_json)
    filtered = _decoded(answers["filter"]) if "filter" in answers else None
    scored_body = body
    if filtered is not None:
        doc = orjson.loads(body)
        for key in list(doc):
            if key.casefold() in ("nodes", "nodenames"):
                del doc[key]
        doc["Nodes"], doc["NodeNames"] = filtered.get("Nodes"), filtered.get("NodeNames")
        survivors = (doc["Nodes"] or {}).get("items") or doc["NodeNames"] or []
        scored_body = orjson.dumps(doc) if survivors else b""
    if verb in ("prioritize", "all") and scored_body:  # kube-scheduler prioritizes only survivors
        answers["prioritize"] = answer(service, "prioritize", profile, scored_body)
    if as_json or any(a.error for a in answers.values()):
        return _report(answers, as_json)
    view = codec.decode_extender_args(body, service.limits, keep_raw=False)  # it decoded for the verbs
    names = view.node_name_list()
    framework = service.frameworks[profile or str(service.default_profile)]
    scheduler_name = next((p.scheduler_name for p in service.config.profiles if p.name == framework.profile), None)
    print(
        f"pod {view.pod.key()}  profile {framework.profile}  nodes {len(names)}  mode "
        f"{'NodeNames (nodeCacheCapable: true)' if view.node_names else 'Nodes (nodeCacheCapable: false)'}"
    )
    if scheduler_name:
        print(
            f"note: profile {framework.profile} schedules the pods of schedulerName {scheduler_name} itself "
            "(python -m app schedule), kube-scheduler never calls it: its Filter and Score answered as the "
            "extender's verbs; the scheduler binds a passing node of the highest TOTAL (the weighted sum)"
        )
    verdicts = ["-"] * len(names)
    reasons = [""] * len(names)
    if filtered is not None:
        failed = filtered.get("FailedNodes") or {}
        unresolvable = filtered.get("FailedAndUnresolvableNodes") or {}
        plugins = {}
        for d in decisions:
            if d.verb == "filter":
                plugins = {n: s.plugin for n, s in zip(d.node_names(), d.statuses, strict=False) if s.plugin}
                for plugin, n in d.ignored.items():
                    print(f"note: {plugin} erred on {n} node(s), ignored (failurePolicy Ignore)")
        for i, name in enumerate(names):
            if name in unresolvable:
                verdicts[i], reasons[i] = "UnschedulableAndUnresolvable", _reason(plugins.get(name), unresolvable[name])
            elif name in failed:
                verdicts[i], reasons[i] = "Unschedulable", _reason(plugins.get(name), failed[name])
            else:
                verdicts[i] = "pass"
    scores: dict[str, str] = {}
    per_plugin: dict[str, dict[str, int]] = {}
    if "prioritize" in answers:
        scores = {h["Host"]: str(h["Score"]) for h in _decoded(answers["prioritize"])}
        for d in decisions:
            if d.verb == "prioritize":
                scored_names = d.node_names()
                unknown = set(d.unknown)
                resolved = [n for i, n in enumerate(scored_names) if i not in unknown]
                per_plugin = {p: dict(zip(resolved, values, strict=False)) for p, values in d.plugin_scores.items()}
                for ep in framework.score_plugins:
                    if ep.name not in d.plugin_scores:
                        print(f"note: {ep.name} did not score (its PreScore skipped the pod, or its error was ignored)")
    weights = {ep.name: ep.weight for ep in framework.score_plugins}
    totals = {
        name: str(sum(weights.get(p, 1) * per_plugin[p][name] for p in per_plugin if name in per_plugin[p]))
        for name in scores
    }
    rows = [
        [
            name,
            verdicts[i],
            *(str(per_plugin[p].get(name, "")) for p in per_plugin),
            *([totals.get(name, "")] if scheduler_name else []),
            scores.get(name, ""),
            reasons[i],
        ]
        for i, name in enumerate(names)
    ]
    header = [
        "NODE",
        "FILTER",
        *(f"{p}(0-100)" for p in per_plugin),
        *(["TOTAL"] if scheduler_name else []),
        "SCORE(0-10)",
        "REASON",
    ]
    print(_table(rows, header))
    if filtered is not None:
        print(f"{verdicts.count('pass')}/{len(names)} nodes pass")
    return 0


def _reason(plugin: str | None, message: str) -> str:
    """A rejected node's reason as the answer gives it, prefixed with the plugin that rejected it."""
    return f"{plugin}: {message}" if plugin and not message.startswith(f"{plugin}:") else message


def _replay_remote(url: str, profile: str | None, body: bytes, name: str) -> int:
    """POST a recorded ExtenderArgs body to a running service as kube-scheduler would: filter,
    then prioritize with the nodes that passed; print the per-node verdicts and scores."""
    import httpx

    try:
        doc = orjson.loads(body)
        names = codec.decode_extender_args(body, keep_raw=False).nodes
    except (orjson.JSONDecodeError, codec.DecodeError) as exc:
        print(f"error: {name} is not an ExtenderArgs body: {exc}", file=sys.stderr)
        return 1
    base = url.rstrip("/") + (f"/{profile}" if profile else "")
    headers = {"Content-Type": "application/json"}
    try:
        with httpx.Client(timeout=30) as client:
            r = client.post(f"{base}/filter", content=body, headers=headers)
            if r.status_code != 200:
                print(f"POST {base}/filter: HTTP {r.status_code}: {r.text[:500]}")
                return 1
            result = r.json()
            if result.get("Error"):
                print(f"POST {base}/filter answered Error: {result['Error']}")
                return 0
            doc["Nodes"], doc["NodeNames"] = result.get("Nodes"), result.get("NodeNames")
            p = client.post(f"{base}/prioritize", content=orjson.dumps(doc), headers=headers)
    except httpx.HTTPError as exc:
        print(f"error: cannot reach {base}: {exc}", file=sys.stderr)
        return 1
    scores = {h["Host"]: str(h["Score"]) for h in p.json()} if p.status_code == 200 else {}
    failed = result.get("FailedNodes") or {}
    unresolvable = result.get("FailedAndUnresolvableNodes") or {}
    rows = []
    for node in names:
        if node.name in unresolvable:
            verdict, reason = "UnschedulableAndUnresolvable", unresolvable[node.name]
        elif node.name in failed:
            verdict, reason = "Unschedulable", failed[node.name]
        else:
            verdict, reason = "pass", ""
        rows.append([node.name, verdict, scores.get(node.name, ""), reason])
    print(f"{name} -> {base}/filter, then /prioritize with the {len(scores)} node(s) that passed")
    print(_table(rows, ["NODE", "FILTER", "SCORE(0-10)", "REASON"]))
    if p.status_code != 200:
        print(f"prioritize: HTTP {p.status_code}")
    return 0


def _replay_preempt(
    service: ExtenderService, profile: str | None, body: bytes, decisions: list[Decision], as_json: bool
) -> int:
    """Preempt through :func:`answer`: a table of the candidates in and the victims the answer keeps."""
    result = answer(service, "preempt", profile, body)
    if as_json or result.error:
        return _report({"preempt": result}, as_json)
    view = codec.decode_preemption_args(body, service.limits)  # it decoded for the verb
    kept = _decoded(result).get("NodeNameToMetaVictims") or {}
    dropped = next((d.dropped for d in decisions if d.verb == "preempt"), {})
    name = profile or service.default_profile
    print(f"preemptor {view.pod.key()} (priority {view.pod.priority})  profile {name}")
    rows = []
    for node, victims in view.candidates.items():
        out = kept.get(node)
        rows.append(
            [
                node,
                str(len(victims.pods)),
                str(len(out["Pods"] or [])) if out else "-",
                str(out["NumPDBViolations"]) if out else "-",
                "kept" if out else f"dropped by {dropped.get(node, '?')}",
            ]
        )
    print(_table(rows, ["NODE", "VICTIMS IN", "VICTIMS OUT", "PDB VIOLATIONS", "CANDIDATE"]))
    return 0


__all__ = ["answer", "load_cluster_state", "replay"]

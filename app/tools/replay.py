"""``replay``: run a recorded request body through a configuration offline (the same verb code
the server runs), send it to a running service (``--url``), or diff captured traffic against
another configuration (``--capture``, :mod:`app.tools.capture_diff`).

Offline, the service is assembled as ``serve`` would (:func:`app.bootstrap.build_service`) but
not connected: cluster state comes from ``--cluster-state`` files (:func:`load_cluster_state`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import orjson
import yaml

from app.api.service import UNKNOWN_NODE, ExtenderService, resolve_victims
from app.bootstrap import build_service
from app.cluster.podgroups import PodGroup
from app.extender import codec
from app.framework import objects
from app.framework.runtime import Framework, FrameworkError
from app.framework.status import Code
from app.framework.types import NodeInfo


def _framework(service: ExtenderService, profile: str | None) -> Framework:
    name = profile or service.default_profile
    if name is None or name not in service.frameworks:
        raise SystemExit(f"error: choose a profile with --profile ({', '.join(service.frameworks)})")
    return service.frameworks[name]


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
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
        cluster.state.seed(nodes, pods)
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
    service = build_service(args.config)
    if args.cluster_state:
        load_cluster_state(service, args.cluster_state)
    elif service.cluster is not None:
        print(
            "note: the configuration has cluster state but --cluster-state was not given: "
            "replaying against an empty cluster",
            file=sys.stderr,
        )
        load_cluster_state(service, [])
    framework = _framework(service, args.profile)
    body = Path(args.body).read_bytes()
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        print(f"error: {args.body} is not JSON: {exc}", file=sys.stderr)
        return 1
    keys = {k.casefold() for k in doc} if isinstance(doc, dict) else set()
    if keys & {"nodenametovictims", "nodenametometavictims"}:
        return _replay_preempt(service, framework, body)
    if "podname" in keys:
        print("error: bind bodies are not replayed offline (binding needs a cluster)", file=sys.stderr)
        return 1
    return _replay_args(service, framework, body, args.verb)


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


def _replay_args(service: ExtenderService, framework: Framework, body: bytes, verb: str) -> int:
    try:
        view = codec.decode_extender_args(body, keep_raw=False)
    except codec.DecodeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    pod = view.pod
    snapshot = service.cluster.state.snapshot() if service.cluster is not None else None
    resolved = service.resolve_nodes(framework, view, snapshot)
    unknown = resolved.unknown
    nodes = list(resolved.nodes)
    for i in unknown:  # kept in the table, in the request's order, with the service's verdict
        nodes.insert(i, NodeInfo(view.node_name_list()[i]))
    known = [i for i in range(len(nodes)) if i not in set(unknown)]
    print(
        f"pod {pod.key()}  profile {framework.profile}  nodes {len(nodes)}  mode "
        f"{'NodeNames (nodeCacheCapable: true)' if view.node_names else 'Nodes (nodeCacheCapable: false)'}"
    )
    verdicts = ["-"] * len(nodes)
    reasons = [""] * len(nodes)
    for i in unknown:
        verdicts[i], reasons[i] = "UnschedulableAndUnresolvable", UNKNOWN_NODE
    feasible = known
    if verb in ("filter", "all"):
        outcome = framework.run_filter(pod, [nodes[i] for i in known])
        if outcome.error:
            print(f"filter answers Error: {outcome.error}")
            return 0
        feasible = []
        for i, status in zip(known, outcome.statuses, strict=True):
            if status.code is Code.SUCCESS:
                verdicts[i] = "pass"
                feasible.append(i)
            else:
                verdicts[i] = "Unschedulable" if status.code is Code.UNSCHEDULABLE else "UnschedulableAndUnresolvable"
                reasons[i] = f"{status.plugin}: {status.message}"
        for plugin, n in outcome.ignored_errors.items():
            print(f"note: {plugin} erred on {n} node(s), ignored (failurePolicy Ignore)")
    scores: dict[int, str] = {}
    plugin_cols: list[str] = []
    per_plugin: dict[str, dict[int, int]] = {}
    if verb in ("prioritize", "all") and feasible:
        subset = [nodes[i] for i in feasible]
        try:
            scored = framework.run_score(pod, subset)
        except FrameworkError as exc:
            print(f"prioritize answers HTTP 500: {exc}")
            scored = None
        if scored is not None:
            for plugin, why in scored.skipped.items():
                print(f"note: {plugin} did not score: {why}")
            plugin_cols = list(scored.plugin_scores)
            for plugin, values in scored.plugin_scores.items():
                per_plugin[plugin] = {feasible[j]: v for j, v in enumerate(values)}
            scores = {feasible[j]: str(s) for j, s in enumerate(scored.scores)}
    rows = []
    for i, node in enumerate(nodes):
        rows.append(
            [
                node.name,
                verdicts[i],
                *(str(per_plugin[p].get(i, "")) for p in plugin_cols),
                scores.get(i, ""),
                reasons[i],
            ]
        )
    header = ["NODE", "FILTER", *(f"{p}(0-100)" for p in plugin_cols), "SCORE(0-10)", "REASON"]
    print(_table(rows, header))
    if verb in ("filter", "all"):
        print(f"{len(feasible)}/{len(nodes)} nodes pass")
    return 0


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


def _replay_preempt(service: ExtenderService, framework: Framework, body: bytes) -> int:
    dropped: dict[str, str] = {}
    try:
        view = codec.decode_preemption_args(body)
        if service.cluster is not None:
            resolve_victims(view.candidates, service.cluster.state.snapshot())
        result = framework.run_preemption(view.pod, view.candidates, dropped)
    except codec.DecodeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except FrameworkError as exc:
        print(f"preempt answers HTTP 500: {exc}")
        return 0
    print(f"preemptor {view.pod.key()} (priority {view.pod.priority})  profile {framework.profile}")
    rows = []
    for node, victims in view.candidates.items():
        kept = result.get(node)
        rows.append(
            [
                node,
                str(len(victims.pods)),
                str(len(kept.pods)) if kept else "-",
                str(kept.num_pdb_violations) if kept else "-",
                "kept" if kept else f"dropped by {dropped.get(node, '?')}",
            ]
        )
    print(_table(rows, ["NODE", "VICTIMS IN", "VICTIMS OUT", "PDB VIOLATIONS", "CANDIDATE"]))
    return 0


__all__ = ["load_cluster_state", "replay"]

"""Command line: ``python -m app serve | replay | validate | schemas | render |
check-scheduler-config`` (console script ``scheduler-extender``).

- ``serve [--config F] [--host H] [--port P]``: run the service (embedded default without --config).
- ``replay [--config F] [--profile P] [--verb V] BODY.json``: run a recorded request body through a
  profile offline and print a per-node table of verdicts, reasons and scores.
- ``validate F``: check a configuration file; exit 1 with every problem and its field path.
- ``schemas [--out DIR]``: write the JSON Schemas of the wire types and the configuration.
- ``render [--config F] --out DIR``: write the deployment manifests for the configuration
  (KubeSchedulerConfiguration, static pods, second-scheduler variant, RBAC); see
  :mod:`app.deploy.render`.
- ``certs --out DIR [--name N]``: write the CA, server and kube-scheduler client certificates for
  mutual TLS (:mod:`app.deploy.certs`).
- ``check-scheduler-config FILE [--url URL] [--offline]``: preflight a KubeSchedulerConfiguration
  (strict decoding, upstream validation, then the running service); see :mod:`app.deploy.check`.

Exit codes: 0 success, 1 invalid configuration or input, 2 usage error.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import msgspec
import orjson
import yaml

from app import __version__
from app.api.handlers import UNKNOWN_NODE, ExtenderService, resolve_victims
from app.cluster.podgroups import PodGroup
from app.cluster.runtime import ClusterRuntime
from app.config import ConfigError, Configuration, bind_exposure, build_framework, load_config
from app.deploy.render import DEFAULT_KUBERNETES_VERSION
from app.extender import codec
from app.framework import objects
from app.framework.profile import parse_duration
from app.framework.registry import Registry
from app.framework.runtime import Framework, FrameworkError
from app.framework.status import Code
from app.framework.types import NodeInfo
from app.observe.logs import setup_logging
from app.plugins import default_registry


def build_service(config_path: str | None, registry: Registry | None = None) -> ExtenderService:
    """Load the configuration (``None``: the embedded default) and build every profile's framework.

    Raises :class:`ConfigError`.
    """
    registry = registry or default_registry()
    config = load_config(config_path, registry)
    cluster = ClusterRuntime(config.cluster.settings()) if config.cluster is not None else None
    frameworks = {p.name: build_framework(p, registry, cluster) for p in config.profiles}
    return ExtenderService(config, frameworks, cluster, decisions=config.diagnostics.decisions.store())


def _schedule(args: argparse.Namespace) -> int:
    """``schedule``: ``serve`` plus the standalone schedulers of the profiles with ``schedulerName``."""
    return _serve(args, schedule=True)


def _serve(args: argparse.Namespace, schedule: bool = False) -> int:
    from app.api import create_app
    from app.api.server import run

    service = build_service(args.config)
    if schedule and not any(p.scheduler_name for p in service.config.profiles):
        print(
            "error: no profile sets schedulerName: schedule runs a scheduler for the pods whose "
            "spec.schedulerName a profile names (see examples/chaos-scheduler.yaml)",
            file=sys.stderr,
        )
        return 1
    server = service.config.server
    host = args.host or server.host
    port = args.port if args.port is not None else server.port
    setup_logging(server.log_level, server.log_format)
    options: dict[str, Any] = {"log_level": server.log_level, "access_log": server.access_log, "log_config": None}
    if server.tls is not None:
        import ssl

        options |= {"ssl_certfile": server.tls.cert_file, "ssl_keyfile": server.tls.key_file}
        if server.tls.client_ca_file:
            options |= {"ssl_ca_certs": server.tls.client_ca_file, "ssl_cert_reqs": ssl.CERT_REQUIRED}
    log = logging.getLogger(__name__)
    exposure = bind_exposure(service.config)
    if exposure is not None and not server.insecure_bind:
        print(
            f"error: {exposure}. Set server.tls with clientCAFile (python -m app certs makes the files), "
            "or server.insecureBind: true to accept that exposure",
            file=sys.stderr,
        )
        return 1
    if exposure is not None:
        log.warning("server.insecureBind: %s", exposure)
    if service.cluster is not None:
        from app.kube.errors import KubeConfigError

        try:
            service.cluster.connect()
        except KubeConfigError as exc:
            print(f"error: cluster state is configured but {exc}", file=sys.stderr)
            return 1
        events = service.config.diagnostics.events
        if events.enabled:
            recorder = service.cluster.record_events(events.qps, events.burst, parse_duration(events.series_window))
            service.pod_events = recorder.observe
    else:
        for profile in service.config.profiles:
            if profile.extender.node_cache_capable:
                log.warning(
                    "profile %s is nodeCacheCapable without a cluster: section: plugins see node names only",
                    profile.name,
                )
    app = create_app(service)
    schedulers = start_schedulers(service, app.metrics) if schedule else []
    capture = service.config.diagnostics.capture
    if capture.enabled:
        from app.observe.capture import Capture

        app.capture = Capture(
            capture.path, capture.max_bytes, capture.max_files, capture.namespaces, capture.label_selector
        )
        app.capture.start()
        log.warning(
            "capturing filter/prioritize/preempt requests and answers to %s (diagnostics.capture): the files hold "
            "pod and node specs; keep them as sensitive as the cluster's objects",
            capture.path,
        )
    # Everything allocated so far (modules, app, plugins) lives as long as the process: move it out
    # of the collector's reach, so the full collections that large request bodies trigger stay cheap.
    gc.collect()
    gc.freeze()
    # A 500-node request allocates tens of thousands of objects: collect the young generation
    # less often (measured: a few ms less p50 for 100- and 500-node bodies, `make bench`).
    gc.set_threshold(50_000, 50, 100)
    run(app, host, port, options)
    for stop in schedulers:
        stop()
    if app.capture is not None:
        app.capture.stop()
    if service.cluster is not None:
        service.cluster.stop()
    return 0


def _read_lease(client: Any, timeout: float, namespace: str, name: str) -> bytes | None:
    lease: bytes | None = client.get_lease(namespace, name, timeout)
    return lease


def start_schedulers(service: ExtenderService, metrics: Any) -> list[Any]:
    """Start a :class:`~app.scheduling.scheduler.Scheduler` (and, with ``scheduling.leaderElect``,
    its :class:`~app.cluster.leader.LeaseElector`) for every profile with ``schedulerName``;
    returns their stop functions. The cluster connection must be started."""
    import random

    from app.cluster.leader import LeaderElectionSettings, LeaseElector
    from app.scheduling.queue import SchedulingQueue
    from app.scheduling.scheduler import Scheduler

    cluster = service.cluster
    assert cluster is not None and cluster.client is not None
    client = cluster.client
    config = service.config.scheduling
    events_config = service.config.diagnostics.events
    queues: list[SchedulingQueue] = []
    stops: list[Any] = []

    for profile in service.config.profiles:
        name = profile.scheduler_name
        if not name:
            continue
        post: Any = lambda event: None  # noqa: E731
        if events_config.enabled:
            window = parse_duration(events_config.series_window)
            post = cluster.record_events(events_config.qps, events_config.burst, window, reporting_controller=name).post
        elector = None
        if config.leader_elect:
            settings = LeaderElectionSettings(
                lease_name=name,
                lease_namespace=config.lease_namespace,
                lease_duration=config.seconds("lease_duration"),
                renew_deadline=config.seconds("renew_deadline"),
                retry_period=config.seconds("retry_period"),
            )
            elector = LeaseElector(
                settings,
                partial(_read_lease, client, settings.retry_period),
                client.create_lease,
                client.replace_lease,
                on_start=cluster.start_warm_up,
            )
            elector.start()
            stops.append(elector.stop)
        queue = SchedulingQueue(
            config.seconds("pod_initial_backoff"),
            config.seconds("pod_max_backoff"),
            config.seconds("pod_max_in_unschedulable"),
        )
        queues.append(queue)
        scheduler = Scheduler(
            name,
            service.frameworks[profile.name],
            cluster,
            queue,
            record=partial(service.record, pod_events=False),
            events=post,
            set_condition=client.set_pod_condition,
            metrics=metrics,
            is_leader=elector.is_leader if elector is not None else (lambda: True),
            rng=random.Random(),
        )
        scheduler.start()
        stops.insert(0, scheduler.stop)
        logging.getLogger(__name__).info("scheduling the pods of schedulerName %s with profile %s", name, profile.name)

    def counts() -> dict[str, int]:
        total: dict[str, int] = {}
        for q in queues:
            for key, n in q.counts().items():
                total[key] = total.get(key, 0) + n
        return total

    metrics.watch_queues(counts)
    return stops


def _validate(args: argparse.Namespace) -> int:
    service = build_service(args.config)
    config = service.config
    print(f"{args.config}: valid ({len(config.profiles)} profile(s))")
    for profile in config.profiles:
        ext = profile.extender
        print(
            f"  {profile.name}: verbs {', '.join(ext.verbs)}; nodeCacheCapable {str(ext.node_cache_capable).lower()}; "
            f"filter [{', '.join(p.name for p in profile.plugins.filter)}] "
            f"score [{', '.join(p.name for p in profile.plugins.score)}]"
        )
    return 0


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


def _replay(args: argparse.Namespace) -> int:
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
    """``replay --capture FILE... --config NEW``: the decisions NEW would change (app.observe.replay)."""
    from app.observe.replay import read_capture, replay_capture

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


def _explain(args: argparse.Namespace) -> int:
    """``explain NAMESPACE/NAME``: GET ``/explain/...`` from a running service and print it."""
    import httpx

    from app.api.explain import render

    namespace, slash, name = args.pod.partition("/")
    if not slash or not namespace or not name or "/" in name:
        print(f"error: expected NAMESPACE/NAME, got {args.pod!r}", file=sys.stderr)
        return 2
    verify: Any = True
    if args.cacert or args.cert:
        import ssl

        verify = ssl.create_default_context(cafile=args.cacert)
        if args.cert:
            verify.load_cert_chain(args.cert, args.key)
    url = f"{args.url.rstrip('/')}/explain/{quote(namespace, safe='')}/{quote(name, safe='')}"
    try:
        with httpx.Client(timeout=10, verify=verify) as client:
            response = client.get(url)
    except (httpx.HTTPError, OSError) as exc:
        print(f"error: cannot reach {args.url}: {exc}", file=sys.stderr)
        return 1
    if response.status_code != 200:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text[:500]
        print(f"error: HTTP {response.status_code}: {detail}", file=sys.stderr)
        return 1
    if args.json:
        print(orjson.dumps(response.json(), option=orjson.OPT_INDENT_2).decode())
    else:
        print(render(response.json(), top=args.top), end="")
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


def write_schemas(out: Path) -> list[Path]:
    """Write one JSON Schema file per wire type and one for the configuration; returns the paths."""
    from app.extender import models

    out.mkdir(parents=True, exist_ok=True)
    written = []
    wire: Sequence[Any] = (
        models.ExtenderArgs,
        models.ExtenderFilterResult,
        models.HostPriorityList,
        models.ExtenderPreemptionArgs,
        models.ExtenderPreemptionResult,
        models.ExtenderBindingArgs,
        models.ExtenderBindingResult,
    )
    for model in wire:
        path = out / f"{model.__name__}.json"
        path.write_text(json.dumps(model.model_json_schema(by_alias=True, mode="serialization"), indent=2) + "\n")
        written.append(path)
    path = out / "ExtenderConfiguration.json"
    path.write_text(json.dumps(Configuration.model_json_schema(by_alias=True), indent=2) + "\n")
    written.append(path)
    return written


def _schemas(args: argparse.Namespace) -> int:
    for path in write_schemas(Path(args.out)):
        print(path)
    return 0


def _render(args: argparse.Namespace) -> int:
    from app.deploy.render import RenderError, RenderOptions, kubernetes_release, render, write

    registry = default_registry()
    config = load_config(args.config, registry)
    version = None
    if args.kubernetes_version is not None:
        try:
            version, warning = kubernetes_release(args.kubernetes_version)
        except RenderError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
    given = {
        "kubernetes_version": version,
        "extender_image": args.image,
        "scheduler_name": args.scheduler_name,
        "second_scheduler_name": args.second_scheduler_name,
        "namespace": args.namespace,
    }
    options = RenderOptions(**{k: v for k, v in given.items() if v is not None})
    try:
        files = render(config, registry, options, args.config or "the embedded default configuration")
        written = write(files, Path(args.out))
    except RenderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    if args.image is None:
        print(
            f"warning: the manifests use the image {options.extender_image}, which no registry serves: build it "
            "(make image IMAGE=REGISTRY/NAME:TAG), push it, and render again with --image REGISTRY/NAME:TAG "
            "(or load it into each node's container runtime)",
            file=sys.stderr,
        )
    return 0


def _certs(args: argparse.Namespace) -> int:
    from app.deploy.certs import CertsError, issue

    try:
        issued = issue(Path(args.out), args.name, args.days, args.force)
    except (CertsError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path in issued.paths:
        print(path)
    print(f"server certificate for {', '.join(issued.names)}; client certificate CN system:kube-scheduler")
    return 0


def _check_scheduler_config(args: argparse.Namespace) -> int:
    from app.deploy.check import check

    kubeconfig = args.kubeconfig or os.environ.get("KUBECONFIG") or None
    report = check(args.file, url=args.url, offline=args.offline, timeout=args.timeout, kubeconfig=kubeconfig)
    print(report.render())
    return 1 if report.errors else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m app`` and the ``scheduler-extender`` script."""
    parser = argparse.ArgumentParser(
        prog="scheduler-extender",
        description="A Kubernetes scheduler extender: the HTTP webhook kube-scheduler calls to filter, "
        "prioritize, preempt and bind, with pluggable policies.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the extender service")
    serve.add_argument("--config", help="configuration file (default: the embedded default)")
    serve.add_argument("--host", help="listen address (overrides server.host)")
    serve.add_argument("--port", type=_port, help="listen port, 0..65535 (overrides server.port)")
    serve.set_defaults(func=_serve)
    sched = sub.add_parser(
        "schedule",
        help="run the service and schedule, on its own, the pods whose spec.schedulerName a profile names",
    )
    sched.add_argument("--config", required=True, help="configuration file with profiles that set schedulerName")
    sched.add_argument("--host", help="listen address for health, metrics and explain (overrides server.host)")
    sched.add_argument("--port", type=_port, help="listen port, 0..65535 (overrides server.port)")
    sched.set_defaults(func=_schedule)

    replay = sub.add_parser(
        "replay", help="run a recorded request body, or a capture of live traffic, through a configuration offline"
    )
    replay.add_argument("body", nargs="?", help="ExtenderArgs or ExtenderPreemptionArgs JSON file")
    replay.add_argument(
        "--capture",
        action="append",
        metavar="FILE",
        help="captured traffic (diagnostics.capture, JSON lines): replay every request through --config and "
        "print what would be decided differently; repeatable (oldest file first)",
    )
    replay.add_argument("--json", action="store_true", help="with --capture: print the diff as JSON")
    replay.add_argument("--config", help="configuration file (default: the embedded default)")
    replay.add_argument("--profile", help="profile name (default: the default profile)")
    replay.add_argument("--verb", choices=["filter", "prioritize", "all"], default="all")
    replay.add_argument("--url", help="send the body to the service running here instead (filter, then prioritize)")
    replay.add_argument(
        "--cluster-state",
        action="append",
        metavar="FILE",
        help="nodes, pods and PodGroups (a List as kubectl get -o json writes it) for the cluster "
        "state of stateful policies, instead of an API server; repeatable",
    )
    replay.set_defaults(func=_replay)
    validate = sub.add_parser("validate", help="validate a configuration file")
    validate.add_argument("config")
    validate.set_defaults(func=_validate)
    schemas = sub.add_parser("schemas", help="write JSON Schemas of the wire types and the configuration")
    schemas.add_argument("--out", default="schemas")
    schemas.set_defaults(func=_schemas)
    rend = sub.add_parser("render", help="write deployment manifests rendered from a configuration")
    rend.add_argument("--config", help="configuration file (default: the embedded default)")
    rend.add_argument("--out", required=True, help="output directory")
    rend.add_argument(
        "--kubernetes-version",
        help=f"your control plane's release, vMAJOR.MINOR.PATCH, for the kube-scheduler image "
        f"(default: {DEFAULT_KUBERNETES_VERSION}; kube-scheduler must not be newer than the API server)",
    )
    rend.add_argument("--image", help="the extender's image (default: scheduler-extender:<version>)")
    rend.add_argument("--scheduler-name", help="add a kube-scheduler profile with this schedulerName (kubeadm config)")
    rend.add_argument(
        "--second-scheduler-name", help="schedulerName of second-scheduler/ (default: extender-scheduler)"
    )
    rend.add_argument("--namespace", help="namespace of second-scheduler/ (default: kube-system)")
    rend.set_defaults(func=_render)
    certs = sub.add_parser(
        "certs", help="write a CA, the extender's server certificate and kube-scheduler's client certificate"
    )
    certs.add_argument("--out", required=True, help="directory (render mounts /etc/kubernetes/scheduler-extender/pki)")
    certs.add_argument(
        "--name",
        action="append",
        default=[],
        help="another DNS name or IP address for the server certificate; repeatable",
    )
    certs.add_argument("--days", type=int, default=365, help="validity of the two leaf certificates (default 365)")
    certs.add_argument("--force", action="store_true", help="replace existing files")
    certs.set_defaults(func=_certs)
    exp = sub.add_parser("explain", help="why a pod was (not) placed: the service's recent decisions for it")
    exp.add_argument("pod", help="NAMESPACE/NAME")
    exp.add_argument(
        "--url", default="http://127.0.0.1:8888", help="the running service (default http://127.0.0.1:8888)"
    )
    exp.add_argument("--cacert", help="CA that signed the service's certificate (https)")
    exp.add_argument("--cert", help="client certificate (when the service sets server.tls.clientCAFile)")
    exp.add_argument("--key", help="the client certificate's key")
    exp.add_argument("--json", action="store_true", help="print the /explain JSON instead of the table")
    exp.add_argument("--top", type=int, default=5, help="highest-scored nodes to show per prioritize (default 5)")
    exp.set_defaults(func=_explain)

    chk = sub.add_parser("check-scheduler-config", help="preflight a KubeSchedulerConfiguration against this service")
    chk.add_argument(
        "file",
        help="a KubeSchedulerConfiguration, or kube-scheduler's static pod manifest (then: does it run with "
        "--config, and that file's checks)",
    )
    chk.add_argument(
        "--kubeconfig",
        help="with a static pod manifest: compare its kube-scheduler image with the API server's version "
        "(default: $KUBECONFIG when set)",
    )
    chk.add_argument("--url", help="reach the service here instead of each urlPrefix's scheme://host:port")
    chk.add_argument("--offline", action="store_true", help="skip the checks against the running service")
    chk.add_argument("--timeout", type=float, default=5.0, help="seconds per request (default 5)")
    chk.set_defaults(func=_check_scheduler_config)
    args = parser.parse_args(argv)
    try:
        result: int = args.func(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a file that cannot be read or written: the user's to fix, no traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    return result


def _port(text: str) -> int:
    """``--port``: an integer 0..65535, as ``server.port`` in the configuration file."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: expected an integer 0..65535") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {port}: expected 0..65535")
    return port

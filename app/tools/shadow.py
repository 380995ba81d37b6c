"""``shadow --config F``: the shadow scheduler (:mod:`app.shadow`) as a process. It connects the
cluster state read-only (a :class:`~app.shadow.readonly.ReadOnlyClient`: list, watch, get; no
re-queue assistance, no Lease follower, no Events), follows the binds of each ``--scheduler-name``
(default ``default-scheduler``), runs ``--profile``'s cycle for each (default: the first profile;
a profile with a ``schedulerName``, any name but kube-scheduler's, starts from kube-scheduler's
default plugins; the shadow schedules nothing under that name) and serves, on
``server.host``/``server.port``, the usual ``/healthz``, ``/readyz``, ``/metrics``
(``scheduler_shadow_decisions_total``), ``/explain/{namespace}/{name}`` (the shadow record as an
attempt of verb ``shadow``) and ``GET /shadow``: the records kept and the counts since start
(what ``shadow-report --url`` reads). No leader election: every replica shadows on its own, and
none writes anything. ``--record FILE`` appends each record to FILE as a JSON line.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from app.bootstrap.preflight import check_configuration, report_refusal
from app.bootstrap.serve import build_app, stopped
from app.cluster.connection import cluster_client
from app.lifecycle import Supervisor
from app.observe.logs import setup_logging
from app.shadow.readonly import ReadOnlyClient
from app.shadow.record import ShadowLog
from app.shadow.shadow import DEFAULT_SCHEDULER, Shadow

if TYPE_CHECKING:
    from fastapi import FastAPI

    from app.kube.client import KubeClient

log = logging.getLogger(__name__)


def shadow_command(args: argparse.Namespace) -> int:
    """``shadow --config F [--profile P] [--scheduler-name N]... [--record FILE] [--max-records N]
    [--host H] [--port P]``: see the module doc. Exit 0 once stopped by SIGTERM/SIGINT, 1 for a
    configuration refused (or without a ``cluster:`` section, or naming no such profile),
    credentials that do not load or a socket it cannot listen on."""
    from app.api.metrics import ShadowMetrics
    from app.api.server import ListenError, run
    from app.kube.errors import KubeConfigError

    checked = check_configuration(args.config, "serve", args.host, args.port)
    if checked.errors or checked.assembly is None:
        report_refusal(checked, sys.stderr)
        return 1
    assembly = checked.assembly
    config, cluster = assembly.config, assembly.cluster
    if cluster is None:
        print("error: shadow needs the cluster state: add a cluster: section to the configuration", file=sys.stderr)
        return 1
    profile = args.profile or config.profiles[0].name
    framework = assembly.frameworks.get(profile)
    if framework is None:
        print(f"error: --profile {profile}: no such profile ({', '.join(assembly.frameworks)})", file=sys.stderr)
        return 1
    schedulers = tuple(args.scheduler_name or (DEFAULT_SCHEDULER,))
    setup_logging(config.server.log_level, config.server.log_format)
    # read-only by construction: no re-queue assistance (pod annotations), no Lease follower
    cluster.settings = replace(cluster.settings, requeue_qps=0.0, leader_election=None)
    try:
        client = ReadOnlyClient(cluster_client(cluster.settings))
    except KubeConfigError as exc:
        print(f"error: cluster state is configured but {exc}", file=sys.stderr)
        return 1
    supervisor = Supervisor()
    app = build_app(assembly, health=supervisor.health)
    shadow_metrics = ShadowMetrics(app.metrics.registry, [profile])
    try:
        records = ShadowLog(
            args.max_records, args.record, listeners=[lambda r: shadow_metrics.shadowed(r.profile, r.agreement)]
        )
    except OSError as exc:
        print(f"error: --record {args.record}: {exc.strerror or exc}", file=sys.stderr)
        client.close()
        return 1
    decisions = assembly.decisions
    shadow = Shadow(framework, cluster.cache, schedulers, records, decisions.add if decisions is not None else None)
    shadow.attach()
    for worker in [*cluster.connect(cast("KubeClient", client)), shadow]:
        supervisor.add(worker)

    async def shadow_records() -> dict[str, Any]:
        """The shadow scheduler's records kept (oldest first), its counts since start (profile ->
        agreement -> binds), the binds it skipped, the binds queued (``pending``) and the writes its
        client refused (``refusedWrites``: none is ever tried)."""
        extra = {"pending": shadow.pending, "schedulers": list(schedulers), "refusedWrites": client.refused}
        return records.snapshot() | extra

    cast("FastAPI", app.fastapi).add_api_route("/shadow", shadow_records, methods=["GET"], tags=["diagnostics"])
    if config.server.metrics_listener is not None:
        log.warning("shadow: server.metrics is not served; /metrics is on the main listener")
    log.info("shadowing the binds of %s with profile %s (read-only)", ", ".join(schedulers), profile)
    options: dict[str, Any] = {"log_level": config.server.log_level, "access_log": False, "log_config": None}
    try:
        run(
            app,
            args.host or config.server.host,
            args.port if args.port is not None else config.server.port,
            options,
            on_startup=supervisor.start,
            on_shutdown=supervisor.stop,
        )
    except ListenError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        records.close()
        cluster.close()
    return stopped(0)


__all__ = ["shadow_command"]

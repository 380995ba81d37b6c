"""Serve: ``serve`` and ``schedule`` connect the assembled cluster state and run the HTTP server
(and, for ``schedule``, the standalone schedulers) on ONE asyncio loop until SIGTERM/SIGINT.

:func:`serve` reads top to bottom, each object built once with what it needs: the checks
(:mod:`app.bootstrap.preflight`) -> the API clients (the cluster state's, the metrics listener's
reviews') -> the pod-event writers -> each standalone profile's queue and Lease elector -> the
cluster connection (reflectors, requeuer, Lease follower) -> the Leases this replica follows or
elects on (:class:`~app.cluster.leader.Leadership`) -> the metrics -> the service (its listeners,
pod events, workers' health and Leases) -> the app -> the metrics listener -> the schedulers ->
the traffic capture -> :func:`app.api.server.run`, which owns the sockets and their TLS.

Every background loop is a :class:`~app.lifecycle.Worker` under one
:class:`~app.lifecycle.Supervisor`, started in order once the socket is bound (reflectors,
requeuer, Lease follower, event writers, Lease electors, schedulers) and stopped in reverse once
the connections are drained; on SIGTERM the schedulers stop at once and their Leases are released
first (:meth:`Running.stop_leading`). Blocking work stays off the loop: the official client in
the cluster's API executor, list/watch in the reflectors' threads, large Filter/Score runs in the
verb worker thread.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from app.bootstrap.assemble import Assembly
from app.bootstrap.preflight import check_configuration, report_refusal
from app.cluster.connection import ClusterConnection, cluster_client
from app.cluster.leader import LeaderElectionSettings, Leadership, LeaseElector
from app.config import Configuration, EventsConfig, SchedulingConfig
from app.framework.events import ANY_EVENT, ClusterEvent, ClusterEventWithHint
from app.framework.profile import Profile, parse_duration
from app.framework.runtime import Framework
from app.framework.types import PodInfo
from app.lifecycle import MIN_JOIN, Supervisor, Worker, WorkerHealth
from app.observe.audit import AuditWatcher
from app.observe.decisions import Decision
from app.observe.events import REPORTING_CONTROLLER, EventRecorder, PodEvent
from app.observe.logs import setup_logging
from app.scheduler.queue import SchedulingQueue, pre_enqueue_of
from app.scheduler.scheduler import Reports, Scheduler, SchedulerMetrics, SchedulerOptions

if TYPE_CHECKING:
    from app.api.edge import VerbRouter
    from app.api.metrics import EventCounts
    from app.kube.client import KubeClient
    from app.observe.capture import Capture

log = logging.getLogger(__name__)


def serve_command(args: argparse.Namespace) -> int:
    """``serve [--config F] [--host H] [--port P]``: :func:`serve`, then :func:`stopped`."""
    return stopped(serve(args.config, args.host, args.port))


def schedule_command(args: argparse.Namespace) -> int:
    """``schedule --config F [--host H] [--port P]``: ``serve`` plus the standalone schedulers of
    the profiles with ``schedulerName`` (:func:`serve`), then :func:`stopped`."""
    return stopped(serve(args.config, args.host, args.port, schedule=True))


def stopped(status: int) -> int:
    """After ``serve``/``schedule`` ran and a signal stopped it (status 0), end the process at once
    with that status, the logs and standard streams flushed: the shutdown is over, and a verb still
    busy in the worker thread (which a normal exit would join) must not hold the process past
    ``server.timeouts.shutdown``. Any other status (a refused start) is returned."""
    if status != 0:
        return status
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def serve(config_path: str | None, host: str | None, port: int | None, schedule: bool = False) -> int:
    """``serve`` (and ``schedule``): check, build, connect and run until SIGTERM/SIGINT (see the
    module doc); returns the exit status: 0 once stopped by a signal (the schedulers stopped and
    their Leases released, the connections drained and the workers stopped within
    ``server.timeouts.shutdown``: a clean stop, as kube-scheduler exits 0 when asked to terminate),
    1 for a configuration the service refuses, credentials that do not load or a socket it cannot
    listen on, with the reason on standard error."""
    from app.api.delegated import metrics_listener
    from app.api.server import ListenError, run
    from app.kube.errors import KubeConfigError

    checked = check_configuration(config_path, "schedule" if schedule else "serve", host, port)
    if checked.errors or checked.assembly is None:
        report_refusal(checked, sys.stderr)
        return 1
    assembly = checked.assembly
    config, cluster = assembly.config, assembly.cluster
    server = config.server
    setup_logging(server.log_level, server.log_format)
    for note in checked.preflight.notes:
        log.warning("%s", note)
    if cluster is None:
        _warn_node_cache_capable(config.profiles)

    client = None
    if cluster is not None:
        try:
            client = cluster_client(cluster.settings)
        except KubeConfigError as exc:
            print(f"error: cluster state is configured but {exc}", file=sys.stderr)
            return 1
    try:
        reviews = metrics_client(config)
    except KubeConfigError as exc:
        print(f"error: server.metrics: the metrics listener's reviews need credentials but {exc}", file=sys.stderr)
        if client is not None:
            client.close()
        return 1

    events = event_recorder(config.diagnostics.events, client)
    standalone: list[Standalone] = []
    # each elector releases its Lease once its scheduler's binding cycles have ended; the
    # schedulers are built last (they record into the service), and the electors find them here
    schedulers: dict[str, Scheduler] = {}
    if schedule and cluster is not None and client is not None:
        standalone = standalone_parts(assembly, cluster, client, partial(_done_binding, schedulers))
    workers: list[Worker] = []
    if cluster is not None:
        preempted = _preempted_event({s.name: s.recorder.post for s in standalone if s.recorder is not None})
        workers = cluster.connect(client, on_preempted=preempted)

    recorders = [r for r in (events, *(s.recorder for s in standalone)) if r is not None]
    supervisor = Supervisor()
    app = build_app(
        assembly,
        recorders=recorders,
        leadership=_leadership(cluster, standalone) if cluster is not None else None,
        pod_events=events.observe if events is not None else None,
        health=supervisor.health,
        queue_counts=partial(_queue_counts, [s.queue for s in standalone]) if schedule else None,
        capture=_capture(config),
    )
    service, metrics, capture = app.service, app.metrics, app.capture
    listener = None
    if server.metrics_listener is not None:
        listener = metrics_listener(app.fastapi, server.metrics_listener, reviews)

    leading: list[tuple[Scheduler, LeaseElector | None]] = []
    if cluster is not None and client is not None:
        record = partial(service.record, pod_events=False)  # a scheduler posts kube-scheduler's own
        for s in standalone:
            scheduler = _scheduler(s, assembly, cluster, record, metrics, app.worker)
            schedulers[s.name] = scheduler  # what its elector waits for
            leading.append((scheduler, s.elector))
    running = Running(leading)
    watcher = audit_watcher(assembly, metrics.audit_violated)
    started: list[Worker | None] = [*workers, events, watcher]  # the order the supervisor starts them in
    for s, (scheduler, elector) in zip(standalone, leading, strict=True):
        started += [s.recorder, elector, scheduler]
        log.info("scheduling the pods of schedulerName %s with profile %s", s.name, s.profile)
    for worker in started:
        if worker is not None:
            supervisor.add(worker)
    if capture is not None:
        capture.start()
        log.warning(
            "capturing filter/prioritize/preempt requests and answers to %s (diagnostics.capture): the files hold "
            "pod and node specs; keep them as sensitive as the cluster's objects",
            capture.path,
        )
    _freeze_heap()
    options: dict[str, Any] = {"log_level": server.log_level, "access_log": server.access_log, "log_config": None}
    try:
        run(
            app,
            host or server.host,
            port if port is not None else server.port,
            options,
            on_startup=supervisor.start,
            on_shutdown=supervisor.stop,
            metrics=listener,
            on_stopping=running.stop_leading,
        )
    except ListenError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if capture is not None:
            capture.stop()
        if cluster is not None:
            cluster.close()
    return 0


def build_app(
    assembly: Assembly,
    recorders: Sequence[EventCounts] = (),
    leadership: Leadership | None = None,
    pod_events: Callable[[Decision], None] | None = None,
    health: Callable[[], list[WorkerHealth]] | None = None,
    queue_counts: Callable[[], dict[str, int]] | None = None,
    capture: Capture | None = None,
) -> VerbRouter:
    """The ASGI app serving ``assembly`` (:func:`~app.api.app.create_app`): its
    :class:`~app.api.metrics.Metrics` first (the event writers' counts in ``recorders``, the
    Leases, the decision records, the standalone schedulers' ``queue_counts``), then its service,
    built once with the metrics and the decision log as its listeners, the ``pod_events``, the
    workers' ``health`` and the ``leadership`` (see :class:`~app.api.service.ExtenderService`);
    ``capture``: ``diagnostics.capture``'s writer, not started."""
    from app.api.app import create_app
    from app.api.metrics import Metrics
    from app.observe.logs import decision_logger

    if leadership is None and assembly.cluster is not None:
        leadership = Leadership(assembly.cluster.bind_admission)
    metrics = Metrics(assembly.frameworks, assembly.cluster, recorders, leadership, assembly.decisions, queue_counts)
    service = assembly.service(
        listeners=(metrics.decided, decision_logger()), pod_events=pod_events, health=health, leadership=leadership
    )
    return create_app(service, metrics, capture)


def audit_watcher(assembly: Assembly, on_violation: Callable[[str, str], None]) -> AuditWatcher | None:
    """The watcher of the pods bound to a node an audited plugin would have rejected
    (:mod:`app.observe.audit`), when a profile audits a plugin and there are cluster state and
    decision records; else ``None``."""
    cluster, decisions = assembly.cluster, assembly.decisions
    if cluster is None or decisions is None or not any(f.audited for f in assembly.frameworks.values()):
        return None
    return AuditWatcher(cluster.events.events_since, decisions, on_violation)


def _leadership(cluster: ClusterConnection, standalone: Sequence[Standalone]) -> Leadership:
    """The Leases this replica follows (kube-scheduler's, ``cluster.leaderElection``: the bind
    verb's admission) and elects on (each standalone scheduler's, with its admission)."""
    followed = [(cluster.follower, cluster.bind_admission)] if cluster.follower is not None else []
    elected = [(s.elector, s.admission or cluster.bind_admission) for s in standalone if s.elector is not None]
    return Leadership(cluster.bind_admission, leases=[*followed, *elected])


def _warn_node_cache_capable(profiles: Sequence[Profile]) -> None:
    """Without a ``cluster:`` section, a ``nodeCacheCapable`` profile's plugins see names only."""
    for profile in profiles:
        if profile.extender.node_cache_capable:
            log.warning(
                "profile %s is nodeCacheCapable without a cluster: section: plugins see node names only",
                profile.name,
            )


def metrics_client(config: Configuration) -> KubeClient | None:
    """The API client of the metrics listener's reviews (``None`` without ``server.metrics`` or
    with ``insecure: true``): ``server.metrics.kubeconfig``, else the ``cluster:`` section's
    credentials (``kubeconfig`` and ``context``, else in-cluster, else the default kubeconfig:
    :func:`app.kube.client.load_client`). Raises :class:`~app.kube.errors.KubeConfigError`."""
    from app.api.delegated import REVIEW_WORKERS
    from app.kube.client import KubeClient, load_client

    metrics = config.server.metrics_listener
    if metrics is None or metrics.insecure:
        return None
    if metrics.kubeconfig is not None:
        loaded = load_client(metrics.kubeconfig, pool_size=REVIEW_WORKERS, option="server.metrics.kubeconfig")
    else:
        cluster = config.cluster
        loaded = load_client(
            cluster.kubeconfig if cluster else None, cluster.context if cluster else None, REVIEW_WORKERS
        )
    log.info("metrics listener: reviewing callers with the credentials of %s", loaded.source)
    return KubeClient(loaded.api_client)


def event_recorder(
    config: EventsConfig, client: KubeClient | None, controller: str = REPORTING_CONTROLLER
) -> EventRecorder | None:
    """An event writer through ``client`` (``diagnostics.events``), or ``None`` when events are
    off or there is no cluster connection."""
    if not config.enabled or client is None:
        return None
    return EventRecorder(
        client.create_event,
        client.patch_event,
        config.qps,
        config.burst,
        parse_duration(config.series_window),
        reporting_controller=controller,
    )


@dataclass(frozen=True)
class Standalone:
    """What a profile with ``schedulerName`` (``name``) schedules with, built before the service:
    its event writer (``None`` with events off), its :class:`~app.cluster.leader.LeaseElector`
    (``None`` without ``scheduling.leaderElect``), the admission its scheduler waits for before it
    reserves anything (``None``: the cluster state's bind admission, the warm-up after a start or
    a takeover) and its scheduling queue."""

    name: str
    profile: str
    recorder: EventRecorder | None
    elector: LeaseElector | None
    admission: Callable[[], str | None] | None
    queue: SchedulingQueue


def standalone_parts(
    assembly: Assembly, cluster: ClusterConnection, client: KubeClient, done_binding: Callable[[str], bool]
) -> list[Standalone]:
    """A :class:`Standalone` for every profile with ``schedulerName``; ``done_binding(name)``:
    whether that scheduler has stopped with no binding cycle in flight (its elector may release
    the Lease)."""
    config = assembly.config.scheduling
    standalone = [assembly.frameworks[p.name] for p in assembly.config.profiles if p.scheduler_name]
    interest = _interest(standalone)
    out = []
    for profile in assembly.config.profiles:
        name = profile.scheduler_name
        if not name:
            continue
        recorder = event_recorder(assembly.config.diagnostics.events, client, controller=name)
        elector = None
        if config.leader_elect:
            elector = _lease_elector(name, config, cluster, client, partial(done_binding, name))
        # the Lease changes hands only after leaseDuration without a renewal, or once released by
        # a holder whose binding cycles all ended: no Binding of the previous holder can still be
        # in flight when the bind deadline is shorter, so no warm-up is needed after it
        short_binds = cluster.bind_deadline < config.seconds("lease_duration")
        admission = _lease_admission(cluster) if elector is not None and short_binds else None
        queue = _queue(assembly.frameworks[profile.name], config, interest)
        out.append(Standalone(name, profile.name, recorder, elector, admission, queue))
    return out


def _lease_elector(
    name: str, config: SchedulingConfig, cluster: ClusterConnection, client: KubeClient, done: Callable[[], bool]
) -> LeaseElector:
    """The elector of the Lease ``name`` (``scheduling.leaderElect``); it warms the cluster state
    up when it takes the Lease, and releases it only once ``done()``."""
    settings = LeaderElectionSettings(
        lease_name=name,
        lease_namespace=config.lease_namespace,
        lease_duration=config.seconds("lease_duration"),
        renew_deadline=config.seconds("renew_deadline"),
        retry_period=config.seconds("retry_period"),
    )
    return LeaseElector(
        settings,
        partial(_read_lease, client, settings.retry_period),
        client.create_lease,
        client.replace_lease,
        on_start=cluster.start_warm_up,
        guarded_done=done,
    )


def _queue(framework: Framework, config: SchedulingConfig, interest: tuple[ClusterEvent, ...]) -> SchedulingQueue:
    """The scheduling queue of ``framework``'s profile: ``scheduling``'s backoffs, the profile's
    QueueSort and PreEnqueue plugins, its plugins' events and the framework's nominator."""
    sort = framework.queue_sort_plugins[0].plugin if framework.queue_sort_plugins else None
    return SchedulingQueue(
        config.seconds("pod_initial_backoff"),
        config.seconds("pod_max_backoff"),
        config.seconds("pod_max_in_unschedulable"),
        # PrioritySort's order is the queue's own key (the same order, without a call per compare)
        less=sort.less if sort is not None and sort.name != "PrioritySort" else None,  # type: ignore[attr-defined]
        pre_enqueue=pre_enqueue_of([ep.plugin for ep in framework.pre_enqueue_plugins]),
        registered=_registered(framework),
        nominator=framework.nominator,
        interest=interest,
    )


def _scheduler(
    parts: Standalone,
    assembly: Assembly,
    cluster: ClusterConnection,
    record: Callable[[Decision], None],
    metrics: SchedulerMetrics,
    worker: Executor,
) -> Scheduler:
    """The :class:`~app.scheduler.scheduler.Scheduler` of ``parts``: its decisions to ``record``,
    its attempts to ``metrics``, its large cycles in ``worker`` (the verb worker thread)."""
    reports = Reports(
        record=record,
        post=parts.recorder.post if parts.recorder is not None else (lambda event: None),
        metrics=metrics,
    )
    options = SchedulerOptions(
        percentage_of_nodes_to_score=assembly.config.scheduling.percentage_of_nodes_to_score,
        worker=worker,
        is_leader=parts.elector.is_leader if parts.elector is not None else (lambda: True),
        admission=parts.admission,
    )
    return Scheduler(parts.name, assembly.frameworks[parts.profile], cluster, parts.queue, reports, options)


@dataclass(frozen=True)
class Running:
    """The standalone schedulers :func:`serve` runs, each with its Lease elector (``None``
    without ``scheduling.leaderElect``)."""

    leading: Sequence[tuple[Scheduler, LeaseElector | None]] = ()

    async def stop_leading(self, timeout: float) -> None:
        """On SIGTERM, while the connections drain: stop every scheduler at once (no new
        scheduling cycle), wait for its binding cycles, then stop its elector, which releases the
        Lease (client-go's ``ReleaseOnCancel``) so another replica takes over at its next retry
        period; all within ``timeout`` seconds. The supervisor stops the rest afterwards."""
        deadline = time.monotonic() + timeout
        for scheduler, _ in self.leading:
            scheduler.stop()
        for scheduler, elector in self.leading:
            await scheduler.join(max(deadline - time.monotonic(), MIN_JOIN))
            if elector is not None:
                elector.stop()
                await elector.join(max(deadline - time.monotonic(), MIN_JOIN))


def _queue_counts(queues: Sequence[SchedulingQueue]) -> dict[str, int]:
    """Pods per queue, summed over the schedulers (``scheduler_pending_pods``)."""
    total: dict[str, int] = {}
    for q in queues:
        for key, n in q.counts().items():
            total[key] = total.get(key, 0) + n
    return total


def _done_binding(schedulers: Mapping[str, Scheduler], name: str) -> bool:
    """Whether the scheduler ``name`` has stopped and none of its binding cycles is in flight
    (its Lease may be released); true when it was never built."""
    scheduler = schedulers.get(name)
    return scheduler is None or (not scheduler.running and scheduler.binding_cycles == 0)


def _lease_admission(cluster: ClusterConnection) -> Callable[[], str | None]:
    """A leader-elected scheduler's admission: the cluster state has synced (no warm-up)."""

    def admission() -> str | None:
        return None if cluster.health.has_synced() else "the cluster state has not synced yet"

    return admission


def _registered(framework: Framework) -> Callable[[str], Sequence[ClusterEventWithHint]]:
    """The scheduling queue's ``registered(plugin)``: the plugin's ``EventsToRegister`` with its
    hints, every event for a name the profile does not know (another profile's cluster-wide
    Reserve, the cluster state)."""
    events = framework.events_to_register()
    anything = (ClusterEventWithHint(ANY_EVENT),)
    return lambda plugin: events.get(plugin, anything)


def _interest(frameworks: Sequence[Framework]) -> tuple[ClusterEvent, ...]:
    """Every event a plugin of the standalone profiles registered (``queueingHintMap``'s events:
    ``isEventOfInterest``)."""
    seen: dict[ClusterEvent, None] = {}
    for framework in frameworks:
        for events in framework.events_to_register().values():
            seen.update(dict.fromkeys(e.event for e in events))
    return tuple(seen)


def _read_lease(client: Any, timeout: float, namespace: str, name: str) -> bytes | None:
    lease: bytes | None = client.get_lease(namespace, name, timeout)
    return lease


def _preempted_event(
    posts: Mapping[str, Callable[[PodEvent], None]],
) -> Callable[[PodInfo, PodInfo, str, bool], None] | None:
    """kube-scheduler's Event on a deleted victim (``prepareCandidate``, pkg/scheduler/framework/
    preemption/executor.go, v1.36.3 ``PreemptPod``): ``Normal`` ``Preempted``, action ``Preempting``,
    "Preempted by pod <preemptor UID> on node <node>" (then " (in kube-scheduler memory)." for a
    victim rejected at Permit), written by the preemptor's scheduler's writer (``posts``, by
    schedulerName); ``None`` without any."""
    if not posts:
        return None

    def preempted(victim: PodInfo, preemptor: PodInfo, node: str, in_memory: bool = False) -> None:
        post = posts.get(preemptor.scheduler_name)
        if post is not None:
            note = f"Preempted by pod {preemptor.uid} on node {node}" + (
                " (in kube-scheduler memory)." if in_memory else ""
            )
            post(PodEvent(victim.namespace, victim.name, victim.uid, "Normal", "Preempted", "Preempting", note))

    return preempted


def _capture(config: Configuration) -> Capture | None:
    """The traffic capture of ``diagnostics.capture`` (not started), or ``None`` when off."""
    capture = config.diagnostics.capture
    if not capture.enabled:
        return None
    from app.observe.capture import Capture

    return Capture(capture.path, capture.max_bytes, capture.max_files, capture.namespaces, capture.label_selector)


def _freeze_heap() -> None:
    """Everything allocated so far (modules, app, plugins) lives as long as the process: move it
    out of the collector's reach, so the full collections that large request bodies trigger stay
    cheap. A 500-node request allocates tens of thousands of objects: collect the young generation
    less often (measured: a few ms less p50 for 100- and 500-node bodies, ``make bench``)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)


__all__ = [
    "Running",
    "Standalone",
    "event_recorder",
    "metrics_client",
    "schedule_command",
    "serve",
    "serve_command",
    "standalone_parts",
    "stopped",
]

"""The one composition root: configuration -> registry -> cluster state -> frameworks (each built
once) -> serve and/or schedule, on ONE asyncio loop.

- :func:`assemble` turns a validated :class:`~app.config.Configuration` into an
  :class:`~app.api.service.ExtenderService`: the cluster state (when configured) with the needs
  every enabled plugin declares registered first (pools, pod indexes, annotation keys,
  PodGroups), then each profile's :class:`~app.framework.runtime.Framework` (its plugins' handle)
  on that state, the profiles sharing one nominator. A factory that refuses its args is a
  :class:`~app.config.ConfigError` naming the profile, whichever command asked (``validate``,
  ``render``, ``serve``, ``replay``), so they agree on what is valid. Nothing is connected.
- :func:`serve` connects the cluster state and runs the HTTP server and, for ``schedule``, the
  standalone schedulers as tasks on the server's loop; every background loop is a
  :class:`~app.lifecycle.Worker` under one :class:`~app.lifecycle.Supervisor`, started in order
  once the socket is bound (reflectors, requeuer, Lease follower, event writers, Lease electors,
  schedulers) and stopped in reverse once the connections are drained.

Blocking work stays off the loop: the official client in the cluster's API executor, list/watch
in the reflectors' threads, large Filter/Score runs in the verb worker thread.
"""

from __future__ import annotations

import gc
import logging
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, TextIO

from app.api.service import ExtenderService
from app.cluster.leader import LeaderElectionSettings, LeaseElector
from app.cluster.runtime import ClusterRuntime, ClusterSettings
from app.config import (
    ClusterConfig,
    ConfigError,
    Configuration,
    DecisionsConfig,
    bind_exposure,
    load_config,
    metrics_exposure,
    parse_config,
    read_config,
    valid_parts,
)
from app.framework.build import build_framework, enabled_plugins, plugin_args, profile_needs
from app.framework.events import ANY_EVENT, ClusterEvent
from app.framework.handle import Handle
from app.framework.interfaces import ReservePlugin
from app.framework.nominator import PodNominator
from app.framework.profile import Profile, parse_duration
from app.framework.registry import Registry
from app.framework.runtime import Framework
from app.framework.types import PodInfo
from app.lifecycle import MIN_JOIN, Supervisor, Worker
from app.observe.decisions import DecisionStore
from app.observe.events import REPORTING_CONTROLLER, EventRecorder, PodEvent
from app.observe.logs import setup_logging
from app.plugins import default_registry
from app.scheduler.queue import SchedulingQueue, pre_enqueue_of
from app.scheduler.scheduler import Scheduler

if TYPE_CHECKING:
    from app.kube.client import KubeClient

log = logging.getLogger(__name__)


def cluster_settings(cfg: ClusterConfig) -> ClusterSettings:
    """The cluster state's settings from ``cluster:``, durations in seconds."""
    le = cfg.leader_election
    leader = None
    if le is not None:
        base = LeaderElectionSettings(lease_name=le.lease_name, lease_namespace=le.lease_namespace)
        leader = LeaderElectionSettings(
            lease_name=le.lease_name,
            lease_namespace=le.lease_namespace,
            identity=le.identity or base.identity,
            renew_deadline=parse_duration(le.renew_deadline),
            retry_period=parse_duration(le.retry_period),
        )
    return ClusterSettings(
        kubeconfig=cfg.kubeconfig,
        context=cfg.context,
        assumed_pod_ttl=parse_duration(cfg.assumed_pod_ttl),
        watch_timeout=max(1, int(parse_duration(cfg.watch_timeout))),
        stale_after=parse_duration(cfg.stale_after),
        page_size=cfg.page_size,
        api_workers=cfg.api_workers,
        bind_connections=cfg.bind_connections,
        pod_annotations=tuple(cfg.pod_annotations),
        leader_election=leader,
        requeue_qps=cfg.requeue_qps if cfg.requeue_rejected_pods else 0.0,
    )


def decision_store(cfg: DecisionsConfig) -> DecisionStore | None:
    """The decision records of ``diagnostics.decisions``, or ``None`` when disabled."""
    if not cfg.enabled:
        return None
    return DecisionStore(cfg.max_records, parse_duration(cfg.max_age), cfg.attempts_per_pod, cfg.max_node_verdicts)


def assemble(
    config: Configuration, registry: Registry, source: str = "", positions: Sequence[int] | None = None
) -> ExtenderService:
    """Build the service of a validated configuration (see the module doc). Raises
    :class:`ConfigError` when a plugin refuses its args (each plugin that does, with the path of
    its ``pluginConfig``) or two plugins count the same pool. ``positions``: the index in the file
    of each of ``config.profiles``, for the field paths (default: their own)."""
    cluster = ClusterRuntime(cluster_settings(config.cluster)) if config.cluster is not None else None
    at = [f"profiles[{i}]" for i in (positions if positions is not None else range(len(config.profiles)))]
    problems: list[str] = []
    wide: dict[str, set[str]] = {}
    guards: dict[str, bool] = {}  # whether the profile's own Reserve guards capacity
    wide_guards = False  # whether a cluster-wide Reserve (run by every profile) guards capacity
    images: set[str] = set()  # the profiles whose plugins read nodes' status.images
    for i, profile in enumerate(config.profiles):
        needs = profile_needs(profile, registry)
        wide[profile.name] = {name for name, need in needs if need.cluster_wide_reserve}
        guards[profile.name] = any(need.guards_capacity for _, need in needs)
        wide_guards = wide_guards or any(n.guards_capacity and n.cluster_wide_reserve for _, n in needs)
        if any(need.images for _, need in needs):
            images.add(profile.name)
        if cluster is not None:
            for name, need in needs:
                try:
                    cluster.register(name, need)
                except ValueError as exc:
                    problems.append(f"{at[i]}.plugins: {exc}")
    shared: list[ReservePlugin] = []  # live: each framework checks every profile's cluster-wide Reserve
    frameworks: dict[str, Framework] = {}
    # one nominator for every profile, as kube-scheduler's one scheduling queue holds it
    nominator = PodNominator(cluster.state.pod if cluster is not None else None)
    for i, profile in enumerate(config.profiles):
        try:
            framework = build_framework(profile, registry, cluster, nominator, shared)
        except (ValueError, TypeError) as exc:
            handle = Handle(profile.name, profile.extender.http_timeout_seconds, cluster, nominator=nominator)
            problems += _refused_args(at[i], profile, registry, handle, exc)
            continue
        shared.extend(p for p in framework.reserve_plugins if p.name in wide[profile.name] and p not in shared)
        framework.bind_warm_up = guards[profile.name] or wide_guards
        frameworks[profile.name] = framework
    if problems:
        raise ConfigError(problems, source)
    service = ExtenderService(config, frameworks, cluster, decisions=decision_store(config.diagnostics.decisions))
    service.node_images = frozenset(images)
    return service


def _refused_args(at: str, profile: Profile, registry: Registry, handle: Handle, error: Exception) -> list[str]:
    """Why ``profile``'s framework could not be built (``error``, the first refusal): each enabled
    plugin whose factory refuses its args on its own, at ``<at>.pluginConfig[j].args`` (or
    ``<at>.plugins`` without a pluginConfig), so every refusal is reported in one run."""
    problems: list[str] = []
    for name in enabled_plugins(profile, registry):
        entry = registry.get(name)
        if entry is None:
            continue
        try:
            entry.factory(plugin_args(profile, entry), handle)
        except (ValueError, TypeError) as exc:
            j = next((j for j, pc in enumerate(profile.plugin_config) if pc.name == name), None)
            where = f"{at}.pluginConfig[{j}].args" if j is not None else f"{at}.plugins"
            text = str(exc)
            problems.append(f"{where}: {text if text.startswith(name) else f'{name}: {text}'}")
    return problems or [f"{at}.plugins: {error}"]


def build_service(config_path: str | None, registry: Registry | None = None) -> ExtenderService:
    """Load the configuration (``None``: the embedded default) and :func:`assemble` it.

    Raises :class:`ConfigError`.
    """
    registry = registry or default_registry()
    config = load_config(config_path, registry)
    return assemble(config, registry, config_path or "<embedded default>")


@dataclass
class Preflight:
    """What :func:`preflight` found: ``errors`` the command refuses to start with, ``notes`` it
    starts with (warnings). ``bind_exposure``: why ``bind`` would be served without
    client-certificate verification, when ``server.insecureBind`` does not accept it (an error of
    ``serve`` and ``schedule``; ``validate`` says whether ``render`` secures it)."""

    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    bind_exposure: str | None = None


def bind_refusal(exposure: str) -> str:
    """The error of a ``bind`` served without client-certificate verification (``exposure``: why,
    from :func:`~app.config.bind_exposure`) and how to secure or accept it."""
    return (
        f"{exposure}. Set server.tls with clientCAFile (python -m app certs makes the files), "
        "or server.insecureBind: true to accept that exposure"
    )


#: The commands :func:`preflight` checks for.
Command = Literal["serve", "schedule", "validate"]


def preflight(
    config: Configuration, host: str | None = None, port: int | None = None, command: Command = "serve"
) -> Preflight:
    """Every check ``command`` makes of an assembled configuration before it listens, with the
    effective ``host``/``port`` (``None``: the configuration's): ``schedule`` needs a profile with
    ``schedulerName``; bind exposure (an error unless ``server.insecureBind``, except for
    ``validate``: :attr:`Preflight.bind_exposure`); the TLS files load; the metrics listener's.
    ``validate`` and ``serve`` both call this, so they cannot disagree about what starts."""
    out = Preflight()
    server = config.server
    if command == "schedule" and not any(p.scheduler_name for p in config.profiles):
        out.errors.append(
            "no profile sets schedulerName: schedule runs a scheduler for the pods whose "
            "spec.schedulerName a profile names (see examples/chaos-scheduler.yaml)"
        )
    exposure = bind_exposure(config, host, port)
    if exposure is not None and not server.insecure_bind:
        out.bind_exposure = exposure
        if command != "validate":
            out.errors.append(bind_refusal(exposure))
    elif exposure is not None:
        out.notes.append(f"server.insecureBind: {exposure}")
    if server.tls is not None:
        from app.api.server import ssl_context

        tls = server.tls
        files = {"certFile": tls.cert_file, "keyFile": tls.key_file, "clientCAFile": tls.client_ca_file}
        _tls_files_load("server.tls", lambda: ssl_context(tls), out, files)
    if server.metrics_listener is not None:
        _metrics_preflight(config, port if port is not None else server.port, out)
    return out


@dataclass
class Checked:
    """What :func:`check_configuration` found in the file ``source``: ``problems`` of the
    configuration itself (schema, semantics, and the plugins' args as their factories judge
    them: ``field.path: message``), ``preflight`` the start-up checks, and the ``service`` built
    when there is no problem."""

    source: str
    problems: list[str]
    preflight: Preflight
    service: ExtenderService | None

    @property
    def errors(self) -> bool:
        """Whether the command refuses the file."""
        return bool(self.problems or self.preflight.errors)


def check_configuration(
    path: str | None,
    command: Command,
    host: str | None = None,
    port: int | None = None,
    registry: Registry | None = None,
) -> Checked:
    """Every check of the configuration file ``path`` (``None``: the embedded default) in one
    run, each stage on what the previous ones found valid: the schema and the semantic checks
    (:func:`~app.config.parse_config`), then the plugins' factories (:func:`assemble`: the args
    each refuses) and the start-up checks of ``command`` (:func:`preflight`) on the sections and
    profiles that are valid on their own (:func:`~app.config.valid_parts`), so a file with a
    mistake at each stage shows them all at once."""
    registry = registry or default_registry()
    try:
        data, source = read_config(path)
    except ConfigError as exc:
        return Checked(exc.source, exc.problems, Preflight(), None)
    positions: Sequence[int] | None = None
    server_valid = True
    try:
        config = parse_config(data, registry, source)
        problems: list[str] = []
    except ConfigError as exc:
        problems = list(exc.problems)
        parts = valid_parts(data, registry)
        if parts is None:
            return Checked(source, problems, Preflight(), None)
        config, positions, server_valid = parts.config, parts.positions, parts.server
    service = None
    try:
        service = assemble(config, registry, source, positions)
    except ConfigError as exc:
        problems += exc.problems
    checked = Preflight()
    if server_valid:
        # with profiles left out (invalid), whether one sets schedulerName cannot be told
        judged: Command = "serve" if command == "schedule" and positions is not None else command
        checked = preflight(config, host, port, judged)
    return Checked(source, list(dict.fromkeys(problems)), checked, None if problems else service)


def report_refusal(checked: Checked, out: TextIO) -> None:
    """Write what :func:`check_configuration` refuses to ``out``: the configuration's problems as
    :class:`~app.config.ConfigError` says them, then each start-up check that failed."""
    if checked.problems:
        print(f"error: {ConfigError(checked.problems, checked.source)}", file=out)
    for error in checked.preflight.errors:
        print(f"error: {error}", file=out)


def _metrics_preflight(config: Configuration, port: int, out: Preflight) -> None:
    """``server.metrics``: a port of its own (the effective one, ``--port`` included), credentials
    for the reviews unless ``insecure`` (a warning then says what is exposed), TLS files that load."""
    metrics = config.server.metrics_listener
    assert metrics is not None
    if metrics.port == port:
        out.errors.append(
            f"server.metrics.port ({metrics.port}) is the verbs' port too: set another server.metrics.port"
        )
    if metrics.insecure:
        out.notes.append(metrics_exposure(metrics))
        return
    if metrics.kubeconfig is None and config.cluster is None:
        out.errors.append(
            "server.metrics: the metrics listener authenticates and authorizes its callers through the API server "
            "(TokenReview, SubjectAccessReview, as kube-scheduler does) and has no credentials for it: set "
            "server.metrics.kubeconfig, or add a cluster: section (its credentials are used); or set "
            "server.metrics.insecure: true to serve the metrics to anyone without authentication"
        )
    # the files only: the self-signed certificate is made at start, not to check a configuration
    from app.api.server import metrics_ssl_context

    paths = {"clientCAFile": metrics.client_ca_file}
    if metrics.tls is not None:
        paths = {"tls.certFile": metrics.tls.cert_file, "tls.keyFile": metrics.tls.key_file, **paths}
    if metrics.tls is not None or metrics.client_ca_file:
        _tls_files_load("server.metrics", lambda: metrics_ssl_context(metrics, self_signed=False), out, paths)


def _tls_files_load(section: str, load: Callable[[], object], out: Preflight, files: Mapping[str, str | None]) -> None:
    """``load()`` (a TLS context from ``section``'s ``files``: field -> path), its failure an
    error naming the file; each file that cannot be read an error at its field's path."""
    import ssl

    unread = []
    for key, path in files.items():
        if path:
            try:
                with open(path, "rb"):
                    pass
            except OSError as exc:
                unread.append(f"{section}.{key}: cannot read {path}: {exc.strerror or exc}")
    if unread:
        out.errors.extend(unread)
        return
    try:
        load()
    except (OSError, ssl.SSLError) as exc:
        what = f"{exc.filename}: " if isinstance(exc, OSError) and exc.filename else ""
        out.errors.append(f"{section}: the certificate, key or client CA does not load: {what}{exc.strerror or exc}")


def metrics_client(config: Configuration) -> KubeClient | None:
    """The API client of the metrics listener's reviews (``None`` with ``insecure: true``):
    ``server.metrics.kubeconfig``, else the ``cluster:`` section's credentials (``kubeconfig`` and
    ``context``, else in-cluster, else the default kubeconfig: :func:`app.kube.client.load_client`).
    Raises :class:`~app.kube.errors.KubeConfigError`."""
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


@dataclass
class Running:
    """What :func:`serve` runs besides the HTTP server: the supervised workers and the queues of
    the standalone schedulers (for ``scheduler_pending_pods``)."""

    supervisor: Supervisor = field(default_factory=Supervisor)
    queues: list[SchedulingQueue] = field(default_factory=list)
    #: each standalone scheduler with its Lease elector (``None`` without ``scheduling.leaderElect``)
    leading: list[tuple[Scheduler, LeaseElector | None]] = field(default_factory=list)

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

    def queue_counts(self) -> dict[str, int]:
        """Pods per queue, summed over the schedulers."""
        total: dict[str, int] = {}
        for q in self.queues:
            for key, n in q.counts().items():
                total[key] = total.get(key, 0) + n
        return total


def event_recorder(service: ExtenderService, controller: str = REPORTING_CONTROLLER) -> EventRecorder | None:
    """An event writer through the service's cluster client (``diagnostics.events``), or
    ``None`` when events are off or there is no cluster connection."""
    events = service.config.diagnostics.events
    cluster = service.cluster
    if not events.enabled or cluster is None or cluster.client is None:
        return None
    client = cluster.client
    return EventRecorder(
        client.create_event,
        client.patch_event,
        events.qps,
        events.burst,
        parse_duration(events.series_window),
        reporting_controller=controller,
    )


def _lease_admission(cluster: ClusterRuntime) -> Callable[[], str | None]:
    """A leader-elected scheduler's admission: the cluster state has synced (no warm-up)."""

    def admission() -> str | None:
        return None if cluster.state.has_synced() else "the cluster state has not synced yet"

    return admission


def _registered(framework: Framework) -> Callable[[str], Sequence[ClusterEvent]]:
    """The scheduling queue's ``registered(plugin)``: the plugin's ``EventsToRegister``, every event
    for a name the profile does not know (another profile's cluster-wide Reserve, the cluster state)."""
    events = framework.events_to_register()
    return lambda plugin: events.get(plugin, (ANY_EVENT,))


def _interest(frameworks: Sequence[Framework]) -> tuple[ClusterEvent, ...]:
    """Every event a plugin of the standalone profiles registered (``queueingHintMap``'s events:
    ``isEventOfInterest``)."""
    seen: dict[ClusterEvent, None] = {}
    for framework in frameworks:
        for events in framework.events_to_register().values():
            seen.update(dict.fromkeys(events))
    return tuple(seen)


def _read_lease(client: Any, timeout: float, namespace: str, name: str) -> bytes | None:
    lease: bytes | None = client.get_lease(namespace, name, timeout)
    return lease


def schedulers(service: ExtenderService, metrics: Any, worker: Any, running: Running) -> None:
    """Add a :class:`~app.scheduler.scheduler.Scheduler` (and, with ``scheduling.leaderElect``,
    its :class:`~app.cluster.leader.LeaseElector`, and its event writer) to ``running`` for every
    profile with ``schedulerName``. The cluster connection must be made."""
    cluster = service.cluster
    assert cluster is not None and cluster.client is not None
    client = cluster.client
    config = service.config.scheduling
    posts: dict[str, Callable[[PodEvent], None]] = {}
    standalone = [service.frameworks[p.name] for p in service.config.profiles if p.scheduler_name]
    interest = _interest(standalone)
    for profile in service.config.profiles:
        name = profile.scheduler_name
        if not name:
            continue
        recorder = event_recorder(service, controller=name)
        if recorder is not None:
            running.supervisor.add(recorder)
            service.recorders.append(recorder)
            posts[name] = recorder.post
        elector = None
        # the Lease changes hands only after leaseDuration without a renewal, or once released by
        # a holder whose binding cycles all ended: no Binding of the previous holder can still be
        # in flight when the bind deadline is shorter, so no warm-up is needed after it
        short_binds = cluster.bind_deadline < config.seconds("lease_duration")
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
            running.supervisor.add(elector)
        # what the scheduler waits for before it reserves anything (None: the cluster state's
        # bind admission, the warm-up after a start or a takeover)
        admission = _lease_admission(cluster) if elector is not None and short_binds else None
        framework = service.frameworks[profile.name]
        sort = framework.queue_sort_plugins[0].plugin if framework.queue_sort_plugins else None
        queue = SchedulingQueue(
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
        running.queues.append(queue)
        scheduler = Scheduler(
            name,
            service.frameworks[profile.name],
            cluster,
            queue,
            worker=worker,
            record=partial(service.record, pod_events=False),
            events=recorder.post if recorder is not None else (lambda event: None),
            set_condition=client.set_pod_condition,
            set_nominated_node=client.set_nominated_node,
            metrics=metrics,
            is_leader=elector.is_leader if elector is not None else (lambda: True),
            admission=admission,
            percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
            rng=random.Random(),
        )
        running.supervisor.add(scheduler)
        running.leading.append((scheduler, elector))
        if elector is not None:
            elector.guarded_done = partial(_done_binding, scheduler)
            if service.leadership is not None:
                service.leadership.add(elector, admission or cluster.bind_admission)
        log.info("scheduling the pods of schedulerName %s with profile %s", name, profile.name)
    if posts:
        cluster.on_preempted = partial(_preempted_event, posts)


def _done_binding(scheduler: Scheduler) -> bool:
    """Whether ``scheduler`` has stopped and none of its binding cycles is in flight (its Lease
    may be released)."""
    return not scheduler.running and scheduler.binding_cycles == 0


def _preempted_event(
    posts: dict[str, Callable[[PodEvent], None]], victim: PodInfo, preemptor: PodInfo, node: str
) -> None:
    """kube-scheduler's Event on a deleted victim (``prepareCandidate``, pkg/scheduler/framework/
    preemption/preemption.go): ``Normal`` ``Preempted``, action ``Preempting``, "Preempted by pod
    <preemptor UID> on node <node>", written by the preemptor's scheduler's recorder."""
    post = posts.get(preemptor.scheduler_name)
    if post is not None:
        note = f"Preempted by pod {preemptor.uid} on node {node}"
        post(PodEvent(victim.namespace, victim.name, victim.uid, "Normal", "Preempted", "Preempting", note))


def serve(config_path: str | None, host: str | None, port: int | None, schedule: bool = False) -> int:
    """``serve`` (and ``schedule``): build, connect and run until SIGTERM/SIGINT; returns the exit
    status: 0 once stopped by a signal (the schedulers stopped and their Leases released, the
    connections drained and the workers stopped within ``server.timeouts.shutdown``: a clean stop,
    as kube-scheduler exits 0 when asked to terminate), 1 for a configuration the service refuses
    or a socket it cannot listen on, with the reason on standard error."""
    from app.api.app import create_app
    from app.api.server import ListenError, run

    checked = check_configuration(config_path, "schedule" if schedule else "serve", host, port)
    if checked.errors or checked.service is None:
        report_refusal(checked, sys.stderr)
        return 1
    service = checked.service
    config = service.config
    server = config.server
    host = host or server.host
    port = port if port is not None else server.port
    setup_logging(server.log_level, server.log_format)
    # TLS is the server's (app.api.server): the one context of each listener
    options: dict[str, Any] = {"log_level": server.log_level, "access_log": server.access_log, "log_config": None}
    for note in checked.preflight.notes:
        log.warning("%s", note)
    running = Running()
    cluster = service.cluster
    if cluster is not None:
        from app.kube.errors import KubeConfigError

        try:
            workers: list[Worker] = cluster.connect()
        except KubeConfigError as exc:
            print(f"error: cluster state is configured but {exc}", file=sys.stderr)
            return 1
        for worker in workers:
            running.supervisor.add(worker)
        if cluster.follower is not None and service.leadership is not None:
            service.leadership.add(cluster.follower, cluster.bind_admission)
        recorder = event_recorder(service)
        if recorder is not None:
            running.supervisor.add(recorder)
            service.recorders.append(recorder)
            service.pod_events = recorder.observe
    else:
        for profile in config.profiles:
            if profile.extender.node_cache_capable:
                log.warning(
                    "profile %s is nodeCacheCapable without a cluster: section: plugins see node names only",
                    profile.name,
                )
    app = create_app(service)
    service.health = running.supervisor.health
    listener = None
    if server.metrics_listener is not None:
        from app.api.delegated import metrics_listener
        from app.kube.errors import KubeConfigError

        try:
            listener = metrics_listener(app.fastapi, server.metrics_listener, metrics_client(config))
        except KubeConfigError as exc:
            print(f"error: server.metrics: the metrics listener's reviews need credentials but {exc}", file=sys.stderr)
            if cluster is not None:
                cluster.close()
            return 1
    if schedule:
        schedulers(service, app.metrics, app.worker, running)
        app.metrics.watch_queues(running.queue_counts)
    capture = config.diagnostics.capture
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
    try:
        run(
            app,
            host,
            port,
            options,
            on_startup=running.supervisor.start,
            on_shutdown=running.supervisor.stop,
            metrics=listener,
            on_stopping=running.stop_leading,
        )
    except ListenError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if app.capture is not None:
            app.capture.stop()
        if cluster is not None:
            cluster.close()
    return 0


__all__ = [
    "Checked",
    "Preflight",
    "Running",
    "assemble",
    "bind_refusal",
    "build_service",
    "check_configuration",
    "cluster_settings",
    "decision_store",
    "metrics_client",
    "preflight",
    "report_refusal",
    "schedulers",
    "serve",
]

"""Assemble: a validated configuration -> cluster state -> one framework per profile, nothing
connected.

The cluster state (when configured) is built first, with the needs every enabled plugin declares
registered (pools, pod indexes, annotation keys, PodGroups); then each profile's
:class:`~app.framework.runtime.Framework` (its plugins' handle) on that state, the profiles
sharing one nominator. A factory that refuses its args is a :class:`~app.config.ConfigError`
naming the profile, whichever command asked (``validate``, ``render``, ``serve``, ``replay``), so
they agree on what is valid. :class:`Assembly` holds the result; the service over it is built by
:meth:`Assembly.service`, once, with what the command gives it (``serve``: its listeners, health
and Leases, :mod:`app.bootstrap.serve`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from app.api.service import ExtenderService
from app.cluster.connection import ClusterConnection, ClusterSettings
from app.cluster.leader import LeaderElectionSettings, Leadership
from app.config import ClusterConfig, ConfigError, Configuration, DecisionsConfig, load_config
from app.framework.build import build_framework, enabled_plugins, plugin_args, profile_needs
from app.framework.handle import Handle
from app.framework.interfaces import ReservePlugin
from app.framework.nominator import PodNominator
from app.framework.profile import Profile, parse_duration
from app.framework.registry import Registry
from app.framework.runtime import Framework
from app.lifecycle import WorkerHealth
from app.observe.decisions import Decision, DecisionStore
from app.plugins import default_registry


@dataclass(frozen=True)
class Assembly:
    """What :func:`assemble` builds of a configuration: the ``frameworks`` by profile name, the
    ``cluster`` state (``None`` without a ``cluster:`` section; not connected), the ``decisions``
    store (``None`` when ``diagnostics.decisions`` is off) and ``node_images``, the profiles whose
    plugins read nodes' ``status.images`` (:attr:`~app.framework.handle.ClusterNeeds.images`)."""

    config: Configuration
    frameworks: Mapping[str, Framework]
    cluster: ClusterConnection | None = None
    decisions: DecisionStore | None = None
    node_images: frozenset[str] = frozenset()

    def service(
        self,
        listeners: Sequence[Callable[[Decision], None]] = (),
        pod_events: Callable[[Decision], None] | None = None,
        health: Callable[[], list[WorkerHealth]] | None = None,
        leadership: Leadership | None = None,
    ) -> ExtenderService:
        """The :class:`~app.api.service.ExtenderService` of these frameworks, with what the
        command gives it (see the service's doc; none of it for the offline commands)."""
        return ExtenderService(
            self.config,
            self.frameworks,
            self.cluster,
            self.decisions,
            node_images=self.node_images,
            listeners=listeners,
            pod_events=pod_events,
            health=health,
            leadership=leadership,
        )


def load_assembly(config_path: str | None, registry: Registry | None = None) -> Assembly:
    """Load the configuration (``None``: the embedded default) and :func:`assemble` it.

    Raises :class:`ConfigError`.
    """
    registry = registry or default_registry()
    config = load_config(config_path, registry)
    return assemble(config, registry, config_path or "<embedded default>")


def build_service(
    config_path: str | None,
    registry: Registry | None = None,
    listeners: Sequence[Callable[[Decision], None]] = (),
) -> ExtenderService:
    """The offline service (``replay``) of the configuration ``config_path`` (:func:`load_assembly`),
    ``listeners`` told of every decision. Raises :class:`ConfigError`."""
    return load_assembly(config_path, registry).service(listeners)


def assemble(
    config: Configuration, registry: Registry, source: str = "", positions: Sequence[int] | None = None
) -> Assembly:
    """Build the frameworks of a validated configuration (see the module doc). Raises
    :class:`ConfigError` when a plugin refuses its args (each plugin that does, with the path of
    its ``pluginConfig``) or two plugins count the same pool. ``positions``: the index in the file
    of each of ``config.profiles``, for the field paths (default: their own)."""
    cluster = ClusterConnection(cluster_settings(config.cluster)) if config.cluster is not None else None
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
    nominator = PodNominator(cluster.cache.pod if cluster is not None else None)
    for i, profile in enumerate(config.profiles):
        warm_up = guards[profile.name] or wide_guards
        try:
            framework = build_framework(profile, registry, cluster, nominator, shared, bind_warm_up=warm_up)
        except (ValueError, TypeError) as exc:
            handle = Handle(profile.name, profile.extender.http_timeout_seconds, cluster, nominator=nominator)
            problems += _refused_args(at[i], profile, registry, handle, exc)
            continue
        shared.extend(p for p in framework.reserve_plugins if p.name in wide[profile.name] and p not in shared)
        frameworks[profile.name] = framework
    if problems:
        raise ConfigError(problems, source)
    return Assembly(config, frameworks, cluster, decision_store(config.diagnostics.decisions), frozenset(images))


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


__all__ = ["Assembly", "assemble", "build_service", "cluster_settings", "decision_store", "load_assembly"]

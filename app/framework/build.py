"""Building a profile's :class:`~app.framework.runtime.Framework` from its configuration and the
registry: one plugin instance per plugin, shared by every point it is enabled at, in one ordered
list per point (kube-scheduler's ``NewFramework`` and ``expandMultiPointPlugins``,
pkg/scheduler/framework/runtime/framework.go), and the cluster-state needs the enabled plugins
declare.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from app.framework.defaults import POINTS, expand, multi_point
from app.framework.handle import ClusterHandle, ClusterNeeds, Handle
from app.framework.interfaces import ReservePlugin
from app.framework.nominator import PodNominator
from app.framework.profile import PluginRef, PluginSet, Profile
from app.framework.registry import PluginEntry, Registry
from app.framework.runtime import PROTOCOLS, EnabledPlugin, Framework, PluginLists, plugin_lists


def entry_implements(entry: PluginEntry | None, protocol: Any) -> bool:
    """Whether the plugin class of ``entry`` has the methods of ``protocol`` (a factory that is not
    a class cannot be told before it is built: ``False``, so ``multiPoint`` does not place it)."""
    factory = entry.factory if entry is not None else None
    if not isinstance(factory, type):
        return False
    methods = [name for name, value in vars(protocol).items() if not name.startswith("_") and callable(value)]
    return all(hasattr(factory, name) for name in methods)


def effective_points(profile: Profile, registry: Registry) -> dict[str, list[PluginRef]]:
    """Each point's plugins once ``multiPoint`` (and, with ``schedulerName``, kube-scheduler's
    default profile) is expanded: :func:`app.framework.defaults.expand`."""
    return expand(profile, lambda name, protocol: entry_implements(registry.get(name), protocol))


def enabled_plugins(profile: Profile, registry: Registry | None = None) -> list[str]:
    """The names of the plugins ``profile`` enables at any point, in first-enabled order (with a
    ``registry``: after ``multiPoint`` is expanded; else as configured)."""
    seen: dict[str, None] = {}
    if registry is not None:
        for refs in effective_points(profile, registry).values():
            for ref in refs:
                seen.setdefault(ref.name)
        return list(seen)
    for point in POINTS:
        for ref in getattr(profile.plugins, point).enabled:
            seen.setdefault(ref.name)
    for ref in multi_point(profile).enabled:
        seen.setdefault(ref.name)
    return list(seen)


def plugin_args(profile: Profile, entry: PluginEntry) -> BaseModel | None:
    """The validated args of ``entry`` in ``profile`` (its ``pluginConfig``, or ``{}``), or
    ``None`` for a plugin without args. Raises ``pydantic.ValidationError``."""
    if entry.args is None:
        return None
    given = next((pc.args for pc in profile.plugin_config if pc.name == entry.name), {})
    return entry.args.model_validate(given)


def profile_needs(profile: Profile, registry: Registry) -> list[tuple[str, ClusterNeeds]]:
    """``(plugin, needs)`` for every enabled plugin of ``profile`` that declares needs. Raises
    ``ValueError`` for an unknown plugin, ``pydantic.ValidationError`` for bad args."""
    out = []
    for name in enabled_plugins(profile, registry):
        entry = registry.get(name)
        if entry is None:
            raise ValueError(f"unknown plugin {name!r}")
        if entry.needs is not None:
            out.append((name, entry.needs(plugin_args(profile, entry), profile.extender.http_timeout_seconds)))
    return out


def _others(profile: Profile, points: dict[str, list[PluginRef]], point: str) -> list[PluginRef]:
    """Every plugin the profile enables at any point, in first-enabled order, that ``point`` does
    not disable (``{disabled: [...]}``; with ``*`` none): the plugins that take part in Reserve,
    Permit, PreBind and PostBind wherever they are enabled, when they implement them."""
    spec: PluginSet | None = getattr(profile.plugins, point, None)
    if spec is not None and any(ref.name == "*" for ref in spec.disabled):
        return []
    seen: dict[str, PluginRef] = {}
    for refs in points.values():
        for ref in refs:
            if ref.name not in seen and (spec is None or not spec.is_disabled(ref.name)):
                seen[ref.name] = ref
    return list(seen.values())


def build_framework(
    profile: Profile,
    registry: Registry,
    cluster: ClusterHandle | None = None,
    nominator: PodNominator | None = None,
    shared_reserve: Sequence[ReservePlugin] = (),
    bind_warm_up: bool = True,
) -> Framework:
    """Instantiate a validated profile's plugins, each once, with its :class:`Framework` as their
    handle (upstream's ``NewFramework``), and return the framework, its plugins in one ordered
    list per point: each configured point as ``expandMultiPointPlugins`` orders it
    (:func:`effective_points`); PreFilter the Filter plugins implementing it and PreScore the Score
    plugins implementing it, in their order; Reserve and Permit their own lists followed by every
    other plugin of the profile implementing them (not disabled there); PreBind and PostBind every
    plugin implementing them. ``cluster``: the cluster state; ``nominator``: the pods nominated to
    nodes; ``shared_reserve``: the cluster-wide Reserve plugins of every profile (a live list the
    caller may still extend); ``bind_warm_up``: whether the profile's binds wait out the cluster's
    warm-up (:attr:`Framework.bind_warm_up`).

    Raises ``ValueError`` if a plugin does not implement a point it is enabled at or a factory
    rejects its args.
    """
    points = effective_points(profile, registry)
    instances: dict[str, Any] = {}

    def lists(handle: Handle) -> PluginLists:
        def enabled(refs: Sequence[PluginRef], point: str, strict: bool = True) -> list[EnabledPlugin]:
            out = []
            for ref in refs:
                if ref.name not in instances:
                    entry = registry.get(ref.name)
                    if entry is None:
                        raise ValueError(f"unknown plugin {ref.name!r}")
                    instances[ref.name] = entry.factory(plugin_args(profile, entry), handle)
                plugin = instances[ref.name]
                if not isinstance(plugin, PROTOCOLS[point]):
                    if strict:
                        raise ValueError(f"plugin {ref.name} does not implement the {point} extension point")
                    continue
                out.append(EnabledPlugin(ref.name, plugin, ref.weight or 1, ref.failure_policy))
            return out

        configured = {point: enabled(refs, point) for point, refs in points.items()}

        def implied(point: str) -> list[EnabledPlugin]:
            own = configured.get(point, [])
            names = {ep.name for ep in own}
            others = [ref for ref in _others(profile, points, point) if ref.name not in names]
            return [*own, *enabled(others, point, strict=False)]

        return plugin_lists(
            queue_sort=configured["queue_sort"],
            pre_enqueue=configured["pre_enqueue"],
            filter=configured["filter"],
            post_filter=configured["post_filter"],
            score=configured["score"],
            bind=configured["bind"],
            preemption=configured["preemption"],
            reserve=implied("reserve"),
            permit=implied("permit"),
            pre_bind=implied("pre_bind"),
            post_bind=implied("post_bind"),
        )

    return Framework(
        profile.name,
        lists,
        http_timeout=profile.extender.http_timeout_seconds,
        cluster=cluster,
        nominator=nominator,
        shared_reserve=shared_reserve,
        bind_warm_up=bind_warm_up,
    )


__all__ = [
    "build_framework",
    "effective_points",
    "enabled_plugins",
    "entry_implements",
    "plugin_args",
    "profile_needs",
]

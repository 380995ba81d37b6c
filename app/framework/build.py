"""Building a profile's :class:`~app.framework.runtime.Framework` from its configuration and the
registry: one plugin instance per plugin, shared by every point it is enabled at (as
kube-scheduler's ``frameworkImpl`` does), and the cluster-state needs the enabled plugins declare.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from app.framework.defaults import POINTS, expand, multi_point
from app.framework.handle import ClusterNeeds, Handle
from app.framework.interfaces import ReservePlugin
from app.framework.profile import PluginRef, Profile
from app.framework.registry import PluginEntry, Registry
from app.framework.runtime import EnabledPlugin, Framework


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


def build_framework(
    profile: Profile, registry: Registry, handle: Handle, shared_reserve: Sequence[ReservePlugin] = ()
) -> Framework:
    """Instantiate a validated profile's plugins with ``handle`` and return its
    :class:`Framework`. ``shared_reserve``: the cluster-wide Reserve plugins of every profile
    (a live list the caller may still extend).

    Raises ``ValueError`` if a plugin does not implement a point it is enabled at or a factory
    rejects its args.
    """
    instances: dict[str, Any] = {}
    points = effective_points(profile, registry)

    def enabled(point: str) -> list[EnabledPlugin]:
        out = []
        for ref in points[point]:
            if ref.name not in instances:
                entry = registry.get(ref.name)
                if entry is None:
                    raise ValueError(f"unknown plugin {ref.name!r}")
                instances[ref.name] = entry.factory(plugin_args(profile, entry), handle)
            plugin = instances[ref.name]
            if not isinstance(plugin, POINTS[point]):
                raise ValueError(f"plugin {ref.name} does not implement the {point} extension point")
            out.append(EnabledPlugin(ref.name, plugin, ref.weight or 1, ref.failure_policy))
        return out

    return Framework(
        profile.name,
        enabled("filter"),
        enabled("score"),
        enabled("preemption"),
        enabled("bind"),
        http_timeout=profile.extender.http_timeout_seconds,
        shared_reserve=shared_reserve,
        handle=handle,
        queue_sort_plugins=enabled("queue_sort"),
        pre_enqueue_plugins=enabled("pre_enqueue"),
        post_filter_plugins=enabled("post_filter"),
        other_plugins=[*enabled("reserve"), *enabled("permit")],
    )


__all__ = [
    "build_framework",
    "effective_points",
    "enabled_plugins",
    "entry_implements",
    "plugin_args",
    "profile_needs",
]

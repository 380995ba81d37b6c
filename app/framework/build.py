"""Building a profile's :class:`~app.framework.runtime.Framework` from its configuration and the
registry: one plugin instance per plugin, shared by every point it is enabled at, in one ordered
list per row of :data:`~app.framework.points.EXTENSION_POINTS` (kube-scheduler's ``NewFramework``
and ``expandMultiPointPlugins``, pkg/scheduler/framework/runtime/framework.go), and the
cluster-state needs the enabled plugins declare.

A point's list: :func:`expand_multi_point` (its own ``enabled``, then the ``multiPoint`` plugins
that implement it, less its ``disabled``), then what it takes from the profile's other points by
:func:`app.framework.points.implied` (not disabled there). A plugin the profile audits
(``enforcement: audit``, :meth:`~app.framework.profile.Profile.audited`) is taken out of every
list into the Framework's ``audit`` lists: the enforced lists are those of the profile without it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from app.framework.defaults import multi_point
from app.framework.handle import ClusterHandle, ClusterNeeds, Handle
from app.framework.interfaces import ReservePlugin
from app.framework.nominator import PodNominator
from app.framework.points import EXTENSION_POINTS, EnabledPlugin, ExtensionPoint, PluginLists
from app.framework.points import implements as class_implements
from app.framework.points import implied as implied_candidates
from app.framework.profile import PluginRef, PluginSet, Profile
from app.framework.registry import PluginEntry, Registry
from app.framework.runtime import Framework

#: ``implements(plugin name, point)``: ``True``, ``False``, or ``None`` when it cannot be told
Implements = Callable[[str, ExtensionPoint], bool | None]


def registry_implements(registry: Registry) -> Implements:
    """:func:`~app.framework.points.implements` of the registry's plugin classes (``False`` for
    a name the registry does not know)."""

    def implements(name: str, point: ExtensionPoint) -> bool | None:
        entry = registry.get(name)
        return class_implements(entry.factory, point) if entry is not None else False

    return implements


def expand_multi_point(
    spec: PluginSet, source: Sequence[PluginRef], implements: Callable[[str], bool]
) -> list[PluginRef]:
    """kube-scheduler's ``expandMultiPointPlugins`` for one point: ``spec``'s own ``enabled`` that
    ``source`` (the ``multiPoint`` plugins) also names first, in ``spec``'s order (they override
    it); then ``source``'s other plugins that implement the point and are not disabled there;
    then ``spec``'s other plugins. With ``disabled: [{name: "*"}]``: ``spec``'s own alone."""
    own = list(spec.enabled)
    if any(ref.name == "*" for ref in spec.disabled):
        return own
    own_names = {ref.name for ref in own}
    overridden: set[str] = set()
    from_source: list[PluginRef] = []
    for ref in source:
        if not implements(ref.name) or spec.is_disabled(ref.name):
            continue
        if ref.name in own_names:
            overridden.add(ref.name)
            continue
        from_source.append(ref)
    return [
        *(ref for ref in own if ref.name in overridden),
        *from_source,
        *(ref for ref in own if ref.name not in overridden),
    ]


def point_lists(profile: Profile, implements: Implements) -> dict[str, tuple[list[PluginRef], list[PluginRef]]]:
    """Each point's plugins (by attr, in :data:`~app.framework.points.EXTENSION_POINTS`' order)
    as ``(placed, implied)``: ``placed`` by :func:`expand_multi_point` (``multiPoint`` merged with
    kube-scheduler's defaults for a profile with ``schedulerName``: a plugin placed only when
    ``implements`` says ``True``); ``implied`` the plugins the point takes from the others
    (:func:`~app.framework.points.implied`), not placed already, not disabled there, and not known
    not to implement it (``None`` kept: the build checks the instance)."""
    expanded = multi_point(profile).enabled

    def known_to_implement(point: ExtensionPoint) -> Callable[[str], bool]:
        return lambda name: implements(name, point) is True

    placed: dict[str, list[PluginRef]] = {}
    for point in EXTENSION_POINTS:
        source = expanded if point.multi_point else []
        placed[point.attr] = expand_multi_point(profile.plugins.of(point.attr), source, known_to_implement(point))
    out: dict[str, tuple[list[PluginRef], list[PluginRef]]] = {}
    for point in EXTENSION_POINTS:
        spec = profile.plugins.of(point.attr)
        own = placed[point.attr]
        extra: list[PluginRef] = []
        if not any(ref.name == "*" for ref in spec.disabled):
            names = {ref.name for ref in own}
            extra = [
                ref
                for ref in implied_candidates(point, placed)
                if ref.name not in names and not spec.is_disabled(ref.name) and implements(ref.name, point) is not False
            ]
        out[point.attr] = (own, extra)
    return out


def effective_points(profile: Profile, registry: Registry) -> dict[str, list[PluginRef]]:
    """Each point's plugins (by attr) as the built Framework will hold them, judged by the
    registry's classes (:func:`point_lists`; a plugin whose factory is not a class is kept where
    it may take part by :func:`~app.framework.points.implied`)."""
    return {attr: [*own, *extra] for attr, (own, extra) in point_lists(profile, registry_implements(registry)).items()}


def enabled_plugins(profile: Profile, registry: Registry | None = None) -> list[str]:
    """The names of the plugins ``profile`` enables at any point, in first-enabled order (with a
    ``registry``: after ``multiPoint`` is expanded; else as configured, ``multiPoint`` last)."""
    seen: dict[str, None] = {}
    if registry is not None:
        for refs in effective_points(profile, registry).values():
            for ref in refs:
                seen.setdefault(ref.name)
        return list(seen)
    for point in EXTENSION_POINTS:
        for ref in profile.plugins.of(point.attr).enabled:
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
    profile: Profile,
    registry: Registry,
    cluster: ClusterHandle | None = None,
    nominator: PodNominator | None = None,
    shared_reserve: Sequence[ReservePlugin] = (),
    bind_warm_up: bool = True,
) -> Framework:
    """Instantiate a validated profile's plugins, each once, with its :class:`Framework` as their
    handle (upstream's ``NewFramework``), and return the framework, its plugins in one ordered
    list per point (:func:`point_lists`): a plugin placed by the configuration or ``multiPoint``
    must implement the point; one a point takes by :func:`~app.framework.points.implied` takes
    part when its instance implements it. ``cluster``: the cluster state; ``nominator``: the pods
    nominated to nodes; ``shared_reserve``: the cluster-wide Reserve plugins of every profile (a
    live list the caller may still extend); ``bind_warm_up``: whether the profile's binds wait out the cluster's warm-up
    (:attr:`Framework.bind_warm_up`). The plugins the profile audits are built too, each once,
    and kept out of every list but the framework's :attr:`~Framework.audit` lists.

    Raises ``ValueError`` if a plugin does not implement a point it is enabled at or a factory
    rejects its args.
    """
    points = point_lists(profile, registry_implements(registry))
    instances: dict[str, Any] = {}

    def lists(handle: Handle) -> PluginLists:
        def instance(ref: PluginRef) -> Any:
            if ref.name not in instances:
                entry = registry.get(ref.name)
                if entry is None:
                    raise ValueError(f"unknown plugin {ref.name!r}")
                instances[ref.name] = entry.factory(plugin_args(profile, entry), handle)
            return instances[ref.name]

        out: dict[str, tuple[EnabledPlugin, ...]] = {}
        for point in EXTENSION_POINTS:
            own, extra = points[point.attr]
            chosen = []
            for ref, strict in [*((ref, True) for ref in own), *((ref, False) for ref in extra)]:
                plugin = instance(ref)
                if not isinstance(plugin, point.protocol):
                    if strict:
                        raise ValueError(f"plugin {ref.name} does not implement the {point.attr} extension point")
                    continue
                chosen.append(EnabledPlugin(ref.name, plugin, ref.weight or 1, ref.failure_policy))
            audits[point.attr] = tuple(ep for ep in chosen if ep.name in audited)
            out[point.attr] = tuple(ep for ep in chosen if ep.name not in audited)
        return PluginLists(**out)

    audited = frozenset(profile.audited())
    audits: dict[str, tuple[EnabledPlugin, ...]] = {}
    return Framework(
        profile.name,
        lists,
        http_timeout=profile.extender.http_timeout_seconds,
        cluster=cluster,
        nominator=nominator,
        shared_reserve=shared_reserve,
        bind_warm_up=bind_warm_up,
        audit=lambda: PluginLists(**audits),
    )


__all__ = [
    "build_framework",
    "effective_points",
    "enabled_plugins",
    "expand_multi_point",
    "plugin_args",
    "point_lists",
    "profile_needs",
    "registry_implements",
]

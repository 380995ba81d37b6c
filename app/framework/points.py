"""The extension points, in one table: each with its protocol, its configuration key and the rules
that fill its list (kube-scheduler's ``Plugins``, pkg/scheduler/apis/config/types.go, and
``expandMultiPointPlugins``, pkg/scheduler/framework/runtime/framework.go).

:data:`EXTENSION_POINTS` holds upstream's twelve points in upstream's order and this service's
own, Preemption (the extender's ``preempt`` verb), after PostFilter; ``multiPoint``
(:data:`MULTI_POINT_KEY`) enables a plugin at every point it implements. The profile's
``plugins``, :class:`PluginLists`, the :class:`~app.framework.runtime.Framework`, the
configuration's checks and ``validate`` all iterate this table. (v1.36's PlacementGenerate and
PlacementScore, of workload scheduling, are not implemented.)

A point's list (:func:`app.framework.build.build_framework`) is kube-scheduler's: its own
``enabled`` plugins and those ``multiPoint`` places there, less its ``disabled`` ones (``*``: all
but its own); then this service's rule, :func:`implied`, adds the plugins a point takes from the
profile's other points (a Filter plugin's PreFilter runs with it; a Filter plugin's Reserve runs at
bind). ``failurePolicy`` is honoured at the points that have one (:attr:`ExtensionPoint.failure_policy`);
elsewhere the configuration's checks refuse ``Ignore``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from app.framework.interfaces import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreemptionPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)

#: Where a point takes plugins the profile enabled elsewhere (:func:`implied`): ``filter`` (the
#: Filter list), ``score`` (the Score list), ``profile`` (every plugin of the profile), or none.
Implied = Literal["", "filter", "score", "profile"]


@dataclass(frozen=True)
class ExtensionPoint:
    """One extension point. ``name``: upstream's (``PreFilter``); ``attr``: the field of the
    profile's ``plugins``, of :class:`PluginLists` and the Framework's ``<attr>_plugins``;
    ``key``: the configuration key (``preFilter``); ``protocol``: what a plugin implements to run
    there; ``failure_policy``: whether a plugin's ``failurePolicy: Ignore`` is honoured there;
    ``multi_point``: whether ``multiPoint`` places plugins there itself (PreFilter and PreScore
    get them through Filter and Score); ``implied``: see :func:`implied`; ``extender_only``: run by
    the extender's verbs alone."""

    name: str
    attr: str
    key: str
    protocol: Any
    failure_policy: bool = False
    multi_point: bool = True
    implied: Implied = ""
    extender_only: bool = False


#: Every extension point, in kube-scheduler's order (Preemption, this service's, after PostFilter).
EXTENSION_POINTS: tuple[ExtensionPoint, ...] = (
    ExtensionPoint("PreEnqueue", "pre_enqueue", "preEnqueue", PreEnqueuePlugin),
    ExtensionPoint("QueueSort", "queue_sort", "queueSort", QueueSortPlugin),
    ExtensionPoint("PreFilter", "pre_filter", "preFilter", PreFilterPlugin, True, False, "filter"),
    ExtensionPoint("Filter", "filter", "filter", FilterPlugin, True),
    ExtensionPoint("PostFilter", "post_filter", "postFilter", PostFilterPlugin),
    ExtensionPoint("Preemption", "preemption", "preemption", PreemptionPlugin, True, extender_only=True),
    ExtensionPoint("PreScore", "pre_score", "preScore", PreScorePlugin, True, False, "score"),
    ExtensionPoint("Score", "score", "score", ScorePlugin, True),
    ExtensionPoint("Reserve", "reserve", "reserve", ReservePlugin, implied="profile"),
    ExtensionPoint("Permit", "permit", "permit", PermitPlugin, implied="profile"),
    ExtensionPoint("PreBind", "pre_bind", "preBind", PreBindPlugin, implied="profile"),
    ExtensionPoint("Bind", "bind", "bind", BindPlugin, True),
    ExtensionPoint("PostBind", "post_bind", "postBind", PostBindPlugin, implied="profile"),
)
#: attr -> point
POINTS: Mapping[str, ExtensionPoint] = {p.attr: p for p in EXTENSION_POINTS}
#: The configuration key that enables a plugin at every point it implements.
MULTI_POINT_KEY = "multiPoint"


def implements(factory: object, point: ExtensionPoint) -> bool | None:
    """Whether the plugin class ``factory`` has the methods of ``point``'s protocol; ``None`` when
    that cannot be told before the plugin is built (a factory that is not a class). Callers decide
    what unknown means: ``multiPoint`` does not place such a plugin, the configuration's checks
    leave it to the build, which checks the instance."""
    if not isinstance(factory, type):
        return None
    methods = [name for name, value in vars(point.protocol).items() if not name.startswith("_") and callable(value)]
    return all(hasattr(factory, name) for name in methods)


class _Named(Protocol):
    @property
    def name(self) -> str: ...


_N = TypeVar("_N", bound=_Named)


def implied(point: ExtensionPoint, placed: Mapping[str, Sequence[_N]]) -> list[_N]:
    """This service's rule, *a plugin takes part where it implements*: the candidates ``point``
    takes from the profile's other points, given each point's list so far (``placed``, by attr),
    once each by name, in order; the caller keeps those that implement the point and that it does
    not disable. PreFilter: the Filter list (a Filter plugin's PreFilter runs with its Filter);
    PreScore: the Score list; Reserve, Permit, PreBind, PostBind: every plugin of the profile, in
    first-enabled order over :data:`EXTENSION_POINTS` (a Filter plugin's Reserve runs at bind, as
    the extender's ``bind`` verb needs it); the other points: none."""
    if point.implied == "":
        return []
    sources = [point.implied] if point.implied in ("filter", "score") else [p.attr for p in EXTENSION_POINTS]
    seen: set[str] = set()
    out: list[_N] = []
    for attr in sources:
        for item in placed.get(attr, ()):
            if item.name not in seen:
                seen.add(item.name)
                out.append(item)
    return out


@dataclass(frozen=True)
class EnabledPlugin:
    """A plugin instance at one extension point, with its weight and ``failure_policy``:
    ``Fail`` (an ``ERROR`` fails the verb) or ``Ignore`` (the plugin is skipped where it erred)."""

    name: str
    plugin: Plugin
    weight: int = 1
    failure_policy: str = "Fail"

    @property
    def ignores_errors(self) -> bool:
        """``failurePolicy: Ignore``."""
        return self.failure_policy == "Ignore"


@dataclass(frozen=True)
class PluginLists:
    """A profile's plugins, one ordered list per extension point (``frameworkImpl``'s
    ``preFilterPlugins``, ``filterPlugins``...), a field per row of :data:`EXTENSION_POINTS` in
    its order, as :func:`app.framework.build.build_framework` builds them (:func:`plugin_lists`
    for a hand-made profile)."""

    pre_enqueue: tuple[EnabledPlugin, ...] = ()
    queue_sort: tuple[EnabledPlugin, ...] = ()
    pre_filter: tuple[EnabledPlugin, ...] = ()
    filter: tuple[EnabledPlugin, ...] = ()
    post_filter: tuple[EnabledPlugin, ...] = ()
    preemption: tuple[EnabledPlugin, ...] = ()
    pre_score: tuple[EnabledPlugin, ...] = ()
    score: tuple[EnabledPlugin, ...] = ()
    reserve: tuple[EnabledPlugin, ...] = ()
    permit: tuple[EnabledPlugin, ...] = ()
    pre_bind: tuple[EnabledPlugin, ...] = ()
    bind: tuple[EnabledPlugin, ...] = ()
    post_bind: tuple[EnabledPlugin, ...] = ()

    def of(self, point: ExtensionPoint) -> tuple[EnabledPlugin, ...]:
        """The list of ``point``."""
        lists: tuple[EnabledPlugin, ...] = getattr(self, point.attr)
        return lists


def plugin_lists(**given: Sequence[EnabledPlugin] | None) -> PluginLists:
    """:class:`PluginLists` from hand-made lists, keyed by point attr (``filter=[...]``): a point
    given is taken as it is; a point left out (or ``None``) gets :func:`implied`'s plugins that
    implement it, once each, in order (PreFilter the Filter plugins that implement it, Reserve
    every plugin given that implements it...). Raises ``TypeError`` for an unknown point. The
    :class:`~app.framework.runtime.Framework` checks the lists."""
    unknown = set(given) - set(POINTS)
    if unknown:
        raise TypeError(f"unknown extension point(s): {', '.join(sorted(unknown))}")
    lists: dict[str, Sequence[EnabledPlugin]] = {attr: items for attr, items in given.items() if items is not None}
    out: dict[str, tuple[EnabledPlugin, ...]] = {}
    for point in EXTENSION_POINTS:
        items = lists.get(point.attr)
        if items is None:
            seen: set[int] = set()
            chosen = []
            for ep in implied(point, lists):
                if id(ep.plugin) not in seen and isinstance(ep.plugin, point.protocol):
                    seen.add(id(ep.plugin))
                    chosen.append(ep)
            items = chosen
        out[point.attr] = tuple(items)
    return PluginLists(**out)


__all__ = [
    "EXTENSION_POINTS",
    "MULTI_POINT_KEY",
    "POINTS",
    "EnabledPlugin",
    "ExtensionPoint",
    "PluginLists",
    "implements",
    "implied",
    "plugin_lists",
]

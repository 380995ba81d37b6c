"""The plugin registry: in-tree plugins plus out-of-tree ones from Python entry points.

An out-of-tree distribution declares, in its ``pyproject.toml``::

    [project.entry-points."scheduler_extender.plugins"]
    MyPolicy = "my_package.plugin:PLUGIN"

where ``PLUGIN`` is a :class:`PluginEntry`. The entry-point name must equal ``PLUGIN.name``.
A distribution that fails to load does not stop the service unless a profile enables it; the
load error is then reported as the configuration error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from pydantic import BaseModel

from app.framework.handle import ClusterNeeds, Handle
from app.framework.interfaces import Plugin

#: The entry-point group out-of-tree plugins register in.
ENTRY_POINT_GROUP = "scheduler_extender.plugins"


PluginFactory = Callable[[Any, Handle], Plugin]
#: ``needs(args, http_timeout)``: what the plugin needs the cluster state to keep, from its
#: validated args and its profile's ``httpTimeout`` (seconds)
NeedsDeclaration = Callable[[Any, float], ClusterNeeds]


@dataclass(frozen=True)
class PolicyRule:
    """One RBAC rule a plugin needs from the API server (``rbac.authorization.k8s.io/v1``
    ``PolicyRule``): ``api_groups`` (``""`` is the core group), ``resources`` (subresources as
    ``pods/binding``) and ``verbs``. ``render`` turns the union of the enabled plugins' rules into
    the extender's ClusterRole, so a plugin that reads a CRD gets exactly that read.
    """

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]


@dataclass(frozen=True)
class PluginEntry:
    """A registered plugin.

    ``name`` is the PascalCase name used in configuration; ``args`` is the pydantic model of its
    ``pluginConfig`` args (``extra="forbid"``), or ``None`` when it takes none; ``factory`` builds
    the plugin from validated args (an ``args`` instance, from the plugin's ``pluginConfig`` or
    from ``{}`` when there is none; ``None`` only for a plugin without ``args``) and a
    :class:`~app.framework.handle.Handle`; it raises ``ValueError`` for args that cannot work
    together (reported as a configuration error) and never touches the cluster state.
    ``needs_cluster`` marks stateful plugins that need the cluster-state cache; they are built
    only with one (the factory need not check). ``needs`` declares what the cache must keep for
    the plugin (:class:`~app.framework.handle.ClusterNeeds`: pools, pod indexes, annotation keys,
    PodGroups), from its args. ``rbac`` lists the
    API permissions the plugin needs beyond the cache's list/watch of nodes and pods (rendered
    into the extender's ClusterRole). ``sees_every_pod``: the policy must see every pod kube-scheduler
    schedules (a gang, fit, preemption rules, an affinity rule): it may not sit in a profile whose
    ``managedResources`` make kube-scheduler call the extender only for the pods that request one
    of them (``HTTPExtender.IsInterested``); ``False`` for a policy that concerns only such pods
    (a resource pool) or any subset (chaos, a binder).
    """

    name: str
    factory: PluginFactory
    args: type[BaseModel] | None = None
    needs_cluster: bool = False
    summary: str = ""
    rbac: tuple[PolicyRule, ...] = ()
    sees_every_pod: bool = True
    needs: NeedsDeclaration | None = None


@dataclass
class Registry:
    """Plugin name -> :class:`PluginEntry`, plus load errors of out-of-tree plugins by name."""

    entries: dict[str, PluginEntry] = field(default_factory=dict)
    load_errors: dict[str, str] = field(default_factory=dict)

    def register(self, entry: PluginEntry) -> None:
        """Add ``entry``; raises ``ValueError`` if its name is taken."""
        if entry.name in self.entries:
            raise ValueError(f"plugin {entry.name!r} is already registered")
        self.entries[entry.name] = entry

    def get(self, name: str) -> PluginEntry | None:
        """The entry registered as ``name``, or ``None``."""
        return self.entries.get(name)

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self.entries)

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> None:
        """Register every plugin advertised in the entry-point ``group``.

        Problems (import errors, a wrong object, a name clash) are recorded in
        :attr:`load_errors` under the entry-point name instead of raised.
        """
        for ep in entry_points(group=group):
            try:
                obj = ep.load()
            except Exception as exc:
                self.load_errors[ep.name] = f"cannot load entry point {ep.value!r}: {exc}"
                continue
            if not isinstance(obj, PluginEntry):
                self.load_errors[ep.name] = (
                    f"entry point {ep.value!r} is {type(obj).__name__}, not app.framework.PluginEntry"
                )
                continue
            if obj.name != ep.name:
                self.load_errors[ep.name] = f"entry point name {ep.name!r} differs from the plugin's name {obj.name!r}"
                continue
            try:
                self.register(obj)
            except ValueError as exc:
                self.load_errors[ep.name] = f"entry point {ep.value!r}: {exc}"


def build_registry(in_tree: Iterable[PluginEntry], load_entry_points: bool = True) -> Registry:
    """A registry of ``in_tree`` plugins plus, unless disabled, the installed out-of-tree ones."""
    registry = Registry()
    for entry in in_tree:
        registry.register(entry)
    if load_entry_points:
        registry.load_entry_points()
    return registry

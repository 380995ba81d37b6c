"""kube-scheduler's default profile, and a profile's plugins per point once ``multiPoint`` is
expanded.

:func:`default_plugins` is v1.36.3's ``getDefaultPlugins`` with ``applyFeatureGates``
(pkg/scheduler/apis/config/v1/default_plugins.go): one ``multiPoint`` list, score weights in
brackets: SchedulingGates, PrioritySort, NodeUnschedulable, NodeName, TaintToleration (3),
NodeAffinity (2), NodePorts, NodeResourcesFit (1), VolumeRestrictions, NodeVolumeLimits,
VolumeBinding, VolumeZone, PodTopologySpread (2), InterPodAffinity (2), DefaultPreemption,
NodeResourcesBalancedAllocation (1), ImageLocality (1), DefaultBinder, then NodeDeclaredFeatures
while its gate is on (beta, on in v1.36), and DynamicResources (2) inserted before
DefaultPreemption while ``DynamicResourceAllocation`` is on (GA and locked: always;
``applyDynamicResources``). Not here, though v1.36 has them: GangScheduling and
TopologyAwareWorkloadScheduling's plugins (alpha, off). The volume plugins
(:mod:`app.plugins.volumes`) make the cluster state watch the storage objects
(``ClusterNeeds.volumes``) of every profile that keeps them, DynamicResources the DRA objects
(``ClusterNeeds.dynamic_resources``).

A profile with ``schedulerName`` (the standalone scheduler) starts from that default, as every
kube-scheduler profile does; its own ``multiPoint`` merges into it (:func:`merge_plugin_set`,
upstream's ``mergePluginSet``); then :func:`app.framework.build.effective_points` gives each
point its plugins (``expandMultiPointPlugins``). An extender profile starts from nothing:
kube-scheduler runs its own defaults before calling the extender.
"""

from __future__ import annotations

from app.framework import features
from app.framework.profile import PluginRef, PluginSet, Profile

#: (name, score weight) of kube-scheduler v1.36.3's default ``multiPoint``, in its order, before
#: the feature gates add to it (:func:`default_plugins`).
DEFAULT_PLUGINS: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)


def default_plugins(gates: features.FeatureGates | None = None) -> tuple[tuple[str, int | None], ...]:
    """:data:`DEFAULT_PLUGINS` with ``applyFeatureGates``: NodeDeclaredFeatures appended when its
    gate is on in ``gates`` (default: the process's, :func:`~app.framework.features.current`),
    then DynamicResources (weight 2) inserted before DefaultPreemption when
    ``DynamicResourceAllocation`` is on."""
    gates = gates if gates is not None else features.current()
    plugins = DEFAULT_PLUGINS
    if gates.enabled("NodeDeclaredFeatures"):
        plugins = (*plugins, ("NodeDeclaredFeatures", None))
    if gates.enabled("DynamicResourceAllocation"):
        at = [name for name, _ in plugins].index("DefaultPreemption")
        plugins = (*plugins[:at], ("DynamicResources", 2), *plugins[at:])
    return plugins


def default_plugin_set() -> PluginSet:
    """:func:`default_plugins` as a ``multiPoint`` PluginSet."""
    return PluginSet(enabled=[PluginRef(name=name, weight=weight) for name, weight in default_plugins()])


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """upstream's ``mergePluginSet``: the defaults not disabled (none with ``*``), each replaced in
    place by a custom entry of the same name, then the other custom entries in order."""
    disabled = {ref.name for ref in custom.disabled}
    custom_by_name = {ref.name: i for i, ref in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled:
        for ref in default.enabled:
            if ref.name in disabled:
                continue
            index = custom_by_name.get(ref.name)
            if index is not None:
                ref = custom.enabled[index]
                replaced.add(index)
            enabled.append(ref)
    enabled += [ref for i, ref in enumerate(custom.enabled) if i not in replaced]
    return PluginSet(enabled=enabled, disabled=list(custom.disabled))


def multi_point(profile: Profile) -> PluginSet:
    """The profile's ``multiPoint`` after merging it into kube-scheduler's defaults (profiles with
    ``schedulerName``) or as written (extender profiles)."""
    if profile.scheduler_name:
        return merge_plugin_set(default_plugin_set(), profile.plugins.multi_point)
    return profile.plugins.multi_point


__all__ = ["DEFAULT_PLUGINS", "default_plugin_set", "default_plugins", "merge_plugin_set", "multi_point"]

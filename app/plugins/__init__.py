"""In-tree policy plugins. Each module has a PascalCase ``NAME``, a ``<Name>Args`` model and a
``PLUGIN`` :class:`~app.framework.PluginEntry`."""

from app.framework.registry import PluginEntry, Registry, build_registry
from app.plugins import (
    annotation_node_affinity,
    coscheduling,
    default_binder,
    defaultpreemption,
    imagelocality,
    interpodaffinity,
    node_resource_pool,
    node_resources_allocatable,
    nodeaffinity,
    nodedeclaredfeatures,
    nodename,
    nodeports,
    nodeunschedulable,
    podtopologyspread,
    preemption_rules,
    queuesort,
    schedulinggates,
    tainttoleration,
)
from app.plugins.chaos import coin_flip, dice_roll
from app.plugins.dynamicresources import plugin as dynamicresources
from app.plugins.noderesources import balanced_allocation, fit
from app.plugins.volumes import node_volume_limits, volume_binding, volume_restrictions, volume_zone

IN_TREE: tuple[PluginEntry, ...] = (
    # kube-scheduler's default plugins (every standalone-scheduler profile starts from them:
    # app/framework/defaults.py)
    schedulinggates.PLUGIN,
    queuesort.PLUGIN,
    nodeunschedulable.PLUGIN,
    nodename.PLUGIN,
    tainttoleration.PLUGIN,
    nodeaffinity.PLUGIN,
    nodeports.PLUGIN,
    volume_restrictions.PLUGIN,
    node_volume_limits.EBS_PLUGIN,
    node_volume_limits.GCE_PD_PLUGIN,
    node_volume_limits.PLUGIN,
    node_volume_limits.AZURE_DISK_PLUGIN,
    volume_binding.PLUGIN,
    volume_zone.PLUGIN,
    podtopologyspread.PLUGIN,
    interpodaffinity.PLUGIN,
    dynamicresources.PLUGIN,
    defaultpreemption.PLUGIN,
    imagelocality.PLUGIN,
    nodedeclaredfeatures.PLUGIN,
    # this service's policies
    coin_flip.PLUGIN,
    dice_roll.PLUGIN,
    annotation_node_affinity.PLUGIN,
    node_resources_allocatable.PLUGIN,
    default_binder.PLUGIN,
    fit.PLUGIN,
    balanced_allocation.PLUGIN,
    node_resource_pool.PLUGIN,
    coscheduling.PLUGIN,
    preemption_rules.PLUGIN,
)


def default_registry(load_entry_points: bool = True) -> Registry:
    """The in-tree plugins plus the installed out-of-tree ones (entry-point group
    ``scheduler_extender.plugins``)."""
    return build_registry(IN_TREE, load_entry_points)


__all__ = ["IN_TREE", "default_registry"]

"""In-tree policy plugins. Each module has a PascalCase ``NAME``, a ``<Name>Args`` model and a
``PLUGIN`` :class:`~app.framework.PluginEntry`."""

from app.framework.registry import PluginEntry, Registry, build_registry
from app.plugins import annotation_node_affinity, default_binder, node_resources_allocatable
from app.plugins.chaos import coin_flip, dice_roll

IN_TREE: tuple[PluginEntry, ...] = (
    coin_flip.PLUGIN,
    dice_roll.PLUGIN,
    annotation_node_affinity.PLUGIN,
    node_resources_allocatable.PLUGIN,
    default_binder.PLUGIN,
)


def default_registry(load_entry_points: bool = True) -> Registry:
    """The in-tree plugins plus the installed out-of-tree ones (entry-point group
    ``scheduler_extender.plugins``)."""
    return build_registry(IN_TREE, load_entry_points)


__all__ = ["IN_TREE", "default_registry"]

"""The order the scheduler visits nodes in: kube-scheduler's ``nodeTree``
(pkg/scheduler/internal/cache/node_tree.go, v1.30): node names grouped by zone (region and zone
labels), listed round robin across the zones, so a search that stops early (``numFeasibleNodesToFind``)
samples every zone, not the zone whose nodes were added first.

Not thread-safe: :class:`~app.cluster.cache.Cache` calls it under its lock.
"""

from __future__ import annotations

from collections.abc import Mapping

#: ``v1.LabelFailureDomainBetaZone``/``Region`` (read first, as upstream does) and
#: ``v1.LabelTopologyZone``/``Region``
BETA_ZONE, BETA_REGION = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"


def zone_key(labels: Mapping[str, str] | None) -> str:
    """``GetZoneKey`` (k8s.io/component-helpers/node/topology): ``region + ":\\x00:" + zone`` from
    the node's labels (the deprecated ``failure-domain.beta`` ones first), ``""`` when it has
    neither."""
    if not labels:
        return ""
    zone = labels.get(BETA_ZONE)
    if zone is None:
        zone = labels.get(ZONE, "")
    region = labels.get(BETA_REGION)
    if region is None:
        region = labels.get(REGION, "")
    if not region and not zone:
        return ""
    return region + ":\x00:" + zone


class NodeTree:
    """``nodeTree``: zone key -> the names of its nodes in the order they were added, and the
    zones in the order they first appeared."""

    __slots__ = ("num_nodes", "tree", "zones")

    def __init__(self) -> None:
        self.tree: dict[str, list[str]] = {}
        self.zones: list[str] = []
        self.num_nodes = 0

    def add_node(self, name: str, labels: Mapping[str, str] | None) -> None:
        """``addNode``: append ``name`` to its zone (a new zone goes last); a name already
        there is left as it is."""
        zone = zone_key(labels)
        names = self.tree.get(zone)
        if names is None:
            self.zones.append(zone)
            self.tree[zone] = [name]
        elif name in names:
            return
        else:
            names.append(name)
        self.num_nodes += 1

    def remove_node(self, name: str, labels: Mapping[str, str] | None) -> bool:
        """``removeNode``: drop ``name`` from its zone (an emptied zone is removed); ``False``
        when it was not there."""
        zone = zone_key(labels)
        names = self.tree.get(zone)
        if names is None or name not in names:
            return False
        names.remove(name)
        if not names:
            del self.tree[zone]
            self.zones.remove(zone)
        self.num_nodes -= 1
        return True

    def update_node(self, name: str, old: Mapping[str, str] | None, new: Mapping[str, str] | None) -> bool:
        """``updateNode``: when the zone key of ``old`` and ``new`` (the node's labels before and
        after) differ, remove ``name`` from the old zone (whether it was there or not) and add it
        to the new one; whether they differed."""
        if zone_key(old) == zone_key(new):
            return False
        self.remove_node(name, old)
        self.add_node(name, new)
        return True

    def list(self) -> list[str]:
        """``list``: the node names round robin across the zones (each zone's first node, then
        each one's second, ...). Raises ``ValueError`` when the zones hold fewer names than
        counted (upstream's "all zones exhausted" error; never with this class's own updates)."""
        out: list[str] = []
        zones = [self.tree[z] for z in self.zones]
        longest = max(map(len, zones), default=0)
        for index in range(longest):
            for names in zones:
                if index < len(names):
                    out.append(names[index])
        if len(out) < self.num_nodes:
            raise ValueError("all zones exhausted before reaching count of nodes expected")
        return out


__all__ = ["NodeTree", "zone_key"]

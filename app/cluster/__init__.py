"""Cluster state: list+watch reflectors, the cache of nodes and pods with per-node aggregates and
the assumed pods, the cluster events the scheduling queues follow, and the watched kinds' sync
health (docs/cluster-state.md), held by a :class:`ClusterConnection` behind the framework's
``ClusterHandle``. Imports no ``kubernetes`` module itself."""

from app.cluster.cache import Cache
from app.cluster.connection import ClusterConnection, ClusterSettings
from app.cluster.events import ClusterEvents
from app.cluster.health import SyncHealth
from app.cluster.snapshot import Snapshot

__all__ = ["Cache", "ClusterConnection", "ClusterEvents", "ClusterSettings", "Snapshot", "SyncHealth"]

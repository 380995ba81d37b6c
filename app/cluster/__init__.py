"""Cluster state: list+watch reflectors of nodes and pods, per-node aggregates and the
assumed-pod ledger (docs/cluster-state.md), behind the framework's ``ClusterHandle``. Imports no
``kubernetes`` module itself."""

from app.cluster.runtime import ClusterRuntime, ClusterSettings
from app.cluster.state import ClusterState, Snapshot

__all__ = ["ClusterRuntime", "ClusterSettings", "ClusterState", "Snapshot"]

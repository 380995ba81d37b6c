"""Builders for NodeInfo/PodInfo from plain dicts (the shapes kube-scheduler sends)."""

from __future__ import annotations

from typing import Any

import msgspec

from app.cluster.state import ClusterState
from app.framework import NodeInfo, PodInfo, objects


def node(
    name: str, labels: dict[str, str] | None = None, cpu: str = "4", memory: str = "8Gi", **extra: Any
) -> NodeInfo:
    doc = {
        "metadata": {"name": name, "labels": labels or {}},
        "status": {"allocatable": {"cpu": cpu, "memory": memory}},
    }
    doc.update(extra)
    return NodeInfo(name, msgspec.convert(doc, objects.Node))


def pod(name: str = "p", annotations: dict[str, str] | None = None, uid: str = "", **spec: Any) -> PodInfo:
    doc = {"metadata": {"name": name, "namespace": "ns", "uid": uid or f"uid-{name}", "annotations": annotations or {}}}
    doc["spec"] = spec
    return PodInfo(msgspec.convert(doc, objects.Pod))


def seed(state: ClusterState, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
    """Load node and pod dicts (Kubernetes JSON) into ``state`` as a completed sync would."""
    state.seed([msgspec.convert(n, objects.Node) for n in nodes], [msgspec.convert(p, objects.Pod) for p in pods])

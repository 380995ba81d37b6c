"""Builders for NodeInfo/PodInfo from plain dicts (the shapes kube-scheduler sends)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from app.cluster.cache import Cache
from app.framework import CycleState, EnabledPlugin, NodeInfo, PodInfo, objects, plugin_lists
from app.framework.runtime import Framework, ScoreResult


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


def seed(cache: Cache, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
    """Load node and pod dicts (Kubernetes JSON) into ``cache`` as a completed sync would."""
    cache.seed([msgspec.convert(n, objects.Node) for n in nodes], [msgspec.convert(p, objects.Pod) for p in pods])


def enabled(plugin: object, weight: int = 1, fail_open: bool = False) -> EnabledPlugin:
    """``plugin`` at a point (``failurePolicy: Ignore`` with ``fail_open``)."""
    if isinstance(plugin, EnabledPlugin):
        return plugin
    return EnabledPlugin(plugin.name, plugin, weight, "Ignore" if fail_open else "Fail")  # type: ignore[attr-defined, arg-type]


def framework(
    profile: str = "p",
    *,
    filter: Sequence[object] = (),
    score: Sequence[object] = (),
    post_filter: Sequence[object] = (),
    preemption: Sequence[object] = (),
    bind: Sequence[object] = (),
    reserve: Sequence[object] | None = None,
    permit: Sequence[object] | None = None,
    **settings: Any,
) -> Framework:
    """A :class:`Framework` of ready-made plugins (or :class:`EnabledPlugin`), each point's list
    derived as :func:`~app.framework.points.plugin_lists` does; ``settings``: the Framework's
    keyword arguments (``cluster``, ``nominator``, ``http_timeout``...)."""

    def points(items: Sequence[object] | None) -> list[EnabledPlugin] | None:
        return None if items is None else [enabled(p) for p in items]

    lists = plugin_lists(
        filter=points(filter) or [],
        score=points(score) or [],
        post_filter=points(post_filter) or [],
        preemption=points(preemption) or [],
        bind=points(bind) or [],
        reserve=points(reserve),
        permit=points(permit),
    )
    return Framework(profile, lists, **settings)


def prioritize(fw: Framework, pod: PodInfo, nodes: Sequence[NodeInfo], state: CycleState | None = None) -> ScoreResult:
    """PreScore and Score of ``fw`` over ``nodes``; fails the test on an error status."""
    state = state if state is not None else CycleState()
    status = fw.run_pre_score_plugins(state, pod, nodes)
    assert status.is_success(), status
    result, status = fw.run_score_plugins(state, pod, nodes)
    assert status.is_success(), status
    return result

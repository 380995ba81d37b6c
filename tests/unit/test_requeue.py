"""The requeuer on a real ClusterState: it patches only pods the cache knows as pending, only after
capacity was freed, and at most its budget per step."""

from __future__ import annotations

import msgspec

from app.cluster.requeue import ANNOTATION, Requeuer
from app.cluster.state import ClusterState
from app.framework import objects
from app.framework.types import PodInfo
from tests.support.apiserver import node, pod
from tests.unit.helpers import seed


def test_patches_known_pending_pods_after_freed_capacity_within_budget() -> None:
    state = ClusterState()
    pending = [pod(f"p{i}", "ns") for i in range(3)]
    running = pod("r", "ns", node_name="n1")
    seed(state, [node("n1")], [*pending, running])
    patched: list[tuple[str, str, dict[str, str]]] = []
    requeuer = Requeuer(state, lambda ns, name, annotations: patched.append((ns, name, annotations)))
    for p in pending:
        requeuer.rejected("ns", p["metadata"]["name"], p["metadata"]["uid"])
    requeuer.rejected("kube-system", "not-in-the-cache", "uid-forged")  # a body may name any pod
    requeuer.rejected("ns", "r", "uid-ns-r")  # a running pod: never written to
    assert requeuer.step(10) == 0 and patched == []  # nothing freed yet
    state.delete_pod(PodInfo(msgspec.convert(running, objects.Pod)))  # a slot frees
    assert requeuer.step(2) == 2  # the budget of this step
    assert requeuer.step(10) == 3  # the rest: one more pending pod patched, the two others refused
    assert [(ns, name) for ns, name, _ in patched] == [("ns", "p0"), ("ns", "p1"), ("ns", "p2")]
    assert all(set(annotations) == {ANNOTATION} for _, _, annotations in patched)
    assert requeuer.tracked() == 0

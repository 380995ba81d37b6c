"""The requeuer on a real cache: it patches only pods the cache knows as pending, only after
capacity was freed, and at most its budget per step."""

from __future__ import annotations

import msgspec

from app.cluster.cache import Cache
from app.cluster.requeue import ANNOTATION, Requeuer
from app.framework import objects
from app.framework.types import PodInfo
from tests.support.apiserver import node, pod
from tests.unit.helpers import seed


def test_patches_known_pending_pods_after_freed_capacity_within_budget() -> None:
    cache = Cache()
    pending = [pod(f"p{i}", "ns") for i in range(3)]
    running = pod("r", "ns", node_name="n1")
    seed(cache, [node("n1")], [*pending, running])
    patched: list[tuple[str, str, dict[str, str]]] = []
    requeuer = Requeuer(cache, lambda ns, name, annotations: patched.append((ns, name, annotations)))
    for p in pending:
        requeuer.rejected("ns", p["metadata"]["name"], p["metadata"]["uid"])
    requeuer.rejected("kube-system", "not-in-the-cache", "uid-forged")  # a body may name any pod
    requeuer.rejected("ns", "r", "uid-ns-r")  # a running pod: never written to
    assert requeuer.step(10) == 0 and patched == []  # nothing freed yet
    cache.delete_pod(PodInfo(msgspec.convert(running, objects.Pod)))  # a slot frees
    assert requeuer.step(2) == 2  # the budget of this step
    assert requeuer.step(10) == 3  # the rest: one more pending pod patched, the two others refused
    assert [(ns, name) for ns, name, _ in patched] == [("ns", "p0"), ("ns", "p1"), ("ns", "p2")]
    assert all(set(annotations) == {ANNOTATION} for _, _, annotations in patched)
    assert requeuer.tracked() == 0


def test_a_failed_patch_is_the_workers_error_and_the_thread_ends_on_stop() -> None:
    import asyncio
    import re

    from app.kube.errors import APIError

    cache = Cache()
    pending = [pod("gone", "ns"), pod("p", "ns")]
    running = pod("r", "ns", node_name="n1")
    seed(cache, [node("n1")], [*pending, running])
    outcome = {"gone": APIError(404, "NotFound", "gone"), "p": APIError(500, "InternalError", "etcd timeout")}
    stamps: list[str] = []

    def patch(ns: str, name: str, annotations: dict[str, str]) -> None:
        error = outcome.get(name)
        if error is not None:
            raise error
        stamps.append(annotations[ANNOTATION])

    requeuer = Requeuer(cache, patch)
    requeuer.rejected("ns", "gone", "uid-ns-gone")
    assert requeuer.step(10) == 0
    cache.delete_pod(PodInfo(msgspec.convert(running, objects.Pod)))
    assert requeuer.step(10) == 1 and requeuer.failed_patches == 1
    assert requeuer.error == ""  # a deleted pod (404) needs no retry: not an error
    requeuer.rejected("ns", "p", "uid-ns-p")
    cache.upsert_node(msgspec.convert(node("n2"), objects.Node))  # capacity freed again
    assert requeuer.step(10) == 1 and requeuer.failed_patches == 2
    assert requeuer.error == "re-queueing ns/p: " + str(outcome["p"]) and requeuer.errors == 1
    del outcome["p"]  # the API server recovers
    requeuer.rejected("ns", "p", "uid-ns-p")
    cache.upsert_node(msgspec.convert(node("n3"), objects.Node))
    assert requeuer.step(10) == 1 and requeuer.requeued == 1 and requeuer.error == ""
    # the stamp is a metav1.MicroTime
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", stamps[0])
    requeuer.start()
    assert requeuer.running and requeuer.name == "requeuer"
    requeuer.stop()
    assert asyncio.run(requeuer.join(10)) and not requeuer.running

"""DefaultPreemption (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go,
pkg/scheduler/framework/preemption/preemption.go, v1.30) on a small in-memory cluster: victims
are the fewest, least important pods, the candidate node follows pickOneNodeForPreemption's
criteria, and the messages are upstream's."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import msgspec

from app.framework import Code, CycleState, EnabledPlugin, Framework, Handle, PodDisruptionBudget, PodInfo, objects
from app.framework.waiting import WaitingPod
from app.plugins.defaultpreemption import (
    DefaultPreemption,
    DefaultPreemptionArgs,
    filter_pods_with_pdb_violation,
    pick_one_node,
)
from app.plugins.noderesources.fit import NodeResourcesFit, NodeResourcesFitArgs
from app.plugins.nodeunschedulable import NodeUnschedulable
from tests.support.apiserver import node as node_doc
from tests.support.apiserver import pod as pod_doc
from tests.support.cluster import MemoryCluster


def low(name: str, node: str, cpu: str, priority: int, started: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    doc = pod_doc(name, "default", node, cpu=cpu, priority=priority)
    doc["status"]["startTime"] = started
    return doc


def profile(rt: MemoryCluster) -> tuple[Framework, DefaultPreemption]:
    handle = Handle("p", 5.0, rt)
    fit = NodeResourcesFit(NodeResourcesFitArgs(), handle)
    unschedulable = NodeUnschedulable(None, handle)
    preemption = DefaultPreemption(DefaultPreemptionArgs(), handle, rng=random.Random(1))
    filters = [EnabledPlugin("NodeUnschedulable", unschedulable), EnabledPlugin("NodeResourcesFit", fit)]
    fw = Framework("p", filters, post_filter_plugins=[EnabledPlugin("DefaultPreemption", preemption)], handle=handle)
    return fw, preemption


def preempt(rt: MemoryCluster, fw: Framework, doc: dict[str, Any]) -> tuple[str, Any]:
    pod = PodInfo(msgspec.convert(doc, objects.Pod))
    snapshot = rt.snapshot()
    state = CycleState(snapshot)
    nodes = snapshot.list()
    outcome = fw.run_filter(pod, nodes, state)
    statuses = {n.name: s for n, s in zip(nodes, outcome.statuses, strict=True)}
    return fw.run_post_filter(state, pod, statuses)


def test_the_fewest_least_important_pods_are_the_victims() -> None:
    rt = MemoryCluster()
    rt.seed([node_doc("n1", cpu="4")], [low("p1", "n1", "2", 10), low("p2", "n1", "2", 20)])
    fw, _ = profile(rt)
    nominated, status = preempt(rt, fw, pod_doc("high", "default", cpu="2", priority=100))
    assert (nominated, status.code) == ("n1", Code.SUCCESS)
    # p2 (more important) is reprieved: with it back the pod still fits; p1 is evicted
    assert rt.preemptions == [("uid-default-high", "n1", ["uid-default-p1"])]


def test_the_candidate_with_the_lowest_highest_priority_victim_is_chosen() -> None:
    rt = MemoryCluster()
    rt.seed(
        [node_doc("n1", cpu="2"), node_doc("n2", cpu="2")],
        [low("a", "n1", "2", 10), low("b", "n2", "2", 5)],
    )
    fw, _ = profile(rt)
    nominated, _ = preempt(rt, fw, pod_doc("high", "default", cpu="2", priority=100))
    assert nominated == "n2" and rt.preemptions[0][2] == ["uid-default-b"]


def test_pick_one_node_criteria_in_order() -> None:
    def pods(*priorities: int, started: str = "2026-01-01T00:00:00Z") -> list[PodInfo]:
        docs = [low(f"v{i}", "x", "1", p, started) for i, p in enumerate(priorities)]
        return [PodInfo(msgspec.convert(doc, objects.Pod)) for doc in docs]

    now = 1.9e9
    assert pick_one_node([("a", pods(5), 1), ("b", pods(9), 0)], now) == "b"  # fewest PDB violations
    assert pick_one_node([("a", pods(9), 0), ("b", pods(5, 5), 0)], now) == "b"  # lowest highest priority
    assert pick_one_node([("a", pods(5, 4), 0), ("b", pods(5, 1), 0)], now) == "b"  # lowest sum
    assert pick_one_node([("a", pods(5, 5), 0), ("b", pods(5), 0)], now) == "b"  # fewest victims
    late = pods(5, started="2026-06-01T00:00:00Z")
    assert pick_one_node([("a", pods(5), 0), ("b", late, 0)], now) == "b"  # latest start
    assert pick_one_node([("a", pods(5), 0), ("b", pods(5), 0)], now) == "a"  # then the first


def test_upstreams_messages_when_preemption_cannot_help() -> None:
    rt = MemoryCluster()
    cordoned = node_doc("c", cpu="4")
    cordoned["spec"] = {"unschedulable": True}
    rt.seed([cordoned, node_doc("n1", cpu="2")], [low("same", "n1", "2", 100)])
    fw, _ = profile(rt)
    nominated, status = preempt(rt, fw, pod_doc("high", "default", cpu="2", priority=100))
    assert nominated == "" and status.code is Code.UNSCHEDULABLE
    assert status.message == (
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )
    never = pod_doc("never", "default", cpu="2", priority=1000)
    never["spec"]["preemptionPolicy"] = "Never"
    nominated, status = preempt(rt, fw, never)
    assert (nominated, status.message) == ("", "not eligible due to preemptionPolicy=Never.")
    assert rt.preemptions == []


def budget(
    allowed: int, labels: dict[str, str] | None, namespace: str = "default", disrupted: tuple[str, ...] = ()
) -> PodDisruptionBudget:
    selector = objects.LabelSelector(match_labels=labels) if labels is not None else None
    return PodDisruptionBudget(namespace, "pdb", selector, allowed, frozenset(disrupted))


def labelled(name: str, labels: dict[str, str], namespace: str = "default") -> PodInfo:
    doc = pod_doc(name, namespace, "n1", cpu="1", priority=1)
    doc["metadata"]["labels"] = labels
    return PodInfo(msgspec.convert(doc, objects.Pod))


def test_filter_pods_with_pdb_violation_follows_upstream() -> None:
    """filterPodsWithPDBViolation: each matching budget loses one disruption per pod, in order;
    the pods that take it below zero violate it; stable order."""
    web = [labelled(f"w{i}", {"app": "web"}) for i in range(3)]
    violating, ok = filter_pods_with_pdb_violation(web, [budget(1, {"app": "web"})])
    assert [p.name for p in violating] == ["w1", "w2"] and [p.name for p in ok] == ["w0"]
    # another namespace, an empty or nil selector, a pod without labels: no match
    assert filter_pods_with_pdb_violation(web, [budget(0, {"app": "web"}, namespace="other")])[0] == []
    assert filter_pods_with_pdb_violation(web, [budget(0, {})])[0] == []
    assert filter_pods_with_pdb_violation(web, [budget(0, None)])[0] == []
    assert filter_pods_with_pdb_violation([labelled("bare", {})], [budget(0, {})])[0] == []
    # a pod in status.disruptedPods is processed already: it neither violates nor uses the budget
    violating, _ = filter_pods_with_pdb_violation(web, [budget(1, {"app": "web"}, disrupted=("w0",))])
    assert [p.name for p in violating] == ["w2"]


def test_the_candidate_with_fewer_pdb_violations_wins_over_lower_priority_victims() -> None:
    rt = MemoryCluster()
    protected = low("guarded", "n1", "2", 5)
    protected["metadata"]["labels"] = {"app": "guarded"}
    rt.seed([node_doc("n1", cpu="2"), node_doc("n2", cpu="2")], [protected, low("plain", "n2", "2", 50)])
    rt.pdbs = [budget(0, {"app": "guarded"})]
    fw, _ = profile(rt)
    nominated, _ = preempt(rt, fw, pod_doc("high", "default", cpu="2", priority=100))
    # without the budget n1 (the priority-5 victim) would be chosen; with it, n2's violates none
    assert nominated == "n2" and rt.preemptions[0][2] == ["uid-default-plain"]
    rt.pdbs = []
    rt.preemptions.clear()
    nominated, _ = preempt(rt, fw, pod_doc("high", "default", cpu="2", priority=100))
    assert nominated == "n1"


def test_a_victim_waiting_at_permit_is_rejected_not_deleted() -> None:
    async def scenario() -> None:
        rt = MemoryCluster()
        rt.seed([node_doc("n1", cpu="4")], [low("bound", "n1", "2", 10), low("waiting", "n1", "2", 10)])
        fw, preemption = profile(rt)
        victim = next(p for p in rt.snapshot().get("n1").pods if p.name == "waiting")  # type: ignore[union-attr]
        waiting = WaitingPod(victim, "n1", {"Coscheduling": 60.0})
        preemption.waiting_pods.add(waiting)
        nominated, _ = preempt(rt, fw, pod_doc("high", "default", cpu="4", priority=100))
        assert nominated == "n1"
        assert rt.preemptions == [("uid-default-high", "n1", ["uid-default-bound"])]  # only the bound one deleted
        result = await waiting.result
        assert (result.code, result.reasons, result.plugin) == (Code.UNSCHEDULABLE, ("preempted",), "DefaultPreemption")

    asyncio.run(scenario())


def test_lower_priority_pods_nominated_to_the_chosen_node_lose_their_nomination() -> None:
    rt = MemoryCluster()
    nominated_low = pod_doc("earlier", "default", cpu="1", priority=50)
    nominated_low["status"]["nominatedNodeName"] = "n1"
    nominated_high = pod_doc("vip", "default", cpu="1", priority=500)
    nominated_high["status"]["nominatedNodeName"] = "n1"
    rt.seed([node_doc("n1", cpu="2")], [low("p1", "n1", "2", 10), nominated_low, nominated_high])
    fw, _ = profile(rt)
    nominated, _ = preempt(rt, fw, pod_doc("high", "default", cpu="1", priority=100))
    assert nominated == "n1" and rt.preemptions[0][2] == ["uid-default-p1"]
    assert rt.unnominated == ["uid-default-earlier"]  # the priority-500 one keeps its nomination

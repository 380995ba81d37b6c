"""DefaultPreemption (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go,
pkg/scheduler/framework/preemption/preemption.go, v1.30) on a small in-memory cluster: victims
are the fewest, least important pods, the candidate node follows pickOneNodeForPreemption's
criteria, and the messages are upstream's; then kube-scheduler v1.30's tables of the plugin and of
the preemption evaluator, as data."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import pytest

from app.extender.verbs import run_filter
from app.framework import (
    SUCCESS,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    PodDisruptionBudget,
    PodInfo,
    PreFilterResult,
    Status,
    objects,
    plugin_lists,
)
from app.framework.nominator import NominatingInfo, NominatingMode
from app.framework.runtime import Framework
from app.framework.waiting import WaitingPod
from app.plugins.defaultpreemption import (
    Candidate,
    DefaultPreemption,
    DefaultPreemptionArgs,
    filter_pods_with_pdb_violation,
    nodes_where_preemption_might_help,
    pick_one_node,
)
from app.plugins.interpodaffinity import InterPodAffinity, InterPodAffinityArgs
from app.plugins.noderesources.fit import NodeResourcesFit, NodeResourcesFitArgs
from app.plugins.nodeunschedulable import NodeUnschedulable
from app.plugins.podtopologyspread import PodTopologySpread, PodTopologySpreadArgs
from tests.support.apiserver import node as node_doc
from tests.support.apiserver import pod as pod_doc
from tests.support.cluster import MemoryCluster
from tests.support.fakes import FakeFilter, FalseFilter, MatchFilter, TrueFilter
from tests.unit.helpers import enabled


def low(name: str, node: str, cpu: str, priority: int, started: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    doc = pod_doc(name, "default", node, cpu=cpu, priority=priority)
    doc["status"]["startTime"] = started
    return doc


def profile(rt: MemoryCluster) -> tuple[Framework, DefaultPreemption]:
    """NodeUnschedulable, NodeResourcesFit and DefaultPreemption, built with their Framework as
    the handle (as the assembly builds them), on ``rt`` and its nominator."""
    built: list[DefaultPreemption] = []

    def lists(fw: Framework) -> Any:
        built.append(DefaultPreemption(DefaultPreemptionArgs(), fw, rng=random.Random(1)))
        filters = [NodeUnschedulable(None, fw), NodeResourcesFit(NodeResourcesFitArgs(), fw)]
        return plugin_lists(filter=[enabled(f) for f in filters], post_filter=[enabled(built[0])])

    fw = Framework("p", lists, cluster=rt, nominator=rt.nominator)
    return fw, built[0]


def prefiltered(rt: MemoryCluster, fw: Handle, pod: PodInfo) -> CycleState:
    """A cycle's state with the profile's PreFilter run on ``rt``'s nodes, as the scheduling cycle
    leaves it for PostFilter (upstream's tests run ``RunPreFilterPlugins`` first too)."""
    assert isinstance(fw, Framework)
    snapshot = rt.snapshot()
    state = CycleState(snapshot)
    _, status, _ = fw.run_pre_filter_plugins(state, pod, snapshot.list())
    assert status.code is not Code.ERROR, status
    return state


def preempt(rt: MemoryCluster, fw: Framework, doc: dict[str, Any]) -> tuple[str, Any]:
    pod = PodInfo(msgspec.convert(doc, objects.Pod))
    snapshot = rt.snapshot()
    state = CycleState(snapshot)
    nodes = snapshot.list()
    outcome = run_filter(fw, pod, nodes, state)
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

    def pick(*candidates: tuple[str, list[PodInfo], int]) -> str:
        chosen = pick_one_node([Candidate(*c) for c in candidates], now)
        assert chosen is not None
        return chosen.name

    now = 1.9e9
    assert pick(("a", pods(5), 1), ("b", pods(9), 0)) == "b"  # fewest PDB violations
    assert pick(("a", pods(9), 0), ("b", pods(5, 5), 0)) == "b"  # lowest highest priority
    assert pick(("a", pods(5, 4), 0), ("b", pods(5, 1), 0)) == "b"  # lowest sum
    assert pick(("a", pods(5, 5), 0), ("b", pods(5), 0)) == "b"  # fewest victims
    late = pods(5, started="2026-06-01T00:00:00Z")
    assert pick(("a", pods(5), 0), ("b", late, 0)) == "b"  # latest start
    assert pick(("a", pods(5), 0), ("b", pods(5), 0)) == "a"  # then the first
    assert pick_one_node([], now) is None


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
    assert (nominated, status.message) == ("", "preemption: not eligible due to preemptionPolicy=Never.")
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
        # v1.33+ (SchedulerAsyncPreemption, executor.go prepareCandidateAsync): off the cycle
        assert rt.preemptions == []
        await preemption.executor.wait()
        assert rt.preemptions == [("uid-default-high", "n1", ["uid-default-bound"])]  # only the bound one deleted
        result = await waiting.result
        assert (result.code, result.reasons, result.plugin) == (Code.UNSCHEDULABLE, ("preempted",), "DefaultPreemption")
        # executor.go PreemptPod: the Event of a victim rejected at Permit says so
        assert sorted(rt.preempted_events) == [
            ("uid-default-bound", "uid-default-high", "n1", False),
            ("uid-default-waiting", "uid-default-high", "n1", True),
        ]

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


# -- kube-scheduler v1.30's tables -----------------------------------------------------------------
#
# pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go and
# pkg/scheduler/framework/preemption/preemption_test.go, row for row, the case names verbatim.
# Pods are in "default" (upstream's DryRun tables leave the namespace empty, pods and budgets
# alike) and their UID is their name; epochTimeN (N nanoseconds after the epoch upstream) is N
# seconds here: the order is what counts, and an RFC 3339 startTime keeps no nanoseconds.

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"pods": "1"}
NODE_RES = {"cpu": "200m", "memory": "400"}
EXTENDER = "needs a scheduler extender (Extender.ProcessPreemption): the standalone scheduler calls none"


def epoch(n: int) -> str:
    """``epochTimeN`` (see above)."""
    return f"1970-01-01T00:00:{n:02d}Z"


def mk_pod(
    name: str,
    node: str = "",
    priority: int = 0,
    req: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    start: str = "",
    nominated: str = "",
    terminating: bool = False,
    **spec: Any,
) -> dict[str, Any]:
    """``st.MakePod()``: UID = name; ``req``: the one container's requests (none: ``Req`` unset)."""
    req = req or {}
    doc = pod_doc(name, "default", node, cpu=req.get("cpu"), memory=req.get("memory"), uid=name, priority=priority)
    doc["spec"].update(spec)
    if labels is not None:
        doc["metadata"]["labels"] = labels
    if start:
        doc["status"]["startTime"] = start
    if nominated:
        doc["status"]["nominatedNodeName"] = nominated
    if terminating:
        doc["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return doc


def mk_node(spec: str, capacity: dict[str, str] | None = None, split: bool = False, **labels: str) -> dict[str, Any]:
    """``st.MakeNode().Capacity(capacity)`` (32 pods unless it says); ``split``: ``name/zone/region``
    labelled ``hostname``, ``zone``, ``region`` (upstream's DryRun and Preempt tables)."""
    parts = spec.split("/")
    res = {"pods": "32", **(capacity or {})}
    if split:
        labels = {**dict(zip(("hostname", "zone", "region"), parts, strict=False)), **labels}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": parts[0], "uid": f"uid-{parts[0]}", "labels": labels},
        "spec": {},
        "status": {"allocatable": dict(res), "capacity": dict(res)},
    }


def pdb(allowed: int, disrupted: tuple[str, ...] = (), **match: str) -> PodDisruptionBudget:
    return PodDisruptionBudget(
        "default", "pdb", objects.LabelSelector(match_labels=match), allowed, frozenset(disrupted)
    )


def exists(key: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "Exists"}]}


def spread(key: str) -> dict[str, Any]:
    """``SpreadConstraint(1, key, DoNotSchedule, Exists("foo"))``."""
    return {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": exists("foo")}


ANTI_FOO = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": exists("foo"), "topologyKey": "hostname"}]
    }
}
SPREAD_FOO = [spread("zone"), spread("hostname")]


class Offsets(random.Random):
    """Go's ``rand.Seed(4)`` as upstream's DryRun table reads it: ``rand.Int31n(5)`` gives 4, 1, 3."""

    def __init__(self, *offsets: int) -> None:
        super().__init__(4)
        self.offsets = list(offsets)

    def randrange(self, *args: Any, **kwargs: Any) -> int:
        return self.offsets.pop(0) % args[0] if self.offsets else super().randrange(*args, **kwargs)


class ErringOnLabel:
    """Upstream's ``TestPlugin``: its PreFilter extensions ``AddPod`` and ``RemovePod`` fail on a
    node labelled ``error=true``."""

    name = "test-plugin"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        return None, SUCCESS

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo, node: NodeInfo) -> Status:
        return Status.error(f"failed to add pod: {pod.name}") if node.labels.get("error") == "true" else SUCCESS

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo, node: NodeInfo) -> Status:
        return Status.error(f"failed to remove pod: {pod.name}") if node.labels.get("error") == "true" else SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS


Factory = Callable[[Handle], Any]
FIT: Factory = lambda h: NodeResourcesFit(NodeResourcesFitArgs(), h)  # noqa: E731
AFFINITY: Factory = lambda h: InterPodAffinity(InterPodAffinityArgs(), h)  # noqa: E731
SPREAD: Factory = lambda h: PodTopologySpread(PodTopologySpreadArgs(), h)  # noqa: E731


def build(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    plugins: Sequence[Any],
    args: DefaultPreemptionArgs | None = None,
    rng: random.Random | None = None,
    budgets: Sequence[PodDisruptionBudget] = (),
) -> tuple[MemoryCluster, Framework, DefaultPreemption]:
    """A profile of ``plugins`` (instances, or factories of a :class:`Handle`: given the
    Framework) and DefaultPreemption on a cluster of ``nodes`` and ``pods``."""
    rt = MemoryCluster()
    rt.seed(nodes, pods)
    rt.pdbs = list(budgets)
    held: list[DefaultPreemption] = []

    def lists(fw: Framework) -> Any:
        built = [p(fw) if callable(p) and not hasattr(p, "name") else p for p in plugins]
        held.append(DefaultPreemption(args or DefaultPreemptionArgs(), fw, rng=rng or Offsets()))
        return plugin_lists(filter=[enabled(p) for p in built], post_filter=[enabled(held[0])])

    fw = Framework("p", lists, cluster=rt, nominator=rt.nominator)
    return rt, fw, held[0]


def info(doc: dict[str, Any]) -> PodInfo:
    return PodInfo(msgspec.convert(doc, objects.Pod))


def sorted_nodes(rt: MemoryCluster) -> list[NodeInfo]:
    return sorted(rt.snapshot().list(), key=lambda n: n.name)


def summary(candidates: Sequence[Candidate]) -> dict[str, tuple[list[str], int]]:
    """Upstream's comparison: candidates by node, victims by name."""
    return {c.name: (sorted(v.name for v in c.victims), c.num_pdb_violations) for c in candidates}


U = Status(Code.UNSCHEDULABLE)
UU = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


# -- TestPostFilter ----------------------------------------------------------------------------------

POST_FILTER = [
    pytest.param(
        mk_pod("p", priority=HIGH),
        [mk_pod("p1", "node1")],
        [mk_node("node1", ONE_POD)],
        {"node1": U},
        ("node1", Code.SUCCESS, ""),
        id="pod with higher priority can be made schedulable",
    ),
    pytest.param(
        mk_pod("p"),
        [mk_pod("p1", "node1")],
        [mk_node("node1", ONE_POD)],
        {"node1": U},
        (
            "",
            Code.UNSCHEDULABLE,
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        ),
        id="pod with tied priority is still unschedulable",
    ),
    pytest.param(
        mk_pod("p", priority=HIGH),
        [mk_pod("p1", "node1")],
        [mk_node("node1", ONE_POD)],
        {"node1": UU},
        ("", Code.UNSCHEDULABLE, "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."),
        id="preemption should respect filteredNodesStatuses",
    ),
    pytest.param(  # v1.36.3's row: a node without a status (NewDefaultNodeToStatus) is unresolvable
        mk_pod("p", priority=HIGH),
        [mk_pod("p1", "node1")],
        [mk_node("node1", ONE_POD)],
        {},
        ("", Code.UNSCHEDULABLE, "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."),
        id="preemption should respect absent NodeToStatusReader entry meaning UnschedulableAndUnresolvable",
    ),
    pytest.param(
        mk_pod("p", priority=MID),
        [mk_pod("p1", "node1", HIGH), mk_pod("p2", "node2", LOW)],
        [mk_node("node1", ONE_POD), mk_node("node2", ONE_POD)],
        {"node1": U, "node2": U},
        ("node2", Code.SUCCESS, ""),
        id="pod can be made schedulable on one node",
    ),
    pytest.param(
        None,
        [],
        [],
        {},
        None,
        id="preemption result filtered out by extenders",
        marks=pytest.mark.skip(reason=EXTENDER),
    ),
    pytest.param(
        mk_pod("p", priority=HIGH, req=LARGE),
        [mk_pod("p1", "node1"), mk_pod("p2", "node2")],
        [mk_node("node1", NODE_RES), mk_node("node2", NODE_RES)],
        {"node1": U, "node2": U},
        ("", Code.UNSCHEDULABLE, "preemption: 0/2 nodes are available: 2 Insufficient cpu."),
        id="no candidate nodes found, no enough resource after removing low priority pods",
    ),
    pytest.param(
        mk_pod("p", priority=HIGH, req=LARGE),
        [mk_pod("p1", "node1", HIGH), mk_pod("p2", "node2"), mk_pod("p3", "node3", HIGH)],
        [mk_node("node1", ONE_POD), mk_node("node2", NODE_RES), mk_node("node3", ONE_POD)],
        {"node1": U, "node2": U, "node3": U},
        (
            "",
            Code.UNSCHEDULABLE,
            "preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod.",
        ),
        id="no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
    ),
    pytest.param(
        mk_pod("p", priority=HIGH, req=LARGE),
        [mk_pod("p1", "node1"), mk_pod("p2", "node2")],
        [mk_node(f"node{i}", NODE_RES) for i in range(1, 5)],
        {"node1": U, "node2": U, "node4": UU},  # node3: no status
        (
            "",
            Code.UNSCHEDULABLE,
            "preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling.",
        ),
        id="no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 nodes don't have "
        "enough CPU resource",
    ),
    pytest.param(
        mk_pod("p", priority=HIGH, req=LARGE),
        [mk_pod("p1", "node1")],
        [mk_node("node1", LARGE, error="true")],
        {"node1": U},
        ("", Code.ERROR, 'preemption: running RemovePod on PreFilter plugin "test-plugin": failed to remove pod: p'),
        id="only one node but failed with TestPlugin",
    ),
    pytest.param(
        mk_pod("p", priority=HIGH, req=LARGE),
        [mk_pod("p1", "node1"), mk_pod("p2", "node2", req=MEDIUM)],
        [mk_node("node1", LARGE, error="true"), mk_node("node2", LARGE)],
        {"node1": U, "node2": U},
        ("node2", Code.SUCCESS, ""),
        id="one failed with TestPlugin and the other pass",
    ),
]


@pytest.mark.parametrize(("pod", "pods", "nodes", "statuses", "want"), POST_FILTER)
def test_post_filter(
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    statuses: dict[str, Status],
    want: tuple[str, Code, str],
) -> None:
    """``TestPostFilter``: the Filter statuses are given, as upstream gives them."""
    rt, fw, _ = build(nodes, pods, [FIT, ErringOnLabel()])
    nominated, status = fw.run_post_filter(prefiltered(rt, fw, info(pod)), info(pod), statuses)
    assert (nominated, status.code, status.message) == want


@pytest.mark.parametrize(("pod", "pods", "nodes", "statuses", "want"), POST_FILTER)
def test_post_filter_result_nominating_mode(
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    statuses: dict[str, Status],
    want: tuple[str, Code, str],
) -> None:
    """``TestPostFilter``'s ``wantResult``: ``NewPostFilterResultWithNominatedNode`` of the node on
    success and of ``""`` (``ModeOverride``: the pod's nomination is cleared) when no node is a
    candidate; nil (``ModeNoop``: it stays) on an error."""
    rt, fw, _ = build(nodes, pods, [FIT, ErringOnLabel()])
    nominated, status = fw.run_post_filter(prefiltered(rt, fw, info(pod)), info(pod), statuses)
    assert isinstance(nominated, NominatingInfo)
    mode = NominatingMode.NOOP if want[1] is Code.ERROR else NominatingMode.OVERRIDE
    assert (str(nominated), nominated.mode, status.code) == (want[0], mode, want[1])


def test_an_ineligible_pod_keeps_its_nomination_and_a_plain_string_result_is_read_as_upstreams() -> None:
    """``Preempt`` returns nil (``ModeNoop``) for a pod not eligible to preempt; a plugin returning a
    plain ``str`` gives ``ModeOverride`` with its node and nil with ``""``; ``RunPostFilterPlugins``
    keeps the last result of the rejecting plugins that is not ``ModeNoop``."""
    rt = MemoryCluster()
    rt.seed([node_doc("n1", cpu="2")], [low("busy", "n1", "2", 1)])
    fw, preemption = profile(rt)
    never = pod_doc("never", "default", cpu="2", priority=1000)
    never["spec"]["preemptionPolicy"] = "Never"
    never["status"]["nominatedNodeName"] = "n1"
    nominated, status = preempt(rt, fw, never)
    assert (nominated, status.code) == ("", Code.UNSCHEDULABLE)
    assert isinstance(nominated, NominatingInfo) and nominated.mode is NominatingMode.NOOP
    assert NominatingInfo.of("n1").mode is NominatingMode.OVERRIDE and NominatingInfo.of("").mode is NominatingMode.NOOP

    class Rejecting:
        name = "Rejecting"

        def post_filter(self, state: CycleState, pod: PodInfo, statuses: Any) -> tuple[str, Status]:
            return "", Status(Code.UNSCHEDULABLE, ("no",))

    high = pod_doc("high", "default", cpu="2", priority=1)  # no lower-priority pod: no candidate
    for order in ([preemption, Rejecting()], [Rejecting(), preemption]):
        chain = Framework(
            "p", plugin_lists(filter=list(fw.filter_plugins), post_filter=[enabled(p) for p in order]), cluster=rt
        )
        nominated, status = preempt(rt, chain, high)
        assert isinstance(nominated, NominatingInfo) and nominated.clears() and status.code is Code.UNSCHEDULABLE


# -- TestDryRunPreemption ----------------------------------------------------------------------------


def victims(**by_node: list[str] | tuple[list[str], int]) -> dict[str, tuple[list[str], int]]:
    """``node=[victim names]`` or ``node=([victim names], NumPDBViolations)``."""
    return {n: v if isinstance(v, tuple) else (v, 0) for n, v in by_node.items()}


TWO_MID = [mk_pod("p1", "node1", MID), mk_pod("p2", "node2", MID)]
TWO_MID_LARGE = [mk_pod("p1", "node1", MID, LARGE), mk_pod("p2", "node2", MID, LARGE)]
FOO_MEDIUM = [mk_pod(f"p1.{i}", "node1", MID, MEDIUM, labels={"app": "foo"}) for i in (1, 2, 3)]
FIVE = [f"node{i}" for i in range(1, 6)]
LIMIT_2 = DefaultPreemptionArgs(min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=1)

DRY_RUN = [
    pytest.param(
        [FalseFilter()],
        ["node1", "node2"],
        [mk_pod("p", priority=HIGH)],
        TWO_MID,
        {},
        [{}],
        [2],
        id="a pod that does not fit on any node",
    ),
    pytest.param(
        [TrueFilter()],
        ["node1", "node2"],
        [mk_pod("p", priority=HIGH)],
        TWO_MID,
        {"code": Code.UNSCHEDULABLE},
        [{}],
        [2],
        id="a pod that fits with no preemption",
    ),
    pytest.param(
        [MatchFilter()],
        ["node1", "node2"],
        [mk_pod("node1", priority=HIGH)],
        TWO_MID,
        {"code": Code.UNSCHEDULABLE},
        [{}],
        [2],
        id="a pod that fits on one node with no preemption",
    ),
    pytest.param(
        [FIT],
        ["node1", "node2"],
        [mk_pod("p", priority=HIGH, req=LARGE)],
        TWO_MID_LARGE,
        {},
        [victims(node1=["p1"], node2=["p2"])],
        [4],
        id="a pod that fits on both nodes when lower priority pods are preempted",
    ),
    pytest.param(
        [FIT],
        ["node1", "node2"],
        [mk_pod("p", priority=LOW, req=LARGE)],
        TWO_MID_LARGE,
        {},
        [{}],
        [0],
        id="a pod that would fit on the nodes, but other pods running are higher priority, no preemption would happen",
    ),
    pytest.param(
        [FIT],
        ["node1", "node2"],
        [mk_pod("p", priority=HIGH, req=LARGE)],
        [mk_pod("p1.1", "node1", LOW, SMALL), mk_pod("p1.2", "node1", MID, LARGE), mk_pod("p2", "node2", MID, LARGE)],
        {},
        [victims(node1=["p1.2"], node2=["p2"])],
        [5],
        id="medium priority pod is preempted, but lower priority one stays as it is small",
    ),
    pytest.param(
        [FIT],
        ["node1", "node2"],
        [mk_pod("p", priority=HIGH, req=LARGE)],
        [
            mk_pod("p1.1", "node1", MID, SMALL),
            mk_pod("p1.2", "node1", LOW, SMALL),
            mk_pod("p1.3", "node1", MID, MEDIUM),
            mk_pod("p1.4", "node1", HIGH, SMALL),
            mk_pod("p2", "node2", HIGH, LARGE),
        ],
        {},
        [victims(node1=["p1.2", "p1.3"])],
        [4],
        id="mixed priority pods are preempted",
    ),
    pytest.param(
        [FIT],
        ["node1", "node2"],
        [mk_pod("p", priority=HIGH, req=LARGE)],
        [
            mk_pod("p1.1", "node1", LOW, SMALL, start=epoch(5)),
            mk_pod("p1.2", "node1", LOW, SMALL, start=epoch(4)),
            mk_pod("p1.3", "node1", MID, MEDIUM, start=epoch(3)),
            mk_pod("p1.4", "node1", HIGH, SMALL, start=epoch(2)),
            mk_pod("p2", "node2", HIGH, LARGE, start=epoch(1)),
        ],
        {},
        [victims(node1=["p1.1", "p1.3"])],
        [4],
        id="mixed priority pods are preempted, pick later StartTime one when priorities are equal",
    ),
    pytest.param(
        [FIT, AFFINITY],
        ["node1", "node2"],
        [mk_pod("p", priority=HIGH, req=SMALL, labels={"foo": ""})],
        [
            mk_pod("p1.1", "node1", LOW, SMALL, labels={"foo": ""}, affinity=ANTI_FOO),
            mk_pod("p1.2", "node1", MID, SMALL),
            mk_pod("p1.3", "node1", HIGH, SMALL),
            mk_pod("p2", "node2", HIGH, SMALL),
        ],
        {},
        [victims(node1=["p1.1"])],
        [3],
        id="pod with anti-affinity is preempted",
    ),
    pytest.param(
        [SPREAD],
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        [mk_pod("p", priority=HIGH, labels={"foo": ""}, topologySpreadConstraints=SPREAD_FOO)],
        [
            mk_pod("pod-a1", "node-a", MID, labels={"foo": ""}),
            mk_pod("pod-a2", "node-a", LOW, labels={"foo": ""}),
            mk_pod("pod-b1", "node-b", LOW, labels={"foo": ""}),
            mk_pod("pod-x1", "node-x", HIGH, labels={"foo": ""}),
            mk_pod("pod-x2", "node-x", HIGH, labels={"foo": ""}),
        ],
        {},
        [victims(**{"node-a": ["pod-a2"], "node-b": ["pod-b1"]})],
        [5],
        id="preemption to resolve pod topology spread filter failure",
    ),
    pytest.param(
        [FIT],
        ["node1", "node2"],
        [mk_pod("p", priority=HIGH, req=LARGE)],
        TWO_MID_LARGE,
        {"code": Code.UNSCHEDULABLE},
        [{}],
        [2],
        id="get Unschedulable in the preemption phase when the filter plugins filtering the nodes",
    ),
    pytest.param(
        [FIT],
        ["node1"],
        [mk_pod("p", priority=HIGH, req=VERY_LARGE)],
        FOO_MEDIUM[:2],
        {"budgets": [pdb(1, app="foo")]},
        [victims(node1=(["p1.1", "p1.2"], 1))],
        [3],
        id="preemption with violation of same pdb",
    ),
    pytest.param(
        [FIT],
        ["node1"],
        [mk_pod("p", priority=HIGH, req=VERY_LARGE)],
        FOO_MEDIUM[:2],
        {"budgets": [pdb(1, ("p2",), app="foo")]},
        [victims(node1=(["p1.1", "p1.2"], 1))],
        [3],
        id="preemption with violation of the pdb with pod whose eviction was processed, the victim doesn't belong to "
        "DisruptedPods",
    ),
    pytest.param(
        [FIT],
        ["node1"],
        [mk_pod("p", priority=HIGH, req=VERY_LARGE)],
        FOO_MEDIUM[:2],
        {"budgets": [pdb(1, ("p1.2",), app="foo")]},
        [victims(node1=(["p1.1", "p1.2"], 0))],
        [3],
        id="preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to "
        "DisruptedPods",
    ),
    pytest.param(
        [FIT],
        ["node1"],
        [mk_pod("p", priority=HIGH, req=VERY_LARGE)],
        FOO_MEDIUM,
        {"budgets": [pdb(1, ("p1.3",), app="foo")]},
        [victims(node1=(["p1.1", "p1.2", "p1.3"], 1))],
        [4],
        id="preemption with violation of the pdb with pod whose eviction was processed, the victim which belongs to "
        "DisruptedPods is treated as 'nonViolating'",
    ),
    pytest.param(
        [FIT],
        FIVE,
        [mk_pod("p", priority=HIGH, req=LARGE)],
        [mk_pod(f"p{i}", f"node{i}", MID, LARGE) for i in range(1, 6)],
        {"args": LIMIT_2},
        [victims(node1=["p1"], node5=["p5"])],  # cycle=0 => offset=4 => node5 (yes), node1 (yes)
        [4],
        id="all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
    ),
    pytest.param(
        [FIT],
        FIVE,
        [mk_pod("p", priority=HIGH, req=LARGE)],
        [mk_pod(f"p{i}", f"node{i}", VERY_HIGH if i in (2, 5) else MID, LARGE) for i in range(1, 6)],
        {"args": LIMIT_2},
        [victims(node1=["p1"], node3=["p3"])],  # offset=4 => node5 (no), node1 (yes), node2 (no), node3 (yes)
        [4],
        id="some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
    ),
    pytest.param(
        [FIT],
        FIVE,
        [mk_pod(f"tp{i}", priority=HIGH, req=LARGE) for i in (1, 2, 3)],
        [mk_pod(f"p{i}", f"node{i}", MID, LARGE) for i in range(1, 6)],
        {"args": LIMIT_2},
        [
            victims(node1=["p1"], node5=["p5"]),  # cycle=0 => offset=4 => node5 (yes), node1 (yes)
            victims(node2=["p2"], node3=["p3"]),  # cycle=1 => offset=1 => node2 (yes), node3 (yes)
            victims(node4=["p4"], node5=["p5"]),  # cycle=2 => offset=3 => node4 (yes), node5 (yes)
        ],
        [4, 4, 4],
        id="preemption offset across multiple scheduling cycles and wrap around",
    ),
    pytest.param(
        [FIT],
        FIVE,
        [mk_pod("p", priority=HIGH, req=LARGE)],
        [
            mk_pod(f"p{i}", f"node{i}", MID, LARGE, labels={"app": "foo"} if i in (1, 2, 5) else None)
            for i in range(1, 6)
        ],
        {
            "args": DefaultPreemptionArgs(min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=2),
            "budgets": [pdb(0, app="foo")],
        },
        # offset=4 => node5 (yes, pdb), node1 (yes, pdb), node2 (no, pdb), node3 (yes): three
        # candidates though two are asked for, one of them violating no budget
        [victims(node1=(["p1"], 1), node3=["p3"], node5=(["p5"], 1))],
        [8],
        id="preemption looks past numCandidates until a non-PDB violating node is found",
    ),
]


@pytest.mark.parametrize(
    ("plugins", "node_names", "test_pods", "init_pods", "opts", "expected", "filter_calls"), DRY_RUN
)
def test_dry_run_preemption(
    plugins: list[Any],
    node_names: list[str],
    test_pods: list[dict[str, Any]],
    init_pods: list[dict[str, Any]],
    opts: dict[str, Any],
    expected: list[dict[str, tuple[list[str], int]]],
    filter_calls: list[int],
) -> None:
    """``TestDryRunPreemption``: the candidates (as sets) and the FakeFilter's calls of each cycle,
    over every node in name order, the offsets those of upstream's seed."""
    fake = FakeFilter(code=opts.get("code", Code.SUCCESS))
    nodes = [mk_node(n, VERY_LARGE, split=True) for n in node_names]
    rt, _, plugin = build(nodes, init_pods, [fake, *plugins], opts.get("args"), Offsets(4, 1, 3))
    node_infos = sorted_nodes(rt)
    budgets = opts.get("budgets", [])
    for cycle, doc in enumerate(test_pods):
        before = fake.calls
        offset, wanted = plugin.offset_and_num_candidates(len(node_infos))
        got, _, _ = plugin.dry_run(
            prefiltered(rt, plugin.handle, info(doc)), info(doc), node_infos, budgets, offset, wanted
        )
        assert summary(got) == expected[cycle], f"cycle {cycle}"
        assert fake.calls - before == filter_calls[cycle], f"cycle {cycle}"


# -- SelectVictimsOnNode with nominated pods (RunFilterPluginsWithNominatedPods) ----------------------
#
# node1 (500m) runs a and b (200m each, priority LOW, a the more important: it started first); p
# (MID, 300m) preempts. Alone, b is enough; a pending pod of equal or higher priority nominated to
# node1 keeps its room there (addNominatedPods), so it takes more victims or rules the node out. A
# lower-priority nominated pod, or p's own nomination, is not counted. Each Filter run that passes
# with nominated pods added is run again without them (the FakeFilter's calls).

NODE1_AB = [
    mk_pod("a", "node1", LOW, MEDIUM, start=epoch(1)),
    mk_pod("b", "node1", LOW, MEDIUM, start=epoch(2)),
]

NOMINATED = [
    pytest.param([], {"node1": (["b"], 0)}, 3, id="no nominated pod: one victim"),
    pytest.param(
        [mk_pod("n", priority=HIGH, req=SMALL, nominated="node1")],
        {"node1": (["a", "b"], 0)},
        4,
        id="a higher-priority nominated pod takes room: more victims",
    ),
    pytest.param(
        [mk_pod("n", priority=MID, req=SMALL, nominated="node1")],
        {"node1": (["a", "b"], 0)},
        4,
        id="an equal-priority nominated pod counts too",
    ),
    pytest.param(
        [mk_pod("n", priority=HIGH, req=LARGE, nominated="node1")],
        {},
        1,
        id="a higher-priority nominated pod leaves too little room: no candidate",
    ),
    pytest.param(
        [mk_pod("n", priority=LOW, req=LARGE, nominated="node1")],
        {"node1": (["b"], 0)},
        3,
        id="a lower-priority nominated pod is not counted",
    ),
    pytest.param(
        [mk_pod("n", priority=HIGH, req=SMALL, nominated="node2")],
        {"node1": (["b"], 0)},
        3,
        id="a pod nominated to another node is not counted",
    ),
]


@pytest.mark.parametrize(("nominated", "expected", "filter_calls"), NOMINATED)
def test_select_victims_counts_nominated_pods(
    nominated: list[dict[str, Any]], expected: dict[str, tuple[list[str], int]], filter_calls: int
) -> None:
    fake = FakeFilter()
    nodes = [mk_node("node1", VERY_LARGE), mk_node("node2", {"cpu": "0", "memory": "0"})]
    rt, _, plugin = build(nodes, [*NODE1_AB, *nominated], [fake, FIT])
    node1 = rt.snapshot().get("node1")
    assert node1 is not None
    pod = mk_pod("p", priority=MID, req=LARGE)
    got, statuses, _ = plugin.dry_run(prefiltered(rt, plugin.handle, info(pod)), info(pod), [node1], [], 0, 1)
    assert summary(got) == expected
    assert fake.calls == filter_calls
    if not expected:
        status = statuses["node1"]
        assert (status.code, status.reasons) == (Code.UNSCHEDULABLE, ("Insufficient cpu", "Insufficient memory"))


def test_a_node_must_pass_without_the_nominated_pods_too() -> None:
    """The second pass: p needs a ``foo`` pod on its host (required pod affinity); the only one is
    a higher-priority pod nominated to node1. With it counted Filter passes, without it not: no
    candidate, the status of the pass without."""
    affine = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": exists("foo"), "topologyKey": "hostname"}
            ]
        }
    }
    friend = mk_pod("n", priority=HIGH, req=SMALL, labels={"foo": ""}, nominated="node1")
    rt, _, plugin = build([mk_node("node1", VERY_LARGE, split=True)], [*NODE1_AB, friend], [AFFINITY, FIT])
    node1 = rt.snapshot().get("node1")
    assert node1 is not None
    pod = info(mk_pod("p", priority=MID, req=SMALL, affinity=affine))
    got, statuses, _ = plugin.dry_run(prefiltered(rt, plugin.handle, pod), pod, [node1], [], 0, 1)
    assert got == []
    status = statuses["node1"]
    assert (status.code, status.reasons) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ("node(s) didn't match pod affinity rules",),
    )


def test_the_preemptors_own_nomination_is_not_counted() -> None:
    """``addNominatedPods`` skips the pod itself (``pi.Pod.UID != pod.UID``): p, nominated to node1
    by an earlier preemption, does not keep room there against itself."""
    pod = mk_pod("p", priority=MID, req=LARGE, nominated="node1")
    rt, _, plugin = build([mk_node("node1", VERY_LARGE)], [*NODE1_AB, pod], [FIT])
    node1 = rt.snapshot().get("node1")
    assert node1 is not None and [p.name for p in rt.nominator.nominated_pods_for_node("node1")] == ["p"]
    got, _, _ = plugin.dry_run(prefiltered(rt, plugin.handle, info(pod)), info(pod), [node1], [], 0, 1)
    assert summary(got) == {"node1": (["b"], 0)}


def test_a_nominated_pod_steers_preemption_to_another_node() -> None:
    """End to end (PostFilter): node1 and node2 alike but for a higher-priority pod nominated to
    node1, whose victims would then be both of its pods; node2 needs one."""
    pods = [
        *NODE1_AB,
        mk_pod("c", "node2", LOW, MEDIUM, start=epoch(1)),
        mk_pod("d", "node2", LOW, MEDIUM, start=epoch(2)),
        mk_pod("n", priority=HIGH, req=SMALL, nominated="node1"),
    ]
    rt, fw, _ = build([mk_node("node1", VERY_LARGE), mk_node("node2", VERY_LARGE)], pods, [FIT])
    pod = info(mk_pod("p", priority=MID, req=LARGE))
    nominated, status = fw.run_post_filter(prefiltered(rt, fw, pod), pod, {"node1": U, "node2": U})
    assert (nominated, status.code) == ("node2", Code.SUCCESS)
    assert rt.preemptions == [("p", "node2", ["d"])]


# -- TestSelectBestCandidate -------------------------------------------------------------------------


def at(name: str, node: str, priority: int, req: dict[str, str], t: int = 0) -> dict[str, Any]:
    return mk_pod(name, node, priority, req, start=epoch(t))


SELECT_BEST = [
    pytest.param(
        ["node1", "node2"],
        mk_pod("p", priority=HIGH, req=LARGE),
        [at("p1", "node1", MID, LARGE), at("p2", "node2", MID, LARGE)],
        {"node1", "node2"},
        id="a pod that fits on both nodes when lower priority pods are preempted",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        mk_pod("p", priority=HIGH, req=VERY_LARGE),
        [
            at("p1.1", "node1", MID, MEDIUM),
            at("p1.2", "node1", MID, LARGE),
            at("p2.1", "node2", MID, MEDIUM),
            at("p2.2", "node2", LOW, MEDIUM),
            at("p3.1", "node3", LOW, MEDIUM),
            at("p3.2", "node3", LOW, MEDIUM),
        ],
        {"node3"},
        id="node with min highest priority pod is picked",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        mk_pod("p", priority=HIGH, req=VERY_LARGE),
        [
            at("p1.1", "node1", MID, MEDIUM),
            at("p1.2", "node1", MID, LARGE),
            at("p2.1", "node2", MID, LARGE),
            at("p2.2", "node2", LOW, MEDIUM),
            at("p3.1", "node3", MID, MEDIUM),
            at("p3.2", "node3", MID, MEDIUM),
        ],
        {"node2"},
        id="when highest priorities are the same, minimum sum of priorities is picked",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        mk_pod("p", priority=HIGH, req=VERY_LARGE),
        [
            at("p1.1", "node1", MID, SMALL),
            at("p1.2", "node1", NEG, SMALL),
            at("p1.3", "node1", MID, SMALL),
            at("p1.4", "node1", NEG, SMALL),
            at("p2.1", "node2", MID, LARGE),
            at("p2.2", "node2", NEG, MEDIUM),
            at("p3.1", "node3", MID, MEDIUM),
            at("p3.2", "node3", NEG, SMALL),
            at("p3.3", "node3", LOW, SMALL),
        ],
        {"node2"},
        id="when highest priority and sum are the same, minimum number of pods is picked",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        mk_pod("p", priority=HIGH, req=VERY_LARGE),
        [
            at("p1.1", "node1", MID, SMALL),
            at("p1.2", "node1", NEG, SMALL),
            at("p1.3", "node1", NEG, SMALL),
            at("p2.1", "node2", MID, LARGE),
            at("p2.2", "node2", NEG, MEDIUM),
            at("p3.1", "node3", MID, MEDIUM),
            at("p3.2", "node3", NEG, SMALL),
            at("p3.3", "node3", LOW, SMALL),
        ],
        {"node2"},
        id="sum of adjusted priorities is considered",
    ),
    pytest.param(
        ["node1", "node2", "node3", "node4"],
        mk_pod("p", priority=VERY_HIGH, req=VERY_LARGE),
        [
            at("p1.1", "node1", MID, SMALL),
            at("p1.2", "node1", LOW, SMALL),
            at("p1.3", "node1", LOW, SMALL),
            at("p2.1", "node2", HIGH, LARGE),
            at("p3.1", "node3", MID, MEDIUM),
            at("p3.2", "node3", LOW, SMALL),
            at("p3.3", "node3", LOW, SMALL),
            at("p3.4", "node3", LOW, MEDIUM),
            at("p4.1", "node4", MID, MEDIUM),
            at("p4.2", "node4", MID, SMALL),
            at("p4.3", "node4", MID, SMALL),
            at("p4.4", "node4", NEG, SMALL),
        ],
        {"node1"},
        id="non-overlapping lowest high priority, sum priorities, and number of pods",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        mk_pod("p", priority=HIGH, req=VERY_LARGE),
        [
            at("p1.1", "node1", MID, MEDIUM, 2),
            at("p1.2", "node1", MID, MEDIUM, 2),
            at("p2.1", "node2", MID, MEDIUM, 3),
            at("p2.2", "node2", MID, MEDIUM, 3),
            at("p3.1", "node3", MID, MEDIUM, 1),
            at("p3.2", "node3", MID, MEDIUM, 1),
        ],
        {"node2"},
        id="same priority, same number of victims, different start time for each node's pod",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        mk_pod("p", priority=HIGH, req=VERY_LARGE),
        [
            at("p1.1", "node1", MID, MEDIUM, 4),
            at("p1.2", "node1", MID, MEDIUM, 2),
            at("p2.1", "node2", MID, MEDIUM, 5),
            at("p2.2", "node2", MID, MEDIUM, 1),
            at("p3.1", "node3", MID, MEDIUM, 3),
            at("p3.2", "node3", MID, MEDIUM, 6),
        ],
        {"node3"},
        id="same priority, same number of victims, different start time for all pods",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        mk_pod("p", priority=HIGH, req=VERY_LARGE),
        [
            at("p1.1", "node1", LOW, MEDIUM, 4),
            at("p1.2", "node1", MID, MEDIUM, 2),
            at("p2.1", "node2", MID, MEDIUM, 6),
            at("p2.2", "node2", LOW, MEDIUM, 1),
            at("p3.1", "node3", LOW, MEDIUM, 3),
            at("p3.2", "node3", MID, MEDIUM, 5),
        ],
        {"node2"},
        id="different priority, same number of victims, different start time for all pods",
    ),
]


@pytest.mark.parametrize(("node_names", "pod", "pods", "expected"), SELECT_BEST)
def test_select_best_candidate(
    node_names: list[str], pod: dict[str, Any], pods: list[dict[str, Any]], expected: set[str]
) -> None:
    """``TestSelectBestCandidate``: any of ``expected`` is valid (upstream's map order breaks the
    last tie)."""
    rt, _, plugin = build([mk_node(n, VERY_LARGE) for n in node_names], pods, [FIT])
    nodes = sorted_nodes(rt)
    offset, wanted = plugin.offset_and_num_candidates(len(nodes))
    candidates, _, _ = plugin.dry_run(prefiltered(rt, plugin.handle, info(pod)), info(pod), nodes, [], offset, wanted)
    best = plugin.select_candidate(candidates)
    assert best is not None and best.name in expected


# -- TestPodEligibleToPreemptOthers ------------------------------------------------------------------

DISRUPTION_TARGET = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}

ELIGIBLE = [
    pytest.param(
        mk_pod("p_with_nominated_node", priority=HIGH, nominated="node1"),
        [mk_pod("p1", "node1", LOW, terminating=True)],
        ["node1"],
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) had untolerated taint",)),
        True,
        id="Pod with nominated node",
    ),
    pytest.param(
        mk_pod("p_without_nominated_node", priority=HIGH), [], [], None, True, id="Pod without nominated node"
    ),
    pytest.param(
        mk_pod("p_with_preempt_never_policy", priority=HIGH, preemptionPolicy="Never"),
        [],
        [],
        None,
        False,
        id="Pod with 'PreemptNever' preemption policy",
    ),
    pytest.param(
        mk_pod("p_with_nominated_node", priority=HIGH, nominated="node1"),
        [mk_pod("p1", "node1", LOW, terminating=True) | {"status": {"conditions": [DISRUPTION_TARGET]}}],
        ["node1"],
        None,
        False,
        id="preemption victim pod terminating, as indicated by the dedicated DisruptionTarget condition",
    ),
    pytest.param(
        mk_pod("p_with_nominated_node", priority=HIGH, nominated="node1"),
        [mk_pod("p1", "node1", LOW, terminating=True)],
        ["node1"],
        None,
        True,
        id="non-victim Pods terminating",
    ),
]


@pytest.mark.parametrize(
    ("conditions", "terminating", "expected"),
    [
        pytest.param([DISRUPTION_TARGET], True, True, id="terminating, DisruptionTarget by the scheduler"),
        pytest.param([DISRUPTION_TARGET], False, False, id="DisruptionTarget but not terminating"),
        pytest.param(None, True, False, id="terminating without conditions"),
        pytest.param(
            [{"type": "Ready", "status": "False"}, DISRUPTION_TARGET | {"reason": "EvictionByEvictionAPI"}],
            True,
            False,
            id="DisruptionTarget of an eviction",
        ),
        pytest.param([DISRUPTION_TARGET | {"status": "False"}], True, False, id="DisruptionTarget False"),
        pytest.param(
            [DISRUPTION_TARGET | {"status": "False"}, DISRUPTION_TARGET], True, False, id="the first one decides"
        ),
    ],
)
def test_terminating_by_preemption_survives_the_slim_record(
    conditions: list[dict[str, str]] | None, terminating: bool, expected: bool
) -> None:
    """``podTerminatingByPreemption`` (PodDisruptionConditions on): decoded once into one flag, which
    the cluster cache's slim record keeps (the conditions themselves are not kept)."""
    doc = mk_pod("p1", "node1", LOW, terminating=terminating)
    if conditions is not None:
        doc["status"]["conditions"] = conditions
    pod = msgspec.convert(doc, objects.Pod)
    assert PodInfo(pod).terminating_by_preemption is expected
    assert PodInfo.record(pod).terminating_by_preemption is expected
    assert msgspec.json.decode(msgspec.json.encode(doc), type=objects.Pod) == pod


@pytest.mark.parametrize(("pod", "pods", "node_names", "nominated_status", "expected"), ELIGIBLE)
def test_pod_eligible_to_preempt_others(
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    node_names: list[str],
    nominated_status: Status | None,
    expected: bool,
) -> None:
    """``TestPodEligibleToPreemptOthers``."""
    rt, _, plugin = build([mk_node(n) for n in node_names], pods, [])
    assert (plugin.eligible(info(pod), nominated_status, rt.snapshot()) == "") is expected


# -- TestPreempt -------------------------------------------------------------------------------------

BASIC = [
    mk_pod("p1.1", "node1", LOW, SMALL),
    mk_pod("p1.2", "node1", LOW, SMALL),
    mk_pod("p2.1", "node2", HIGH, LARGE),
    mk_pod("p3.1", "node3", MID, MEDIUM),
]
NODES_123 = ["node1", "node2", "node3"]

PREEMPT = [
    pytest.param(
        mk_pod("p", priority=HIGH, req=VERY_LARGE, preemptionPolicy="PreemptLowerPriority"),
        BASIC,
        NODES_123,
        FIT,
        "node1",
        ["p1.1", "p1.2"],
        id="basic preemption logic",
    ),
    pytest.param(
        mk_pod("p", priority=HIGH, labels={"foo": ""}, topologySpreadConstraints=SPREAD_FOO),
        [
            mk_pod("p-a1", "node-a", HIGH, labels={"foo": ""}),
            mk_pod("p-a2", "node-a", HIGH, labels={"foo": ""}),
            mk_pod("p-b1", "node-b", LOW, labels={"foo": ""}),
            mk_pod("p-x1", "node-x", HIGH, labels={"foo": ""}),
            mk_pod("p-x2", "node-x", HIGH, labels={"foo": ""}),
        ],
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        SPREAD,
        "node-b",
        ["p-b1"],
        id="preemption for topology spread constraints",
    ),
    *(
        pytest.param(None, [], [], FIT, "", [], id=name, marks=pytest.mark.skip(reason=EXTENDER))
        for name in (
            "Scheduler extenders allow only node1, otherwise node3 would have been chosen",
            "Scheduler extenders do not allow any preemption",
            "One scheduler extender allows only node1, the other returns error but ignorable. Only node1 would be "
            "chosen",
            "One scheduler extender allows only node1, but it is not interested in given pod, otherwise node1 would "
            "have been chosen",
        )
    ),
    pytest.param(
        mk_pod("p", priority=HIGH, req=VERY_LARGE, preemptionPolicy="Never"),
        BASIC,
        NODES_123,
        FIT,
        "",
        [],
        id="no preempting in pod",
    ),
    pytest.param(
        mk_pod("p", priority=HIGH, req=VERY_LARGE),
        BASIC,
        NODES_123,
        FIT,
        "node1",
        ["p1.1", "p1.2"],
        id="PreemptionPolicy is nil",
    ),
]


@pytest.mark.parametrize(("pod", "pods", "node_names", "plugin", "want", "expected_pods"), PREEMPT)
def test_preempt(
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    node_names: list[str],
    plugin: Factory,
    want: str,
    expected_pods: list[str],
) -> None:
    """``TestPreempt``: every node ``Unschedulable``; the nominated node and the deleted pods (the
    ``DisruptionTarget`` patch is the cluster state's :meth:`preempt`); then, with the victims
    terminating (``deletionTimestamp`` and the ``DisruptionTarget`` condition that patch sets) and
    the pod nominated, a second preemption evicts nothing more."""
    nodes = [mk_node(n, VERY_LARGE, split=True) for n in node_names]
    rt, fw, _ = build(nodes, pods, [plugin])
    statuses = {n.name: U for n in rt.snapshot().list()}
    nominated, status = fw.run_post_filter(prefiltered(rt, fw, info(pod)), info(pod), statuses)
    assert status.is_success() or status.is_rejected()
    assert nominated == want
    deleted = sorted(uid for _, _, uids in rt.preemptions for uid in uids)
    assert deleted == sorted(expected_pods)
    if nominated:
        pod["status"]["nominatedNodeName"] = nominated
    again = [
        p
        | {
            "metadata": p["metadata"] | {"deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": p["status"] | {"conditions": [DISRUPTION_TARGET]},
        }
        if p["metadata"]["uid"] in deleted
        else p
        for p in pods
    ]
    rt.seed(nodes, again)
    rt.preemptions.clear()
    nominated, status = fw.run_post_filter(prefiltered(rt, fw, info(pod)), info(pod), {})
    assert status.is_success() or status.is_rejected()
    assert rt.preemptions == []


# -- preemption_test.go: TestNodesWherePreemptionMightHelp ----------------------------------------------

MIGHT_HELP = [
    pytest.param(
        {
            "node1": Status.unresolvable("node(s) didn't match Pod's node affinity/selector"),
            "node2": Status.unresolvable("node(s) didn't match the requested node name"),
            "node3": Status.unresolvable("node(s) had untolerated taint"),
            "node4": Status.unresolvable("node(s) didn't match pod affinity rules"),
        },
        set(),
        id="No node should be attempted",
    ),
    pytest.param(
        {
            "node1": Status.unschedulable("node(s) didn't match pod anti-affinity rules"),
            "node2": Status.unresolvable("node(s) didn't match the requested node name"),
            "node3": Status.unresolvable("node(s) were unschedulable"),
            "node4": Status.unschedulable("Unschedulable"),
        },
        {"node1", "node4"},
        id="ErrReasonAntiAffinityRulesNotMatch should be tried as it indicates that the pod is unschedulable due to "
        "inter-pod anti-affinity",
    ),
    pytest.param(
        {
            "node1": Status.unresolvable("node(s) didn't match pod affinity rules"),
            "node2": Status.unschedulable("node(s) didn't match pod anti-affinity rules"),
            "node3": Status.unschedulable("Unschedulable"),
            "node4": Status.unschedulable("Unschedulable"),
        },
        {"node2", "node3", "node4"},
        id="ErrReasonAffinityRulesNotMatch should not be tried as it indicates that the pod is unschedulable due to "
        "inter-pod affinity, but ErrReasonAntiAffinityRulesNotMatch should be tried as it indicates that the pod is "
        "unschedulable due to inter-pod anti-affinity",
    ),
    pytest.param(
        {
            "node1": Status.unresolvable("node(s) had no available disk"),
            "node2": Status.unschedulable("Insufficient memory"),
            "node3": Status.unschedulable("Unschedulable"),
            "node4": Status.unschedulable("Unschedulable"),
        },
        {"node2", "node3", "node4"},
        id="Mix of failed predicates works fine",
    ),
    pytest.param(
        {
            "node1": Status.unresolvable("node(s) had unknown conditions"),
            "node2": Status.unschedulable("Unschedulable"),
            "node3": Status.unschedulable("Unschedulable"),
            "node4": Status.unschedulable("Unschedulable"),
        },
        {"node2", "node3", "node4"},
        id="Node condition errors should be considered unresolvable",
    ),
    pytest.param(
        {
            "node1": Status.unresolvable("node(s) had no available volume zone"),
            "node2": Status.unresolvable("node(s) didn't match PersistentVolume's node affinity"),
            "node3": Status.unresolvable("node(s) didn't find available persistent volumes to bind"),
            "node4": Status.unschedulable("Unschedulable"),
        },
        {"node4"},
        id="ErrVolume... errors should not be tried as it indicates that the pod is unschedulable due to no matching "
        "volumes for pod on node",
    ),
    pytest.param(
        {
            "node1": Status.unschedulable("node(s) didn't match pod topology spread constraints"),
            "node2": Status.unresolvable("node(s) didn't match the requested node name"),
            "node3": Status.unschedulable("node(s) didn't match pod topology spread constraints"),
            "node4": Status.unschedulable("Unschedulable"),
        },
        {"node1", "node3", "node4"},
        id="ErrReasonConstraintsNotMatch should be tried as it indicates that the pod is unschedulable due to topology "
        "spread constraints",
    ),
    pytest.param(
        {"node1": U, "node2": UU, "node3": U, "node4": UU},
        {"node1", "node3"},
        id="UnschedulableAndUnresolvable status should be skipped but Unschedulable should be tried",
    ),
    pytest.param(
        {
            "node1": U,
            "node2": Status.unresolvable(
                "node(s) didn't match pod topology spread constraints (missing required label)"
            ),
            "node3": U,
            "node4": UU,
        },
        {"node1", "node3"},
        id="ErrReasonNodeLabelNotMatch should not be tried as it indicates that the pod is unschedulable due to node "
        "doesn't have the required label",
    ),
]


@pytest.mark.parametrize(("statuses", "expected"), MIGHT_HELP)
def test_nodes_where_preemption_might_help(statuses: dict[str, Status], expected: set[str]) -> None:
    """``TestNodesWherePreemptionMightHelp`` (v1.30: a node without a status is unresolvable)."""
    nodes = [NodeInfo(f"node{i}") for i in range(1, 5)]
    potential, unhelpful = nodes_where_preemption_might_help(nodes, statuses)
    assert {n.name for n in potential} == expected
    assert set(unhelpful) == {n.name for n in nodes} - expected


# -- preemption_test.go: TestDryRunPreemption (a fake SelectVictimsOnNode) ------------------------------


class FirstPodIsTheVictim(DefaultPreemption):
    """``FakePostFilterPlugin``: the node's first pod is the victim, with ``violations``."""

    violations = 0

    def select_victims(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        now: float,
        budgets: Sequence[PodDisruptionBudget] = (),
    ) -> tuple[list[PodInfo], int, Status]:
        return [node.pods[0]], self.violations, SUCCESS


@pytest.mark.parametrize(
    "violations",
    [pytest.param(0, id="no pdb violation"), pytest.param(1, id="pdb violation on each node")],
)
def test_evaluator_dry_run_preemption(violations: int) -> None:
    """preemption_test.go's ``TestDryRunPreemption``: offset 0, every node wanted."""
    rt = MemoryCluster()
    rt.seed([mk_node("node1", VERY_LARGE), mk_node("node2", VERY_LARGE)], TWO_MID)
    plugin = FirstPodIsTheVictim(DefaultPreemptionArgs(), Framework("p", cluster=rt))
    plugin.violations = violations
    nodes = sorted_nodes(rt)
    got, _, _ = plugin.dry_run(CycleState(rt.snapshot()), info(mk_pod("p", priority=HIGH)), nodes, [], 0, len(nodes))
    assert summary(got) == {"node1": (["p1"], violations), "node2": (["p2"], violations)}


@pytest.mark.skip(
    reason="exercises a fake plugin's OrderedScoreFuncs (candidates ranked by their victims' container count); "
    "DefaultPreemption has no custom score functions (pickOneNodeForPreemption's own order applies)"
)
def test_select_candidate_pod_has_different_number_of_containers_on_each_node() -> None:
    """preemption_test.go's ``TestSelectCandidate``: "pod has different number of containers on each node"."""

"""The scheduling cycle against kube-scheduler v1.30's tables, as data: pkg/scheduler/schedule_one_test.go
(kubernetes/kubernetes) — Test_SelectHost (v1.36.3's, of ``sortedNodeScores``), TestNumFeasibleNodesToFind, the tests of
``findNodesThatPassFilters`` (TestFindFitAllError, TestFindFitSomeError,
TestFindFitPredicateCallCounts, TestFairEvaluationForNodes, TestPreferNominatedNodeFilterCallCounts),
the PreFilter cases of TestSchedulerSchedulePod, and Test_prioritizeNodes' plugin cases (the
extender cases need a kube-scheduler extender: this scheduler calls none). v1.30 has no test
named TestFindNodesThatPassFilters; the ones above are its tests of that function. The fake
plugins are pkg/scheduler/testing/framework's (``tf``).

Nodes are built without zone labels, so the node tree lists them in the order they were added,
as ``makeNodeList`` does."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from app.cluster.cache import Cache
from app.framework import (
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    NodePluginScores,
    PodInfo,
    PreFilterResult,
    Status,
    plugin_lists,
)
from app.framework.runtime import Framework
from app.framework.scores import SortedNodeScores
from app.framework.status import Diagnosis
from app.plugins.imagelocality import ImageLocality
from app.plugins.noderesources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
)
from app.scheduler.effects import Reports
from app.scheduler.queue import SchedulingQueue
from app.scheduler.result import ScheduleResult, fit_error_of
from app.scheduler.scheduler import (
    ERR_NO_NODES_AVAILABLE,
    Scheduler,
    SchedulerOptions,
    num_feasible_nodes_to_find,
)
from tests.support.fakes import ERR_REASON_FAKE, FakeFilter, MatchFilter, TrueFilter
from tests.unit.helpers import enabled, pod, seed

HIGH, MID, LOW = 1000, 100, 0


# -- the fakes of pkg/scheduler/testing/framework -----------------------------------------------------


class FakePreFilter:
    """``tf.NewFakePreFilterPlugin(name, result, status)``."""

    def __init__(self, name: str, result: PreFilterResult | None, status: Status = SUCCESS) -> None:
        self.name, self.result, self.status = name, result, status

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        return self.result, self.status


class NumericMap:
    """``numericMapPlugin``: the node's name as its score."""

    name = "NumericMap"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        return int(node.name), SUCCESS


class Node2Prioritizer:
    """``tf.NewNode2PrioritizerPlugin``: 100 for node2, 10 for the others."""

    name = "Node2Prioritizer"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        return (100 if node.name == "node2" else 10), SUCCESS


class FakePreScoreAndScore:
    """``tf.NewFakePreScoreAndScorePlugin``: PreScore skips; Score must then never run."""

    name = "FakePreScoreAndScorePlugin"

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        return SKIP

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        message = "this score function shouldn't be executed because this plugin returned Skip in the PreScore"
        return 0, Status.error(message)


# -- a scheduler on a cluster state of named nodes ----------------------------------------------------


def node_doc(
    name: str, cpu: str = "1", memory: str = "2Gi", images: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }
    if images is not None:
        doc["status"]["images"] = images
    return doc


def scheduler(
    names: Sequence[str], fw: Framework, percentage: int = 0, nodes: list[dict[str, Any]] | None = None
) -> Scheduler:
    """``makeScheduler(nodes)`` with ``fw``: a cluster state holding the nodes (no pods)."""
    cache = Cache()
    cache.keep_images = True
    seed(cache, nodes if nodes is not None else [node_doc(n) for n in names], [])
    runtime: Any = SimpleNamespace(cache=cache, events=cache.events, bind_admission=lambda: None, executor=None)
    queue = SchedulingQueue(nominator=fw.nominator)
    options = SchedulerOptions(percentage_of_nodes_to_score=percentage)
    return Scheduler("s", fw, runtime, queue, options=options)


def lists(**points: Sequence[object]) -> Any:
    return plugin_lists(**{point: [enabled(p) for p in plugins] for point, plugins in points.items()})


def find(sched: Scheduler, p: PodInfo) -> tuple[list[NodeInfo], Diagnosis, Status]:
    """``findNodesThatFitPod`` on a fresh cycle state: the feasible nodes, the diagnosis, the status."""
    state = CycleState(sched.cache.snapshot())
    feasible, diagnosis, _, status = sched.find_nodes_that_fit_pod(state, p, state.snapshot.list())  # type: ignore[union-attr]
    return feasible, diagnosis, status


# -- Test_SelectHost (v1.36.3: sortedNodeScores) ---------------------------------------------------------


def nps(*rows: tuple[str, int] | tuple[str, int, int]) -> list[NodePluginScores]:
    return [NodePluginScores(r[0], total_score=r[1], randomizer=r[2] if len(r) > 2 else 0) for r in rows]


SELECT_HOST = [
    pytest.param(
        nps(("node1", 1), ("node2", 2)),
        [("node2", 2, 0), ("node1", 1, 0)],
        id="unique properly ordered scores",
    ),
    pytest.param(
        nps(("node2.2", 2, 2), ("node2.1", 2, 1), ("node2.3", 2, 3)),
        [("node2.3", 2, 3), ("node2.2", 2, 2), ("node2.1", 2, 1)],
        id="equal scores",
    ),
    pytest.param(
        nps(("node3.1", 3, 1), ("node2.1", 2), ("node1.1", 1), ("node3.2", 3, 2)),
        [("node3.2", 3, 2), ("node3.1", 3, 1), ("node2.1", 2, 0), ("node1.1", 1, 0)],
        id="out of order scores",
    ),
]


@pytest.mark.parametrize(("scores", "want"), SELECT_HOST)
def test_select_host(scores: list[NodePluginScores], want: list[tuple[str, int, int]]) -> None:
    """``Test_SelectHost`` (v1.36.3 schedule_one_test.go): the heap pops the nodes best first."""
    ranking = SortedNodeScores(scores)
    got = [ranking.pop_score() for _ in range(len(scores))]
    assert [(name, total, randomizer) for total, randomizer, name in got] == want
    assert len(ranking) == 0
    with pytest.raises(IndexError):
        ranking.pop()


def test_ties_without_a_randomizer_go_by_the_heap_order() -> None:
    """Without extenders v1.36.3 sets no ``Randomizer``: among equal totals Go's heap decides,
    deterministically for one feasible-node order (``heap.Init`` sifts down from the middle, so
    the first of the list does not always win)."""
    assert SortedNodeScores(nps(("a", 5), ("b", 5), ("c", 5))).pop() == "a"
    # heap.Init([a, b, c, d]) swaps nothing; Pop swaps d to the root and sifts it down past b
    order = SortedNodeScores(nps(("a", 5), ("b", 5), ("c", 5), ("d", 5)))
    assert [order.pop() for _ in range(4)] == ["a", "d", "c", "b"]
    assert SortedNodeScores(nps(("a", 1), ("b", 5), ("c", 5))).pop() == "b"


# -- TestNumFeasibleNodesToFind -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("global_percentage", "profile_percentage", "num_all_nodes", "want"),
    [
        pytest.param(0, None, 10, 10, id="not set percentageOfNodesToScore and nodes number not more than 50"),
        pytest.param(0, 40, 10, 10, id="set profile percentageOfNodesToScore and nodes number not more than 50"),
        pytest.param(0, None, 1000, 420, id="not set percentageOfNodesToScore and nodes number more than 50"),
        pytest.param(0, 40, 1000, 400, id="set profile percentageOfNodesToScore and nodes number more than 50"),
        pytest.param(
            100, 40, 1000, 400, id="set global and profile percentageOfNodesToScore and nodes number more than 50"
        ),
        pytest.param(40, None, 1000, 400, id="set global percentageOfNodesToScore and nodes number more than 50"),
        pytest.param(
            0, None, 6000, 300, id="not set profile percentageOfNodesToScore and nodes number more than 50*125"
        ),
        pytest.param(0, 40, 6000, 2400, id="set profile percentageOfNodesToScore and nodes number more than 50*125"),
    ],
)
def test_num_feasible_nodes_to_find(
    global_percentage: int, profile_percentage: int | None, num_all_nodes: int, want: int
) -> None:
    assert num_feasible_nodes_to_find(global_percentage, num_all_nodes, profile_percentage) == want


# -- findNodesThatPassFilters -------------------------------------------------------------------------


def test_find_fit_all_error() -> None:
    """``TestFindFitAllError``: every node fails MatchFilter, each with its status."""
    fw = Framework("p", lists(filter=[TrueFilter(), MatchFilter()]))
    feasible, diagnosis, status = find(scheduler(["3", "2", "1"], fw), pod(""))
    assert feasible == [] and status.is_success()
    assert {n: (s.code, s.reasons, s.plugin) for n, s in diagnosis.node_to_status.items()} == {
        n: (Code.UNSCHEDULABLE, (ERR_REASON_FAKE,), "MatchFilter") for n in ("1", "2", "3")
    }
    assert diagnosis.unschedulable_plugins == {"MatchFilter"}


def test_find_fit_some_error() -> None:
    """``TestFindFitSomeError``: the node named as the pod passes, the others fail."""
    fw = Framework("p", lists(filter=[TrueFilter(), MatchFilter()]))
    feasible, diagnosis, _ = find(scheduler(["3", "2", "1"], fw), pod("1"))
    assert [n.name for n in feasible] == ["1"]
    statuses = diagnosis.node_to_status
    assert set(statuses) == {"2", "3"} and all(s.reasons == (ERR_REASON_FAKE,) for s in statuses.values())
    assert diagnosis.unschedulable_plugins == {"MatchFilter"}


@pytest.mark.parametrize(
    ("priority", "nominated_priority", "expected"),
    [
        pytest.param(HIGH, MID, 1, id="nominated pods have lower priority, predicate is called once"),
        pytest.param(MID, HIGH, 2, id="nominated pods have higher priority, predicate is called twice"),
    ],
)
def test_find_fit_predicate_call_counts(priority: int, nominated_priority: int, expected: int) -> None:
    """``TestFindFitPredicateCallCounts``: a node with a pod of at least the pod's priority
    nominated to it is filtered with it and without it."""
    fake = FakeFilter()
    fw = Framework("p", lists(filter=[fake]))
    sched = scheduler(["1"], fw)
    fw.nominator.add_nominated_pod(pod("2", uid="2", priority=nominated_priority, nodeName=""), _override("1"))
    find(sched, pod("1", uid="1", priority=priority))
    assert fake.calls == expected


def _override(node: str) -> Any:
    from app.framework.nominator import NominatingInfo

    return NominatingInfo(node)


def test_fair_evaluation_for_nodes() -> None:
    """``TestFairEvaluationForNodes``: 500 nodes, ``percentageOfNodesToScore`` 30: each search
    finds 150 and the next starts where it stopped, wrapping around."""
    num_all_nodes = 500
    fw = Framework("p", lists(filter=[TrueFilter()], score=[NumericMap()]))
    sched = scheduler([str(i) for i in range(num_all_nodes)], fw, percentage=30)
    nodes_to_find = num_feasible_nodes_to_find(30, num_all_nodes)
    assert nodes_to_find == 150
    for i in range(2 * (num_all_nodes // nodes_to_find + 1)):  # over every node more than twice
        feasible, _, _ = find(sched, pod(""))
        assert len(feasible) == nodes_to_find
        assert sched.next_start_node_index == (i + 1) * nodes_to_find % num_all_nodes


@pytest.mark.parametrize(
    ("nominated", "codes", "expected"),
    [
        pytest.param("node1", {}, 1, id="pod has the nominated node set, filter is called only once"),
        pytest.param("", {}, 3, id="pod without the nominated pod, filter is called for each node"),
        pytest.param(
            "node1",
            {"node1": Code.UNSCHEDULABLE},
            4,
            id="nominated pod cannot pass the filter, filter is called for each node",
        ),
    ],
)
def test_prefer_nominated_node_filter_call_counts(nominated: str, codes: dict[str, Code], expected: int) -> None:
    """``TestPreferNominatedNodeFilterCallCounts``: ``evaluateNominatedNode`` first."""
    fake = FakeFilter(codes)
    fw = Framework("p", lists(filter=[fake]))
    sched = scheduler(["node1", "node2", "node3"], fw)
    p = pod("p", uid="p", priority=HIGH)
    p.nominated_node_name = nominated
    feasible, _, status = find(sched, p)
    assert fake.calls == expected
    assert status.is_success() and feasible


def test_a_profile_without_score_plugins_stops_at_the_first_feasible_node() -> None:
    """``findNodesThatPassFilters``: ``numNodesToFind = 1`` when the profile has no Score plugin
    (nothing to rank); the search resumes after that node next time."""
    fake = FakeFilter()
    fw = Framework("p", lists(filter=[fake]))
    sched = scheduler([f"n{i}" for i in range(300)], fw)
    feasible, _, _ = find(sched, pod("p"))
    assert [n.name for n in feasible] == ["n0"] and sched.next_start_node_index == 1
    assert [n.name for n in find(sched, pod("p"))[0]] == ["n1"]


# -- TestSchedulerSchedulePod: PreFilter --------------------------------------------------------------


def schedule(names: Sequence[str], fw: Framework, p: PodInfo) -> tuple[ScheduleResult, Status]:
    sched = scheduler(names, fw)
    return sched.schedule_pod(CycleState(), p)


def test_prefilter_plugin_returning_unschedulable_status() -> None:
    injected = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("injected unschedulable status",))
    fw = Framework("p", lists(pre_filter=[FakePreFilter("FakePreFilter", None, injected)], filter=[TrueFilter()]))
    _, status = schedule(["1", "2"], fw, pod("test-prefilter"))
    fit = fit_error_of(status)
    assert fit is not None and fit.num_all_nodes == 2 and status.code is Code.UNSCHEDULABLE
    diagnosis = fit.diagnosis
    assert diagnosis.pre_filter_msg == "injected unschedulable status"
    assert {n: (s.reasons, s.plugin) for n, s in diagnosis.node_to_status.items()} == {
        n: (("injected unschedulable status",), "FakePreFilter") for n in ("1", "2")
    }
    assert diagnosis.unschedulable_plugins == {"FakePreFilter"}
    assert fit.error() == status.message == "0/2 nodes are available: injected unschedulable status."


def test_prefilter_plugin_returning_error_status() -> None:
    fw = Framework(
        "p",
        lists(pre_filter=[FakePreFilter("FakePreFilter", None, Status.error("injected error status"))], filter=[]),
    )
    _, status = schedule(["1", "2"], fw, pod("test-prefilter"))
    assert status.code is Code.ERROR and fit_error_of(status) is None
    assert status.message == 'running PreFilter plugin "FakePreFilter": injected error status'


def test_prefilter_plugin_returning_node() -> None:
    fake = FakeFilter()
    pre = FakePreFilter("FakePreFilter", PreFilterResult(frozenset({"node2"})))
    fw = Framework("p", lists(pre_filter=[pre], filter=[fake], score=[NumericMapLike()]))
    result, status = schedule(["node1", "node2", "node3"], fw, pod("test-prefilter"))
    assert status.is_success() and [n.name for n in result.feasible] == ["node2"] and result.suggested_host == "node2"
    assert (result.evaluated_nodes, result.feasible_nodes) == (1, 1)
    assert fake.calls == 1  # wantEvaluatedNodes: 1


class NumericMapLike:
    """A Score plugin that gives every node 1 (upstream's ``TestPlugin``)."""

    name = "TestPlugin"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        return 1, SUCCESS


@pytest.mark.parametrize(
    ("results", "message"),
    [
        pytest.param(
            [frozenset({"node2"}), frozenset({"node1"})],
            "node(s) didn't satisfy plugin(s) [FakePreFilter2 FakePreFilter3] simultaneously",
            id="test prefilter plugin returning non-intersecting nodes",
        ),
        pytest.param(
            [frozenset()],
            "node(s) didn't satisfy plugin FakePreFilter2",
            id="test prefilter plugin returning empty node set",
        ),
    ],
)
def test_prefilter_results_leaving_no_node(results: list[frozenset[str]], message: str) -> None:
    pres = [FakePreFilter(f"FakePreFilter{i + 2}", PreFilterResult(r)) for i, r in enumerate(results)]
    fw = Framework("p", lists(pre_filter=[FakePreFilter("FakePreFilter1", None), *pres], filter=[TrueFilter()]))
    _, status = schedule(["node1", "node2", "node3"], fw, pod("test-prefilter"))
    fit = fit_error_of(status)
    assert fit is not None and fit.num_all_nodes == 3
    diagnosis = fit.diagnosis
    assert diagnosis.pre_filter_msg == message
    assert {s.code for s in diagnosis.node_to_status.values()} == {Code.UNSCHEDULABLE_AND_UNRESOLVABLE}
    assert set(diagnosis.node_to_status) == {"node1", "node2", "node3"}
    assert fit.error() == status.message == f"0/3 nodes are available: {message}."


def test_nodes_cut_by_a_prefilter_result_count_as_not_satisfying_its_plugin() -> None:
    """ "test some nodes are filtered out by prefilter plugin and other are filtered out by filter
    plugin" (schedule_one_test.go, v1.36.3): the node the PreFilterResult leaves out is not
    evaluated; it counts under the absent nodes' status "node(s) didn't satisfy plugin(s)
    [FakePreFilter]", and the PreFilter plugin is an unschedulable plugin (v1.30.12 left it without
    a status)."""
    pre = FakePreFilter("FakePreFilter", PreFilterResult(frozenset({"node2"})))
    fw = Framework("p", lists(pre_filter=[pre], filter=[FakeFilter({"node2": Code.UNSCHEDULABLE})]))
    _, status = schedule(["node1", "node2"], fw, pod("test-prefilter"))
    fit = fit_error_of(status)
    assert fit is not None and fit.num_all_nodes == 2
    diagnosis = fit.diagnosis
    assert {n: (s.reasons, s.plugin) for n, s in diagnosis.node_to_status.items()} == {
        "node2": (("injecting failure for pod test-prefilter",), "FakeFilter")
    }
    absent = diagnosis.absent_nodes_status
    assert absent is not None and absent.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert absent.reasons == ("node(s) didn't satisfy plugin(s) [FakePreFilter]",)
    assert diagnosis.unschedulable_plugins == {"FakePreFilter", "FakeFilter"} and diagnosis.pre_filter_msg == ""
    assert (
        fit.error()
        == status.message
        == (
            "0/2 nodes are available: 1 injecting failure for pod test-prefilter, "
            "1 node(s) didn't satisfy plugin(s) [FakePreFilter]."
        )
    )


def test_no_nodes_available_to_schedule_pods() -> None:
    """``ErrNoNodesAvailable`` with an empty cluster, no FitError."""
    fw = Framework("p", lists(filter=[TrueFilter()]))
    _, status = schedule([], fw, pod("p"))
    assert fit_error_of(status) is None and status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message == ERR_NO_NODES_AVAILABLE


# -- Test_prioritizeNodes -------------------------------------------------------------------------------

MB = 1024 * 1024
DEFAULT_MEMORY_REQUEST = 200 * MB  # schedutil.DefaultMemoryRequest
IMAGES_1 = [
    {"names": ["gcr.io/40:latest", "gcr.io/40:v1"], "sizeBytes": 80 * MB},
    {"names": ["gcr.io/300:latest", "gcr.io/300:v1"], "sizeBytes": 300 * MB},
]
IMAGES_2 = [
    {"names": ["gcr.io/300:latest"], "sizeBytes": 300 * MB},
    {"names": ["gcr.io/40:latest", "gcr.io/40:v1"], "sizeBytes": 80 * MB},
]
IMAGES_3 = [
    {"names": ["gcr.io/600:latest"], "sizeBytes": 600 * MB},
    {"names": ["gcr.io/40:latest"], "sizeBytes": 80 * MB},
    {"names": ["gcr.io/900:latest"], "sizeBytes": 900 * MB},
]


def make_node(name: str, images: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``makeNode(name, 1000, DefaultMemoryRequest*10, images...)``."""
    return node_doc(name, cpu="1", memory=str(DEFAULT_MEMORY_REQUEST * 10), images=images)


class ScoreOnly:
    """``tf.RegisterScorePlugin``: the plugin registered at Score alone (its PreScore never runs)."""

    def __init__(self, plugin: NodeResourcesBalancedAllocation) -> None:
        self.plugin, self.name = plugin, plugin.name

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        return self.plugin.score(state, pod, node)


def balanced() -> ScoreOnly:
    return ScoreOnly(NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs(), Handle("p")))


TWO_NODES = [make_node("node1"), make_node("node2")]
THREE_IMAGE_NODES = [make_node("node1", IMAGES_1), make_node("node2", IMAGES_2), make_node("node3", IMAGES_3)]
# v1.36.3: the pod (&v1.Pod{}) requests nothing, so BalancedAllocation's Score (without its PreScore)
# gives it 0 (v1.30 scored it 100 on these empty nodes)
BOTH_10_100 = [
    ("node1", {"Node2Prioritizer": 10, "NodeResourcesBalancedAllocation": 0}, 10),
    ("node2", {"Node2Prioritizer": 100, "NodeResourcesBalancedAllocation": 0}, 100),
]

PRIORITIZE = [
    pytest.param(
        {},
        TWO_NODES,
        lambda: [
            balanced(),
            Node2Prioritizer(),
        ],
        BOTH_10_100,
        id="the score from all plugins should be recorded in PluginToNodeScores",
    ),
    pytest.param(
        {},
        TWO_NODES,
        lambda: [
            balanced(),
            Node2Prioritizer(),
            FakePreScoreAndScore(),
        ],
        BOTH_10_100,
        id="plugin which returned skip in preScore shouldn't be executed in the score phase",
    ),
    pytest.param(
        {},
        TWO_NODES,
        lambda: [FakePreScoreAndScore()],
        [("node1", {}, 0), ("node2", {}, 0)],
        id="all score plugins are skipped",
    ),
    pytest.param(
        {"containers": [{"name": "c", "image": "gcr.io/40"}]},
        THREE_IMAGE_NODES,
        lambda: [ImageLocality(None, None)],
        [(n, {"ImageLocality": 5}, 5) for n in ("node1", "node2", "node3")],
        id="the score from Image Locality plugin with image in all nodes",
    ),
    pytest.param(
        {"containers": [{"name": "c", "image": "gcr.io/300"}]},
        THREE_IMAGE_NODES,
        lambda: [ImageLocality(None, None)],
        [
            ("node1", {"ImageLocality": 18}, 18),
            ("node2", {"ImageLocality": 18}, 18),
            ("node3", {"ImageLocality": 0}, 0),
        ],
        id="the score from Image Locality plugin with image in partial nodes",
    ),
]


@pytest.mark.parametrize(("spec", "nodes", "plugins", "want"), PRIORITIZE)
def test_prioritize_nodes(spec: dict[str, Any], nodes: list[dict[str, Any]], plugins: Any, want: list[Any]) -> None:
    """``Test_prioritizeNodes``: each node's plugin scores (weight 1, compared by plugin name as
    upstream sorts them) and TotalScore; a plugin PreScore skipped has no score."""
    fw = Framework("p", lists(filter=[TrueFilter()], score=plugins()))
    sched = scheduler([n["metadata"]["name"] for n in nodes], fw, nodes=nodes)
    state = CycleState(sched.cache.snapshot())
    totals, scored, status = sched.prioritize_nodes(state, pod("p", **spec), state.snapshot.list())  # type: ignore[union-attr]
    assert status.is_success() and scored is not None
    got = [(n.name, {s.name: s.score for s in n.scores}, n.total_score) for n in scored.node_plugin_scores()]
    assert got == want
    assert [(t.name, t.total_score) for t in totals] == [(name, total) for name, _, total in want]


# -- handleSchedulingFailure ------------------------------------------------------------------------------


class RejectingReserve:
    """A Reserve plugin that refuses every node."""

    name = "RejectingReserve"

    def reserve(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status.unschedulable("no room at reserve")

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        pass


class RejectingPermit:
    """A Permit plugin that refuses every pod."""

    name = "RejectingPermit"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        return Status.unschedulable("not permitted"), 0.0


@pytest.mark.parametrize(
    ("points", "plugin", "reason"),
    [
        pytest.param({"reserve": [RejectingReserve()]}, "RejectingReserve", "no room at reserve", id="Reserve"),
        pytest.param({"permit": [RejectingPermit()]}, "RejectingPermit", "not permitted", id="Permit"),
    ],
)
def test_a_reserve_or_permit_rejection_is_a_fit_error_of_the_node(
    points: dict[str, list[object]], plugin: str, reason: str
) -> None:
    """``schedulingCycle``: a Reserve or Permit rejection is a FitError with ``NumAllNodes: 1``, the
    node's status naming the plugin (``0/1 nodes are available: 1 <reason>.``, reason
    ``Unschedulable``); the pod is parked with that plugin as its rejector, and its own
    Unreserve (the reservation the Permit rejection drops) is no event that wakes it."""
    import asyncio

    from app.framework.events import NODE, POD, ActionType, ClusterEvent
    from tests.support.cluster import MemoryCluster

    rt = MemoryCluster()
    doc = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "uid-p"},
        "spec": {"schedulerName": "s", "containers": [{"name": "c"}]},
        "status": {"phase": "Pending"},
    }
    rt.seed([node_doc("n1")], [doc])
    rt.executor = None  # type: ignore[attr-defined]
    fw = Framework("s", lists(filter=[TrueFilter()], **points), cluster=rt, nominator=rt.nominator)
    registered = {plugin: (ClusterEvent(NODE, ActionType.ADD),)}
    queue = SchedulingQueue(
        nominator=fw.nominator,
        registered=lambda name: registered.get(name, ()),
        # a pod deleted is of interest (to NodeResourcesFit, say): the pod's own Unreserve is one
        interest=(*registered[plugin], ClusterEvent(POD, ActionType.DELETE)),
    )
    posted: list[Any] = []
    sched = Scheduler("s", fw, rt, queue, Reports(post=posted.append))  # type: ignore[arg-type]
    assert asyncio.run(sched.step())
    assert [(e.reason, e.note) for e in posted] == [("FailedScheduling", f"0/1 nodes are available: 1 {reason}.")]
    entry = queue.get("uid-p")
    assert entry is not None and entry.where == "unschedulable" and entry.unschedulable_plugins == {plugin}
    assert rt.cache.assumed() == {}  # nothing reserved any more
    assert queue.move_on([ClusterEvent(NODE, ActionType.ADD)]) == 1  # what the plugin registered moves it


def test_the_pods_own_unreserve_is_no_event_for_it() -> None:
    """The cluster state's events carry the pod whose own reservation they are: ``events_since``
    with that pod leaves them out (its Unreserve must not count as an event that happened while
    it was in flight), for other pods they count."""
    from app.framework.events import ASSIGNED_POD, ActionType, ClusterEvent
    from tests.support.cluster import MemoryCluster

    rt = MemoryCluster()
    rt.seed([node_doc("n1")], [])
    seq = rt.events.event_seq
    p = pod("p", uid="uid-p")
    assert rt.cache.assume_pod(p, "n1").ok
    rt.cache.forget_pod("uid-p", "n1")
    assert rt.events.events_since(seq, origin="uid-p")[1] == []
    others = rt.events.events_since(seq, origin="uid-q")[1] or []
    # EventAssignedPodDelete with the assumed pod (v1.36.3 schedule_one.go handleBindingCycleError)
    assert [e.event for e in others] == [ClusterEvent(ASSIGNED_POD, ActionType.DELETE)]
    assert others[0].old.uid == "uid-p" and others[0].old.node_name == "n1"


def test_a_failed_pod_reenters_the_queue_behind_the_pods_already_waiting() -> None:
    """``AddUnschedulableIfNotPresent`` refreshes the pod's ``Timestamp``: after its backoff, a pod
    that failed is tried after the pods of its priority that entered the queue before it failed,
    though it entered first; its backoff counts from the failure."""

    class Clock:
        now = 100.0

        def __call__(self) -> float:
            return self.now

    clock = Clock()
    q = SchedulingQueue(clock=clock)
    first = pod("first", uid="first")
    q.apply([("first", first)])
    clock.now += 1
    second = pod("second", uid="second")
    q.apply([("second", second)])
    assert q.pop() is first
    clock.now += 5  # a long attempt
    q.failed("first", unschedulable=False)
    entry = q.get("first")
    assert entry is not None and (entry.added, entry.ready_at) == (clock.now, clock.now + 1.0)
    # v1.33+ (KEP-5142, backoff_queue.go alignToWindow): the backoff's end is aligned to its 1 s
    # window and the pod backs off through that window; an errored pod is not popped early
    clock.now += 1
    assert q.pop() is second and q.pop() is None
    clock.now += 1
    assert q.pop() is first


# -- ScheduleOne: the decisions recorded and the one failure handler --------------------------------------


class FakeBinder:
    """A Bind plugin that binds every pod, or refuses with ``error``."""

    name = "FakeBinder"

    def __init__(self, error: str = "") -> None:
        self.error = error

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return Status.error(self.error) if self.error else SUCCESS


def _one_pod_cycle(binder: FakeBinder, nodes: Sequence[str]) -> tuple[list[Any], list[tuple[str, str, str]]]:
    """One pod scheduled by a profile with Node2Prioritizer and ``binder`` over ``nodes``: the
    decisions recorded, and each failure handler call (its status message, the NominatingInfo's
    mode and node)."""
    import asyncio

    from tests.support.cluster import MemoryCluster

    rt = MemoryCluster()
    doc = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "uid-p"},
        "spec": {"schedulerName": "s", "containers": [{"name": "c"}]},
        "status": {"phase": "Pending"},
    }
    rt.seed([node_doc(n) for n in nodes], [doc])
    rt.executor = None  # type: ignore[attr-defined]
    points = lists(filter=[TrueFilter()], score=[Node2Prioritizer()], bind=[binder])
    fw = Framework("s", points, cluster=rt, nominator=rt.nominator)
    decisions: list[Any] = []
    sched = Scheduler("s", fw, rt, SchedulingQueue(nominator=fw.nominator), Reports(record=decisions.append))  # type: ignore[arg-type]
    failures: list[tuple[str, str, str]] = []
    handler = sched.effects.handle_scheduling_failure

    def counted(pod: PodInfo, status: Status, info: Any, started: float, since: int) -> None:
        failures.append((status.message, info.mode.name, str(info)))
        handler(pod, status, info, started, since)

    sched.effects.handle_scheduling_failure = counted  # type: ignore[method-assign]

    async def one() -> None:
        assert await sched.step()
        await asyncio.gather(*list(sched._binds))

    asyncio.run(one())
    return decisions, failures


def test_a_pod_placed_after_score_records_filter_prioritize_and_bind() -> None:
    """``schedulePod``'s decisions: the filter verdicts, then the ``TotalScore`` of each scored
    node (``total_scores``, never the extender's 0..10), then the bind; no failure."""
    decisions, failures = _one_pod_cycle(FakeBinder(), ["node1", "node2"])
    assert [d.verb for d in decisions] == ["filter", "prioritize", "bind"] and failures == []
    filtered, prioritized, bound = decisions
    assert filtered.outcome() == {"passed": 2, "rejected": 0}
    assert list(prioritized.total_scores) == [10, 100] and prioritized.extender_scores == ()
    explained = prioritized.explain()
    assert {n: d["score"] for n, d in explained["nodes"].items()} == {"node1": 10, "node2": 100}
    assert explained["outcome"] == {"topNodes": ["node2"], "topScore": 100}
    assert bound.outcome() == {"boundNode": "node2"}


@pytest.mark.parametrize(
    ("binder", "nodes", "verbs", "failure"),
    [
        pytest.param(
            FakeBinder(),
            [],
            ["filter"],
            (ERR_NO_NODES_AVAILABLE, "OVERRIDE", ""),
            id="no node: ErrNoNodesAvailable, the nomination cleared",
        ),
        pytest.param(
            FakeBinder("refused"),
            ["node1"],
            ["filter", "bind"],
            ("FakeBinder: refused", "OVERRIDE", ""),
            id="the binding cycle fails: handleBindingCycleError",
        ),
    ],
)
def test_each_failure_reaches_the_failure_handler_once(
    binder: FakeBinder, nodes: list[str], verbs: list[str], failure: tuple[str, str, str]
) -> None:
    decisions, failures = _one_pod_cycle(binder, nodes)
    assert [d.verb for d in decisions] == verbs and failures == [failure]

"""The framework runtime: filter verdicts, failure policies, score scaling, preemption rules, bind."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from app.framework import (
    SUCCESS,
    Code,
    CycleState,
    EnabledPlugin,
    Framework,
    FrameworkError,
    NodeInfo,
    NodeScore,
    PodInfo,
    PodRef,
    Status,
    Victims,
)
from app.framework.runtime import PLUGIN_FAILED, UNEVALUATED
from tests.unit.helpers import node, pod


class RejectNamed:
    """Filter: rejects the nodes it is told to, with a given code; errors on others it is told to."""

    def __init__(self, name: str, reject: dict[str, Status], crash: Sequence[str] = ()) -> None:
        self.name = name
        self.reject = reject
        self.crash = set(crash)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if node.name in self.crash:
            raise RuntimeError("boom")
        return self.reject.get(node.name, SUCCESS)


class Fixed:
    """Score: a fixed score per node name."""

    def __init__(self, name: str, scores: dict[str, int], skip: bool = False) -> None:
        self.name = name
        self.scores = scores
        self.skip = skip

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        return Status(Code.SKIP) if self.skip else SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return self.scores[node.name]


class Doubling(Fixed):
    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        for s in scores:
            s.score *= 2
        return SUCCESS


NODES = [node("a"), node("b"), node("c")]


def ep(plugin: object, weight: int = 1, fail_open: bool = False) -> EnabledPlugin:
    policy = "Ignore" if fail_open else "Fail"
    return EnabledPlugin(plugin.name, plugin, weight, policy)  # type: ignore[attr-defined, arg-type]


def test_first_rejection_decides_and_reasons_are_kept() -> None:
    first = RejectNamed("First", {"a": Status.unschedulable("too hot")})
    second = RejectNamed("Second", {"a": Status.unresolvable("never"), "b": Status.unresolvable("wrong zone")})
    out = Framework("p", [ep(first), ep(second)]).run_filter(pod(), NODES)
    assert [(s.code, s.plugin, s.message) for s in out.statuses] == [
        (Code.UNSCHEDULABLE, "First", "too hot"),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Second", "wrong zone"),
        (Code.SUCCESS, "", ""),
    ]
    assert out.error == ""


def test_rejection_without_reason_gets_one() -> None:
    out = Framework("p", [ep(RejectNamed("Quiet", {"a": Status(Code.UNSCHEDULABLE)}))]).run_filter(pod(), NODES)
    assert out.statuses[0].message == "rejected by Quiet"


@pytest.mark.parametrize("fail_open", [False, True])
def test_filter_failure_policy(fail_open: bool) -> None:
    crashing = RejectNamed("Crashy", {}, crash=["b"])
    other = RejectNamed("Other", {"b": Status.unschedulable("full")})
    out = Framework("p", [ep(crashing, fail_open=fail_open), ep(other)]).run_filter(pod(), NODES)
    if fail_open:  # Ignore: the node goes on to the next plugin
        assert out.error == ""
        assert out.ignored_errors == {"Crashy": 1}
        assert out.statuses[1].message == "full"
    else:  # Fail: the whole answer is Error, naming plugin and node
        assert out.error == f"Crashy: node b: {PLUGIN_FAILED}"


def test_prefilter_rejection_applies_to_every_node_and_skip_skips_filter() -> None:
    class Pre(RejectNamed):
        def __init__(self, status: Status) -> None:
            super().__init__("Pre", {"a": Status.unschedulable("filter ran")})
            self.status = status

        def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
            return self.status

    out = Framework("p", [ep(Pre(Status.unresolvable("pod is broken")))]).run_filter(pod(), NODES)
    assert {(s.code, s.message) for s in out.statuses} == {(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "pod is broken")}
    out = Framework("p", [ep(Pre(Status(Code.SKIP)))]).run_filter(pod(), NODES)
    assert all(s.is_success() for s in out.statuses)
    out = Framework("p", [ep(Pre(SUCCESS))]).run_filter(pod(), NODES)
    assert out.statuses[0].message == "filter ran"


class Nominations:
    """A snapshot with a pod nominated to node ``a``: ``with_nominated`` gives a copy of the node
    labelled ``nominated`` (the pod counted there); counts its calls."""

    def __init__(self) -> None:
        self.nominated = {"a": (pod("vip", uid="vip", priority=10),)}
        self.calls = 0

    def with_nominated(self, info: NodeInfo, incoming: PodInfo) -> NodeInfo:
        self.calls += 1
        return node(info.name, labels={"nominated": "yes"}) if info.name in self.nominated else info


class Crowded:
    """Filter: rejects a node counting a nominated pod; raises on one when told to."""

    name = "Crowded"

    def __init__(self, crash: bool = False) -> None:
        self.crash = crash

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if node.labels.get("nominated"):
            if self.crash:
                raise RuntimeError("boom")
            return Status.unschedulable("room kept for a nominated pod")
        return SUCCESS


def test_the_search_counts_a_node_feasible_only_with_its_nominated_pods_too() -> None:
    """``findNodesThatPassFilters`` calls ``RunFilterPluginsWithNominatedPods`` per node: node a
    passes as it is but not with the pod nominated to it, so a search wanting one feasible node
    from a goes on to b (c stays unevaluated); a PreFilter rejection skips the nominated pass; an
    error in it is the search's."""
    lister = Nominations()
    out = Framework("p", [ep(Crowded())]).run_filter(pod(), NODES, CycleState(lister), feasible_wanted=1)
    assert [s.message for s in out.statuses] == ["room kept for a nominated pod", "", UNEVALUATED.message]
    assert (out.statuses[0].plugin, out.evaluated, lister.calls) == ("Crowded", 2, 1)

    class Rejecting(Crowded):
        def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
            return Status.unschedulable("no")

    lister = Nominations()
    out = Framework("p", [ep(Rejecting())]).run_filter(pod(), NODES, CycleState(lister))
    assert {s.message for s in out.statuses} == {"no"} and lister.calls == 0
    out = Framework("p", [ep(Crowded(crash=True))]).run_filter(pod(), NODES, CycleState(Nominations()))
    assert (out.error, out.error_plugin, out.statuses) == (f"Crowded: node a: {PLUGIN_FAILED}", "Crowded", [])


def test_score_weighted_mean_scaled_to_extender_range() -> None:
    a = Fixed("A", {"a": 100, "b": 0, "c": 50})
    b = Fixed("B", {"a": 0, "b": 100, "c": 44})
    out = Framework("p", score_plugins=[ep(a, weight=3), ep(b, weight=1)]).run_score(pod(), NODES)
    # a: (300+0)/4 = 75 -> 7.5 -> 8 (half up); b: 100/4 = 25 -> 2.5 -> 3; c: (150+44)/4 = 48.5 -> 4.85 -> 5
    assert out.scores == [8, 3, 5]
    assert out.plugin_scores == {"A": [100, 0, 50], "B": [0, 100, 44]}


def test_score_normalize_skip_and_range_check() -> None:
    out = Framework("p", score_plugins=[ep(Doubling("D", {"a": 50, "b": 10, "c": 0}))]).run_score(pod(), NODES)
    assert out.scores == [10, 2, 0]
    out = Framework("p", score_plugins=[ep(Fixed("S", {}, skip=True))]).run_score(pod(), NODES)
    assert out.scores == [0, 0, 0] and out.skipped == {"S": "PreScore returned Skip"}
    with pytest.raises(FrameworkError, match=r"node a: score 101 is outside 0\.\.100"):
        Framework("p", score_plugins=[ep(Fixed("Big", {"a": 101, "b": 0, "c": 0}))]).run_score(pod(), NODES)


@pytest.mark.parametrize("fail_open", [False, True])
def test_score_failure_policy(fail_open: bool) -> None:
    broken = Fixed("Broken", {"a": 1})  # KeyError on b
    good = Fixed("Good", {"a": 100, "b": 0, "c": 100})
    fw = Framework("p", score_plugins=[ep(broken, fail_open=fail_open), ep(good)])
    if fail_open:
        out = fw.run_score(pod(), NODES)
        assert out.scores == [10, 0, 10] and "Broken" in out.skipped
    else:
        with pytest.raises(FrameworkError, match=r"^Broken: node b: plugin failed unexpectedly"):
            fw.run_score(pod(), NODES)


def test_non_integer_score_is_an_error() -> None:
    with pytest.raises(FrameworkError, match="is not an integer"):
        Framework("p", score_plugins=[ep(Fixed("F", {"a": 5.0, "b": 1, "c": 1}))]).run_score(pod(), NODES)  # type: ignore[dict-item]


def victims(*uids: str, pdb: int = 0) -> Victims:
    return Victims([PodInfo(None, u) for u in uids], pdb)


class Trim:
    def __init__(self, result: dict[str, Victims]) -> None:
        self.name = "Trim"
        self.result = result

    def process_preemption(self, state: CycleState, pod: PodInfo, candidates: dict[str, Victims]) -> dict[str, Victims]:
        return self.result


def test_preemption_rules() -> None:
    candidates = {"a": victims("u1", "u2"), "b": victims("u3", pdb=1)}
    fw = Framework("p", preemption_plugins=[])
    assert fw.run_preemption(pod(), candidates) == candidates  # no plugin: echo
    # dropping a node and trimming victims is allowed; emptying a list drops the node
    fw = Framework("p", preemption_plugins=[ep(Trim({"a": victims("u2"), "b": victims(pdb=1)}))])
    got = fw.run_preemption(pod(), candidates)
    assert {n: [p.uid for p in v.pods] for n, v in got.items()} == {"a": ["u2"]}
    # new nodes or victims are refused
    with pytest.raises(FrameworkError, match="not a candidate"):
        Framework("p", preemption_plugins=[ep(Trim({"z": victims("u1")}))]).run_preemption(pod(), candidates)
    with pytest.raises(FrameworkError, match="not proposed"):
        Framework("p", preemption_plugins=[ep(Trim({"a": victims("u9")}))]).run_preemption(pod(), candidates)
    fw = Framework("p", preemption_plugins=[ep(Trim({"z": victims("u1")}), fail_open=True)])
    assert fw.run_preemption(pod(), candidates) == candidates


class Binder:
    def __init__(self, name: str, status: Status, log: list[str] | None = None) -> None:
        self.name = name
        self.status = status
        self.calls: list[tuple[str, str]] = []
        self.log = log if log is not None else []

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self.calls.append((pod.uid, node_name))
        self.log.append(f"Bind {self.name}")
        return self.status


def test_bind_first_non_skip_decides() -> None:
    ref = PodRef("ns", "p", "uid-1")
    skip, ok = Binder("Skipper", Status(Code.SKIP)), Binder("Binder", SUCCESS)
    status = asyncio.run(Framework("p", bind_plugins=[ep(skip), ep(ok)]).run_bind_verb(ref, "n1"))
    assert status.is_success() and status.plugin == "Binder" and ok.calls == [("uid-1", "n1")]
    fw = Framework("p", bind_plugins=[ep(Binder("X", Status.error("api down")))])
    status = asyncio.run(fw.run_bind_verb(ref, "n1"))
    assert status.code is Code.ERROR and status.message == "X: api down"
    status = asyncio.run(Framework("p").run_bind_verb(ref, "n1"))
    assert status.message == "no binder is configured in profile 'p'"


class Cycle:
    """A plugin at Reserve and Permit that logs every call into a shared list."""

    def __init__(
        self, name: str, log: list[str], reserve: Status = SUCCESS, permit: tuple[Status, float] = (SUCCESS, 0)
    ):
        self.name = name
        self.log = log
        self._reserve = reserve
        self._permit = permit

    def reserve(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        self.log.append(f"Reserve {self.name}")
        return self._reserve

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.log.append(f"Unreserve {self.name}")

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        self.log.append(f"Permit {self.name}")
        return self._permit

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS


def _cycle(log: list[str], *plugins: Cycle, bind: Status = SUCCESS) -> Framework:
    return Framework("p", [ep(p) for p in plugins], bind_plugins=[ep(Binder("B", bind, log))])


def test_the_cycle_runs_in_kube_schedulers_order() -> None:
    """Reserve (every plugin) -> Permit -> Bind: as schedule_one.go, Reserve before Permit."""
    log: list[str] = []
    fw = _cycle(log, Cycle("A", log), Cycle("C", log))
    assert asyncio.run(fw.run_bind_verb(PodRef("ns", "p", "u"), "n1")).is_success()
    assert log == ["Reserve A", "Reserve C", "Permit A", "Permit C", "Bind B"]


def test_a_reserve_refusal_unreserves_every_plugin_in_reverse_and_never_binds() -> None:
    log: list[str] = []
    fw = _cycle(log, Cycle("A", log), Cycle("C", log, reserve=Status.unschedulable("full")), Cycle("D", log))
    status = asyncio.run(fw.run_bind_verb(PodRef("ns", "p", "u"), "n1"))
    assert status.message == "cannot bind to n1: C: Reserve: full"
    assert log == ["Reserve A", "Reserve C", "Unreserve D", "Unreserve C", "Unreserve A"]


def test_a_failed_bind_unreserves_in_reverse() -> None:
    log: list[str] = []
    fw = _cycle(log, Cycle("A", log), Cycle("C", log), bind=Status.error("api down"))
    status = asyncio.run(fw.run_bind_verb(PodRef("ns", "p", "u"), "n1"))
    assert status.message == "B: api down"
    assert log[-3:] == ["Bind B", "Unreserve C", "Unreserve A"]


def test_a_bind_plugin_cannot_skip_reserve() -> None:
    """A bind plugin that knows nothing of Reserve is only asked once Reserve admitted the pod."""
    log: list[str] = []
    fw = _cycle(log, Cycle("Pool", log, reserve=Status.unschedulable("pool exhausted")))
    asyncio.run(fw.run_bind_verb(PodRef("ns", "p", "u"), "n1"))
    assert "Bind B" not in log


def test_permit_wait_holds_the_pod_until_every_waiting_plugin_allows() -> None:
    log: list[str] = []
    wait = (Status(Code.WAIT), 5.0)
    fw = _cycle(log, Cycle("A", log, permit=wait), Cycle("C", log, permit=wait))

    async def run() -> Status:
        task = asyncio.create_task(fw.run_bind_verb(PodRef("ns", "p", "u"), "n1"))
        await asyncio.sleep(0.05)
        waiting = fw.waiting_pods.get("u")
        assert waiting is not None and sorted(waiting.pending_plugins()) == ["A", "C"]
        assert "Bind B" not in log  # waiting: not bound yet, still reserved
        waiting.allow("A")
        await asyncio.sleep(0.05)
        assert not task.done()  # C has not allowed it yet
        waiting.allow("C")
        return await task

    assert asyncio.run(run()).is_success()
    assert log[-1] == "Bind B" and len(fw.waiting_pods) == 0


def test_permit_rejection_or_timeout_unreserves_and_never_binds() -> None:
    log: list[str] = []
    fw = _cycle(log, Cycle("A", log, permit=(Status(Code.WAIT), 0.05)))
    status = asyncio.run(fw.run_bind_verb(PodRef("ns", "p", "u"), "n1"))
    assert status.message == "cannot bind to n1: A: Permit: rejected due to timeout after waiting 0.05s at plugin A"
    assert log == ["Reserve A", "Permit A", "Unreserve A"]
    log.clear()
    fw = _cycle(log, Cycle("A", log, permit=(Status.unschedulable("no"), 0)))
    status = asyncio.run(fw.run_bind_verb(PodRef("ns", "p", "u"), "n1"))
    assert status.message == "cannot bind to n1: A: Permit: no" and log[-1] == "Unreserve A"


def test_plugins_must_implement_their_point() -> None:
    with pytest.raises(ValueError, match="does not implement the score extension point"):
        Framework("p", score_plugins=[ep(RejectNamed("R", {}))])


@pytest.mark.parametrize(
    ("percentage", "nodes", "wanted"),
    [
        # kube-scheduler's TestNumFeasibleNodesToFind (pkg/scheduler/schedule_one_test.go)
        (0, 10, 10),  # not set, numAllNodes < minFeasibleNodesToFind
        (40, 10, 10),  # set, numAllNodes < minFeasibleNodesToFind
        (0, 1000, 420),  # not set, numAllNodes > minFeasibleNodesToFind: 50 - 1000/125 = 42 %
        (40, 1000, 400),
        (0, 6000, 300),  # 50 - 48 = 2 %: raised to 5 %
        (40, 6000, 2400),
        (0, 20000, 1000),
    ],
)
def test_num_feasible_nodes_to_find(percentage: int, nodes: int, wanted: int) -> None:
    from app.framework.runtime import num_feasible_nodes_to_find

    assert num_feasible_nodes_to_find(percentage, nodes) == wanted


def test_filter_stops_once_enough_nodes_passed_and_resumes_where_it_stopped() -> None:
    nodes = [NodeInfo(f"n{i}") for i in range(10)]
    judge = RejectNamed("R", {"n2": Status.unresolvable("no"), "n3": Status.unresolvable("no")})
    fw = Framework("p", [ep(judge)])
    # judged in chunks of 3 from n1: n1 passes, n2 and n3 do not; n4..n6 pass: enough, stop
    out = fw.run_filter(pod(), nodes, CycleState(), feasible_wanted=3, start=1)
    assert out.evaluated == 6
    assert [i for i, s in enumerate(out.statuses) if s.code is Code.SUCCESS] == [1, 4, 5, 6]
    assert [s.message for s in out.statuses[2:4]] == ["no", "no"]
    assert out.statuses[0].message.startswith("not evaluated") and out.statuses[7].message.startswith("not")
    # the next search starts where this one stopped, and wraps around
    out = fw.run_filter(pod(), nodes, CycleState(), feasible_wanted=3, start=1 + out.evaluated)
    assert [i for i, s in enumerate(out.statuses) if s.code is Code.SUCCESS] == [7, 8, 9] and out.evaluated == 3

"""The framework runtime (pkg/scheduler/framework/runtime/framework.go): Filter verdicts,
PreFilter results, the nominated pods' second pass and the PreFilter extensions, failure
policies, Score's weighted TotalScore, preemption rules, the cycle after a node is chosen."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from app.extender.verbs import extender_scores, run_bind_verb, run_filter, run_preemption
from app.framework import (
    SUCCESS,
    Code,
    CycleState,
    NodeInfo,
    NodeScore,
    NominatingInfo,
    PodInfo,
    PodNominator,
    PodRef,
    PreFilterResult,
    Status,
    Victims,
)
from app.framework.runtime import PLUGIN_FAILED, Framework, FrameworkError, ScoreResult
from tests.unit.helpers import enabled, framework, node, pod


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

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        return self.scores[node.name], SUCCESS


class Doubling(Fixed):
    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        for s in scores:
            s.score *= 2
        return SUCCESS


NODES = [node("a"), node("b"), node("c")]


ep = enabled


def test_first_rejection_decides_and_reasons_are_kept() -> None:
    first = RejectNamed("First", {"a": Status.unschedulable("too hot")})
    second = RejectNamed("Second", {"a": Status.unresolvable("never"), "b": Status.unresolvable("wrong zone")})
    out = run_filter(framework(filter=[first, second]), pod(), NODES)
    assert [(s.code, s.plugin, s.message) for s in out.statuses] == [
        (Code.UNSCHEDULABLE, "First", "too hot"),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Second", "wrong zone"),
        (Code.SUCCESS, "", ""),
    ]
    assert out.error == ""


def test_rejection_without_reason_gets_one() -> None:
    out = run_filter(framework(filter=[RejectNamed("Quiet", {"a": Status(Code.UNSCHEDULABLE)})]), pod(), NODES)
    assert out.statuses[0].message == "rejected by Quiet"


@pytest.mark.parametrize("fail_open", [False, True])
def test_filter_failure_policy(fail_open: bool) -> None:
    crashing = RejectNamed("Crashy", {}, crash=["b"])
    other = RejectNamed("Other", {"b": Status.unschedulable("full")})
    out = run_filter(framework(filter=[ep(crashing, fail_open=fail_open), other]), pod(), NODES)
    if fail_open:  # Ignore: the node goes on to the next plugin
        assert out.error == ""
        assert out.ignored_errors == {"Crashy": 1}
        assert out.statuses[1].message == "full"
    else:  # Fail: the whole answer is Error, naming plugin and node
        assert out.error == f"Crashy: node b: {PLUGIN_FAILED}"


class Pre(RejectNamed):
    """PreFilter with a fixed answer; Filter rejects node a ("filter ran")."""

    def __init__(self, status: Status, result: PreFilterResult | None = None, name: str = "Pre") -> None:
        super().__init__(name, {"a": Status.unschedulable("filter ran")})
        self.status, self.result = status, result

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        return self.result, self.status


def test_prefilter_rejection_applies_to_every_node_and_skip_skips_filter() -> None:
    out = run_filter(framework(filter=[Pre(Status.unresolvable("pod is broken"))]), pod(), NODES)
    assert {(s.code, s.message) for s in out.statuses} == {(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "pod is broken")}
    state = CycleState()
    out = run_filter(framework(filter=[Pre(Status(Code.SKIP))]), pod(), NODES, state)
    assert all(s.is_success() for s in out.statuses) and state.skip_filter_plugins == {"Pre"}
    out = run_filter(framework(filter=[Pre(SUCCESS)]), pod(), NODES)
    assert out.statuses[0].message == "filter ran"
    out = run_filter(framework(filter=[Pre(Status.error("no quota"))]), pod(), NODES)
    assert (out.error, out.error_plugin) == ("Pre: PreFilter: no quota", "Pre")


def test_prefilter_results_intersect_and_the_extender_answers_every_node() -> None:
    """``RunPreFilterPlugins`` merges the results (schedule_one_test.go ``test prefilter plugin
    returning node``); the extender's filter must answer each node sent: one outside the result
    gets v1.36.3's "node(s) didn't satisfy plugin(s) [...]", naming the plugins that narrowed."""
    fw = framework(
        filter=[
            Pre(SUCCESS, None, "P1"),
            Pre(SUCCESS, PreFilterResult(frozenset({"b"})), "P2"),
            Pre(SUCCESS, PreFilterResult(frozenset({"a", "b"})), "P3"),
        ]
    )
    result, status, _narrowed = fw.run_pre_filter_plugins(CycleState(), pod(), NODES)
    assert result == PreFilterResult(frozenset({"b"})) and status is SUCCESS
    out = run_filter(fw, pod(), NODES)
    assert [(s.code, s.message) for s in out.statuses] == [
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) didn't satisfy plugin(s) [P2 P3]"),
        (Code.SUCCESS, ""),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) didn't satisfy plugin(s) [P2 P3]"),
    ]
    # no node left: "didn't satisfy plugin(s) [...] simultaneously" (one plugin: "plugin X")
    fw = framework(
        filter=[
            Pre(SUCCESS, PreFilterResult(frozenset({"b"})), "P2"),
            Pre(SUCCESS, PreFilterResult(frozenset({"a"})), "P3"),
        ]
    )
    result, status, _narrowed = fw.run_pre_filter_plugins(CycleState(), pod(), NODES)
    assert (status.code, status.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "node(s) didn't satisfy plugin(s) [P2 P3] simultaneously",
    )
    fw = framework(filter=[Pre(SUCCESS, PreFilterResult(frozenset()), "P2")])
    assert fw.run_pre_filter_plugins(CycleState(), pod(), NODES)[1].message == "node(s) didn't satisfy plugin P2"
    # an Unschedulable PreFilter lets the others run (preemption needs their state); the last one wins
    first, later = Pre(Status.unschedulable("first"), name="A"), Pre(Status.unschedulable("later"), name="B")
    result, status, _narrowed = framework(filter=[first, Pre(SUCCESS, name="C"), later]).run_pre_filter_plugins(
        CycleState(), pod(), NODES
    )
    assert (status.message, status.plugin) == ("later", "B")


class Counted:
    """A PreFilter state that counts the pods added to it: PreFilterExtensions' ``AddPod``."""

    def __init__(self) -> None:
        self.added: list[str] = []

    def clone(self) -> Counted:
        copy = Counted()
        copy.added = list(self.added)
        return copy


class Crowded:
    """PreFilter writes a :class:`Counted`; AddPod/RemovePod update it; Filter rejects a node
    counting the nominated pod "vip" (on the node or in its state)."""

    name = "Crowded"

    def __init__(self, crash: bool = False) -> None:
        self.crash = crash
        self.calls = 0

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        state.write("Crowded/added", Counted())
        return None, SUCCESS

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status:
        if self.crash:
            return Status.error("cannot add")
        state.read("Crowded/added").added.append(pod_to_add.name)
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status:
        state.read("Crowded/added").added.remove(pod_to_remove.name)
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        self.calls += 1
        if "vip" in state.read("Crowded/added").added:
            return Status.unschedulable("room kept for a nominated pod")
        return SUCCESS


class Snap:
    """The lister ``with_pods`` of a nominated pod needs (the node as it is: Crowded reads its state)."""

    def with_pods(self, info: NodeInfo, pods: Sequence[PodInfo]) -> NodeInfo:
        return info


def test_filter_with_nominated_pods_adds_them_through_the_prefilter_extensions() -> None:
    """``RunFilterPluginsWithNominatedPods`` and ``addNominatedPods``: a pod of at least the
    incoming pod's priority nominated to the node is counted (a clone of the state, ``AddPod``)
    in a first pass; the second pass, on the node as it is, runs only when the first passed
    (schedule_one_test.go ``TestFindFitPredicateCallCounts``: one call for a lower-priority
    nomination, two for a higher one); the cycle's own state is left alone."""
    nominator = PodNominator()
    nominator.add_nominated_pod(pod("vip", uid="vip", priority=10, nodeName=""), NominatingInfo("a"))
    crowded = Crowded()
    fw = framework(filter=[crowded], nominator=nominator)
    state = CycleState(Snap())
    fw.run_pre_filter_plugins(state, pod(), NODES)
    status = fw.run_filter_plugins_with_nominated_pods(state, pod(priority=0), NODES[0])
    assert (status.message, status.plugin, crowded.calls) == ("room kept for a nominated pod", "Crowded", 1)
    assert state.read("Crowded/added").added == []
    crowded.calls = 0
    assert fw.run_filter_plugins_with_nominated_pods(state, pod(priority=20), NODES[0]).is_success()
    assert crowded.calls == 1  # the nominated pod has a lower priority: one pass
    crowded.calls = 0
    assert fw.run_filter_plugins_with_nominated_pods(state, pod(priority=0), NODES[1]).is_success()
    assert crowded.calls == 1  # nothing nominated to b
    # an AddPod error is the node's error
    failing = framework(filter=[Crowded(crash=True)], nominator=nominator)
    state = CycleState(Snap())
    failing.run_pre_filter_plugins(state, pod(), NODES)
    status = failing.run_filter_plugins_with_nominated_pods(state, pod(), NODES[0])
    assert (status.code, status.message) == (
        Code.ERROR,
        'running AddPod on PreFilter plugin "Crowded": cannot add',
    )


def run_score(fw: Framework, nodes: Sequence[NodeInfo] = NODES) -> tuple[ScoreResult, Status]:
    state = CycleState()
    status = fw.run_pre_score_plugins(state, pod(), nodes)
    if not status.is_success():
        return ScoreResult(nodes), status
    return fw.run_score_plugins(state, pod(), nodes)


def test_score_total_is_the_weighted_sum_and_the_extender_answers_the_mean_on_0_to_10() -> None:
    a = Fixed("A", {"a": 100, "b": 0, "c": 50})
    b = Fixed("B", {"a": 0, "b": 100, "c": 44})
    out, status = run_score(framework(score=[ep(a, weight=3), ep(b, weight=1)]))
    assert status.is_success()
    assert out.totals == [300, 100, 194]  # TotalScore: sum of weight x score
    assert [(n.name, n.total_score, [(p.name, p.score) for p in n.scores]) for n in out.node_plugin_scores()] == [
        ("a", 300, [("A", 300), ("B", 0)]),
        ("b", 100, [("A", 0), ("B", 100)]),
        ("c", 194, [("A", 150), ("B", 44)]),
    ]
    # the extender: a: (300+0)/4 = 75 -> 7.5 -> 8 (half up); b: 100/4 = 25 -> 2.5 -> 3; c: 48.5 -> 4.85 -> 5
    assert extender_scores(out) == [8, 3, 5]
    assert out.plugin_scores == {"A": [100, 0, 50], "B": [0, 100, 44]}


def test_score_normalize_skip_and_range_check() -> None:
    out, _ = run_score(framework(score=[Doubling("D", {"a": 50, "b": 10, "c": 0})]))
    assert out.totals == [100, 20, 0] and extender_scores(out) == [10, 2, 0]
    out, _ = run_score(framework(score=[Fixed("S", {}, skip=True)]))
    assert out.totals == [0, 0, 0] and extender_scores(out) == [0, 0, 0]
    assert out.skipped == {"S": "PreScore returned Skip"}
    out, status = run_score(framework(score=[Fixed("Big", {"a": 101, "b": 0, "c": 0})]))
    assert (status.code, status.message) == (
        Code.ERROR,
        'applying score defaultWeights on Score plugins: plugin "Big" returns an invalid score 101, '
        "it should in the range of [0, 100] after normalizing",
    )


@pytest.mark.parametrize("fail_open", [False, True])
def test_score_failure_policy(fail_open: bool) -> None:
    broken = Fixed("Broken", {"a": 1})  # KeyError on b
    good = Fixed("Good", {"a": 100, "b": 0, "c": 100})
    fw = framework(score=[ep(broken, fail_open=fail_open), good])
    out, status = run_score(fw)
    if fail_open:
        assert extender_scores(out) == [10, 0, 10] and "Broken" in out.skipped
    else:
        assert (status.code, status.plugin) == (Code.ERROR, "Broken")
        assert status.message == f'running Score plugins: plugin "Broken" failed with: node b: {PLUGIN_FAILED}'


def test_normalize_over_the_scores_alone_when_the_plugin_offers_it() -> None:
    """A plugin with ``normalize_scores`` (BatchNormalizeScorePlugin) is normalized over a list of
    its scores, in node order, and its ``normalize_score`` is not called; TotalScore and the range
    check are the same as over NodeScores."""

    class Listed(Doubling):
        def __init__(self, name: str, scores: dict[str, int]) -> None:
            super().__init__(name, scores)
            self.seen: list[list[int]] = []

        def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
            raise AssertionError("normalize_scores is the plugin's NormalizeScore")

        def normalize_scores(self, state: CycleState, pod: PodInfo, scores: list[int]) -> Status:
            self.seen.append(list(scores))
            scores[:] = [2 * s for s in scores]
            return SUCCESS

    listed = Listed("L", {"a": 50, "b": 10, "c": 0})
    out, status = run_score(framework(score=[ep(listed, weight=2)]))
    assert status.is_success() and listed.seen == [[50, 10, 0]]
    assert out.plugin_scores == {"L": [100, 20, 0]} and out.totals == [200, 40, 0]
    _, status = run_score(framework(score=[Listed("Big", {"a": 51, "b": 0, "c": 0})]))
    assert "returns an invalid score 102" in status.message


def test_score_error_status_and_non_integer_score() -> None:
    class Erring(Fixed):
        def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
            return 0, Status.error("no metrics")

    _, status = run_score(framework(score=[Erring("E", {})]))
    assert status.message == 'running Score plugins: plugin "E" failed with: node a: no metrics'
    _, status = run_score(framework(score=[Fixed("F", {"a": 5.0, "b": 1, "c": 1})]))  # type: ignore[dict-item]
    assert "is not an integer" in status.message


def victims(*uids: str, pdb: int = 0) -> Victims:
    return Victims([PodInfo(None, u) for u in uids], pdb)


class Trim:
    def __init__(self, result: dict[str, Victims]) -> None:
        self.name = "Trim"
        self.result = result

    def process_preemption(
        self, state: CycleState, pod: PodInfo, candidates: dict[str, Victims]
    ) -> tuple[dict[str, Victims], Status]:
        return self.result, SUCCESS


def test_preemption_rules() -> None:
    candidates = {"a": victims("u1", "u2"), "b": victims("u3", pdb=1)}
    fw = framework()
    assert run_preemption(fw, pod(), candidates) == candidates  # no plugin: echo
    # dropping a node and trimming victims is allowed; emptying a list drops the node
    fw = framework(preemption=[Trim({"a": victims("u2"), "b": victims(pdb=1)})])
    got = run_preemption(fw, pod(), candidates)
    assert {n: [p.uid for p in v.pods] for n, v in got.items()} == {"a": ["u2"]}
    # new nodes or victims are refused
    with pytest.raises(FrameworkError, match="not a candidate"):
        run_preemption(framework(preemption=[Trim({"z": victims("u1")})]), pod(), candidates)
    with pytest.raises(FrameworkError, match="not proposed"):
        run_preemption(framework(preemption=[Trim({"a": victims("u9")})]), pod(), candidates)
    fw = framework(preemption=[ep(Trim({"z": victims("u1")}), fail_open=True)])
    assert run_preemption(fw, pod(), candidates) == candidates


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
    status = asyncio.run(run_bind_verb(framework(bind=[skip, ok]), ref, "n1"))
    assert status.is_success() and status.plugin == "Binder" and ok.calls == [("uid-1", "n1")]
    fw = framework(bind=[Binder("X", Status.error("api down"))])
    status = asyncio.run(run_bind_verb(fw, ref, "n1"))
    assert status.code is Code.ERROR and status.message == "X: api down"
    status = asyncio.run(run_bind_verb(Framework("p"), ref, "n1"))
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
    return framework(filter=plugins, bind=[Binder("B", bind, log)])


def test_the_cycle_runs_in_kube_schedulers_order() -> None:
    """Reserve (every plugin) -> Permit -> Bind: as schedule_one.go, Reserve before Permit."""
    log: list[str] = []
    fw = _cycle(log, Cycle("A", log), Cycle("C", log))
    assert asyncio.run(run_bind_verb(fw, PodRef("ns", "p", "u"), "n1")).is_success()
    assert log == ["Reserve A", "Reserve C", "Permit A", "Permit C", "Bind B"]


def test_a_reserve_refusal_unreserves_every_plugin_in_reverse_and_never_binds() -> None:
    log: list[str] = []
    fw = _cycle(log, Cycle("A", log), Cycle("C", log, reserve=Status.unschedulable("full")), Cycle("D", log))
    status = asyncio.run(run_bind_verb(fw, PodRef("ns", "p", "u"), "n1"))
    assert status.message == "cannot bind to n1: C: Reserve: full"
    assert log == ["Reserve A", "Reserve C", "Unreserve D", "Unreserve C", "Unreserve A"]


def test_a_failed_bind_unreserves_in_reverse() -> None:
    log: list[str] = []
    fw = _cycle(log, Cycle("A", log), Cycle("C", log), bind=Status.error("api down"))
    status = asyncio.run(run_bind_verb(fw, PodRef("ns", "p", "u"), "n1"))
    assert status.message == "B: api down"
    assert log[-3:] == ["Bind B", "Unreserve C", "Unreserve A"]


def test_a_bind_plugin_cannot_skip_reserve() -> None:
    """A bind plugin that knows nothing of Reserve is only asked once Reserve admitted the pod."""
    log: list[str] = []
    fw = _cycle(log, Cycle("Pool", log, reserve=Status.unschedulable("pool exhausted")))
    asyncio.run(run_bind_verb(fw, PodRef("ns", "p", "u"), "n1"))
    assert "Bind B" not in log


def test_permit_wait_holds_the_pod_until_every_waiting_plugin_allows() -> None:
    log: list[str] = []
    wait = (Status(Code.WAIT), 5.0)
    fw = _cycle(log, Cycle("A", log, permit=wait), Cycle("C", log, permit=wait))

    async def run() -> Status:
        task = asyncio.create_task(run_bind_verb(fw, PodRef("ns", "p", "u"), "n1"))
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
    status = asyncio.run(run_bind_verb(fw, PodRef("ns", "p", "u"), "n1"))
    assert status.message == "cannot bind to n1: A: Permit: rejected due to timeout after waiting 0.05s at plugin A"
    assert log == ["Reserve A", "Permit A", "Unreserve A"]
    log.clear()
    fw = _cycle(log, Cycle("A", log, permit=(Status.unschedulable("no"), 0)))
    status = asyncio.run(run_bind_verb(fw, PodRef("ns", "p", "u"), "n1"))
    assert status.message == "cannot bind to n1: A: Permit: no" and log[-1] == "Unreserve A"


def test_plugins_must_implement_their_point() -> None:
    with pytest.raises(ValueError, match="does not implement the score extension point"):
        framework(score=[RejectNamed("R", {})])


def test_reserve_and_permit_lists_are_their_own() -> None:
    """Each point has its own ordered list (``expandMultiPointPlugins``): a plugin enabled at
    Filter takes part in Reserve and Permit unless the lists given say otherwise."""
    log: list[str] = []
    a, c = Cycle("A", log), Cycle("C", log)
    fw = framework(filter=[a, c], reserve=[c], permit=[c, a], bind=[Binder("B", SUCCESS, log)])
    assert asyncio.run(run_bind_verb(fw, PodRef("ns", "p", "u"), "n1")).is_success()
    assert log == ["Reserve C", "Permit C", "Permit A", "Bind B"]


def test_extender_scores_of_other_totals_or_weights_after_the_same() -> None:
    """The last answer is kept for the same totals and weights; other totals or weights are
    scaled anew."""
    same = ScoreResult((), {"A": [100, 40]}, {"A": 1}, [100, 45])
    assert extender_scores(same) == extender_scores(same) == [10, 5]
    assert extender_scores(ScoreResult((), {"A": [100, 40]}, {"A": 1}, [100, 44])) == [10, 4]
    assert extender_scores(ScoreResult((), {"A": [100, 40]}, {"A": 2}, [100, 45])) == [5, 2]
    assert extender_scores(same) == [10, 5]

"""DefaultPreemption's asynchronous preemption (app/plugins/preemption_executor.py) against
kube-scheduler v1.36.3's tables: pkg/scheduler/framework/preemption/executor_test.go
(``TestIsPodRunningPreemption``, ``TestPrepareCandidate`` with async preemption on: the
``preempting`` set while it runs, the preemptor activated on a failure, the victims deleted) and
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go (``TestPreEnqueue``),
the case names verbatim; the pod-group rows are left out (no workload-aware preemption here)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import msgspec
import pytest

from app.framework import SUCCESS, Code, Handle, PodInfo, Status, objects
from app.framework.waiting import WaitingPod
from app.plugins.defaultpreemption import WAITING_FOR_PREEMPTION, DefaultPreemption, DefaultPreemptionArgs
from app.plugins.preemption_executor import Executor
from app.scheduler.queue import UNSCHEDULABLE, SchedulingQueue
from tests.support.apiserver import node as node_doc
from tests.support.apiserver import pod as pod_doc
from tests.support.cluster import MemoryCluster


def victim_doc(name: str, uid: str = "", deleting: bool = False, priority: int = 100) -> dict[str, Any]:
    doc = pod_doc(name, "ns", node="node1", cpu="100m", priority=priority)
    doc["metadata"]["uid"] = uid or name
    if deleting:
        doc["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return doc


def info(doc: dict[str, Any]) -> PodInfo:
    return PodInfo(msgspec.convert(doc, objects.Pod))


PREEMPTOR = info(pod_doc("preemptor", "ns", cpu="100m", priority=1000))


class Activator:
    def __init__(self) -> None:
        self.activated: list[str] = []

    def activate(self, pods: Iterable[PodInfo]) -> None:
        self.activated.extend(p.name for p in pods)


def executor(rt: MemoryCluster) -> tuple[Executor, Activator]:
    handle = Handle("p", cluster=rt)
    activator = Activator()
    handle.pod_activator = activator
    return Executor(handle, rt, "DefaultPreemption"), activator


# -- TestIsPodRunningPreemption ----------------------------------------------------------------------

RUNNING = [
    pytest.param(set(), {}, (), False, id="preemptor not in preemptingSet"),
    pytest.param(
        set(), {"preemptor": "victim1"}, (), False, id="preemptor not in preemptingSet, lastVictimSet not empty"
    ),
    pytest.param(
        {"preemptor"}, {"otherPod": "victim1"}, (), True, id="preemptor in preemptingSet, no lastVictim for preemptor"
    ),
    pytest.param(
        {"preemptor"},
        {"preemptor": "victim1"},
        (),
        False,
        id="preemptor in preemptingSet, victim in lastVictimSet, not in PodLister",
    ),
    pytest.param(
        {"preemptor"},
        {"preemptor": "victim1"},
        ("victim1", "victim2"),
        True,
        id="preemptor in preemptingSet, victim in lastVictimSet and in PodLister",
    ),
    pytest.param(
        {"preemptor"},
        {"preemptor": "victim-deleted"},
        ("victim1", "victim-deleted"),
        False,
        id="preemptor in preemptingSet, victim in lastVictimSet and in PodLister with deletion timestamp",
    ),
]


@pytest.mark.parametrize(("preempting", "last", "in_lister", "expected"), RUNNING)
def test_is_pod_running_preemption(
    preempting: set[str], last: dict[str, str], in_lister: tuple[str, ...], expected: bool
) -> None:
    rt = MemoryCluster()
    rt.seed([node_doc("node1", cpu="4")], [victim_doc(n, deleting=n == "victim-deleted") for n in in_lister])
    ex, _ = executor(rt)
    ex.preempting = set(preempting)
    ex.last_victims = {p: info(victim_doc(v)) for p, v in last.items()}
    assert ex.is_pod_running_preemption("preemptor") is expected


# -- TestPrepareCandidate, async preemption on ------------------------------------------------------

ERR_DELETE = Status.error("delete pod failed")
ERR_PATCH = Status.error("patch pod status failed")
GONE = Status(Code.SKIP)

PREPARE = [
    # name, victims (name, deleting), refused {uid: status}, deleted, preempting while it runs, activated
    pytest.param([], {}, [], False, [], id="no victims"),
    pytest.param([("victim1", False)], {}, ["victim1"], True, [], id="one victim without condition"),
    pytest.param([("victim1", True)], {}, [], False, [], id="one victim, but victim is already being deleted"),
    pytest.param(
        [("not-found-victim", False)],
        {"not-found-victim": GONE},
        [],
        True,
        [],
        id="one victim, but victim is already deleted",
    ),
    pytest.param(
        [("fail-victim", False)],
        {"fail-victim": ERR_DELETE},
        [],
        True,
        ["preemptor"],
        id="one victim, but pod deletion failed",
    ),
    pytest.param(
        [("fail-victim", False)],
        {"fail-victim": ERR_PATCH},
        [],
        True,
        ["preemptor"],
        id="one victim, but patch pod failed",
    ),
    pytest.param(
        [("fail-victim", False), ("victim2", False)],
        {"fail-victim": ERR_PATCH},
        [],  # the last victim is not preempted once an earlier one failed (prepareCandidateAsync)
        True,
        ["preemptor"],
        id="two victims without condition, one passes successfully and the second fails",
    ),
]


@pytest.mark.parametrize(("victims", "refused", "deleted", "marked", "activated"), PREPARE)
def test_prepare_candidate_async(
    victims: list[tuple[str, bool]], refused: dict[str, Status], deleted: list[str], marked: bool, activated: list[str]
) -> None:
    async def scenario() -> None:
        rt = MemoryCluster()
        docs = [victim_doc(n, deleting=d) for n, d in victims]
        rt.seed([node_doc("node1", cpu="4")], docs)
        rt.refuse_preemption = refused
        ex, activator = executor(rt)
        ex.prepare_candidate_async(PREEMPTOR, "node1", [info(d) for d in docs])
        assert ex.preempting == ({PREEMPTOR.uid} if marked else set())  # set in the cycle, before the task runs
        assert ex.is_pod_running_preemption(PREEMPTOR.uid) is marked
        await ex.wait()
        assert [uid for _, _, uids in rt.preemptions for uid in uids] == deleted
        assert [e[0] for e in rt.preempted_events] == deleted  # no Event for a victim gone already
        assert ex.preempting == set() and ex.last_victims == {}
        assert activator.activated == activated

    asyncio.run(scenario())


def test_the_last_victim_is_preempted_last_and_lower_priority_nominations_cleared_first() -> None:
    """prepareCandidateAsync: clearNominatedNodeName first, then every victim but the last, then the
    last one, registered in lastVictimsPendingPreemption while it is preempted."""

    async def scenario() -> None:
        rt = MemoryCluster()
        nominated = pod_doc("nominated-low", "ns", cpu="100m", priority=10)
        nominated["status"]["nominatedNodeName"] = "node1"
        docs = [victim_doc("v1"), victim_doc("v2"), victim_doc("v3")]
        rt.seed([node_doc("node1", cpu="4")], [*docs, nominated])
        ex, _ = executor(rt)
        ex.handle.nominator = rt.nominator
        seen: list[tuple[str, list[str], str | None]] = []
        preempt_pod = rt.preempt_pod

        async def watching(preemptor: PodInfo, node: str, victim: PodInfo) -> Status:
            last = ex.last_victims.get(preemptor.uid)
            seen.append((victim.uid, list(rt.unnominated), last.uid if last is not None else None))
            return await preempt_pod(preemptor, node, victim)

        rt.preempt_pod = watching  # type: ignore[method-assign]
        ex.prepare_candidate_async(PREEMPTOR, "node1", [info(d) for d in docs])
        await ex.wait()
        unnominated = ["uid-ns-nominated-low"]
        assert sorted(seen[:2]) == [("v1", unnominated, None), ("v2", unnominated, None)]
        assert seen[2] == ("v3", unnominated, "v3")

    asyncio.run(scenario())


def test_a_victim_waiting_at_permit_is_preempted_in_memory() -> None:
    """PreemptPod: a WaitingPod is preempted without an API call, its Event says so."""

    async def scenario() -> None:
        rt = MemoryCluster()
        doc = victim_doc("waiting")
        rt.seed([node_doc("node1", cpu="4")], [doc])
        ex, _ = executor(rt)
        waiting = WaitingPod(info(doc), "node1", {"Coscheduling": 60.0})
        ex.handle.waiting_pods.add(waiting)
        ex.prepare_candidate_async(PREEMPTOR, "node1", [info(doc)])
        await ex.wait()
        assert rt.preemptions == []
        assert rt.preempted_events == [("waiting", PREEMPTOR.uid, "node1", True)]
        assert (await waiting.result).reasons == ("preempted",)

    asyncio.run(scenario())


# -- TestPreEnqueue ---------------------------------------------------------------------------------

PRE_ENQUEUE = [
    pytest.param(False, "preemptor", SUCCESS, id="AsyncPreemption disabled, returns nil"),
    pytest.param(
        True,
        "preemptor",
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (WAITING_FOR_PREEMPTION,), "DefaultPreemption"),
        id="AsyncPreemption enabled, same pod, returns UnschedulableAndUnresolvable",
    ),
    pytest.param(True, "other", SUCCESS, id="AsyncPreemption enabled, different pod, returns nil"),
]


@pytest.mark.parametrize(("asynchronous", "pod", "expected"), PRE_ENQUEUE)
def test_pre_enqueue(asynchronous: bool, pod: str, expected: Status) -> None:
    rt = MemoryCluster()
    plugin = DefaultPreemption(DefaultPreemptionArgs(), Handle("p", cluster=rt))
    plugin.executor.asynchronous = asynchronous
    plugin.executor.preempting.add(PREEMPTOR.uid)  # a preemption in flight, its last victim not reached
    candidate = PREEMPTOR if pod == "preemptor" else info(pod_doc("other", "ns", cpu="100m"))
    status = plugin.pre_enqueue(candidate)
    assert (status.code, status.reasons) == (expected.code, expected.reasons)


@pytest.mark.parametrize("asynchronous", [True, False])
def test_events_to_register_is_pod_delete_always_skipped(asynchronous: bool) -> None:
    """``EventsToRegister`` (default_preemption.go, v1.36.3): with async preemption, Pod Delete
    whose hint always says Skip (the preemptor's other rejecting plugins decide); none with it
    off. Without a registration the queue would wake the preemptor on every event and park it
    again at PreEnqueue."""
    from app.framework.events import POD, ActionType, ClusterEvent
    from app.framework.events import SKIP as QUEUE_SKIP

    plugin = DefaultPreemption(DefaultPreemptionArgs(), Handle("p", cluster=MemoryCluster()))
    plugin.executor.asynchronous = asynchronous
    registered = plugin.events_to_register()
    if not asynchronous:
        assert registered == ()
        return
    ((event,),) = [registered]
    assert event.event == ClusterEvent(POD, ActionType.DELETE) and event.hint is not None
    assert event.hint(PREEMPTOR, PREEMPTOR, None) == QUEUE_SKIP


def test_a_popped_preemptor_whose_preemption_runs_is_parked_not_tried() -> None:
    """v1.36.3's queue runs PreEnqueue as a pod moves to activeQ (scheduling_queue.go
    moveToActiveQ): a preemptor whose preemption is in flight is not tried; it waits in the
    unschedulable pool with DefaultPreemption among its unschedulable plugins, its attempt not
    counted; once the preemption is over, an event that moves it lets it be tried."""
    from app.scheduler.queue import pre_enqueue_of

    rt = MemoryCluster()
    plugin = DefaultPreemption(DefaultPreemptionArgs(), Handle("p", cluster=rt))
    now = [0.0]
    queue = SchedulingQueue(clock=lambda: now[0], pre_enqueue=pre_enqueue_of([plugin]))
    queue.apply([(PREEMPTOR.uid, PREEMPTOR)])
    popped = queue.pop()
    assert popped is not None
    queue.failed(PREEMPTOR.uid, True, {"NodeResourcesFit"}, None)  # its PostFilter preempted
    plugin.executor.preempting.add(PREEMPTOR.uid)
    now[0] = 2.0
    assert queue.pop() is None  # back from backoff (an event during its cycle), refused at PreEnqueue
    entry = queue.get(PREEMPTOR.uid)
    assert entry is not None and entry.where == UNSCHEDULABLE and entry.attempts == 1
    assert entry.unschedulable_plugins == {"NodeResourcesFit", "DefaultPreemption"}
    plugin.executor.preempting.clear()
    queue.activate([PREEMPTOR])
    assert queue.pop() is PREEMPTOR and entry.attempts == 2

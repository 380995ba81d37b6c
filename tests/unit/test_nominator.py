"""The nominator against kube-scheduler v1.30's cases, as data:
pkg/scheduler/internal/queue/scheduling_queue_test.go (kubernetes/kubernetes) —
TestPriorityQueue_UpdateNominatedPodForNode, TestPriorityQueue_NominatedPodsForNode,
TestPriorityQueue_NominatedPodDeleted — through the scheduling queue, which keeps the nominator
in step with the pods it takes in; then ``UpdateNominatedPod`` keeping a nomination the API server
does not show yet."""

from __future__ import annotations

from typing import Any

import pytest

from app.framework import PodInfo, PodNominator
from app.framework.nominator import NOMINATING_NOOP, NominatingInfo
from app.scheduler.queue import SchedulingQueue
from tests.unit.helpers import pod

LOW, HIGH = 0, 1000
MEDIUM = (LOW + HIGH) // 2


def make(name: str, namespace: str, priority: int = 0, nominated: str = "", node: str = "", **meta: Any) -> PodInfo:
    info = pod(name, uid=f"{name}{namespace}", priority=priority, nodeName=node, **meta)
    info.namespace = namespace
    info.nominated_node_name = nominated
    return info


#: the fixtures of scheduling_queue_test.go
HIGH_PRIORITY = make("hpp", "ns1", HIGH)
HIGH_PRI_NOMINATED = make("hpp", "ns1", HIGH, nominated="node1")
MED_PRIORITY = make("mpp", "ns2", MEDIUM, nominated="node1")
UNSCHEDULABLE = make("up", "ns1", LOW, nominated="node1")
NON_EXISTENT = make("ne", "ns1")
SCHEDULED = make("sp", "ns1", node="foo")


def informer(*pods: PodInfo) -> PodNominator:
    """A nominator whose pod lister knows ``pods`` (``NewTestQueueWithObjects``)."""
    known = {p.uid: p for p in pods}
    return PodNominator(known.get)


def state(nominator: PodNominator) -> tuple[dict[str, str], dict[str, list[str]]]:
    """``nominatedPodToNode`` and ``nominatedPods`` by name."""
    by_uid = {}
    nodes = {}
    for node in sorted(nominator.nominated_nodes()):
        names = [p.name for p in nominator.nominated_pods_for_node(node)]
        nodes[node] = names
        for p in nominator.nominated_pods_for_node(node):
            by_uid[p.uid] = node
    return by_uid, nodes


def test_update_nominated_pod_for_node() -> None:
    nominator = informer(MED_PRIORITY, UNSCHEDULABLE, HIGH_PRIORITY, SCHEDULED)
    q = SchedulingQueue(nominator=nominator)
    q.apply([(MED_PRIORITY.uid, MED_PRIORITY)])
    # unschedulable's nomination on another node than its pod says
    nominator.add_nominated_pod(UNSCHEDULABLE, NominatingInfo("node5"))
    # a nomination for a pod whose object names no node
    nominator.add_nominated_pod(HIGH_PRIORITY, NominatingInfo("node2"))
    expected = (
        {"mppns2": "node1", "hppns1": "node2", "upns1": "node5"},
        {"node1": ["mpp"], "node2": ["hpp"], "node5": ["up"]},
    )
    assert state(nominator) == expected
    assert q.pop() is MED_PRIORITY
    assert state(nominator) == expected  # popping does not change the nominations
    nominator.add_nominated_pod(HIGH_PRIORITY, NominatingInfo("node4"))
    expected = (
        {"mppns2": "node1", "hppns1": "node4", "upns1": "node5"},
        {"node1": ["mpp"], "node4": ["hpp"], "node5": ["up"]},
    )
    assert state(nominator) == expected
    # a pod the informer no longer has: nothing changes
    nominator.add_nominated_pod(NON_EXISTENT, NominatingInfo("node1"))
    assert state(nominator) == expected
    # a pod the informer shows scheduled already: nothing changes
    nominator.add_nominated_pod(make("sp", "ns1"), NominatingInfo("node1"))
    assert state(nominator) == expected
    # a nominated pod whose object names no node is deleted all the same
    nominator.delete_nominated_pod_if_exists(HIGH_PRIORITY)
    assert state(nominator) == ({"mppns2": "node1", "upns1": "node5"}, {"node1": ["mpp"], "node5": ["up"]})


def test_nominated_pods_for_node() -> None:
    nominator = informer(MED_PRIORITY, UNSCHEDULABLE, HIGH_PRIORITY)
    q = SchedulingQueue(nominator=nominator)
    q.apply([(p.uid, p) for p in (MED_PRIORITY, UNSCHEDULABLE, HIGH_PRIORITY)])
    assert q.pop() is HIGH_PRIORITY
    listed = nominator.nominated_pods_for_node("node1")
    assert listed == [MED_PRIORITY, UNSCHEDULABLE]
    listed.clear()  # a copy: the nominator's list is not the caller's
    assert nominator.nominated_pods_for_node("node1") == [MED_PRIORITY, UNSCHEDULABLE]
    assert nominator.nominated_pods_for_node("node2") == []


@pytest.mark.parametrize(
    ("info", "delete", "want"),
    [
        pytest.param(MED_PRIORITY, False, True, id="alive pod gets added into PodNominator"),
        pytest.param(HIGH_PRI_NOMINATED, True, False, id="deleted pod shouldn't be added into PodNominator"),
        pytest.param(
            HIGH_PRIORITY,
            False,
            False,
            id="pod without .status.nominatedPodName specified shouldn't be added into PodNominator",
        ),
    ],
)
def test_nominated_pod_deleted(info: PodInfo, delete: bool, want: bool) -> None:
    nominator = informer() if delete else informer(info)
    nominator.add_nominated_pod(info, None)
    assert (len(nominator.nominated_pods_for_node(info.nominated_node_name)) == 1) is want


def test_an_update_keeps_a_nomination_the_api_server_does_not_show_yet() -> None:
    """``UpdateNominatedPod``: neither the old nor the new object carries a nomination but the
    nominator holds one (decided by a scheduling cycle, not written back yet): it stays; an
    update that sets, changes or clears ``status.nominatedNodeName`` is taken as it is."""
    nominator = PodNominator()
    q = SchedulingQueue(nominator=nominator)
    plain = make("p", "ns", LOW)
    q.apply([(plain.uid, plain)])
    assert nominator.nominated_node(plain.uid) is None
    nominator.add_nominated_pod(plain, NominatingInfo("n1"))  # handleSchedulingFailure, at once
    relabelled = make("p", "ns", LOW, labels={"a": "b"})
    q.apply([(plain.uid, relabelled)])
    assert nominator.nominated_node(plain.uid) == "n1"
    assert nominator.nominated_pods_for_node("n1") == [relabelled]
    written = make("p", "ns", LOW, nominated="n2")
    q.apply([(plain.uid, written)])
    assert nominator.nominated_node(plain.uid) == "n2"
    cleared = make("p", "ns", LOW)
    q.apply([(plain.uid, cleared)])
    assert nominator.nominated_node(plain.uid) is None
    # NOOP: the pod's own status decides; the queue forgets a pod that leaves
    nominator.add_nominated_pod(written, NOMINATING_NOOP)
    assert nominator.nominated_node(plain.uid) == "n2"
    q.apply([(plain.uid, None)])
    assert nominator.nominated_node(plain.uid) is None and len(nominator) == 0

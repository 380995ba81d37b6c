"""Queueing hints (kube-scheduler v1.36.3, GA since v1.34): the plugins' hint functions ported
with rows of their upstream tables, and the scheduling queue's use of them
(pkg/scheduler/backend/queue/scheduling_queue.go: ``isPodWorthRequeuing``,
``determineSchedulingHintForInFlightPod``, ``popBackoff``)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from app.framework import PodInfo, objects
from app.framework.events import (
    ASSIGNED_POD,
    NODE,
    POD,
    QUEUE,
    SKIP,
    UNSCHEDULED_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    ObservedEvent,
)
from app.plugins import nodeports, nodeunschedulable, tainttoleration
from app.plugins.nodeaffinity import NodeAffinity
from app.plugins.noderesources import fit
from app.scheduler.queue import ACTIVE, BACKOFF, UNSCHEDULABLE, SchedulingQueue
from tests.unit.helpers import pod


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def node_obj(name: str = "nodeA", **parts: Any) -> objects.Node:
    doc: dict[str, Any] = {"metadata": {"name": name, "labels": parts.pop("labels", {})}}
    doc["spec"] = {k: v for k, v in parts.items() if k in ("taints", "unschedulable")}
    doc["status"] = {"allocatable": parts.get("allocatable", {"cpu": "4", "memory": "8Gi", "pods": "110"})}
    return msgspec.convert(doc, objects.Node)


def taint(value: str) -> dict[str, str]:
    return {"key": "dedicated", "value": value, "effect": "NoSchedule"}


# -- TaintToleration: taint_toleration_test.go TestIsSchedulableAfterNodeChange (v1.36.3) ----------

_TOLERATES_USER2 = [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}]
TAINT_ROWS = [
    ("backoff-wrong-new-object", None, "not-a-node", QUEUE),
    ("backoff-wrong-old-object", "not-a-node", node_obj(taints=[taint("user1")]), QUEUE),
    ("skip-queue-on-untoleratedtaint-node-added", None, node_obj(taints=[taint("user1")]), SKIP),
    ("queue-on-toleratedtaint-node-added", None, node_obj(taints=[taint("user2")]), QUEUE),
    (
        "skip-unrelated-change",
        node_obj(taints=[taint("user1")]),
        node_obj(taints=[taint("user1"), taint("user3")]),
        SKIP,
    ),
    ("queue-on-taint-change", node_obj(taints=[taint("user1")]), node_obj(taints=[taint("user2")]), QUEUE),
]


def _hint(fn: Any, target: PodInfo, old: object, new: object) -> int:
    """A hint as the queue calls it: raising counts as ``Queue``."""
    try:
        return int(fn(target, old, new))
    except Exception:
        return int(QUEUE)


@pytest.mark.parametrize(("name", "old", "new", "want"), TAINT_ROWS, ids=[r[0] for r in TAINT_ROWS])
def test_taint_toleration_node_change(name: str, old: object, new: object, want: int) -> None:
    target = pod("pod1", tolerations=_TOLERATES_USER2)
    assert _hint(tainttoleration.is_schedulable_after_node_change, target, old, new) == want


def test_taint_toleration_and_node_unschedulable_pod_toleration_change() -> None:
    """``Test_isSchedulableAfterPodTolerationChange`` (both plugins): the pod's own update queues,
    another pod's does not; NodeUnschedulable only for a toleration of the unschedulable taint."""
    target = pod("p", uid="p")
    other = pod("q", uid="q", tolerations=[{"operator": "Exists"}])
    assert tainttoleration.is_schedulable_after_pod_toleration_change(target, target, pod("p", uid="p")) == QUEUE
    assert tainttoleration.is_schedulable_after_pod_toleration_change(target, other, other) == SKIP
    tolerating = pod("p", uid="p", tolerations=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}])
    unrelated = pod("p", uid="p", tolerations=[{"key": "foo", "effect": "NoSchedule"}])
    assert nodeunschedulable.is_schedulable_after_pod_toleration_change(target, target, tolerating) == QUEUE
    assert nodeunschedulable.is_schedulable_after_pod_toleration_change(target, target, unrelated) == SKIP


# -- NodeUnschedulable: node_unschedulable_test.go TestIsSchedulableAfterNodeChange ------------------

UNSCHEDULABLE_ROWS = [
    ("backoff-wrong-new-object", None, "not-a-node", QUEUE),
    ("backoff-wrong-old-object", "not-a-node", node_obj(unschedulable=True), QUEUE),
    ("skip-queue-on-unschedulable-node-added", None, node_obj(unschedulable=True), SKIP),
    ("queue-on-schedulable-node-added", None, node_obj(unschedulable=False), QUEUE),
    ("skip-unrelated-change", node_obj(unschedulable=True), node_obj(unschedulable=True, taints=[taint("x")]), SKIP),
    ("queue-on-unschedulable-field-change", node_obj(unschedulable=True), node_obj(unschedulable=False), QUEUE),
]


@pytest.mark.parametrize(("name", "old", "new", "want"), UNSCHEDULABLE_ROWS, ids=[r[0] for r in UNSCHEDULABLE_ROWS])
def test_node_unschedulable_node_change(name: str, old: object, new: object, want: int) -> None:
    assert _hint(nodeunschedulable.is_schedulable_after_node_change, pod("p"), old, new) == want


# -- NodeAffinity: node_affinity_test.go Test_isSchedulableAfterNodeChange -----------------------------


def test_node_affinity_node_change() -> None:
    target = pod("p", nodeSelector={"foo": "bar"})
    hint = NodeAffinity().is_schedulable_after_node_change
    assert _hint(hint, target, None, "not-a-node") == QUEUE  # backoff-wrong-new-object
    assert hint(target, None, node_obj(labels={"foo": "bar"})) == QUEUE  # queue-on-add
    assert hint(target, None, node_obj(labels={"foo": "fuga"})) == SKIP  # skip-unrelated-changes
    assert hint(target, node_obj(labels={"foo": "fuga"}), node_obj(labels={"foo": "bar"})) == QUEUE  # became matched
    assert hint(target, node_obj(labels={"foo": "bar"}), node_obj(labels={"foo": "bar", "x": "y"})) == SKIP


# -- NodePorts: node_ports_test.go Test_isSchedulableAfterPodDeleted ------------------------------------


def _with_port(name: str, port: int, node_name: str = "") -> PodInfo:
    spec: dict[str, Any] = {"containers": [{"name": "c", "ports": [{"containerPort": port, "hostPort": port}]}]}
    if node_name:
        spec["nodeName"] = node_name
    return pod(name, uid=name, **spec)


def test_node_ports_pod_deleted() -> None:
    target = _with_port("target", 8080)
    hint = nodeports.is_schedulable_after_pod_deleted
    assert hint(target, _with_port("same", 8080, "n1"), None) == QUEUE  # queue-on-deleted-pod-with-same-port
    assert hint(target, _with_port("other", 9090, "n1"), None) == SKIP  # skip-on-deleted-pod-with-different-port
    assert hint(target, _with_port("unscheduled", 8080), None) == SKIP  # skip-on-unscheduled-pod-deleted
    assert _hint(hint, target, "not-a-pod", None) == QUEUE  # backoff-wrong-old-object


# -- NodeResourcesFit: fit_test.go TestIsSchedulableAfterPodEvent / NodeChange ---------------------------


def _requesting(name: str, cpu: str, node_name: str = "") -> PodInfo:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return pod(name, uid=name, **spec)


def test_fit_pod_event() -> None:
    target = _requesting("target", "1")
    hint = fit.is_schedulable_after_pod_event
    assert hint(target, _requesting("gone", "1", "n1"), None) == QUEUE  # queue-on-deleted
    assert hint(target, _requesting("gone", "1"), None) == SKIP  # skip-queue-on-unscheduled-pod-deleted
    assert hint(target, _requesting("x", "2", "n1"), _requesting("x", "1", "n1")) == QUEUE  # queue-on-scale-down
    assert hint(target, _requesting("x", "2"), _requesting("x", "1")) == SKIP  # skip-queue-on-unscheduled-pod
    assert hint(target, target, _requesting("target", "500m")) == QUEUE  # queue-on-target-pod-scale-down


def test_fit_node_change() -> None:
    target = _requesting("target", "2")
    hint = fit.is_schedulable_after_node_change
    small = {"cpu": "1", "memory": "8Gi", "pods": "110"}
    big = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert hint(target, None, node_obj(allocatable=big)) == QUEUE  # queue-on-node-add-fits
    assert hint(target, None, node_obj(allocatable=small)) == SKIP  # skip-queue-on-node-add-insufficient
    assert hint(target, node_obj(allocatable=small), node_obj(allocatable=big)) == QUEUE  # queue-on-node-grown
    assert hint(target, node_obj(allocatable=big), node_obj(allocatable=big, labels={"a": "b"})) == SKIP
    assert hint(target, node_obj(allocatable=big), node_obj(allocatable={**big, "pods": "111"})) == QUEUE


# -- the queue: scheduling_queue_test.go ------------------------------------------------------------


def _queue(clock: Clock, registered: dict[str, tuple[ClusterEventWithHint, ...]]) -> SchedulingQueue:
    interest = [r.event for events in registered.values() for r in events]
    return SchedulingQueue(clock=clock, registered=lambda p: registered.get(p, ()), interest=interest)


def _park(q: SchedulingQueue, target: PodInfo, plugins: list[str]) -> None:
    q.sync([target])
    assert q.pop() is target
    q.failed(target.uid, unschedulable=True, plugins=plugins)
    assert q.get(target.uid).where == UNSCHEDULABLE  # type: ignore[union-attr]


def test_a_parked_pod_moves_only_when_its_rejectors_hint_says_queue() -> None:
    """``TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithQueueingHint``: a hint's ``Queue`` moves
    the pod (to backoffQ while backing off, else activeQ), ``Skip`` leaves it, a hint raising
    counts as ``Queue``, and only the hints of the plugins that rejected it are asked."""
    clock = Clock()
    tainted = node_obj(taints=[taint("user1")])
    untainted = node_obj()
    registered = {
        "TaintToleration": tainttoleration.TaintToleration().events_to_register(),
        "Broken": (ClusterEventWithHint(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL), _raise),),
    }
    q = _queue(clock, registered)
    target = pod("p", uid="p")
    _park(q, target, ["TaintToleration"])
    label = ObservedEvent(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL), untainted, node_obj(labels={"a": "b"}))
    assert q.move_on([label]) == 0  # a label change: TaintToleration did not register it
    still = ObservedEvent(ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT), tainted, node_obj(taints=[taint("x")]))
    assert q.move_on([still]) == 0  # the hint says Skip: still untolerated
    cleared = ObservedEvent(ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT), tainted, untainted)
    assert q.move_on([cleared]) == 1 and q.get("p").where == BACKOFF  # type: ignore[union-attr]
    assert q.pop() is target  # activeQ empty: popped from backoffQ at once (popBackoff)
    q.failed("p", unschedulable=True, plugins=["Broken"])
    assert q.move_on([label]) == 1  # its hint raised: Queue


def _raise(pod: object, old: object, new: object) -> Any:
    raise RuntimeError("broken hint")


def test_events_while_in_flight_are_replayed_at_failure() -> None:
    """``TestPriorityQueue_AddUnschedulableIfNotPresent`` with in-flight events
    (``determineSchedulingHintForInFlightPod``): an event the rejector's hint accepts sends the pod
    to backoffQ, one it skips to the pool; its own update while in flight counts too."""
    clock = Clock()
    q = _queue(clock, {"TaintToleration": tainttoleration.TaintToleration().events_to_register()})
    target = pod("p", uid="p")
    q.sync([target])
    q.pop()
    skipped = ObservedEvent(ClusterEvent(NODE, ActionType.ADD), None, node_obj(taints=[taint("user1")]))
    q.failed("p", unschedulable=True, plugins=["TaintToleration"], events=[skipped])
    assert q.get("p").where == UNSCHEDULABLE  # type: ignore[union-attr]
    q.move_on(None)  # the wildcard: everyone moves
    assert q.pop() is target
    tolerating = pod("p", uid="p", tolerations=[{"operator": "Exists"}])
    q.apply([("p", tolerating)])  # its own update while in flight: UpdatePodToleration
    q.failed("p", unschedulable=True, plugins=["TaintToleration"], events=[skipped])
    assert q.get("p").where == BACKOFF  # type: ignore[union-attr]


def test_a_parked_pods_own_update_is_judged_by_the_hints() -> None:
    """``PriorityQueue.Update`` with queueing hints: an unschedulable pod's update moves it only
    when a hint accepts one of ``PodSchedulingPropertiesChange``'s events."""
    clock = Clock()
    q = _queue(clock, {"TaintToleration": tainttoleration.TaintToleration().events_to_register()})
    _park(q, pod("p", uid="p"), ["TaintToleration"])
    q.apply([("p", pod("p", uid="p", annotations={"a": "b"}))])  # a generic Update: nobody registered it
    assert q.get("p").where == UNSCHEDULABLE  # type: ignore[union-attr]
    q.apply([("p", pod("p", uid="p", annotations={"a": "b"}, tolerations=[{"operator": "Exists"}]))])
    assert q.get("p").where in (BACKOFF, ACTIVE)  # type: ignore[union-attr]


def test_pending_plugins_queue_immediately_and_no_rejector_moves_on_anything() -> None:
    """``isPodWorthRequeuing``: a pending plugin's ``Queue`` skips backoff (activeQ at once); a pod
    no plugin rejected by name is worth requeuing on any event."""
    clock = Clock()
    registered = {"P": (ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE)),)}
    q = _queue(clock, registered)
    target = pod("p", uid="p")
    q.sync([target])
    q.pop()
    q.failed("p", unschedulable=True, pending=["P"], events=[ClusterEvent(ASSIGNED_POD, ActionType.DELETE)])
    assert q.get("p").where == ACTIVE  # type: ignore[union-attr]
    q.pop()
    q.failed("p", unschedulable=True, plugins=["P"])
    assert q.move_on([ClusterEvent(UNSCHEDULED_POD, ActionType.DELETE)]) == 1  # Pod matches UnschedulablePod


def test_the_flush_is_the_safety_net_and_errors_do_not_pop_early() -> None:
    """``flushUnschedulablePodsLeftover``: a pod no event moved leaves the pool after more than
    5 minutes; ``popBackoff`` takes the backoffQ of rejected pods, never the error backoffQ."""
    clock = Clock()
    q = _queue(clock, {"TaintToleration": tainttoleration.TaintToleration().events_to_register()})
    _park(q, pod("p", uid="p"), ["TaintToleration"])
    clock.now += 300
    assert q.pop() is None
    clock.now += 0.5
    assert q.pop() is not None
    q.failed("p", unschedulable=False)  # an error
    assert q.get("p").where == BACKOFF and q.pop() is None  # type: ignore[union-attr]

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
from app.plugins import interpodaffinity, nodeports, nodeunschedulable, podtopologyspread, tainttoleration
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


# -- InterPodAffinity and PodTopologySpread: their plugin_test.go tables (v1.36.3) ----------------
#
# Pods as ``st.MakePod()`` builds them (no namespace unless given): ``_mk`` takes the wrapper's
# calls as keywords; a row is (name, target pod, old object, new object, want).


def _mk(
    uid: str = "",
    *,
    node: str = "",
    nominated: str = "",
    namespace: str = "",
    labels: dict[str, str] | None = None,
    affinity: list[dict[str, Any]] | None = None,
    anti: list[dict[str, Any]] | None = None,
    spread: list[dict[str, Any]] | None = None,
    tolerations: list[dict[str, str]] | None = None,
) -> PodInfo:
    spec: dict[str, Any] = {"nodeName": node} if node else {}
    aff: dict[str, Any] = {}
    if affinity:
        aff["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": affinity}
    if anti:
        aff["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    if aff:
        spec["affinity"] = aff
    if spread:
        spec["topologySpreadConstraints"] = spread
    if tolerations:
        spec["tolerations"] = tolerations
    doc = {
        "metadata": {"name": "p", "uid": uid, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
        "status": {"nominatedNodeName": nominated} if nominated else {},
    }
    return PodInfo(msgspec.convert(doc, objects.Pod))


def _term_in(key: str, topology_key: str, values: list[str]) -> dict[str, Any]:
    """``PodAffinityIn`` / ``PodAntiAffinityIn``: a required term, ``key In values``."""
    expr = {"key": key, "operator": "In", "values": values}
    return {"labelSelector": {"matchExpressions": [expr]}, "topologyKey": topology_key}


def _term_exists(key: str, topology_key: str) -> dict[str, Any]:
    """``PodAffinityExists``: a required term, ``key Exists``."""
    return {"labelSelector": {"matchExpressions": [{"key": key, "operator": "Exists"}]}, "topologyKey": topology_key}


def _term_labels(topology_key: str, match_labels: dict[str, str]) -> dict[str, Any]:
    """``PodAntiAffinity(topologyKey, &LabelSelector{MatchLabels: ...})``."""
    return {"labelSelector": {"matchLabels": match_labels}, "topologyKey": topology_key}


_SCAN = ["securityscan", "value2"]
_AFF = {"affinity": [_term_in("service", "region", _SCAN)]}
_ANTI = {"anti": [_term_in("service", "region", _SCAN)]}
_SCAN_LABEL = {"service": "securityscan"}

# interpodaffinity/plugin_test.go Test_isSchedulableAfterPodChange
IPA_POD_ROWS = [
    (
        "add a pod which matches the pod affinity",
        _mk("p", **_AFF),
        None,
        _mk("other", node="fake-node", labels=_SCAN_LABEL),
        QUEUE,
    ),
    ("add an un-scheduled pod", _mk("p", **_AFF), None, _mk("other", labels=_SCAN_LABEL), SKIP),
    (
        "add a pod which doesn't match the pod affinity",
        _mk("p", **_AFF),
        None,
        _mk("other", node="fake-node", labels={"aaa": "a"}),
        SKIP,
    ),
    (
        "update a pod from non-match to match pod affinity",
        _mk("p", **_AFF),
        _mk("other", node="fake-node", labels={"aaa": "a"}),
        _mk("other", node="fake-node", labels=_SCAN_LABEL),
        QUEUE,
    ),
    (
        "the updating pod matches target pod's affinity both before and after label changes",
        _mk("p", **_AFF),
        _mk("other", node="fake-node", labels={"service": "value2"}),
        _mk("other", node="fake-node", labels=_SCAN_LABEL),
        SKIP,
    ),
    (
        "update an un-scheduled pod",
        _mk("p", **_AFF),
        _mk("other", labels={"aaa": "a"}),
        _mk("other", labels=_SCAN_LABEL),
        SKIP,
    ),
    (
        "update a pod from match to non-match the pod affinity",
        _mk("p", **_AFF),
        _mk("other", node="fake-node", labels=_SCAN_LABEL),
        _mk("other", node="fake-node", labels={"aaa": "a"}),
        SKIP,
    ),
    (
        "update a pod from match to non-match pod's affinity - multiple terms case",
        _mk("p", affinity=[_term_exists("aaa", "hostname"), _term_exists("bbb", "hostname")]),
        _mk("other", node="fake-node", labels={"aaa": "a"}),
        _mk("other", node="fake-node", labels=_SCAN_LABEL),
        SKIP,
    ),
    (
        "update a pod from non-match to match pod's affinity - multiple terms case",
        _mk("p", affinity=[_term_exists("aaa", "hostname"), _term_exists("bbb", "hostname")]),
        _mk("other", node="fake-node", labels={"aaa": "a"}),
        _mk("other", node="fake-node", labels={"aaa": "", "bbb": ""}),
        QUEUE,
    ),
    (
        "updated pod is the target pod",
        _mk("p", labels={"foo": "baz"}),
        _mk("p", labels={"foo": "bar"}),
        _mk("p", labels={"foo": "baz"}),
        QUEUE,
    ),
    (
        "modify pod label to change it from satisfying pod anti-affinity to not satisfying anti-affinity",
        _mk("p", **_ANTI),
        _mk("other", node="fake-node", labels=_SCAN_LABEL),
        _mk("other", node="fake-node", labels={"service": "aaaa"}),
        QUEUE,
    ),
    (
        "modify pod label to change it from not satisfying pod anti-affinity to satisfying anti-affinity",
        _mk("p", **_ANTI),
        _mk("other", node="fake-node", labels={"service": "bbb"}),
        _mk("other", node="fake-node", labels=_SCAN_LABEL),
        SKIP,
    ),
    (
        "delete a pod which doesn't match pod's anti-affinity",
        _mk("p", **_ANTI),
        _mk("other", node="fake-node", labels={"aaa": "a"}),
        None,
        SKIP,
    ),
    (
        "delete a pod which matches pod's anti-affinity",
        _mk("p", **_ANTI),
        _mk("other", node="fake-node", labels=_SCAN_LABEL),
        None,
        QUEUE,
    ),
    (
        "delete a pod with anti-affinity that matches pending pod",
        _mk(labels=_SCAN_LABEL),
        _mk(node="fake-node", **_ANTI),
        None,
        QUEUE,
    ),
    (
        "delete a pod with anti-affinity that doesn't match pending pod",
        _mk(labels={"service": "foo"}),
        _mk(node="fake-node", **_ANTI),
        None,
        SKIP,
    ),
    (
        (
            "delete a pod which doesn't match pending pod's anti-affinity "
            "and has anti-affinity that doesn't match pending pod"
        ),
        _mk(labels={"service": "foo"}, **_ANTI),
        _mk(node="fake-node", labels={"service": "foo"}, **_ANTI),
        None,
        SKIP,
    ),
    (
        "delete a nominated pod which doesn't match pod's anti-affinity",
        _mk(**_ANTI),
        _mk(nominated="fake-node", labels={"aaa": "a"}),
        None,
        SKIP,
    ),
    (
        "delete a nominated pod which matches pod's anti-affinity",
        _mk(**_ANTI),
        _mk(nominated="fake-node", labels=_SCAN_LABEL),
        None,
        QUEUE,
    ),
]

_ZONE_AFF = {"affinity": [_term_in("service", "zone", _SCAN)]}
_REGION_AFF = {"affinity": [_term_in("service", "region", _SCAN)]}
_ZONE_ANTI = {"anti": [_term_labels("zone", {"another": "label"})]}


def _node(**labels: str) -> objects.Node:
    return node_obj("node-a", labels=labels)


# interpodaffinity/plugin_test.go Test_isSchedulableAfterNodeChange
IPA_NODE_ROWS = [
    ("add a new node with matched pod affinity topologyKey", _mk(**_ZONE_AFF), None, _node(zone="zone1"), QUEUE),
    ("add a new node without matched topologyKey", _mk(**_REGION_AFF), None, _node(zone="zone1"), SKIP),
    ("update node label but not topologyKey", _mk(**_ZONE_AFF), _node(aaa="a"), _node(aaa="b"), SKIP),
    (
        "update node label that isn't related to the pod affinity",
        _mk(**_ZONE_AFF),
        _node(zone="zone1"),
        _node(zone="zone1", **{"unrelated-label": "unrelated"}),
        SKIP,
    ),
    (
        "update node with different affinity topologyKey value",
        _mk(**_ZONE_AFF),
        _node(zone="zone1"),
        _node(zone="zone2"),
        QUEUE,
    ),
    ("update node to have the affinity topology label", _mk(**_ZONE_AFF), _node(aaa="a"), _node(zone="zone1"), QUEUE),
    ("add a new node with matched pod anti-affinity topologyKey", _mk(**_ZONE_ANTI), None, _node(zone="zone1"), QUEUE),
    ("add a new node without matched pod anti-affinity topologyKey", _mk(**_ZONE_ANTI), None, _node(), QUEUE),
    (
        "update node label that isn't related to the pod anti-affinity",
        _mk(**_ZONE_ANTI),
        _node(zone="zone1"),
        _node(zone="zone1", **{"unrelated-label": "unrelated"}),
        SKIP,
    ),
    (
        "update node with different anti-affinity topologyKey value",
        _mk(**_ZONE_ANTI),
        _node(zone="zone1"),
        _node(zone="zone2"),
        QUEUE,
    ),
    (
        "update node to have the anti-affinity topology label",
        _mk(**_ZONE_ANTI),
        _node(aaa="a"),
        _node(zone="zone1"),
        SKIP,
    ),
    (
        "update node label not to have anti-affinity topology label",
        _mk(**_ZONE_ANTI),
        _node(zone="zone1"),
        _node(aaa="a"),
        QUEUE,
    ),
]


@pytest.mark.parametrize(("name", "target", "old", "new", "want"), IPA_POD_ROWS, ids=[r[0] for r in IPA_POD_ROWS])
def test_inter_pod_affinity_pod_change(name: str, target: PodInfo, old: object, new: object, want: int) -> None:
    assert interpodaffinity.is_schedulable_after_pod_change(target, old, new) == want


@pytest.mark.parametrize(("name", "target", "old", "new", "want"), IPA_NODE_ROWS, ids=[r[0] for r in IPA_NODE_ROWS])
def test_inter_pod_affinity_node_change(name: str, target: PodInfo, old: object, new: object, want: int) -> None:
    assert interpodaffinity.is_schedulable_after_node_change(target, old, new) == want


def test_inter_pod_affinity_registers_its_hints() -> None:
    """``EventsToRegister`` with queueing hints on: no UpdateNodeTaint; each event has its hint;
    a wrong object is an error (``Queue``)."""
    plugin = interpodaffinity.InterPodAffinity(interpodaffinity.InterPodAffinityArgs(), None)  # type: ignore[arg-type]
    events = plugin.events_to_register()
    assert [(e.event, e.hint) for e in events] == [
        (
            ClusterEvent(POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
            interpodaffinity.is_schedulable_after_pod_change,
        ),
        (
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
            interpodaffinity.is_schedulable_after_node_change,
        ),
    ]
    target = _mk("p", **_ZONE_AFF)
    assert _hint(interpodaffinity.is_schedulable_after_pod_change, target, None, "not-a-pod") == QUEUE
    assert _hint(interpodaffinity.is_schedulable_after_node_change, target, "not-a-node", _node()) == QUEUE
    bad = _mk(
        "p",
        affinity=[{"labelSelector": {"matchExpressions": [{"key": "k", "operator": "Bad"}]}, "topologyKey": "zone"}],
    )
    with pytest.raises(ValueError):  # GetAffinityTerms' error: Queue
        interpodaffinity.is_schedulable_after_node_change(bad, _node(aaa="a"), _node(aaa="b"))


def _spread(topology_key: str, selector_key: str, taints_policy: str | None = None) -> dict[str, Any]:
    """``SpreadConstraint(1, topologyKey, DoNotSchedule, Exists(selector_key), nil, nil, taints_policy, nil)``."""
    c: dict[str, Any] = {
        "maxSkew": 1,
        "topologyKey": topology_key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchExpressions": [{"key": selector_key, "operator": "Exists"}]},
    }
    if taints_policy is not None:
        c["nodeTaintsPolicy"] = taints_policy
    return c


_ZONE_FOO = [_spread("zone", "foo")]
_ZONE_NODE_FOO = [_spread("zone", "foo"), _spread("node", "foo")]
_ZONE_FOO_NODE_BAR = [_spread("zone", "foo"), _spread("node", "bar")]


def _tainted(key: str, **labels: str) -> objects.Node:
    return node_obj("node-a", labels=labels, taints=[{"key": key, "value": "bbb", "effect": "NoSchedule"}])


# podtopologyspread/plugin_test.go Test_isSchedulableAfterNodeChange
PTS_NODE_ROWS = [
    ("node updates label which matches topologyKey", _ZONE_FOO, _node(zone="zone1"), _node(zone="zone2"), QUEUE),
    (
        "node that doesn't match topologySpreadConstraints updates non-related label",
        _ZONE_FOO,
        _node(foo="bar1"),
        _node(foo="bar2"),
        SKIP,
    ),
    (
        "node that match topologySpreadConstraints adds non-related label",
        _ZONE_NODE_FOO,
        _node(zone="zone1", node="node1", foo="bar"),
        _node(zone="zone1", node="node1"),
        SKIP,
    ),
    ("create node with non-related labels", _ZONE_FOO, None, _node(foo="bar"), SKIP),
    ("create node with related labels", _ZONE_FOO, None, _node(zone="zone1"), QUEUE),
    ("delete node with non-related labels", _ZONE_FOO, _node(foo="bar"), None, SKIP),
    ("delete node with related labels", _ZONE_FOO, _node(zone="zone1"), None, QUEUE),
    (
        "add node with related labels that only match one of topologySpreadConstraints",
        _ZONE_NODE_FOO,
        None,
        _node(zone="zone1"),
        SKIP,
    ),
    (
        "add node with related labels that match all topologySpreadConstraints",
        _ZONE_NODE_FOO,
        None,
        _node(zone="zone1", node="node1"),
        QUEUE,
    ),
    (
        "update node with related labels that only match one of topologySpreadConstraints",
        _ZONE_NODE_FOO,
        _node(zone="zone1"),
        _node(zone="zone1"),
        SKIP,
    ),
    (
        "update node with related labels that match all topologySpreadConstraints",
        _ZONE_NODE_FOO,
        _node(zone="zone1", node="node1"),
        _node(zone="zone1", node="node2"),
        QUEUE,
    ),
    (
        "update node with different taints that match all topologySpreadConstraints",
        _ZONE_NODE_FOO,
        _tainted("aaa", zone="zone1", node="node1"),
        _tainted("ccc", zone="zone1", node="node1"),
        QUEUE,
    ),
    (
        "update node with different taints that only match one of topologySpreadConstraints",
        _ZONE_NODE_FOO,
        _tainted("aaa", node="node1"),
        _tainted("ccc", node="node1"),
        SKIP,
    ),
]

_FOO = {"foo": ""}
_UNSCHEDULABLE_TOLERATION = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
_HONOR = [_spread("zone", "foo", "Honor"), _spread("node", "bar")]
_IGNORE = [_spread("zone", "foo", "Ignore"), _spread("node", "bar")]

# podtopologyspread/plugin_test.go Test_isSchedulableAfterPodChange: (name, constraints, old, new, want);
# the target pod is UID "p" with label foo and the row's constraints
PTS_POD_ROWS = [
    (
        "add pod with labels match topologySpreadConstraints selector",
        _ZONE_FOO,
        None,
        _mk("p2", node="fake-node", labels=_FOO),
        QUEUE,
    ),
    ("add un-scheduled pod", _ZONE_FOO, None, _mk("p2", labels=_FOO), SKIP),
    ("update un-scheduled pod", _ZONE_FOO, _mk("p2", labels={"bar": ""}), _mk("p2", labels=_FOO), SKIP),
    ("delete un-scheduled pod", _ZONE_FOO, _mk("p2", labels=_FOO), None, SKIP),
    (
        "add pod with different namespace",
        _ZONE_FOO,
        None,
        _mk("p2", node="fake-node", namespace="fake-namespace", labels=_FOO),
        SKIP,
    ),
    (
        "add pod with labels don't match topologySpreadConstraints selector",
        _ZONE_FOO,
        None,
        _mk("p2", node="fake-node", labels={"bar": ""}),
        SKIP,
    ),
    (
        "delete pod with labels that match topologySpreadConstraints selector",
        _ZONE_FOO,
        _mk("p2", node="fake-node", labels=_FOO),
        None,
        QUEUE,
    ),
    (
        "delete nominated pod with labels that don't match topologySpreadConstraints selector",
        _ZONE_FOO,
        _mk("p2", nominated="fake-node", labels={"bar": ""}),
        None,
        SKIP,
    ),
    (
        "delete nominated pod with labels that match topologySpreadConstraints selector",
        _ZONE_FOO,
        _mk("p2", nominated="fake-node", labels=_FOO),
        None,
        QUEUE,
    ),
    (
        "delete pod with labels that don't match topologySpreadConstraints selector",
        _ZONE_FOO,
        _mk("p2", node="fake-node", labels={"bar": ""}),
        None,
        SKIP,
    ),
    (
        "update pod's non-related label",
        _ZONE_FOO,
        _mk("p2", node="fake-node", labels={"foo": "", "bar": "bar1"}),
        _mk("p2", node="fake-node", labels={"foo": "", "bar": "bar2"}),
        SKIP,
    ),
    (
        "add pod's label that matches topologySpreadConstraints selector",
        _ZONE_FOO,
        _mk("p2", node="fake-node"),
        _mk("p2", node="fake-node", labels=_FOO),
        QUEUE,
    ),
    (
        "delete pod label that matches topologySpreadConstraints selector",
        _ZONE_FOO,
        _mk("p2", node="fake-node", labels=_FOO),
        _mk("p2", node="fake-node"),
        QUEUE,
    ),
    (
        "change pod's label that matches topologySpreadConstraints selector",
        _ZONE_FOO,
        _mk("p2", node="fake-node", labels={"foo": "foo1"}),
        _mk("p2", node="fake-node", labels={"foo": "foo2"}),
        SKIP,
    ),
    (
        "change pod's label that doesn't match topologySpreadConstraints selector",
        _ZONE_FOO,
        _mk("p2", node="fake-node", labels={"foo": "", "bar": "bar1"}),
        _mk("p2", node="fake-node", labels={"foo": "", "bar": "bar2"}),
        SKIP,
    ),
    (
        "add pod's label that matches topologySpreadConstraints selector with multi topologySpreadConstraints",
        _ZONE_FOO_NODE_BAR,
        _mk("p2", node="fake-node", labels=_FOO),
        _mk("p2", node="fake-node", labels={"foo": "", "bar": "bar2"}),
        QUEUE,
    ),
    (
        "change pod's label that doesn't match topologySpreadConstraints selector with multi topologySpreadConstraints",
        _ZONE_FOO_NODE_BAR,
        _mk("p2", node="fake-node", labels=_FOO),
        _mk("p2", node="fake-node", labels={"foo": "", "baz": ""}),
        SKIP,
    ),
    (
        "change pod's label that match topologySpreadConstraints selector with multi topologySpreadConstraints",
        _ZONE_FOO_NODE_BAR,
        _mk("p2", node="fake-node", labels={"foo": "", "bar": ""}),
        _mk("p2", node="fake-node", labels={"foo": "", "bar": "bar2"}),
        SKIP,
    ),
    (
        "the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor and has got a new toleration",
        _HONOR,
        _mk("p", labels=_FOO),
        _mk("p", labels=_FOO, tolerations=_UNSCHEDULABLE_TOLERATION),
        QUEUE,
    ),
    (
        (
            "the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor "
            "and has got a new toleration"
        ),
        _IGNORE,
        _mk("p", labels=_FOO),
        _mk("p", labels=_FOO, tolerations=_UNSCHEDULABLE_TOLERATION),
        SKIP,
    ),
    (
        (
            "the unschedulable Pod has topologySpreadConstraint "
            "and has got a new label matching the selector of the constraint"
        ),
        _IGNORE,
        _mk("p"),
        _mk("p", labels=_FOO),
        QUEUE,
    ),
    (
        "the unschedulable Pod has topologySpreadConstraint and has got a new unrelated label",
        _IGNORE,
        _mk("p"),
        _mk("p", labels={"unrelated": ""}),
        SKIP,
    ),
]


def _spread_plugin() -> podtopologyspread.PodTopologySpread:
    """As upstream's tables set it up: ``defaultingType: List`` without default constraints."""
    return podtopologyspread.PodTopologySpread(podtopologyspread.PodTopologySpreadArgs(defaulting_type="List"))


@pytest.mark.parametrize(
    ("name", "constraints", "old", "new", "want"), PTS_NODE_ROWS, ids=[r[0] for r in PTS_NODE_ROWS]
)
def test_pod_topology_spread_node_change(
    name: str, constraints: list[Any], old: object, new: object, want: int
) -> None:
    target = _mk("p", spread=constraints)
    assert _spread_plugin().is_schedulable_after_node_change(target, old, new) == want


@pytest.mark.parametrize(("name", "constraints", "old", "new", "want"), PTS_POD_ROWS, ids=[r[0] for r in PTS_POD_ROWS])
def test_pod_topology_spread_pod_change(name: str, constraints: list[Any], old: object, new: object, want: int) -> None:
    target = _mk("p", labels=_FOO, spread=constraints)
    assert _spread_plugin().is_schedulable_after_pod_change(target, old, new) == want


def test_pod_topology_spread_registers_its_hints() -> None:
    """``EventsToRegister`` with queueing hints on (UpdatePodToleration included), each event with
    its hint; the helpers as plugin.go's; a wrong object is an error (``Queue``)."""
    plugin = _spread_plugin()
    events = plugin.events_to_register()
    pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.UPDATE_POD_TOLERATIONS | ActionType.DELETE
    node_actions = ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
    assert [e.event for e in events] == [ClusterEvent(POD, pod_actions), ClusterEvent(NODE, node_actions)]
    assert [e.hint for e in events] == [plugin.is_schedulable_after_pod_change, plugin.is_schedulable_after_node_change]
    target = _mk("p", labels=_FOO, spread=_ZONE_FOO)
    assert _hint(plugin.is_schedulable_after_pod_change, target, "not-a-pod", None) == QUEUE
    assert _hint(plugin.is_schedulable_after_node_change, target, None, "not-a-node") == QUEUE
    involved = podtopologyspread.involved_in_topology_spreading
    assert involved(_mk("p"), target)  # the pod itself, even unscheduled
    assert not involved(_mk("x", namespace="other", node="n"), target)
    assert involved(_mk("x", nominated="n"), target)
    honor = podtopologyspread.has_constraint_with_node_taints_policy_honor
    assert honor(plugin.constraints(_mk("p", spread=_HONOR), "DoNotSchedule"))
    assert not honor(plugin.constraints(_mk("p", spread=_IGNORE), "DoNotSchedule"))


def test_inter_pod_affinity_hint_matches_namespace_selectors_without_namespace_labels() -> None:
    """``podMatchesAllAffinityTerms`` passes no namespace labels and the hint does not merge the
    ``namespaceSelector`` (filtering.go, plugin.go v1.36.3): an added pod in a namespace the
    selector would select is ``Skip`` (the pod waits for the flush); ``{}`` selects every
    namespace, and a ``DoesNotExist`` selector matches the absent labels."""

    def target(ns_selector: dict[str, Any]) -> PodInfo:
        term = {"labelSelector": {"matchLabels": {"app": "db"}}, "namespaceSelector": ns_selector, "topologyKey": "h"}
        return _mk("p", namespace="apps", affinity=[term])

    added = _mk("db", node="n1", namespace="archive", labels={"app": "db"})
    hint = interpodaffinity.is_schedulable_after_pod_change
    assert hint(target({"matchLabels": {"tier": "archive"}}), None, added) == SKIP
    assert hint(target({}), None, added) == QUEUE
    assert hint(target({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}), None, added) == QUEUE


def test_a_nominated_pods_deletion_or_new_nomination_moves_the_pods_of_at_most_its_priority() -> None:
    """v1.36.3 eventhandlers.go: a pending pod nominated to a node that is deleted, or whose
    nomination changes, is ``AssignedPodDelete`` with ``getLEPriorityPreCheck``: the parked pods of
    at most its priority (which counted it on that node) are asked; higher ones are not."""
    from app.cluster.cache import Cache

    cache = Cache()
    clock = Clock()
    deleted = ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), fit.is_schedulable_after_pod_event)
    q = _queue(clock, {"NodeResourcesFit": (deleted,)})
    low, high = pod("low", uid="low", priority=5), pod("high", uid="high", priority=50)
    q.sync([low, high])
    for _ in range(2):
        popped = q.pop()
        assert popped is not None
        q.failed(popped.uid, unschedulable=True, plugins=["NodeResourcesFit"])

    def nominated(name: str, node: str) -> PodInfo:
        doc = {
            "metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": {"priority": 10},
            "status": {"nominatedNodeName": node} if node else {},
        }
        return PodInfo(msgspec.convert(doc, objects.Pod))

    seq = cache.events.event_seq
    cache.upsert_pod(nominated("preemptor", "n1"))  # nominated: no event
    cache.upsert_pod(nominated("preemptor", "n2"))  # the nomination moved off n1
    seq, events = cache.events.events_since(seq)
    assert events is not None and [(e.event.action, e.max_priority) for e in events] == [(ActionType.DELETE, 10)]
    assert q.move_on(events) == 1
    assert q.get("low").where != UNSCHEDULABLE and q.get("high").where == UNSCHEDULABLE  # type: ignore[union-attr]
    cache.upsert_pod(nominated("other", ""))
    cache.delete_pod(nominated("other", ""))  # never nominated: no event
    cache.delete_pod(nominated("preemptor", "n2"))  # a nominated pod deleted
    _, events = cache.events.events_since(seq)
    assert events is not None and [(e.event.action, e.max_priority, e.old.name) for e in events] == [
        (ActionType.DELETE, 10, "preemptor")
    ]

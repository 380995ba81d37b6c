"""ClusterState without a server: aggregates, pools, the assumed-pod ledger and its expiry."""

from __future__ import annotations

import threading

import msgspec

from app.cluster.reflector import iter_lines
from app.cluster.state import EVENT_LOG_SIZE, ClusterState, node_change
from app.framework import SUCCESS, PoolSpec, Status, objects
from app.framework.events import NODE, POD, ActionType, ClusterEvent
from app.framework.types import NodeInfo, PodInfo
from tests.support.apiserver import node, pod


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _node(name: str, **kw: str) -> objects.Node:
    return msgspec.convert(node(name, **kw), objects.Node)


def _pod(state: ClusterState, name: str, **kw: object) -> PodInfo:
    return state.record(msgspec.convert(pod(name, **kw), objects.Pod))  # type: ignore[arg-type]


def _synced(clock: Clock | None = None, ttl: float = 30.0) -> ClusterState:
    state = ClusterState(assumed_ttl=ttl, clock=clock or Clock())
    state.replace_nodes([_node("n1", pods="3"), _node("n2")])
    state.replace_pods([])
    state.mark_synced("nodes")
    state.mark_synced("pods")
    return state


def test_records_are_slim_and_keep_only_asked_annotations() -> None:
    state = ClusterState(keep_annotations=["keep.example.com/x"])
    doc = pod("p", node_name="n1", cpu="1500m", memory="1Gi", priority=7, priorityClassName="high")
    doc["metadata"]["annotations"] = {"keep.example.com/x": "1", "kubectl.kubernetes.io/last-applied": "{...}"}
    doc["metadata"]["labels"] = {"app": "web"}
    doc["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "web-1", "uid": "rs", "controller": True}]
    doc["spec"]["initContainers"] = [{"name": "init", "resources": {"requests": {"cpu": "2"}}}]
    doc["spec"]["overhead"] = {"cpu": "100m"}
    record = state.record(msgspec.convert(doc, objects.Pod))
    assert record.pod is None  # the decoded object is not kept
    assert dict(record.annotations) == {"keep.example.com/x": "1"}
    assert (record.namespace, record.name, record.node_name, record.priority) == ("default", "p", "n1", 7)
    assert record.priority_class_name == "high" and record.labels == {"app": "web"}
    assert record.owner_references[0].kind == "ReplicaSet"
    # max(sum of containers 1500m, largest init container 2000m) + overhead 100m
    assert record.requests == {"cpu": 2100, "memory": 1024**3}
    assert record.non_zero_requests == (2100, 1024**3)


def test_non_zero_requests_default_per_container() -> None:
    state = ClusterState()
    doc = pod("p", cpu=None, memory=None)
    doc["spec"]["containers"].append({"name": "side", "resources": {"requests": {"cpu": "50m"}}})
    record = state.record(msgspec.convert(doc, objects.Pod))
    assert record.requests == {"cpu": 50}
    # container 1: both defaults; container 2: its 50m plus the memory default
    assert record.non_zero_requests == (150, 2 * 200 * 1024**2)


def test_assume_confirm_and_delete() -> None:
    state = _synced()
    pending = _pod(state, "p", cpu="1")
    state.upsert_pod(pending)
    assert state.assume(PodInfo.placeholder("default", "p", pending.uid), "n1").ok
    info = state.snapshot().get("n1")
    assert info is not None and [p.name for p in info.pods] == ["p"] and info.requested["cpu"] == 1000
    assert state.assumed() == {pending.uid: "n1"}
    # the watch shows the pod bound: the assumption is confirmed, the pod still counts once
    state.upsert_pod(_pod(state, "p", cpu="1", node_name="n1"))
    assert state.assumed() == {} and state.stats()["assumed_confirmed"] == 1
    info = state.snapshot().get("n1")
    assert info is not None and info.usage.pod_count == 1 and info.requested["cpu"] == 1000
    state.delete_pod(pending)
    info = state.snapshot().get("n1")
    assert info is not None and info.usage.pod_count == 0 and info.requested == {}


def test_assumption_expires_after_ttl() -> None:
    clock = Clock()
    state = _synced(clock, ttl=30)
    state.upsert_pod(_pod(state, "p"))
    assert state.assume(PodInfo.placeholder("default", "p", "uid-default-p"), "n1").ok
    clock.now += 29
    assert state.snapshot().usage("n1") is not None and state.assumed()
    clock.now += 2
    info = state.snapshot().get("n1")
    assert info is not None and info.usage.pod_count == 0
    assert state.assumed() == {} and state.stats()["assumed_expired"] == 1


def test_assume_before_the_watch_shows_the_pod() -> None:
    state = _synced()
    assert state.assume(PodInfo.placeholder("ns", "late", "uid-late"), "n2").ok
    info = state.snapshot().get("n2")
    assert info is not None and info.usage.pod_count == 1 and info.requested == {}
    # the pending pod arrives: its requests now count under the same assumption
    state.upsert_pod(_pod(state, "late", namespace="ns", uid="uid-late", cpu="2"))
    info = state.snapshot().get("n2")
    assert info is not None and info.usage.pod_count == 1 and info.requested["cpu"] == 2000


def test_assume_is_refused_elsewhere_and_idempotent_here() -> None:
    state = _synced()
    state.upsert_pod(_pod(state, "p"))
    p = PodInfo.placeholder("default", "p", "uid-default-p")
    assert state.assume(p, "n1").ok
    # while its binding cycle holds it, no other cycle may assume it, not even on the same node
    again = state.assume(p, "n1")
    assert not again.ok and "being bound to node 'n1'" in again.reason
    state.finish_binding(p.uid)  # the cycle ended, the Binding's outcome unknown: a new cycle renews it
    assert state.assume(p, "n1").ok
    info = state.snapshot().get("n1")
    assert info is not None and info.usage.pod_count == 1  # counted once
    refused = state.assume(p, "n2")
    assert not refused.ok and "being bound to node 'n1'" in refused.reason
    state.upsert_pod(_pod(state, "b", node_name="n2"))
    already = state.assume(PodInfo.placeholder("default", "b", "uid-default-b"), "n2")
    assert already.ok and already.already_bound
    other = state.assume(PodInfo.placeholder("default", "b", "uid-default-b"), "n1")
    assert not other.ok and "already bound to node 'n2'" in other.reason
    state.forget("uid-default-p", "n1")
    info = state.snapshot().get("n1")
    assert info is not None and info.usage.pod_count == 0


def test_concurrent_reservations_never_overcommit() -> None:
    state = _synced()
    for i in range(25):
        state.upsert_pod(_pod(state, f"p{i}"))

    def room(info: NodeInfo) -> Status:
        return SUCCESS if info.usage.pod_count < info.allocatable["pods"] else Status.unschedulable("Too many pods")

    results: list[bool] = []
    barrier = threading.Barrier(25)

    def reserve(i: int) -> None:
        barrier.wait()
        results.append(state.assume(PodInfo.placeholder("default", f"p{i}", f"uid-default-p{i}"), "n1", room).ok)

    threads = [threading.Thread(target=reserve, args=(i,)) for i in range(25)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 3  # allocatable pods of n1
    info = state.snapshot().get("n1")
    assert info is not None and info.usage.pod_count == 3


def test_pools_are_counted_per_node() -> None:
    state = _synced()
    state.add_pool(PoolSpec("underlay-ip", lambda p: 1 if p.labels.get("net") == "underlay" else 0))
    state.upsert_pod(_pod(state, "a", node_name="n1"))
    doc = pod("b", node_name="n1")
    doc["metadata"]["labels"] = {"net": "underlay"}
    state.upsert_pod(state.record(msgspec.convert(doc, objects.Pod)))
    usage = state.snapshot().usage("n1")
    assert usage is not None and usage.pool_usage == {"underlay-ip": 1}
    state.delete_pod(state.record(msgspec.convert(doc, objects.Pod)))
    usage = state.snapshot().usage("n1")
    assert usage is not None and usage.pool_usage == {}


def test_relist_replaces_and_keeps_assumptions() -> None:
    state = _synced()
    state.upsert_pod(_pod(state, "old", node_name="n1"))
    state.upsert_pod(_pod(state, "pending"))
    assert state.assume(PodInfo.placeholder("default", "pending", "uid-default-pending"), "n2").ok
    state.replace_pods([_pod(state, "new", node_name="n1"), _pod(state, "pending")])
    snap = state.snapshot()
    n1, n2 = snap.get("n1"), snap.get("n2")
    assert n1 is not None and [p.name for p in n1.pods] == ["new"]
    assert n2 is not None and [p.name for p in n2.pods] == ["pending"]


def test_snapshot_is_shared_until_a_write_and_immutable() -> None:
    assert not ClusterState().snapshot().synced
    state = _synced()
    first = state.snapshot()
    assert state.snapshot() is first
    state.upsert_node(_node("n3"))
    second = state.snapshot()
    assert second is not first and first.get("n3") is None and second.get("n3") is not None


def test_node_memo_lasts_until_the_node_changes() -> None:
    state = _synced()
    calls: list[str] = []

    def compute(info: NodeInfo) -> int:
        calls.append(info.name)
        return info.allocatable["cpu"]

    info = state.snapshot().get("n1")
    assert info is not None and info.memo("k", compute) == 4000 and info.memo("k", compute) == 4000
    assert calls == ["n1"]
    state.upsert_node(_node("n1", cpu="8"))
    info = state.snapshot().get("n1")
    assert info is not None and info.memo("k", compute) == 8000
    assert calls == ["n1", "n1"]


def test_watch_lines_split_across_and_within_chunks() -> None:
    chunks = [b'{"a":1}\n{"b"', b':2}\n\n{"c":3}\n{"d"', b":4}"]
    assert list(iter_lines(iter(chunks))) == [b'{"a":1}', b'{"b":2}', b'{"c":3}', b'{"d":4}']


def test_cluster_events_follow_what_scheduling_reads() -> None:
    """nodeSchedulingPropertiesChange: a heartbeat-only update is no event; labels, taints,
    allocatable are; a pod assigned, relabelled or deleted is; events lost to the log's bound are
    reported as unknown (``None``)."""
    state = _synced()
    seq = state.event_seq
    state.upsert_node(_node("n1", pods="3"))  # the same node again (a status heartbeat)
    assert state.events_since(seq) == (seq, [])
    meta = objects.ObjectMeta(name="n1", labels={"zone": "z1"})
    labelled = msgspec.structs.replace(_node("n1", pods="3"), metadata=meta)
    state.upsert_node(labelled)
    state.upsert_node(_node("n9"))
    seq, events = state.events_since(seq)
    assert events == [ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL), ClusterEvent(NODE, ActionType.ADD)]
    assert node_change(_node("n1"), _node("n1", cpu="64")) == ActionType.UPDATE_NODE_ALLOCATABLE
    state.upsert_pod(_pod(state, "pending", cpu="1"))  # not assigned: no event for other pods
    bound = _pod(state, "pending", cpu="1", node_name="n1")
    state.upsert_pod(bound)
    state.upsert_pod(bound)  # the same again: nothing scheduling reads changed
    state.delete_pod(bound)
    assert state.events_since(seq)[1] == [ClusterEvent(POD, ActionType.ADD), ClusterEvent(POD, ActionType.DELETE)]
    last = state.event_seq
    for i in range(2 * EVENT_LOG_SIZE + 1):
        state.upsert_node(_node(f"x{i}"))
    assert state.events_since(last) == (state.event_seq, None)
    assert len(state.events_since(state.event_seq - 5)[1] or []) == 5

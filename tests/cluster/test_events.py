"""The cluster events and pod changes the scheduling queues follow, recorded by the cache: the
numbered events (queueing hints), a followed index's changes, and the capacity freed."""

from __future__ import annotations

import msgspec
import pytest

from app.cluster.events import EVENT_LOG_SIZE, node_events, pod_events
from app.framework import objects
from app.framework.events import ASSIGNED_POD, NODE, UNSCHEDULED_POD, ActionType, ClusterEvent
from app.framework.handle import PodIndex
from app.framework.types import PodInfo
from tests.cluster.conftest import Clock, node_object, pod_record, synced_cache
from tests.support.apiserver import pod

PENDING = "test/pending"


def _pending(p: PodInfo) -> str | None:
    return "s" if not p.node_name else None


def test_cluster_events_follow_what_scheduling_reads() -> None:
    """nodeSchedulingPropertiesChange: a heartbeat-only update is no event; labels, taints,
    allocatable are; a pod assigned, relabelled or deleted is; events lost to the log's bound are
    reported as unknown (``None``)."""
    cache = synced_cache()
    seq = cache.events.event_seq
    cache.upsert_node(node_object("n1", pods="3"))  # the same node again (a status heartbeat)
    assert cache.events.events_since(seq) == (seq, [])
    meta = objects.ObjectMeta(name="n1", labels={"zone": "z1"})
    labelled = msgspec.structs.replace(node_object("n1", pods="3"), metadata=meta)
    cache.upsert_node(labelled)
    cache.upsert_node(node_object("n9"))
    seq, events = cache.events.events_since(seq)
    assert events is not None
    assert [e.event for e in events] == [
        ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL),
        ClusterEvent(NODE, ActionType.ADD),
    ]
    # each event carries the cache's own old and new objects (v1.36.3 updateNodeInCache)
    assert events[0].new is labelled and events[0].old is not None and events[1].old is None
    assert node_events(node_object("n1"), node_object("n1", cpu="64")) == [
        ClusterEvent(NODE, ActionType.UPDATE_NODE_ALLOCATABLE)
    ]
    cache.upsert_pod(pod_record(cache, "pending", cpu="1"))  # not assigned: no event for other pods
    bound = pod_record(cache, "pending", cpu="1", node_name="n1")
    cache.upsert_pod(bound)
    cache.upsert_pod(bound)  # the same again: nothing scheduling reads changed
    doc = pod("pending", cpu="1", node_name="n1")
    doc["metadata"]["labels"] = {"app": "x"}
    relabelled = cache.record(msgspec.convert(doc, objects.Pod))
    cache.upsert_pod(relabelled)
    cache.delete_pod(relabelled)
    seen = cache.events.events_since(seq)[1] or []
    assert [e.event for e in seen] == [
        ClusterEvent(ASSIGNED_POD, ActionType.ADD),
        ClusterEvent(ASSIGNED_POD, ActionType.UPDATE_POD_LABEL),
        ClusterEvent(ASSIGNED_POD, ActionType.DELETE),
    ]
    assert (seen[0].old, seen[0].new) == (None, bound) and (seen[1].old, seen[1].new) == (bound, relabelled)
    assert seen[2].old is relabelled and seen[2].new is None
    # PodSchedulingPropertiesChange: an unscheduled pod's update with no property changed is Update
    pending = pod_record(cache, "pending", cpu="1")
    assert pod_events(pending, pod_record(cache, "pending", cpu="1")) == [
        ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE)
    ]
    assert pod_events(pending, pod_record(cache, "pending", cpu="500m")) == [
        ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_SCALE_DOWN)
    ]
    last = cache.events.event_seq
    for i in range(2 * EVENT_LOG_SIZE + 1):
        cache.upsert_node(node_object(f"x{i}"))
    assert cache.events.events_since(last) == (cache.events.event_seq, None)
    assert len(cache.events.events_since(cache.events.event_seq - 5)[1] or []) == 5


def test_a_followed_index_reports_its_changes_and_leaves_out_assumed_pods() -> None:
    """addPodToSchedulingQueue/updatePodInSchedulingQueue/deletePodFromSchedulingQueue as changes:
    the members when followed, then what changed, in order; an assumed pod is left out until its
    assumption ends (forgotten or expired: a change again; confirmed: it leaves)."""
    clock = Clock()
    cache = synced_cache(clock)
    cache.add_index(PodIndex(PENDING, _pending))
    a = pod_record(cache, "a")
    cache.upsert_pod(a)
    events = cache.events
    events.follow_index(PENDING)
    assert events.index_changes(PENDING, "s") == [(a.uid, a)]  # the members are the first changes
    assert events.index_changes(PENDING, "s") == []
    b, c = pod_record(cache, "b"), pod_record(cache, "c")
    cache.upsert_pod(b)
    cache.upsert_pod(c)
    assert cache.assume_pod(b, "n1").ok
    assert events.index_changes(PENDING, "s") == [(c.uid, c)]  # b is assumed
    cache.forget_pod(b.uid, "n1")
    assert events.index_changes(PENDING, "s") == [(b.uid, b)]
    assert cache.assume_pod(c, "n2").ok
    clock.now += 31  # c's assumption expires: it waits again
    assert events.index_changes(PENDING, "s") == [(c.uid, c)]
    assert cache.assume_pod(a, "n1").ok
    cache.upsert_pod(pod_record(cache, "a", node_name="n1"))  # confirmed by the watch: it leaves
    cache.delete_pod(c)
    assert events.index_changes(PENDING, "s") == [(a.uid, None), (c.uid, None)]
    d, e = pod_record(cache, "d"), pod_record(cache, "e")
    cache.upsert_pod(d)
    assert events.index_changes(PENDING, "s") == [(d.uid, d)]
    cache.replace_pods([b, e])  # a relist: every member before and after is a change
    assert events.index_changes(PENDING, "s") == [(b.uid, b), (d.uid, None), (e.uid, e)]
    assert events.index_changes(PENDING, "other") == []


def test_following_an_unknown_index_is_a_key_error() -> None:
    cache = synced_cache()
    with pytest.raises(KeyError):
        cache.events.follow_index(PENDING)
    assert cache.events.following == frozenset()
    with pytest.raises(KeyError):
        cache.events.index_changes(PENDING, "s")


def test_freed_capacity_is_counted_and_a_pods_own_reservation_left_out() -> None:
    """What makes the requeuer move kube-scheduler's parked pods: a counted pod deleted, a node
    added or changed, a reservation forgotten; a status heartbeat or a storage event is not."""
    cache = synced_cache()
    events = cache.events
    freed = events.freed_generation
    cache.upsert_node(node_object("n1", pods="3"))  # a heartbeat
    events.record_event(NODE, ActionType.ADD)  # as a storage store records its kind's events
    assert events.freed_generation == freed
    cache.upsert_node(node_object("n3"))
    assert events.freed_generation == freed + 1
    p = pod_record(cache, "p")
    cache.upsert_pod(p)
    seq = events.event_seq
    assert cache.assume_pod(p, "n1").ok
    cache.forget_pod(p.uid, "n1")
    assert events.freed_generation == freed + 2
    assert events.events_since(seq, origin=p.uid)[1] == []
    forgotten = events.events_since(seq)[1] or []
    assert [e.event for e in forgotten] == [ClusterEvent(ASSIGNED_POD, ActionType.DELETE)]
    assert forgotten[0].old.uid == p.uid and forgotten[0].old.node_name == "n1"  # the assumed copy

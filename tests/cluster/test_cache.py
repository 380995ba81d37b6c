"""The cache without a server: aggregates, pools, the assumed pods and their expiry, snapshots."""

from __future__ import annotations

import threading

import msgspec

from app.cluster.cache import Cache
from app.cluster.reflector import iter_lines
from app.framework import SUCCESS, PoolSpec, Status, objects
from app.framework.types import NodeInfo, PodInfo
from tests.cluster.conftest import Clock, node_object, pod_record, synced_cache
from tests.support.apiserver import pod


def test_records_are_slim_and_keep_only_asked_annotations() -> None:
    cache = Cache(keep_annotations=["keep.example.com/x"])
    doc = pod("p", node_name="n1", cpu="1500m", memory="1Gi", priority=7, priorityClassName="high")
    doc["metadata"]["annotations"] = {"keep.example.com/x": "1", "kubectl.kubernetes.io/last-applied": "{...}"}
    doc["metadata"]["labels"] = {"app": "web"}
    doc["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "web-1", "uid": "rs", "controller": True}]
    doc["spec"]["initContainers"] = [{"name": "init", "resources": {"requests": {"cpu": "2"}}}]
    doc["spec"]["overhead"] = {"cpu": "100m"}
    record = cache.record(msgspec.convert(doc, objects.Pod))
    assert record.pod is None  # the decoded object is not kept
    assert dict(record.annotations) == {"keep.example.com/x": "1"}
    assert (record.namespace, record.name, record.node_name, record.priority) == ("default", "p", "n1", 7)
    assert record.priority_class_name == "high" and record.labels == {"app": "web"}
    assert record.owner_references[0].kind == "ReplicaSet"
    # max(sum of containers 1500m, largest init container 2000m) + overhead 100m
    assert record.requests == {"cpu": 2100, "memory": 1024**3}
    assert record.non_zero_requests == (2100, 1024**3)


def test_records_of_one_cache_share_equal_tolerations_affinity_and_spread() -> None:
    """A Deployment's pods carry equal tolerations, affinity and spread constraints: the cache
    keeps one copy of each (its Interner); another cache keeps its own."""
    tolerations = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    affinity = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]

    def web(name: str) -> objects.Pod:
        extra = {"tolerations": tolerations, "affinity": affinity, "topologySpreadConstraints": spread}
        doc = pod(name)
        doc["spec"].update(extra)
        return msgspec.convert(doc, objects.Pod)

    cache, other = Cache(), Cache()
    a, b, c = cache.record(web("a")), cache.record(web("b")), other.record(web("c"))
    assert a.tolerations is b.tolerations and a.affinity is b.affinity
    assert a.topology_spread_constraints is b.topology_spread_constraints
    assert a.tolerations == c.tolerations and a.tolerations is not c.tolerations


def test_non_zero_requests_default_per_container() -> None:
    cache = Cache()
    doc = pod("p", cpu=None, memory=None)
    doc["spec"]["containers"].append({"name": "side", "resources": {"requests": {"cpu": "50m"}}})
    record = cache.record(msgspec.convert(doc, objects.Pod))
    assert record.requests == {"cpu": 50}
    # container 1: both defaults; container 2: its 50m plus the memory default
    assert record.non_zero_requests == (150, 2 * 200 * 1024**2)


def test_assume_confirm_and_delete() -> None:
    cache = synced_cache()
    pending = pod_record(cache, "p", cpu="1")
    cache.upsert_pod(pending)
    assert cache.assume_pod(PodInfo.placeholder("default", "p", pending.uid), "n1").ok
    info = cache.snapshot().get("n1")
    assert info is not None and [p.name for p in info.pods] == ["p"] and info.requested["cpu"] == 1000
    assert cache.assumed() == {pending.uid: "n1"}
    # the watch shows the pod bound: the assumption is confirmed, the pod still counts once
    cache.upsert_pod(pod_record(cache, "p", cpu="1", node_name="n1"))
    assert cache.assumed() == {} and cache.stats()["assumed_confirmed"] == 1
    info = cache.snapshot().get("n1")
    assert info is not None and info.usage.pod_count == 1 and info.requested["cpu"] == 1000
    cache.delete_pod(pending)
    info = cache.snapshot().get("n1")
    assert info is not None and info.usage.pod_count == 0 and info.requested == {}


def test_assumption_expires_after_ttl() -> None:
    clock = Clock()
    cache = synced_cache(clock, ttl=30)
    cache.upsert_pod(pod_record(cache, "p"))
    assert cache.assume_pod(PodInfo.placeholder("default", "p", "uid-default-p"), "n1").ok
    clock.now += 29
    assert cache.snapshot().usage("n1") is not None and cache.assumed()
    clock.now += 2
    info = cache.snapshot().get("n1")
    assert info is not None and info.usage.pod_count == 0
    assert cache.assumed() == {} and cache.stats()["assumed_expired"] == 1


def test_assume_before_the_watch_shows_the_pod() -> None:
    cache = synced_cache()
    assert cache.assume_pod(PodInfo.placeholder("ns", "late", "uid-late"), "n2").ok
    info = cache.snapshot().get("n2")
    assert info is not None and info.usage.pod_count == 1 and info.requested == {}
    # the pending pod arrives: its requests now count under the same assumption
    cache.upsert_pod(pod_record(cache, "late", namespace="ns", uid="uid-late", cpu="2"))
    info = cache.snapshot().get("n2")
    assert info is not None and info.usage.pod_count == 1 and info.requested["cpu"] == 2000


def test_assume_is_refused_elsewhere_and_idempotent_here() -> None:
    cache = synced_cache()
    cache.upsert_pod(pod_record(cache, "p"))
    p = PodInfo.placeholder("default", "p", "uid-default-p")
    assert cache.assume_pod(p, "n1").ok
    # while its binding cycle holds it, no other cycle may assume it, not even on the same node
    again = cache.assume_pod(p, "n1")
    assert not again.ok and "being bound to node 'n1'" in again.reason
    cache.finish_binding(p.uid)  # the cycle ended, the Binding's outcome unknown: a new cycle renews it
    assert cache.assume_pod(p, "n1").ok
    info = cache.snapshot().get("n1")
    assert info is not None and info.usage.pod_count == 1  # counted once
    refused = cache.assume_pod(p, "n2")
    assert not refused.ok and "being bound to node 'n1'" in refused.reason
    cache.upsert_pod(pod_record(cache, "b", node_name="n2"))
    already = cache.assume_pod(PodInfo.placeholder("default", "b", "uid-default-b"), "n2")
    assert already.ok and already.already_bound
    other = cache.assume_pod(PodInfo.placeholder("default", "b", "uid-default-b"), "n1")
    assert not other.ok and "already bound to node 'n2'" in other.reason
    cache.forget_pod("uid-default-p", "n1")
    info = cache.snapshot().get("n1")
    assert info is not None and info.usage.pod_count == 0


def test_concurrent_reservations_never_overcommit() -> None:
    cache = synced_cache()
    for i in range(25):
        cache.upsert_pod(pod_record(cache, f"p{i}"))

    def room(info: NodeInfo) -> Status:
        return SUCCESS if info.usage.pod_count < info.allocatable["pods"] else Status.unschedulable("Too many pods")

    results: list[bool] = []
    barrier = threading.Barrier(25)

    def reserve(i: int) -> None:
        barrier.wait()
        results.append(cache.assume_pod(PodInfo.placeholder("default", f"p{i}", f"uid-default-p{i}"), "n1", room).ok)

    threads = [threading.Thread(target=reserve, args=(i,)) for i in range(25)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 3  # allocatable pods of n1
    info = cache.snapshot().get("n1")
    assert info is not None and info.usage.pod_count == 3


def test_pools_are_counted_per_node() -> None:
    cache = synced_cache()
    cache.add_pool(PoolSpec("underlay-ip", lambda p: 1 if p.labels.get("net") == "underlay" else 0))
    cache.upsert_pod(pod_record(cache, "a", node_name="n1"))
    doc = pod("b", node_name="n1")
    doc["metadata"]["labels"] = {"net": "underlay"}
    cache.upsert_pod(cache.record(msgspec.convert(doc, objects.Pod)))
    usage = cache.snapshot().usage("n1")
    assert usage is not None and usage.pool_usage == {"underlay-ip": 1}
    cache.delete_pod(cache.record(msgspec.convert(doc, objects.Pod)))
    usage = cache.snapshot().usage("n1")
    assert usage is not None and usage.pool_usage == {}


def test_relist_replaces_and_keeps_assumptions() -> None:
    cache = synced_cache()
    cache.upsert_pod(pod_record(cache, "old", node_name="n1"))
    cache.upsert_pod(pod_record(cache, "pending"))
    assert cache.assume_pod(PodInfo.placeholder("default", "pending", "uid-default-pending"), "n2").ok
    cache.replace_pods([pod_record(cache, "new", node_name="n1"), pod_record(cache, "pending")])
    snap = cache.snapshot()
    n1, n2 = snap.get("n1"), snap.get("n2")
    assert n1 is not None and [p.name for p in n1.pods] == ["new"]
    assert n2 is not None and [p.name for p in n2.pods] == ["pending"]


def test_snapshot_is_shared_until_a_write_and_immutable() -> None:
    assert not Cache().snapshot().synced
    cache = synced_cache()
    first = cache.snapshot()
    assert cache.snapshot() is first
    cache.upsert_node(node_object("n3"))
    second = cache.snapshot()
    assert second is not first and first.get("n3") is None and second.get("n3") is not None


def test_a_snapshot_before_the_sync_is_renewed_once_every_kind_synced() -> None:
    cache = Cache()
    cache.replace_nodes([node_object("n1")])
    cache.replace_pods([])
    first = cache.snapshot()
    assert not first.synced and cache.snapshot() is first
    cache.health.mark_synced("nodes")
    assert cache.snapshot() is first  # the pods have not synced yet
    cache.health.mark_synced("pods")
    second = cache.snapshot()
    assert second.synced and second is not first and second.get("n1") is not None
    assert cache.snapshot() is second
    cache.health.mark_synced("pods")  # a relist's list: nothing changed
    assert cache.snapshot() is second


def test_node_memo_lasts_until_the_node_changes() -> None:
    cache = synced_cache()
    calls: list[str] = []

    def compute(info: NodeInfo) -> int:
        calls.append(info.name)
        return info.allocatable["cpu"]

    info = cache.snapshot().get("n1")
    assert info is not None and info.memo("k", compute) == 4000 and info.memo("k", compute) == 4000
    assert calls == ["n1"]
    cache.upsert_node(node_object("n1", cpu="8"))
    info = cache.snapshot().get("n1")
    assert info is not None and info.memo("k", compute) == 8000
    assert calls == ["n1", "n1"]


def test_watch_lines_split_across_and_within_chunks() -> None:
    chunks = [b'{"a":1}\n{"b"', b':2}\n\n{"c":3}\n{"d"', b":4}"]
    assert list(iter_lines(iter(chunks))) == [b'{"a":1}', b'{"b":2}', b'{"c":3}', b'{"d":4}']

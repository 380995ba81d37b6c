"""Reflectors against the test API server through the official client: sync, events, resume,
410 relists, outages."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import pytest

from app.cluster.connection import ClusterConnection, ClusterSettings
from tests.cluster.conftest import connect, wait_for
from tests.support.apiserver import FakeAPIServer, node, pod


def _pods_on(cluster: ClusterConnection, name: str) -> list[str]:
    usage = cluster.snapshot().usage(name)
    return sorted(p.name for p in usage.pods) if usage is not None else []


@pytest.mark.parametrize("watch_cache", [True, False])
def test_initial_sync_pages_and_aggregates(
    api: FakeAPIServer, make_cluster: Callable[..., ClusterConnection], watch_cache: bool
) -> None:
    api.watch_cache = watch_cache
    for i in range(7):
        api.put("nodes", node(f"n{i}", cpu="4", memory="8Gi"))
    api.put("pods", pod("a", node_name="n0", cpu="250m", memory="1Gi"))
    api.put("pods", pod("b", node_name="n0", cpu=None, memory=None))  # scored with the defaults
    api.put("pods", pod("pending"))
    api.put("pods", pod("done", node_name="n0", phase="Succeeded"))  # excluded by the field selector
    cluster = make_cluster(api.url, page_size=3)
    wait_for(cluster.health.has_synced, what="sync")
    snap = cluster.snapshot()
    assert snap.synced
    assert sorted(snap.nodes) == [f"n{i}" for i in range(7)]
    info = snap.get("n0")
    assert info is not None and info.allocatable["cpu"] == 4000
    assert _pods_on(cluster, "n0") == ["a", "b"]
    assert info.requested == {"cpu": 250, "memory": 1024**3}
    # non-zero: a's own requests plus b's defaults (100m, 200Mi)
    assert info.non_zero_requested == (350, 1024**3 + 200 * 1024**2)
    assert info.usage.pod_count == 2
    assert cluster.pod("uid-default-pending") is not None
    lists = [r for r in api.requests if r.startswith("GET /api/v1/nodes?") and "watch" not in r]
    # client-go's first list: resourceVersion=0 with the page limit; the watch cache answers it
    # whole, an API server without one in pages (three pages of nodes)
    assert "resourceVersion=0" in lists[0] and "limit=3" in lists[0]
    assert len(lists) == (1 if watch_cache else 3)


def test_events_update_node_info(api: FakeAPIServer, make_cluster: Callable[..., ClusterConnection]) -> None:
    api.put("nodes", node("n1"))
    cluster = make_cluster(api.url)
    wait_for(cluster.health.has_synced)
    api.put("nodes", node("n2", **{"kubernetes.io/role": "edge"}))
    api.put("pods", pod("p1", node_name="n2", cpu="1"))
    # nodes and pods come on two watches: the pod may be seen before its node (the flake this
    # test had: the node's labels asserted once the pod alone had arrived)
    wait_for(lambda: _pods_on(cluster, "n2") == ["p1"], what="pod added")
    wait_for(lambda: (i := cluster.snapshot().get("n2")) is not None and i.node is not None, what="node added")
    snap = cluster.snapshot()
    info = snap.get("n2")
    assert info is not None and info.labels["kubernetes.io/role"] == "edge"
    # a pod moving to a terminal phase frees its resources (the selector turns it into DELETED)
    done = pod("p1", node_name="n2", cpu="1", phase="Succeeded")
    api.put("pods", done)
    wait_for(lambda: _pods_on(cluster, "n2") == [], what="terminal pod freed")
    api.put("pods", pod("p2", node_name="n2", cpu="2"))
    wait_for(lambda: _pods_on(cluster, "n2") == ["p2"])
    api.delete("pods", "default/p2")
    wait_for(lambda: _pods_on(cluster, "n2") == [], what="pod deleted")
    info = cluster.snapshot().get("n2")
    assert info is not None and info.requested == {} and info.non_zero_requested == (0, 0)
    api.delete("nodes", "n1")
    wait_for(lambda: cluster.snapshot().get("n1") is None, what="node deleted")
    # the snapshot taken before is immutable
    assert snap.get("n1") is not None


def test_watch_that_ends_resumes_without_relisting(
    api: FakeAPIServer, make_cluster: Callable[..., ClusterConnection]
) -> None:
    api.put("nodes", node("n1"))
    cluster = make_cluster(api.url)
    wait_for(cluster.health.has_synced)
    lists_before = sum(1 for r in api.requests if "watch" not in r)
    # client-go treats a watch that ends within a second without any event as a failure; let the
    # watches run past that (bookmarks arrive every 0.2 s) before the server ends them
    time.sleep(1.2)
    api.end_watches()
    wait_for(lambda: cluster.stats()["nodes_watch_restarts"] >= 1, what="watch restart")
    api.put("pods", pod("after", node_name="n1"))
    wait_for(lambda: _pods_on(cluster, "n1") == ["after"])
    assert sum(1 for r in api.requests if "watch" not in r) == lists_before
    assert cluster.stats()["pods_relists"] == 0
    # the resumed watch asked for the last resourceVersion seen (bookmarks move it on too)
    watches = [r for r in api.requests if "watch=true" in r and "/api/v1/pods" in r]
    assert len(watches) >= 2 and "resourceVersion=" in watches[-1]


def test_gone_forces_relist_without_losing_or_duplicating(
    api: FakeAPIServer, make_cluster: Callable[..., ClusterConnection]
) -> None:
    api.put("nodes", node("n1"))
    for i in range(5):
        api.put("pods", pod(f"p{i}", node_name="n1"))
    cluster = make_cluster(api.url)
    wait_for(cluster.health.has_synced)
    api.stop()  # the server goes away; meanwhile the cluster changes and its history is compacted
    wait_for(lambda: cluster.stats()["pods_errors"] >= 1, what="watch failure")
    api.delete("pods", "default/p0")
    api.put("pods", pod("p5", node_name="n1"))
    api.compact()
    api.start()
    wait_for(lambda: cluster.stats()["pods_relists"] >= 1, what="relist after 410")
    wait_for(lambda: _pods_on(cluster, "n1") == ["p1", "p2", "p3", "p4", "p5"], what="state after relist")
    usage = cluster.snapshot().usage("n1")
    assert usage is not None and usage.pod_count == 5 and usage.requested["cpu"] == 500
    # client-go's relistResourceVersion: the first list at "0", the relist after an expired watch at
    # the last version the watch saw (not "0": never older than what the cache already showed)
    lists = [parse_qs(urlsplit(r).query) for r in api.requests if r.startswith("GET /api/v1/pods?")]
    lists = [q for q in lists if "watch" not in q]
    assert lists[0]["resourceVersion"] == ["0"]
    assert int(lists[-1]["resourceVersion"][0]) > 100


def test_api_server_down_at_start_and_later(api: FakeAPIServer, make_cluster: Callable[..., ClusterConnection]) -> None:
    port = api.port
    api.stop()
    cluster = make_cluster(f"http://127.0.0.1:{port}", stale_after=0.3)
    wait_for(lambda: cluster.stats()["nodes_errors"] >= 2, what="retries with backoff")
    ready, reason = cluster.health.ready()
    assert not ready
    assert "nodes have not synced yet" in reason and "unreachable" in reason
    api.put("nodes", node("n1"))
    api.start(port)
    wait_for(lambda: cluster.health.ready()[0], what="ready after the API server came up")
    api.stop()
    wait_for(lambda: not cluster.health.ready()[0], what="not ready once stale")
    assert "cache may be stale" in cluster.health.ready()[1]
    # the cache keeps serving what it had
    assert cluster.snapshot().get("n1") is not None
    api.start(port)
    wait_for(lambda: cluster.health.ready()[0], what="ready again")
    assert all(r.running and not r.error for r in cluster.reflectors)


def test_stopping_ends_a_quiet_watch_at_once() -> None:
    """A watch on which nothing arrives (no event, no bookmark for a minute, as a real API server
    between bookmarks) ends when its reflector is stopped, well before the server's next message:
    the read blocked in the reflector's thread is woken (closing the stream alone waited for that
    message, on the event loop, for each quiet watch), and no worker is left behind."""
    api = FakeAPIServer(bookmark_interval=60).start()
    try:
        api.put("nodes", node("n1"))
        cluster = ClusterConnection(ClusterSettings(watch_timeout=300))
        supervisor = connect(cluster, api.url)
        wait_for(cluster.health.has_synced, what="sync")
        wait_for(lambda: sum("watch=true" in r for r in api.requests) >= 2, what="both watches open")
        late = asyncio.run(asyncio.wait_for(supervisor.stop(1.0), 20))
        cluster.close()
        assert late == []
    finally:
        api.stop()

"""The watched kinds' sync health: what /readyz, bind admission and the metrics read."""

from __future__ import annotations

from app.cluster.health import SyncHealth
from tests.cluster.conftest import Clock


def test_ready_waits_for_every_kind_and_turns_stale() -> None:
    clock = Clock()
    health = SyncHealth(stale_after=60, clock=clock)
    health.track_kind("namespaces")
    assert health.kinds == ("nodes", "pods", "namespaces")
    health.mark_failing("nodes", "connection refused")
    assert not health.has_synced()
    assert health.ready() == (False, "nodes have not synced yet: connection refused")
    health.mark_synced("nodes")
    health.mark_synced("pods")
    assert health.ready() == (False, "namespaces have not synced yet")
    health.mark_synced("namespaces")
    assert health.has_synced() and health.ready() == (True, "synced")
    health.mark_failing("pods", "boom")
    clock.now += 60
    assert health.ready() == (True, "synced")  # not yet longer than stale_after
    clock.now += 1
    assert health.ready() == (False, "pods list/watch has failed for 61s (cache may be stale): boom")
    health.mark_ok("pods")
    assert health.ready() == (True, "synced")


def test_stats_per_kind() -> None:
    clock = Clock()
    health = SyncHealth(clock=clock)
    assert health.stats()["nodes_since_ok"] == -1 and health.stats()["nodes_synced"] == 0
    health.mark_synced("nodes")
    health.mark_failing("pods", "gone")
    health.count("pods", "relist")
    health.count("pods", "watch_restart")
    health.count("pods", "watch_restart")
    clock.now += 5
    stats = health.stats()
    assert stats == {
        "nodes_synced": 1,
        "nodes_since_ok": 5,
        "nodes_relists": 0,
        "nodes_watch_restarts": 0,
        "nodes_errors": 0,
        "pods_synced": 0,
        "pods_since_ok": -1,
        "pods_relists": 1,
        "pods_watch_restarts": 2,
        "pods_errors": 1,
    }

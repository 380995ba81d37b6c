"""The standalone scheduler's queue against the real API server (issue 35's acceptance): a pod
parked by TaintToleration (every node of its own tainted) is not tried again when a node's label
changes, an event its rejecting plugins' QueueingHints say Skip to (NodeAffinity: the node matched
before and after; TaintToleration does not register label updates), and is bound at once when a
taint is removed, an event TaintToleration's hint says Queue to: seconds, not the 5-minute flush
of the unschedulable pool (pkg/scheduler/backend/queue/scheduling_queue.go, v1.36.3)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_cycle import metric
from tests.realcluster.extender import pod
from tests.realcluster.support import Cluster, Obj, wait_for
from tests.realcluster.test_c_standalone import LEASE, SCHEDULER, Schedule, config

TAINT = {"key": "hint.example.com/blocked", "value": "yes", "effect": "NoSchedule"}
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture
def namespace(cluster: Cluster) -> Iterator[str]:
    ns = cluster.namespace("tier-queueing-hints")
    yield ns
    cluster.delete_pods(ns)
    cluster.request("DELETE", LEASE, ok=(200, 404))


def _patch_node(cluster: Cluster, name: str, patch: Obj) -> None:
    r = cluster.api.patch(f"/api/v1/nodes/{name}", json=patch, headers=MERGE)
    assert r.status_code == 200, r.text


def test_a_parked_pod_moves_on_the_event_its_hint_queues_and_not_on_one_it_skips(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    nodes = cluster.nodes(2, prefix="hint-node", labels={"hint-node": "true"})
    for name in nodes:
        _patch_node(cluster, name, {"spec": {"taints": [TAINT]}})
    replica = Schedule(config(tmp_path, cluster.kubeconfig))
    try:
        wait_for(lambda: replica.readyz().get("role") == "leader", seconds=60, what="the replica leading")

        def attempts() -> float:
            return metric(replica.url, "scheduler_schedule_attempts_total", profile="ip", result="unschedulable")

        cluster.create(
            f"/api/v1/namespaces/{namespace}/pods",
            [pod("parked", scheduler=SCHEDULER, nodeSelector={"hint-node": "true"})],
        )
        wait_for(lambda: attempts() >= 1, seconds=30, what="the pod tried and parked")
        # settled: no retry for 3 s (no backoff or in-flight event left to replay)
        settled = attempts()
        time.sleep(3)
        assert attempts() == settled and "parked" not in cluster.bound(namespace)

        _patch_node(cluster, nodes[0], {"metadata": {"labels": {"color": "blue"}}})  # Skip
        time.sleep(5)
        assert attempts() == settled, "a label change no rejecting plugin's hint queues moved the pod"
        assert "parked" not in cluster.bound(namespace)

        cleared = time.monotonic()
        _patch_node(cluster, nodes[1], {"spec": {"taints": None}})  # TaintToleration's hint: Queue
        wait_for(lambda: cluster.bound(namespace).get("parked") == nodes[1], seconds=30, what="the pod bound")
        took = time.monotonic() - cleared
        print(f"\nqueueing hints: no retry after the label change (5 s); bound {took:.2f} s after the taint went")
        assert took < 15, f"bound {took:.1f} s after its taint was removed (the flush is 5 minutes)"
        assert attempts() == settled
        assert "Traceback" not in replica.text()
    finally:
        replica.stop()
        for name in nodes:
            cluster.request("DELETE", f"/api/v1/nodes/{name}", ok=(200, 404))

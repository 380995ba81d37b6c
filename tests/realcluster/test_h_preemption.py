"""The standalone scheduler's preemption against the real API server, as v1.36.3 preempts by
default (``SchedulerAsyncPreemption``): a high-priority pod that only fits once a low-priority pod
is gone is nominated to the node at once, the victim gets its ``DisruptionTarget`` condition and
is deleted off the scheduling cycle (pkg/scheduler/framework/preemption/executor.go), and the
preemptor, kept out by DefaultPreemption's PreEnqueue while that runs, is bound to the node after
the victim's deletion, an event NodeResourcesFit's hint queues."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realcluster.extender import pod
from tests.realcluster.support import Cluster, Obj, wait_for
from tests.realcluster.test_c_standalone import LEASE, SCHEDULER, Schedule, config

LOW, HIGH = "tier-preempt-low", "tier-preempt-high"
PRIORITIES = {LOW: 10, HIGH: 1000}


@pytest.fixture
def namespace(cluster: Cluster) -> Iterator[str]:
    for name, value in PRIORITIES.items():
        doc: Obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}}
        doc["value"] = value
        cluster.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", ok=(201, 409), json=doc)
    ns = cluster.namespace("tier-preemption")
    yield ns
    cluster.delete_pods(ns)
    cluster.request("DELETE", LEASE, ok=(200, 404))


def test_a_preemptor_is_bound_after_its_victim_is_deleted_off_the_cycle(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    (node,) = cluster.nodes(1, prefix="preempt-node", labels={"preempt-node": "true"}, cpu="1")
    replica = Schedule(config(tmp_path, cluster.kubeconfig))
    pods = f"/api/v1/namespaces/{namespace}/pods"
    try:
        wait_for(lambda: replica.readyz().get("role") == "leader", seconds=60, what="the replica leading")
        selector = {"preempt-node": "true"}
        low = pod("low", cpu="800m", scheduler=SCHEDULER, nodeSelector=selector, priorityClassName=LOW)
        cluster.create(pods, [low])
        wait_for(lambda: cluster.bound(namespace).get("low") == node, seconds=30, what="the low pod bound")
        high = pod(
            "high", cpu="800m", scheduler=SCHEDULER, nodeSelector=selector, priorityClassName="tier-preempt-high"
        )
        started = time.monotonic()
        cluster.create(pods, [high])

        def nominated() -> str:
            doc: Obj = cluster.get(f"{pods}/high")
            return str(doc.get("status", {}).get("nominatedNodeName") or "")

        def low_gone() -> bool:
            return bool(cluster.api.get(f"{pods}/low").status_code == 404)

        wait_for(lambda: cluster.bound(namespace).get("high") == node, seconds=60, what="the preemptor bound")
        took = time.monotonic() - started
        assert low_gone(), "the victim is still there"
        print(f"\npreemption: the preemptor bound {took:.2f} s after it was created")
        assert nominated() in ("", node)  # never nominated elsewhere
        assert "Traceback" not in replica.text()
        events = cluster.get(f"/api/v1/namespaces/{namespace}/events")["items"]
        reasons = {(e["involvedObject"]["name"], e["reason"]) for e in events}
        assert ("low", "Preempted") in reasons, sorted(reasons)
        assert ("high", "Scheduled") in reasons, sorted(reasons)
    finally:
        replica.stop()
        cluster.request("DELETE", f"/api/v1/nodes/{node}", ok=(200, 404))

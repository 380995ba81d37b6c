"""kube-scheduler v1.36.3 calling every verb of the service (filter, prioritize, preempt, bind) over
mutual TLS and HTTP/2, as ``python -m app render --target kubeadm`` configures it, on a real API
server: 10,000 pods at 200 nodes all bound by the service with no error in kube-scheduler's log
(one HTTP/2 connection carries every call: well past 4,096 streams), and a pod of high priority
that only preemption makes room for."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

from tests.realcluster.extender import Extended, pod, wait_bound
from tests.realcluster.support import Cluster, wait_for

PODS = int(os.environ.get("REALCLUSTER_PODS", "10000"))
NODES = 200


@pytest.fixture(scope="module")
def extended(cluster: Cluster, big_nodes: list[str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Extended]:
    e = Extended(cluster, tmp_path_factory.mktemp("extender"))
    yield e
    e.stop()


def test_ten_thousand_pods_through_every_verb_over_one_http2_connection(cluster: Cluster, extended: Extended) -> None:
    ns = cluster.namespace("tier-extender")
    try:
        check_all_bound(cluster, extended, ns)
    finally:
        cluster.delete_pods(ns)


def check_all_bound(cluster: Cluster, extended: Extended, ns: str) -> None:
    started = time.monotonic()
    cluster.create(f"/api/v1/namespaces/{ns}/pods", [pod(f"p-{i:05d}") for i in range(PODS)])
    created = time.monotonic() - started
    count, took = wait_bound(cluster, ns, PODS)
    assert extended.kube is not None
    errors = extended.kube.errors()
    print(
        f"\n{PODS} pods created in {created:.0f}s; {count} bound {took:.0f}s after the last was created;"
        f" {len(errors)} error lines"
    )
    # first the log: the defect this guards against (GOAWAY after 4,096 streams) shows there
    assert errors == [], f"{len(errors)} error lines in kube-scheduler's log ({extended.kube.log}):\n" + "\n".join(
        errors[:10]
    )
    assert count == PODS
    on = cluster.bound(ns)
    assert set(on.values()) <= {f"lab-node-{i}" for i in range(1, NODES + 1)}
    assert max(list(on.values()).count(n) for n in set(on.values())) <= 110  # the nodes' pod capacity holds
    requests = extended.requests()
    # every pod went through filter, prioritize and bind at the service, each answered 200
    assert requests.get(("bind", "200"), 0) >= PODS
    assert requests.get(("filter", "200"), 0) >= PODS
    assert requests.get(("prioritize", "200"), 0) >= PODS
    assert not [k for k in requests if k[1] != "200"], requests
    assert "Traceback" not in extended.server_log()
    assert extended.alpn() == "h2"  # what kube-scheduler's transport negotiated: HTTP/2


def play_kubelet(cluster: Cluster, namespace: str, stop: threading.Event) -> None:
    """What the kubelet would do for a pod being deleted: confirm it (a deletion with grace 0)."""
    while not stop.is_set():
        for p in cluster.pods(namespace):
            if p["metadata"].get("deletionTimestamp"):
                cluster.request(
                    "DELETE",
                    f"/api/v1/namespaces/{namespace}/pods/{p['metadata']['name']}",
                    params={"gracePeriodSeconds": 0},
                    ok=(200, 404),
                )
        stop.wait(0.3)


def test_a_high_priority_pod_preempts_through_the_preempt_verb(cluster: Cluster, extended: Extended) -> None:
    ns = cluster.namespace("tier-preempt")
    for name, value in (("tier-low", 10), ("tier-high", 1000)):
        cluster.request(
            "POST",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            ok=(201, 409),
            json={"metadata": {"name": name}, "value": value},
        )
    # one node only these pods reach (its taint keeps every other pod off it)
    (target,) = cluster.nodes(1, prefix="tier-preempt", labels={"tier/preempt": "yes"}, cpu="2")
    cluster.request(
        "PATCH",
        f"/api/v1/nodes/{target}",
        json={"spec": {"taints": [{"key": "tier/preempt", "value": "yes", "effect": "NoSchedule"}]}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    placement = {
        "nodeSelector": {"tier/preempt": "yes"},
        "tolerations": [{"key": "tier/preempt", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}],
    }
    assert extended.kube is not None
    since = extended.kube.size()  # what the test before logged is its own business
    before = extended.requests().get(("preempt", "200"), 0)
    stop = threading.Event()
    kubelet = threading.Thread(target=play_kubelet, args=(cluster, ns, stop), daemon=True)
    kubelet.start()
    try:
        low = [pod(f"low-{i}", cpu="900m", priorityClassName="tier-low", **placement) for i in range(2)]
        cluster.create(f"/api/v1/namespaces/{ns}/pods", low)
        wait_for(lambda: len(cluster.bound(ns)) == 2, seconds=60, what="the two low-priority pods bound")
        high = pod("high", cpu="900m", priorityClassName="tier-high", **placement)
        cluster.create(f"/api/v1/namespaces/{ns}/pods", [high])
        on = wait_for(
            lambda: cluster.bound(ns).get("high") and cluster.bound(ns), seconds=90, what="the preemptor bound"
        )
    finally:
        stop.set()
        kubelet.join(10)
    assert on["high"] == target
    assert len([name for name in on if name.startswith("low-")]) == 1  # one victim was enough
    assert extended.requests().get(("preempt", "200"), 0) > before  # kube-scheduler asked the service
    assert extended.kube.errors(since) == []
    assert extended.alpn() == "h2"

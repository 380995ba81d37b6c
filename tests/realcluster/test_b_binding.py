"""The same backlog (1,500 pods at 200 nodes, created before kube-scheduler starts) bound by the
service (``bindVerb``) and by kube-scheduler itself (the service serving filter, prioritize and
preempt only): every pod bound, no error line in kube-scheduler's log; the pace of each is printed,
not asserted (measurements belong to ``make bench``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.realcluster.extender import Extended, pod, wait_bound
from tests.realcluster.support import Cluster

PODS = 1500


@pytest.mark.parametrize("bind", [True, False], ids=["service-binds", "kube-scheduler-binds"])
def test_a_backlog_is_bound_with_and_without_the_bind_verb(
    cluster: Cluster, big_nodes: list[str], tmp_path: Path, bind: bool
) -> None:
    ns = cluster.namespace(f"tier-backlog-{'service' if bind else 'kube'}")
    cluster.create(f"/api/v1/namespaces/{ns}/pods", [pod(f"b-{i:04d}") for i in range(PODS)])
    extended = Extended(cluster, tmp_path, bind=bind)
    try:
        count, _ = wait_bound(cluster, ns, PODS, stall=60, limit=600)
        took = time.monotonic() - extended.started
        assert extended.kube is not None
        errors = extended.kube.errors()
        requests = extended.requests()
    finally:
        extended.stop()
    who = "the service" if bind else "kube-scheduler"
    print(f"\n{count}/{PODS} pods bound by {who} in {took:.1f}s: {count / took:.0f} pods/s from kube-scheduler's start")
    try:
        assert errors == [], f"{len(errors)} error lines in kube-scheduler's log:\n" + "\n".join(errors[:10])
        assert count == PODS
        assert set(cluster.bound(ns).values()) <= set(big_nodes)
        assert requests.get(("filter", "200"), 0) >= PODS and requests.get(("prioritize", "200"), 0) >= PODS
        # the bind verb is called exactly when it is configured
        assert (requests.get(("bind", "200"), 0) >= PODS) is bind and (("bind", "200") in requests) is bind
        assert not [k for k in requests if k[1] != "200"], requests
    finally:
        cluster.delete_pods(ns)

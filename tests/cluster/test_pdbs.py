"""PodDisruptionBudgets watched through the official client's PolicyV1Api from the test API
server: synced, updated, deleted, and read by preemption as upstream reads them."""

from __future__ import annotations

from typing import Any

from app.cluster.connection import ClusterConnection, ClusterSettings
from app.framework import PodDisruptionBudget, objects
from app.framework.handle import ClusterNeeds
from tests.cluster.conftest import connect, disconnect, wait_for
from tests.support.apiserver import FakeAPIServer


def pdb(
    name: str, namespace: str, match: dict[str, str], allowed: int, disrupted: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A ``policy/v1`` PodDisruptionBudget as the API server serves it (status set by its controller)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-pdb-{namespace}-{name}"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": match}},
        "status": {
            "disruptionsAllowed": allowed,
            "disruptedPods": {p: "2026-11-23T00:00:00Z" for p in disrupted},
            "currentHealthy": 3,
            "desiredHealthy": 2,
            "expectedPods": 3,
            "observedGeneration": 1,
        },
    }


def test_budgets_sync_and_follow_events(api: FakeAPIServer) -> None:
    cluster = ClusterConnection(ClusterSettings(backoff_initial=0.05, backoff_max=0.2, watch_timeout=30))
    assert cluster.pod_disruption_budgets() == ()  # nobody declared them: not watched
    cluster.register("DefaultPreemption", ClusterNeeds(pod_disruption_budgets=True))
    api.put("poddisruptionbudgets", pdb("web", "shop", {"app": "web"}, 1))
    supervisor = connect(cluster, api.url)
    try:
        wait_for(lambda: cluster.pod_disruption_budgets(), what="budgets synced")
        assert cluster.pod_disruption_budgets() == (
            PodDisruptionBudget("shop", "web", objects.LabelSelector(match_labels={"app": "web"}), 1, frozenset()),
        )
        api.put("poddisruptionbudgets", pdb("web", "shop", {"app": "web"}, 0, disrupted=("web-1",)))
        wait_for(
            lambda: (
                [(b.disruptions_allowed, b.disrupted_pods) for b in cluster.pod_disruption_budgets()]
                == [(0, frozenset({"web-1"}))]
            ),
            what="the update",
        )
        api.delete("poddisruptionbudgets", "shop/web")
        wait_for(lambda: cluster.pod_disruption_budgets() == (), what="the deletion")
        assert any(r.startswith("GET /apis/policy/v1/poddisruptionbudgets?") for r in api.requests)
    finally:
        disconnect(cluster, supervisor)

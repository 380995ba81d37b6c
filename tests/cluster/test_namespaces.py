"""Namespaces watched from the test API server for InterPodAffinity's ``namespaceSelector``: only
when a plugin needs them, synced as a third kind of the cluster state (readiness waits for their
first list), their labels followed through updates and deletions, and read by the plugin."""

from __future__ import annotations

from typing import Any

from app.cluster.connection import ClusterConnection, ClusterSettings
from app.deploy.rbac import needs_grants
from app.framework import CycleState
from app.framework.handle import ClusterNeeds
from app.plugins import interpodaffinity
from tests.cluster.conftest import connect, disconnect, wait_for
from tests.support.apiserver import FakeAPIServer, node, pod
from tests.unit.helpers import pod as pod_info


def namespace(name: str, **labels: str) -> dict[str, Any]:
    """A ``v1`` Namespace as the API server serves it."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "uid": f"uid-ns-{name}", "labels": {"kubernetes.io/metadata.name": name, **labels}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def settings() -> ClusterSettings:
    return ClusterSettings(backoff_initial=0.05, backoff_max=0.2, watch_timeout=30)


def test_namespaces_are_watched_only_for_a_plugin_that_needs_them(api: FakeAPIServer) -> None:
    api.put("namespaces", namespace("shop", team="a"))
    cluster = ClusterConnection(settings())
    supervisor = connect(cluster, api.url)
    try:
        wait_for(cluster.health.has_synced, what="nodes and pods synced")
        assert cluster.cache.snapshot().namespace_labels("shop") is None
        assert not any("/api/v1/namespaces" in r for r in api.requests)
    finally:
        disconnect(cluster, supervisor)
    assert needs_grants(ClusterNeeds(), "InterPodAffinity") == []
    (grant,) = needs_grants(ClusterNeeds(namespaces=True), "InterPodAffinity")
    assert (grant.api_groups, grant.resources, grant.verbs) == (("",), ("namespaces",), ("list", "watch"))


def test_namespace_labels_sync_and_follow_events(api: FakeAPIServer) -> None:
    cluster = ClusterConnection(settings())
    entry = interpodaffinity.PLUGIN
    assert entry.needs is not None
    cluster.register(entry.name, entry.needs(None, 5.0))
    assert cluster.stats()["namespaces_synced"] == 0  # a third kind the state waits for
    api.put("namespaces", namespace("shop", team="a"))
    api.put("namespaces", namespace("batch"))
    supervisor = connect(cluster, api.url)
    try:
        wait_for(cluster.health.has_synced, what="nodes, pods and namespaces synced")
        snapshot = cluster.cache.snapshot()
        assert snapshot.namespace_labels("shop") == {"kubernetes.io/metadata.name": "shop", "team": "a"}
        assert snapshot.namespace_labels("nowhere") is None
        api.put("namespaces", namespace("shop", team="b"))
        wait_for(
            lambda: (cluster.cache.snapshot().namespace_labels("shop") or {}).get("team") == "b", what="the update"
        )
        api.delete("namespaces", "batch")
        wait_for(lambda: cluster.cache.snapshot().namespace_labels("batch") is None, what="the deletion")
        assert cluster.stats()["namespaces_synced"] == 1
    finally:
        disconnect(cluster, supervisor)


def test_a_namespace_selector_term_matches_by_the_watched_labels(api: FakeAPIServer) -> None:
    """InterPodAffinity's Filter on the cluster's snapshot: a required affinity to pods in the
    namespaces labelled ``team=a`` finds the one running in ``shop``, not in ``batch``."""
    cluster = ClusterConnection(settings())
    entry = interpodaffinity.PLUGIN
    assert entry.needs is not None
    cluster.register(entry.name, entry.needs(None, 5.0))
    api.put("namespaces", namespace("shop", team="a"))
    api.put("namespaces", namespace("batch", team="b"))
    for name in ("n1", "n2"):
        api.put("nodes", node(name))
    web = pod("web", "shop", "n1")
    web["metadata"]["labels"] = {"app": "web"}
    api.put("pods", web)
    other = pod("web", "batch", "n2")
    other["metadata"]["labels"] = {"app": "web"}
    api.put("pods", other)
    supervisor = connect(cluster, api.url)
    try:
        wait_for(lambda: cluster.health.has_synced() and len(cluster.cache.snapshot().list()) == 2, what="synced")
        plugin = entry.factory(interpodaffinity.InterPodAffinityArgs(), _handle(cluster))
        term = {
            "labelSelector": {"matchLabels": {"app": "web"}},
            "namespaceSelector": {"matchLabels": {"team": "a"}},
            "topologyKey": "kubernetes.io/hostname",
        }
        affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        info = pod_info("client", affinity=affinity)
        snapshot = cluster.cache.snapshot()
        state = CycleState(snapshot)
        _, status = plugin.pre_filter(state, info, snapshot.list())
        assert status.is_success()
        verdicts = {n.name: plugin.filter(state, info, n).is_success() for n in snapshot.list()}
        assert verdicts == {"n1": True, "n2": False}
    finally:
        disconnect(cluster, supervisor)


def _handle(cluster: ClusterConnection) -> Any:
    from app.framework import Handle

    return Handle("p", 5.0, cluster)

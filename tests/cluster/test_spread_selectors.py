"""PodTopologySpread's default selector (``helper.DefaultSelector``) over Services and ReplicaSets
watched through the official client from the test API server: listed, updated and deleted."""

from __future__ import annotations

from typing import Any

import msgspec

from app.cluster.connection import ClusterConnection, ClusterSettings
from app.cluster.selectors import KINDS
from app.framework import objects
from app.framework.handle import ClusterNeeds
from app.framework.types import PodInfo
from tests.cluster.conftest import connect, disconnect, wait_for
from tests.support.apiserver import FakeAPIServer


def replica_set(name: str, namespace: str, match: dict[str, str]) -> dict[str, Any]:
    """An ``apps/v1`` ReplicaSet of a Deployment, as the API server serves it."""
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-rs-{name}"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": match},
            "template": {"metadata": {"labels": match}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        },
        "status": {"replicas": 3, "readyReplicas": 3, "observedGeneration": 1},
    }


def service(name: str, namespace: str, selector: dict[str, str]) -> dict[str, Any]:
    """A ``v1`` Service selecting ``selector``."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-svc-{name}"},
        "spec": {"selector": selector, "ports": [{"port": 80, "protocol": "TCP"}], "clusterIP": "10.96.0.10"},
    }


def deployment_pod(name: str, namespace: str, labels: dict[str, str], replica_set: str) -> PodInfo:
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": replica_set, "uid": "u", "controller": True}
    meta = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": labels, "ownerReferences": [owner]}
    return PodInfo(msgspec.convert({"metadata": meta, "spec": {}}, objects.Pod))


def test_default_selector_follows_replica_sets_and_services(api: FakeAPIServer) -> None:
    cluster = ClusterConnection(ClusterSettings(backoff_initial=0.05, backoff_max=0.2, watch_timeout=30))
    labels = {"app": "web", "pod-template-hash": "5d8f"}
    pod = deployment_pod("web-5d8f-x", "shop", labels, "web-5d8f")
    assert cluster.default_selector(pod) is None  # nobody declared them: not watched
    cluster.register("PodTopologySpread", ClusterNeeds(spread_selectors=True))
    api.put("replicasets", replica_set("web-5d8f", "shop", labels))
    api.put("replicasets", replica_set("web-5d8f", "other", {"app": "other"}))  # another namespace
    supervisor = connect(cluster, api.url)
    try:
        assert [r.kind for r in cluster.reflectors][2:] == list(KINDS)  # after nodes and pods
        rs_selector = objects.LabelSelector(match_labels=labels)
        wait_for(lambda: cluster.default_selector(pod) == rs_selector, what="the ReplicaSet listed")
        api.put("services", service("web", "shop", {"app": "web"}))
        api.put("services", service("api", "shop", {"app": "api"}))  # does not select the pod
        wait_for(lambda: _services_synced(cluster), what="the Services")
        assert cluster.default_selector(pod) == rs_selector  # the Service's app=web is in it already
        api.put("replicasets", replica_set("web-5d8f", "shop", {"app": "web", "rev": "2"}))
        wait_for(
            lambda: cluster.default_selector(pod) == objects.LabelSelector(match_labels={"app": "web", "rev": "2"}),
            what="the ReplicaSet's update",
        )
        api.delete("replicasets", "shop/web-5d8f")
        wait_for(
            lambda: cluster.default_selector(pod) == objects.LabelSelector(match_labels={"app": "web"}),
            what="the deletion: the Service alone",
        )
        api.delete("services", "shop/web")
        wait_for(lambda: cluster.default_selector(pod) == objects.LabelSelector(), what="nothing selects it")
        for path in (
            "/api/v1/services",
            "/api/v1/replicationcontrollers",
            "/apis/apps/v1/replicasets",
            "/apis/apps/v1/statefulsets",
        ):
            assert any(r.startswith(f"GET {path}?") for r in api.requests), path
    finally:
        disconnect(cluster, supervisor)


def _services_synced(cluster: ClusterConnection) -> bool:
    pod = deployment_pod("probe", "shop", {"app": "api"}, "none")
    return cluster.default_selector(pod) == objects.LabelSelector(match_labels={"app": "api"})

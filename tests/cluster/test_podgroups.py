"""PodGroups watched through the official client's CustomObjectsApi from the test API server:
sync, events, and a CRD that is missing at first and installed later."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.cluster.connection import ClusterConnection, ClusterSettings
from app.cluster.podgroups import PodGroupStore
from app.framework.handle import ClusterNeeds
from app.lifecycle import Supervisor
from tests.cluster.conftest import connect, disconnect, wait_for
from tests.support.apiserver import FakeAPIServer, pod_group

#: the supervisors of the clusters the tests connected, by cluster
started: dict[int, list[Supervisor]] = {}


@pytest.fixture
def podgroups(api: FakeAPIServer) -> Iterator[tuple[ClusterConnection, PodGroupStore]]:
    cluster = ClusterConnection(ClusterSettings(backoff_initial=0.05, backoff_max=0.2, watch_timeout=30))
    cluster.register("test", ClusterNeeds(pod_groups=True))
    store = cluster.podgroups
    assert store is not None
    yield cluster, store
    for supervisor in started.get(id(cluster), []):
        disconnect(cluster, supervisor)


def test_podgroups_sync_and_follow_events(
    api: FakeAPIServer, podgroups: tuple[ClusterConnection, PodGroupStore]
) -> None:
    cluster, store = podgroups
    api.put("podgroups", pod_group("train", "ml", 4))
    started.setdefault(id(cluster), []).append(connect(cluster, api.url))
    wait_for(lambda: store.synced, what="podgroups synced")
    assert store.min_member("ml", "train") == 4 and store.min_member("ml", "other") is None
    api.put("podgroups", pod_group("train", "ml", 6))
    api.put("podgroups", pod_group("eval", "ml", 2))
    wait_for(lambda: store.min_member("ml", "train") == 6 and store.min_member("ml", "eval") == 2, what="events")
    api.delete("podgroups", "ml/eval")
    wait_for(lambda: store.min_member("ml", "eval") is None, what="deletion")
    assert any(r.startswith("GET /apis/scheduling.x-k8s.io/v1alpha1/podgroups?") for r in api.requests)


def test_missing_crd_then_installed(api: FakeAPIServer, podgroups: tuple[ClusterConnection, PodGroupStore]) -> None:
    cluster, store = podgroups
    api.podgroup_crd = False
    started.setdefault(id(cluster), []).append(connect(cluster, api.url))
    wait_for(lambda: store.absent, what="the CRD reported absent")
    assert not store.synced and "404" in store.last_error
    # nodes and pods are not held back by the missing CRD
    wait_for(cluster.health.has_synced, what="nodes and pods synced")
    api.podgroup_crd = True
    api.put("podgroups", pod_group("late", "ml", 3))
    wait_for(lambda: store.synced and not store.absent, what="the CRD picked up once installed")
    assert store.min_member("ml", "late") == 3

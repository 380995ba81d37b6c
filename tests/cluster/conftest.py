"""Fixtures: the test API server and our cluster state wired to it through the official client;
a cache without a server and a clock tests move."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

import msgspec
import pytest
from kubernetes import client as k8s

from app.cluster.cache import Cache
from app.cluster.connection import ClusterConnection, ClusterSettings
from app.framework import objects
from app.framework.types import PodInfo
from app.kube.client import KubeClient
from app.lifecycle import Supervisor
from tests.support.apiserver import FakeAPIServer, node, pod


def official_client(url: str) -> KubeClient:
    """Our KubeClient on the official client, configured for ``url`` (no credentials)."""
    cfg = k8s.Configuration()
    cfg.host = url
    return KubeClient(k8s.ApiClient(cfg))


def connect(cluster: ClusterConnection, url: str) -> Supervisor:
    """Connect ``cluster`` to the test API server at ``url`` and start its workers, as ``serve``
    does; stop them with :func:`disconnect`."""
    supervisor = Supervisor()
    for worker in cluster.connect(official_client(url)):
        supervisor.add(worker)
    supervisor.start()
    return supervisor


def disconnect(cluster: ClusterConnection, supervisor: Supervisor) -> None:
    """Stop ``cluster``'s workers (reverse order, bounded) and close its client."""
    asyncio.run(supervisor.stop(5.0))
    cluster.close()


def wait_for(predicate: Callable[[], object], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate`` until it is true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Clock:
    """A monotonic clock tests move by hand (``now``, seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def node_object(name: str, **kw: str) -> objects.Node:
    """The node view of :func:`tests.support.apiserver.node`'s document."""
    return msgspec.convert(node(name, **kw), objects.Node)


def pod_record(cache: Cache, name: str, **kw: object) -> PodInfo:
    """``cache``'s record of :func:`tests.support.apiserver.pod`'s document."""
    return cache.record(msgspec.convert(pod(name, **kw), objects.Pod))  # type: ignore[arg-type]


def synced_cache(clock: Clock | None = None, ttl: float = 30.0) -> Cache:
    """A cache of two nodes (``n1`` holds 3 pods at most) and no pods, nodes and pods synced."""
    cache = Cache(assumed_ttl=ttl, clock=clock or Clock())
    cache.replace_nodes([node_object("n1", pods="3"), node_object("n2")])
    cache.replace_pods([])
    cache.health.mark_synced("nodes")
    cache.health.mark_synced("pods")
    return cache


@pytest.fixture
def api() -> Iterator[FakeAPIServer]:
    server = FakeAPIServer(bookmark_interval=0.2).start()
    yield server
    server.stop()


@pytest.fixture
def make_cluster() -> Iterator[Callable[..., ClusterConnection]]:
    clusters: list[tuple[ClusterConnection, Supervisor]] = []

    def make(url: str, **settings: object) -> ClusterConnection:
        defaults: dict[str, object] = {"backoff_initial": 0.05, "backoff_max": 0.2, "watch_timeout": 30}
        defaults.update(settings)
        cluster = ClusterConnection(ClusterSettings(**defaults))  # type: ignore[arg-type]
        clusters.append((cluster, connect(cluster, url)))
        return cluster

    yield make
    for cluster, supervisor in clusters:
        disconnect(cluster, supervisor)

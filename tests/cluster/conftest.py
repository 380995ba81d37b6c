"""Fixtures: the test API server and our cluster state wired to it through the official client."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from kubernetes import client as k8s

from app.cluster.runtime import ClusterRuntime, ClusterSettings
from app.kube.client import KubeClient
from tests.support.apiserver import FakeAPIServer


def official_client(url: str) -> KubeClient:
    """Our KubeClient on the official client, configured for ``url`` (no credentials)."""
    cfg = k8s.Configuration()
    cfg.host = url
    return KubeClient(k8s.ApiClient(cfg))


def wait_for(predicate: Callable[[], object], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate`` until it is true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture
def api() -> Iterator[FakeAPIServer]:
    server = FakeAPIServer(bookmark_interval=0.2).start()
    yield server
    server.stop()


@pytest.fixture
def make_runtime() -> Iterator[Callable[..., ClusterRuntime]]:
    runtimes: list[ClusterRuntime] = []

    def make(url: str, **settings: object) -> ClusterRuntime:
        defaults: dict[str, object] = {"backoff_initial": 0.05, "backoff_max": 0.2, "watch_timeout": 30}
        defaults.update(settings)
        runtime = ClusterRuntime(ClusterSettings(**defaults))  # type: ignore[arg-type]
        runtime.connect(official_client(url))
        runtimes.append(runtime)
        return runtime

    yield make
    for runtime in runtimes:
        runtime.stop()

"""Fixtures: the test API server and our cluster state wired to it through the official client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

import pytest
from kubernetes import client as k8s

from app.cluster.runtime import ClusterRuntime, ClusterSettings
from app.kube.client import KubeClient
from app.lifecycle import Supervisor
from tests.support.apiserver import FakeAPIServer


def official_client(url: str) -> KubeClient:
    """Our KubeClient on the official client, configured for ``url`` (no credentials)."""
    cfg = k8s.Configuration()
    cfg.host = url
    return KubeClient(k8s.ApiClient(cfg))


def connect(runtime: ClusterRuntime, url: str) -> Supervisor:
    """Connect ``runtime`` to the test API server at ``url`` and start its workers, as ``serve``
    does; stop them with :func:`disconnect`."""
    supervisor = Supervisor()
    for worker in runtime.connect(official_client(url)):
        supervisor.add(worker)
    supervisor.start()
    return supervisor


def disconnect(runtime: ClusterRuntime, supervisor: Supervisor) -> None:
    """Stop ``runtime``'s workers (reverse order, bounded) and close its client."""
    asyncio.run(supervisor.stop(5.0))
    runtime.close()


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
    runtimes: list[tuple[ClusterRuntime, Supervisor]] = []

    def make(url: str, **settings: object) -> ClusterRuntime:
        defaults: dict[str, object] = {"backoff_initial": 0.05, "backoff_max": 0.2, "watch_timeout": 30}
        defaults.update(settings)
        runtime = ClusterRuntime(ClusterSettings(**defaults))  # type: ignore[arg-type]
        runtimes.append((runtime, connect(runtime, url)))
        return runtime

    yield make
    for runtime, supervisor in runtimes:
        disconnect(runtime, supervisor)

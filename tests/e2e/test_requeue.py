"""Re-queue assistance with the real server and the test API server: a pod the pool rejected on
every node is annotated (the update kube-scheduler's queue reacts to) once a slot is freed, and
not before."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.cluster.requeue import ANNOTATION
from tests.cluster.conftest import wait_for
from tests.conftest import Server
from tests.e2e.test_restart_and_takeover import POOL, config, pool_pods
from tests.e2e.test_stateful_server import IP, _args, _pool, populate
from tests.support.apiserver import FakeAPIServer, pod, running


@pytest.fixture
def api() -> Iterator[FakeAPIServer]:
    with running(populate) as server:
        yield server


def test_a_pod_rejected_by_the_pool_is_requeued_when_a_slot_frees(tmp_path: Path, api: FakeAPIServer) -> None:
    bound = pool_pods(api, "bound", 10)
    for p in bound:
        p["spec"]["nodeName"] = POOL
        api.put("pods", p)
    waiting = pod("waiting", "net", cpu="10m", memory="16Mi")
    waiting["spec"]["containers"][0]["resources"]["requests"][IP] = "1"
    waiting = api.put("pods", waiting)
    server = Server(config(tmp_path, api, "5s", 2.0))
    try:
        exhausted = {POOL: "pool underlay-ip exhausted: 10/10 in use"}
        wait_for(lambda: _pool(server, "filter", _args(waiting, [POOL])).json()["FailedNodes"] == exhausted)
        time.sleep(1.0)
        assert api.patches == []  # nothing was freed: no reason to retry it
        api.delete("pods", "net/bound-0")
        wait_for(lambda: bool(api.patches), timeout=5, what="the re-queue patch")
        key, annotations = api.patches[0]
        assert key == "net/waiting" and set(annotations) == {ANNOTATION}
        stored = api.pod("net", "waiting")
        assert stored is not None and ANNOTATION in stored["metadata"]["annotations"]
        assert _pool(server, "filter", _args(waiting, [POOL])).json()["NodeNames"] == [POOL]
    finally:
        server.stop()

"""Binds sent at once to a freshly started service, as kube-scheduler sends them when both start
together (issue 22's "no errors at start"), with the real server process and the test API server:
a profile whose Reserve guards no capacity (``examples/cluster.yaml``) has no warm-up and refuses
none; a profile with a pool (``examples/stateful.yaml``) waits out its warm-up inside the request
when ``httpTimeout`` leaves room (its 30 s do), so no bind is refused either."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import Server, cluster_config
from tests.e2e.test_restart_and_takeover import POOL, on_pool, pool_pods
from tests.e2e.test_stateful_server import _binding, populate
from tests.support.apiserver import FakeAPIServer, node, pod, running


async def bind_all(url: str, bodies: list[bytes]) -> list[str]:
    """POST every bind at once; the ``Error`` of each (every answer must be a 200)."""
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=100)) as client:
        answers = await asyncio.gather(*(client.post(f"{url}/bind", content=b) for b in bodies))
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    return [str(a.json()["Error"]) for a in answers]


def _binder_timeout(seconds: float) -> Callable[[Any], None]:
    """A :func:`cluster_config` edit: DefaultBinder's ``timeoutSeconds``."""

    def edit(doc: Any) -> None:
        for profile in doc["profiles"]:
            for pc in profile.get("pluginConfig", []):
                if pc["name"] == "DefaultBinder":
                    pc["args"]["timeoutSeconds"] = seconds

    return edit


def test_a_fresh_start_of_the_cluster_example_refuses_no_bind(tmp_path: Path) -> None:
    def nodes(api: FakeAPIServer) -> None:
        for i in range(4):
            api.put("nodes", node(f"n{i}", cpu="32", memory="64Gi", pods="110"))

    with running(nodes) as api:
        pods = [api.put("pods", pod(f"p{i}", "default", cpu="10m", memory="16Mi")) for i in range(60)]
        # the example's own 4 s bind timeout, not the tests' 1 s: this profile has no warm-up to
        # shorten, and 60 binds at once to the test API server can take over 1 s on a loaded machine
        config = cluster_config(tmp_path, api.kubeconfig(), edit=_binder_timeout(4))
        server = Server(config, wait_ready=False)  # only /healthz
        try:
            answers = asyncio.run(bind_all(server.url, [_binding(p, f"n{i % 4}") for i, p in enumerate(pods)]))
            assert answers == [""] * 60
            with api.lock:
                assert sum(bool(p["spec"].get("nodeName")) for p in api.objects["pods"].values()) == 60
            assert "warming up" not in server.log.read_text()
        finally:
            server.stop()


def test_a_pool_profile_waits_out_its_warm_up_inside_the_request(tmp_path: Path) -> None:
    with running(populate) as api:
        pods = pool_pods(api, "new", 10)
        server = Server(cluster_config(tmp_path, api.kubeconfig(), "stateful.yaml"), wait_ready=False)
        try:
            answers = asyncio.run(bind_all(server.url, [_binding(p, POOL) for p in pods]))
            assert answers == [""] * 10  # each waited for the warm-up (1 s bind deadline + 1 s), none refused
            assert sorted(on_pool(api)) == sorted(f"new-{i}" for i in range(10))
            more = pool_pods(api, "late", 1)  # the pool is full now: Reserve still refuses
            (late,) = asyncio.run(bind_all(server.url, [_binding(more[0], POOL)]))
            assert "NodeResourcePool: Reserve: pool underlay-ip exhausted: 10/10 in use" in late
        finally:
            server.stop()


def test_binds_sent_just_after_kube_scheduler_took_the_lease_are_not_refused(tmp_path: Path) -> None:
    """kube-scheduler schedules, and binds, as soon as it holds its Lease: the service, whose last
    read of the Lease (every ``retryPeriod``) still says another holder, reads it again at the
    first bind rather than refuse every bind until its next read (measured against the real
    kube-scheduler: at a start, every pod of the first 2 s refused, then retried with backoff)."""
    from tests.e2e.test_restart_and_takeover import role
    from tests.support.apiserver import lease

    def nodes(api: FakeAPIServer) -> None:
        for i in range(4):
            api.put("nodes", node(f"n{i}", cpu="32", memory="64Gi", pods="110"))
        api.put("leases", lease("cp-2_7f3a"))  # another node's kube-scheduler leads

    with running(nodes) as api:
        pods = [api.put("pods", pod(f"p{i}", "default", cpu="10m", memory="16Mi")) for i in range(20)]
        election = {"identity": "cp-1", "retryPeriod": "60s"}  # no periodic read during the test
        server = Server(cluster_config(tmp_path, api.kubeconfig(), leaderElection=election), wait_ready=False)
        try:
            deadline = time.monotonic() + 20
            while role(server) != "standby" and time.monotonic() < deadline:
                time.sleep(0.05)
            assert role(server) == "standby"
            (refused,) = asyncio.run(bind_all(server.url, [_binding(pods[0], "n0")]))
            assert refused.startswith("this extender's kube-scheduler (cp-1) does not hold the Lease"), refused
            api.put("leases", lease("cp-1_91bc"))  # this node's kube-scheduler takes over, binds at once
            started = time.monotonic()
            answers = asyncio.run(bind_all(server.url, [_binding(p, f"n{i % 4}") for i, p in enumerate(pods)]))
            assert answers == [""] * 20
            assert time.monotonic() - started < 10  # a read of the Lease, not the next retryPeriod
            assert role(server) == "leader"
            with api.lock:
                assert sum(bool(p["spec"].get("nodeName")) for p in api.objects["pods"].values()) == 20
        finally:
            server.stop()

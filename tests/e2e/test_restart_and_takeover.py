"""Reservations that survive a restart and a change of leader, with the real server processes and
the test API server: a 10-slot underlay-IP pool on one node (examples/stateful.yaml) is never
over-committed, whether the extender is SIGKILLed with Bindings in flight and restarted at once,
or the leader's extender dies during a burst of binds and another replica takes over."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cluster.conftest import wait_for
from tests.conftest import Server, cluster_config
from tests.e2e.test_stateful_server import IP, _binding, populate
from tests.support.apiserver import FakeAPIServer, lease, pod, running

POOL = "pool-node"


def pool_pods(api: FakeAPIServer, prefix: str, count: int) -> list[dict[str, Any]]:
    pods = []
    for i in range(count):
        p = pod(f"{prefix}-{i}", "net", cpu="10m", memory="16Mi")
        p["spec"]["containers"][0]["resources"]["requests"][IP] = "1"
        pods.append(api.put("pods", p))
    return pods


def on_pool(api: FakeAPIServer) -> list[str]:
    with api.lock:
        return [p["metadata"]["name"] for p in api.objects["pods"].values() if p["spec"].get("nodeName") == POOL]


def config(tmp: Path, api: FakeAPIServer, http_timeout: str, bind_timeout: float, **cluster: Any) -> Path:
    def edit(doc: Any) -> None:
        profile = doc["profiles"][0]
        profile["extender"]["httpTimeout"] = http_timeout
        for pc in profile["pluginConfig"]:
            if pc["name"] == "DefaultBinder":
                pc["args"] = {"timeoutSeconds": bind_timeout}
            if pc["name"] == "Coscheduling":
                pc["args"] = {"permitWaitingTimeSeconds": 1}

    return cluster_config(tmp, api.kubeconfig(), "stateful.yaml", edit, **cluster)


async def post_binds(url: str, bodies: list[bytes], timeout: float = 30) -> list[str]:
    """Every bind at once, as kube-scheduler's binding goroutines send them; each ``Error`` (or the
    transport failure when the server died)."""
    async with httpx.AsyncClient(timeout=timeout, limits=httpx.Limits(max_connections=100)) as client:

        async def one(body: bytes) -> str:
            try:
                r = await client.post(f"{url}/bind", content=body)
                return str(r.json()["Error"])
            except httpx.HTTPError as exc:
                return f"transport: {type(exc).__name__}"

        return list(await asyncio.gather(*(one(b) for b in bodies)))


def retry_until(url: str, bodies: list[bytes], deadline: float, done: Callable[[str], bool]) -> list[str]:
    """Re-send each bind whose answer is not ``done`` every 0.5 s until ``deadline`` (monotonic), as
    kube-scheduler retries a pod after a failed binding cycle (with backoff); the last answers."""
    answers = [""] * len(bodies)
    pending = list(range(len(bodies)))
    while pending and time.monotonic() < deadline:
        results = asyncio.run(post_binds(url, [bodies[i] for i in pending]))
        for i, answer in zip(pending, results, strict=True):
            answers[i] = answer
        pending = [i for i in pending if not done(answers[i])]
        if pending:
            time.sleep(0.5)
    return answers


@pytest.fixture
def api() -> Iterator[FakeAPIServer]:
    with running(populate) as server:
        yield server


@pytest.mark.slow
def test_sigkill_with_binds_in_flight_and_restart_never_overcommits(tmp_path: Path, api: FakeAPIServer) -> None:
    """Issue 12's scenario: Bindings take 6 s at the API server, the extender is SIGKILLed with 10
    in flight and restarted at once, and 10 new pods are bound: at most 10 pods on 10 slots."""
    path = config(tmp_path, api, "9s", 7.0)
    first = Server(path)
    old, new = pool_pods(api, "old", 10), pool_pods(api, "new", 10)
    api.binding_delay = 6.0
    burst = threading.Thread(target=asyncio.run, args=(post_binds(first.url, [_binding(p, POOL) for p in old]),))
    burst.start()
    wait_for(lambda: len(api.requests) and sum("binding" in r for r in api.requests) >= 10, what="binds in flight")
    first.proc.kill()  # SIGKILL: the ledger is gone, the 10 Bindings still land
    first.stop()
    second = Server(path, wait_ready=False)
    try:
        started = time.monotonic()
        bodies = [_binding(p, POOL) for p in new]
        first_answers = asyncio.run(post_binds(second.url, bodies))
        # refused while the restarted process waits out the dead one's bind deadline (warming up,
        # or not synced yet); on a loaded machine its start may take longer than that deadline, and
        # then the dead process's Bindings have landed and the pool refuses them: never a bind
        waiting = ("warming up", "has not synced", "pool underlay-ip exhausted: 10/10 in use")
        assert all(a and any(w in a for w in waiting) for a in first_answers), first_answers
        answers = retry_until(second.url, bodies, started + 25, lambda a: a == "" or "pool underlay-ip exhausted" in a)
        assert sorted(on_pool(api)) == sorted(f"old-{i}" for i in range(10))  # the dead process's Bindings
        assert all("NodeResourcePool: Reserve: pool underlay-ip exhausted: 10/10 in use" in a for a in answers), answers
    finally:
        burst.join(30)
        second.stop()
    assert len(on_pool(api)) == 10


def renew(api: FakeAPIServer, holder: list[str], stop: threading.Event) -> None:
    """kube-scheduler's leader election: the holder renews the Lease every second."""
    while not stop.is_set():
        if holder[0]:
            api.put("leases", lease(holder[0]))
        stop.wait(1.0)


def role(server: Server) -> str:
    try:
        return str(httpx.get(f"{server.url}/readyz", timeout=2).json().get("role"))
    except httpx.HTTPError:
        return "down"


def is_leader(server: Server) -> str:
    """``scheduler_extender_is_leader`` and ``..._takeovers_total`` of kube-scheduler's Lease."""
    text = httpx.get(f"{server.url}/metrics", timeout=5).text
    wanted = (
        'scheduler_extender_is_leader{lease="kube-system/kube-scheduler"} ',
        'scheduler_extender_takeovers_total{lease="kube-system/kube-scheduler"} ',
    )
    return " ".join(line.split()[-1] for w in wanted for line in text.splitlines() if line.startswith(w))


@pytest.mark.slow
def test_leader_killed_during_a_burst_a_standby_takes_over(tmp_path: Path, api: FakeAPIServer) -> None:
    holder, stop = ["cp-0_5b1e"], threading.Event()
    renewer = threading.Thread(target=renew, args=(api, holder, stop), daemon=True)
    renewer.start()
    replicas = []
    try:
        for i in range(3):
            (tmp_path / f"r{i}").mkdir()
            election = {"identity": f"cp-{i}", "retryPeriod": "500ms"}
            path = config(tmp_path / f"r{i}", api, "5s", 2.0, leaderElection=election)
            replicas.append(Server(path, wait_ready=False))
        for r in replicas:
            wait_for(lambda r=r: role(r) in ("leader", "standby"), timeout=20, what="a settled role")  # type: ignore[misc]
        assert [role(r) for r in replicas] == ["leader", "standby", "standby"]
        # the metrics say the same: only the replica whose kube-scheduler holds the Lease leads
        assert [is_leader(r) for r in replicas] == ["1.0 1.0", "0.0 0.0", "0.0 0.0"]
        leases = httpx.get(f"{replicas[1].url}/readyz", timeout=2).json()["leases"]
        assert leases == {"kube-system/kube-scheduler": {"holder": "cp-0_5b1e", "role": "standby"}}
        pods = pool_pods(api, "burst", 30)
        bodies = [_binding(p, POOL) for p in pods]
        # a standby binds nothing: its kube-scheduler is not the one scheduling
        refused = asyncio.run(post_binds(replicas[2].url, bodies[:1]))
        assert refused[0].startswith("this extender's kube-scheduler (cp-2) does not hold the Lease"), refused
        api.binding_delay = 0.3
        burst = threading.Thread(target=asyncio.run, args=(post_binds(replicas[0].url, bodies[:15]),))
        burst.start()
        time.sleep(0.4)
        replicas[0].proc.kill()  # the leader's extender and its kube-scheduler die
        killed = time.monotonic()
        holder[0] = ""  # nobody renews; the next kube-scheduler acquires the Lease
        api.put("leases", lease("cp-1_c0de"))
        holder[0] = "cp-1_c0de"
        wait_for(lambda: role(replicas[1]) in ("leader (warming up)", "leader"), timeout=20, what="takeover")
        assert time.monotonic() - killed <= 15 + 5  # leaseDuration + 5 s
        assert role(replicas[2]) == "standby"
        assert [is_leader(r) for r in replicas[1:]] == ["1.0 1.0", "0.0 0.0"]  # a takeover counted
        answers = retry_until(
            replicas[1].url, bodies, time.monotonic() + 20, lambda a: a == "" or "pool underlay-ip exhausted" in a
        )
        burst.join(30)
        bound = on_pool(api)
        assert len(bound) == 10, bound  # the pool is full, never over-committed
        assert len(set(bound)) == len(bound)
        assert sum(a == "" for a in answers) <= 10
        succeeded = [b for b in api.bindings if b["target"]["name"] == POOL]
        names = [b["metadata"]["name"] for b in succeeded if b["metadata"]["name"] in bound]
        assert set(names) == set(bound)
    finally:
        stop.set()
        for r in replicas:
            r.stop()

"""Bindings created on the event loop (app/kube/aio.py): over mutual TLS with the bearer token
against the test API server as against a kubeadm cluster, the API server's refusals as
``APIError`` s, the pool's bound, the deadline, and a Binding replayed once when the API server
closed a reused connection without answering."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.kube.aio import AsyncBindingClient, binding_client
from app.kube.client import KubeClient, load_client
from app.kube.errors import APIError
from tests.support.apiserver import TLS, FakeAPIServer, node, pod


@pytest.fixture
def https() -> Iterator[FakeAPIServer]:
    server = FakeAPIServer().start(tls=TLS.issue())
    server.put("nodes", node("n1"))
    for i in range(20):
        server.put("pods", pod(f"p{i}", "default"))
    yield server
    server.stop()


def bindings_for(tmp_path: Path, kubeconfig: str, pool_size: int = 16) -> AsyncBindingClient:
    path = tmp_path / "kubeconfig"
    path.write_text(kubeconfig)
    client = KubeClient(load_client(str(path)).api_client)
    made = binding_client(client.configuration, client.auth, pool_size, client.api_client.default_headers)
    assert made is not None
    return made


def uid(api: FakeAPIServer, name: str) -> str:
    found = api.pod("default", name)
    assert found is not None
    return str(found["metadata"]["uid"])


async def bind(client: AsyncBindingClient, api: FakeAPIServer, name: str, seconds: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    await client.create_binding("default", name, uid(api, name), "n1", deadline)


def test_binds_over_mutual_tls_with_the_token(https: FakeAPIServer, tmp_path: Path) -> None:
    client = bindings_for(tmp_path, https.kubeconfig())

    async def main() -> None:
        await bind(client, https, "p0")
        await bind(client, https, "p1")  # the same connection, kept alive
        client.close()

    asyncio.run(main())
    assert [b["metadata"]["name"] for b in https.bindings] == ["p0", "p1"]
    assert https.bindings[0] == {
        "kind": "Binding",
        "apiVersion": "v1",
        "metadata": {"name": "p0", "namespace": "default", "uid": uid(https, "p0")},
        "target": {"kind": "Node", "name": "n1"},
    }
    assert set(https.authorizations) == {"Bearer test-token"}
    bound = https.pod("default", "p0")
    assert bound is not None and bound["spec"]["nodeName"] == "n1"


def test_an_unknown_ca_and_a_missing_client_certificate_are_refused(https: FakeAPIServer, tmp_path: Path) -> None:
    other = TLS.issue()  # a CA the server's certificate does not chain to
    assert https.tls is not None
    unknown_ca = bindings_for(tmp_path, https.kubeconfig().replace(https.tls.ca_data, other.ca_data))
    with pytest.raises(APIError) as err:
        asyncio.run(bind(unknown_ca, https, "p0"))
    assert err.value.status == 0 and not err.value.timed_out
    assert "CERTIFICATE_VERIFY_FAILED" in str(err.value)

    text = "".join(line + "\n" for line in https.kubeconfig().splitlines() if "client-" not in line)
    anonymous = bindings_for(tmp_path, text)
    with pytest.raises(APIError) as err:
        asyncio.run(bind(anonymous, https, "p0"))
    assert err.value.status == 0
    assert https.bindings == []


def test_a_refusal_carries_the_api_servers_status(https: FakeAPIServer, tmp_path: Path) -> None:
    client = bindings_for(tmp_path, https.kubeconfig())

    async def main() -> None:
        loop = asyncio.get_running_loop()
        await client.create_binding("default", "p0", "not-the-uid", "n1", loop.time() + 5)

    with pytest.raises(APIError) as err:
        asyncio.run(main())
    assert (err.value.status, err.value.reason) == (409, "Conflict")
    assert "UID in precondition" in err.value.message


def test_many_bindings_share_at_most_pool_size_connections(https: FakeAPIServer, tmp_path: Path) -> None:
    client = bindings_for(tmp_path, https.kubeconfig(), pool_size=2)
    https.binding_delay = 0.02  # each answer takes a while: callers queue for the two connections
    peers: set[int] = set()

    async def main() -> None:
        await asyncio.gather(*(bind(client, https, f"p{i}") for i in range(20)))
        for conn in client._idle:
            assert conn.transport is not None
            peers.add(conn.transport.get_extra_info("sockname")[1])
        client.close()

    asyncio.run(main())
    assert sorted(b["metadata"]["name"] for b in https.bindings) == sorted(f"p{i}" for i in range(20))
    assert len(peers) == 2  # both connections came back to the pool, and no third was opened


def test_callers_waiting_for_a_connection_are_served_in_arrival_order(https: FakeAPIServer, tmp_path: Path) -> None:
    """A released connection goes to the longest waiting caller, not to the caller that asks next
    (the one that just released it, here): no Binding waits behind later ones."""
    client = bindings_for(tmp_path, https.kubeconfig(), pool_size=1)
    https.binding_delay = 0.02

    async def first_then_another() -> None:
        await bind(client, https, "p0")
        await bind(client, https, "p5")  # asks at once, after p1..p4 began waiting

    async def main() -> None:
        first = asyncio.create_task(first_then_another())
        await asyncio.sleep(0)  # p0 takes the one connection
        waiting = []
        for i in range(1, 5):
            waiting.append(asyncio.create_task(bind(client, https, f"p{i}")))
            await asyncio.sleep(0)
        await asyncio.gather(first, *waiting)
        client.close()

    asyncio.run(main())
    assert [b["metadata"]["name"] for b in https.bindings] == ["p0", "p1", "p2", "p3", "p4", "p5"]


def test_a_connection_that_closes_after_it_was_handed_over_still_serves_the_waiting_caller(
    https: FakeAPIServer, tmp_path: Path
) -> None:
    """The API server closes the one connection between its release to a waiting caller and that
    caller's turn: the caller opens a new one in its place, rather than waiting with a free place
    nobody takes (every Binding would then wait out its deadline)."""
    client = bindings_for(tmp_path, https.kubeconfig(), pool_size=1)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        held = await client._acquire(loop)  # the pool's one connection
        waiting = [asyncio.create_task(bind(client, https, f"p{i}", seconds=2)) for i in (1, 2)]
        await asyncio.sleep(0.05)  # p1, then p2, wait for it
        client._release(held)  # handed to p1 ...
        held.close()  # ... and closed before p1 runs
        await asyncio.gather(*waiting)
        await bind(client, https, "p3", seconds=2)  # and the pool still serves
        client.close()

    asyncio.run(main())
    assert [b["metadata"]["name"] for b in https.bindings] == ["p1", "p2", "p3"]


def test_past_the_deadline_a_timeout_and_the_connection_serves_again_once_the_late_answer_is_read(
    https: FakeAPIServer, tmp_path: Path
) -> None:
    """A Binding past its caller's deadline keeps its connection until the late answer is read:
    no new connection, and TLS handshake, for each Binding an overloaded API server answers late;
    the late answer is never read as the next caller's."""
    client = bindings_for(tmp_path, https.kubeconfig(), pool_size=1)
    peers: list[int] = []

    async def main() -> None:
        await bind(client, https, "p2")  # the connection is open: p0's deadline runs out on its answer alone
        https.binding_delay = 0.5
        with pytest.raises(TimeoutError):
            await bind(client, https, "p0", seconds=0.1)
        https.binding_delay = 0.0
        # the one place is taken until p0's late answer is read; then p1 goes on the same connection
        await bind(client, https, "p1")
        for conn in client._idle:
            assert conn.transport is not None
            peers.append(conn.transport.get_extra_info("sockname")[1])
        assert client._open == 1
        client.close()

    asyncio.run(main())
    assert len(peers) == 1
    assert [b["metadata"]["name"] for b in https.bindings] == ["p2", "p0", "p1"]  # p1 after p0's late answer


def test_a_late_answer_that_never_comes_closes_the_connection(https: FakeAPIServer, tmp_path: Path) -> None:
    import app.kube.aio as aio

    client = bindings_for(tmp_path, https.kubeconfig(), pool_size=1)
    drain, aio.DRAIN_SECONDS = aio.DRAIN_SECONDS, 0.2
    try:

        async def main() -> None:
            https.binding_delay = 3.0  # longer than the drain: the connection is closed, its place freed
            with pytest.raises(TimeoutError):
                await bind(client, https, "p0", seconds=0.1)
            https.binding_delay = 0.0
            started = asyncio.get_running_loop().time()
            await bind(client, https, "p1")
            assert asyncio.get_running_loop().time() - started < 2.0
            client.close()

        asyncio.run(main())
    finally:
        aio.DRAIN_SECONDS = drain


def test_a_reused_connection_closed_without_an_answer_is_replayed_once(tmp_path: Path) -> None:
    """The API server closes a kept-alive connection as the second Binding arrives (its idle
    timeout racing the request): the Binding is sent again on a new connection, once."""
    api = FakeAPIServer()  # only for its kubeconfig's shape; the server here is a raw one
    requests: list[tuple[int, bytes]] = []
    answer = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"

    async def main() -> None:
        connections = 0

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal connections
            connections += 1
            me = connections
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ", 1)[1].split(b"\r\n", 1)[0])
                body = await reader.readexactly(length)
                requests.append((me, body))
                if me == 1 and len(requests) == 2:
                    writer.close()  # the second request on the first connection: closed, unanswered
                    return
                writer.write(answer)
                await writer.drain()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        path = tmp_path / "kubeconfig"
        path.write_text(api.kubeconfig().replace(f"http://127.0.0.1:{api.port}", f"http://127.0.0.1:{port}"))
        kube = KubeClient(load_client(str(path)).api_client)
        client = binding_client(kube.configuration, kube.auth, 4, {})
        assert client is not None
        loop = asyncio.get_running_loop()
        await client.create_binding("default", "a", "uid-a", "n1", loop.time() + 5)
        await client.create_binding("default", "b", "uid-b", "n1", loop.time() + 5)
        client.close()
        server.close()
        await server.wait_closed()

    asyncio.run(main())
    names = [(conn, json.loads(body)["metadata"]["name"]) for conn, body in requests]
    assert names == [(1, "a"), (1, "b"), (2, "b")]


def test_a_proxy_leaves_the_bindings_to_the_urllib3_pool(tmp_path: Path) -> None:
    api = FakeAPIServer()
    path = tmp_path / "kubeconfig"
    path.write_text(api.kubeconfig())
    kube = KubeClient(load_client(str(path)).api_client)
    kube.configuration.proxy = "http://proxy.example:3128"
    assert binding_client(kube.configuration, kube.auth, 4, {}) is None


def test_bindings_in_flight_are_bounded_by_bind_connections_not_api_workers(
    https: FakeAPIServer, tmp_path: Path
) -> None:
    """kube-scheduler starts every pod's binding cycle at once: with a real kube-apiserver taking
    tens of ms per Binding, 16 connections (``apiWorkers``) made binds wait a second in line."""
    from app.cluster.connection import POOL_EXTRA, ClusterConnection, ClusterSettings
    from app.framework.types import PodInfo

    path = tmp_path / "kubeconfig"
    path.write_text(https.kubeconfig())
    cluster = ClusterConnection(ClusterSettings(kubeconfig=str(path), api_workers=2, bind_connections=20))
    cluster.connect()  # the workers are not started: only the clients matter here
    try:
        assert cluster.client is not None and cluster._bindings is not None
        # urllib3's pool holds a connection for each thread that may call at once, not only the API workers'
        pool_kw = cluster.client.api_client.rest_client.pool_manager.connection_pool_kw
        assert pool_kw["maxsize"] == 2 + POOL_EXTRA
        https.binding_delay = 0.3  # all 20 in flight together: 20 connections
        pods = [https.pod("default", f"p{i}") for i in range(20)]

        async def main() -> list[str]:
            infos = [PodInfo.placeholder("default", p["metadata"]["name"], p["metadata"]["uid"]) for p in pods if p]
            statuses = await asyncio.gather(*(cluster.bind(info, "n1", 5.0) for info in infos))
            assert cluster._bindings is not None
            opened = cluster._bindings._open
            cluster._bindings.close()
            return [s.message for s in statuses] + [str(opened)]

        *messages, opened = asyncio.run(main())
        assert messages == [""] * 20 and opened == "20"
        assert len(https.bindings) == 20
    finally:
        cluster.close()

"""The API transport over TLS, as against a kubeadm cluster: the test API server on HTTPS requiring
a client certificate its CA signed, and a kubeconfig with the CA and the client certificate inline
and a bearer token. The client must verify the server, present the certificate and send the token
on lists, Bindings and writes alike (they go through the official client's configured pool, not its
generated API classes)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.cluster.cache import Cache
from app.cluster.reflector import Reflector, cache_store
from app.kube.client import KubeClient, binding_body, load_client
from app.kube.errors import APIError
from tests.support.apiserver import TLS, FakeAPIServer, node, pod


@pytest.fixture
def https() -> Iterator[FakeAPIServer]:
    server = FakeAPIServer().start(tls=TLS.issue())
    server.put("nodes", node("n1"))
    server.put("pods", pod("p1", "default"))
    yield server
    server.stop()


def client_for(tmp_path: Path, kubeconfig: str) -> KubeClient:
    path = tmp_path / "kubeconfig"
    path.write_text(kubeconfig)
    return KubeClient(load_client(str(path)).api_client)


def test_lists_binds_and_writes_over_mutual_tls_with_the_token(https: FakeAPIServer, tmp_path: Path) -> None:
    client = client_for(tmp_path, https.kubeconfig())
    assert https.url.startswith("https://")
    assert b'"n1"' in client.list("nodes", 10, None, 5)
    uid = json.loads(client.get_pod("default", "p1", 5))["metadata"]["uid"]
    client.create_binding("default", "p1", uid, "n1", 5)
    assert json.loads(client.get_pod("default", "p1", 5))["spec"]["nodeName"] == "n1"
    assert client.get_lease("kube-system", "nobody", 5) is None
    client.set_nominated_node("default", "p1", "n1")
    assert set(https.authorizations) == {"Bearer test-token"}
    client.close()


def test_an_unknown_ca_is_refused(https: FakeAPIServer, tmp_path: Path) -> None:
    other = TLS.issue()  # a CA the server's certificate does not chain to
    client = client_for(tmp_path, https.kubeconfig().replace(https.tls.ca_data, other.ca_data))  # type: ignore[union-attr]
    with pytest.raises(APIError) as err:
        client.create_binding("default", "p1", "u", "n1", 5)
    assert err.value.status == 0 and not err.value.timed_out
    assert "CERTIFICATE_VERIFY_FAILED" in str(err.value)
    assert https.bindings == []


def test_without_a_client_certificate_the_server_refuses(https: FakeAPIServer, tmp_path: Path) -> None:
    text = "".join(line + "\n" for line in https.kubeconfig().splitlines() if "client-" not in line)
    with pytest.raises(APIError) as err:
        client_for(tmp_path, text).create_binding("default", "p1", "u", "n1", 5)
    assert err.value.status == 0
    assert https.bindings == []


def test_a_refusal_carries_the_api_servers_status(https: FakeAPIServer, tmp_path: Path) -> None:
    client = client_for(tmp_path, https.kubeconfig())
    with pytest.raises(APIError) as err:
        client.create_binding("default", "p1", "not-the-uid", "n1", 5)
    assert (err.value.status, err.value.reason) == (409, "Conflict")
    assert "UID" in err.value.message


def test_the_binding_body_is_kube_schedulers_with_escaped_strings() -> None:
    assert binding_body("ns", 'we"ird', "u-1", "node-é") == (
        b'{"kind":"Binding","apiVersion":"v1","metadata":{"name":"we\\"ird","namespace":"ns","uid":"u-1"},'
        b'"target":{"kind":"Node","name":"node-\xc3\xa9"}}'
    )


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_stopping_a_reflector_interrupts_an_idle_watch(tmp_path: Path, tls: bool) -> None:
    """kube-apiserver may send nothing on a watch for minutes: ``Reflector.stop`` shuts the socket
    down so the blocked read returns at once (closing the stream would wait for that read)."""
    server = FakeAPIServer(bookmark_interval=3600.0).start(tls=TLS.issue() if tls else None)
    server.put("nodes", node("n1"))
    client = client_for(tmp_path, server.kubeconfig())
    cache = Cache()
    reflector = Reflector("nodes", client, cache_store("nodes", cache), watch_timeout=300)
    reflector.start()
    try:
        deadline = time.monotonic() + 10
        while not server.watchers and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.watchers, "the watch never opened"
        time.sleep(0.3)  # the reflector's thread is now blocked reading the idle stream
        started = time.monotonic()
        reflector.stop()
        assert time.monotonic() - started < 0.5, "stop() blocked"
        assert asyncio.run(reflector.join(2.0)), "the reflector's thread did not end"
    finally:
        reflector.stop()
        client.close()
        server.stop()

"""The request path under hostile and broken clients, against the real server process.

Each reproducer of issue 11 is here: deep nesting, a preempt body that used to hold the event loop
for 20 s, floods of tiny values, invalid UTF-8 in an echoed node, idle, slow and short
connections, connection and in-flight caps, unbounded metric labels, and shutdown with a request
in flight. Client-side timeouts bound how long a request may take (a hang fails the test); no test
measures speed.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.extender.codec import DENSE_CHECK_BYTES
from tests.conftest import Server
from tests.support.bodies import fixture, fixture_bytes

FILTER_KEYS = {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}


def write_config(tmp: Path, **server: Any) -> Path:
    """The embedded default's profile, plus a ``chaos`` profile for NodeNames, with ``server``."""
    doc = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "server": {"defaultProfile": "default", **server},
        "profiles": [
            {
                "name": "default",
                "extender": {"verbs": ["filter", "prioritize", "preempt"]},
                "plugins": {
                    "filter": [{"name": "AnnotationNodeAffinity"}],
                    "score": [{"name": "NodeResourcesAllocatable"}],
                },
            },
            {
                "name": "chaos",
                "extender": {"verbs": ["filter", "prioritize", "preempt"], "nodeCacheCapable": True},
                "plugins": {"filter": [{"name": "CoinFlip"}], "score": [{"name": "DiceRoll"}]},
            },
        ],
    }
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("hardening")
    s = Server(
        write_config(
            tmp,
            maxRequestBytes=32 * 1024 * 1024,
            maxConnections=8,
            maxRequestsInFlight=4,
            limits={"maxNodes": 1000, "maxVictimsPerNode": 100, "maxVictims": 500},
            timeouts={"header": "1s", "body": "1s", "idle": "2s", "shutdown": "1s"},
        )
    )
    yield s
    s.stop()


def post(server: Server, path: str, body: bytes, timeout: float = 10) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", content=body, timeout=timeout)


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


# -- bounded work -----------------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["filter", "prioritize", "preempt"])
@pytest.mark.parametrize(
    "template",
    [
        b'{"Pod":%s,"Nodes":null,"NodeNames":["a"]}',  # where a pod is expected
        b'{"Pod":{"metadata":{"name":"p"},"x":%s},"Nodes":null,"NodeNames":["a"]}',  # a field nobody reads
        b'{"pod":{"metadata":{"name":"p"},"x":%s},"nodes":null,"nodeNames":["a"]}',  # the folding path
    ],
)
def test_deep_nesting_is_a_400_naming_the_limit(server: Server, verb: str, template: bytes) -> None:
    r = post(server, f"/chaos/{verb}", template % nested(5000))
    assert r.status_code == 400, r.text
    assert "nests JSON values deeper than the decoder allows" in r.json()["Error"]
    assert "RecursionError" not in r.text


def test_a_deep_bind_body_to_a_profile_without_binder_is_not_read(server: Server) -> None:
    # no profile serves bind here: the request is answered before its body is read (bind's own
    # decoder refuses the nesting: tests/unit/test_codec.py)
    r = post(server, "/bind", b'{"PodName":' + nested(5000) + b"}")
    assert r.status_code == 200 and "no binder is configured" in r.json()["Error"]


def test_victim_flood_is_refused_by_the_per_node_cap(server: Server) -> None:
    """Issue 11's reproducer: 20,000 empty victims held the event loop for about 20 s."""
    body = (
        b'{"Pod":{},"NodeNameToMetaVictims":null,"NodeNameToVictims":{"n":{"Pods":['
        + b",".join([b"{}"] * 20_000)
        + b"]}}}"
    )
    r = post(server, "/preempt", body, timeout=5)
    assert r.status_code == 400
    assert r.json()["Error"] == (
        "NodeNameToVictims[n].Pods has 20000 entries, more than server.limits.maxVictimsPerNode (100)"
    )
    assert r.json()["NodeNameToMetaVictims"] is None


def test_lower_cased_victims_are_folded_and_capped(server: Server) -> None:
    """Lower-cased victims take the Go folding path (one plan per type, not per victim) and count
    against maxVictims like exact ones."""
    pods = [{"metadata": {"name": f"v{i}", "uid": f"u-{i}"}} for i in range(100)]
    doc = {"pod": {"metadata": {"name": "p"}}, "nodenametovictims": {f"n{j}": {"pods": pods} for j in range(5)}}
    r = post(server, "/preempt", json.dumps(doc).encode(), timeout=5)
    assert r.status_code == 200, r.text
    assert [p["UID"] for p in r.json()["NodeNameToMetaVictims"]["n3"]["Pods"]] == [f"u-{i}" for i in range(100)]
    doc["nodenametovictims"]["n5"] = {"pods": pods[:1]}  # 501 victims in all
    r = post(server, "/preempt", json.dumps(doc).encode(), timeout=5)
    assert r.status_code == 400
    assert "more than server.limits.maxVictims (500)" in r.json()["Error"]


def test_millions_of_victims_are_refused_before_decoding(server: Server) -> None:
    body = b'{"Pod":{},"NodeNameToVictims":{"n":{"Pods":[' + b",".join([b"{}"] * 2_000_000) + b"]}}}"
    assert len(body) >= DENSE_CHECK_BYTES
    r = post(server, "/preempt", body, timeout=5)
    assert r.status_code == 400
    assert "more than server.limits.maxNodes (1000) allows" in r.json()["Error"]


def test_node_name_flood_is_refused(server: Server) -> None:
    names = b",".join(b'"n%d"' % i for i in range(400_000))
    r = post(server, "/chaos/filter", b'{"Pod":{},"Nodes":null,"NodeNames":[' + names + b"]}", timeout=5)
    assert r.status_code == 400
    assert "server.limits.maxNodes (1000)" in r.json()["Error"]
    assert set(r.json()) == FILTER_KEYS


def test_node_count_over_the_cap(server: Server) -> None:
    names = json.dumps([f"node-{i}" for i in range(1001)]).encode()
    r = post(server, "/chaos/filter", b'{"Pod":{},"Nodes":null,"NodeNames":' + names + b"}")
    assert r.status_code == 400
    assert r.json()["Error"] == "NodeNames has 1001 entries, more than server.limits.maxNodes (1000)"
    doc = fixture("extenderargs_nocache_n10.json")
    doc["Nodes"]["items"] = doc["Nodes"]["items"] * 101
    r = post(server, "/filter", json.dumps(doc).encode())
    assert r.status_code == 400
    assert r.json()["Error"] == "Nodes.items has 1010 entries, more than server.limits.maxNodes (1000)"


def test_invalid_utf8_in_a_node_is_a_400_never_echoed(server: Server) -> None:
    body = fixture_bytes("extenderargs_nocache_n10.json")
    marker = b'"kubernetes.io/os":"linux"'
    assert marker in body
    bad = body.replace(marker, b'"kubernetes.io/os":"lin\xffux"', 1)
    r = post(server, "/filter", bad)
    assert r.status_code == 400
    assert r.json()["Error"].startswith("request body is not valid UTF-8 (byte offset ")
    assert b"\xff" not in r.content and b"lin" not in r.content
    assert post(server, "/filter", body).status_code == 200  # the same body, valid: echoed


# -- connections, timeouts and caps -----------------------------------------------------------------


def connect(server: Server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return sock


def read_all(sock: socket.socket) -> bytes:
    """Everything until the server closes the connection (a timeout fails the test)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_idle_connection_is_closed(server: Server) -> None:
    sock = connect(server)
    assert read_all(sock) == b""  # closed by the server after idle (2s), before our 10 s timeout


def test_blank_lines_do_not_keep_a_connection_open(server: Server) -> None:
    """Bytes that begin no request (httptools skips blank lines) do not extend the idle time."""
    sock = connect(server)
    deadline = time.monotonic() + 8
    try:
        while time.monotonic() < deadline:
            sock.sendall(b"\r\n")
            time.sleep(0.3)
    except OSError:
        return  # closed by the server
    pytest.fail("a connection sending only blank lines stayed open past the idle timeout (2s)")


def test_slow_headers_get_408_and_close(server: Server) -> None:
    sock = connect(server)
    sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\n")
    reply = read_all(sock)
    assert reply.startswith(b"HTTP/1.1 408 ")
    assert b"server.timeouts.header" in reply


def test_short_body_gets_408_in_the_verb_type_and_close(server: Server) -> None:
    sock = connect(server)
    sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b'{"Pod":')
    reply = read_all(sock)
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ")
    assert b"connection: close" in head.lower()
    result = json.loads(body)
    assert set(result) == FILTER_KEYS
    assert result["Error"] == "the request body did not arrive within server.timeouts.body (1s)"


def test_connections_past_the_cap_get_503_with_retry_after(server: Server) -> None:
    held = [connect(server) for _ in range(8)]
    try:
        time.sleep(0.2)
        r = post(server, "/filter", fixture_bytes("extenderargs_nocache_n10.json"))
        assert r.status_code == 503
        assert r.headers["retry-after"] == "1"
        assert set(r.json()) == FILTER_KEYS and r.json()["Error"] == "too many connections: retry later"
        assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200  # probes still pass
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.2)
    assert post(server, "/filter", fixture_bytes("extenderargs_nocache_n10.json")).status_code == 200
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'scheduler_extender_overload_total{reason="connections"}' in metrics


def test_requests_past_the_in_flight_cap_get_503(server: Server) -> None:
    partial = b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"
    held = [connect(server) for _ in range(4)]
    try:
        for sock in held:
            sock.sendall(partial)  # four requests in flight, their bodies unfinished
        time.sleep(0.2)
        r = post(server, "/filter", fixture_bytes("extenderargs_nocache_n10.json"))
        assert r.status_code == 503 and r.headers["retry-after"] == "1"
        assert r.json()["Error"] == "too many requests in flight: retry later"
    finally:
        for sock in held:
            sock.close()


def test_bodies_past_the_in_flight_bytes_get_503(tmp_path: Path) -> None:
    s = Server(write_config(tmp_path, maxRequestBytes=3 * 1024 * 1024))
    try:
        sock = connect(s)
        sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n{")
        time.sleep(0.2)
        body = b'{"Pod":{},"Nodes":null,"NodeNames":["a"]}'
        r = post(s, "/chaos/filter", body + b" " * (2 * 1024 * 1024))
        assert r.status_code == 503 and r.headers["retry-after"] == "1"
        assert "server.maxInFlightBytes (3145728 bytes)" in r.json()["Error"]
        assert post(s, "/chaos/filter", body).status_code == 200  # small bodies always pass
        sock.close()
        time.sleep(0.2)
        assert post(s, "/chaos/filter", body + b" " * (2 * 1024 * 1024)).status_code == 200
    finally:
        s.stop()


def test_sigterm_with_a_request_in_flight_exits_within_the_bound(tmp_path: Path) -> None:
    s = Server(write_config(tmp_path, timeouts={"shutdown": "1s", "body": "30s"}))
    sock = connect(s)
    sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
    time.sleep(0.2)
    s.proc.send_signal(signal.SIGTERM)
    try:
        # stopped by SIGTERM once the graceful period is over, the request still unfinished: exit 0
        assert s.proc.wait(timeout=15) == 0
    except subprocess.TimeoutExpired:
        s.proc.kill()
        pytest.fail("the server did not exit after SIGTERM with a request in flight")
    finally:
        sock.close()
        s.stop()


# -- metrics ------------------------------------------------------------------------------------------


def test_unknown_paths_do_not_grow_the_metrics(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:  # one client: no TLS set-up per request
        for i in range(200):
            r = client.post(f"/scan{i}/filter", content=b"{}")
            assert r.status_code == 200 and "unknown profile" in r.json()["Error"]
    text = httpx.get(f"{server.url}/metrics").text
    assert "scan" not in text
    assert 'scheduler_extender_requests_total{code="200",outcome="error",profile="unknown",verb="filter"} 200.0' in text


def test_error_answers_count_as_errors_and_passed_nodes_have_no_plugin(server: Server) -> None:
    post(server, "/filter", fixture_bytes("extenderargs_cache_n10.json"))  # NodeNames to "default": Error
    post(server, "/filter", fixture_bytes("extenderargs_nocache_n10.json"))
    text = httpx.get(f"{server.url}/metrics").text
    assert 'scheduler_extender_requests_total{code="200",outcome="error",profile="default",verb="filter"}' in text
    assert 'scheduler_extender_requests_total{code="200",outcome="success",profile="default",verb="filter"}' in text
    assert 'scheduler_extender_filter_nodes_passed_total{profile="default"}' in text
    assert 'plugin=""' not in text


def test_request_duration_includes_the_body_read(server: Server) -> None:
    def sum_of(text: str) -> float:
        prefix = 'scheduler_extender_request_duration_seconds_sum{profile="chaos",verb="prioritize"} '
        lines = [line for line in text.splitlines() if line.startswith(prefix)]
        return float(lines[0].removeprefix(prefix)) if lines else 0.0

    before = sum_of(httpx.get(f"{server.url}/metrics").text)
    body = b'{"Pod":{},"Nodes":null,"NodeNames":["a","b"]}'
    sock = connect(server)
    sock.sendall(b"POST /chaos/prioritize HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body[:10])
    time.sleep(0.6)
    sock.sendall(body[10:])
    assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
    sock.close()
    assert sum_of(httpx.get(f"{server.url}/metrics").text) - before >= 0.5

"""Verb requests the HTTP/1.1 and HTTP/2 protocols answer without the ASGI cycle
(``VerbRouter.direct``), through the real uvicorn server and protocols on a loopback socket: the
same bytes on the wire as the ASGI cycle's, pipelining, ``Connection: close``, HTTP/1.0,
``Expect: 100-continue``, a client gone mid-body or resetting its stream, a body that stalls, an
internal error, the decision recorded by the time the answer is read."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
import httpx
import pytest
import yaml

from app.api.edge import DirectRequest, VerbRouter
from app.api.server import ExtenderServer, uvicorn_config
from app.bootstrap import build_app, load_assembly
from app.observe.logs import PROBE_HEADER
from tests.conftest import REPO, free_port, mutual_tls, serve_in_thread
from tests.e2e.test_bind_security import certs, client_context
from tests.e2e.test_http2 import stream_answer
from tests.support.bodies import fixture_bytes

FILTER = fixture_bytes("extenderargs_nocache_n10.json")
PREEMPT = fixture_bytes("preemptionargs_nocache.json")


class Served:
    """The embedded default profile (``config``: another configuration file) served by the
    service's uvicorn server in a thread, its router's direct requests counted."""

    def __init__(self, config_path: Path | None = None) -> None:
        self.router: VerbRouter = build_app(load_assembly(str(config_path) if config_path else None))
        self.direct: list[str] = []
        offer = self.router.direct

        def counted(scope: Any, most: int | None = None) -> DirectRequest | None:
            request = offer(scope, most)
            if request is not None:
                self.direct.append(scope["path"])
            return request

        self.router.direct = counted  # type: ignore[method-assign]
        self.port = free_port()
        config = uvicorn_config(self.router, "127.0.0.1", self.port, {"log_level": "warning"})
        self.server = ExtenderServer(config)
        self.thread = serve_in_thread(self.server)

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    s = Served()
    yield s
    s.stop()


def request(path: str, body: bytes, *headers: str, version: str = "1.1") -> bytes:
    head = [f"POST {path} HTTP/{version}", "Host: 127.0.0.1", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def read_answer(sock: socket.socket, buffered: bytearray) -> tuple[bytes, dict[str, str], bytes]:
    """One answer off ``sock`` (status line, headers, body by Content-Length); what follows stays
    in ``buffered``."""
    while b"\r\n\r\n" not in buffered:
        chunk = sock.recv(65536)
        assert chunk, "the connection closed before an answer"
        buffered += chunk
    head, _, rest = bytes(buffered).partition(b"\r\n\r\n")
    status, *lines = head.split(b"\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.decode().partition(":") for line in lines)}
    size = int(headers["content-length"])
    while len(rest) < size:
        chunk = sock.recv(65536)
        assert chunk, "the connection closed within an answer"
        rest += chunk
    buffered[:] = rest[size:]
    return status, headers, rest[:size]


def closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except OSError:
        return True


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/filter", FILTER),
        ("/prioritize", FILTER),
        ("/preempt", PREEMPT),
        ("/filter", b'{"Pod":'),  # a 400 in the verb's type
        ("/prioritize", b'{"Pod":{},"Nodes":null,"NodeNames":["a"]}'),  # names without cluster state
    ],
)
def test_a_direct_answer_is_the_asgi_cycles_byte_for_byte(served: Served, path: str, body: bytes) -> None:
    """A probe takes the ASGI cycle (it runs on the quiet service): its answer is the same bytes,
    status and headers (the Date aside) as the same request's answered directly."""
    answers = []
    for headers in ((), (f"{PROBE_HEADER.decode()}: test",)):
        sock = served.connect()
        served.direct.clear()
        sock.sendall(request(path, body, *headers))
        answers.append(read_answer(sock, bytearray()))
        assert served.direct == ([] if headers else [path])
        sock.close()
    (status, headers, answer), (asgi_status, asgi_headers, asgi_answer) = answers
    assert status == asgi_status and answer == asgi_answer
    assert headers.pop("date") and asgi_headers.pop("date")
    assert headers == asgi_headers
    assert headers["content-type"] == "application/json"


def test_pipelined_requests_are_answered_in_order(served: Served) -> None:
    """Three requests in one write: a direct one, one through the ASGI cycle (a probe) and a
    direct one queued behind it (then answered through the ASGI cycle too), each answer in turn on
    a connection kept alive."""
    probe = f"{PROBE_HEADER.decode()}: test"
    sock = served.connect()
    served.direct.clear()
    sock.sendall(request("/filter", FILTER) + request("/prioritize", FILTER, probe) + request("/preempt", PREEMPT))
    buffered = bytearray()
    shapes = []
    for _ in range(3):
        status, headers, body = read_answer(sock, buffered)
        assert status == b"HTTP/1.1 200 OK" and "connection" not in headers
        shapes.append(type(json.loads(body)).__name__)
    assert shapes == ["dict", "list", "dict"]  # ExtenderFilterResult, HostPriorityList, ExtenderPreemptionResult
    sock.sendall(request("/filter", FILTER))
    assert read_answer(sock, buffered)[0] == b"HTTP/1.1 200 OK"
    assert served.direct == ["/filter", "/filter"]
    sock.close()


@pytest.mark.parametrize(("headers", "version"), [(("Connection: close",), "1.1"), ((), "1.0")])
def test_a_request_that_closes_gets_connection_close(served: Served, headers: tuple[str, ...], version: str) -> None:
    sock = served.connect()
    served.direct.clear()
    sock.sendall(request("/filter", FILTER, *headers, version=version))
    status, answer_headers, body = read_answer(sock, bytearray())
    assert status == b"HTTP/1.1 200 OK" and answer_headers["connection"] == "close"
    assert json.loads(body)["Error"] == ""
    assert closed(sock)
    assert served.direct == ["/filter"]


def test_expect_100_continue_goes_through_the_asgi_cycle(served: Served) -> None:
    sock = served.connect()
    served.direct.clear()
    head, _, body = request("/filter", FILTER, "Expect: 100-continue").partition(b"\r\n\r\n")
    sock.sendall(head + b"\r\n\r\n")
    assert sock.recv(65536).startswith(b"HTTP/1.1 100 Continue")
    sock.sendall(body)
    assert read_answer(sock, bytearray())[0] == b"HTTP/1.1 200 OK"
    assert served.direct == []
    sock.close()


def test_a_client_gone_mid_body_is_no_longer_in_flight(served: Served) -> None:
    sock = served.connect()
    sock.sendall(request("/filter", FILTER)[: -len(FILTER) // 2])
    for _ in range(100):
        if served.router.requests_in_flight == 1:
            break
        time.sleep(0.01)
    assert served.router.requests_in_flight == 1  # counted from its headers on, as the ASGI cycle does
    sock.close()
    for _ in range(100):
        if served.router.requests_in_flight == 0:
            break
        time.sleep(0.01)
    assert served.router.requests_in_flight == 0
    metrics = httpx.get(f"http://127.0.0.1:{served.port}/metrics").text
    assert "scheduler_extender_requests_in_flight 0.0" in metrics


def test_the_decision_is_recorded_by_the_time_the_answer_is_read(served: Served) -> None:
    """Decisions are recorded in a loop callback after the answer is written: an ``/explain``
    asked on reading the answer, on the same connection or another, already shows it."""
    pod = json.loads(FILTER)["Pod"]["metadata"]
    sock = served.connect()
    for verb in ("filter", "prioritize"):
        sock.sendall(request(f"/{verb}", FILTER))
        assert read_answer(sock, bytearray())[0] == b"HTTP/1.1 200 OK"
        explained = httpx.get(f"http://127.0.0.1:{served.port}/explain/{pod['namespace']}/{pod['name']}").json()
        assert explained["attempts"][-1]["verb"] == verb
    sock.close()


def test_an_internal_error_is_500_in_the_verbs_type() -> None:
    s = Served()
    try:

        def broken(*args: object) -> object:
            raise RuntimeError("unexpected at 10.0.0.7:6443")

        s.router.service.resolve_nodes = broken  # type: ignore[method-assign]
        sock = s.connect()
        sock.sendall(request("/prioritize", FILTER))
        status, _, body = read_answer(sock, bytearray())
        assert status == b"HTTP/1.1 500 Internal Server Error"
        message = "internal error while answering prioritize (the extender's log has the details)"
        assert json.loads(body) == {"Error": message}
        assert s.direct == ["/prioritize"]
        sock.sendall(request("/filter", FILTER))  # the connection goes on
        assert read_answer(sock, bytearray())[0] == b"HTTP/1.1 500 Internal Server Error"
        sock.close()
    finally:
        s.stop()


def test_a_client_that_reads_no_answer_stops_being_read(served: Served) -> None:
    """Pipelined requests from a client that never reads its answers: once the answers written
    wait on it, the next requests take the ASGI cycle, which waits for them to drain, and the
    server stops reading, so what it holds stays bounded (the client's sends block)."""
    sock = served.connect()
    sock.settimeout(2)
    one = request("/filter", FILTER)
    sent = 0
    with pytest.raises(TimeoutError):
        while sent < 2000:  # 2000 answers of 150 KB: 300 MB the server would hold
            sock.sendall(one)
            sent += 1
    assert sent < 200
    sock.close()


# -- HTTP/2 over TLS ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served_h2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path]]:
    """The embedded default profile over mutual TLS (``h2`` offered by ALPN), body timeout 1 s."""
    tmp = tmp_path_factory.mktemp("direct-h2")
    pki = tmp / "pki"
    certs(pki)
    doc = yaml.safe_load((REPO / "app" / "default-config.yaml").read_text())
    doc.setdefault("server", {})
    mutual_tls(pki)(doc)
    doc["server"]["timeouts"] = {"body": "1s"}
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(doc))
    s = Served(path)
    yield s, pki
    s.stop()


NAMES = fixture_bytes("extenderargs_cache_n500.json")  # 28 KB
PREEMPT_NAMES = fixture_bytes("preemptionargs_cache.json")


@pytest.mark.parametrize(
    ("path", "body", "direct_path"),
    [
        ("/filter", NAMES, True),
        ("/prioritize", NAMES, True),
        ("/preempt", PREEMPT_NAMES, True),
        ("/filter", b'{"Pod":', True),
        ("/filter", FILTER, False),  # 150 KB: above uvicorn's high-water mark, the ASGI cycle's
    ],
)
def test_a_direct_http2_answer_is_the_asgi_cycles(
    served_h2: tuple[Served, Path], path: str, body: bytes, direct_path: bool
) -> None:
    served, pki = served_h2
    url = f"https://127.0.0.1:{served.port}{path}"
    with httpx.Client(http2=True, verify=client_context(pki, True), timeout=10) as client:
        served.direct.clear()
        direct = client.post(url, content=body)
        assert served.direct == ([path] if direct_path else [])
        asgi = client.post(url, content=body, headers={PROBE_HEADER.decode(): "test"})
        assert served.direct == ([path] if direct_path else [])
    assert direct.http_version == asgi.http_version == "HTTP/2"
    assert direct.status_code == asgi.status_code and direct.content == asgi.content
    assert dict(direct.headers.items()).keys() == dict(asgi.headers.items()).keys()
    assert [(k, v) for k, v in direct.headers.items() if k != "date"] == [
        (k, v) for k, v in asgi.headers.items() if k != "date"
    ]


def h2_stream(served: Served, pki: Path, body: bytes, length: int) -> tuple[Any, h2.connection.H2Connection]:
    """A raw HTTP/2 connection with one filter stream open: headers with ``content-length``
    ``length``, then ``body``."""
    context = client_context(pki, True)
    context.set_alpn_protocols(["h2"])
    sock = context.wrap_socket(socket.create_connection(("127.0.0.1", served.port)), server_hostname="127.0.0.1")
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    headers = [(":method", "POST"), (":path", "/filter"), (":scheme", "https"), (":authority", "127.0.0.1")]
    conn.send_headers(1, [*headers, ("content-length", str(length))])
    conn.send_data(1, body)
    sock.sendall(conn.data_to_send())
    return sock, conn


def test_a_stalled_direct_http2_body_gets_the_routers_408(served_h2: tuple[Served, Path]) -> None:
    served, pki = served_h2
    served.direct.clear()
    sock, conn = h2_stream(served, pki, b'{"Pod":', 1000)
    with sock:
        status, body = stream_answer(sock, conn)
    assert served.direct == ["/filter"]
    assert status == b"408"
    assert json.loads(body)["Error"] == "the request body did not arrive within server.timeouts.body (1s)"


def test_a_direct_http2_stream_reset_mid_body_is_no_longer_in_flight(served_h2: tuple[Served, Path]) -> None:
    served, pki = served_h2
    sock, conn = h2_stream(served, pki, FILTER[:100], len(FILTER))
    with sock:
        for _ in range(100):
            if served.router.requests_in_flight == 1:
                break
            time.sleep(0.01)
        assert served.router.requests_in_flight == 1
        conn.reset_stream(1)
        sock.sendall(conn.data_to_send())
        for _ in range(100):
            if served.router.requests_in_flight == 0:
                break
            time.sleep(0.01)
        assert served.router.requests_in_flight == 0


def raw_h2_connection(served: Served, pki: Path, **settings: int) -> tuple[Any, h2.connection.H2Connection]:
    """A raw HTTP/2 connection (outbound headers unvalidated, so a hostile one can be sent) with
    the client's ``settings`` sent."""
    context = client_context(pki, True)
    context.set_alpn_protocols(["h2"])
    sock = context.wrap_socket(socket.create_connection(("127.0.0.1", served.port)), server_hostname="127.0.0.1")
    config = h2.config.H2Configuration(client_side=True, validate_outbound_headers=False)
    conn = h2.connection.H2Connection(config)
    conn.initiate_connection()
    if settings:
        conn.update_settings({getattr(h2.settings.SettingCodes, k): v for k, v in settings.items()})
    sock.sendall(conn.data_to_send())
    return sock, conn


FILTER_HEADERS = [(":method", "POST"), (":path", "/filter"), (":scheme", "https"), (":authority", "127.0.0.1")]


@pytest.mark.parametrize(
    ("length", "body"), [("abc", b"{}"), ("-5", b"{}"), ("1_0", b"0123456789"), ("", b"{}"), ("100", b"{}")]
)
def test_a_malformed_or_false_http2_content_length_resets_only_its_stream(
    served_h2: tuple[Served, Path], length: str, body: bytes
) -> None:
    """A content-length that is not digits, or that the body does not match, is a malformed
    request (RFC 9113 8.1.1): its stream is reset, never answered, nothing stays in flight, and
    the connection still serves."""
    served, pki = served_h2
    sock, conn = raw_h2_connection(served, pki)
    with sock:
        conn.send_headers(1, [*FILTER_HEADERS, ("content-length", length)])
        conn.send_data(1, body, end_stream=True)
        sock.sendall(conn.data_to_send())
        sock.settimeout(5)
        events: list[Any] = []
        while not any(isinstance(e, (h2.events.StreamReset, h2.events.StreamEnded)) for e in events):
            data = sock.recv(65536)
            assert data, "the connection closed instead of the stream"
            events += conn.receive_data(data)
            sock.sendall(conn.data_to_send())
        assert [type(e) for e in events if isinstance(e, (h2.events.ResponseReceived, h2.events.StreamReset))] == [
            h2.events.StreamReset
        ]
        conn.send_headers(3, [*FILTER_HEADERS, ("content-length", str(len(NAMES)))])
        for i in range(0, len(NAMES), 16000):
            conn.send_data(3, NAMES[i : i + 16000], end_stream=i + 16000 >= len(NAMES))
        sock.sendall(conn.data_to_send())
        status, answer = stream_answer(sock, conn)
    assert status == b"200" and set(json.loads(answer)) == {
        "Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"
    }  # fmt: skip
    assert served.router.requests_in_flight == 0


def test_a_client_that_opens_no_window_holds_at_most_its_concurrent_streams(served_h2: tuple[Served, Path]) -> None:
    """A client whose receive windows stay at 0 reads no answer: each answer waits in the server
    for window, and the stream stays open, so the server's SETTINGS_MAX_CONCURRENT_STREAMS bounds
    what it holds; no request stays in flight."""
    served, pki = served_h2
    small = fixture_bytes("extenderargs_cache_n100.json")
    sock, conn = raw_h2_connection(served, pki, INITIAL_WINDOW_SIZE=0)
    with sock:
        sock.settimeout(5)
        opened = 0
        with pytest.raises(h2.exceptions.TooManyStreamsError):
            for _ in range(1000):
                stream = conn.get_next_available_stream_id()
                conn.send_headers(stream, [*FILTER_HEADERS, ("content-length", str(len(small)))])
                while conn.local_flow_control_window(stream) < len(small):  # the server's window updates
                    conn.receive_data(sock.recv(65536))
                conn.send_data(stream, small, end_stream=True)
                sock.sendall(conn.data_to_send())
                opened += 1
        assert opened == conn.remote_settings.max_concurrent_streams <= 128
        for _ in range(100):
            if served.router.requests_in_flight == 0:
                break
            time.sleep(0.02)
        assert served.router.requests_in_flight == 0

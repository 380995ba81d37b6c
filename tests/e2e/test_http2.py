"""HTTP/2 over TLS (ALPN ``h2``) through the real server: kube-scheduler's extender transport
(``makeTransport``: ``utilnet.SetTransportDefaults``) offers ``h2`` and then sends filter,
prioritize and every bind as streams of one connection. The clients here are independent of the
server's HTTP/2 engine: httpx over the ``h2`` library, and raw frames written with ``h2``'s
connection object for what a well-behaved client never does (stalling, trickling, idling)."""

from __future__ import annotations

import json
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import httpx
import pytest

from tests.conftest import Server, cluster_config, mutual_tls
from tests.e2e.test_bind_security import certs, client_context
from tests.e2e.test_cluster_server import populate
from tests.support.apiserver import FakeAPIServer, pod, running
from tests.support.bodies import fixture, fixture_bytes, go_marshal

NODE = {"Node": "node-a"}


@pytest.fixture(scope="module")
def api() -> Iterator[FakeAPIServer]:
    with running(populate) as server:
        for i in range(6):
            server.put("pods", pod(f"h2-{i}", "default"))
        yield server


@pytest.fixture(scope="module")
def secure(api: FakeAPIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    tmp = tmp_path_factory.mktemp("h2")
    pki = tmp / "pki"
    certs(pki)

    def edit(doc: dict) -> None:  # type: ignore[type-arg]
        mutual_tls(pki)(doc)
        doc["server"]["timeouts"] = {"idle": "2s", "body": "1s"}
        doc["server"]["maxRequestBytes"] = 1 << 20

    s = Server(cluster_config(tmp, api.kubeconfig(), edit=edit), verify=client_context(pki, False))
    yield s, pki
    s.stop()


def h2_client(pki: Path, certificate: bool = True) -> httpx.Client:
    return httpx.Client(http2=True, verify=client_context(pki, certificate), timeout=10)


def test_kube_schedulers_calls_share_one_http2_connection(secure: tuple[Server, Path], api: FakeAPIServer) -> None:
    server, pki = secure
    body = fixture("extenderargs_cache_n10.json")
    body["Pod"]["metadata"].update(name="h2-0", namespace="default", uid="uid-default-h2-0")
    with h2_client(pki) as client:
        filtered = client.post(f"{server.url}/filter", content=go_marshal(body))
        assert filtered.http_version == "HTTP/2"
        assert filtered.status_code == 200 and filtered.json()["Error"] == ""
        survivors = filtered.json()["NodeNames"]
        assert survivors
        scored = client.post(f"{server.url}/prioritize", content=go_marshal({**body, "NodeNames": survivors}))
        assert scored.http_version == "HTTP/2" and scored.status_code == 200
        node = max(scored.json(), key=lambda h: h["Score"])["Host"]
        bind = {"PodName": "h2-0", "PodNamespace": "default", "PodUID": "uid-default-h2-0", "Node": node}
        bound = client.post(f"{server.url}/bind", content=go_marshal(bind))
        assert bound.http_version == "HTTP/2"
        assert bound.status_code == 200 and bound.json() == {"Error": ""}
        # the kubelet's probes and the metrics over the same connection (FastAPI behind the router)
        assert client.get(f"{server.url}/healthz").status_code == 200
        metrics = client.get(f"{server.url}/metrics").text
        assert (
            'scheduler_extender_requests_total{code="200",outcome="success",profile="default",verb="bind"}' in metrics
        )
    binding = api.bindings[-1]
    assert binding["metadata"]["uid"] == "uid-default-h2-0" and binding["target"]["name"] == node


def test_concurrent_binds_are_streams_of_one_connection(secure: tuple[Server, Path], api: FakeAPIServer) -> None:
    """Five binds in flight at once (kube-scheduler's binding goroutines): over HTTP/1.1 Go's
    transport would open a TLS connection for each beyond two; over HTTP/2 they are streams."""
    import asyncio

    server, pki = secure

    async def bind_all() -> list[httpx.Response]:
        async with httpx.AsyncClient(http2=True, verify=client_context(pki, True), timeout=10) as client:
            first = await client.get(f"{server.url}/healthz")  # the connection, before the burst
            assert first.http_version == "HTTP/2"
            bodies = [
                go_marshal(
                    {"PodName": f"h2-{i}", "PodNamespace": "default", "PodUID": f"uid-default-h2-{i}", "Node": "node-a"}
                )
                for i in range(1, 6)
            ]
            answers = await asyncio.gather(*(client.post(f"{server.url}/bind", content=b) for b in bodies))
            pool = client._transport._pool  # httpx's connection pool: how many connections it opened
            assert len(pool.connections) == 1
            return list(answers)

    answers = asyncio.run(bind_all())
    assert [(a.http_version, a.status_code, a.json()) for a in answers] == [("HTTP/2", 200, {"Error": ""})] * 5
    bound = {b["metadata"]["name"] for b in api.bindings}
    assert {f"h2-{i}" for i in range(1, 6)} <= bound


def test_bind_over_http2_needs_kube_schedulers_certificate(secure: tuple[Server, Path], api: FakeAPIServer) -> None:
    server, pki = secure
    before = len(api.bindings)
    with h2_client(pki, certificate=False) as client:
        r = client.post(f"{server.url}/bind", content=fixture_bytes("bindingargs.json"))
    assert r.http_version == "HTTP/2" and r.status_code == 403
    assert "this caller presented no client certificate" in r.json()["Error"]
    assert len(api.bindings) == before


def test_a_refused_body_resets_its_stream_not_the_connection(secure: tuple[Server, Path]) -> None:
    """A body over maxRequestBytes gets its 413 in the verb's result type; over HTTP/1.1 the
    connection is closed (the body was not read), over HTTP/2 only that stream ends, and the next
    request goes over the same connection."""
    server, pki = secure
    with h2_client(pki) as client:
        big = client.post(f"{server.url}/filter", content=b"[" + b" " * (2 << 20) + b"]")
        assert big.http_version == "HTTP/2" and big.status_code == 413
        assert big.json()["Error"] == "request body exceeds server.maxRequestBytes (1048576 bytes)"
        after = client.post(f"{server.url}/filter", content=fixture_bytes("extenderargs_cache_n10.json"))
        assert after.http_version == "HTTP/2" and after.status_code == 200


def test_http1_clients_are_served_as_before(secure: tuple[Server, Path]) -> None:
    server, pki = secure
    r = httpx.post(
        f"{server.url}/filter", content=fixture_bytes("extenderargs_cache_n10.json"), verify=client_context(pki, True)
    )
    assert r.http_version == "HTTP/1.1" and r.status_code == 200 and r.json()["Error"] == ""


def raw_h2(server: Server, pki: Path, buffers: int = 0) -> tuple[ssl.SSLSocket, h2.connection.H2Connection]:
    """A TLS socket that negotiated ``h2``, with the client preface sent; ``buffers``: its kernel
    send and receive buffers in bytes (0: the kernel's, which grow to megabytes on loopback)."""
    context = client_context(pki, True)
    context.set_alpn_protocols(["h2"])
    raw = socket.socket()
    if buffers:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buffers)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, buffers)
    raw.connect(("127.0.0.1", server.port))
    sock = context.wrap_socket(raw, server_hostname="127.0.0.1")
    assert sock.selected_alpn_protocol() == "h2"
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    return sock, conn


def stream_answer(sock: ssl.SSLSocket, conn: h2.connection.H2Connection, seconds: float = 6.0) -> tuple[bytes, bytes]:
    """The status and body the server answers on the connection's one open stream (within
    ``seconds``); fails if the connection closes instead."""
    sock.settimeout(seconds)
    status, body, ended = b"", b"", False
    while not ended:
        data = sock.recv(65536)
        assert data, "the connection closed instead of the stream"
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                status = dict(event.headers)[b":status"]
            elif isinstance(event, h2.events.DataReceived):
                body += event.data
            elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                ended = True
        sock.sendall(conn.data_to_send())
    return status, body


def closed_within(sock: ssl.SSLSocket, conn: h2.connection.H2Connection, seconds: float, ping: float = 0.0) -> float:
    """Seconds until the server closed the connection (GOAWAY or EOF), sending a PING every
    ``ping`` seconds meanwhile when set; fails after ``seconds``."""
    started = time.monotonic()
    sock.settimeout(ping or seconds)
    while time.monotonic() - started < seconds:
        try:
            data = sock.recv(65536)
        except TimeoutError:
            conn.ping(b"12345678")
            sock.sendall(conn.data_to_send())
            continue
        if not data:
            return time.monotonic() - started
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ConnectionTerminated):
                return time.monotonic() - started
        sock.sendall(conn.data_to_send())
    raise AssertionError(f"the connection was still open after {seconds}s")


def test_an_idle_http2_connection_is_closed_and_pings_do_not_keep_it(secure: tuple[Server, Path]) -> None:
    server, pki = secure
    sock, conn = raw_h2(server, pki)
    with sock:
        took = closed_within(sock, conn, 8.0, ping=0.3)  # server.timeouts.idle: 2s
    assert 1.5 < took < 4.0


def test_a_stalled_http2_body_is_reset(secure: tuple[Server, Path]) -> None:
    """A request whose body never ends: the verb router answers 408 at server.timeouts.body."""
    server, pki = secure
    sock, conn = raw_h2(server, pki)
    with sock:
        conn.send_headers(
            1,
            [(":method", "POST"), (":path", "/filter"), (":scheme", "https"), (":authority", "127.0.0.1")],
        )
        conn.send_data(1, b'{"Pod":')  # and nothing more
        sock.sendall(conn.data_to_send())
        status, body = stream_answer(sock, conn)
    assert status == b"408"
    assert json.loads(body)["Error"] == "the request body did not arrive within server.timeouts.body (1s)"


def test_an_http2_connection_past_max_connections_gets_503(
    api: FakeAPIServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The HTTP/2 connection counts as one connection; past maxConnections its requests are
    refused with 503 and Retry-After in the verb's result type, as over HTTP/1.1."""
    tmp = tmp_path_factory.mktemp("h2cap")
    pki = tmp / "pki"
    certs(pki)

    def edit(doc: dict) -> None:  # type: ignore[type-arg]
        mutual_tls(pki)(doc)
        doc["server"]["maxConnections"] = 1

    server = Server(cluster_config(tmp, api.kubeconfig(), edit=edit), verify=client_context(pki, False))
    try:
        with httpx.Client(verify=client_context(pki, True), timeout=10) as first, h2_client(pki) as second:
            assert first.get(f"{server.url}/healthz").status_code == 200  # holds the one connection
            r = second.post(f"{server.url}/filter", content=fixture_bytes("extenderargs_cache_n10.json"))
            assert r.http_version == "HTTP/2" and r.status_code == 503
            assert r.headers["retry-after"] == "1"
            assert r.json()["Error"] == "too many connections: retry later"
            assert second.get(f"{server.url}/healthz").status_code == 200  # the kubelet's probes still pass
    finally:
        server.stop()


def test_http2_false_offers_http1_alone(api: FakeAPIServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    """``server.http2: false``: a client offering ``h2`` first is given ``http/1.1`` by ALPN and
    served over it, as kube-scheduler's transport then is."""
    tmp = tmp_path_factory.mktemp("h1only")
    pki = tmp / "pki"
    certs(pki)

    def edit(doc: dict) -> None:  # type: ignore[type-arg]
        mutual_tls(pki)(doc)
        doc["server"]["http2"] = False

    server = Server(cluster_config(tmp, api.kubeconfig(), edit=edit), verify=client_context(pki, False))
    try:
        context = client_context(pki, True)
        context.set_alpn_protocols(["h2", "http/1.1"])
        with context.wrap_socket(
            socket.create_connection(("127.0.0.1", server.port)), server_hostname="127.0.0.1"
        ) as sock:
            assert sock.selected_alpn_protocol() == "http/1.1"
        with h2_client(pki) as client:
            r = client.post(f"{server.url}/filter", content=fixture_bytes("extenderargs_cache_n10.json"))
        assert r.http_version == "HTTP/1.1" and r.status_code == 200 and r.json()["Error"] == ""
    finally:
        server.stop()


POST = [(":method", "POST"), (":path", "/filter"), (":scheme", "https"), (":authority", "127.0.0.1")]
#: RST_STREAM and GOAWAY error codes (RFC 9113 7)
CANCEL, ENHANCE_YOUR_CALM = 0x8, 0xB


@pytest.mark.slow
def test_a_connection_serves_any_number_of_streams(secure: tuple[Server, Path]) -> None:
    """Go's HTTP/2 client keeps one connection for as long as it can: 10,000 requests over it, as
    Go's transport writes them (HEADERS, the body's DATA, an empty DATA with END_STREAM), up to 32
    in flight as the connection's flow-control window allows, one in ten cancelled by the client
    (RST_STREAM CANCEL, as a timed-out extender call), are all answered with no GOAWAY. zttp
    0.0.35 as published ended the connection at 4,096 streams with GOAWAY ENHANCE_YOUR_CALM
    (third_party/zttp)."""
    server, pki = secure
    body = fixture_bytes("extenderargs_cache_n10.json")
    total, window = 10_000, 32
    sock, conn = raw_h2(server, pki)
    answered: dict[int, bytes] = {}
    cancelled: set[int] = set()
    open_streams: set[int] = set()
    sent = 0
    sock.settimeout(10)
    with sock:
        while sent < total or open_streams:
            while sent < total and len(open_streams) < window and conn.outbound_flow_control_window >= len(body):
                stream = conn.get_next_available_stream_id()
                conn.send_headers(stream, POST)
                if sent % 10 == 9:
                    conn.reset_stream(stream, CANCEL)
                    cancelled.add(stream)
                else:
                    conn.send_data(stream, body)
                    conn.send_data(stream, b"", end_stream=True)
                    open_streams.add(stream)
                sent += 1
            sock.sendall(conn.data_to_send())
            data = sock.recv(1 << 20)
            assert data, f"the connection closed after {len(answered)} answers"
            for event in conn.receive_data(data):
                assert not isinstance(event, h2.events.ConnectionTerminated), (event, len(answered))
                if isinstance(event, h2.events.ResponseReceived):
                    answered[event.stream_id] = dict(event.headers)[b":status"]
                elif isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    open_streams.discard(event.stream_id)
                elif isinstance(event, h2.events.StreamReset):
                    raise AssertionError(f"stream {event.stream_id} reset: {event.error_code}")
            sock.sendall(conn.data_to_send())
    assert len(answered) == total - len(cancelled) == 9_000
    assert set(answered.values()) == {b"200"}


def test_a_busy_connection_is_not_closed_at_idle(secure: tuple[Server, Path]) -> None:
    """One request at a time for twice ``idle`` (2 s), as kube-scheduler's serial cycle sends
    filter and prioritize: each answered within the read that brought it, so no stream is open
    between reads. The connection stays open: an idle deadline armed by a stream's end and
    then lost (never cancelled) closed it with GOAWAY after 2 s, failing what was in flight."""
    server, pki = secure
    body = fixture_bytes("extenderargs_cache_n10.json")
    sock, conn = raw_h2(server, pki)
    answered = 0
    with sock:
        ends = time.monotonic() + 4.5
        while time.monotonic() < ends:
            stream = conn.get_next_available_stream_id()
            conn.send_headers(stream, [*POST, ("content-length", str(len(body)))])
            conn.send_data(stream, body, end_stream=True)
            sock.sendall(conn.data_to_send())
            status, _ = stream_answer(sock, conn)
            assert status == b"200", f"request {answered + 1}: {status!r}"
            answered += 1
            time.sleep(0.05)
    assert answered > 40


def test_a_flood_of_reset_streams_is_cut(secure: tuple[Server, Path]) -> None:
    """A rapid-reset flood (CVE-2023-44487: streams opened and reset at once, no answer waited
    for) still ends the connection with GOAWAY ENHANCE_YOUR_CALM; the server serves the next."""
    server, pki = secure
    sock, conn = raw_h2(server, pki)
    terminated: list[h2.events.ConnectionTerminated] = []
    with sock:
        sock.settimeout(5)
        for _ in range(1000):
            stream = conn.get_next_available_stream_id()
            conn.send_headers(stream, POST)
            conn.reset_stream(stream, CANCEL)
        try:
            sock.sendall(conn.data_to_send())
            while not terminated:
                data = sock.recv(1 << 20)
                if not data:
                    break
                terminated += [e for e in conn.receive_data(data) if isinstance(e, h2.events.ConnectionTerminated)]
        except (ConnectionError, h2.exceptions.ProtocolError):
            pass
    assert terminated and terminated[0].error_code == ENHANCE_YOUR_CALM
    assert terminated[0].last_stream_id < 1000
    with h2_client(pki) as client:
        r = client.post(f"{server.url}/filter", content=fixture_bytes("extenderargs_cache_n10.json"))
    assert r.http_version == "HTTP/2" and r.status_code == 200


def test_a_flood_ends_the_connection_after_the_requests_read_whole_are_answered(
    secure: tuple[Server, Path], api: FakeAPIServer
) -> None:
    """A bind in flight (its Binding takes 0.7 s at the API server), then a rapid-reset flood on
    the same connection: GOAWAY ENHANCE_YOUR_CALM at once, nothing more read, yet the bind read
    whole before the flood is still answered before the connection closes (uvicorn closed it at
    once: the bind's caller saw the connection fail)."""
    server, pki = secure
    api.put("pods", pod("h2-flood", "default"))
    bind = go_marshal(
        {"PodName": "h2-flood", "PodNamespace": "default", "PodUID": "uid-default-h2-flood", "Node": "node-a"}
    )
    context = client_context(pki, True)
    context.set_alpn_protocols(["h2"])
    api.binding_delay = 0.7  # within DefaultBinder's 1 s of these tests
    try:
        with context.wrap_socket(
            socket.create_connection(("127.0.0.1", server.port)), server_hostname="127.0.0.1"
        ) as sock:
            sock.settimeout(8)
            frames = Frames(sock)
            frames.request(1, bind, end=True, path="/bind")
            time.sleep(0.2)  # the bind is at the API server
            for stream in range(3, 3 + 2 * 400, 2):
                frames.reset(stream)
            seen: list[tuple[int, int, int, bytes]] = []
            while (frame := frames.next()) is not None:
                seen.append(frame)
    finally:
        api.binding_delay = 0.0
    goaways = [f for f in seen if f[0] == 0x7]
    assert len(goaways) == 1 and int.from_bytes(goaways[0][3][4:8], "big") == ENHANCE_YOUR_CALM
    on_stream_1 = [(kind, payload) for kind, _, stream, payload in seen if stream == 1]
    assert on_stream_1[0] == (0x1, b"200")
    assert json.loads(b"".join(payload for kind, payload in on_stream_1 if kind == 0x0)) == {"Error": ""}
    assert seen.index(goaways[0]) < seen.index(next(f for f in seen if f[2] == 1))  # the GOAWAY came first
    assert "h2-flood" in {b["metadata"]["name"] for b in api.bindings}


def test_a_client_that_does_not_read_is_not_read(api: FakeAPIServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A PING flood from a client that reads nothing (CVE-2019-9512): each PING owes an ACK, and
    once the ACKs unread pass the transport's high-water mark the server stops reading the
    connection, so the flood stalls in the kernel's socket buffers (a few MB) instead of the
    server's memory. Its own server: ``idle`` long enough that the connection is not closed (a
    closed TLS connection drains what it is sent, unread) while the flood goes on."""
    tmp = tmp_path_factory.mktemp("h2flood")
    pki = tmp / "pki"
    certs(pki)

    def edit(doc: dict) -> None:  # type: ignore[type-arg]
        mutual_tls(pki)(doc)
        doc["server"]["timeouts"] = {"idle": "60s", "shutdown": "1s"}

    server = Server(cluster_config(tmp, api.kubeconfig(), edit=edit), verify=client_context(pki, False))
    try:
        sock, _ = raw_h2(server, pki, buffers=1 << 16)  # no room for the ACKs in the client's kernel
        ping = b"\x00\x00\x08\x06\x00\x00\x00\x00\x00" + b"12345678"  # PING, stream 0, 8 bytes
        flood = ping * 200_000  # 3.4 MB; their ACKs as much
        pushed = 0
        with sock:
            sock.settimeout(3)
            try:
                # up to 136 MB: the server's receive buffer on loopback takes up to 64 MB
                # (tcp_rmem's 32 MB counted twice), so the server must have read the rest
                for _ in range(40):
                    sock.sendall(flood)
                    pushed += len(flood)
            except TimeoutError:
                pass
            assert pushed < 40 * len(flood), "the server read 136 MB of PINGs whose ACKs were never read"
            with h2_client(pki) as client:  # meanwhile the server serves others
                assert client.get(f"{server.url}/healthz").status_code == 200
    finally:
        server.stop()


class Frames:
    """HTTP/2 frames written and read by hand over a TLS socket that negotiated ``h2`` (the ``h2``
    library refuses to send once it has read a GOAWAY, as a client that read it should; here the
    test plays the client whose frames were already on the wire)."""

    def __init__(self, sock: ssl.SSLSocket) -> None:
        import hpack

        self.sock, self.buffer = sock, b""
        self.encoder, self.decoder = hpack.Encoder(), hpack.Decoder()
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + self.frame(0x4, 0, 0, b""))

    @staticmethod
    def frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
        return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload

    def request(self, stream: int, body: bytes, end: bool, path: str = "/filter") -> None:
        """HEADERS of a POST to ``path``, then ``body`` in a DATA frame (END_STREAM when ``end``)."""
        block = self.encoder.encode([(":path", path) if name == ":path" else (name, value) for name, value in POST])
        self.sock.sendall(self.frame(0x1, 0x4, stream, block) + self.frame(0x0, 0x1 if end else 0, stream, body))

    def reset(self, stream: int) -> None:
        """HEADERS of a filter POST, then RST_STREAM CANCEL at once (a rapid reset)."""
        block = self.encoder.encode(POST)
        self.sock.sendall(self.frame(0x1, 0x4, stream, block) + self.frame(0x3, 0, stream, CANCEL.to_bytes(4, "big")))

    def headers(self, stream: int) -> None:
        """HEADERS of a filter POST with END_STREAM (no body)."""
        self.sock.sendall(self.frame(0x1, 0x5, stream, self.encoder.encode(POST)))

    def data(self, stream: int, body: bytes) -> None:
        self.sock.sendall(self.frame(0x0, 0x1, stream, body))

    def next(self) -> tuple[int, int, int, bytes] | None:
        """The next frame read (kind, flags, stream, payload), SETTINGS and PING answered; ``None``
        once the server closed the connection."""
        while True:
            while len(self.buffer) < 9 or len(self.buffer) < 9 + int.from_bytes(self.buffer[:3], "big"):
                data = self.sock.recv(65536)
                if not data:
                    return None
                self.buffer += data
            size = int.from_bytes(self.buffer[:3], "big")
            kind, flags = self.buffer[3], self.buffer[4]
            stream = int.from_bytes(self.buffer[5:9], "big") & 0x7FFFFFFF
            payload, self.buffer = self.buffer[9 : 9 + size], self.buffer[9 + size :]
            if kind == 0x4 and not flags & 0x1:
                self.sock.sendall(self.frame(0x4, 0x1, 0, b""))  # SETTINGS ACK
            elif kind == 0x1:
                payload = dict(self.decoder.decode(payload)).get(":status", "").encode()  # type: ignore[union-attr]
                return kind, flags, stream, payload
            elif kind not in (0x4, 0x6, 0x8):  # SETTINGS, PING, WINDOW_UPDATE: nothing to see
                return kind, flags, stream, payload


def test_shutdown_sends_goaway_first_and_answers_the_streams_up_to_it(
    api: FakeAPIServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """SIGTERM with a request in flight (its body half sent): GOAWAY NO_ERROR naming that stream
    comes at once, so kube-scheduler sends its next requests elsewhere; a stream the client opened
    before it read the GOAWAY is refused (REFUSED_STREAM: Go's transport retries it on a new
    connection); the request in flight is answered 200 once its body ends; then the connection
    closes. uvicorn's own protocol answered new streams 503 and sent its GOAWAY only at the end."""
    import signal

    tmp = tmp_path_factory.mktemp("h2goaway")
    pki = tmp / "pki"
    certs(pki)

    def edit(doc: dict) -> None:  # type: ignore[type-arg]
        mutual_tls(pki)(doc)
        doc["server"]["timeouts"] = {"idle": "60s", "body": "10s", "shutdown": "10s"}

    server = Server(cluster_config(tmp, api.kubeconfig(), edit=edit), verify=client_context(pki, False))
    body = fixture_bytes("extenderargs_cache_n10.json")
    try:
        context = client_context(pki, True)
        context.set_alpn_protocols(["h2"])
        with context.wrap_socket(
            socket.create_connection(("127.0.0.1", server.port)), server_hostname="127.0.0.1"
        ) as sock:
            sock.settimeout(8)
            frames = Frames(sock)
            frames.request(1, body[:100], end=False)  # in flight: the rest of its body comes later
            time.sleep(0.3)
            server.proc.send_signal(signal.SIGTERM)
            first = frames.next()
            assert first is not None and first[0] == 0x7, first  # GOAWAY before anything else
            last_stream, code = int.from_bytes(first[3][:4], "big"), int.from_bytes(first[3][4:8], "big")
            assert (last_stream, code) == (1, NO_ERROR_CODE)
            frames.headers(3)  # sent as if before the GOAWAY was read
            assert frames.next() == (0x3, 0, 3, REFUSED.to_bytes(4, "big"))  # RST_STREAM REFUSED_STREAM
            frames.data(1, body[100:])
            seen: dict[int, list[tuple[int, bytes]]] = {}
            while (frame := frames.next()) is not None:
                seen.setdefault(frame[2], []).append((frame[0], frame[3]))
        assert seen[1][0] == (0x1, b"200")  # HEADERS :status 200, then its DATA
        answer = b"".join(payload for kind, payload in seen[1] if kind == 0x0)
        assert json.loads(answer)["Error"] == ""
        assert server.proc.wait(timeout=15) == 0
    finally:
        server.stop()


NO_ERROR_CODE, REFUSED = 0x0, 0x7

"""HTTP/2 over TLS (ALPN ``h2``): every call of kube-scheduler on one connection.

kube-scheduler builds its extender transport with ``utilnet.SetTransportDefaults`` (v1.30
``pkg/scheduler/extender.go`` ``makeTransport``), which offers ``h2`` by ALPN and keeps at most
two idle HTTP/1.1 connections per host (Go's ``DefaultMaxIdleConnsPerHost``). Over HTTP/1.1 each
bind in flight beyond two opens a TLS connection of its own, most closed after one request, and
each of them costs the service a handshake on its event loop. Over HTTP/2 its filter, prioritize
and binds share one connection, a stream each.

:class:`H2Protocol` takes over a TLS connection whose ALPN chose ``h2`` (the server's
:class:`~app.api.server.GuardedHttpToolsProtocol` hands it over in ``connection_made``) and serves
each stream to the same ASGI app as HTTP/1.1 (:class:`~app.api.edge.VerbRouter`: the raw verb
path, everything else to FastAPI), one task per stream. The framing, HPACK and flow control are
the ``h2`` library's (python-hyper); the connection guards are the HTTP/1.1 protocol's:

- ``idle``: a connection with no stream open is closed (GOAWAY) ``idle`` after it opened or its
  last stream ended; frames that open no stream (PING, SETTINGS, a partial HEADERS block) do not
  extend it, which also bounds a request whose headers trickle in;
- ``body`` (+1 s): a stream whose request body has not ended is reset (``CANCEL``); the verb
  router answers its own 408 at ``body``;
- ``maxConnections``: a stream on a connection past it is marked over capacity (503, as over
  HTTP/1.1); the connection counts once, whatever its streams;
- at most :data:`MAX_CONCURRENT_STREAMS` streams are served at once per connection (announced in
  SETTINGS, as Go's server does); a stream opened while that many requests are still being
  answered, also after their streams were reset (a "rapid reset"), is refused
  (``REFUSED_STREAM``, which clients retry);
- request bodies are acknowledged (flow control) as the app reads them, so a client is at most
  :data:`STREAM_WINDOW` bytes ahead of the reader on a stream; the body limits
  (``maxRequestBytes``, ``maxInFlightBytes``) are the verb router's, as over HTTP/1.1;
- header blocks are bounded by :data:`MAX_HEADER_LIST_SIZE` (SETTINGS_MAX_HEADER_LIST_SIZE,
  enforced by ``h2``'s decoder), and a protocol error closes the connection with GOAWAY.

An answer's headers and its first body chunk are written together (one TLS record, one write),
as are the frames a read produced. Shutdown sends GOAWAY and closes the connection once its
streams are answered, within ``server.timeouts.shutdown`` as for HTTP/1.1.
"""

from __future__ import annotations

import asyncio
import logging
import urllib.parse
from collections import deque
from typing import TYPE_CHECKING, Any

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
from uvicorn.protocols.utils import get_client_addr, get_local_addr, get_path_with_query_string, get_remote_addr

from app.api.edge import OVER_CAPACITY, PEER_CN, PEER_GROUPS

if TYPE_CHECKING:
    from app.api.server import GuardedHttpToolsProtocol

log = logging.getLogger(__name__)

#: The ALPN protocol name of HTTP/2 over TLS.
ALPN_H2 = "h2"
#: Streams served at once per connection (SETTINGS_MAX_CONCURRENT_STREAMS): Go's HTTP/2 server's
#: default (``golang.org/x/net/http2`` ``defaultMaxStreams``).
MAX_CONCURRENT_STREAMS = 250
#: Bytes a client may send ahead of the app's reading, per stream (SETTINGS_INITIAL_WINDOW_SIZE),
#: and on the whole connection: Go's server allows 1 MiB per stream (``MaxUploadBufferPerStream``).
STREAM_WINDOW = 1 << 20
CONNECTION_WINDOW = 1 << 24
#: Largest header block accepted, decompressed (SETTINGS_MAX_HEADER_LIST_SIZE).
MAX_HEADER_LIST_SIZE = 64 * 1024
#: Response headers HTTP/2 forbids (RFC 9113 8.2.2), dropped from what the app sends.
_CONNECTION_HEADERS = frozenset({b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"})
_STATUS = {code: str(code).encode() for code in range(100, 600)}


class H2Protocol(asyncio.Protocol):
    """One HTTP/2 connection (see the module doc), taking over from ``http1``: its uvicorn
    configuration, server state, ASGI app and guards."""

    def __init__(self, http1: GuardedHttpToolsProtocol, peer: tuple[str | None, tuple[str, ...]]) -> None:
        self.loop = http1.loop
        self.app = http1.app
        self.app_state = http1.app_state
        self.server_state = http1.server_state
        self.root_path = http1.root_path
        self.access_logger = http1.access_logger
        self.access_log = http1.access_log
        self.idle_timeout = float(http1.timeout_keep_alive)
        self.body_backstop = http1.body_backstop
        self.max_connections = http1.max_connections
        self.on_timeout = http1.on_timeout
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding=None, validate_outbound_headers=False)
        )
        self.conn.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_CONCURRENT_STREAMS,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: STREAM_WINDOW,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: MAX_HEADER_LIST_SIZE,
            },
        )
        self.transport: asyncio.Transport | None = None
        self.streams: dict[int, _Stream] = {}
        #: requests being answered (their streams may be gone): at most MAX_CONCURRENT_STREAMS
        self.running = 0
        self.closing = False
        self.lost = False
        self._idle: asyncio.TimerHandle | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self._window = asyncio.Event()  # set when a WINDOW_UPDATE arrives
        self._peer_cn, self._peer_groups = peer
        self.server: tuple[str, int] | None = None
        self.client: tuple[str, int] | None = None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
        self.transport = transport  # type: ignore[assignment]
        self.server_state.connections.add(self)
        self.server = get_local_addr(transport)  # type: ignore[arg-type]
        self.client = get_remote_addr(transport)  # type: ignore[arg-type]
        self.conn.initiate_connection()
        self.conn.increment_flow_control_window(CONNECTION_WINDOW - 65535)
        self.flush()
        self._arm_idle()

    def data_received(self, data: bytes) -> None:
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError as exc:
            log.debug("HTTP/2 protocol error from %s: %s", self.client, exc)
            self.flush()  # the GOAWAY h2 queued
            self._close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self._request(event)
            elif isinstance(event, h2.events.DataReceived):
                stream = self.streams.get(event.stream_id)
                if stream is not None:
                    stream.feed(event.data, event.flow_controlled_length)
                else:  # a stream already answered: give the window back
                    self.acknowledge(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                stream = self.streams.get(event.stream_id)
                if stream is not None:
                    stream.end()
            elif isinstance(event, h2.events.StreamReset):
                stream = self.streams.pop(event.stream_id, None)
                if stream is not None:
                    stream.disconnect()
            elif isinstance(event, h2.events.WindowUpdated):
                self._window.set()
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.closing = True
                for stream in list(self.streams.values()):
                    if stream.stream_id > (event.last_stream_id or 0):
                        stream.disconnect()
        self.flush()
        if self.closing and not self.running:
            self._close()

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.server_state.connections.discard(self)
        self._disarm_idle()
        for stream in list(self.streams.values()):
            stream.disconnect()
        self.streams.clear()
        self._writable.set()
        self._window.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # uvicorn's server

    def shutdown(self) -> None:
        """Graceful shutdown (uvicorn's ``Server.shutdown``): GOAWAY now, close once the streams
        being answered are done."""
        if self.lost:
            return
        self.closing = True
        self.conn.close_connection()
        self.flush()
        if not self.running:
            self._close()

    # streams

    def _request(self, event: h2.events.RequestReceived) -> None:
        stream_id = event.stream_id
        if self.closing or self.running >= MAX_CONCURRENT_STREAMS:
            self.conn.reset_stream(stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
            return
        scope = self._scope(event.headers or [])
        if scope is None:
            self.conn.reset_stream(stream_id, h2.errors.ErrorCodes.PROTOCOL_ERROR)
            return
        stream = _Stream(self, stream_id, scope)
        self.streams[stream_id] = stream
        self.running += 1
        self._disarm_idle()
        if event.stream_ended is not None:
            stream.end()
        else:
            stream.backstop = self.loop.call_later(self.body_backstop, stream.body_timed_out)
        task = self.loop.create_task(stream.run(self.app))
        tasks = self.server_state.tasks
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    def _scope(self, headers: list[tuple[bytes, bytes]]) -> dict[str, Any] | None:
        """The ASGI scope of a request's header block (``:authority`` as ``host``), or ``None``
        when it lacks a pseudo-header a request needs."""
        method = path = authority = b""
        regular: list[tuple[bytes, bytes]] = []
        has_host = False
        for name, value in headers:
            if name[:1] == b":":
                if name == b":method":
                    method = value
                elif name == b":path":
                    path = value
                elif name == b":authority":
                    authority = value
            else:
                if name == b"host":
                    has_host = True
                regular.append((name, value))
        if not method or not path:
            return None
        if authority and not has_host:
            regular.insert(0, (b"host", authority))
        raw_path, _, query = path.partition(b"?")
        decoded = raw_path.decode("latin-1")
        if "%" in decoded:
            decoded = urllib.parse.unquote(decoded)
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "2",
            "server": self.server,
            "client": self.client,
            "scheme": "https",
            "method": method.decode("latin-1"),
            "root_path": self.root_path,
            "path": self.root_path + decoded,
            "raw_path": self.root_path.encode("latin-1") + raw_path,
            "query_string": query,
            "headers": regular,
            "state": self.app_state.copy(),
            PEER_CN: self._peer_cn,
            PEER_GROUPS: self._peer_groups,
        }
        if len(self.server_state.connections) > self.max_connections:
            scope[OVER_CAPACITY] = True
        return scope

    def finished(self, stream: _Stream) -> None:
        """``stream``'s request is answered (or abandoned): forget it, and arm the idle timer or
        close a closing connection once no request is left."""
        self.running -= 1
        self.server_state.total_requests += 1
        unread = sum(flow_controlled for _, flow_controlled in stream.body)
        stream.body.clear()
        self.acknowledge(unread, stream.stream_id)  # the connection's window back
        if self.streams.get(stream.stream_id) is stream:
            del self.streams[stream.stream_id]
        if not self.running:
            if self.closing:
                self._close()
            else:
                self._arm_idle()

    def acknowledge(self, size: int, stream_id: int) -> None:
        """``size`` flow-controlled bytes of ``stream_id`` were consumed: the stream's window (while
        it is open) and the connection's reopen by as much."""
        if size:
            self.conn.acknowledge_received_data(size, stream_id)
            self.flush()

    # output

    def flush(self) -> None:
        """Write what ``h2`` has queued, in one write."""
        data = self.conn.data_to_send()
        if data and self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    async def wait_writable(self, stream_id: int) -> int:
        """Wait until the transport takes writes and the stream's flow-control window is open;
        the bytes that may be sent now (at most one frame), 0 when the connection is gone."""
        while not self.lost:
            if not self._writable.is_set():
                await self._writable.wait()
                continue
            try:
                window = self.conn.local_flow_control_window(stream_id)
            except h2.exceptions.StreamClosedError:
                return 0
            if window > 0:
                return min(window, self.conn.max_outbound_frame_size)
            self._window.clear()
            await self._window.wait()
        return 0

    # timers

    def _arm_idle(self) -> None:
        self._disarm_idle()
        if not self.lost:
            self._idle = self.loop.call_later(self.idle_timeout, self._idle_timed_out)

    def _disarm_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _idle_timed_out(self) -> None:
        self._idle = None
        if not self.running and not self.lost:
            self.conn.close_connection()
            self.flush()
            self._close()

    def _close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


class _Stream:
    """One request: its scope, the body as it arrives, and the answer's progress."""

    __slots__ = (
        "backstop",
        "body",
        "disconnected",
        "ended",
        "protocol",
        "scope",
        "started",
        "status",
        "stream_id",
        "waiter",
        "complete",
    )

    def __init__(self, protocol: H2Protocol, stream_id: int, scope: dict[str, Any]) -> None:
        self.protocol = protocol
        self.stream_id = stream_id
        self.scope = scope
        self.body: deque[tuple[bytes, int]] = deque()
        self.ended = False
        self.disconnected = False
        self.started = False
        self.complete = False
        self.status = 0
        self.waiter: asyncio.Future[None] | None = None
        self.backstop: asyncio.TimerHandle | None = None

    # input, from the protocol

    def feed(self, data: bytes, flow_controlled: int) -> None:
        self.body.append((data, flow_controlled))
        self._wake()

    def end(self) -> None:
        self.ended = True
        if self.backstop is not None:
            self.backstop.cancel()
            self.backstop = None
        self._wake()

    def disconnect(self) -> None:
        self.disconnected = True
        if self.backstop is not None:
            self.backstop.cancel()
            self.backstop = None
        self._wake()

    def body_timed_out(self) -> None:
        self.backstop = None
        if self.ended or self.disconnected:
            return
        self.protocol.on_timeout("body")
        self._reset(h2.errors.ErrorCodes.CANCEL)
        self.disconnect()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # ASGI

    async def receive(self) -> dict[str, Any]:
        """The next body chunk (all that arrived, acknowledged for flow control as it is
        handed over), or ``http.disconnect``."""
        while not self.body and not self.ended and not self.disconnected:
            self.waiter = self.protocol.loop.create_future()
            await self.waiter
            self.waiter = None
        if self.disconnected or self.complete:
            return {"type": "http.disconnect"}
        protocol = self.protocol
        if not self.body:
            return {"type": "http.request", "body": b"", "more_body": False}
        pieces = []
        acknowledged = 0
        while self.body:
            data, flow_controlled = self.body.popleft()
            pieces.append(data)
            acknowledged += flow_controlled
        protocol.acknowledge(acknowledged, self.stream_id)
        body = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        return {"type": "http.request", "body": body, "more_body": not self.ended}

    async def send(self, message: dict[str, Any]) -> None:
        """``http.response.start`` queues the headers; each ``http.response.body`` sends its
        bytes within flow control, the headers with the first."""
        if self.disconnected or self.protocol.lost:
            return
        conn = self.protocol.conn
        if not self.started:
            if message["type"] != "http.response.start":
                raise RuntimeError(f"expected http.response.start, got {message['type']}")
            self.started = True
            self.status = int(message["status"])
            headers = [(b":status", _STATUS.get(self.status) or str(self.status).encode())]
            headers += self.protocol.server_state.default_headers
            for name, value in message.get("headers", ()):
                name = bytes(name).lower()
                if name in _CONNECTION_HEADERS:
                    continue
                headers.append((name, bytes(value)))
            if self.scope["method"] == "HEAD":
                conn.send_headers(self.stream_id, headers, end_stream=True)
                self._completed()
                return
            conn.send_headers(self.stream_id, headers)
            return
        if self.complete or message["type"] != "http.response.body":
            return
        data = memoryview(message.get("body", b""))
        more = bool(message.get("more_body", False))
        protocol = self.protocol
        while len(data):
            room = await protocol.wait_writable(self.stream_id)
            if room <= 0 or self.disconnected:
                return
            piece, data = data[:room], data[room:]
            conn.send_data(self.stream_id, piece.tobytes(), end_stream=not more and not len(data))
            if len(data):
                protocol.flush()
        if not more:
            if not message.get("body"):
                conn.end_stream(self.stream_id)
            self._completed()
        protocol.flush()

    def _completed(self) -> None:
        self.complete = True
        if self.protocol.access_log:
            self.protocol.access_logger.info(
                '%s - "%s %s HTTP/%s" %d',
                get_client_addr(self.scope),  # type: ignore[arg-type]
                self.scope["method"],
                get_path_with_query_string(self.scope),  # type: ignore[arg-type]
                "2",
                self.status,
            )
        if not self.ended:
            # answered before the request body ended (a refusal, which HTTP/1.1 answers with
            # "connection: close"): ask the client to stop sending it (RFC 9113 section 8.1)
            self._reset(h2.errors.ErrorCodes.NO_ERROR)

    def _reset(self, code: h2.errors.ErrorCodes) -> None:
        try:
            self.protocol.conn.reset_stream(self.stream_id, code)
        except h2.exceptions.StreamClosedError:
            pass
        self.protocol.flush()

    async def run(self, app: Any) -> None:
        """Answer the request with ``app``; an exception before the answer started is a 500,
        after it a reset stream (``INTERNAL_ERROR``)."""
        try:
            await app(self.scope, self.receive, self.send)
        except BaseException as exc:
            logging.getLogger("uvicorn.error").error("Exception in ASGI application\n", exc_info=exc)
            if not self.started:
                await self.send({"type": "http.response.start", "status": 500, "headers": [_TEXT]})
                await self.send({"type": "http.response.body", "body": b"Internal Server Error"})
            elif not self.complete:
                self._reset(h2.errors.ErrorCodes.INTERNAL_ERROR)
            if isinstance(exc, asyncio.CancelledError):
                raise
        else:
            if not self.complete and not self.disconnected:
                logging.getLogger("uvicorn.error").error("ASGI callable returned without completing response.")
                self._reset(h2.errors.ErrorCodes.INTERNAL_ERROR)
        finally:
            if self.backstop is not None:
                self.backstop.cancel()
                self.backstop = None
            self.complete = True
            self.protocol.finished(self)


_TEXT = (b"content-type", b"text/plain; charset=utf-8")


__all__ = ["ALPN_H2", "CONNECTION_WINDOW", "MAX_CONCURRENT_STREAMS", "MAX_HEADER_LIST_SIZE", "STREAM_WINDOW", "H2Protocol"]

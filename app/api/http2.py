"""HTTP/2 over TLS (ALPN ``h2``): every call of kube-scheduler on one connection.

kube-scheduler builds its extender transport with ``utilnet.SetTransportDefaults`` (v1.36.3
``pkg/scheduler/extender.go`` ``makeTransport``), which offers ``h2`` by ALPN and keeps at most
two idle HTTP/1.1 connections per host (Go's ``DefaultMaxIdleConnsPerHost``). Over HTTP/1.1 each
bind in flight beyond two opens a TLS connection of its own, most closed after one request, and
each costs the service a handshake on its event loop (about 0.7 ms of CPU with a client
certificate). Over HTTP/2 its filter, prioritize and binds share one connection, a stream each.

:class:`GuardedH2Protocol` is uvicorn's HTTP/2 protocol (``ZttpH2Protocol``: the framing, HPACK
and flow control of ``zttp``, about six times cheaper per request than the pure-Python ``h2``),
taking over a TLS connection whose ALPN chose ``h2`` from
:class:`~app.api.protocol.GuardedHttpToolsProtocol` and serving each stream to the same ASGI app
(:class:`~app.api.edge.VerbRouter`), with the HTTP/1.1 protocol's guards (its docstring).

A connection lives as long as its client keeps it: the zttp on the package index (0.0.35) ends
it after 4,096 streams or 256 resets; the build of ``third_party/zttp`` (``make`` and the image
install it) lifts the lifetime stream cap and makes the reset budget net, so a rapid-reset flood
(CVE-2023-44487) is still cut. With any other zttp build the server offers HTTP/1.1 alone
(:func:`engine_keeps_connections`).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import zttp
from uvicorn.config import Config
from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT
from uvicorn.protocols.http.zttp_h2_impl import FORBIDDEN_HEADERS, ZttpH2Protocol
from uvicorn.server import ServerState

from app.api.edge import OVER_CAPACITY, PEER_CN, PEER_GROUPS, DirectRequest, answer_when_ready, log_access
from app.api.service import Answer

if TYPE_CHECKING:
    from app.api.edge import VerbRouter

log = logging.getLogger(__name__)

#: The ALPN protocol name of HTTP/2 over TLS.
ALPN_H2 = "h2"
#: The local version label of the zttp build that keeps a connection as long as its client does
#: (``third_party/zttp``: upstream 0.0.35 caps the streams a peer may ever open on one connection
#: at 4,096 and its resets at 256, then sends ``GOAWAY ENHANCE_YOUR_CALM``).
LONG_CONNECTIONS = "longconn"


def engine_keeps_connections(version: str | None = None) -> bool:
    """Whether the installed zttp (or ``version``, a version string) serves any number of streams
    on one connection: the patched build of ``third_party/zttp`` (local label
    :data:`LONG_CONNECTIONS`). Any other build tears kube-scheduler's one HTTP/2 connection down
    every 4,096 requests, failing the requests in flight, so :func:`app.api.server.uvicorn_config`
    then offers HTTP/1.1 alone."""
    if version is None:
        version = zttp_version()
    return version is not None and version.partition("+")[2].startswith(LONG_CONNECTIONS)


def zttp_version() -> str | None:
    """The installed zttp's version (``None``: not installed)."""
    try:
        return importlib.metadata.version("zttp")
    except importlib.metadata.PackageNotFoundError:
        return None


#: RST_STREAM error code CANCEL.
CANCEL = 0x8
#: RST_STREAM error code REFUSED_STREAM: the stream was not processed, the client may retry it
#: (Go's transport does, on another connection).
REFUSED_STREAM = 0x7
#: GOAWAY error code NO_ERROR: a graceful shutdown.
NO_ERROR = 0x0


class GuardedH2Protocol(ZttpH2Protocol):
    """uvicorn's HTTP/2 protocol with the HTTP/1.1 protocol's guards; ``peer`` is the TLS client
    certificate's ``(CN, O values)`` (:func:`~app.api.protocol.peer_identity`).

    - ``idle``: a connection with no stream open is closed (GOAWAY) ``idle`` after it opened or its
      last stream ended; frames that open no stream (PING, SETTINGS, WINDOW_UPDATE, a partial header
      block) do not extend it, which also bounds a request whose headers trickle in;
    - ``body`` (+1 s): a stream whose request body has not ended by then is reset; the verb router
      answers its own 408 at ``body``;
    - shutdown: GOAWAY (NO_ERROR, the last stream opened) at once, every stream up to it answered,
      streams the client opened after it refused (REFUSED_STREAM: Go's transport retries them on a
      new connection), then the connection closed;
    - ``maxConnections``: a request on a connection past it is marked over capacity (503, as over
      HTTP/1.1); the connection counts once, whatever its streams;
    - a client that does not read what it is sent is not read either (its PINGs and SETTINGS each
      owe an answer): the answers it leaves unread stay bounded by the transport's high-water mark;
    - requests whose streams the client reset (a "rapid reset") still count against
      ``server.maxRequestsInFlight`` until their verb returns, so they cannot queue unbounded work;
    - the verified client certificate's identity is in every request's scope, as over HTTP/1.1 (bind
      checks it); the body limits are the verb router's.

    A connection lives as long as its client keeps it: kube-scheduler's Go transport keeps one for
    as long as it can, and the zttp on the package index (0.0.35) ends it after 4,096 streams or 256
    resets in its life (``GOAWAY ENHANCE_YOUR_CALM``). The build of ``third_party/zttp`` (``make``
    and the image install it) lifts the lifetime stream cap and makes the reset budget net of the
    streams completed normally, so a rapid-reset flood (CVE-2023-44487) is still cut;
    ``SETTINGS_MAX_CONCURRENT_STREAMS`` (128) bounds the streams live at once. With any other zttp
    build the server offers HTTP/1.1 alone (:func:`engine_keeps_connections`).

    As over HTTP/1.1, it answers the verb router's direct requests itself
    (:meth:`~app.api.edge.VerbRouter.direct`: most verb streams (filter, prioritize, preempt, an
    allowed bind), with a body of at most uvicorn's high-water mark, 64 KiB: 1,400 node names),
    without an ASGI task: the stream's
    body collected as uvicorn collects it, the answer's HEADERS, DATA and END_STREAM written in one
    write (the server's default headers, then the answer's, as the ASGI cycle sends them); ``body``
    after its headers a stream whose body has not ended gets the router's 408; a stream reset or a
    connection lost before its body ended is no longer in flight; a verb evaluated in the worker thread
    is awaited by a task the server's shutdown waits for.
    """

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        peer: tuple[str | None, tuple[str, ...]],
        body_backstop: float,
        max_connections: int,
        on_timeout: Any,
        loop: asyncio.AbstractEventLoop | None = None,
        router: VerbRouter | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, loop)
        self.peer_cn, self.peer_groups = peer
        self.body_backstop = body_backstop
        self.max_connections = max_connections
        self.on_timeout = on_timeout
        #: the verb router whose direct requests this protocol answers itself (``None``: none)
        self.router = router
        self._deadlines: dict[int, asyncio.TimerHandle] = {}
        self._idle_since = self.loop.time()
        #: the highest stream the client opened; after a graceful GOAWAY, the last one answered
        self._last_stream = 0
        #: a GOAWAY went out (shutdown, or zttp's after a connection error): none other follows it
        self._goaway_sent = False
        #: after a connection error, nothing more is read
        self._read_no_more = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._idle_since = self.loop.time()
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)

    def data_received(self, data: bytes) -> None:
        """uvicorn's, but for two things: frames that open no stream do not extend ``idle``, and a
        connection error (a flood, a malformed frame: zttp's GOAWAY with its code and the last
        stream it read) ends the connection as Go's server does, the streams read whole still
        answered (:meth:`_end_after_error`), not at once."""
        if self._read_no_more:
            return
        had_streams = bool(self.cycles)
        self._unset_keepalive_if_required()
        try:
            self.conn.receive_data(data)
            self.handle_events()
        except zttp.RemoteProtocolError as exc:
            self.logger.warning("Invalid HTTP/2 frame received: %s", exc)
            self._end_after_error()
            return
        self.flush()
        if not self.cycles and not self.transport.is_closing():
            # idle: ``idle`` after the connection opened or its last stream ended; frames that
            # opened no stream do not extend it
            left = self._idle_since + self.timeout_keep_alive - self.loop.time()
            self._unset_keepalive_if_required()  # the one a stream's end armed meanwhile
            self.timeout_keep_alive_task = self.loop.call_later(
                max(left, 0) if not had_streams else self.timeout_keep_alive, self.timeout_keep_alive_handler
            )

    def _end_after_error(self) -> None:
        """zttp found a connection error and queued its GOAWAY (ENHANCE_YOUR_CALM for a flood, the
        last stream it read): write it, read nothing more, answer the streams open (their bodies
        read whole; one whose body never ends meets its ``body`` deadline), then close."""
        self.flush()
        self._goaway_sent = self._read_no_more = self.shutdown_requested = True
        if self.cycles:
            self.transport.pause_reading()
        else:
            self._close_connection()

    def shutdown(self) -> None:
        """The server stops (SIGTERM): as Go's server does, GOAWAY (NO_ERROR) at once, naming the
        last stream opened, so the client sends its next requests on a new connection (another
        replica, or this one restarted) and retries any it opened meanwhile (refused with
        REFUSED_STREAM, :meth:`handle_request`); every stream up to it is answered, then the
        connection is closed (uvicorn's ``shutdown``: at once when none is open)."""
        if not self._goaway_sent and not self.transport.is_closing():
            self._goaway_sent = True
            self.conn.close(NO_ERROR, self._last_stream)
            self.flush()
        super().shutdown()

    def _close_connection(self) -> None:
        """uvicorn's (GOAWAY, then close), on the next turn of the loop: the stream whose end
        closes the connection (at shutdown, or after the client's GOAWAY) completes inside its
        last ASGI ``send``, before its one-write transport has written the answer it holds
        (:class:`_OneWrite`); closed at once, the transport would drop that answer. No second
        GOAWAY after one of :meth:`shutdown` or :meth:`_end_after_error` (a later one could only
        name a higher stream, which RFC 9113 6.8 forbids)."""
        self.loop.call_soon(self._close_now)

    def _close_now(self) -> None:
        if self.transport.is_closing() or self.cycles:
            # a stream opened meanwhile (an idle close whose turn came after the client's next
            # request): the connection is not idle; the last stream's end closes it at shutdown
            # or after an error, and arms the idle deadline otherwise
            return
        if not self._goaway_sent:
            self.conn.close()
        self.flush()
        self.transport.close()

    def pause_writing(self) -> None:
        """The client does not read what is written to it (the transport's buffer is past its
        high-water mark): stop reading it too, so frames that each owe an answer (PING,
        SETTINGS: the 2019 ping and settings floods) cannot grow the buffer without bound; a
        stream's body deadline and the idle deadline still end such a connection."""
        super().pause_writing()
        if not self.transport.is_closing():
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        super().resume_writing()
        if not self.flow.read_paused and not self._read_no_more and not self.transport.is_closing():
            self.transport.resume_reading()  # unless a stream's body holds reading back

    def on_stream_closed(self) -> None:
        if not self.cycles:
            self._idle_since = self.loop.time()
        super().on_stream_closed()

    def handle_request(self, event: zttp.Request) -> None:
        if self._goaway_sent and event.stream_id > self._last_stream:
            # opened before the client read the GOAWAY: not processed, which it may retry elsewhere
            self.conn.stream(event.stream_id).reset(REFUSED_STREAM)
            return
        self._last_stream = max(self._last_stream, event.stream_id)
        if self.router is not None and event.method == b"POST" and self._direct(event):
            return
        super().handle_request(event)
        stream_id = event.stream_id
        cycle = self.cycles.get(stream_id)
        if cycle is None:
            return
        cycle.transport = _OneWrite(self.transport, cycle)  # type: ignore[assignment]
        scope: Any = cycle.scope
        scope[PEER_CN] = self.peer_cn
        scope[PEER_GROUPS] = self.peer_groups
        if len(self.connections) > self.max_connections:
            scope[OVER_CAPACITY] = True
        self._deadlines[stream_id] = self.loop.call_later(self.body_backstop, self._body_deadline, stream_id)

    def handle_rst_stream(self, event: zttp.RstStream) -> None:
        self._forget(event.stream_id)
        self._abandon(self.cycles.get(event.stream_id))
        super().handle_rst_stream(event)

    def on_response_complete(self, stream_id: int) -> None:
        self._forget(stream_id)
        super().on_response_complete(stream_id)

    def connection_lost(self, exc: Exception | None) -> None:
        for deadline in self._deadlines.values():
            deadline.cancel()
        self._deadlines.clear()
        for cycle in list(self.cycles.values()):
            self._abandon(cycle)
        super().connection_lost(exc)

    # -- direct requests ------------------------------------------------------------------------

    def _direct(self, event: zttp.Request) -> bool:
        """Whether the router takes ``event``'s request directly (:meth:`VerbRouter.direct`): then
        a :class:`_DirectStream` stands for its cycle, answered once its body has ended."""
        router = self.router
        if (
            router is None
            or self.shutdown_requested
            or self.limit_concurrency is not None
            or self.flow.write_paused
            or event.stream_id in self.cycles
        ):
            return False
        path = unquote(event.path.decode("ascii"))
        headers = (
            event.headers.to_list(lowercase_names=True)
            if isinstance(event.headers, zttp.HeaderBlock)
            else [(name.lower(), value) for name, value in event.headers]
        )
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": self.asgi_version, "spec_version": "2.3"},
            "http_version": "2",
            "server": self.server,
            "client": self.client,
            "scheme": self.scheme,
            "method": "POST",
            "root_path": self.root_path,
            "path": self.root_path + path,
            "raw_path": self.root_path.encode("ascii") + event.path,
            "query_string": event.query,
            "headers": headers,
            PEER_CN: self.peer_cn,
            PEER_GROUPS: self.peer_groups,
        }
        if len(self.connections) > self.max_connections:
            scope[OVER_CAPACITY] = True
        # bodies up to uvicorn's high-water mark: above it, it stops reading the connection until
        # the ASGI cycle holding the body takes it (a direct stream's body is no one's to take)
        request = router.direct(scope, HIGH_WATER_LIMIT)
        if request is None:
            return False
        stream_id = event.stream_id
        self.cycles[stream_id] = _DirectStream(request, scope, self.conn.stream(stream_id), self._body_ended)  # type: ignore[assignment]
        self._deadlines[stream_id] = self.loop.call_later(router.body_timeout, self._direct_timed_out, stream_id)
        return True

    def _body_ended(self, stream: _DirectStream) -> None:
        """uvicorn's event loop saw the stream's body end (or data, or a reset): answer it."""
        if stream.more_body or stream.disconnected or stream.response_complete or stream.answering:
            return
        assert self.router is not None
        self._forget(stream.stream.stream_id)
        stream.answering = True
        answer = self.router.direct_answer(stream.request, stream.body)
        answer_when_ready(self.loop, self.tasks, answer, lambda ready: self._send_direct(stream, ready))

    def _direct_timed_out(self, stream_id: int) -> None:
        """``server.timeouts.body`` after a direct stream's headers, its body has not ended: the
        router's 408 on the stream."""
        self._deadlines.pop(stream_id, None)
        stream = self.cycles.get(stream_id)
        if isinstance(stream, _DirectStream) and not stream.answering and self.router is not None:
            stream.answering = True
            self._send_direct(stream, self.router.direct_timed_out(stream.request))

    def _send_direct(self, stream: _DirectStream, answer: Answer) -> None:
        """Write a direct stream's answer as uvicorn's HTTP/2 cycle would (the server's default
        headers, then the answer's), HEADERS, DATA and END_STREAM in one write; count it
        (:meth:`VerbRouter.direct_done`) and close the stream."""
        stream.response_complete = True
        body = answer.body
        data = body if isinstance(body, bytes) else b"".join(body)
        stream.body = bytearray()
        if not stream.disconnected and not self.transport.is_closing():
            defaults = self.server_state.default_headers
            headers = [(name, value) for name, value in defaults if name not in FORBIDDEN_HEADERS]
            headers += [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data))]
            if answer.retry_after is not None:
                headers.append((b"retry-after", b"%d" % answer.retry_after))
            try:
                stream.stream.send_response(answer.status, headers)
                if data:
                    stream.stream.send_data(data)
                stream.stream.end_message()
            except zttp.LocalProtocolError:  # the stream is no longer open for an answer
                log.exception("answering stream %d", stream.stream.stream_id)
                stream.stream.reset()
            self.transport.write(self.conn.data_to_send())
            if self.access_log:
                log_access(self.access_logger, stream.scope, answer.status)
        assert self.router is not None
        self.router.direct_done(stream.request, answer)
        current: Any = self.cycles.get(stream.stream.stream_id)
        if current is stream:
            self.on_response_complete(stream.stream.stream_id)

    def _abandon(self, cycle: Any) -> None:
        """A direct stream reset, or its connection lost, before its body ended: nobody to answer,
        no longer in flight (one whose verb runs stays in flight until it returns)."""
        if isinstance(cycle, _DirectStream) and not cycle.answering and self.router is not None:
            cycle.answering = True
            self.router.direct_done(cycle.request, None)

    def _forget(self, stream_id: int) -> None:
        deadline = self._deadlines.pop(stream_id, None)
        if deadline is not None:
            deadline.cancel()

    def _body_deadline(self, stream_id: int) -> None:
        """``body`` (+1 s) after a request began: reset its stream if its body has not ended."""
        self._deadlines.pop(stream_id, None)
        cycle = self.cycles.get(stream_id)
        if cycle is None or not cycle.more_body or cycle.response_complete or cycle.disconnected:
            return
        self.on_timeout("body")
        cycle.stream.reset(CANCEL)
        self.flush()
        cycle.disconnected = True
        cycle.message_event.set()


class _DirectStream:
    """A direct request's stream where uvicorn's protocol keeps its request cycles
    (``ZttpH2Protocol.cycles``): the attributes its event loop sets (``body``, ``more_body``,
    ``disconnected``) and reads (``response_complete``); its ``message_event.set()``, called on
    each of those events, lets the protocol answer once the body has ended."""

    __slots__ = (
        "answering",
        "body",
        "disconnected",
        "message_event",
        "more_body",
        "request",
        "response_complete",
        "scope",
        "stream",
    )

    def __init__(
        self,
        request: DirectRequest,
        scope: dict[str, Any],
        stream: Any,
        ended: Callable[[_DirectStream], None],
    ) -> None:
        self.request = request
        self.scope = scope
        self.stream = stream
        self.body = bytearray()
        self.more_body = True
        self.disconnected = False
        self.response_complete = False
        self.answering = False
        self.message_event = _Signal(lambda: ended(self))


class _Signal:
    """What uvicorn's HTTP/2 protocol calls ``message_event``: its ``set()`` calls back."""

    __slots__ = ("set",)

    def __init__(self, callback: Callable[[], None]) -> None:
        self.set = callback


class _OneWrite:
    """The transport as one HTTP/2 request cycle of uvicorn writes to it: what one ASGI ``send``
    queues goes out in one write, and the headers of ``http.response.start`` wait for the body
    (uvicorn writes HEADERS, DATA and the END_STREAM frame separately: three TLS records and three
    wake-ups of the client for one small answer). Frames of other streams and of the connection
    are written by the protocol meanwhile; this stream's DATA is only ever queued by its own
    ``send``, after its HEADERS. Everything else is the transport's. Once the answer is complete
    the cycle no longer refers to it (no reference cycle left for the collector)."""

    __slots__ = ("_held", "_transport")

    def __init__(self, transport: asyncio.Transport, cycle: Any) -> None:
        self._transport = transport
        self._held: list[bytes] = []
        send, abort = cycle.send, cycle.abort_stream

        async def send_once(message: Any) -> None:
            try:
                await send(message)
            finally:
                if message["type"] != "http.response.start" or cycle.response_complete or cycle.disconnected:
                    self.flush()
                if cycle.response_complete or cycle.disconnected:
                    release()

        def abort_once() -> None:
            abort()
            self.flush()
            release()

        def release() -> None:  # the cycle's references to these closures: no reference cycle left
            cycle.__dict__.pop("send", None)
            cycle.__dict__.pop("abort_stream", None)

        cycle.send, cycle.abort_stream = send_once, abort_once

    def write(self, data: bytes) -> None:
        if data:
            self._held.append(data)

    def flush(self) -> None:
        """Write what is held, in one write."""
        held = self._held
        if held:
            data = held[0] if len(held) == 1 else b"".join(held)
            held.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


__all__ = ["ALPN_H2", "LONG_CONNECTIONS", "GuardedH2Protocol", "engine_keeps_connections", "zttp_version"]

"""HTTP/2 over TLS (ALPN ``h2``): every call of kube-scheduler on one connection.

kube-scheduler builds its extender transport with ``utilnet.SetTransportDefaults`` (v1.30
``pkg/scheduler/extender.go`` ``makeTransport``), which offers ``h2`` by ALPN and keeps at most
two idle HTTP/1.1 connections per host (Go's ``DefaultMaxIdleConnsPerHost``). Over HTTP/1.1 each
bind in flight beyond two opens a TLS connection of its own, most closed after one request, and
each costs the service a handshake on its event loop (about 0.7 ms of CPU with a client
certificate). Over HTTP/2 its filter, prioritize and binds share one connection, a stream each.

:class:`GuardedH2Protocol` is uvicorn's HTTP/2 protocol (``ZttpH2Protocol``: the framing, HPACK
and flow control of ``zttp``, about six times cheaper per request than the pure-Python ``h2``
measured on kube-scheduler's traffic), taking over a TLS connection whose ALPN chose ``h2`` from
:class:`~app.api.server.GuardedHttpToolsProtocol`, and serving each stream to the same ASGI app as
HTTP/1.1 (:class:`~app.api.edge.VerbRouter`: the raw verb path, everything else to FastAPI). It
adds the HTTP/1.1 protocol's guards:

- ``idle``: a connection with no stream open is closed (GOAWAY) ``idle`` after it opened or its
  last stream ended; frames that open no stream (PING, SETTINGS, WINDOW_UPDATE, a partial header
  block) do not extend it, which also bounds a request whose headers trickle in;
- ``body`` (+1 s): a stream whose request body has not ended by then is reset; the verb router
  answers its own 408 at ``body``;
- ``maxConnections``: a request on a connection past it is marked over capacity (503, as over
  HTTP/1.1); the connection counts once, whatever its streams;
- requests whose streams the client reset (a "rapid reset") still count against
  ``server.maxRequestsInFlight`` until their verb returns, so they cannot queue unbounded work;
- the verified client certificate's identity is in every request's scope, as over HTTP/1.1 (bind
  checks it); the body limits are the verb router's.
"""

from __future__ import annotations

import asyncio
from typing import Any

import zttp
from uvicorn.config import Config
from uvicorn.protocols.http.zttp_h2_impl import ZttpH2Protocol
from uvicorn.server import ServerState

from app.api.edge import OVER_CAPACITY, PEER_CN, PEER_GROUPS

#: The ALPN protocol name of HTTP/2 over TLS.
ALPN_H2 = "h2"
#: RST_STREAM error code CANCEL.
CANCEL = 0x8


class GuardedH2Protocol(ZttpH2Protocol):
    """uvicorn's HTTP/2 protocol with the guards of the module doc; ``peer`` is the TLS client
    certificate's ``(CN, O values)`` (:func:`~app.api.server.peer_identity`)."""

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
    ) -> None:
        super().__init__(config, server_state, app_state, loop)
        self.peer_cn, self.peer_groups = peer
        self.body_backstop = body_backstop
        self.max_connections = max_connections
        self.on_timeout = on_timeout
        self._deadlines: dict[int, asyncio.TimerHandle] = {}
        self._idle_since = self.loop.time()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._idle_since = self.loop.time()
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)

    def data_received(self, data: bytes) -> None:
        had_streams = bool(self.cycles)
        super().data_received(data)
        if not self.cycles and self.timeout_keep_alive_task is not None and not had_streams:
            # frames that opened no stream: the connection still closes ``idle`` after it
            # opened or its last stream ended (uvicorn re-arms the timer from now)
            self.timeout_keep_alive_task.cancel()
            left = self._idle_since + self.timeout_keep_alive - self.loop.time()
            self.timeout_keep_alive_task = self.loop.call_later(max(left, 0), self.timeout_keep_alive_handler)

    def on_stream_closed(self) -> None:
        if not self.cycles:
            self._idle_since = self.loop.time()
        super().on_stream_closed()

    def handle_request(self, event: zttp.Request) -> None:
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
        super().handle_rst_stream(event)

    def on_response_complete(self, stream_id: int) -> None:
        self._forget(stream_id)
        super().on_response_complete(stream_id)

    def connection_lost(self, exc: Exception | None) -> None:
        for deadline in self._deadlines.values():
            deadline.cancel()
        self._deadlines.clear()
        super().connection_lost(exc)

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


__all__ = ["ALPN_H2", "GuardedH2Protocol"]

"""The connection protocol of both listeners: uvicorn's HTTP/1.1 (httptools) with the
connection-level guards uvicorn lacks, and the verb router's direct answers.

uvicorn (0.54, httptools) closes a keep-alive connection that stays idle after an answer, but
arms nothing for a connection that has not sent a request yet, nor for one that sends its request
slowly: one idle or trickling client holds a socket forever. :class:`GuardedHttpToolsProtocol`
adds, per connection (``server.timeouts`` and ``server.maxConnections``):

- ``idle``: a connection must begin a request within it of opening or of its last answer
  (uvicorn's keep-alive timer, armed at accept as well as after each answer; blank lines, which
  begin no request, do not extend it);
- ``header``: a request's headers must be complete within it of its first byte; else
  ``408`` and the connection is closed;
- ``body`` (+1 s): a backstop that closes a connection whose body never completes when no
  handler reads it (the verb router answers its own 408 at ``body``);
- past ``maxConnections`` open connections, a request is marked over capacity and answered 503
  with ``Retry-After`` (:data:`~app.api.edge.OVER_CAPACITY`), ``/healthz`` and ``/readyz``
  excepted so the kubelet's probes still see a live process.

It also answers the verb router's direct requests itself (:meth:`~app.api.edge.VerbRouter.direct`:
most verb requests, binds included), without uvicorn's ASGI task: the body collected
into the request cycle's buffer (``body`` deadline: the router's 408 and the connection closed),
the answer written as uvicorn's cycle writes it (status line, the server's default headers, the
answer's, head and body in one write; ``connection: close`` and the close when the request or a
shutdown asks for it), the access line, then keep-alive or the next pipelined request as uvicorn
does. A verb evaluated in the worker thread is awaited by a task the server's shutdown waits for.
A TLS connection whose ALPN chose ``h2`` is handed to :class:`~app.api.http2.GuardedH2Protocol`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from app.api.edge import (
    OVER_CAPACITY,
    PEER_CN,
    PEER_GROUPS,
    DirectRequest,
    VerbRouter,
    answer_when_ready,
    log_access,
)
from app.api.http2 import ALPN_H2, GuardedH2Protocol
from app.api.service import Answer
from app.config import ServerConfig

_TIMEOUT_BODY = b'{"Error":"the request headers did not arrive within server.timeouts.header"}'
_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\ncontent-length: "
    + str(len(_TIMEOUT_BODY)).encode()
    + b"\r\nconnection: close\r\n\r\n"
    + _TIMEOUT_BODY
)


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with idle, header and body deadlines and a connection cap
    (see the module doc). Configured through :func:`protocol_class`."""

    header_timeout: float = 5.0
    body_backstop: float = 11.0
    max_connections: int = 1024
    on_timeout: Callable[[str], None] = staticmethod(lambda phase: None)
    #: the verb router whose verb requests this protocol answers itself
    #: (:meth:`VerbRouter.direct`); ``None``: every request through the ASGI cycle
    router: VerbRouter | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None and ssl_object.selected_alpn_protocol() == ALPN_H2:
            http2 = GuardedH2Protocol(  # the client chose HTTP/2
                self.config,
                self.server_state,
                self.app_state,
                peer_identity(transport),
                self.body_backstop,
                self.max_connections,
                self.on_timeout,
                self.loop,
                self.router,
            )
            transport.set_protocol(http2)
            http2.connection_made(transport)
            return
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._starting = False  # within on_headers_complete: a request may be answered directly
        self._direct: DirectRequest | None = None
        self._direct_cycle: Any = None  # the request cycle of ``_direct``
        self._peer_cn, self._peer_groups = peer_identity(transport)
        self._idle_since = self.loop.time()
        # idle before the first request, as uvicorn does between requests
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        direct = self._direct
        if direct is not None and self.router is not None and self._direct_cycle.more_body:
            self.router.direct_done(direct, None)  # gone before its body was whole: nobody to answer
            self._direct = self._direct_cycle = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        idle_since = self._idle_since
        super().data_received(data)  # cancels the idle timer
        if self._idle_since != idle_since:
            return  # an answer went out (a direct one): its idle timer is armed
        between_requests = self.cycle is None or self.cycle.response_complete
        if self._deadline is None and between_requests and not self.transport.is_closing():
            # bytes that began no request (blank lines, which httptools skips) do not extend the
            # idle time: the connection still closes ``idle`` after it opened or last answered
            left = self._idle_since + self.timeout_keep_alive - self.loop.time()
            self._unset_keepalive_if_required()
            self.timeout_keep_alive_task = self.loop.call_later(max(left, 0), self.timeout_keep_alive_handler)

    def on_response_complete(self) -> None:
        self._idle_since = self.loop.time()
        super().on_response_complete()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope[PEER_CN] = self._peer_cn  # type: ignore[literal-required]
        self.scope[PEER_GROUPS] = self._peer_groups  # type: ignore[literal-required]
        self._arm(self.header_timeout, self._header_timed_out)

    def on_headers_complete(self) -> None:
        self._disarm()
        if len(self.connections) > self.max_connections:
            self.scope[OVER_CAPACITY] = True  # type: ignore[literal-required]
        previous = self.cycle
        self._starting = True
        try:
            super().on_headers_complete()
        finally:
            self._starting = False
        if self.cycle is not previous:
            if self.cycle is self._direct_cycle:
                assert self.router is not None
                self._arm(self.router.body_timeout, self._direct_timed_out)
                return
            # a request cycle began: its head goes out with its body
            self.cycle.transport = _HeadWithBody(self.transport, self.cycle)  # type: ignore[assignment]
        self._arm(self.body_backstop, self._body_timed_out)

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        """uvicorn begins a request cycle: a verb request the router takes directly
        (:meth:`VerbRouter.direct`) is answered by :meth:`_answer_direct` once its body is whole,
        without an ASGI task; any other request, one that waited behind a pipelined answer, and
        one that arrives while the client is not reading the answers written (the ASGI cycle
        waits for them to drain) goes to the ASGI app."""
        router = self.router
        if (
            router is not None
            and self._starting
            and app is self.app
            and not cycle.waiting_for_100_continue
            and not self.flow.write_paused
        ):
            direct = router.direct(cycle.scope)
            if direct is not None:
                self._direct, self._direct_cycle = direct, cycle
                return
        super()._start_asgi_task(cycle, app)

    def on_body(self, body: bytes) -> None:
        if self._direct is not None and self.cycle is self._direct_cycle:
            self.cycle.body += body  # at most VerbRouter.direct_bytes: no pause, nobody to wake
            return
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._disarm()
        if self._direct is not None and self.cycle is self._direct_cycle:
            self.cycle.more_body = False
            self._answer_direct()
            return
        super().on_message_complete()

    def _answer_direct(self) -> None:
        """Answer the direct request whose body is whole: at once, or once the worker thread has."""
        direct, cycle = self._direct, self._direct_cycle
        assert direct is not None and self.router is not None
        answer = self.router.direct_answer(direct, cycle.body)
        answer_when_ready(self.loop, self.tasks, answer, lambda ready: self._send_direct(direct, cycle, ready))

    def _direct_timed_out(self) -> None:
        """``server.timeouts.body`` after a direct request's headers: its body is not whole; the
        router's 408, and the connection is closed."""
        self._deadline = None
        direct = self._direct
        if direct is not None and self.router is not None:
            self._send_direct(direct, self._direct_cycle, self.router.direct_timed_out(direct), close=True)

    def _send_direct(self, direct: DirectRequest, cycle: Any, answer: Answer, close: bool = False) -> None:
        """Write a direct request's answer as uvicorn's cycle would (its status line, the server's
        default headers, then the answer's), head and body in one write; close the connection
        after it when asked, or when the request or a shutdown said so; then count it
        (:meth:`VerbRouter.direct_done`) and let the connection go on (keep-alive, pipelining)."""
        if self._direct is direct:
            self._direct = self._direct_cycle = None
        body = answer.body
        chunks = [body] if isinstance(body, bytes) else body
        size = 0
        for chunk in chunks:
            size += len(chunk)
        keep_alive = cycle.keep_alive and not close
        cycle.response_started = cycle.response_complete = True
        cycle.body = b""
        if not cycle.disconnected and not self.transport.is_closing():
            head = [STATUS_LINE[answer.status]]
            for name, value in self.server_state.default_headers:
                head += [name, b": ", value, b"\r\n"]
            head.append(b"content-type: application/json\r\ncontent-length: %d\r\n" % size)
            if answer.retry_after is not None:
                head.append(b"retry-after: %d\r\n" % answer.retry_after)
            if not keep_alive:
                head.append(b"connection: close\r\n")
            head.append(b"\r\n")
            self.transport.write(b"".join([*head, *chunks]))
            if self.access_log:
                log_access(self.access_logger, cycle.scope, answer.status)
            if not keep_alive:
                self.transport.close()
        assert self.router is not None
        self.router.direct_done(direct, answer)
        self.on_response_complete()

    def _arm(self, seconds: float, callback: Callable[[], None]) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, callback)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _header_timed_out(self) -> None:
        self._deadline = None
        self.on_timeout("header")
        if not self.transport.is_closing():
            self.transport.write(_TIMEOUT_RESPONSE)
            self.transport.close()

    def _body_timed_out(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.on_timeout("body")
            self.transport.close()


class _HeadWithBody:
    """The transport as one request cycle of uvicorn writes to it, holding the answer's status line
    and headers until its first body bytes (or the answer's end: a HEAD), so both go out in one
    write: one TLS record, one segment, the client woken once. Everything else is the transport's.
    It lets go of the cycle once the answer is complete (no reference cycle left for the
    collector)."""

    __slots__ = ("_cycle", "_head", "_state", "_transport")

    def __init__(self, transport: asyncio.Transport, cycle: Any) -> None:
        self._transport = transport
        self._cycle: Any = cycle
        self._head = b""
        self._state = 0  # 0: before the head, 1: holding it, 2: it went out
        on_response = cycle.on_response

        def completed() -> None:
            self.flush()
            self._cycle = None
            on_response()

        cycle.on_response = completed

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._state == 1:
            self._state = 2
            self._transport.write(b"".join((self._head, data)))
            self._head = b""
        elif self._state == 0 and self._cycle is not None and self._cycle.response_started:
            self._state = 1  # uvicorn writes the head as the answer starts (after any 100 Continue)
            self._head = bytes(data)
        else:
            self._transport.write(data)

    def flush(self) -> None:
        """Write a head still held."""
        if self._state == 1:
            self._state = 2
            self._transport.write(self._head)
            self._head = b""

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def peer_identity(transport: asyncio.BaseTransport) -> tuple[str | None, tuple[str, ...]]:
    """``(CN, O values)`` of the client certificate the TLS handshake verified: the user and the
    groups kube-apiserver's x509 authenticator reads (``CommonNameUserConversion``,
    k8s.io/apiserver pkg/authentication/request/x509/x509.go); ``(None, ())`` over plain HTTP or
    without a certificate (``getpeercert()`` is empty for a certificate that was not verified)."""
    ssl_object = transport.get_extra_info("ssl_object")
    cert = ssl_object.getpeercert() if ssl_object is not None else None
    name: str | None = None
    groups: list[str] = []
    for rdn in (cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName" and name is None:
                name = str(value)
            elif key == "organizationName":
                groups.append(str(value))
    return name, tuple(groups)


def protocol_class(
    server: ServerConfig, on_timeout: Callable[[str], None], router: VerbRouter | None = None
) -> type[GuardedHttpToolsProtocol]:
    """:class:`GuardedHttpToolsProtocol` configured from ``server``; ``on_timeout(phase)`` is
    called for each connection closed for a ``header`` or ``body`` that did not arrive;
    ``router``: the verb router whose requests it may answer directly (the verb listener's)."""
    return type(
        "GuardedHttpToolsProtocol",
        (GuardedHttpToolsProtocol,),
        {
            "header_timeout": server.timeouts.seconds("header"),
            "body_backstop": server.timeouts.seconds("body") + 1.0,
            "max_connections": server.max_connections,
            "on_timeout": staticmethod(on_timeout),
            "router": router,
        },
    )


__all__ = ["GuardedHttpToolsProtocol", "peer_identity", "protocol_class"]

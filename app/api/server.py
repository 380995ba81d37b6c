"""The HTTP server: uvicorn with the connection-level guards uvicorn lacks, and a bounded shutdown.

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

:func:`run` serves until SIGTERM/SIGINT and lets requests in flight finish within
``server.timeouts.shutdown``; uvicorn then cancels what is left and re-raises the signal with
its default action, which ends the process even while a verb is busy in the worker thread
(exit status 143 for SIGTERM, as for any process SIGTERM ends).
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.api.edge import OVER_CAPACITY, VerbRouter
from app.config import ServerConfig

log = logging.getLogger(__name__)

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

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._idle_since = self.loop.time()
        # idle before the first request, as uvicorn does between requests
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # cancels the idle timer
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
        self._arm(self.header_timeout, self._header_timed_out)

    def on_headers_complete(self) -> None:
        self._disarm()
        if len(self.connections) > self.max_connections:
            self.scope[OVER_CAPACITY] = True  # type: ignore[literal-required]
        super().on_headers_complete()
        self._arm(self.body_backstop, self._body_timed_out)

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

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


def protocol_class(server: ServerConfig, on_timeout: Callable[[str], None]) -> type[GuardedHttpToolsProtocol]:
    """:class:`GuardedHttpToolsProtocol` configured from ``server``; ``on_timeout(phase)`` is
    called for each connection closed for a ``header`` or ``body`` that did not arrive."""
    return type(
        "GuardedHttpToolsProtocol",
        (GuardedHttpToolsProtocol,),
        {
            "header_timeout": server.timeouts.seconds("header"),
            "body_backstop": server.timeouts.seconds("body") + 1.0,
            "max_connections": server.max_connections,
            "on_timeout": staticmethod(on_timeout),
        },
    )


def raise_open_files_limit(wanted: int) -> None:
    """Raise the soft ``RLIMIT_NOFILE`` towards ``wanted`` (up to the hard limit), so that
    ``maxConnections`` is reachable; warns when the hard limit is lower."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= wanted:
        return
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    if target < wanted:
        log.warning("open files limited to %d: server.maxConnections cannot be reached", target)


def uvicorn_config(app: VerbRouter, host: str, port: int, options: dict[str, Any]) -> uvicorn.Config:
    """The ``uvicorn.Config`` serving ``app`` with the guarded protocol and the configured
    timeouts. ``options``: further ``uvicorn.Config`` arguments (log level, access log, TLS files)."""
    server = app.service.config.server
    timeouts = server.timeouts
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol_class(server, lambda phase: app.metrics.timeouts.labels(phase).inc()),
        lifespan="off",
        workers=1,  # the cluster cache lives in-process: scale with replicas
        timeout_keep_alive=max(1, round(timeouts.seconds("idle"))),
        timeout_graceful_shutdown=max(1, round(timeouts.seconds("shutdown"))),
        server_header=False,
        **options,
    )


def run(app: VerbRouter, host: str, port: int, options: dict[str, Any]) -> None:
    """Serve ``app`` until SIGTERM or SIGINT (see the module doc)."""
    raise_open_files_limit(app.service.config.server.max_connections + 64)
    uvicorn.Server(uvicorn_config(app, host, port, options)).run()
    app.worker.shutdown(wait=False, cancel_futures=True)

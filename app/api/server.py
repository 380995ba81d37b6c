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

It also answers the verb router's direct requests itself (:meth:`~app.api.edge.VerbRouter.direct`:
most verb requests, binds included), without uvicorn's ASGI task: the body collected
into the request cycle's buffer (``body`` deadline: the router's 408 and the connection closed),
the answer written as uvicorn's cycle writes it (status line, the server's default headers, the
answer's, head and body in one write; ``connection: close`` and the close when the request or a
shutdown asks for it), the access line, then keep-alive or the next pipelined request as uvicorn
does. A verb evaluated in the worker thread is awaited by a task the server's shutdown waits for.

:func:`run` serves until SIGTERM/SIGINT and lets requests in flight finish within
``server.timeouts.shutdown``; meanwhile the standalone schedulers stop at once and their Leases are
released (the ``on_stopping`` hook). uvicorn then cancels what is left, the background workers are
stopped within what is left of that budget (a reflector's idle watch is interrupted, not waited
for: :meth:`~app.cluster.reflector.Reflector.stop`), and :func:`run` returns the signal that
stopped it instead of letting uvicorn raise it again: the command then exits 0, as kube-scheduler
does when asked to terminate ("Requested to terminate, exiting"), even while a verb is busy in
the worker thread (:mod:`app.cli` ends the process at once once stopped).

With ``server.metrics``, :func:`run` also serves the metrics listener
(:class:`~app.api.delegated.MetricsListener`) as a second ``uvicorn.Server``
(:class:`MetricsServer`) on the same loop: started once the verb socket is bound, stopped with
it; the same guarded protocol (``server.timeouts``, ``server.metrics.maxConnections``), HTTPS with
:func:`metrics_ssl_context` (``server.metrics.tls``, else :func:`self_signed_certificate`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import errno
import logging
import os
import resource
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from app.api.delegated import MetricsListener
from app.api.edge import (
    OVER_CAPACITY,
    PEER_CN,
    PEER_GROUPS,
    DirectRequest,
    VerbRouter,
    answer_when_ready,
    log_access,
)
from app.api.http2 import ALPN_H2, GuardedH2Protocol, engine_keeps_connections, zttp_version
from app.api.service import Answer
from app.config import MetricsServerConfig, ServerConfig, TLSConfig
from app.framework.errors import SchedulerExtenderError
from app.framework.profile import parse_duration

log = logging.getLogger(__name__)

#: Seconds the background workers get to stop after SIGTERM even when draining the connections
#: spent all of ``server.timeouts.shutdown``.
MIN_STOP = 1.0

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


def _server_context(load_chain: Callable[[ssl.SSLContext], None], client_ca: str | None) -> ssl.SSLContext:
    """The one TLS context both listeners serve: TLS 1.2 or later (client-go's minimum), the
    certificate and key ``load_chain`` loads, and with ``client_ca`` client certificates verified
    when presented (``CERT_OPTIONAL``: the kubelet's HTTPS probes and Prometheus with a token
    present none; ``bind`` checks the verified identity itself, the metrics listener reviews a
    token instead). Raises ``OSError`` or ``ssl.SSLError`` when a file does not load."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    load_chain(context)
    if client_ca:
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


def ssl_context(tls: TLSConfig) -> ssl.SSLContext:
    """The TLS context of ``tls`` (:func:`_server_context`): its ``certFile`` and ``keyFile``, and
    its ``clientCAFile``. Raises ``OSError`` or ``ssl.SSLError`` when a file does not load."""
    return _server_context(lambda context: context.load_cert_chain(tls.cert_file, tls.key_file), tls.client_ca_file)


def verb_ssl_context(server: ServerConfig) -> ssl.SSLContext | None:
    """The verb listener's TLS context (``None`` without ``server.tls``): :func:`ssl_context`,
    offering HTTP/2 by ALPN (``h2``, then ``http/1.1``) unless ``server.http2`` is false or the
    HTTP/2 engine would end long connections (then HTTP/1.1 alone, with a warning), and no TLS 1.3
    session tickets: kube-scheduler's transport keeps no session cache, so the two tickets OpenSSL
    sends after each handshake were never used (a quarter of its cost)."""
    if server.tls is None:
        return None
    context = ssl_context(server.tls)
    http2 = server.http2 and engine_keeps_connections()
    if server.http2 and not http2:
        log.warning(
            "server.http2: HTTP/2 not offered, HTTP/1.1 alone: zttp %s ends a connection after 4,096 "
            "streams (GOAWAY ENHANCE_YOUR_CALM), failing kube-scheduler's requests in flight; install "
            "the patched build (python third_party/zttp/build.py --install, as make and the image do)",
            zttp_version(),
        )
    context.set_alpn_protocols([ALPN_H2, "http/1.1"] if http2 else ["http/1.1"])
    context.num_tickets = 0
    return context


class CertificateReloader:
    """Reloads the certificate and key into the live TLS context when their files change, and
    adds a changed client CA, every ``interval`` seconds: rotation without restart (new
    connections get the new certificate; open ones keep theirs). A CA that is removed from the
    file stays trusted until the next restart (OpenSSL contexts only add CAs)."""

    def __init__(self, context: ssl.SSLContext, tls: TLSConfig, interval: float = 10.0) -> None:
        self.context = context
        self.tls = tls
        self.interval = interval
        self.reloads = 0
        self._seen = self._stamp()

    def _stamp(self) -> tuple[tuple[int, int], ...]:
        files = (self.tls.cert_file, self.tls.key_file, self.tls.client_ca_file)
        out = []
        for path in files:
            try:
                st = os.stat(path) if path else None
            except OSError:
                st = None
            out.append((st.st_mtime_ns, st.st_size) if st is not None else (0, 0))
        return tuple(out)

    def check(self) -> bool:
        """Reload when a file changed; ``True`` when it did. A half-written pair (a key that does
        not match the certificate) is logged and retried at the next check."""
        stamp = self._stamp()
        if stamp == self._seen:
            return False
        try:
            self.context.load_cert_chain(self.tls.cert_file, self.tls.key_file)
            if self.tls.client_ca_file:
                self.context.load_verify_locations(self.tls.client_ca_file)
        except (OSError, ssl.SSLError) as exc:
            log.warning("TLS files changed but do not load yet (retrying in %gs): %s", self.interval, exc)
            return False
        self._seen = stamp
        self.reloads += 1
        log.info("TLS certificate reloaded from %s", self.tls.cert_file)
        return True

    async def run(self) -> None:
        """Check forever, every ``interval`` seconds."""
        while True:
            await asyncio.sleep(self.interval)
            self.check()


class ListenError(SchedulerExtenderError):
    """The server could not listen on ``host:port`` (in use, not a local address, a privileged
    port): one line that names the address and the option that changes it."""

    def __init__(self, host: str, port: int, cause: OSError, section: str = "server") -> None:
        self.host, self.port, self.cause = host, port, cause
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        flags = section == "server"  # --host/--port override server.host/server.port only
        port_fix = f"pass --port or set {section}.port" if flags else f"set {section}.port"
        host_fix = f"pass --host or set {section}.host" if flags else f"set {section}.host"
        if cause.errno == errno.EADDRINUSE:
            why, fix = "is in use: another process listens there", port_fix
        elif cause.errno == errno.EACCES:
            why, fix = "is not allowed: ports below 1024 need privileges", port_fix
        elif cause.errno == errno.EADDRNOTAVAIL:
            why, fix = "is not an address of this host", host_fix
        else:
            reason = cause.strerror or str(cause)
            both = f"{section}.host/{section}.port"
            why = f"cannot be listened on: {reason}"
            fix = f"pass --host/--port or set {both}" if flags else f"set {both}"
        what = "the metrics listener " if section == "server.metrics" else ""
        super().__init__(f"{what}{where} {why}; {fix}")


class _BindErrorFilter(logging.Filter):
    """Drops uvicorn's own record of a listen failure (``[Errno 98] error while attempting to
    bind ...``): :class:`ListenError` says it in one line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not isinstance(record.msg, OSError)


async def _listen(server: uvicorn.Server, startup: Callable[[], Awaitable[None]], section: str) -> None:
    """``await startup()`` (uvicorn's, which binds the socket), with uvicorn's own record of a
    listen failure dropped and its ``SystemExit`` turned into one :class:`ListenError` naming
    ``section``'s address options."""
    quiet = _BindErrorFilter()
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addFilter(quiet)
    try:
        await startup()
    except SystemExit as exc:  # uvicorn exits (status 3) when it cannot listen, having logged the OSError
        cause = exc.__context__
        if isinstance(cause, OSError):
            raise ListenError(server.config.host, server.config.port, cause, section) from None
        raise
    finally:
        uvicorn_log.removeFilter(quiet)


class ExtenderServer(uvicorn.Server):
    """uvicorn's server, plus the certificate reloader while it serves, and the composition
    root's hooks: ``on_startup()`` once the socket is bound (on the loop: it starts the
    background workers), ``await on_stopping(seconds)`` as soon as a signal asks it to stop, while
    the connections are drained (it stops the schedulers and releases their Leases within
    ``server.timeouts.shutdown``), ``await on_shutdown(seconds)`` once the connections are drained
    (it stops the workers within ``seconds``: what is left of ``server.timeouts.shutdown``, at
    least :data:`MIN_STOP`). ``signalled``: the signals that stopped it (uvicorn's own would raise
    them again once stopped)."""

    def __init__(
        self,
        config: uvicorn.Config,
        reloader: CertificateReloader | None = None,
        on_startup: Callable[[], None] | None = None,
        on_shutdown: Callable[[float], Awaitable[Any]] | None = None,
        metrics: MetricsServer | None = None,
        on_stopping: Callable[[float], Awaitable[Any]] | None = None,
    ) -> None:
        super().__init__(config)
        self.reloader = reloader
        self.on_startup = on_startup
        self.on_shutdown = on_shutdown
        self.on_stopping = on_stopping
        self._stopping: asyncio.Future[Any] | None = None
        self.signalled: list[int] = []
        #: the second listener (``server.metrics``), started once this one is bound, on its loop
        self.metrics = metrics
        self._reloading: asyncio.Task[None] | None = None

    async def startup(self, sockets: Any = None) -> None:
        await _listen(self, lambda: super(ExtenderServer, self).startup(sockets), "server")
        if not self.started:
            return
        if self.metrics is not None:
            try:
                await self.metrics.start()
            except ListenError:
                for listener in self.servers:
                    listener.close()
                raise
        app = self.config.app
        service = getattr(app, "service", None)
        if service is not None:
            service.record_after_answers(asyncio.get_running_loop())
            log.info(
                "serving profiles %s on %s:%s (default profile: %s)",
                ", ".join(service.frameworks),
                self.config.host,
                self.config.port,
                service.default_profile or "none",
            )
        if self.reloader is not None:
            self._reloading = asyncio.create_task(self.reloader.run())
        if self.on_startup is not None:
            self.on_startup()

    async def on_tick(self, counter: int) -> bool:
        if self.metrics is not None:
            await self.metrics.on_tick(counter)  # its Date header; it exits with this one
        return await super().on_tick(counter)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """uvicorn's signal handling, except that the signals that stopped the server are kept in
        :attr:`signalled` rather than raised again once it has shut down."""
        with super().capture_signals():
            try:
                yield
            finally:
                self.signalled = list(self._captured_signals)
                self._captured_signals.clear()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """uvicorn's: stop serving (at its next tick); and begin ``on_stopping`` at once, on the
        loop, so no scheduling cycle starts after the signal."""
        super().handle_exit(sig, frame)
        try:
            loop = asyncio.get_running_loop()  # the signal interrupts the loop's own thread
        except RuntimeError:
            return  # not serving yet: shutdown begins it
        loop.call_soon_threadsafe(self._begin_stopping)

    def _begin_stopping(self) -> None:
        if self._stopping is None and self.on_stopping is not None:
            budget = float(self.config.timeout_graceful_shutdown or 0)
            self._stopping = asyncio.ensure_future(self.on_stopping(budget))

    async def shutdown(self, sockets: Any = None) -> None:
        began = time.monotonic()
        budget = float(self.config.timeout_graceful_shutdown or 0)
        if self._reloading is not None:
            self._reloading.cancel()
        draining: list[Awaitable[Any]] = [super().shutdown(sockets)]
        if self.metrics is not None:
            draining.append(self.metrics.stop())
        self._begin_stopping()
        if self._stopping is not None:
            draining.append(self._stopping)
        await asyncio.gather(*draining)
        if self.on_shutdown is not None:
            await self.on_shutdown(max(budget - (time.monotonic() - began), MIN_STOP))


class MetricsServer(uvicorn.Server):
    """The metrics listener (``server.metrics``, :class:`~app.api.delegated.MetricsListener`): a
    second ``uvicorn.Server`` on the verb listener's loop, started by :class:`ExtenderServer` once
    its own socket is bound and stopped with it (no signal handling or main loop of its own), with
    the guarded protocol (``server.timeouts``, ``server.metrics.maxConnections``) and, with
    ``server.metrics.tls``, a :class:`CertificateReloader`."""

    def __init__(self, config: uvicorn.Config, reloader: CertificateReloader | None = None) -> None:
        super().__init__(config)
        self.reloader = reloader
        self._reloading: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Listen; raises :class:`ListenError` naming ``server.metrics`` when it cannot."""
        self.lifespan = self.config.lifespan_class(self.config)
        await _listen(self, self.startup, "server.metrics")
        await self.on_tick(0)  # the Date header before the first answer
        app = self.config.app
        auth = "delegated authentication and authorization" if getattr(app, "auth", None) else "no authentication"
        log.info("serving /metrics, /healthz and /readyz on %s:%s (%s)", self.config.host, self.config.port, auth)
        if self.reloader is not None:
            self._reloading = asyncio.create_task(self.reloader.run())

    async def stop(self) -> None:
        """Stop listening and let answers in flight finish (``server.timeouts.shutdown``); the
        listener itself is closed by :func:`run`, after a failed start as well."""
        if self._reloading is not None:
            self._reloading.cancel()
        if self.started:
            await self.shutdown()


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


def _ssl_option(context: ssl.SSLContext | None) -> dict[str, Any]:
    """The ``uvicorn.Config`` argument that serves ``context`` (none: plain HTTP): uvicorn's
    ``Config.load`` takes it as the listener's, instead of a context of its own."""
    return {} if context is None else {"ssl_context_factory": lambda config, default: context}


def uvicorn_config(app: VerbRouter, host: str, port: int, options: dict[str, Any]) -> uvicorn.Config:
    """The ``uvicorn.Config`` serving ``app`` with the guarded protocol, the configured timeouts and
    (with ``server.tls``) :func:`verb_ssl_context`. ``options``: further ``uvicorn.Config``
    arguments (log level, access log)."""
    server = app.service.config.server
    timeouts = server.timeouts
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol_class(server, lambda phase: app.metrics.timeouts.labels(phase).inc(), app),
        lifespan="off",
        workers=1,  # the cluster cache lives in-process: scale with replicas
        timeout_keep_alive=max(1, round(timeouts.seconds("idle"))),
        timeout_graceful_shutdown=max(1, round(timeouts.seconds("shutdown"))),
        server_header=False,
        **_ssl_option(verb_ssl_context(server)),
        **options,
    )
    config.load()
    return config


#: How long the self-signed certificate of the metrics listener is valid (kube-scheduler's in-memory
#: certificate: one year, client-go ``certutil.GenerateSelfSignedCertKeyWithFixtures``).
SELF_SIGNED_DAYS = 365


def self_signed_certificate(names: Sequence[str]) -> bytes:
    """A serving certificate for ``names`` (DNS names or IP addresses) signed by a CA made for it,
    and its key: PEM, certificate, CA and key in one blob, ECDSA P-256, valid
    :data:`SELF_SIGNED_DAYS` from an hour ago; CNs ``scheduler-extender-metrics[-ca]@<unix time>``
    as client-go's ``GenerateSelfSignedCertKeyWithFixtures`` names its ``<host>[-ca]@<time>``."""
    from cryptography.x509.oid import ExtendedKeyUsageOID

    from app.kube.pki import new_ca, new_leaf, pem, pem_key, subject_alt_names

    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
    stamp = int(time.time())
    ca, ca_key = new_ca(f"scheduler-extender-metrics-ca@{stamp}", now, SELF_SIGNED_DAYS)
    sans = subject_alt_names(names)
    leaf, key = new_leaf(
        ca, ca_key, f"scheduler-extender-metrics@{stamp}", ExtendedKeyUsageOID.SERVER_AUTH, sans, now, SELF_SIGNED_DAYS
    )
    return pem(leaf) + pem(ca) + pem_key(key)


def _load_chain_from_memory(context: ssl.SSLContext, blob: bytes) -> None:
    """``context.load_cert_chain`` of a PEM blob (certificates and key) that is never written to a
    file system: through an anonymous memory file where Linux has them (the pods' root file system
    is read-only), else a private temporary file removed at once."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("scheduler-extender-metrics-tls", os.MFD_CLOEXEC)
        try:
            os.write(fd, blob)
            context.load_cert_chain(f"/proc/self/fd/{fd}")
            return
        except OSError:
            pass  # no /proc: the temporary file below
        finally:
            os.close(fd)
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "tls.pem")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as out:
            out.write(blob)
        context.load_cert_chain(path)


def metrics_ssl_context(metrics: MetricsServerConfig, self_signed: bool = True) -> ssl.SSLContext:
    """The metrics listener's TLS context (:func:`_server_context`): ``tls.certFile``/``keyFile``
    or a :func:`self_signed_certificate` for ``localhost``, ``127.0.0.1``, this host's name and
    ``host`` (when it is one address), and ``clientCAFile``. ``self_signed``: false for a check
    that the files load (none is made then). Raises ``OSError`` or ``ssl.SSLError`` when the
    files do not load."""
    files = metrics_tls_files(metrics)
    if files is not None:
        return ssl_context(files)
    names = ["localhost", "127.0.0.1", socket.gethostname()]
    if metrics.host not in ("", "0.0.0.0", "::"):  # an address of every interface names none
        names.append(metrics.host)

    def load_chain(context: ssl.SSLContext) -> None:
        if self_signed:
            _load_chain_from_memory(context, self_signed_certificate(names))

    return _server_context(load_chain, metrics.client_ca_file)


def metrics_tls_files(metrics: MetricsServerConfig) -> TLSConfig | None:
    """``server.metrics.tls`` and ``clientCAFile`` as the verb listener's :class:`TLSConfig`, so
    :func:`ssl_context` and :class:`CertificateReloader` serve both listeners; ``None`` without
    ``tls`` (the self-signed certificate)."""
    tls = metrics.tls
    if tls is None:
        return None
    return TLSConfig.model_validate(
        {
            "certFile": tls.cert_file,
            "keyFile": tls.key_file,
            "clientCAFile": metrics.client_ca_file,
            "reloadInterval": tls.reload_interval,
        }
    )


def metrics_server(listener: MetricsListener, server: ServerConfig, options: dict[str, Any]) -> MetricsServer:
    """The :class:`MetricsServer` of ``server.metrics`` serving ``listener``: the guarded protocol
    with ``server.timeouts`` and ``server.metrics.maxConnections``, HTTPS with
    :func:`metrics_ssl_context` unless ``insecure``. ``options``: further ``uvicorn.Config``
    arguments (log level, access log)."""
    metrics = listener.config
    timeouts = server.timeouts
    limits = server.model_copy(update={"max_connections": metrics.max_connections})
    context = None if metrics.insecure else metrics_ssl_context(metrics)
    config = uvicorn.Config(
        listener,
        host=metrics.host,
        port=metrics.port,
        http=protocol_class(limits, lambda phase: None),
        lifespan="off",
        proxy_headers=False,
        timeout_keep_alive=max(1, round(timeouts.seconds("idle"))),
        timeout_graceful_shutdown=max(1, round(timeouts.seconds("shutdown"))),
        server_header=False,
        **_ssl_option(context),
        **options,
    )
    config.load()
    files = metrics_tls_files(metrics)
    reloader = None
    if context is not None and files is not None:
        reloader = CertificateReloader(context, files, parse_duration(files.reload_interval))
    return MetricsServer(config, reloader)


def run(
    app: VerbRouter,
    host: str,
    port: int,
    options: dict[str, Any],
    on_startup: Callable[[], None] | None = None,
    on_shutdown: Callable[[float], Awaitable[Any]] | None = None,
    metrics: MetricsListener | None = None,
    on_stopping: Callable[[float], Awaitable[Any]] | None = None,
) -> list[int]:
    """Serve ``app`` until SIGTERM or SIGINT (see the module doc), with the hooks of
    :class:`ExtenderServer`, and ``metrics`` on its own socket (:func:`metrics_server`) when
    given; returns the signals that stopped it. Raises :class:`ListenError` when a socket cannot
    be bound."""
    server = app.service.config.server
    extra = metrics.config.max_connections + 16 if metrics is not None else 0
    raise_open_files_limit(server.max_connections + 64 + extra)
    config = uvicorn_config(app, host, port, options)
    reloader = None
    if server.tls is not None and config.ssl:
        reloader = CertificateReloader(config.ssl, server.tls, parse_duration(server.tls.reload_interval))
    second = metrics_server(metrics, server, options) if metrics is not None else None
    server_ = ExtenderServer(config, reloader, on_startup, on_shutdown, second, on_stopping)
    try:
        server_.run()
    finally:
        app.worker.shutdown(wait=False, cancel_futures=True)
        if metrics is not None:
            metrics.close()
    return server_.signalled

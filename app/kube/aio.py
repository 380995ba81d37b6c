"""Bindings created from the event loop: the one API call on the bind path, without a thread hop.

Every bind the service serves (and every pod the standalone scheduler binds) ends in one
``POST /api/v1/namespaces/{namespace}/pods/{name}/binding``. :class:`AsyncBindingClient` sends it
over keep-alive HTTP/1.1 connections of its own (TLS as the official client's configuration says:
CA, client certificate, ``verify_ssl``, ``tls_server_name``; the bearer token of
:class:`~app.kube.client.AuthHeader`), with the request built from a template
(:func:`~app.kube.client.binding_body`) and the answer parsed by httptools, the parser uvicorn
serves the verbs with. Nothing else uses it: lists, watches and the rare writes stay on
:class:`~app.kube.client.KubeClient`'s urllib3 pool on the API executor.

Why not a general asynchronous client: measured on ``bench/bench_bind.py`` (the service CPU-bound
on 2 cores against the test API server), this client costs the service a fraction of what the
urllib3 pool on the API executor costs per Binding (the executor's thread hop, urllib3's request
and ``http.client``'s header parsing), and httpx's ``AsyncClient`` cost more than both (its pool
scans every connection per request). The figures are in docs/performance.md ("Binds").

Proxies: a configuration with ``proxy`` set is not served here (:func:`binding_client` returns
``None``) and its Bindings go through the urllib3 pool, which speaks the proxy protocol.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
from collections.abc import Callable, Mapping
from typing import Any, cast
from urllib.parse import quote, urlsplit

import httptools

from app.kube.client import JSON, AuthHeader, binding_body, status_error
from app.kube.errors import APIError

#: Seconds a connection whose caller gave up waits for the late answer before it is closed.
DRAIN_SECONDS = 30.0

#: Headers the request sets itself, never taken from ``headers``.
_OWN = frozenset({"host", "accept", "content-type", "content-length", "authorization", "connection"})


class _Answer:
    """One response as httptools parsed it: status code, reason phrase, body."""

    __slots__ = ("body", "keep_alive", "reason", "status")

    def __init__(self, status: int, reason: str, body: bytes, keep_alive: bool) -> None:
        self.status, self.reason, self.body, self.keep_alive = status, reason, body, keep_alive


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection, one request at a time (the caller awaits each answer)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reused = False
        self._parser = httptools.HttpResponseParser(self)
        self._answer: asyncio.Future[_Answer] | None = None
        self._reason = b""
        self._body: list[bytes] = []
        self._got_bytes = False
        #: called once the answer its caller gave up on has been read, or the connection failed
        self._late: Callable[[], None] | None = None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio.Transport subclasses

    def data_received(self, data: bytes) -> None:
        self._got_bytes = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(APIError(0, "MalformedResponse", f"the API server's answer does not parse: {exc}"))

    def eof_received(self) -> bool | None:
        self.closed = True
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(exc or ConnectionResetError("the API server closed the connection"))

    # httptools callbacks

    def on_status(self, status: bytes) -> None:
        self._reason += status

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        answer, self._answer = self._answer, None
        if answer is not None and not answer.done():
            answer.set_result(
                _Answer(
                    self._parser.get_status_code(),
                    self._reason.decode("latin-1"),
                    b"".join(self._body),
                    self._parser.should_keep_alive(),
                )
            )
        elif self._late is not None:  # the late answer of a caller that gave up: dropped
            if self._parser.should_keep_alive():
                self._finish_late()
            else:
                self.close()

    # use

    def send(self, request: bytes) -> asyncio.Future[_Answer]:
        """Write ``request`` and return the future of its answer. Raises ``ConnectionResetError``
        when the connection is already closed (nothing is written)."""
        assert self.transport is not None
        self._reason, self._body, self._got_bytes = b"", [], False
        if self.closed or self.transport.is_closing():
            raise ConnectionResetError("the API server closed the connection")
        self._answer = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return self._answer

    def abandon(self, then: Callable[[], None]) -> bool:
        """The caller gave up on the current answer (its deadline): read it when it comes and
        drop it, then call ``then`` (also when the connection fails first). Returns ``False``
        (``then`` not kept) when no answer is awaited any more."""
        if self._answer is None or self.closed:
            return False
        self._late = then
        return True

    def _finish_late(self) -> None:
        late, self._late = self._late, None
        if late is not None:
            late()

    def answered_nothing(self) -> bool:
        """No byte of the current answer arrived (a replay is safe to attempt on a reused one)."""
        return not self._got_bytes

    def _fail(self, exc: BaseException) -> None:
        answer, self._answer = self._answer, None
        if answer is not None and not answer.done():
            answer.set_exception(exc)
        if self.transport is not None:
            self.transport.close()
        self.closed = True
        self._finish_late()

    def close(self) -> None:
        """Close the connection (an answer still awaited fails)."""
        self._fail(ConnectionAbortedError("the connection was closed"))


class AsyncBindingClient:
    """``await create_binding(namespace, name, uid, node, deadline)`` on the running event loop
    (see the module doc). ``configuration``: a ``kubernetes.client.Configuration`` without
    ``proxy``; ``auth``: its :class:`AuthHeader`; ``pool_size``: at most this many connections
    (and Bindings in flight); ``headers``: further request headers (the official client's
    ``User-Agent``). Use it from one event loop only.

    Connections: at most ``pool_size`` (``cluster.bindConnections``, default 128) open at once. It was
    ``cluster.apiWorkers`` (16), as the executor's threads bounded the calls before: against a real
    kube-apiserver, whose Binding takes 50-70 ms under kube-scheduler's load (its etcd write), 16
    connections held kube-scheduler to about 140 pods/s with binds waiting a second in line
    (docs/performance.md, "Against a real control plane"). A caller past the limit waits for one to
    come back, within its own deadline, and callers are served in arrival order (a released connection
    goes to the longest waiting caller: measured, this took bench_bind's p99 from 112-141 ms to 32-34
    ms). An idle connection the API server closed (its idle timeout, a restart) is dropped when the
    close is seen. A Binding whose caller's deadline passed keeps its connection until the late answer
    is read (and dropped), then the connection serves the next caller (at most ``DRAIN_SECONDS``). A
    Binding that fails on a reused connection before any byte of an answer arrived is sent once more on
    a new connection: Go's ``net/http`` would not replay a ``POST`` it may have written, but a Binding
    is safe to replay: it carries the pod's UID as a precondition, and a replay of one that was applied
    answers 409 "already assigned", which :class:`app.cluster.binding.Binder` reads back as success
    when the pod is bound to that node.
    """

    def __init__(
        self, configuration: Any, auth: AuthHeader, pool_size: int = 16, headers: Mapping[str, str] | None = None
    ) -> None:
        url = urlsplit(str(configuration.host))
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"unsupported API server address {configuration.host!r}")
        self.host = url.hostname
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self.prefix = url.path.rstrip("/")
        self.ssl = _ssl_context(configuration) if url.scheme == "https" else None
        self.server_hostname = (configuration.tls_server_name or self.host) if self.ssl is not None else None
        netloc = url.netloc.rsplit("@", 1)[-1]
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items() if k.lower() not in _OWN)
        self._head = f"Host: {netloc}\r\nAccept: {JSON}\r\nContent-Type: {JSON}\r\n{extra}".encode()
        self.auth = auth
        self.pool_size = pool_size
        self._idle: collections.deque[_Connection] = collections.deque()
        self._open = 0
        #: callers waiting for a connection: handed one, or ``None`` (a place to open one)
        self._waiters: collections.deque[asyncio.Future[_Connection | None]] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None

    def request(self, namespace: str, name: str, uid: str, node: str) -> bytes:
        """The bytes of the Binding request (headers and :func:`binding_body`)."""
        body = binding_body(namespace, name, uid, node)
        auth = "".join(f"{k}: {v}\r\n" for k, v in self.auth().items())
        path = f"{self.prefix}/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}/binding"
        return b"%s%s%sContent-Length: %d\r\n\r\n%s" % (
            f"POST {path} HTTP/1.1\r\n".encode(),
            self._head,
            auth.encode("latin-1"),
            len(body),
            body,
        )

    async def create_binding(self, namespace: str, name: str, uid: str, node: str, deadline: float) -> None:
        """Create the pod's Binding before ``deadline`` (the loop's clock). Raises
        ``TimeoutError`` past it (the Binding may still be applied) and :class:`APIError` for an
        answer of 400 or more (its ``Status``) or a connection that failed (status 0)."""
        request = self.request(namespace, name, uid, node)
        loop = asyncio.get_running_loop()
        async with asyncio.timeout_at(deadline):
            for attempt in (0, 1):
                conn = await self._acquire(loop)
                try:
                    answer = await conn.send(request)
                except asyncio.CancelledError:
                    self._abandon(conn)  # the answer may still come: read it before reusing
                    raise
                except (OSError, APIError) as exc:
                    replay = attempt == 0 and conn.reused and conn.answered_nothing()
                    conn.close()
                    self._release(conn)
                    if replay:
                        continue
                    raise exc if isinstance(exc, APIError) else APIError(0, type(exc).__name__, str(exc)) from exc
                if not answer.keep_alive:
                    conn.close()
                self._release(conn)
                if answer.status >= 400:
                    raise status_error(answer.status, answer.body, answer.reason)
                return

    async def _acquire(self, loop: asyncio.AbstractEventLoop) -> _Connection:
        """A live connection: an idle one, a new one while fewer than ``pool_size`` are open, else
        the first one released to this caller (callers are served in arrival order: a released
        connection goes to the longest waiting caller, not to whoever asks next)."""
        if loop is not self._loop:  # connections belong to the loop that opened them
            self._forget()
            self._loop = loop
        while self._idle:
            conn = self._idle.pop()  # the most recently used: the least likely to be closed
            if not conn.closed:
                conn.reused = True
                return conn
            self._open -= 1
        if self._open < self.pool_size and not self._waiters:
            self._open += 1
            return await self._connect(loop)
        waiter: asyncio.Future[_Connection | None] = loop.create_future()
        self._waiters.append(waiter)
        try:
            handed = await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():  # handed over, then cancelled: pass it on
                self._pass_on(waiter.result())
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise
        if handed is None or handed.closed:
            # a place reserved for this caller: freed by a closed connection, or held by one that
            # closed on its way here (its place is this caller's, first in line)
            return await self._connect(loop)
        handed.reused = True
        return handed

    async def _connect(self, loop: asyncio.AbstractEventLoop) -> _Connection:
        """A new connection, its place in ``_open`` already counted; a failure gives the place up."""
        try:
            _, conn = await loop.create_connection(
                _Connection, self.host, self.port, ssl=self.ssl, server_hostname=self.server_hostname
            )
        except BaseException as exc:
            self._open -= 1
            self._grant()
            if isinstance(exc, OSError):  # refused, unreachable, TLS (ssl.SSLError is an OSError)
                raise APIError(0, type(exc).__name__, str(exc)) from exc
            raise
        return conn

    def _abandon(self, conn: _Connection) -> None:
        """A caller gave up on ``conn``'s answer (its deadline): the late answer is read and
        dropped, then the connection serves the next caller, keeping its place meanwhile; one
        whose answer has not come within :data:`DRAIN_SECONDS` is closed. Closing it at once
        meant a new connection, and a TLS handshake on both sides, for every Binding that timed
        out: measured against an overloaded kube-apiserver, 16 % of the event loop's busy time."""
        loop = asyncio.get_running_loop()
        timer = loop.call_later(DRAIN_SECONDS, conn.close)

        def done() -> None:
            timer.cancel()
            self._release(conn)

        if not conn.abandon(done):
            timer.cancel()
            self._release(conn)

    def _release(self, conn: _Connection) -> None:
        """``conn`` is done with: to the longest waiting caller, else idle; a closed one frees its place."""
        if conn.closed:
            self._open -= 1
            self._grant()
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        self._idle.append(conn)

    def _pass_on(self, handed: _Connection | None) -> None:
        """What a cancelled caller was handed goes to the next one."""
        if handed is None:
            self._open -= 1
            self._grant()
        else:
            self._release(handed)

    def _grant(self) -> None:
        """A place is free: the longest waiting caller may open a connection in it."""
        if self._open >= self.pool_size:
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._open += 1
                waiter.set_result(None)
                return

    def close(self) -> None:
        """Close every idle connection (after the last Binding; from the loop's thread)."""
        if self._loop is None or self._loop.is_closed():
            self._forget()
            return
        while self._idle:
            self._idle.pop().close()
            self._open -= 1

    def _forget(self) -> None:
        """Drop the connections of a loop that is no longer used (closing a transport needs its
        loop; a closed loop's sockets are closed by their transports' finalizers)."""
        self._idle.clear()
        self._waiters.clear()
        self._open = 0


def _ssl_context(configuration: Any) -> ssl.SSLContext:
    """The TLS context the official client's urllib3 pool would use (kubernetes/client/rest.py):
    ``ssl_ca_cert`` (else the system's CAs) when ``verify_ssl``, the client certificate
    ``cert_file``/``key_file``, and host name checking unless ``assert_hostname`` is false."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif configuration.assert_hostname is False:
        context.check_hostname = False
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file or None)
    return context


def binding_client(
    configuration: Any, auth: AuthHeader, pool_size: int, headers: Mapping[str, str] | None = None
) -> AsyncBindingClient | None:
    """An :class:`AsyncBindingClient` for ``configuration``, or ``None`` when it names an HTTP
    proxy (the urllib3 pool then sends the Bindings). Raises ``OSError``/``ssl.SSLError`` when
    its certificate files do not load."""
    if getattr(configuration, "proxy", None):
        return None
    return AsyncBindingClient(configuration, auth, pool_size, headers)


__all__ = ["AsyncBindingClient", "binding_client"]

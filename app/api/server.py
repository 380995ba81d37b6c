"""The HTTP server: uvicorn with the connection guards (:mod:`app.api.protocol`), the TLS of both
listeners, and a bounded shutdown.

:func:`run` serves until SIGTERM/SIGINT and lets requests in flight finish within
``server.timeouts.shutdown``; meanwhile the standalone schedulers stop at once and their Leases are
released (the ``on_stopping`` hook). uvicorn then cancels what is left, the background workers are
stopped within what is left of that budget (a reflector's idle watch is interrupted, not waited
for: :meth:`~app.cluster.reflector.Reflector.stop`), and :func:`run` returns the signal that
stopped it instead of letting uvicorn raise it again: the command then exits 0, as kube-scheduler
does when asked to terminate ("Requested to terminate, exiting"), even while a verb is busy in
the worker thread (:func:`app.bootstrap.serve.stopped` ends the process at once).

With ``server.metrics``, :func:`run` also serves the metrics listener
(:class:`~app.api.delegated.MetricsListener`) as a second ``uvicorn.Server``
(:class:`MetricsServer`) on the same loop: started once the verb socket is bound, stopped with
it; the same guarded protocol (``server.timeouts``, ``server.metrics.maxConnections``), HTTPS with
:func:`metrics_ssl_context` (``server.metrics.tls``, else :func:`self_signed_certificate`). This
module alone builds the listeners' TLS contexts (:func:`_server_context`), and what ``preflight``
loads to check the files.
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

from app.api.delegated import MetricsListener
from app.api.edge import (
    VerbRouter,
)
from app.api.http2 import ALPN_H2, engine_keeps_connections, zttp_version
from app.api.protocol import protocol_class
from app.config import MetricsServerConfig, ServerConfig, TLSConfig
from app.framework.errors import SchedulerExtenderError
from app.framework.profile import parse_duration

log = logging.getLogger(__name__)

#: Seconds the background workers get to stop after SIGTERM even when draining the connections
#: spent all of ``server.timeouts.shutdown``.
MIN_STOP = 1.0


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

"""The hot path: the ASGI app that answers ``POST /{verb}`` and ``POST /{profile}/{verb}``, and
hands every other request to the FastAPI app (health, metrics, OpenAPI, docs).

One request, top to bottom (:meth:`VerbRouter.__call__`):

1. route: the path names a verb of :data:`~app.api.verbs.VERBS`, with or without a profile;
2. admission: a connection past ``server.maxConnections`` or a request past
   ``server.maxRequestsInFlight`` gets 503 with ``Retry-After`` (the verb's result type);
3. the profile: :meth:`ExtenderService.resolve` (unknown profile, unserved verb: its answer);
4. the body: at most ``server.maxRequestBytes`` (else 413), within ``server.timeouts.body`` (else
   408), within the ``server.maxInFlightBytes`` budget shared by all requests (else 503);
5. the verb: decoded on the loop, evaluated on the loop when cheap (at most
   :data:`~app.api.verbs.INLINE_WEIGHT` nodes or victims, or the profile's earlier answers took
   at most :data:`INLINE_SECONDS`), else in the one verb worker thread (kube-scheduler's cycle is
   serial; the loop stays free for health, metrics and binds); bind is a coroutine on the loop;
   an unexpected exception is logged and answered 500 without its text;
6. the answer: sent in chunks of about 256 KiB; the metrics observer counts it; the decision is
   recorded in a loop callback just after (``ExtenderService.record_after_answers``).

Most verb requests skip the ASGI cycle (the direct path of :class:`VerbRouter`: same bytes on the
wire). A probe (:data:`~app.observe.logs.PROBE_HEADER`, as ``check-scheduler-config`` sends) gets
the same answer but leaves no decision, metric or access line (:meth:`VerbRouter.quiet`), except a
bind that reached the binder and answered 200. FastAPI's request layer costs about 2 ms on a
1.5 MB body, more than the verbs' own work, which is why verbs do not go through it.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

from app.api.metrics import Metrics
from app.api.service import Answer, ExtenderService
from app.api.verbs import INLINE_BODY_BYTES, INLINE_WEIGHT, VERBS, Verb
from app.config import ServerConfig
from app.extender.codec import DENSE_CHECK_BYTES, Body, Chunks
from app.framework.errors import SchedulerExtenderError
from app.framework.runtime import Framework
from app.observe.capture import Capture
from app.observe.logs import PROBE_HEADER, PROBING

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Set in a request's scope by the server when its connection is past ``server.maxConnections``.
OVER_CAPACITY = "scheduler_extender.over_capacity"
#: Set in a request's scope by the server: the CN of the verified TLS client certificate, or None.
PEER_CN = "scheduler_extender.peer_cn"
#: Set in a request's scope by the server: the O values (organizations) of that certificate, a
#: tuple (empty without one): the groups kube-apiserver's x509 authenticator reads.
PEER_GROUPS = "scheduler_extender.peer_groups"
#: A blocking verb over more than :data:`~app.api.verbs.INLINE_WEIGHT` nodes or victims runs on
#: the loop when its profile's earlier such answers say it takes at most this long (seconds): the
#: in-tree cache-mode plugins answer 5,000 names in 1 to 3 ms, less than the worker thread's hop
#: costs on a busy machine (two thread wake-ups), and the loop stays held no longer than the
#: slowest answer ``INLINE_WEIGHT`` allows.
INLINE_SECONDS = 0.010
#: How much of each new measurement the moving mean of :attr:`VerbRouter.cost` takes.
COST_WEIGHT = 0.25
#: Bodies up to this size (bytes) are not counted against ``maxInFlightBytes``: bind bodies and
#: cache-mode bodies always pass.
SMALL_BODY = 1 << 20
#: Answer chunks are sent in pieces of about this many bytes.
SEND_CHUNK = 256 * 1024
#: ``Retry-After`` of a 503 (seconds).
RETRY_AFTER = 1
INTERNAL_ERROR = "internal error while answering {verb} (the extender's log has the details)"
_JSON = (b"content-type", b"application/json")
_CLOSE = (b"connection", b"close")


class ClientDisconnectedError(SchedulerExtenderError):
    """The client went away before sending the whole body: there is nobody to answer."""


class _RefusedError(Exception):
    """The request is refused before its verb runs: answer ``status`` with this message in the
    verb's result type, and close the connection (its body may be unread)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class VerbRouter:
    """The service's ASGI app: verbs here, everything else to ``fastapi`` (see the module doc).

    ``worker``: the verb worker thread's executor (one thread); the server shuts it down.

    The direct path: the HTTP/1.1 and HTTP/2 protocols (``api/protocol.py``
    ``GuardedHttpToolsProtocol``, ``api/http2.py`` ``GuardedH2Protocol``) offer each request to
    :meth:`direct` once its headers are complete. A filter, prioritize, preempt or (from a caller
    allowed to bind) bind request of a profile that serves it, with a Content-Length of at most
    :attr:`direct_bytes` (1 MiB over HTTP/1.1, never counted against ``maxInFlightBytes``; over
    HTTP/2 at most uvicorn's 64 KiB high-water mark), admitted and not a probe, has its body
    collected by the protocol, answered by :meth:`direct_answer` (steps 4 and 5; the body
    timeout's 408 from :meth:`direct_timed_out`) and written head and body in one write before
    :meth:`direct_done` counts it (step 6). Refusals, probes, larger bodies,
    ``Expect: 100-continue`` and a request pipelined behind another take the ASGI cycle.

    ``capture``: where answered filter/prioritize/preempt requests are captured
    (``diagnostics.capture``; ``None``: not captured).
    """

    def __init__(
        self,
        service: ExtenderService,
        fastapi: ASGIApp,
        metrics: Metrics,
        server: ServerConfig,
        capture: Capture | None = None,
    ) -> None:
        self.service = service
        self.fastapi = fastapi
        self.metrics = metrics
        self.max_request_bytes = server.max_request_bytes
        self.max_in_flight_bytes = server.in_flight_bytes
        self.max_requests = server.max_requests_in_flight
        self.body_timeout = server.timeouts.seconds("body")
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="verb-worker")
        tls = server.tls
        #: the client identities bind admits; None: any caller (server.insecureBind)
        self.bind_clients: frozenset[str] | None = frozenset()
        if tls is not None and tls.client_ca_file:
            self.bind_clients = frozenset(tls.allowed_clients)
        elif server.insecure_bind:
            self.bind_clients = None
        #: verb requests being read or answered (``scheduler_extender_requests_in_flight`` reads it)
        self.requests_in_flight = 0
        metrics.in_flight.set_function(lambda: self.requests_in_flight)
        self.bytes_in_flight = 0
        #: bodies up to this size (bytes, never counted against ``maxInFlightBytes``) may be
        #: answered without the ASGI cycle (:meth:`direct`)
        self.direct_bytes = min(self.max_request_bytes, SMALL_BODY)
        self.capture = capture
        #: (profile, verb) -> seconds per node its answers over ``INLINE_WEIGHT`` nodes took
        #: (:meth:`_timed`), which decides where the next one runs (:meth:`_cheap`)
        self.cost: dict[tuple[str, str], float] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a verb request (steps 1 to 6 of the module doc), or hand the request to FastAPI.
        From here a filter reaches its first plugin in at most five calls: :meth:`_evaluate`, the
        verb's handler, the framework's run, (for Filter) its per-plugin loop, the plugin."""
        route = _route(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if route is None:
            if scope["type"] != "http":
                await self.fastapi(scope, receive, send)
                return
            token = PROBING.set(True) if _is_probe(scope) else None
            try:
                if await refused_over_capacity(scope, send, _CLOSE):
                    return
                await self.fastapi(scope, receive, send)
            finally:
                if token is not None:
                    PROBING.reset(token)
            return
        verb, profile = VERBS[route[0]], route[1]
        started = time.perf_counter()
        probe = _is_probe(scope)
        target = self.service.resolve(profile, verb.name)
        # the profile the path names: ``/{verb}`` names the default profile, whether or not it
        # serves the verb (its mismatch answer is counted under its name, as its other verbs are)
        named = profile if profile is not None else self.service.default_profile
        label = self.metrics.profile_label(target.profile if isinstance(target, Framework) else named)
        held = _Held(self)
        token = None
        try:
            self.requests_in_flight += 1
            try:
                admitted = await self._admitted(verb, target, scope, receive, held, probe)
                if isinstance(admitted, Answer):
                    result, close = admitted, True  # its body may be unread
                else:
                    answer = self._evaluate(verb, admitted[1], admitted[2], admitted[0])
                    result, close = (answer if isinstance(answer, Answer) else await answer), False
            finally:
                self.requests_in_flight -= 1
            if probe and verb.name == "bind" and isinstance(target, Framework) and result.status == 200:
                probe = False  # the binder ran: recorded, logged and counted as any bind
            if probe:
                token = PROBING.set(True)  # the access line is written as the answer starts
            else:
                self._capture(verb, label, held.body, result)
            await _send_answer(send, result, close)
        except ClientDisconnectedError:
            return
        finally:
            held.release()  # the answer's chunks may be views of the body: released once sent
            if token is not None:
                PROBING.reset(token)
        if not probe:
            self.metrics.answered(label, verb.name, result.status, result.error, time.perf_counter() - started)

    def _capture(self, verb: Verb, label: str, body: bytes | bytearray | None, answer: Answer) -> None:
        """Offer an answered request to the traffic capture (``diagnostics.capture``): a 200 with
        its whole ``body`` (``None``: never read), for a pod the capture wants."""
        capture = self.capture
        if capture is not None and body is not None and answer.status == 200 and capture.wants(answer.pod):
            capture.offer(verb.name, label, answer.status, body, _joined(answer.body))

    def quiet(self) -> ExtenderService:
        """The service as a probe's verb sees it: the same frameworks, cluster state and limits,
        but no decision store, listeners or pod events, so no decision is built (a shallow copy,
        taken per probe: probes are rare, and the copy sees what was configured since)."""
        service = copy.copy(self.service)
        service.decisions = None
        service.listeners = []
        service.pod_events = None
        return service

    async def _admitted(
        self, verb: Verb, target: Framework | Answer, scope: Scope, receive: Receive, held: _Held, probe: bool = False
    ) -> Answer | tuple[ExtenderService, Framework, bytes | bytearray]:
        """The answer to a request refused before its verb runs (its body may be unread: the
        connection is closed after it), or what the verb runs on: the service (for a ``probe``
        other than bind, the :meth:`quiet` one), the framework and the whole body."""
        try:
            body = await self._admitted_body(verb, target, scope, receive, held)
        except _RefusedError as refusal:
            retry = RETRY_AFTER if refusal.status == 503 else None
            return verb.error(refusal.status, str(refusal), retry)
        if isinstance(target, Answer):
            return target
        return (self.quiet() if probe and verb.name != "bind" else self.service), target, body

    def _evaluate(
        self, verb: Verb, target: Framework, body: bytes | bytearray, service: ExtenderService
    ) -> Answer | Awaitable[Answer]:
        """The verb's answer to a whole body (step 5 of the module doc): at once, evaluated on the
        loop, or an awaitable of the worker thread's answer or of bind's coroutine. Never raises,
        nor does the awaitable: an unexpected exception is logged and answered 500 without its
        text."""
        try:
            if not verb.blocking:
                return _awaited(verb, target, verb.run_async(service, target, body))
            loop = asyncio.get_running_loop()
            if not verb.decode_on_loop and len(body) >= INLINE_BODY_BYTES:
                return _awaited(verb, target, loop.run_in_executor(self.worker, verb.run, service, target, body))
            args = verb.decoded(service, body, target)
            if isinstance(args, Answer):
                return args
            handle: Any = verb.handle  # a blocking verb's handler answers at once
            weight = verb.weight(args)
            if weight <= INLINE_WEIGHT:
                answer: Answer = handle(service, target, args)
                return answer
            key = (target.profile, verb.name)
            if self._cheap(key, weight):
                return self._timed(key, weight, handle, service, target, args)
            timed = partial(self._timed, key, weight, handle)
            return _awaited(verb, target, loop.run_in_executor(self.worker, timed, service, target, args))
        except Exception:  # a bug of ours or a plugin's: never its text on the wire
            return _failed(verb, target)

    def _cheap(self, key: tuple[str, str], weight: int) -> bool:
        """Whether a blocking verb of ``key`` (profile, verb) over ``weight`` nodes or victims is
        expected to take at most :data:`INLINE_SECONDS` (from what its earlier answers over more
        than :data:`~app.api.verbs.INLINE_WEIGHT` cost per node): it then runs on the loop,
        saving the two thread wake-ups of the worker's hop. Unknown (the first such request of
        ``key``): no."""
        per_node = self.cost.get(key)
        return per_node is not None and per_node * weight <= INLINE_SECONDS

    def _timed(self, key: tuple[str, str], weight: int, handle: Any, *args: Any) -> Answer:
        """``handle(*args)`` of a verb over ``weight`` nodes or victims (more than
        :data:`~app.api.verbs.INLINE_WEIGHT`), its seconds per node folded into :attr:`cost` (a
        moving mean over the last few)."""
        started = time.perf_counter()
        try:
            answer: Answer = handle(*args)
        finally:
            per_node = (time.perf_counter() - started) / weight
            known = self.cost.get(key)
            self.cost[key] = per_node if known is None else known + (per_node - known) * COST_WEIGHT
        return answer

    # -- requests the HTTP/1.1 protocol answers without the ASGI cycle ---------------------------

    def direct(self, scope: Scope, most: int | None = None) -> DirectRequest | None:
        """A request whose headers are complete, as :class:`~app.api.protocol.GuardedHttpToolsProtocol`
        offers it: a :class:`DirectRequest` (counted in flight from now) when it is a verb's
        (filter, prioritize, preempt, and bind from a caller allowed to bind) of a profile that
        serves it, with a Content-Length of at most :attr:`direct_bytes` (and ``most`` when given),
        not a probe, and admitted (neither over ``maxConnections`` nor past
        ``maxRequestsInFlight``); else ``None``, and the request takes the ASGI cycle (the
        refusals, bind's 403, mismatches, probes, bodies without a length or larger). Bind's
        answer is an awaitable (its Binding on the event loop), as a worker thread's is.

        The protocol then collects the body, calls :meth:`direct_answer`, writes the answer
        itself in one write and calls :meth:`direct_done`: the same steps as :meth:`__call__`
        without an ASGI task, receive and send messages, or a copy of the body."""
        if scope["method"] != "POST":
            return None
        route = _route(scope["path"])
        if route is None:
            return None
        verb = VERBS[route[0]]
        if scope.get(OVER_CAPACITY) or self.requests_in_flight >= self.max_requests:
            return None
        if not verb.blocking:
            if verb.name != "bind":
                return None
            try:
                self._authorize_bind(scope)
            except _RefusedError:
                return None  # its 403 from the ASGI cycle
        length = None
        for name, value in scope["headers"]:
            if name == b"content-length":
                length = int(value)  # the HTTP parser accepted it: digits only
            elif name == PROBE_HEADER:
                return None
        if length is None or length > self.direct_bytes or (most is not None and length > most):
            return None
        target = self.service.resolve(route[1], verb.name)
        if not isinstance(target, Framework):
            return None
        self.requests_in_flight += 1
        return DirectRequest(verb, target, self.metrics.profile_label(target.profile), time.perf_counter())

    def direct_answer(self, request: DirectRequest, body: bytes | bytearray) -> Answer | Awaitable[Answer]:
        """The answer to a :meth:`direct` request's whole body: at once, or an awaitable of the
        worker thread's (a verb over :data:`~app.api.verbs.INLINE_WEIGHT` nodes or victims)."""
        request.body = body
        return self._evaluate(request.verb, request.target, body, self.service)

    def direct_timed_out(self, request: DirectRequest) -> Answer:
        """The 408 of a :meth:`direct` request whose body did not arrive within
        ``server.timeouts.body`` (counted as a ``body`` timeout); the connection is then closed."""
        self.metrics.timeouts.labels("body").inc()
        return request.verb.error(408, body_timed_out(self.body_timeout))

    def direct_done(self, request: DirectRequest, answer: Answer | None) -> None:
        """A :meth:`direct` request is over: no longer in flight; its answer (``None``: the client
        went away before its body was whole) captured and counted, as :meth:`__call__` does."""
        if request.done:
            return
        request.done = True
        self.requests_in_flight -= 1
        if answer is None:
            return
        self._capture(request.verb, request.label, request.body, answer)
        self.metrics.answered(
            request.label, request.verb.name, answer.status, answer.error, time.perf_counter() - request.started
        )

    async def _admitted_body(
        self, verb: Verb, target: Framework | Answer, scope: Scope, receive: Receive, held: _Held
    ) -> bytes | bytearray:
        """The request's body once admitted (connections, requests in flight, bind's client
        certificate); ``b""`` unread when ``target`` already answers it. Raises
        :class:`_RefusedError` or :class:`ClientDisconnectedError`."""
        if scope.get(OVER_CAPACITY):
            self.metrics.overload.labels("connections").inc()
            raise _RefusedError(503, "too many connections: retry later")
        if self.requests_in_flight > self.max_requests:
            self.metrics.overload.labels("requests").inc()
            raise _RefusedError(503, "too many requests in flight: retry later")
        if isinstance(target, Answer):
            return b""
        if verb.name == "bind":
            self._authorize_bind(scope)
        body = await self._read_body(scope, receive, held)
        held.body = body
        return body

    def _authorize_bind(self, scope: Scope) -> None:
        """Bind holds cluster-wide ``pods/binding`` rights: only a caller whose verified TLS client
        certificate names an identity of ``server.tls.allowedClients`` may call it (kube-scheduler
        authenticates to extenders with a client certificate only). Raises :class:`_RefusedError`
        (403) otherwise; with ``server.insecureBind``, logs a warning instead."""
        if self.bind_clients is None:
            log.warning("bind from an unauthenticated caller (server.insecureBind: true)")
            return
        identity = scope.get(PEER_CN)
        if identity in self.bind_clients:
            return
        presented = f"CN {identity!r}" if identity else "no client certificate"
        allowed = ", ".join(sorted(self.bind_clients)) or "none: server.tls.clientCAFile is not set"
        raise _RefusedError(
            403,
            f"bind needs a TLS client certificate naming an identity of server.tls.allowedClients "
            f"({allowed}); this caller presented {presented}",
        )

    async def _read_body(self, scope: Scope, receive: Receive, held: _Held) -> bytes | bytearray:
        """The whole body, within ``maxRequestBytes``, ``maxInFlightBytes`` and the body timeout.
        With a Content-Length, into one buffer of that size (no copy of the whole); without,
        chunk by chunk, each counted as it arrives. Raises :class:`_RefusedError` (408, 413, 503) or
        :class:`ClientDisconnectedError`."""
        length = _content_length(scope)
        limit = self.max_request_bytes
        too_large = _RefusedError(413, body_too_large(limit))
        if length is not None and length > limit:
            raise too_large
        try:
            async with asyncio.timeout(self.body_timeout):
                if length is not None:
                    held.grow(length)
                    buffer = Body(length)
                    view = memoryview(buffer)
                    filled = commas = 0
                    count = length >= DENSE_CHECK_BYTES  # what check_body would scan for
                    async for chunk in _chunks(receive):
                        view[filled : filled + len(chunk)] = chunk  # the HTTP parser enforces the length
                        filled += len(chunk)
                        if count:
                            commas += chunk.count(b",")  # while the next chunk is on its way
                    buffer.commas = commas if count else None
                    return buffer
                chunks: list[bytes] = []
                size = 0
                async for chunk in _chunks(receive):
                    size += len(chunk)
                    if size > limit:
                        raise too_large
                    held.grow(size)
                    chunks.append(chunk)
                return b"".join(chunks)
        except TimeoutError:
            self.metrics.timeouts.labels("body").inc()
            raise _RefusedError(408, body_timed_out(self.body_timeout)) from None


class DirectRequest:
    """A verb request the HTTP/1.1 protocol answers without the ASGI cycle (:meth:`VerbRouter.direct`):
    its verb, the framework of its profile, its metrics label, when it began
    (``time.perf_counter()``), its body once whole, and whether it is over."""

    __slots__ = ("body", "done", "label", "started", "target", "verb")

    def __init__(self, verb: Verb, target: Framework, label: str, started: float) -> None:
        self.verb = verb
        self.target = target
        self.label = label
        self.started = started
        self.body: bytes | bytearray | None = None
        self.done = False


def answer_when_ready(
    loop: asyncio.AbstractEventLoop,
    tasks: set[asyncio.Task[None]],
    answer: Answer | Awaitable[Answer],
    send: Callable[[Answer], None],
) -> None:
    """``send`` a direct request's answer (:meth:`VerbRouter.direct_answer`): at once, or once the
    worker thread's is ready, by a task kept in ``tasks`` (a uvicorn protocol's, which its
    server's shutdown waits for) until it is done."""
    if isinstance(answer, Answer):
        send(answer)
        return

    async def later(pending: Awaitable[Answer]) -> None:
        send(await pending)

    task = loop.create_task(later(answer))
    task.add_done_callback(tasks.discard)
    tasks.add(task)


def log_access(logger: logging.Logger, scope: Scope, status: int) -> None:
    """The access line of a direct answer, as uvicorn's request cycles write it
    (``uvicorn.protocols.http.httptools_impl.RequestResponseCycle.send``)."""
    logger.info(
        '%s - "%s %s HTTP/%s" %d',
        get_client_addr(scope),  # type: ignore[arg-type]
        scope["method"],
        get_path_with_query_string(scope),  # type: ignore[arg-type]
        scope["http_version"],
        status,
    )


def _failed(verb: Verb, target: Framework) -> Answer:
    """Log the exception being handled and answer 500 without its text."""
    log.exception("%s on profile %s failed", verb.name, target.profile)
    return verb.error(500, INTERNAL_ERROR.format(verb=verb.name))


async def _awaited(verb: Verb, target: Framework, answer: Awaitable[Answer]) -> Answer:
    """``answer`` awaited (the worker thread's, or bind's), or 500 (:func:`_failed`)."""
    try:
        return await answer
    except Exception:
        return _failed(verb, target)


def body_timed_out(seconds: float) -> str:
    """The ``Error`` of a body that did not arrive within ``server.timeouts.body``, answered 408."""
    return f"the request body did not arrive within server.timeouts.body ({seconds:g}s)"


class _Held:
    """The request body bytes one request counts against ``maxInFlightBytes`` (bodies up to
    :data:`SMALL_BODY` are not counted)."""

    def __init__(self, router: VerbRouter) -> None:
        self.router = router
        self.size = 0
        #: the body once read (for the traffic capture)
        self.body: bytes | bytearray | None = None

    def grow(self, size: int) -> None:
        """Count the body as ``size`` bytes; raises :class:`_RefusedError` (503) past the budget."""
        if size <= SMALL_BODY or size <= self.size:
            return
        router = self.router
        if router.bytes_in_flight - self.size + size > router.max_in_flight_bytes:
            router.metrics.overload.labels("bytes").inc()
            raise _RefusedError(
                503,
                f"request bodies in flight would exceed server.maxInFlightBytes ({router.max_in_flight_bytes} bytes): "
                "retry later",
            )
        router.bytes_in_flight += size - self.size
        self.size = size

    def release(self) -> None:
        """Return the counted bytes to the budget."""
        self.router.bytes_in_flight -= self.size
        self.size = 0


def _joined(body: bytes | Chunks) -> bytes:
    """An answer's body as one bytes object (a capture copies it anyway)."""
    if isinstance(body, bytes):
        return body
    return b"".join(bytes(chunk) for chunk in body)


async def _chunks(receive: Receive) -> AsyncIterator[bytes]:
    """The body's chunks as the server delivers them; raises :class:`ClientDisconnectedError`."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnectedError
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


def _route(path: str) -> tuple[str, str | None] | None:
    """``(verb, profile)`` for ``/{verb}`` (profile ``None``) and ``/{profile}/{verb}``."""
    parts = path.split("/")
    if len(parts) == 2 and parts[1] in VERBS:
        return parts[1], None
    if len(parts) == 3 and parts[2] in VERBS and parts[1]:
        return parts[2], parts[1]
    return None


def _is_probe(scope: Scope) -> bool:
    """Whether the request carries :data:`~app.observe.logs.PROBE_HEADER` (one scan of the list)."""
    for name, _ in scope["headers"]:  # noqa: SIM110 - a loop is faster than any() on the hot path
        if name == PROBE_HEADER:
            return True
    return False


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value)  # the HTTP parser accepted it: digits only
    return None


async def _send_answer(send: Send, answer: Answer, close: bool) -> None:
    body = answer.body
    chunks = [body] if isinstance(body, bytes) else body
    size = sum(len(c) for c in chunks)
    headers = [_JSON, (b"content-length", str(size).encode())]
    if answer.retry_after is not None:
        headers.append((b"retry-after", str(answer.retry_after).encode()))
    if close:
        headers.append(_CLOSE)
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    if len(chunks) == 1:
        await send({"type": "http.response.body", "body": bytes(chunks[0])})
        return
    group: list[Any] = []
    grouped = 0
    for chunk in chunks:
        group.append(chunk)
        grouped += len(chunk)
        if grouped >= SEND_CHUNK:
            await send({"type": "http.response.body", "body": b"".join(group), "more_body": True})
            group, grouped = [], 0
    await send({"type": "http.response.body", "body": b"".join(group)})


async def send_plain(
    send: Send, status: int, body: bytes, *headers: tuple[bytes, bytes], retry_after: bool = False
) -> None:
    """One whole answer outside FastAPI: ``headers`` (the content type first), the length and,
    with ``retry_after``, ``Retry-After: RETRY_AFTER`` seconds."""
    out = [*headers, (b"content-length", str(len(body)).encode())]
    if retry_after:
        out.append((b"retry-after", str(RETRY_AFTER).encode()))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body})


def body_too_large(limit: int) -> str:
    """The ``Error`` of a body over ``server.maxRequestBytes`` (``limit`` bytes), answered 413."""
    return f"request body exceeds server.maxRequestBytes ({limit} bytes)"


#: The answer to a request over ``maxConnections`` (503 with ``Retry-After``).
OVER_CAPACITY_BODY = b'{"Error":"too many connections: retry later"}'


async def refused_over_capacity(scope: Scope, send: Send, *headers: tuple[bytes, bytes]) -> bool:
    """Answer 503 (:data:`OVER_CAPACITY_BODY`) when the connection is past ``maxConnections``,
    ``/healthz`` and ``/readyz`` excepted (the kubelet's probes still see a live process);
    ``True`` when it did."""
    if not scope.get(OVER_CAPACITY) or scope["path"] in ("/healthz", "/readyz"):
        return False
    await send_plain(send, 503, OVER_CAPACITY_BODY, _JSON, *headers, retry_after=True)
    return True

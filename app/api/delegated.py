"""The metrics listener (``server.metrics``): ``GET /metrics``, ``/healthz`` and ``/readyz`` on a
second socket, behind the delegated authentication and authorization kube-scheduler puts in front
of its own secure port (cmd/kube-scheduler/app/server.go ``buildHandlerChain``:
``WithAuthentication`` then ``WithAuthorization``, configured by k8s.io/apiserver
pkg/server/options/authentication.go and authorization.go).

A request goes through the steps of :class:`MetricsListener` (404 for other paths, the
always-allowed paths, admission, authentication, authorization, the answer).

The reviews are blocking calls of :class:`~app.kube.client.KubeClient` (the official client's
urllib3 pool): they run on :data:`REVIEW_WORKERS` threads, never on the event loop. With the
caches a Prometheus scraping every 15 s costs at most one TokenReview and one SubjectAccessReview
per scrape, and one of each per ``cacheTTL`` when it scrapes more often. Not done: the retries with
backoff of the webhook clients (a failed review fails the scrape, which Prometheus repeats at its
next interval), the request-header (front proxy) authenticator, token audiences.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from app.api.edge import PEER_CN, PEER_GROUPS, ASGIApp, Receive, Scope, Send, refused_over_capacity, send_plain
from app.config import MetricsServerConfig
from app.framework.errors import SchedulerExtenderError
from app.kube.errors import APIError

log = logging.getLogger(__name__)

#: The paths the metrics listener serves (``GET`` only).
SERVED_PATHS = frozenset({"/metrics", "/healthz", "/readyz"})
#: The user and group of a request without credentials (k8s.io/apiserver pkg/authentication/user).
ANONYMOUS_USER = "system:anonymous"
UNAUTHENTICATED_GROUP = "system:unauthenticated"
#: The group every authenticated user gains (pkg/authentication/group ``AuthenticatedGroupAdder``).
AUTHENTICATED_GROUP = "system:authenticated"
#: Groups allowed without a review (``DelegatingAuthorizationOptions.AlwaysAllowGroups``: the API
#: server's own authorizer allows them everything).
PRIVILEGED_GROUPS = frozenset({"system:masters"})
#: Answers kept per cache (tokens; access reviews): the webhook authorizer's LRU holds 8192.
CACHE_ENTRIES = 8192
#: Threads the reviews run on (each holds one connection of the client's pool while it waits).
REVIEW_WORKERS = 4

Decision = Literal["allow", "deny", "no-opinion"]
V = TypeVar("V")
K = TypeVar("K")


@dataclass(frozen=True)
class UserInfo:
    """An authenticated (or anonymous) caller: k8s.io/apiserver's ``user.Info``."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    #: ``extra`` as sorted ``(key, values)`` pairs (hashable)
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def review_spec(self) -> dict[str, Any]:
        """The user part of a ``SubjectAccessReviewSpec`` (``user``, ``groups``, ``uid``, ``extra``)."""
        spec: dict[str, Any] = {"user": self.name, "groups": list(self.groups)}
        if self.uid:
            spec["uid"] = self.uid
        if self.extra:
            spec["extra"] = {key: list(values) for key, values in self.extra}
        return spec


#: A request without credentials (the anonymous authenticator, pkg/authentication/request/anonymous).
ANONYMOUS = UserInfo(ANONYMOUS_USER, groups=(UNAUTHENTICATED_GROUP,))


class ReviewClient(Protocol):
    """What the reviews need of :class:`~app.kube.client.KubeClient` (blocking calls that raise
    :class:`~app.kube.errors.APIError`)."""

    def create_token_review(self, token: str, timeout: float) -> dict[str, Any]: ...

    def create_subject_access_review(self, spec: dict[str, Any], timeout: float) -> dict[str, Any]: ...


class UnauthorizedError(SchedulerExtenderError):
    """The credentials presented do not authenticate (an invalid token, a failed review): 401.
    The message is for the log, never for the client; ``failed``: the review itself failed (the
    API server's trouble, logged as a warning)."""

    def __init__(self, message: str, failed: bool = False) -> None:
        super().__init__(message)
        self.failed = failed


class ReviewFailedError(SchedulerExtenderError):
    """A SubjectAccessReview could not be made or answered nonsense: 500 (as k8s.io/apiserver's
    authorization filter answers an authorizer's error)."""


class ExpiringCache(Generic[K, V]):
    """At most ``size`` entries, each kept until its own deadline (``clock()`` seconds), least
    recently used dropped first when full. Loop-only: no lock."""

    def __init__(self, size: int = CACHE_ENTRIES, clock: Callable[[], float] = time.monotonic) -> None:
        self.size = size
        self.clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> V | None:
        """The live value of ``key``, or ``None`` (absent or expired)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= self.clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def set(self, key: K, value: V, ttl: float) -> None:
        """Keep ``value`` for ``ttl`` seconds (``ttl <= 0``: not kept)."""
        if ttl <= 0:
            return
        self._entries[key] = (self.clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


def bearer_token(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The token of ``Authorization: Bearer <token>`` (the scheme case-insensitive), or ``None``
    when there is no such header, another scheme, or an empty token: the request is then not
    authenticated by a token (pkg/authentication/request/bearertoken/bearertoken.go)."""
    for name, value in headers:
        if name != b"authorization":
            continue
        text = value.decode("latin-1").strip()
        parts = text.split(" ", 2)
        if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
            return None
        return parts[1]
    return None


def with_authenticated_group(user: UserInfo) -> UserInfo:
    """``user`` with :data:`AUTHENTICATED_GROUP` added unless it is anonymous or already in it or in
    :data:`UNAUTHENTICATED_GROUP` (pkg/authentication/group/authenticated_group_adder.go)."""
    if user.name == ANONYMOUS_USER or {AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP} & set(user.groups):
        return user
    return UserInfo(user.name, user.uid, (*user.groups, AUTHENTICATED_GROUP), user.extra)


def _user_of(status: Mapping[str, Any]) -> UserInfo:
    """The user a TokenReview's ``status.user`` names."""
    user = status.get("user") or {}
    extra = user.get("extra") or {}
    return UserInfo(
        str(user.get("username") or ""),
        str(user.get("uid") or ""),
        tuple(str(g) for g in user.get("groups") or ()),
        tuple(sorted((str(k), tuple(str(v) for v in vs or ())) for k, vs in extra.items())),
    )


class DelegatedAuth:
    """Authentication and authorization delegated to the API server through ``client`` (see the
    module doc). ``cache_ttl``: seconds a review's answer is kept (``0``: none is); ``timeout``:
    seconds one review may take. :meth:`close` stops the review threads."""

    def __init__(
        self,
        client: ReviewClient,
        cache_ttl: float = 10.0,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.cache_ttl = cache_ttl
        self.timeout = timeout
        self.executor = ThreadPoolExecutor(max_workers=REVIEW_WORKERS, thread_name_prefix="delegated-auth")
        #: token digest -> the user, or the reason it is not authenticated
        self.tokens: ExpiringCache[bytes, UserInfo | str] = ExpiringCache(clock=clock)
        #: the review's spec as JSON -> (decision, reason)
        self.access: ExpiringCache[str, tuple[Decision, str]] = ExpiringCache(clock=clock)
        self._secret = os.urandom(32)  # tokens are kept only as keyed digests
        self._pending: dict[Any, asyncio.Future[Any]] = {}

    async def authenticate(self, scope: Scope) -> UserInfo:
        """The caller of ``scope``: its verified client certificate's CN/O, else its bearer
        token's user, else :data:`ANONYMOUS`. Raises :class:`UnauthorizedError` for a token the
        API server does not authenticate or a TokenReview that fails."""
        name = scope.get(PEER_CN)
        if name:
            return with_authenticated_group(UserInfo(name, groups=tuple(scope.get(PEER_GROUPS) or ())))
        token = bearer_token(scope.get("headers") or ())
        if token is None:
            return ANONYMOUS
        key = hmac.new(self._secret, token.encode(), hashlib.sha256).digest()
        cached = self.tokens.get(key)
        failed = False
        if cached is None:

            def keep(answer: tuple[UserInfo | str, bool]) -> None:
                if answer[1]:
                    self.tokens.set(key, answer[0], self.cache_ttl)

            reviewed: tuple[UserInfo | str, bool] = await self._shared(
                ("token", key), lambda: self._review_token(token), keep
            )
            cached, failed = reviewed[0], not reviewed[1]
        if isinstance(cached, str):
            raise UnauthorizedError(cached, failed)
        return cached

    def _review_token(self, token: str) -> tuple[UserInfo | str, bool]:
        """One TokenReview (on a review thread): the user, or why the token does not authenticate;
        and whether the answer may be kept (not when the review failed: the next request asks
        again, as the delegating authenticator's cache keeps no error)."""
        try:
            status = self.client.create_token_review(token, self.timeout)
        except APIError as exc:
            return f"the TokenReview failed: {exc}", False
        if status.get("authenticated") is True:
            return with_authenticated_group(_user_of(status)), True
        why = status.get("error") or "invalid bearer token"
        return f"the API server did not authenticate the token: {why}", True

    async def authorize(self, user: UserInfo, verb: str, path: str) -> tuple[Decision, str]:
        """Whether ``user`` may ``verb`` the non-resource ``path``: ``(decision, reason)``. Raises
        :class:`ReviewFailedError` when the SubjectAccessReview fails or answers both allowed
        and denied."""
        if PRIVILEGED_GROUPS & set(user.groups):
            return "allow", ""
        spec = user.review_spec() | {"nonResourceAttributes": {"path": path, "verb": verb}}
        key = json.dumps(spec, sort_keys=True)
        known = self.access.get(key)
        if known is None:

            def keep(answer: tuple[Decision, str]) -> None:
                self.access.set(key, answer, self.cache_ttl)

            known = await self._shared(("access", key), lambda: self._review_access(spec), keep)
        return known

    def _review_access(self, spec: dict[str, Any]) -> tuple[Decision, str]:
        """One SubjectAccessReview (on a review thread); its answer is kept allowed or not."""
        try:
            status = self.client.create_subject_access_review(spec, self.timeout)
        except APIError as exc:
            raise ReviewFailedError(f"the SubjectAccessReview failed: {exc}") from exc
        allowed, denied = status.get("allowed") is True, status.get("denied") is True
        reason = str(status.get("reason") or "")
        if allowed and denied:
            raise ReviewFailedError("the SubjectAccessReview answered both allowed and denied")
        return ("allow" if allowed else "deny" if denied else "no-opinion"), reason

    async def _shared(self, key: Any, call: Callable[[], V], keep: Callable[[V], None]) -> V:
        """``call()`` on a review thread, shared by the concurrent callers of ``key`` (the
        ``singleflight`` of the token cache); ``keep(answer)`` once it is answered (the caches are
        written on the loop). A caller that goes away does not cancel the review of the others."""
        future = self._pending.get(key)
        if future is None:
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(self.executor, call)
            self._pending[key] = future

            def settle(done: asyncio.Future[Any]) -> None:
                self._pending.pop(key, None)
                if not done.cancelled() and done.exception() is None:
                    keep(done.result())

            future.add_done_callback(settle)
        result: V = await asyncio.shield(future)
        return result

    def close(self) -> None:
        """Stop the review threads (reviews in flight are abandoned)."""
        self.executor.shutdown(wait=False, cancel_futures=True)


def _always(patterns: Iterable[str]) -> Callable[[str], bool]:
    """The matcher of ``alwaysAllowPaths``: exact paths, or prefixes for a trailing ``*``
    (pkg/authorization/path/path.go)."""
    exact = {p for p in patterns if not p.endswith("*")}
    prefixes = tuple(p[:-1] for p in patterns if p.endswith("*"))
    return lambda path: path in exact or (bool(prefixes) and path.startswith(prefixes))


_JSON = (b"content-type", b"application/json")
_TEXT = (b"content-type", b"text/plain; charset=utf-8")
_NOSNIFF = (b"x-content-type-options", b"nosniff")
_NO_CACHE = (b"cache-control", b"no-cache, private")


def status_body(code: int, reason: str, message: str) -> bytes:
    """A ``metav1.Status`` failure as kube-apiserver writes it."""
    doc: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if code == 403:
        doc["details"] = {}
    doc["code"] = code
    return json.dumps(doc, separators=(",", ":")).encode()


def forbidden_message(user: UserInfo, verb: str, path: str, reason: str) -> str:
    """kube-apiserver's 403 message of a non-resource request (responsewriters ``forbiddenMessage``
    within ``apierrors.NewForbidden``)."""
    message = f"forbidden: User {json.dumps(user.name)} cannot {verb} path {json.dumps(path)}"
    return f"{message}: {reason}" if reason else message


class MetricsListener:
    """The metrics listener's ASGI app (see the module doc): ``app`` answers the three paths once
    admitted (the verb listener's FastAPI app); ``auth`` is ``None`` with ``insecure: true``.

    A request, top to bottom (:meth:`MetricsListener.__call__`):

    1. anything but ``GET`` of the three paths: ``404 page not found`` (Go's ``NotFound``), before any
       credential is looked at, so that a scan of random paths costs the API server nothing (in
       kube-scheduler authentication runs first and only then its mux answers 404);
    2. ``alwaysAllowPaths`` (``/healthz``, ``/readyz``): answered without authentication or
       authorization (kube-scheduler authenticates them too and then always allows them; here they
       cost no review even with a token);
    3. a connection past ``maxConnections``: 503 with ``Retry-After``;
    4. authentication (:meth:`DelegatedAuth.authenticate`), in the order of
       pkg/authentication/authenticatorfactory/delegating.go: a client certificate verified against
       ``clientCAFile`` names user CN and groups O (pkg/authentication/request/x509); else a bearer
       token (pkg/authentication/request/bearertoken/bearertoken.go) reviewed by the API server
       (``TokenReview``, plugin/pkg/authenticator/token/webhook/webhook.go) through a cache
       (pkg/authentication/token/cache/cached_token_authenticator.go: keyed by a keyed hash of the
       token, concurrent look-ups of one token share one review, failed reviews are not kept); else
       the anonymous user ``system:anonymous`` (group ``system:unauthenticated``: the delegating
       authenticator allows anonymous requests, ``unionauth.NewFailOnError``). An authenticated user
       gains the group ``system:authenticated`` (pkg/authentication/group). A token the API server
       does not authenticate, or a review that fails, is ``401 Unauthorized`` (the review's failure is
       logged);
    5. authorization (:meth:`DelegatedAuth.authorize`), as pkg/server/options/authorization.go's
       union: a member of ``system:masters`` is allowed; else a ``SubjectAccessReview`` with
       ``nonResourceAttributes: {path, verb: get}`` and the user's name, uid, groups and extra
       (plugin/pkg/authorizer/webhook/webhook.go), its answer kept ``cacheTTL`` whether allowed or
       not. Not allowed: ``403`` with kube-apiserver's message (``forbidden: User "x" cannot get path
       "/metrics"``, pkg/endpoints/handlers/responsewriters ``Forbidden``); a review that fails:
       ``500`` (pkg/endpoints/filters/authorization.go answers an authorizer's error with
       ``InternalError``: the API server's failure, not the client's mistake);
    6. the answer: the verb listener's own FastAPI app (:func:`~app.api.app.create_app`), so both
       listeners serve the same bodies.

    With ``insecure: true`` steps 2 to 5 are skipped: plain HTTP, no credentials asked.
    """

    def __init__(self, app: ASGIApp, config: MetricsServerConfig, auth: DelegatedAuth | None) -> None:
        self.app = app
        self.config = config
        self.auth = auth
        self.always_allowed = _always(config.always_allow_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one request (steps 1 to 6 of the module doc)."""
        if scope["type"] != "http":
            return
        path = scope["path"]
        if scope["method"] != "GET" or path not in SERVED_PATHS:
            await send_plain(send, 404, b"404 page not found\n", _TEXT, _NOSNIFF)
            return
        if await refused_over_capacity(scope, send):
            return
        auth = self.auth
        if auth is not None and not self.always_allowed(path):
            try:
                user = await auth.authenticate(scope)
            except UnauthorizedError as exc:
                client = scope.get("client")
                level = logging.WARNING if exc.failed else logging.INFO
                log.log(level, "metrics listener: GET %s from %s: 401: %s", path, client and client[0], exc)
                await send_plain(send, 401, status_body(401, "Unauthorized", "Unauthorized"), _JSON, _NO_CACHE)
                return
            try:
                decision, reason = await auth.authorize(user, "get", path)
            except ReviewFailedError as exc:
                log.warning("metrics listener: GET %s by %s: 500: %s", path, user.name, exc)
                text = f"Internal Server Error: {json.dumps(path)}: {exc}\n".encode()
                await send_plain(send, 500, text, _TEXT, _NOSNIFF, _NO_CACHE)
                return
            if decision != "allow":
                message = forbidden_message(user, "get", path, reason)
                await send_plain(send, 403, status_body(403, "Forbidden", message), _JSON, _NOSNIFF, _NO_CACHE)
                return
        await self.app(scope, receive, send)

    def close(self) -> None:
        """Stop the review threads."""
        if self.auth is not None:
            self.auth.close()


def metrics_listener(app: ASGIApp, config: MetricsServerConfig, client: ReviewClient | None) -> MetricsListener:
    """The listener of ``config`` in front of ``app`` (the verb listener's FastAPI app), its
    reviews made by ``client`` (``None``: only with ``insecure: true``)."""
    if config.insecure:
        return MetricsListener(app, config, None)
    if client is None:
        raise ValueError("server.metrics: delegated authentication needs an API client (or insecure: true)")
    auth = DelegatedAuth(client, config.seconds("cache_ttl"), config.seconds("review_timeout"))
    return MetricsListener(app, config, auth)


__all__ = [
    "ANONYMOUS",
    "AUTHENTICATED_GROUP",
    "PRIVILEGED_GROUPS",
    "SERVED_PATHS",
    "DelegatedAuth",
    "ExpiringCache",
    "MetricsListener",
    "ReviewClient",
    "ReviewFailedError",
    "UnauthorizedError",
    "UserInfo",
    "bearer_token",
    "forbidden_message",
    "metrics_listener",
    "status_body",
    "with_authenticated_group",
]

"""The metrics listener's delegated authentication and authorization (``app.api.delegated``) with a
review client that counts its calls: the caches, the shared look-ups, the parsing of credentials."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from app.api.delegated import (
    ANONYMOUS,
    DelegatedAuth,
    ExpiringCache,
    ReviewFailedError,
    UnauthorizedError,
    UserInfo,
    bearer_token,
    forbidden_message,
    with_authenticated_group,
)
from app.api.edge import PEER_CN, PEER_GROUPS
from app.kube.errors import APIError


class Reviews:
    """A review client: tokens -> TokenReview status, (user, path) -> SubjectAccessReview status;
    ``delay`` seconds per call; ``fail``: raise an :class:`APIError` instead."""

    def __init__(self, delay: float = 0.0) -> None:
        self.tokens: dict[str, dict[str, Any]] = {}
        self.access: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, Any]] = []
        self.delay = delay
        self.fail = False
        self.lock = threading.Lock()

    def create_token_review(self, token: str, timeout: float) -> dict[str, Any]:
        with self.lock:
            self.calls.append(("token", token))
        time.sleep(self.delay)
        if self.fail:
            raise APIError(503, "ServiceUnavailable", "down")
        return self.tokens.get(token, {"authenticated": False})

    def create_subject_access_review(self, spec: dict[str, Any], timeout: float) -> dict[str, Any]:
        with self.lock:
            self.calls.append(("access", spec))
        time.sleep(self.delay)
        if self.fail:
            raise APIError(0, "ConnectionRefused", "down")
        return self.access.get((spec["user"], spec["nonResourceAttributes"]["path"]), {"allowed": False})


def _scope(token: str | None = None, **extra: Any) -> dict[str, Any]:
    headers = [(b"authorization", f"Bearer {token}".encode())] if token is not None else []
    return {"type": "http", "headers": headers, **extra}


def _auth(reviews: Reviews, ttl: float = 10.0) -> DelegatedAuth:
    return DelegatedAuth(reviews, cache_ttl=ttl, timeout=1.0)


def test_bearer_token_parsing_follows_the_bearertoken_authenticator() -> None:
    def token(value: bytes) -> str | None:
        return bearer_token([(b"host", b"x"), (b"authorization", value)])

    assert token(b"Bearer abc") == "abc" and token(b"bearer abc") == "abc" and token(b"  Bearer abc  ") == "abc"
    assert token(b"Basic dXNlcjpwYXNz") is None and token(b"Bearer") is None and token(b"Bearer  abc") is None
    assert bearer_token([]) is None


def test_the_authenticated_group_is_added_once_and_never_to_the_anonymous_user() -> None:
    assert with_authenticated_group(UserInfo("a", groups=("g",))).groups == ("g", "system:authenticated")
    assert with_authenticated_group(UserInfo("a", groups=("system:authenticated",))).groups == ("system:authenticated",)
    assert with_authenticated_group(ANONYMOUS) is ANONYMOUS


def test_the_expiring_cache_drops_by_age_and_by_recency() -> None:
    now = [0.0]
    cache: ExpiringCache[str, int] = ExpiringCache(size=2, clock=lambda: now[0])
    cache.set("a", 1, 10)
    cache.set("b", 2, 10)
    assert cache.get("a") == 1  # a is now the most recent
    cache.set("c", 3, 10)
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
    now[0] = 10.0
    assert cache.get("a") is None and len(cache) == 1
    cache.set("d", 4, 0)  # a TTL of 0 keeps nothing
    assert cache.get("d") is None


def test_a_token_is_reviewed_once_per_ttl_and_concurrent_requests_share_the_review() -> None:
    reviews = Reviews(delay=0.05)
    reviews.tokens["t"] = {"authenticated": True, "user": {"username": "u", "uid": "1", "groups": ["g"]}}
    auth = _auth(reviews)

    async def main() -> list[UserInfo]:
        return list(await asyncio.gather(*(auth.authenticate(_scope("t")) for _ in range(20))))

    users = asyncio.run(main())
    assert {u.name for u in users} == {"u"} and users[0].groups == ("g", "system:authenticated")
    assert reviews.calls == [("token", "t")]
    asyncio.run(auth.authenticate(_scope("t")))
    assert len(reviews.calls) == 1  # cached
    auth.close()


def test_an_unknown_token_is_unauthorized_and_kept_a_failed_review_is_not() -> None:
    reviews = Reviews()
    auth = _auth(reviews)
    for _ in range(2):
        with pytest.raises(UnauthorizedError, match="invalid bearer token") as caught:
            asyncio.run(auth.authenticate(_scope("nope")))
        assert not caught.value.failed
    assert reviews.calls == [("token", "nope")]
    reviews.fail = True
    for _ in range(2):
        with pytest.raises(UnauthorizedError, match="the TokenReview failed") as caught:
            asyncio.run(auth.authenticate(_scope("other")))
        assert caught.value.failed
    assert reviews.calls.count(("token", "other")) == 2
    auth.close()


def test_no_credentials_is_anonymous_and_a_verified_certificate_needs_no_review() -> None:
    reviews = Reviews()
    auth = _auth(reviews)
    assert asyncio.run(auth.authenticate(_scope())) == ANONYMOUS
    user = asyncio.run(auth.authenticate(_scope(**{PEER_CN: "dave", PEER_GROUPS: ("ops",)})))
    assert user == UserInfo("dave", groups=("ops", "system:authenticated"))
    assert reviews.calls == []
    auth.close()


def test_access_reviews_are_kept_allowed_or_not_and_failures_are_errors() -> None:
    reviews = Reviews()
    reviews.access[("u", "/metrics")] = {"allowed": True, "reason": "RBAC: allowed"}
    reviews.access[("d", "/metrics")] = {"allowed": False, "denied": True, "reason": "no"}
    auth = _auth(reviews)
    user, denied, other = UserInfo("u", "1", ("g",)), UserInfo("d"), UserInfo("o")
    for _ in range(3):
        assert asyncio.run(auth.authorize(user, "get", "/metrics")) == ("allow", "RBAC: allowed")
        assert asyncio.run(auth.authorize(denied, "get", "/metrics")) == ("deny", "no")
        assert asyncio.run(auth.authorize(other, "get", "/metrics")) == ("no-opinion", "")
    assert len(reviews.calls) == 3
    spec = reviews.calls[0][1]
    assert spec == {
        "user": "u",
        "groups": ["g"],
        "uid": "1",
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }
    reviews.fail = True
    with pytest.raises(ReviewFailedError, match="the SubjectAccessReview failed"):
        asyncio.run(auth.authorize(UserInfo("new"), "get", "/metrics"))
    reviews.fail = False
    reviews.access[("both", "/metrics")] = {"allowed": True, "denied": True}
    with pytest.raises(ReviewFailedError, match="both allowed and denied"):
        asyncio.run(auth.authorize(UserInfo("both"), "get", "/metrics"))
    auth.close()


def test_system_masters_is_allowed_without_a_review_and_ttl_zero_keeps_nothing() -> None:
    reviews = Reviews()
    auth = _auth(reviews, ttl=0)
    assert asyncio.run(auth.authorize(UserInfo("root", groups=("system:masters",)), "get", "/metrics"))[0] == "allow"
    assert reviews.calls == []
    for _ in range(2):
        asyncio.run(auth.authorize(UserInfo("o"), "get", "/metrics"))
    assert len(reviews.calls) == 2
    auth.close()


def test_the_forbidden_message_is_kube_apiservers() -> None:
    assert forbidden_message(ANONYMOUS, "get", "/metrics", "") == (
        'forbidden: User "system:anonymous" cannot get path "/metrics"'
    )
    assert forbidden_message(UserInfo("a"), "get", "/metrics", "why").endswith('path "/metrics": why')


def test_the_listeners_errors_are_part_of_the_projects_error_tree() -> None:
    """ARCHITECTURE.md: every error raised on purpose derives from ``SchedulerExtenderError``."""
    from app.api.server import ListenError
    from app.framework.errors import SchedulerExtenderError

    for error in (UnauthorizedError, ReviewFailedError, ListenError):
        assert issubclass(error, SchedulerExtenderError), error
    assert not issubclass(UnauthorizedError, APIError)  # its callers catch it by name, apart from APIError

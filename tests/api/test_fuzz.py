"""Malformed and adversarial bodies at every verb, through the real ASGI app.

Hypothesis generates bodies three ways: arbitrary JSON, the shared fixtures with one value
replaced anywhere (wrong types, nulls, deep nesting, huge numbers, strings with odd code points),
and the fixtures' bytes cut, spliced or corrupted (invalid UTF-8 included). Every answer must be
a 4xx or a 200 (never a 5xx: no plugin of these profiles fails closed), of the verb's result
type, with a non-empty ``Error`` when not 200; a filter answer echoes only nodes it was sent,
unchanged, and names only nodes it was sent.

The example count is deterministic (``derandomize``) and small for ``make test``;
``make fuzz`` runs many more (``FUZZ_EXAMPLES``).
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.api import create_app
from app.bootstrap import build_service
from tests.e2e.test_server import CONFIG
from tests.support.bodies import fixture_bytes

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
APP = create_app(build_service(str(CONFIG)))  # profiles "space" (Nodes, the default) and "chaos" (NodeNames)
FILTER_KEYS = {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}
# (path, base fixture): every verb, both node forms
TARGETS = [
    ("/filter", "extenderargs_nocache_n10_space.json"),
    ("/chaos/filter", "extenderargs_cache_n10.json"),
    ("/prioritize", "extenderargs_nocache_n10.json"),
    ("/chaos/prioritize", "extenderargs_cache_n10.json"),
    ("/preempt", "preemptionargs_nocache.json"),
    ("/chaos/preempt", "preemptionargs_cache.json"),
    ("/bind", "bindingargs.json"),
]


def call(path: str, body: bytes) -> tuple[int, bytes]:
    """POST ``body`` to ``path`` through the ASGI app; returns (status, body)."""
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return messages.pop() if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")],
    }
    asyncio.run(APP(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def check(path: str, request: bytes, status: int, answer: bytes) -> None:
    """The contract every answer keeps, whatever the request."""
    verb = path.rsplit("/", 1)[1]
    assert status < 500, (status, answer[:300])
    result = json.loads(answer)
    if status != 200:
        assert isinstance(result, dict) and isinstance(result["Error"], str) and result["Error"]
        assert "Traceback" not in result["Error"] and "Error:" not in result["Error"]
    if verb == "filter":
        assert set(result) == FILTER_KEYS
        if status == 200 and not result["Error"]:
            sent = json.loads(request)  # decoded, so valid JSON
            sent_nodes = _items(sent)
            names = {n.get("metadata", {}).get("name") for n in sent_nodes if isinstance(n, dict)}
            names |= set(_get(sent, "nodenames") or [])
            if result["Nodes"] is not None:
                for item in result["Nodes"]["items"]:
                    assert item in sent_nodes, "a node that was not sent, or changed"
            for name in (
                list(result["NodeNames"] or [])
                + list(result["FailedNodes"])
                + list(result["FailedAndUnresolvableNodes"])
            ):
                assert name in names
    elif verb == "prioritize" and status == 200:
        assert isinstance(result, list)
        assert all(set(h) == {"Host", "Score"} and type(h["Score"]) is int for h in result)
    elif verb == "preempt":
        assert "NodeNameToMetaVictims" in result
    elif verb == "bind":
        assert set(result) == {"Error"}


def _get(doc: Any, key: str) -> Any:
    """``doc[key]`` matched as Go matches keys (case-insensitively; the last match wins)."""
    found = None
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k.lower() == key:
                found = v
    return found


def _items(doc: Any) -> list[Any]:
    nodes = _get(doc, "nodes")
    return list(_get(nodes, "items") or []) if isinstance(nodes, dict) else []


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
odd_values = st.one_of(
    json_values,
    st.integers(min_value=1, max_value=3000).map(lambda d: json.loads("[" * d + "]" * d) if d < 900 else "deep"),
    st.sampled_from([10**30, -(10**30), 1e308, "\u2028", "\ud7ff\ue000", "", " ", "0.5", {"": None}]),
)


def paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``doc`` (keys and indexes)."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            out += paths(v, (*prefix, i))
    return out


def replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {**doc, head: replaced(doc[head], rest, value)}
    copy = list(doc)
    copy[head] = replaced(doc[head], rest, value)
    return copy


def encode(value: Any) -> bytes:
    text = json.dumps(value)
    return text.replace('"deep"', "[" * 5000 + "]" * 5000).encode()


@FUZZ
@given(target=st.sampled_from(TARGETS), value=json_values)
def test_arbitrary_json(target: tuple[str, str], value: Any) -> None:
    body = encode(value)
    check(target[0], body, *call(target[0], body))


@FUZZ
@given(target=st.sampled_from(TARGETS), data=st.data(), value=odd_values)
def test_one_value_replaced(target: tuple[str, str], data: st.DataObject, value: Any) -> None:
    doc = json.loads(fixture_bytes(target[1]))
    path = data.draw(st.sampled_from(paths(doc)))
    body = encode(replaced(doc, path, value))
    check(target[0], body, *call(target[0], body))


@FUZZ
@given(target=st.sampled_from(TARGETS), data=st.data())
def test_corrupted_bytes(target: tuple[str, str], data: st.DataObject) -> None:
    base = fixture_bytes(target[1])
    at = data.draw(st.integers(0, len(base)))
    how = data.draw(st.sampled_from(["cut", "splice", "flip", "lower"]))
    if how == "cut":
        body = base[:at]
    elif how == "splice":
        body = base[:at] + data.draw(st.binary(max_size=16)) + base[at:]
    elif how == "flip":
        body = base[:at] + bytes([data.draw(st.integers(0x80, 0xFF))]) + base[at + 1 :]
    else:
        body = base[:at] + base[at:].lower()
    status, answer = call(target[0], body)
    check(target[0], body, status, answer)
    if status == 200 and how == "flip":
        assert bytes([body[at]]) not in answer or body[at] < 0x80  # invalid UTF-8 is never echoed


@pytest.mark.parametrize(("path", "name"), TARGETS)
def test_the_fixtures_themselves_pass(path: str, name: str) -> None:
    body = fixture_bytes(name)
    status, answer = call(path, body)
    check(path, body, status, answer)
    assert status == 200

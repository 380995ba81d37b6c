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

from app.bootstrap import build_app, load_assembly
from tests.e2e.test_server import CONFIG
from tests.support.bodies import fixture_bytes

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
APP = build_app(load_assembly(str(CONFIG)))  # profiles "space" (Nodes, the default) and "chaos" (NodeNames)
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


# -- a non-object where an object belongs, at every depth of a node or pod ----------------------------

NOT_OBJECTS = st.sampled_from([True, False, 0, 7, -1.5, "", "x", [], [{}], None])


def object_paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths of every JSON object inside ``doc`` (``doc`` itself included when it is one)."""
    out = [prefix] if isinstance(doc, dict) else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += object_paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            out += object_paths(v, (*prefix, i))
    return out


# (path, fixture, where in it the objects to replace are): a node of each verb's Nodes, the pod,
# and a victim pod of a non-cache preempt
OBJECT_TARGETS = [
    ("/filter", "extenderargs_nocache_n10_space.json", ("Nodes", "items", 5)),
    ("/prioritize", "extenderargs_nocache_n10.json", ("Nodes", "items", 5)),
    ("/filter", "extenderargs_nocache_n10_space.json", ("Pod",)),
    ("/prioritize", "extenderargs_nocache_n10.json", ("Pod",)),
    ("/chaos/filter", "extenderargs_cache_n10.json", ("Pod",)),
    ("/preempt", "preemptionargs_nocache.json", ("Pod",)),
]


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@FUZZ
@given(target=st.sampled_from(OBJECT_TARGETS), data=st.data(), value=NOT_OBJECTS)
def test_a_non_object_where_an_object_belongs(
    target: tuple[str, str, tuple[Any, ...]], data: st.DataObject, value: Any
) -> None:
    """kube-scheduler never sends these; Go's decoder refuses a non-object for a struct (``null``
    is a nil pointer: allowed). Every one is a 400 or a 200, whatever the depth."""
    path, name, base = target
    doc = json.loads(fixture_bytes(name))
    inner = data.draw(st.sampled_from(object_paths(_at(doc, base))))
    body = encode(replaced(doc, (*base, *inner), value))
    status, answer = call(path, body)
    check(path, body, status, answer)
    assert status in (200, 400), (status, answer[:300])


# -- quantities, against resource.ParseQuantity's grammar ---------------------------------------------


def parses_as_upstream(text: str) -> bool:
    """Whether ``resource.ParseQuantity(strings.TrimSpace(text))`` succeeds: a transcription of
    ``parseQuantityString`` and ``suffixHandler.interpret`` (k8s.io/apimachinery/pkg/api/resource/
    quantity.go and suffix.go), character by character, kept independent of the service's parser."""
    s = text.strip()
    if not s:
        return False
    if s == "0":
        return True
    pos, end = 0, len(s)
    if s[0] in "+-":
        pos += 1
    while pos < end and s[pos] in "0123456789":
        pos += 1
    if pos < end and s[pos] == ".":
        pos += 1
        while pos < end and s[pos] in "0123456789":
            pos += 1
    suffix_start = pos
    while pos < end and s[pos] in "eEinumkKMGTP":
        pos += 1
    if pos < end and s[pos] in "+-":
        pos += 1
    while pos < end and s[pos] in "0123456789":
        pos += 1
    if pos < end:
        return False  # ErrFormatWrong
    suffix = s[suffix_start:]
    if suffix in ("", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"):
        return True
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:].lstrip("+-") if suffix[1] in "+-" else suffix[1:]
        if not digits or not digits.isdigit() or len(suffix[1:]) - len(digits) > 1:
            return False  # strconv.ParseInt
        return -(2**63) <= int(suffix[1:]) < 2**63
    return False  # ErrSuffix


def beyond_exponent_range(text: str) -> bool:
    """The one documented difference (``app.framework.resources.MAX_EXPONENT``): an exponent
    beyond ±1000 once upstream truncated it to an int32 is refused (upstream computes with it)."""
    s = text.strip()
    for i, c in enumerate(s):
        if c in "eE" and s[i + 1 : i + 2] and (s[i + 1].isdigit() or s[i + 1] in "+-"):
            try:
                exponent = int(s[i + 1 :])
            except ValueError:
                return False
            return abs(((exponent + 2**31) % 2**32) - 2**31) > 1000
    return False


QUANTITY_CHARS = "0123456789.+-eEinumkKMGTP xZ"
quantities = st.one_of(
    # well-formed: sign, digits, fraction, a suffix or an exponent
    st.builds(
        lambda sign, whole, frac, suffix: f"{sign}{whole}{frac}{suffix}",
        st.sampled_from(["", "+", "-"]),
        st.text("0123456789", max_size=6),
        st.sampled_from(["", "."]).flatmap(
            lambda dot: st.text("0123456789", max_size=4).map(lambda d: dot + d if dot else "")
        ),
        st.one_of(
            st.sampled_from(["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]),
            st.builds(
                lambda e, sign, n: f"{e}{sign}{n}",
                st.sampled_from("eE"),
                st.sampled_from(["", "+", "-"]),
                st.integers(0, 40),
            ),
        ),
    ),
    # anything made of the characters the grammar cares about
    st.text(QUANTITY_CHARS, max_size=10),
)


@FUZZ
@given(
    target=st.sampled_from(
        [("/filter", "extenderargs_nocache_n10_space.json"), ("/prioritize", "extenderargs_nocache_n10.json")]
    ),
    where=st.sampled_from(["node", "pod"]),
    resource=st.sampled_from(["cpu", "memory", "pods", "example.com/ip"]),
    quantity=quantities,
)
def test_quantities_follow_parse_quantity(target: tuple[str, str], where: str, resource: str, quantity: str) -> None:
    """A quantity ``ParseQuantity`` refuses is a 400 naming it; one it accepts is answered 200."""
    path, name = target
    doc = json.loads(fixture_bytes(name))
    if where == "node":
        doc["Nodes"]["items"][4]["status"]["allocatable"][resource] = quantity
    else:
        doc["Pod"]["spec"]["containers"][0]["resources"] = {"requests": {resource: quantity}}
    body = encode(doc)
    status, answer = call(path, body)
    check(path, body, status, answer)
    if parses_as_upstream(quantity) and not beyond_exponent_range(quantity):
        assert status == 200, (quantity, answer[:300])
    else:
        assert status == 400, (quantity, status, answer[:300])
        assert repr(quantity.strip()) in json.loads(answer)["Error"] or repr(quantity) in json.loads(answer)["Error"]

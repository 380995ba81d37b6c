"""Inputs the request path's fuzz found answered 5xx or failing inside a plugin, through the real
server: every node, pod and quantity of a request is decoded and checked before any plugin or
decision record sees it, so a malformed one is a 400 in the verb's own result type."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from tests.conftest import Server
from tests.support.bodies import fixture, go_marshal

VERBS = ("filter", "prioritize")


def _metrics_5xx(server: Server) -> list[str]:
    text = httpx.get(f"{server.url}/metrics", timeout=5).text
    return [
        line for line in text.splitlines() if line.startswith("scheduler_extender_requests_total") and 'code="5' in line
    ]


def _with_node(doc: Any, i: int, change: Any) -> bytes:
    doc = copy.deepcopy(doc)
    change(doc["Nodes"]["items"][i])
    return go_marshal(doc)


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("value", [True, 5, "x", []], ids=["true", "number", "string", "array"])
def test_a_node_whose_metadata_is_not_an_object_is_a_400(default_server: Server, verb: str, value: Any) -> None:
    """The 500 the fuzz found: a node whose ``metadata`` is ``true`` passed the request path (the
    default profile's plugins never read that node) and failed when the decision was recorded."""
    body = _with_node(fixture("extenderargs_nocache_n10.json"), 5, lambda n: n.__setitem__("metadata", value))
    r = default_server.post(verb, body)
    assert r.status_code == 400, r.text
    error = r.json()["Error"]
    assert "Nodes.items[5]" in error and "metadata" in error
    if verb == "filter":  # the verb's own result type: ExtenderFilterResult with every key
        assert set(r.json()) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}
    assert _metrics_5xx(default_server) == []


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize(
    "quantity",
    # refused by resource.ParseQuantity: suffix letters then junk, an exponent without digits, a
    # fraction in the exponent, an unknown suffix
    ["1e3i", "1e", "-3.01e-", "1e1.5", "1Ki3", "0.1mi"],
)
def test_a_malformed_allocatable_quantity_is_a_400_naming_the_node(
    default_server: Server, verb: str, quantity: str
) -> None:
    def change(node: Any) -> None:
        node["status"]["allocatable"]["memory"] = quantity

    body = _with_node(fixture("extenderargs_nocache_n10.json"), 3, change)
    r = default_server.post(verb, body)
    assert r.status_code == 400, r.text
    error = r.json()["Error"]
    assert "Nodes.items[3]" in error and "status.allocatable" in error and quantity in error
    assert _metrics_5xx(default_server) == []


@pytest.mark.parametrize("verb", VERBS)
def test_an_exbibyte_allocatable_parses_as_upstream_does(default_server: Server, verb: str) -> None:
    """``"5Ei"`` is a quantity (2^60 x 5 bytes); the parser took its ``E`` for an exponent and
    raised a bare ``ValueError`` inside NodeResourcesAllocatable's Score (a plugin failure with a
    traceback in the log)."""
    doc = fixture("extenderargs_nocache_n10.json")

    def change(node: Any) -> None:
        node["status"]["allocatable"]["memory"] = "5Ei"

    before = default_server.log.read_text()
    r = default_server.post(verb, _with_node(doc, 3, change))
    assert r.status_code == 200, r.text
    if verb == "prioritize":
        scores = {e["Host"]: e["Score"] for e in r.json()}
        assert len(scores) == 10
    else:  # a plugin failure would be a 200 too, carrying Error; 5Ei of memory fits any pod
        name = doc["Nodes"]["items"][3]["metadata"]["name"]
        assert r.json()["Error"] == ""
        assert name in [n["metadata"]["name"] for n in r.json()["Nodes"]["items"]]
    after = default_server.log.read_text()[len(before) :]
    assert "Traceback" not in after and "plugin raised" not in after


def test_a_malformed_pod_request_is_a_400(default_server: Server) -> None:
    doc = fixture("extenderargs_nocache_n10.json")
    doc["Pod"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1e3i"}}
    for verb in VERBS:
        r = default_server.post(verb, go_marshal(doc))
        assert r.status_code == 400, r.text
        assert "Pod" in r.json()["Error"] and "cpu" in r.json()["Error"]

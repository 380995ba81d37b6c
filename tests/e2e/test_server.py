"""End to end: the real server process on a loopback port, answering the shared fixtures."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Server
from tests.support.bodies import fixture, fixture_bytes, lower_keys

CONFIG = Path(__file__).parent / "configs" / "multi.yaml"
NOCACHE = [
    "extenderargs_nocache_n10.json",
    "extenderargs_nocache_n10_space.json",
    "extenderargs_nocache_n10_extres.json",
    "extenderargs_nocache_n100.json",
    "extenderargs_nocache_n100_space.json",
    "extenderargs_nocache_n100_extres.json",
]
CACHE = [
    "extenderargs_cache_n10.json",
    "extenderargs_cache_n10_space.json",
    "extenderargs_cache_n100.json",
    "extenderargs_cache_n500.json",
    "extenderargs_cache_n5000.json",
]
# (path prefix, fixture): the default profile at /{verb}, and each profile by name
CASES = [("", f) for f in NOCACHE] + [("/space", f) for f in NOCACHE[:2]] + [("/chaos", f) for f in CACHE]


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    s = Server(CONFIG)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as c:
        yield c


def input_nodes(args: dict[str, Any]) -> list[str]:
    if args["Nodes"] is not None:
        return [n["metadata"]["name"] for n in args["Nodes"]["items"]]
    return list(args["NodeNames"])


def check_filter(args: dict[str, Any], result: dict[str, Any]) -> list[str]:
    """Assert the ExtenderFilterResult contract; return the survivors."""
    assert set(result) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}
    assert result["Error"] == ""
    names = input_nodes(args)
    if args["Nodes"] is not None:
        assert result["NodeNames"] is None
        by_name = {n["metadata"]["name"]: n for n in args["Nodes"]["items"]}
        survivors = [n["metadata"]["name"] for n in result["Nodes"]["items"]]
        for node in result["Nodes"]["items"]:  # echoed unchanged
            assert node == by_name[node["metadata"]["name"]]
        assert result["Nodes"]["metadata"] == args["Nodes"]["metadata"]
    else:
        assert result["Nodes"] is None
        survivors = result["NodeNames"]
    assert len(set(survivors)) == len(survivors)
    assert set(survivors) <= set(names)
    assert [n for n in names if n in set(survivors)] == survivors, "survivors keep the request order"
    failed, unresolvable = result["FailedNodes"], result["FailedAndUnresolvableNodes"]
    assert not set(failed) & set(unresolvable)
    assert set(survivors) | set(failed) | set(unresolvable) == set(names)
    assert not set(survivors) & (set(failed) | set(unresolvable))
    for node, reason in {**failed, **unresolvable}.items():
        assert isinstance(reason, str) and reason and node not in reason
    return survivors


@pytest.mark.parametrize(("prefix", "name"), CASES)
def test_filter_fixture(client: httpx.Client, prefix: str, name: str) -> None:
    body = fixture_bytes(name)
    r = client.post(f"{prefix}/filter", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    args = json.loads(body)
    survivors = check_filter(args, r.json())
    if args["Nodes"] is not None:
        # byte-for-byte: each surviving node is the exact slice kube-scheduler sent
        for node in r.json()["Nodes"]["items"]:
            assert json.dumps(node, separators=(",", ":"), ensure_ascii=False).encode() in body
    if prefix in ("", "/space"):  # the "space" profile (the default), exclusive: edge nodes for space pods only
        space = "space" in name
        edge = {
            n["metadata"]["name"]
            for n in args["Nodes"]["items"]
            if n["metadata"]["labels"].get("kubernetes.io/role") == "edge"
        }
        expected = edge if space else set(input_nodes(args)) - edge
        assert set(survivors) == expected
    else:  # seeded coin: some heads, some tails, reproducible
        again = client.post(f"{prefix}/filter", content=body).json()
        assert again == r.json()
        if len(survivors) >= 100:
            assert 0 < len(r.json()["FailedNodes"]) < len(input_nodes(args))


@pytest.mark.parametrize(("prefix", "name"), CASES)
def test_prioritize_fixture(client: httpx.Client, prefix: str, name: str) -> None:
    body = fixture_bytes(name)
    r = client.post(f"{prefix}/prioritize", content=body)
    assert r.status_code == 200, r.text
    assert r.content.startswith(b"[")  # a bare array, never an object
    scores = r.json()
    assert [s["Host"] for s in scores] == input_nodes(json.loads(body))
    for s in scores:
        assert set(s) == {"Host", "Score"}
        assert type(s["Score"]) is int and 0 <= s["Score"] <= 10
    assert b"." not in r.content.replace(b".compute.internal", b"").replace(b".eu-west-1", b"")
    assert len({s["Score"] for s in scores}) > 1, "scores should discriminate between these nodes"


@pytest.mark.parametrize(
    ("prefix", "name"),
    [
        ("", "preemptionargs_nocache.json"),
        ("/chaos", "preemptionargs_nocache.json"),
        ("/chaos", "preemptionargs_cache.json"),
    ],
)
def test_preempt_fixture(client: httpx.Client, prefix: str, name: str) -> None:
    args = fixture(name)
    r = client.post(f"{prefix}/preempt", content=fixture_bytes(name))
    assert r.status_code == 200, r.text
    result = r.json()
    assert set(result) == {"NodeNameToMetaVictims"}
    if args["NodeNameToVictims"] is not None:
        expected = {node: [p["metadata"]["uid"] for p in v["Pods"]] for node, v in args["NodeNameToVictims"].items()}
        pdb = {node: v["NumPDBViolations"] for node, v in args["NodeNameToVictims"].items()}
    else:
        expected = {node: [p["UID"] for p in v["Pods"]] for node, v in args["NodeNameToMetaVictims"].items()}
        pdb = {node: v["NumPDBViolations"] for node, v in args["NodeNameToMetaVictims"].items()}
    got = result["NodeNameToMetaVictims"]
    assert {node: [p["UID"] for p in v["Pods"]] for node, v in got.items()} == expected
    assert {node: v["NumPDBViolations"] for node, v in got.items()} == pdb


@pytest.mark.parametrize(
    ("verb", "name"),
    [
        ("filter", "extenderargs_nocache_n10_space.json"),
        ("filter", "extenderargs_cache_n10.json"),
        ("prioritize", "extenderargs_nocache_n10.json"),
        ("preempt", "preemptionargs_nocache.json"),
        ("preempt", "preemptionargs_cache.json"),
    ],
)
def test_lower_cased_keys_decode_like_exact_keys(client: httpx.Client, verb: str, name: str) -> None:
    doc = fixture(name)
    prefix = "/chaos" if "_cache" in name else ""
    exact = client.post(f"{prefix}/{verb}", content=fixture_bytes(name))
    lowered = client.post(f"{prefix}/{verb}", content=json.dumps(lower_keys(doc)).encode())
    assert exact.status_code == lowered.status_code == 200, lowered.text
    if verb == "filter" and doc["Nodes"] is not None:
        # survivors are echoed as received: compare names and verdicts
        a, b = exact.json(), lowered.json()
        assert [n["metadata"]["name"] for n in a["Nodes"]["items"]] == [
            n["metadata"]["name"] for n in b["Nodes"]["items"]
        ]
        assert a["FailedAndUnresolvableNodes"] == b["FailedAndUnresolvableNodes"]
        assert a["FailedNodes"] == b["FailedNodes"]
    else:
        assert exact.json() == lowered.json()


def test_mixed_case_keys_are_accepted(client: httpx.Client) -> None:
    doc = fixture("extenderargs_nocache_n10_space.json")
    odd = {"pOD": doc["Pod"], "NODES": {"Items": doc["Nodes"]["items"], "METADATA": {}}, "nodeNames": None}
    r = client.post("/filter", content=json.dumps(odd).encode())
    assert r.status_code == 200, r.text
    assert len(r.json()["Nodes"]["items"]) == 1  # the one edge node


BAD_BODIES = [
    (b"", "empty request body"),
    (b"{not json", "not valid JSON"),
    (b"[]", "must be a JSON object"),
    (b'{"Pod":null,"Nodes":null,"NodeNames":["a"]}', "Pod is null"),
    (b'{"Pod":{},"Nodes":null,"NodeNames":null}', "both null"),
    (b'{"Pod":{},"Nodes":null,"NodeNames":"a"}', "NodeNames"),
    (b'{"Pod":{"metadata":{"labels":{"a":1}}},"Nodes":null,"NodeNames":["a"]}', "Pod"),
    (b'{"Pod":{},"Nodes":{"items":[{"metadata":{}}]},"NodeNames":null}', "no metadata.name"),
]


@pytest.mark.parametrize(("body", "message"), BAD_BODIES)
@pytest.mark.parametrize("verb", ["filter", "prioritize"])
def test_malformed_extender_args_get_400_with_error(client: httpx.Client, verb: str, body: bytes, message: str) -> None:
    r = client.post(f"/{verb}", content=body)
    assert r.status_code == 400
    assert message in r.json()["Error"]
    if verb == "filter":
        assert set(r.json()) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}


def test_node_with_wrong_types_gets_400_when_read(client: httpx.Client) -> None:
    doc = fixture("extenderargs_nocache_n10_space.json")
    doc["Nodes"]["items"][3]["metadata"]["labels"] = {"kubernetes.io/role": 5}
    r = client.post("/filter", content=json.dumps(doc).encode())
    assert r.status_code == 400
    assert "Nodes.items[3]" in r.json()["Error"]


@pytest.mark.parametrize(
    ("verb", "body", "message"),
    [
        ("preempt", b"[1]", "must be a JSON object"),
        ("preempt", b'{"Pod":{},"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":""}]}}}', "UID is empty"),
        ("preempt", b'{"Pod":{},"NodeNameToMetaVictims":{"n":{"Pods":"x"}}}', "Pods"),
    ],
)
def test_malformed_preempt_gets_400(client: httpx.Client, verb: str, body: bytes, message: str) -> None:
    r = client.post(f"/chaos/{verb}", content=body)
    assert r.status_code == 400
    assert message in r.json()["Error"]
    assert "NodeNameToMetaVictims" in r.json()


def test_bind_without_binder_says_so(default_server: Server) -> None:
    # 200 with Error: kube-scheduler shows an Error text in the pod's events, a 404 only as "code 404"
    r = httpx.post(f"{default_server.url}/bind", content=fixture_bytes("bindingargs.json"))
    assert r.status_code == 200
    assert r.json() == {
        "Error": "no binder is configured: profile 'default' does not serve bind (it serves filter, "
        "prioritize, preempt); enable a bind plugin and add bind to its verbs, or remove bindVerb from "
        "kube-scheduler's extender entry"
    }


def test_names_without_cluster_state_always_err(default_server: Server) -> None:
    """The default profile (nodeCacheCapable: false, no cluster:) cannot look names up: every
    NodeNames request errs, whatever the pod (before: a pod no plugin reads nodes for passed)."""
    expected = "profile 'default' received NodeNames but has no cluster state"
    for name in ("extenderargs_cache_n10.json", "extenderargs_cache_n10_space.json"):
        r = default_server.post("filter", fixture_bytes(name))
        assert r.status_code == 200 and r.json()["Error"].startswith(expected)
        assert "set nodeCacheCapable: false" in r.json()["Error"]
        r = default_server.post("prioritize", fixture_bytes(name))
        assert r.status_code == 400 and r.json()["Error"].startswith(expected)
    r = default_server.post("preempt", fixture_bytes("preemptionargs_cache.json"))
    assert r.status_code == 400
    assert "received NodeNameToMetaVictims but has no cluster state" in r.json()["Error"]


def test_form_content_type_is_decoded_as_json(client: httpx.Client) -> None:
    # curl -d @file sends application/x-www-form-urlencoded
    r = client.post(
        "/filter",
        content=fixture_bytes("extenderargs_nocache_n10_space.json"),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 200 and len(r.json()["Nodes"]["items"]) == 1


def test_body_over_limit_gets_413(client: httpx.Client) -> None:
    limit = 8388608  # server.maxRequestBytes in configs/multi.yaml
    body = b'{"Pod":{},"Nodes":null,"NodeNames":["n1","n2"]}'
    at_limit = body + b" " * (limit - len(body))
    r = client.post("/chaos/filter", content=at_limit)
    assert r.status_code == 200, r.text
    big = at_limit + b" "
    r = client.post("/filter", content=big)
    assert r.status_code == 413
    assert "maxRequestBytes" in r.json()["Error"]
    # streamed without Content-Length
    r = client.post("/filter", content=iter([big[:4_000_000], big[4_000_000:]]))
    assert r.status_code == 413


def test_unknown_profile_and_unserved_verb(client: httpx.Client) -> None:
    r = client.post("/nope/filter", content=b"{}")
    assert r.status_code == 200 and "unknown profile 'nope'" in r.json()["Error"]
    assert "set urlPrefix to end in one of the profiles (space, chaos)" in r.json()["Error"]
    r = client.post("/nope/prioritize", content=b"{}")
    assert r.status_code == 404 and "unknown profile 'nope'" in r.json()["Error"]
    # no profile of this config serves bind: answered before the body is read
    r = client.post("/bind", content=b"{}")
    assert r.status_code == 200 and "no binder is configured" in r.json()["Error"]


def test_health_version_metrics(client: httpx.Client) -> None:
    assert client.get("/healthz").text == "ok"
    assert client.get("/readyz").json() == {"status": "ready", "profiles": ["space", "chaos"]}
    assert "version" in client.get("/version").json()
    client.post("/filter", content=fixture_bytes("extenderargs_nocache_n10_space.json"))
    text = client.get("/metrics").text
    assert 'scheduler_extender_requests_total{code="200",outcome="success",profile="space",verb="filter"}' in text
    assert (
        'scheduler_extender_filter_nodes_total{plugin="AnnotationNodeAffinity",profile="space",'
        'result="UnschedulableAndUnresolvable"}' in text
    )
    assert 'scheduler_extender_request_duration_seconds_bucket{le="0.005",profile="space",verb="filter"}' in text

"""End to end in cache mode: the real server process, with cluster state from the test API server
(through the official client), answers the shared cache-mode fixtures and binds a pod."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Server, cluster_config, free_port
from tests.support.apiserver import FakeAPIServer, pod, running
from tests.support.bodies import cluster_nodes, fixture, fixture_bytes

NODE_NAMES: list[str] = fixture("extenderargs_cache_n500.json")["NodeNames"]
PAIRS = [  # the same pod and nodes, names only vs full nodes
    ("extenderargs_cache_n10.json", "extenderargs_nocache_n10.json"),
    ("extenderargs_cache_n10_space.json", "extenderargs_nocache_n10_space.json"),
    ("extenderargs_cache_n100.json", "extenderargs_nocache_n100.json"),
    ("extenderargs_cache_n100_space.json", "extenderargs_nocache_n100_space.json"),
]


def write_config(tmp: Path, api: FakeAPIServer, **cluster: Any) -> Path:
    """examples/cluster.yaml pointed at ``api``."""
    return cluster_config(tmp, api.kubeconfig(), **cluster)


def populate(api: FakeAPIServer) -> None:
    for node in cluster_nodes(NODE_NAMES):
        api.put("nodes", node)
    scheduled = fixture("extenderargs_cache_n10.json")["Pod"]
    api.put("pods", {"apiVersion": "v1", "kind": "Pod", **scheduled})
    for node_name, victims in fixture("preemptionargs_cache.json")["NodeNameToMetaVictims"].items():
        for i, victim in enumerate(victims["Pods"]):
            api.put("pods", pod(f"batch-{node_name[:14]}-{i}", "batch", node_name, uid=victim["UID"], priority=-10))


@pytest.fixture(scope="module")
def api() -> Iterator[FakeAPIServer]:
    with running(populate) as server:
        yield server


@pytest.fixture(scope="module")
def server(api: FakeAPIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(write_config(tmp_path_factory.mktemp("cluster"), api))
    yield s
    s.stop()


def test_ready_after_sync(server: Server) -> None:
    r = httpx.get(f"{server.url}/readyz")
    assert r.status_code == 200 and r.json()["cluster"] == "synced"
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'scheduler_extender_cluster_objects{kind="nodes"} 500.0' in metrics
    assert 'scheduler_extender_cluster_synced{resource="pods"} 1.0' in metrics


@pytest.mark.parametrize(("cache", "nocache"), PAIRS)
def test_filter_by_names_matches_full_nodes(server: Server, cache: str, nocache: str) -> None:
    by_names = server.post("filter", fixture_bytes(cache))
    full = server.post("filter", fixture_bytes(nocache))
    assert by_names.status_code == full.status_code == 200
    a, b = by_names.json(), full.json()
    assert a["Error"] == b["Error"] == ""
    assert a["Nodes"] is None and b["NodeNames"] is None
    assert a["NodeNames"] == [n["metadata"]["name"] for n in b["Nodes"]["items"]]
    assert a["FailedNodes"] == b["FailedNodes"]
    assert a["FailedAndUnresolvableNodes"] == b["FailedAndUnresolvableNodes"]
    if "space" in cache:
        assert a["FailedAndUnresolvableNodes"] and len(a["NodeNames"]) < len(fixture(cache)["NodeNames"])


@pytest.mark.parametrize(("cache", "nocache"), PAIRS)
def test_prioritize_by_names_matches_full_nodes(server: Server, cache: str, nocache: str) -> None:
    by_names = server.post("prioritize", fixture_bytes(cache))
    full = server.post("prioritize", fixture_bytes(nocache))
    assert by_names.status_code == full.status_code == 200
    assert by_names.json() == full.json()
    assert len({h["Score"] for h in by_names.json()}) > 1  # the scores really come from node objects


@pytest.mark.parametrize("name", ["extenderargs_cache_n500.json", "extenderargs_cache_n5000.json"])
def test_large_name_lists(server: Server, name: str) -> None:
    doc = fixture(name)
    r = server.post("filter", fixture_bytes(name))
    assert r.status_code == 200
    result = r.json()
    known = set(NODE_NAMES)
    assert set(result["NodeNames"]) <= known
    unknown = [n for n in doc["NodeNames"] if n not in known]
    assert sorted(result["FailedAndUnresolvableNodes"]) == sorted(unknown)
    reasons = set(result["FailedAndUnresolvableNodes"].values())
    assert reasons <= {"node is not in the extender's cluster state"}
    scores = server.post("prioritize", fixture_bytes(name)).json()
    assert [h["Host"] for h in scores] == doc["NodeNames"]
    assert all(h["Score"] == 0 for h in scores if h["Host"] not in known)


def test_preempt_resolves_victim_uids(server: Server) -> None:
    doc = fixture("preemptionargs_cache.json")
    r = server.post("preempt", fixture_bytes("preemptionargs_cache.json"))
    assert r.status_code == 200
    assert r.json() == {"NodeNameToMetaVictims": doc["NodeNameToMetaVictims"]}


def test_bind_creates_the_binding(server: Server, api: FakeAPIServer) -> None:
    args = fixture("bindingargs.json")
    r = server.post("bind", fixture_bytes("bindingargs.json"))
    assert r.status_code == 200 and r.json() == {"Error": ""}
    binding = api.bindings[-1]
    assert binding["metadata"] == {"name": args["PodName"], "namespace": args["PodNamespace"], "uid": args["PodUID"]}
    assert binding["target"] == {"kind": "Node", "name": args["Node"]}
    stored = api.pod(args["PodNamespace"], args["PodName"])
    assert stored is not None and stored["spec"]["nodeName"] == args["Node"]
    # kube-scheduler may re-send a bind: still success, and the pod counts once on its node
    again = server.post("bind", fixture_bytes("bindingargs.json"))
    assert again.json() == {"Error": ""}
    wrong_uid = fixture_bytes("bindingargs.json").replace(args["PodUID"].encode(), b"00000000-recreated")
    # the name now belongs to a pod with another UID: the UID precondition refuses the binding
    assert "was recreated" in server.post("bind", wrong_uid).json()["Error"]


def test_not_ready_until_the_api_server_answers(tmp_path: Path) -> None:
    api = FakeAPIServer()
    api.port = free_port()  # nothing listens there yet
    server = Server(write_config(tmp_path, api), wait_ready=False)
    try:
        r = httpx.get(f"{server.url}/readyz")
        assert r.status_code == 503 and "have not synced" in r.json()["cluster"]
        filtered = server.post("filter", fixture_bytes("extenderargs_cache_n10.json")).json()
        assert filtered["Error"] == "the extender's cluster state has not synced with the API server yet"
        assert server.post("prioritize", fixture_bytes("extenderargs_cache_n10.json")).status_code == 503
        populate(api)
        api.start()
        deadline = time.monotonic() + 30
        while httpx.get(f"{server.url}/readyz").status_code != 200:
            assert time.monotonic() < deadline, "never became ready"
            time.sleep(0.1)
        filtered = server.post("filter", fixture_bytes("extenderargs_cache_n10.json")).json()
        assert filtered["Error"] == "" and filtered["NodeNames"]
    finally:
        server.stop()
        api.stop()


def test_unknown_names_interleaved_keep_their_places(server: Server) -> None:
    doc = fixture("extenderargs_cache_n10.json")
    ranked = sorted(
        server.post("prioritize", fixture_bytes("extenderargs_cache_n10.json")).json(), key=lambda h: h["Score"]
    )
    known = [ranked[0]["Host"], ranked[-1]["Host"], ranked[len(ranked) // 2]["Host"]]  # different node shapes
    doc["NodeNames"] = ["ghost-a", known[0], "ghost-b", known[1], known[2], "ghost-c"]
    body = json.dumps(doc).encode()
    result = server.post("filter", body).json()
    assert result["NodeNames"] == [n for n in known if n not in result["FailedNodes"]]
    assert sorted(result["FailedAndUnresolvableNodes"]) == ["ghost-a", "ghost-b", "ghost-c"]
    scores = server.post("prioritize", body).json()
    assert [h["Host"] for h in scores] == doc["NodeNames"]
    # the known nodes score as they do without the ghosts (NormalizeScore spans the same nodes)
    doc["NodeNames"] = known
    alone = {h["Host"]: h["Score"] for h in server.post("prioritize", json.dumps(doc).encode()).json()}
    assert {h["Host"]: h["Score"] for h in scores} == {**alone, "ghost-a": 0, "ghost-b": 0, "ghost-c": 0}
    assert len(set(alone.values())) > 1

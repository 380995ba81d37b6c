"""``/explain`` and ``python -m app explain`` against the real server: the shared fixtures are
POSTed as kube-scheduler would, and what the service explains must be exactly what it answered."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import REPO, Server
from tests.support.bodies import fixture, fixture_bytes, go_marshal

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    s = Server(REPO / "examples" / "two-profiles.yaml")
    yield s
    s.stop()


def pod_of(body: str) -> tuple[str, str]:
    meta = fixture(body)["Pod"]["metadata"]
    return meta["namespace"], meta["name"]


@pytest.mark.parametrize(
    ("profile", "body"),
    [("space", "extenderargs_nocache_n10_space.json"), ("chaos", "extenderargs_cache_n100.json")],
)
def test_explain_repeats_the_answers_node_by_node(server: Server, profile: str, body: str) -> None:
    raw = fixture_bytes(body)
    filtered = httpx.post(f"{server.url}/{profile}/filter", content=raw).json()
    scored = httpx.post(f"{server.url}/{profile}/prioritize", content=raw).json()
    namespace, name = pod_of(body)
    r = httpx.get(f"{server.url}/explain/{namespace}/{name}")
    assert r.status_code == 200
    explained = r.json()
    assert explained["pod"]["namespace"] == namespace and explained["pod"]["name"] == name
    filter_attempt, prioritize_attempt = explained["attempts"][-2:]
    assert (filter_attempt["verb"], prioritize_attempt["verb"]) == ("filter", "prioritize")
    assert filter_attempt["profile"] == prioritize_attempt["profile"] == profile
    nodes = filter_attempt["nodes"]
    failed = filtered["FailedNodes"] or {}
    unresolvable = filtered["FailedAndUnresolvableNodes"] or {}
    assert failed or unresolvable  # the fixtures make the plugins reject some nodes
    for node, reason in failed.items():
        assert nodes[node]["verdict"] == "Unschedulable" and nodes[node]["reason"] == reason
    for node, reason in unresolvable.items():
        assert nodes[node]["verdict"] == "UnschedulableAndUnresolvable" and nodes[node]["reason"] == reason
    passed = filtered["NodeNames"] or [n["metadata"]["name"] for n in filtered["Nodes"]["items"]]
    assert {n for n, d in nodes.items() if d["verdict"] == "Success"} == set(passed)
    assert len(nodes) == len(passed) + len(failed) + len(unresolvable)
    assert all(d["plugin"] for d in nodes.values() if d["verdict"] != "Success")
    assert filter_attempt["outcome"] == {"passed": len(passed), "rejected": len(failed) + len(unresolvable)}
    scores = {n: d["score"] for n, d in prioritize_attempt["nodes"].items()}
    assert scores == {h["Host"]: h["Score"] for h in scored}
    plugin = {"space": "NodeResourcesAllocatable", "chaos": "DiceRoll"}[profile]
    assert all(plugin in d["scores"] for d in prioritize_attempt["nodes"].values())


def test_unknown_pod_is_404_with_a_message(server: Server) -> None:
    r = httpx.get(f"{server.url}/explain/nowhere/nobody")
    assert r.status_code == 404
    assert "no decision recorded for pod nowhere/nobody" in r.json()["detail"]
    out = subprocess.run(
        [sys.executable, "-m", "app", "explain", "nowhere/nobody", "--url", server.url],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1 and "HTTP 404: no decision recorded for pod nowhere/nobody" in out.stderr


def test_explain_is_in_the_openapi_document(server: Server) -> None:
    doc = httpx.get(f"{server.url}/openapi.json").json()
    assert "/explain/{namespace}/{name}" in doc["paths"]
    assert {"Explanation", "Attempt", "NodeDecision"} <= doc["components"]["schemas"].keys()


def normalized(text: str) -> str:
    """The CLI's table without what changes between runs (times, durations)."""
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", "<time>", text)
    return re.sub(r"\d+\.\d ms", "<ms>", text)


def test_cli_table_matches_the_golden_file(server: Server) -> None:
    doc: Any = fixture("extenderargs_cache_n100.json")
    doc["Pod"]["metadata"]["name"] = "golden-pod"  # its own pod: only this test's attempts
    body = go_marshal(doc)
    httpx.post(f"{server.url}/chaos/filter", content=body)
    httpx.post(f"{server.url}/chaos/prioritize", content=body)
    namespace = doc["Pod"]["metadata"]["namespace"]
    out = subprocess.run(
        [sys.executable, "-m", "app", "explain", f"{namespace}/golden-pod", "--url", server.url],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    golden = GOLDEN / "explain-chaos.txt"
    if os.environ.get("UPDATE_GOLDEN"):  # UPDATE_GOLDEN=1 pytest ...: rewrite it, then review the diff
        golden.write_text(normalized(out.stdout))
    assert normalized(out.stdout) == golden.read_text()

"""Audit mode with cluster state: the real server process, its cluster state from the test API
server, a profile that binds and audits two stateful plugins: NodeResourcePool (a Reserve that
refuses an exhausted node) and Coscheduling (a Permit that holds a gang member). The audited
plugins make no write and hold nothing: the only write of a filter, prioritize, preempt and bind
is the Binding; a pod bound to a node the pool would have rejected is ``violated``; a profile with
``auditEvents`` posts ``AuditFailedScheduling``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.cluster.conftest import wait_for
from tests.conftest import Server
from tests.e2e.test_audit import audit_metric
from tests.support.apiserver import FakeAPIServer, node, pod, pod_group, running
from tests.support.bodies import go_marshal

IP = "ipam.example.com/ip"
POOL = "ipam.example.com/pool-size"
#: node -> its pool capacity (the annotation); n-full holds one consumer already
NODES = {"n-full": "1", "n-zero": "0", "n-free": "4"}


def consumer(name: str, node_name: str = "", **labels: str) -> dict[str, Any]:
    """A pod requesting one underlay IP (a slot of the pool)."""
    doc = pod(name, "apps", node_name)
    doc["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m", IP: "1"}, "limits": {IP: "1"}}
    doc["metadata"]["labels"] = labels
    return doc


def populate(api: FakeAPIServer) -> None:
    for name, size in NODES.items():
        doc = node(name, cpu="8", memory="32Gi")
        doc["metadata"]["annotations"] = {POOL: size}
        doc["status"]["allocatable"][IP] = doc["status"]["capacity"][IP] = "100"
        api.put("nodes", doc)
    api.put("pods", consumer("holder", "n-full"))


def configuration(tmp: Path, api: FakeAPIServer) -> Path:
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(api.kubeconfig())
    pool = {
        "name": "NodeResourcePool",
        "args": {"pool": "underlay-ip", "capacityAnnotation": POOL, "consumers": {"resource": IP}},
    }
    fit = {"name": "NodeResourcesFit", "args": {"ignoredResources": [IP]}}
    doc = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "server": {"insecureBind": True, "defaultProfile": "default"},
        "cluster": {"kubeconfig": str(kubeconfig)},
        "profiles": [
            {
                "name": "default",
                "extender": {"verbs": ["filter", "prioritize", "preempt", "bind"], "nodeCacheCapable": True},
                "plugins": {
                    "filter": [
                        {"name": "NodeResourcesFit"},
                        {"name": "NodeResourcePool", "enforcement": "audit"},
                        {"name": "Coscheduling", "enforcement": "audit"},
                    ],
                    "score": [{"name": "NodeResourcesFit"}, {"name": "NodeResourcePool"}],
                    "preemption": [{"name": "NodeResourcePool"}],
                    "bind": [{"name": "DefaultBinder"}],
                },
                "pluginConfig": [fit, pool, {"name": "DefaultBinder", "args": {"timeoutSeconds": 1}}],
            },
            {
                "name": "loud",
                "auditEvents": True,
                "extender": {"verbs": ["filter", "prioritize"], "nodeCacheCapable": True},
                "plugins": {
                    "filter": [{"name": "NodeResourcesFit"}, {"name": "NodeResourcePool", "enforcement": "audit"}],
                    "score": [{"name": "NodeResourcesFit"}],
                },
                "pluginConfig": [fit, {**pool, "args": {**pool["args"], "pool": "loud-ip"}}],  # one pool, one plugin
            },
        ],
    }
    out = tmp / "audit-cluster.yaml"
    out.write_text(yaml.safe_dump(doc))
    return out


@pytest.fixture(scope="module")
def api() -> Iterator[FakeAPIServer]:
    with running(populate) as server:
        yield server


@pytest.fixture(scope="module")
def server(api: FakeAPIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(configuration(tmp_path_factory.mktemp("audit"), api))
    yield s
    s.stop()


def args(doc: dict[str, Any], names: list[str]) -> bytes:
    return go_marshal({"Pod": doc, "Nodes": None, "NodeNames": names})


def writes(api: FakeAPIServer, since: int) -> list[str]:
    with api.lock:
        return [r for r in api.requests[since:] if not r.startswith("GET ")]


def test_audited_stateful_plugins_make_no_write_and_the_pod_binds_where_the_pool_is_full(
    api: FakeAPIServer, server: Server
) -> None:
    api.put("podgroups", pod_group("team", "apps", min_member=3))
    gang, *others = [consumer(f"gang-{i}", **{"scheduling.x-k8s.io/pod-group": "team"}) for i in range(3)]
    for member in (gang, *others):
        api.put("pods", member)
    wait_for(lambda: httpx.get(f"{server.url}/readyz").status_code == 200, what="ready")
    time.sleep(1)  # the members and the PodGroup reach the watch
    with api.lock:
        since = len(api.requests)
    names = list(NODES)
    filtered = httpx.post(f"{server.url}/default/filter", content=args(gang, names), timeout=10).json()
    assert filtered["NodeNames"] == names and not filtered["FailedNodes"] and not filtered["FailedAndUnresolvableNodes"]
    assert httpx.post(f"{server.url}/default/prioritize", content=args(gang, names), timeout=10).status_code == 200
    meta = gang["metadata"]
    binding = {"PodName": meta["name"], "PodNamespace": "apps", "PodUID": meta["uid"], "Node": "n-full"}
    bound = httpx.post(f"{server.url}/default/bind", content=go_marshal(binding), timeout=10)
    # enforced, the pool's Reserve (1/1 in use) would refuse it, and the gang's Permit hold it for
    # two more members: audited, it is bound at once
    assert bound.json() == {"Error": ""}
    assert writes(api, since) == ["POST /api/v1/namespaces/apps/pods/gang-0/binding"]
    with api.lock:
        assert [b["target"]["name"] for b in api.bindings if b["metadata"]["name"] == "gang-0"] == ["n-full"]
    explained = httpx.get(f"{server.url}/explain/apps/gang-0").json()["attempts"]
    audit = next(a for a in explained if a["verb"] == "filter")
    assert audit["nodes"]["n-full"]["audit"] == [
        {
            "plugin": "NodeResourcePool",
            "verdict": "Unschedulable",
            "reason": "pool underlay-ip exhausted: 1/1 in use",
            "reasonCode": "PoolExhausted",
        }
    ]
    assert audit["nodes"]["n-zero"]["audit"][0]["reason"] == "pool underlay-ip has no capacity on this node"
    assert "audit" not in audit["nodes"]["n-free"]
    assert audit["outcome"]["audit"] == {
        "NodeResourcePool": {"wouldReject": 2, "wouldAdmit": 1},
        "Coscheduling": {"wouldReject": 0, "wouldAdmit": 3},
    }
    # the watch shows the pod on n-full: violated, once
    wait_for(lambda: audit_metric(server.url, "default", "NodeResourcePool", "violated") == 1, what="violated")
    filter_attempt = next(
        a for a in httpx.get(f"{server.url}/explain/apps/gang-0").json()["attempts"] if a["verb"] == "filter"
    )
    assert filter_attempt["outcome"]["auditViolated"] == {"NodeResourcePool": "n-full"}
    assert audit_metric(server.url, "default", "Coscheduling", "violated") == 0


def test_a_pod_bound_where_the_audited_plugin_admits_is_no_violation(api: FakeAPIServer, server: Server) -> None:
    doc = consumer("calm")
    api.put("pods", doc)
    before = audit_metric(server.url, "default", "NodeResourcePool", "violated")
    httpx.post(f"{server.url}/default/filter", content=args(doc, list(NODES)), timeout=10)
    meta = doc["metadata"]
    binding = {"PodName": "calm", "PodNamespace": "apps", "PodUID": meta["uid"], "Node": "n-free"}
    assert httpx.post(f"{server.url}/default/bind", content=go_marshal(binding), timeout=10).json() == {"Error": ""}
    wait_for(lambda: api.pod("apps", "calm")["spec"].get("nodeName") == "n-free", what="bound")
    wait_for(
        lambda: httpx.get(f"{server.url}/explain/apps/calm").json()["attempts"][-1]["verb"] == "bind", what="record"
    )
    time.sleep(1.5)  # three rounds of the watcher
    assert audit_metric(server.url, "default", "NodeResourcePool", "violated") == before


def test_audit_events_say_what_enforcing_would_do(api: FakeAPIServer, server: Server) -> None:
    doc = consumer("evented")
    with api.lock:
        writes_before = len(api.event_writes)
    answer = httpx.post(f"{server.url}/loud/filter", content=args(doc, ["n-zero"]), timeout=10).json()
    assert answer["NodeNames"] == ["n-zero"]  # placed as without the pool

    def posted() -> list[dict[str, Any]]:
        with api.lock:
            keys = [key for _, key in api.event_writes[writes_before:]]
            return [api.objects["events"][k] for k in keys if k in api.objects["events"]]

    wait_for(lambda: posted(), what="an event")
    event = posted()[0]
    assert (event["type"], event["reason"], event["action"]) == ("Warning", "AuditFailedScheduling", "Filter")
    assert event["regarding"]["name"] == "evented"
    assert event["note"] == (
        "audit: 0/1 nodes would be available to extender profile loud if NodeResourcePool were enforced "
        "(1 pass today): NodeResourcePool (1 pool loud-ip has no capacity on this node)."
    )
    # the profile without auditEvents posts none for the same case; the one event after it, of
    # another pod, shows the writer (one queue, in order) has passed it
    with api.lock:
        writes_before = len(api.event_writes)
    httpx.post(f"{server.url}/default/filter", content=args(consumer("silent"), ["n-full", "n-zero"]), timeout=10)
    httpx.post(f"{server.url}/loud/filter", content=args(consumer("marker"), ["n-full", "n-zero"]), timeout=10)
    wait_for(lambda: any(e["regarding"]["name"] == "marker" for e in posted()), what="the marker's event")
    assert [e["regarding"]["name"] for e in posted()] == ["marker"]

"""Pod events, JSON logs and decision metrics, with the real server and the test API server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Server, cluster_config
from tests.e2e.test_cluster_server import populate
from tests.support.apiserver import FakeAPIServer, running
from tests.support.bodies import fixture, go_marshal


@pytest.fixture(scope="module")
def api() -> Iterator[FakeAPIServer]:
    with running(populate) as server:
        yield server


@pytest.fixture(scope="module")
def server(api: FakeAPIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    def diagnostics(doc: Any) -> None:
        doc["server"] |= {"logFormat": "json", "logLevel": "debug", "accessLog": True}
        # a short series window, so that the test sees a series end
        doc["diagnostics"] = {"events": {"seriesWindow": "2s"}}

    s = Server(cluster_config(tmp_path_factory.mktemp("diag"), api.kubeconfig(), edit=diagnostics))
    yield s
    s.stop()


def rejected_everywhere(name: str) -> bytes:
    """The cache-mode body of a pod annotated ``type: space`` with the 9 names of the fixture that
    lack the ``kubernetes.io/role: edge`` label AnnotationNodeAffinity then requires."""
    doc = fixture("extenderargs_cache_n10.json")
    doc["NodeNames"] = [n for n in doc["NodeNames"] if not n.startswith("ip-10-0-32-17.")]
    meta = doc["Pod"]["metadata"]
    meta["name"], meta["uid"] = name, f"uid-{name}"
    meta["annotations"] = {"type": "space"}
    return go_marshal(doc)


def wait_for(check: Any, seconds: float = 10.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def events_of(api: FakeAPIServer, name: str) -> list[dict[str, Any]]:
    with api.lock:
        return [e for e in api.objects["events"].values() if e["regarding"]["name"] == name]


def test_a_pod_rejected_at_every_retry_gets_one_aggregated_event(server: Server, api: FakeAPIServer) -> None:
    body = rejected_everywhere("space-pod")
    first = server.post("filter", body).json()
    assert not first["NodeNames"] and len(first["FailedAndUnresolvableNodes"]) == 9
    [event] = wait_for(lambda: events_of(api, "space-pod"))
    assert event["type"] == "Warning" and event["reason"] == "FilterRejected" and event["action"] == "Filter"
    assert event["reportingController"] == "scheduler-extender"
    assert event["regarding"] == {"apiVersion": "v1", "kind": "Pod", "namespace": "shop", "name": "space-pod"} | {
        "uid": "uid-space-pod"
    }
    reason = next(iter(first["FailedAndUnresolvableNodes"].values()))
    assert event["note"] == f"0/9 nodes are available to extender profile default: 9 {reason}."
    for _ in range(5):  # kube-scheduler retrying the pod
        server.post("filter", body)
    # one Event: the second occurrence made it a series (one PATCH), later ones only count until
    # the series ends (seriesWindow 2s), when the final count is written
    wait_for(lambda: (events_of(api, "space-pod")[0].get("series") or {}).get("count") == 6, seconds=15)
    assert len(events_of(api, "space-pod")) == 1
    writes = [w for w, key in api.event_writes if key.endswith(event["metadata"]["name"])]
    assert writes == ["create", "patch", "patch"]


def test_a_failed_bind_gets_an_event(server: Server, api: FakeAPIServer) -> None:
    args = fixture("bindingargs.json")
    args["PodUID"] = "not-the-pods-uid"  # the UID precondition fails: 409 from the API server
    r = server.post("bind", json.dumps(args).encode())
    assert r.json()["Error"]
    [event] = wait_for(lambda: events_of(api, args["PodName"]))
    assert (event["type"], event["reason"], event["action"]) == ("Warning", "BindFailed", "Bind")
    assert event["note"].startswith(f"binding to {args['Node']}: ")


def test_logs_are_json_lines_with_decisions_and_access(server: Server) -> None:
    server.post("filter", rejected_everywhere("logged-pod"))

    def lines() -> list[dict[str, Any]]:
        text = Path(server.log).read_text()
        return [json.loads(line) for line in text.splitlines() if line.strip()]  # every line is JSON

    def decision() -> dict[str, Any] | None:
        return next((x for x in lines() if x.get("pod") == "shop/logged-pod" and x["level"] == "info"), None)

    line = wait_for(decision)
    assert line["message"].startswith("pod shop/logged-pod: 0/9 nodes are available: 9 ")
    assert line["logger"] == "app.observe.decisions" and line["verb"] == "filter"
    assert sum(line["reasons"].values()) == 9
    debug = [x for x in lines() if x.get("pod") == "shop/logged-pod" and x["level"] == "debug"]
    assert debug and debug[-1]["nodes"] == {"UnschedulableAndUnresolvable": 9}
    access = wait_for(lambda: [x for x in lines() if x["logger"] == "uvicorn.access" and x.get("path") == "/filter"])
    assert access[-1]["method"] == "POST" and access[-1]["status"] == 200
    assert all({"time", "level", "logger", "message"} <= x.keys() for x in lines())


def test_decision_metrics_use_reason_codes(server: Server) -> None:
    server.post("filter", rejected_everywhere("metered-pod"))
    args = fixture("bindingargs.json")
    args["PodUID"] = "not-the-pods-uid"  # a bind that fails (whichever worker ran the test above)
    assert server.post("bind", json.dumps(args).encode()).json()["Error"]
    text = httpx.get(f"{server.url}/metrics").text
    # (prometheus-client writes labels in alphabetical order)
    assert 'scheduler_extender_decisions_total{outcome="rejected",profile="default",verb="filter"}' in text
    labels = 'code="NodeLabelRequired",plugin="AnnotationNodeAffinity",profile="default"'
    assert "scheduler_extender_rejections_total{" + labels + "}" in text
    assert 'scheduler_extender_decisions_total{outcome="error",profile="default",verb="bind"}' in text
    assert "scheduler_extender_events_posted_total" in text
    records = [line for line in text.splitlines() if line.startswith("scheduler_extender_decision_records ")]
    assert records and float(records[0].split()[1]) >= 1

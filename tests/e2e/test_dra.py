"""Dynamic Resource Allocation in the standalone scheduler (issue 36): ``python -m app schedule``
with kube-scheduler's default profile (DynamicResources included) against the test API server,
which serves ``resource.k8s.io/v1`` ResourceSlices, DeviceClasses and ResourceClaims (no driver,
no resourceclaim controller: the test writes the slices and claims itself):

- pods are bound only where their claims' devices were allocated, after the allocation and the
  pod's reservation were written to the claim (the Binding sees them);
- 8 pods asking for the 6 devices of 3 nodes: 6 bound, no device allocated twice, 2 pending with
  upstream's ``cannot allocate all claims`` in their FailedScheduling event;
- the two pods of one shared claim land on its device's node, both in ``reservedFor``;
- a request selecting ``device.attributes["gpu.example.com"].model == "h100"`` lands on the h100;
- a claim of a class no slice serves stays pending with ``cannot allocate all claims``;
- a selector that does not compile is a FailedScheduling event on the pod;
- a pod whose claim does not exist yet is kept out of the queue (PreEnqueue) until it does.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.test_scheduler import Scheduler, bound, events, wait_for
from tests.support.apiserver import (
    FakeAPIServer,
    claim_pod,
    device_class,
    node,
    resource_claim,
    resource_slice,
)

SCHEDULER = "dra-scheduler"
GPU = "gpu.example.com"


def config(tmp: Path, api: FakeAPIServer) -> Path:
    """A standalone profile of kube-scheduler's default plugins named ``dra-scheduler``."""
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(api.kubeconfig())
    doc = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "server": {"host": "127.0.0.1"},
        "cluster": {"kubeconfig": str(kubeconfig)},
        "profiles": [
            {
                "name": "dra",
                "schedulerName": SCHEDULER,
                "pluginConfig": [{"name": "DefaultBinder", "args": {"timeoutSeconds": 1}}],
            }
        ],
    }
    path = tmp / "dra.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def using(name: str, *claims: str) -> dict[str, Any]:
    doc = claim_pod(name, *claims)
    doc["spec"]["schedulerName"] = SCHEDULER
    return doc


def stored_claim(api: FakeAPIServer, name: str) -> dict[str, Any]:
    found = api.claim("default", name)
    assert found is not None
    return found


def allocated_devices(claim: dict[str, Any]) -> list[tuple[str, str, str]]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return [(r["driver"], r["pool"], r["device"]) for r in (allocation.get("devices") or {}).get("results") or ()]


def allocation_node(claim: dict[str, Any]) -> str:
    """The node of the allocation's node selector (``metadata.name`` In [node])."""
    terms = claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"]
    (field,) = terms[0]["matchFields"]
    assert field["key"] == "metadata.name" and field["operator"] == "In"
    return str(field["values"][0])


def failed_note(api: FakeAPIServer, pod_name: str) -> Callable[[], str]:
    def note() -> str:
        found = [e for e in events(api, "FailedScheduling") if e["regarding"]["name"] == pod_name]
        return str(found[-1]["note"]) if found else ""

    return note


@pytest.fixture
def api() -> Iterator[FakeAPIServer]:
    server = FakeAPIServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def cluster(api: FakeAPIServer) -> FakeAPIServer:
    """Three nodes with 2 GPUs each (model a100, a100, h100) and the GPU class."""
    for i, model in enumerate(("a100", "a100", "h100")):
        api.put("nodes", node(f"n{i}"))
        api.put("resourceslices", resource_slice(f"n{i}", 2, model=model))
    api.put("deviceclasses", device_class(GPU))
    return api


def run(api: FakeAPIServer, tmp: Path) -> Scheduler:
    return Scheduler(config(tmp, api))


def test_pods_are_bound_where_their_devices_were_allocated_and_never_share_one(
    cluster: FakeAPIServer, tmp_path: Path
) -> None:
    api = cluster
    at_binding: dict[str, dict[str, Any]] = {}
    bind = api.bind

    def checked(namespace: str, name: str, body: dict[str, Any]) -> tuple[int, Any]:
        at_binding[name] = copy.deepcopy(stored_claim(api, f"gpu-{name}"))
        return bind(namespace, name, body)

    api.bind = checked  # type: ignore[method-assign]
    for i in range(8):
        api.put("resourceclaims", resource_claim(f"gpu-p{i}"))
        api.put("pods", using(f"p{i}", f"gpu-p{i}"))
    scheduler = run(api, tmp_path)
    try:
        placed = wait_for(lambda: len(bound(api)) == 6 and bound(api), seconds=40, what="6 pods bound")
        pending = sorted({f"p{i}" for i in range(8)} - set(placed))
        for name in pending:
            note = wait_for(failed_note(api, name), what=f"FailedScheduling of {name}")
            assert "cannot allocate all claims" in note, note
        devices: list[tuple[str, str, str]] = []
        for name, node_name in placed.items():
            claim = stored_claim(api, f"gpu-{name}")
            assert allocation_node(claim) == node_name
            assert [d[1] for d in allocated_devices(claim)] == [node_name]  # the pool is the node's
            assert [r["name"] for r in claim["status"]["reservedFor"]] == [name]
            assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
            before = at_binding[name]["status"]  # written before the Binding
            assert before.get("allocation") and [r["name"] for r in before["reservedFor"]] == [name]
            devices += allocated_devices(claim)
        assert len(devices) == len(set(devices)) == 6, devices
        for name in pending:
            assert not (stored_claim(api, f"gpu-{name}").get("status") or {}).get("allocation")
        writes = [(verb, key) for verb, key, _ in api.claim_writes]
        assert all(verb in ("update", "update_status") for verb, _ in writes), writes
    finally:
        scheduler.stop()


def test_a_shared_claims_pods_land_on_its_devices_node(cluster: FakeAPIServer, tmp_path: Path) -> None:
    api = cluster
    api.put("resourceclaims", resource_claim("shared"))
    api.put("pods", using("a", "shared"))
    api.put("pods", using("b", "shared"))
    scheduler = run(api, tmp_path)
    try:
        placed = wait_for(lambda: len(bound(api)) == 2 and bound(api), seconds=30, what="2 pods bound")
        claim = stored_claim(api, "shared")
        assert placed["a"] == placed["b"] == allocation_node(claim)
        assert sorted(r["name"] for r in claim["status"]["reservedFor"]) == ["a", "b"]
        assert len(allocated_devices(claim)) == 1
    finally:
        scheduler.stop()


def test_a_selector_on_the_model_is_honoured(cluster: FakeAPIServer, tmp_path: Path) -> None:
    api = cluster
    selector = f'device.attributes["{GPU}"].model == "h100"'
    api.put("resourceclaims", resource_claim("h100", GPU, 2, "default", selector))
    api.put("pods", using("trainer", "h100"))
    scheduler = run(api, tmp_path)
    try:
        placed = wait_for(lambda: bound(api), seconds=30, what="the pod bound")
        assert placed == {"trainer": "n2"}
        assert sorted(allocated_devices(stored_claim(api, "h100"))) == [(GPU, "n2", "gpu-0"), (GPU, "n2", "gpu-1")]
    finally:
        scheduler.stop()


def test_a_class_no_slice_serves_parks_the_pod_with_upstreams_message(cluster: FakeAPIServer, tmp_path: Path) -> None:
    api = cluster
    api.put("deviceclasses", device_class("fpga.example.com", driver="fpga.example.com"))
    api.put("resourceclaims", resource_claim("fpga", "fpga.example.com"))
    api.put("pods", using("fpga-user", "fpga"))
    api.put("resourceclaims", resource_claim("gpu"))
    api.put("pods", using("gpu-user", "gpu"))
    scheduler = run(api, tmp_path)
    try:
        wait_for(lambda: "gpu-user" in bound(api), seconds=30, what="the GPU pod bound")
        note = wait_for(failed_note(api, "fpga-user"), what="FailedScheduling of the FPGA pod")
        assert note.startswith("0/3 nodes are available: 3 cannot allocate all claims."), note
        assert "fpga-user" not in bound(api)
        assert not (stored_claim(api, "fpga").get("status") or {}).get("allocation")
    finally:
        scheduler.stop()


def test_an_invalid_selector_is_reported_on_the_pod(cluster: FakeAPIServer, tmp_path: Path) -> None:
    api = cluster
    api.put("resourceclaims", resource_claim("broken", GPU, 1, "default", 'device.attributes["x"].model ==='))
    api.put("pods", using("broken-user", "broken"))
    scheduler = run(api, tmp_path)
    try:
        note = wait_for(failed_note(api, "broken-user"), seconds=30, what="FailedScheduling of the pod")
        assert "selector" in note and "broken" in note, note
        assert "broken-user" not in bound(api)
        conditions = (api.pod("default", "broken-user") or {}).get("status", {}).get("conditions") or []
        assert any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions), conditions
    finally:
        scheduler.stop()


def test_a_pod_waits_for_its_claim_and_is_bound_once_it_exists(cluster: FakeAPIServer, tmp_path: Path) -> None:
    api = cluster
    api.put("pods", using("early", "later"))
    scheduler = run(api, tmp_path)
    try:
        wait_for(lambda: api.claim_writes == [] and any("/pods" in r for r in api.requests), what="the pods listed")
        time.sleep(2.0)  # PreEnqueue keeps it out (upstream writes no event for that): never tried, never bound
        assert bound(api) == {} and failed_note(api, "early")() == ""
        assert not (api.pod("default", "early") or {}).get("status", {}).get("conditions")  # not SchedulingGated
        api.put("resourceclaims", resource_claim("later"))
        placed = wait_for(lambda: bound(api), seconds=30, what="the pod bound once its claim exists")
        assert placed["early"] == allocation_node(stored_claim(api, "later"))
    finally:
        scheduler.stop()

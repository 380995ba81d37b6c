"""kube-scheduler v1.36.3's ``TestPlugin`` table for DynamicResources (``cases.yaml``: upstream's
fixtures and case names), run as upstream's harness runs it: PreEnqueue, PreFilter, Filter per
node, then PostFilter (no node fits) or Reserve, PreBind (and Unreserve), each status checked.

The plugin is the real one over the real cluster state (``ClusterConnection`` with its DRA stores
filled with the case's objects) and the real structured allocator; its claim writes go to the
test API server, which holds the same objects, so a write with a stale ``resourceVersion`` is a
409 Conflict as on a real API server. Cases not ported are skipped with their reason.
"""

from __future__ import annotations

import asyncio
import copy
import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from app.cluster.connection import ClusterConnection, ClusterSettings
from app.framework import features, objects
from app.framework.handle import ClusterNeeds, Handle
from app.framework.status import Code, Status
from app.framework.types import CycleState, NodeInfo, PodInfo
from app.plugins.dynamicresources.plugin import NAME, DynamicResources, DynamicResourcesArgs
from tests.cluster.conftest import official_client
from tests.support.apiserver import FakeAPIServer

DATA = yaml.safe_load((Path(__file__).parent / "cases.yaml").read_text())
CODES = {
    "Success": Code.SUCCESS,
    "Error": Code.ERROR,
    "Unschedulable": Code.UNSCHEDULABLE,
    "UnschedulableAndUnresolvable": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    "Skip": Code.SKIP,
}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merged, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def resolve(value: Any) -> Any:
    """``{ref: name}`` replaced by that object, recursively."""
    if isinstance(value, dict):
        if set(value) == {"ref"}:
            return obj(value["ref"])
        return {k: resolve(v) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v) for v in value]
    return value


def obj(name: str) -> dict[str, Any]:
    """The fixture ``name`` of ``cases.yaml``, built (``base`` + ``merge``)."""
    doc = DATA["objects"][name]
    if "base" in doc:
        return merge_patch(obj(doc["base"]), resolve(doc.get("merge") or {}))  # type: ignore[no-any-return]
    return resolve(copy.deepcopy(doc))  # type: ignore[no-any-return]


def check(point: str, got: Status, want: dict[str, Any] | None) -> None:
    want = want or {}
    code = CODES[want.get("code", "Success")]
    assert got.code == code, f"{point}: {got.code.name} {got.message!r}, want {code.name} {want.get('reason')!r}"
    if "reason" in want:
        assert got.message == want["reason"], f"{point}: {got.message!r}"


class Case:
    """One case's cluster: the test API server and the cluster state holding its objects."""

    def __init__(self, case: dict[str, Any]) -> None:
        self.case = case
        self.api = FakeAPIServer().start()
        self.cluster = ClusterConnection(ClusterSettings())
        self.cluster.register(NAME, ClusterNeeds(dynamic_resources=True))
        self.cluster.connect(official_client(self.api.url))  # the reflectors are not started
        dra = self.cluster.dra
        assert dra is not None
        self.dra = dra
        stored = {
            kind: [self.api.put(kind, self.stamped(obj(name))) for name in case.get(key) or ()]
            for kind, key in (("resourceclaims", "claims"), ("deviceclasses", "classes"), ("resourceslices", "slices"))
        }
        for kind, docs in stored.items():
            self.dra.load(kind, docs)
        for name in case.get("in_flight") or ():
            claim = obj(name)
            self.dra.signal_pending_allocation(claim["metadata"]["uid"], claim)

    def stamped(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``doc`` with the case's ``allocation_timestamp`` on its allocation, if it has one."""
        allocation = (doc.get("status") or {}).get("allocation")
        if allocation is not None and self.case.get("allocation_timestamp"):
            allocation["allocationTimestamp"] = self.case["allocation_timestamp"]
        if allocation is not None and "allocated_seconds_ago" in self.case:
            at = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=self.case["allocated_seconds_ago"])
            allocation["allocationTimestamp"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
        return doc

    def close(self) -> None:
        self.cluster.close()
        self.api.stop()

    def written(self) -> dict[str, Any]:
        """What the API server holds of the pod's own claim."""
        found = self.api.claim("default", "my-pod-my-resource")
        assert found is not None
        return found


def in_flight_names(case: Case) -> list[str]:
    return sorted(uid for uid in case.dra.in_flight())


def check_written(case: Case, want: dict[str, Any]) -> None:
    claim = case.written()
    status = claim.get("status") or {}
    allocation = status.get("allocation")
    if "allocated" in want:
        assert (allocation is not None) == want["allocated"], claim
    if "reservedFor" in want:
        assert [r["name"] for r in status.get("reservedFor") or ()] == want["reservedFor"], claim
    if "devices" in want:
        assert [r["device"] for r in allocation["devices"]["results"]] == want["devices"], claim
    if "requests" in want:
        assert [r["request"] for r in allocation["devices"]["results"]] == want["requests"], claim
    if "finalizer" in want:
        has = "resource.kubernetes.io/delete-protection" in (claim["metadata"].get("finalizers") or ())
        assert has == want["finalizer"], claim
    if "allocation_timestamp" in want:
        assert bool(allocation and allocation.get("allocationTimestamp")) == want["allocation_timestamp"], claim


async def run(case: Case) -> None:
    """Upstream's harness (``testPlugin``) for one case."""
    spec, want = case.case, case.case.get("want") or {}
    handle = Handle("default", cluster=case.cluster)
    handle.loop = asyncio.get_running_loop()
    plugin = DynamicResources(DynamicResourcesArgs.model_validate(spec.get("args") or {}), handle)
    pod = PodInfo(msgspec.convert(obj(spec["pod"]), objects.Pod))
    nodes = [
        NodeInfo(obj(n)["metadata"]["name"], msgspec.convert(obj(n), objects.Node))
        for n in spec.get("nodes") or ["workerNode"]
    ]
    status = plugin.pre_enqueue(pod)
    check("preenqueue", status, want.get("preenqueue"))
    if not status.is_success():
        return
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, nodes)
    check("prefilter", status, want.get("prefilter"))
    fitting: list[NodeInfo] = []
    if status.code is Code.SUCCESS:
        for node in nodes:
            status = plugin.filter(state, pod, node)
            check(f"filter/{node.name}", status, (want.get("filter") or {}).get(node.name))
            if status.is_success():
                fitting.append(node)
            if status.code is Code.ERROR:
                return
    elif status.code is Code.SKIP:
        if "postfilter_if_run" in want:
            _, status = plugin.post_filter(state, pod, {})
            check("postfilter", status, want["postfilter_if_run"])
        return
    if not fitting:
        _, status = plugin.post_filter(state, pod, {})
        check("postfilter", status, want.get("postfilter"))
        await drain(plugin)
        if "written" in want:
            check_written(case, want["written"])
        return
    node = fitting[0]
    check("reserve", plugin.reserve(state, pod, node), want.get("reserve"))
    if "in_flight" in want:
        assert in_flight_names(case) == sorted(want["in_flight"])
    if spec.get("unreserve_before_prebind"):
        plugin.unreserve(state, pod, node.name)
        await drain(plugin)
        assert in_flight_names(case) == sorted(want.get("in_flight_after_unreserve") or [])
        check_written(case, want.get("written") or {})
        return
    if spec.get("prepare_prebind"):
        current = case.written()
        case.api.put("resourceclaims", merge_patch(current, spec["prepare_prebind"]))
    case.api.claim_writes.clear()
    status = await plugin.pre_bind(state, pod, node.name)
    check("prebind", status, want.get("prebind"))
    if "claim_writes" in want:
        assert [verb for verb, _, _ in case.api.claim_writes] == want["claim_writes"]
    if "in_flight_after_prebind" in want:
        assert in_flight_names(case) == sorted(want["in_flight_after_prebind"])
    if want.get("assumed"):
        known = case.dra.claim("default", "my-pod-my-resource")
        assert (
            known is not None and known["metadata"]["resourceVersion"] == case.written()["metadata"]["resourceVersion"]
        )
    if spec.get("unreserve_after_prebind"):
        plugin.unreserve(state, pod, node.name)
        await drain(plugin)
    if "written" in want:
        check_written(case, want["written"])


async def drain(plugin: DynamicResources) -> None:
    """Wait for the writes the plugin sent without waiting (PostFilter's, Unreserve's)."""
    for _ in range(100):
        if not plugin._tasks:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the plugin's writes did not end")


@pytest.fixture
def gates() -> Iterator[None]:
    saved = features.current()
    yield
    features.set_current(saved)


@pytest.mark.parametrize("name", sorted(DATA["cases"]))
def test_plugin(name: str, gates: None) -> None:
    spec = DATA["cases"][name]
    if spec.get("gates"):
        features.set_current(features.FeatureGates(spec["gates"]))
    case = Case(spec)
    try:
        asyncio.run(run(case))
    finally:
        case.close()


@pytest.mark.parametrize("name", sorted(DATA["skipped"]))
def test_plugin_not_ported(name: str) -> None:
    pytest.skip(DATA["skipped"][name])


def test_every_upstream_case_is_ported_or_skipped() -> None:
    upstream = {
        "empty", "empty-with-extended-resources-enabled", "claim-reference", "claim-template",
        "missing-claim", "deleted-claim", "wrong-claim", "no-resources", "with-resources",
        "with-resources-has-finalizer", "with-resources-finalizer-gets-removed",
        "with-resources-finalizer-gets-added", "skip-bind", "exhausted-resources-in-informer-cache",
        "exhausted-resources-in-flight-claim", "other-resources-in-flight-claim", "missing-class",
        "wrong-topology", "good-topology", "bind-failure", "reserved-okay", "DRA-disabled",
        "claim-with-request-with-unknown-device-class", "claim-with-prioritized-list-feature-disabled",
        "claim-with-prioritized-list-unknown-device-class", "claim-with-prioritized-list", "canceled",
        "timeout", "timeout_disabled", "timeout_zero",
    }  # fmt: skip
    assert upstream <= set(DATA["cases"]) | set(DATA["skipped"])
    assert not set(DATA["cases"]) & set(DATA["skipped"])

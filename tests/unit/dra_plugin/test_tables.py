"""kube-scheduler v1.36.3's other DynamicResources tables (dynamicresources_test.go), as data in
``cases.yaml``: ``TestIsSchedulableAfterClaimChange``, ``TestIsSchedulableAfterPodChange``,
``Test_computesScore`` and ``TestGatherAllocatedState`` (dra_manager: the cluster state's
allocated devices and in-flight allocations, :class:`~app.cluster.dra.DRAStores`). Also the
plugin's args (``ValidateDynamicResourcesArgs``)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec
import pytest

from app.cluster.connection import ClusterConnection, ClusterSettings
from app.cluster.dra import CLAIMS, DRAStores
from app.framework import objects
from app.framework.events import QUEUE, SKIP
from app.framework.types import PodInfo
from app.plugins.dynamicresources import hints
from app.plugins.dynamicresources.plugin import DynamicResourcesArgs, compute_score
from tests.unit.dra_plugin.test_plugin_table import DATA, obj

HINTS = {"Queue": QUEUE, "Skip": SKIP}


def stores(consumable: bool = True) -> DRAStores:
    """The cluster state's DRA stores (``DRAConsumableCapacity`` as ``consumable``)."""
    connection = ClusterConnection(ClusterSettings())
    return DRAStores(connection.health, connection.events, consumable_capacity=consumable)


def pod_info(name: str) -> PodInfo:
    return PodInfo(msgspec.convert(obj(name), objects.Pod))


def event_object(value: Any, kind: str) -> Any:
    if value is None or value == "not-a-claim":
        return value
    return pod_info(value) if kind == "pod" else obj(value)


@pytest.mark.parametrize("name", sorted(DATA["claim_hints"]))
def test_is_schedulable_after_claim_change(name: str) -> None:
    case = DATA["claim_hints"][name]
    dra = stores()
    known = [obj(c) for c in case.get("claims") or ()]
    new = event_object(case.get("new"), "claim")
    if isinstance(new, dict):  # the informer delivered the event: the cache holds the new claim
        known = [c for c in known if c["metadata"]["name"] != new["metadata"]["name"]] + [new]
    dra.load(CLAIMS, known)
    pod, old = pod_info(case["pod"]), event_object(case.get("old"), "claim")
    if case["want"] == "error":
        with pytest.raises(TypeError):
            hints.is_schedulable_after_claim_change(dra, pod, old, new)
        return
    assert hints.is_schedulable_after_claim_change(dra, pod, old, new) == HINTS[case["want"]]


@pytest.mark.parametrize("name", sorted(DATA["pod_hints"]))
def test_is_schedulable_after_pod_change(name: str) -> None:
    case = DATA["pod_hints"][name]
    dra = stores()
    dra.load(CLAIMS, [obj(c) for c in case.get("claims") or ()])
    pod, new = pod_info(case["pod"]), event_object(case.get("new"), "pod")
    if case["want"] == "error":
        with pytest.raises(TypeError):
            hints.is_schedulable_after_pod_change(dra, pod, None, new)
        return
    assert hints.is_schedulable_after_pod_change(dra, pod, None, new) == HINTS[case["want"]]


def _score_claim(spec: Any) -> dict[str, Any]:
    if isinstance(spec, str):
        return obj(spec)
    requests = [
        {
            "name": request,
            "firstAvailable": [
                {"name": f"subreq-{i + 1}", "deviceClassName": "my-resource-class", "count": 1} for i in range(count)
            ],
        }
        for request, count in spec.items()
    ]
    return {"metadata": {"name": "c"}, "spec": {"devices": {"requests": requests}}}


@pytest.mark.parametrize("name", sorted(DATA["compute_score"]))
def test_compute_score(name: str) -> None:
    case = DATA["compute_score"][name]
    pod_claims = [_score_claim(c) for c in case["claims"]]
    results = [{"devices": {"results": [{"request": r} for r in refs]}} for refs in case["allocations"]]
    if case.get("error"):
        with pytest.raises(ValueError, match="smaller than number of claims needing allocation"):
            compute_score(pod_claims, results)
        return
    assert compute_score(pod_claims, results) == case["score"]


@pytest.mark.parametrize("name", sorted(DATA["gather_allocated_state"]))
def test_gather_allocated_state(name: str) -> None:
    case = DATA["gather_allocated_state"][name]
    dra = stores(case["consumable"])
    allocated = [obj(c) for c in case.get("allocated") or ()]
    for i, claim in enumerate(allocated):  # upstream adds them to the handlers one by one; the store keys them by name
        claim["metadata"]["name"] += f"-{i}"
    dra.load(CLAIMS, allocated)
    for uid, claim in (case.get("in_flight") or {}).items():
        dra.signal_pending_allocation(uid, obj(claim))
    state = dra.gather_allocated_state()
    assert (len(state.devices), len(state.shared)) == (case["ids"], case["shared"])
    if "capacity" in case:
        assert state.capacity[("some-driver", "worker", "shared-instance")]["my-cap"] == Decimal(case["capacity"])
    else:
        assert state.capacity == {}


def test_allocated_devices_follow_the_claims_and_their_assumed_versions() -> None:
    """``allocatedDevices``' handlers and the assume cache: a claim's devices count while its
    latest version is allocated, an assumed version stands until the watch shows a newer one, a
    restore goes back to the watch's."""
    dra = stores()
    pending = {**obj("pendingClaim"), "metadata": {**obj("pendingClaim")["metadata"], "resourceVersion": "5"}}
    dra.load(CLAIMS, [pending])
    assert dra.gather_allocated_state().devices == set()
    allocated = {**obj("allocatedClaim"), "metadata": {**pending["metadata"], "resourceVersion": "6"}}
    assert dra.assume_claim(allocated) == ""
    assert dra.gather_allocated_state().devices == {("some-driver", "worker", "instance-1")}
    dra.apply(CLAIMS, "MODIFIED", pending)  # an older version from the watch: the assumed one stays
    assert dra.claim("default", "my-pod-my-resource") is not None
    assert dra.gather_allocated_state().devices == {("some-driver", "worker", "instance-1")}
    dra.restore_claim("default", "my-pod-my-resource")
    assert dra.gather_allocated_state().devices == set()
    stale = {**allocated, "metadata": {**allocated["metadata"], "resourceVersion": "4"}}
    assert "out of sync" in dra.assume_claim(stale)
    newer = {**allocated, "metadata": {**allocated["metadata"], "resourceVersion": "7"}}
    dra.apply(CLAIMS, "MODIFIED", newer)
    assert dra.gather_allocated_state().devices == {("some-driver", "worker", "instance-1")}
    dra.apply(CLAIMS, "DELETED", newer)
    assert dra.gather_allocated_state().devices == set()
    admin = {**newer, "status": {"allocation": {"devices": {"results": [{**_result(), "adminAccess": True}]}}}}
    dra.apply(CLAIMS, "ADDED", admin)  # structured-ignore-allocated-admin-access: admin access takes nothing
    assert dra.gather_allocated_state().devices == set()


def _result() -> dict[str, Any]:
    return {"driver": "some-driver", "pool": "worker", "device": "instance-1", "request": "req-1"}


def test_in_flight_allocations_are_shared_and_counted_until_the_last_sharer_goes() -> None:
    dra = stores()
    claim = obj("allocatedClaim")
    dra.signal_pending_allocation("u", claim)
    dra.signal_pending_allocation("u", claim)
    assert dra.in_flight() == {"u": 2}
    assert dra.gather_allocated_state().devices == {("some-driver", "worker", "instance-1")}
    assert not dra.maybe_remove_pending_allocation("u", False)
    assert dra.maybe_remove_pending_allocation("u", False)
    assert dra.pending_allocation("u") is None and dra.gather_allocated_state().devices == set()
    dra.signal_pending_allocation("u", claim)
    assert dra.maybe_remove_pending_allocation("u", True)  # forced: PreBind's write was assumed
    assert not dra.maybe_remove_pending_allocation("u", False)


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"filterTimeout": "-1s"}, "filterTimeout: Invalid value: '-1s': must be zero or positive"),
        ({"bindingTimeout": "500ms"}, "bindingTimeout: Invalid value: '500ms': must be at least 1 second"),
        ({"filterTimeout": "0s", "bindingTimeout": "1s"}, ""),
        ({"filterTimeout": 5}, "expected a duration"),
    ],
)
def test_args_are_validated_as_upstream(args: dict[str, Any], problem: str) -> None:
    if not problem:
        assert DynamicResourcesArgs.model_validate(args).filter_timeout == "0s"
        return
    with pytest.raises(ValueError, match=problem.replace("(", r"\(")):
        DynamicResourcesArgs.model_validate(args)

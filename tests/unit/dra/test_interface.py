"""The structured allocator through its public interface (``app.plugins.dynamicresources.structured``),
as the DynamicResources plugin calls it: ``new_cel_cache``, ``new_allocator``, ``allocate`` per node,
``node_matches``; the fatal errors (a selector that does not compile, one that fails on a device)
name the class or claim and the selector in upstream's words."""

from __future__ import annotations

import time
from typing import Any

import pytest

from app.plugins.dynamicresources.structured import (
    AllocatedState,
    AllocationError,
    AllocationTimeoutError,
    Features,
    NodeAllocationError,
    is_device_allocated,
    new_allocator,
    new_cel_cache,
    node_matches,
)

DRIVER = "gpu.example.com"


def _node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def _slice(node: str, *devices: dict[str, Any], pool: str | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{node}-slice"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": pool or node, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": list(devices),
        },
    }


def _gpu(name: str, model: str = "h100") -> dict[str, Any]:
    return {"name": name, "attributes": {"model": {"string": model}}, "capacity": {"memory": {"value": "80Gi"}}}


def _class(expression: str = f'device.driver == "{DRIVER}"') -> dict[str, Any]:
    return {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def _claim(name: str, count: int = 1, selector: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def _allocator(slices: list[dict[str, Any]], klass: dict[str, Any] | None = None, **state: Any) -> Any:
    return new_allocator(Features(), AllocatedState(**state), {"gpu": klass or _class()}, slices, new_cel_cache())


def test_claims_of_one_call_never_share_a_device_and_allocated_ones_are_left_out() -> None:
    allocator = _allocator([_slice("n1", _gpu("g0"), _gpu("g1"), _gpu("g2"))], allocated_devices={(DRIVER, "n1", "g0")})
    results = allocator.allocate(_node("n1"), [_claim("a"), _claim("b")])
    assert [r["devices"]["results"][0]["device"] for r in results] == ["g1", "g2"]
    assert results[0]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["n1"]
    assert allocator.allocate(_node("n1"), [_claim("a"), _claim("b"), _claim("c")]) is None


def test_a_request_selector_picks_the_model_and_other_nodes_have_none() -> None:
    slices = [_slice("n1", _gpu("g0", "a100"), _gpu("g1", "h100")), _slice("n2", _gpu("g0", "a100"))]
    allocator = _allocator(slices)
    want = _claim("c", selector=f'device.attributes["{DRIVER}"].model == "h100"')
    assert allocator.allocate(_node("n1"), [want])[0]["devices"]["results"][0]["device"] == "g1"
    assert allocator.allocate(_node("n2"), [want]) is None
    assert allocator.allocate(_node("n3"), [want]) is None


def test_a_class_selector_that_does_not_compile_is_an_error_naming_the_class() -> None:
    allocator = _allocator([_slice("n1", _gpu("g0"))], klass=_class("device.driver =="))
    with pytest.raises(AllocationError, match=r"^class gpu: selector #0: CEL compile error: compilation failed: "):
        allocator.allocate(_node("n1"), [_claim("c")])


def test_a_request_selector_failing_on_a_device_is_an_error_naming_the_claim() -> None:
    allocator = _allocator([_slice("n1", _gpu("g0"))])
    claim = _claim("c", selector=f'device.attributes["{DRIVER}"].missing == "x"')
    with pytest.raises(
        AllocationError, match=r"^claim default/c: selector #0: CEL runtime error: no such key: missing"
    ):
        allocator.allocate(_node("n1"), [claim])


def test_a_claim_for_a_class_that_does_not_exist_is_an_error() -> None:
    allocator = new_allocator(Features(), AllocatedState(), {}, [_slice("n1", _gpu("g0"))], new_cel_cache())
    with pytest.raises(AllocationError, match="could not retrieve device class gpu"):
        allocator.allocate(_node("n1"), [_claim("c")])


def test_an_invalid_pool_fails_on_its_node_only() -> None:
    allocator = _allocator([_slice("n1", _gpu("g0"), _gpu("g0"))])
    with pytest.raises(NodeAllocationError, match="invalid resource pools were encountered"):
        allocator.allocate(_node("n1"), [_claim("c")])


def test_node_matches_by_name_all_nodes_and_selector() -> None:
    node = _node("n1", zone="a")
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}
    other = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}
    assert node_matches(Features(), node, "n1", False, None)
    assert not node_matches(Features(), node, "n2", False, None)
    assert node_matches(Features(), node, "", True, None)
    assert node_matches(Features(), node, "", False, selector)
    assert not node_matches(Features(), node, "", False, other)
    assert not node_matches(Features(), node, "", False, None)


def test_a_slice_for_a_labelled_group_of_nodes_gives_its_selector() -> None:
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}
    shared = {
        "metadata": {"name": "zone-a"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": "zone-a", "generation": 1, "resourceSliceCount": 1},
            "nodeSelector": selector,
            "devices": [_gpu("net-0")],
        },
    }
    allocator = _allocator([shared])
    result = allocator.allocate(_node("n1", zone="a"), [_claim("c")])
    assert result[0]["nodeSelector"] == selector
    assert allocator.allocate(_node("n2", zone="b"), [_claim("c")]) is None


def test_an_allocation_past_its_deadline_stops_with_a_timeout() -> None:
    """Upstream's ``interrupt`` subtest of TestAllocator: six devices asked of five; without a
    deadline the search ends with no result, with one already passed it stops at once."""
    allocator = _allocator([_slice("n1", *[_gpu(f"device-{i}") for i in range(1, 6)])])
    assert allocator.allocate(_node("n1"), [_claim("c", count=6)]) is None
    with pytest.raises(AllocationTimeoutError, match="filter operation aborted: context deadline exceeded"):
        allocator.allocate(_node("n1"), [_claim("c", count=6)], deadline=time.monotonic() - 1)
    assert allocator.allocate(_node("n1"), [_claim("c", count=5)], deadline=time.monotonic() + 60) is not None


def test_is_device_allocated_counts_exclusive_and_shared_allocations() -> None:
    device = (DRIVER, "n1", "g0")
    assert not is_device_allocated(device, AllocatedState())
    assert is_device_allocated(device, AllocatedState(allocated_devices={device}))
    assert is_device_allocated(device, AllocatedState(allocated_shared_device_ids={(*device, "share-1")}))
    assert is_device_allocated(device, AllocatedState(aggregated_capacity={device: {"memory": 1}}))

"""Upstream's shared allocator test tables (v1.36.3
``structured/internal/allocatortesting/allocator_testing.go`` and ``lexicographical_testing.go``,
ported as data to ``data/allocator_cases.json`` and ``data/lexicographical_cases.json`` by
``porting/port_allocator.py``) against the structured allocator:
each case's claims allocated on its node with its features, classes, slices and allocated state,
the results compared as upstream's matchers compare them (a claim's device results in any order
where upstream's ``allocationResult`` matcher allows it, node selectors regardless of order),
the error by substring, and the number of ``allocateOne`` calls where upstream counts them."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from app.plugins.dynamicresources.cel import Cache
from app.plugins.dynamicresources.cel.quantity import quantity
from app.plugins.dynamicresources.structured import AllocatedState, AllocationError, Features, StructuredAllocator

DATA = json.loads((Path(__file__).parent / "data" / "allocator_cases.json").read_text())
#: ``TestLexicographicalAllocator`` (``lexicographical_testing.go``): first-fit order by pool and slice name
LEXICOGRAPHICAL = json.loads((Path(__file__).parent / "data" / "lexicographical_cases.json").read_text())
CASES = {case["name"]: case for case in DATA["cases"] + LEXICOGRAPHICAL["cases"]}
FIXED_SHARE_ID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
DEFAULT_NODE = {"metadata": {"name": "node-1", "labels": {"region": "region-1", "planet": "earth"}}}
FEATURE_NAMES = {
    "adminAccess": "admin_access",
    "consumableCapacity": "consumable_capacity",
    "deviceBindingAndStatus": "device_binding_and_status",
    "deviceTaints": "device_taints",
    "listTypeAttributes": "list_type_attributes",
    "partitionableDevices": "partitionable_devices",
    "prioritizedList": "prioritized_list",
}


def _features(case: dict[str, Any]) -> Features:
    """Upstream's ``Features{...}`` literal: every feature off unless the case names it."""
    given = case.get("features") or {}
    return Features(**{snake: bool(given.get(camel)) for camel, snake in FEATURE_NAMES.items()})


def _selector_key(selector: Any) -> Any:
    if selector is None:
        return None
    terms = []
    for term in selector.get("nodeSelectorTerms") or []:
        parts = []
        for kind in ("matchExpressions", "matchFields"):
            reqs = frozenset(
                (r.get("key"), r.get("operator"), frozenset(r.get("values") or ())) for r in term.get(kind) or ()
            )
            parts.append(reqs)
        terms.append(tuple(parts))
    return sorted(terms, key=repr)


def _device_result(result: dict[str, Any]) -> str:
    out = dict(result)
    if out.get("shareID") is not None:
        out["shareID"] = FIXED_SHARE_ID
    if out.get("consumedCapacity"):
        out["consumedCapacity"] = {k: str(quantity(v).value.normalize()) for k, v in out["consumedCapacity"].items()}
    return json.dumps(out, sort_keys=True)


def _matches(expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    want_devices, got_devices = expected.get("devices") or {}, actual.get("devices") or {}
    want = [_device_result(r) for r in want_devices.get("results") or []]
    got = [_device_result(r) for r in got_devices.get("results") or []]
    if expected.get("unorderedResults"):
        if sorted(want) != sorted(got) or got_devices.get("config"):
            return False
    elif want != got or (want_devices.get("config") or None) != (got_devices.get("config") or None):
        return False
    return _selector_key(expected.get("nodeSelector")) == _selector_key(actual.get("nodeSelector"))


def _consist_of(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> bool:
    """gomega ``ConsistOf``: a one-to-one matching in any order."""
    if len(expected) != len(actual):
        return False

    def assign(i: int, used: frozenset[int]) -> bool:
        if i == len(expected):
            return True
        return any(
            j not in used and _matches(expected[i], actual[j]) and assign(i + 1, used | {j}) for j in range(len(actual))
        )

    return assign(0, frozenset())


@pytest.mark.parametrize("name", sorted(CASES))
def test_upstream_allocator_case(name: str) -> None:
    case = CASES[name]
    if "skip" in case:
        pytest.skip(case["skip"])
    features = _features(case)
    if features.list_type_attributes:
        pytest.skip("needs DRAListTypeAttributes, which the incubating allocator (v1.36.3's default) lacks")
    state = AllocatedState(
        allocated_devices={tuple(d) for d in case.get("allocatedDevices") or []},  # type: ignore[misc]
        allocated_shared_device_ids={tuple(d) for d in case.get("allocatedSharedDeviceIDs") or []},  # type: ignore[misc]
        aggregated_capacity={
            tuple(device): {k: quantity(v).value for k, v in consumed.items()}  # type: ignore[misc]
            for device, consumed in case.get("allocatedCapacityDevices") or []
        },
    )
    classes = {c["metadata"]["name"]: c for c in case.get("classes") or []}
    slices = case.get("slices") or []
    cache = Cache(1, consumable_capacity=features.consumable_capacity)
    allocator = StructuredAllocator(features, state, classes, slices, cache)
    before = json.dumps([case.get("claimsToAllocate"), slices, classes], sort_keys=True)
    error: str | None = None
    try:
        results = allocator.allocate(case.get("node") or DEFAULT_NODE, case.get("claimsToAllocate") or [])
    except AllocationError as exc:
        error, results = str(exc), None
    expect_error = (case.get("expectError") or {}).get("errorContains")
    if expect_error is None:
        assert error is None, f"unexpected error: {error}"
    else:
        assert error is not None and expect_error in error, f"expected an error with {expect_error!r}, got {error!r}"
    expected = case.get("expectResults") or []
    assert _consist_of(expected, results or []), (
        f"results differ:\nexpected {json.dumps(expected, indent=1)}\ngot {json.dumps(results, indent=1)}"
    )
    # objects the allocator had access to are not modified
    assert json.dumps([case.get("claimsToAllocate"), slices, classes], sort_keys=True) == before
    want_calls = case.get("expectNumAllocateOneInvocations")
    if want_calls:
        want_calls = (case.get("expectNumAllocateOneInvocationsByChannel") or {}).get("incubating", want_calls)
        assert allocator.num_allocate_one_invocations == want_calls


def test_every_upstream_case_is_listed() -> None:
    """The data has every case of upstream's tables (221 and 4 in v1.36.3), none dropped."""
    assert len(DATA["cases"]) == 221 and len(LEXICOGRAPHICAL["cases"]) == 4
    assert len(CASES) == 225
    assert Decimal(1) == quantity("1").value

"""Upstream's consumable-capacity unit tests (v1.36.3
``structured/internal/incubating/consumable_capacity_test.go``), as data in
``data/capacity_cases.json``, against :mod:`app.plugins.dynamicresources.structured.capacity`:
request policies (``violatesPolicy``), rounding a request up by its policy
(``calculateConsumedCapacity``) and what a share consumes (``GetConsumedCapacityFromRequest``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.plugins.dynamicresources.cel.quantity import quantity
from app.plugins.dynamicresources.structured import capacity as cap

DATA = json.loads((Path(__file__).parent / "data" / "capacity_cases.json").read_text())


@pytest.mark.parametrize("case", DATA["violatesPolicy"], ids=lambda c: c["name"])
def test_violates_policy(case: dict[str, Any]) -> None:
    assert cap._violates_policy(quantity(case["requested"]), case["policy"]) is case["expect"]


@pytest.mark.parametrize("case", DATA["calculateConsumedCapacity"], ids=lambda c: c["name"])
def test_calculate_consumed_capacity(case: dict[str, Any]) -> None:
    requested = quantity(case["requested"]) if case["requested"] is not None else None
    consumed = cap.calculate_consumed_capacity(requested, {"value": case["value"], "requestPolicy": case["policy"]})
    assert consumed.value == quantity(case["expect"]).value


def test_get_consumed_capacity_from_request() -> None:
    case = DATA["getConsumedCapacityFromRequest"]
    consumed = cap.consumed_capacity_from_request({"requests": case["requests"]}, case["capacity"])
    assert {name: q.value for name, q in consumed.items()} == {k: quantity(v).value for k, v in case["expect"].items()}


@pytest.mark.parametrize("name", sorted(DATA["skip"]))
def test_listed_skips(name: str) -> None:
    pytest.skip(DATA["skip"][name])

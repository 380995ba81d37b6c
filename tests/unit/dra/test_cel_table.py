"""Upstream's DRA CEL tests (v1.36.3 ``dynamic-resource-allocation/cel/compile_test.go``,
``TestCEL``; ported as data to ``data/cel_cases.json`` by ``porting/port_cel.py``) against
:mod:`app.plugins.dynamicresources.cel`: compile errors, match results and evaluation errors by
substring. Upstream runs a case without ``enableListTypeAttributes`` twice (off and on); the
"on" runs and the cases that need the gate skip, since DRAListTypeAttributes is alpha and off
in v1.36.3. ``expectCost`` (cel-go's estimated cost) is not compared: the library estimates none
(docs/dra-cel.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.plugins.dynamicresources.cel import Cache, compile_expression, device_input

DATA = json.loads((Path(__file__).parent / "data" / "cel_cases.json").read_text())
CASES = {case["name"]: case for case in DATA["cases"]}
#: cases this port cannot pass, with the reason (listed, never dropped)
KNOWN = {
    "expensive": "the runtime cost limit (actual cost limit exceeded) is not enforced: the CEL library counts no cost",
}


def _params() -> list[Any]:
    out = []
    for name, case in sorted(CASES.items()):
        flag = case.get("enableListTypeAttributes")
        if flag is None:
            out.append(pytest.param(name, False, id=f"{name}-list-type-attributes-false"))
            out.append(pytest.param(name, True, id=f"{name}-list-type-attributes-true"))
        else:
            out.append(pytest.param(name, bool(flag), id=f"{name}-list-type-attributes-{str(bool(flag)).lower()}"))
    return out


def evaluate_case(case: dict[str, Any]) -> tuple[str | None, bool, str | None]:
    """(compile error, match, match error) of one case with this project's environment."""
    consumable = bool(case.get("enableConsumableCapacity")) if case.get("envType") == "NewExpressions" else True
    compiled = compile_expression(case["expression"], consumable)
    if compiled.error is not None:
        return compiled.error, False, None
    device = {
        "attributes": case.get("attributes") or {},
        "capacity": case.get("capacity") or {},
        "allowMultipleAllocations": case.get("allowMultipleAllocations"),
    }
    try:
        cel_device = device_input(case.get("driver") or "", device)
    except ValueError as exc:
        return None, False, str(exc)
    matched, error = compiled.device_matches(cel_device)
    return None, matched, error


@pytest.mark.parametrize(("name", "list_type_attributes"), _params())
def test_upstream_cel_case(name: str, list_type_attributes: bool) -> None:
    case = CASES[name]
    if "skip" in case:
        pytest.skip(case["skip"])
    if list_type_attributes:
        pytest.skip("DRAListTypeAttributes is alpha and off in v1.36.3; list-type attributes are not implemented")
    if name in KNOWN:
        pytest.skip(KNOWN[name])
    compile_error, matched, match_error = evaluate_case(case)
    if case.get("expectCompileError"):
        assert compile_error is not None and case["expectCompileError"] in compile_error, compile_error
        return
    assert compile_error is None, compile_error
    if case.get("expectMatchError"):
        assert match_error is not None and case["expectMatchError"] in match_error, match_error
        return
    assert match_error is None, match_error
    assert matched == bool(case.get("expectMatch"))


def test_cache_keeps_only_compiled_selectors() -> None:
    """``cel.Cache``: a compiled selector is reused, a failing one is not kept, the oldest goes."""
    cache = Cache(max_entries=2)
    first = cache.get_or_compile("true")
    assert cache.get_or_compile("true") is first
    bad = cache.get_or_compile("?!")
    assert bad.error is not None and bad.error.startswith("compilation failed: ")
    assert cache.get_or_compile("?!") is not bad
    cache.get_or_compile("false")
    cache.get_or_compile("1 == 1")
    assert cache.get_or_compile("true") is not first

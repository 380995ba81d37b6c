"""Compare the two PyPI CEL libraries on upstream's DRA CEL cases (``data/cel_cases.json``) and on
speed, for docs/dra-cel.md. Both get the same glue: ``cel.bind`` rewritten, the DRA functions of
``app.plugins.dynamicresources.cel.library``, domains looked up by literal defaulting to empty
maps; compile-time checks beyond parsing are each library's own (common-expression-language
lists a program's references, which the project's environment uses; cel-python has no such list).

Run: ``.venv/bin/python -m tests.unit.dra.porting.compare_cel`` (both libraries installed)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import celpy
from celpy import celtypes

from app.plugins.dynamicresources.cel import (
    _DEVICE_FIELD,
    _DOMAIN_LOOKUP,
    DEVICE_FIELDS,
    CompilationResult,
    _type_name,
    compile_expression,
    device_input,
    rewrite_bind,
)
from app.plugins.dynamicresources.cel.library import FUNCTIONS

DATA = json.loads((Path(__file__).resolve().parents[1] / "data" / "cel_cases.json").read_text())
TYPICAL = (
    'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "h100" && '
    'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'
)
TYPICAL_DEVICE = {
    "attributes": {"model": {"string": "h100"}, "numa": {"int": 1}, "driverVersion": {"version": "1.2.3"}},
    "capacity": {"memory": {"value": "80Gi"}},
}


def _to_plain(value: Any) -> Any:
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, celtypes.IntType):
        return int(value)
    if isinstance(value, celtypes.StringType):
        return str(value)
    if isinstance(value, celtypes.MapType):
        return {_to_plain(k): _to_plain(v) for k, v in value.items()}
    if isinstance(value, celtypes.ListType):
        return [_to_plain(v) for v in value]
    return value


def _wrap(func: Any) -> Any:
    def call(*args: Any) -> Any:
        return celpy.json_to_cel(func(*[_to_plain(a) for a in args]))

    return call


CELPY_FUNCTIONS = {name: _wrap(f) for name, f in FUNCTIONS.items()}


class CelPython:
    """cel-python with the same glue."""

    def __init__(self) -> None:
        self.env = celpy.Environment()

    def compile(self, expression: str, consumable: bool = True) -> tuple[Any, str | None]:
        rewritten = rewrite_bind(expression)
        try:
            ast = self.env.compile(rewritten)
            program = self.env.program(ast, functions=CELPY_FUNCTIONS)
        except Exception as exc:
            return None, f"compilation failed: {exc}"
        fields = DEVICE_FIELDS if consumable else DEVICE_FIELDS - {"allowMultipleAllocations"}
        for name in _DEVICE_FIELD.findall(rewritten):
            if name not in fields:
                return None, f"compilation failed: undefined field '{name}'"
        if "device" not in rewritten:
            try:
                value = program.evaluate({})
            except Exception:
                value = celtypes.BoolType(True)
            if not isinstance(value, celtypes.BoolType):
                kind = _type_name(_to_plain(value))
                return None, f"compilation failed: must evaluate to bool or the unknown type, not {kind}"
        domains: dict[str, set[str]] = {"attributes": set(), "capacity": set()}
        for kind, _, domain in _DOMAIN_LOOKUP.findall(rewritten):
            domains[kind].add(domain)
        return (program, domains), None

    def matches(self, compiled: Any, device: dict[str, Any]) -> tuple[bool, str | None]:
        program, domains = compiled
        device = {
            **device,
            "attributes": {**{d: {} for d in domains["attributes"]}, **device["attributes"]},
            "capacity": {**{d: {} for d in domains["capacity"]}, **device["capacity"]},
        }
        try:
            result = program.evaluate({"device": celpy.json_to_cel(device)})
        except Exception as exc:
            return False, str(exc)
        if isinstance(result, Exception):
            return False, str(result)
        if not isinstance(result, celtypes.BoolType):
            return False, f"CEL result of type {type(result).__name__} could not be converted to bool"
        return bool(result), None


class CommonExpressionLanguage:
    """common-expression-language: the project's environment itself."""

    def compile(self, expression: str, consumable: bool = True) -> tuple[Any, str | None]:
        result = compile_expression(expression, consumable)
        return result, result.error

    def matches(self, compiled: CompilationResult, device: dict[str, Any]) -> tuple[bool, str | None]:
        return compiled.device_matches(device)


def run_cases(lib: Any) -> tuple[int, int, list[str]]:
    passed, total, failed = 0, 0, []
    for case in DATA["cases"]:
        if "skip" in case or case.get("enableListTypeAttributes") or case["name"] == "expensive":
            continue
        consumable = bool(case.get("enableConsumableCapacity")) if case.get("envType") == "NewExpressions" else True
        total += 1
        compiled, error = lib.compile(case["expression"], consumable)
        ok = False
        if case.get("expectCompileError"):
            ok = error is not None and case["expectCompileError"] in error
        elif error is None:
            device = {
                "attributes": case.get("attributes") or {},
                "capacity": case.get("capacity") or {},
                "allowMultipleAllocations": case.get("allowMultipleAllocations"),
            }
            try:
                matched, match_error = lib.matches(compiled, device_input(case.get("driver") or "", device))
            except ValueError as exc:
                matched, match_error = False, str(exc)
            if case.get("expectMatchError"):
                ok = match_error is not None and case["expectMatchError"] in match_error
            else:
                ok = match_error is None and matched == bool(case.get("expectMatch"))
        if ok:
            passed += 1
        else:
            failed.append(case["name"])
    return passed, total, failed


def speed(lib: Any, seconds: float = 2.0) -> float:
    compiled, error = lib.compile(TYPICAL)
    assert error is None, error
    device = device_input("gpu.example.com", TYPICAL_DEVICE)
    assert lib.matches(compiled, device) == (True, None)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            lib.matches(compiled, device)
        n += 100
    return n / (time.perf_counter() - start)


def compile_speed(lib: Any, count: int = 200) -> float:
    start = time.perf_counter()
    for i in range(count):
        lib.compile(TYPICAL + f" && {i} >= 0")
    return count / (time.perf_counter() - start)


def main() -> None:
    for name, lib in (("common-expression-language", CommonExpressionLanguage()), ("cel-python", CelPython())):
        passed, total, failed = run_cases(lib)
        print(f"{name}: {passed}/{total} cases; failed: {', '.join(failed) or '-'}")
        print(f"  evaluations/s of the typical selector: {speed(lib):,.0f}; compilations/s: {compile_speed(lib):,.0f}")


if __name__ == "__main__":
    main()

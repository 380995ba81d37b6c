"""Regenerate ``tests/unit/dra/data/cel_cases.json`` from upstream's DRA CEL tests (v1.36.3
``dynamic-resource-allocation/cel/compile_test.go``, ``testcases``): every case by its upstream
name with its expression, device and expectations. Run from the worktree:
``.venv/bin/python -m tests.unit.dra.porting.port_cel``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from tests.unit.dra.porting.goexpr import Env, GoError, Parser, composite, evaluate, tokenize
from tests.unit.dra.porting.port_allocator import CONSTANTS, FUNCS, METHODS, ROOT, _balanced_end

SOURCE = (
    ROOT.parent.parent
    / "shared/reference/kubernetes-v1.36.3/staging/src/k8s.io/dynamic-resource-allocation/cel/compile_test.go"
)
OUT = Path(__file__).resolve().parents[1] / "data" / "cel_cases.json"


def expensive_attributes() -> dict[str, Any]:
    """The "expensive" case's attributes (a Go loop upstream): 32 string attributes with names of
    the maximum length (63)."""
    out = {}
    for i in range(32):
        suffix = f"-{i}"
        out["dra.example.com/" + "x" * (63 - len(suffix)) + suffix] = {"string": "abc"}
    return out


def expensive_case(src: str) -> dict[str, Any]:
    """The "expensive" case, whose attributes a Go loop builds: read field by field."""
    part = src[src.index('"expensive": {') :]
    part = part[: part.index('"allow_multiple_allocations"')]
    return {
        "name": "expensive",
        "attributes": expensive_attributes(),
        "expression": re.search(r"expression:\s*`([^`]*)`", part).group(1),  # type: ignore[union-attr]
        "driver": "dra.example.com",
        "expectMatchError": re.search(r'expectMatchError:\s*"([^"]*)"', part).group(1),  # type: ignore[union-attr]
        "expectCost": int(re.search(r"expectCost:\s*(\d+)", part).group(1)),  # type: ignore[union-attr]
    }


def main() -> None:
    src = SOURCE.read_text()
    names = dict(CONSTANTS)
    names.update(
        {
            "environment.NewExpressions": "NewExpressions",
            "environment.StoredExpressions": "StoredExpressions",
            "maxElementsListTypeEnabled": 48,
            "resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice": 32,
            "resourceapi.DeviceMaxIDLength": 63,
        }
    )
    env = Env(names, dict(FUNCS), METHODS)
    body = src[src.index("var testcases = map[string]struct {") :]
    body = body[body.index("}{") + 1 :]
    toks = tokenize(body)
    end = _balanced_end(toks, 0)
    cases = []
    i = 1
    while i < end:
        name = json.loads(toks[i].text)
        value_end = _balanced_end(toks, i + 2)
        entry: dict[str, Any] = {"name": name}
        try:
            p = Parser(toks[i + 2 : value_end + 1])
            node = p.composite_body("case")
            for key, value in node.elems:
                if key.name == "attributes" and name == "expensive":
                    entry["attributes"] = expensive_attributes()
                    continue
                v = composite(value, "", env) if hasattr(value, "elems") else evaluate(value, env)
                if key.name == "capacity":
                    v = {k: {"value": c["value"]} for k, c in v.items()}
                entry[key.name] = v
        except (GoError, KeyError, TypeError, AttributeError) as exc:
            entry = {"name": name, "skip": f"not ported: built in Go code ({exc}); needs DRAListTypeAttributes"}
            if name == "expensive":
                entry = expensive_case(src)
        cases.append(entry)
        i = value_end + 1
        if toks[i].text == ",":
            i += 1
    OUT.write_text(json.dumps({"source": str(SOURCE.relative_to(ROOT.parent.parent)), "cases": cases}, indent=1) + "\n")
    print(f"{len(cases)} cases, {sum('skip' in c for c in cases)} not ported", file=sys.stderr)
    for c in cases:
        if "skip" in c:
            print(f"  {c['name']}: {c['skip']}", file=sys.stderr)


if __name__ == "__main__":
    main()

"""Regenerate ``tests/unit/dra/data/allocator_cases.json`` from upstream's shared allocator test
table (v1.36.3 ``structured/internal/allocatortesting/allocator_testing.go``, ``TestAllocator``):
every case by its upstream name, its objects as ``resource.k8s.io/v1`` JSON, or ``skip`` with the
reason. Run from the worktree: ``.venv/bin/python -m tests.unit.dra.porting.port_allocator``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from app.plugins.dynamicresources.cel.quantity import BINARY_SI, format_quantity
from tests.unit.dra.porting import helpers as h
from tests.unit.dra.porting.goexpr import Env, GoError, Parser, composite, evaluate, tokenize

ROOT = Path(__file__).resolve().parents[4]
SOURCE = (
    ROOT.parent.parent
    / "shared/reference/kubernetes-v1.36.3/staging/src/k8s.io/dynamic-resource-allocation/structured/internal"
    / "allocatortesting/allocator_testing.go"
)
OUT = Path(__file__).resolve().parents[1] / "data" / "allocator_cases.json"
LEXICOGRAPHICAL = SOURCE.parent / "lexicographical_testing.go"
LEXICOGRAPHICAL_OUT = OUT.parent / "lexicographical_cases.json"


def go_sprintf(fmt: str, *args: Any) -> str:
    def conv(m: re.Match[str]) -> str:
        return {"s": "%s", "d": "%d", "v": "%s", "q": "%r"}[m.group(1)]

    pyfmt = re.sub(r"%([sdvq])", conv, fmt.replace("%%", "%%"))
    return pyfmt % tuple(("true" if a is True else "false" if a is False else a) for a in args)


def new_quantity(value: int, fmt: str) -> str:
    from decimal import Decimal

    return format_quantity(Decimal(value), fmt)


def unwrap(*objs: Any) -> list[Any]:
    if objs == (None,):
        return []
    return [o.obj() if isinstance(o, h.W) else o for o in objs]


def strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: strip(v) for k, v in obj.items() if not (isinstance(k, str) and k.startswith("__"))}
    if isinstance(obj, list):
        return [strip(v) for v in obj]
    return obj


FUNCS: dict[str, Any] = {
    "node": h.node,
    "class": h.klass,
    "classWithAllowMultipleAllocations": h.class_with_allow_multiple_allocations,
    "deviceConfiguration": h.device_configuration,
    "classWithConfig": h.class_with_config,
    "claimWithRequests": h.claim_with_requests,
    "request": h.request,
    "deviceRequest": h.device_request,
    "allDeviceRequest": h.all_device_request,
    "subRequest": h.sub_request,
    "requestWithPrioritizedList": h.request_with_prioritized_list,
    "claimWithRequest": h.claim_with_request,
    "claim": h.claim,
    "claimWithDeviceConfig": h.claim_with_device_config,
    "deviceClaimConfig": h.device_claim_config,
    "device": h.device,
    "deviceCounterConsumption": h.device_counter_consumption,
    "slice": h.slice_,
    "sliceWithDevices": h.slice_with_devices,
    "sliceWithCounterSets": h.slice_with_counter_sets,
    "sliceWithNoDevices": lambda *a: h.slice_with_devices(*a),
    "sliceWithOneDevice": lambda *a: h.slice_with_devices(*a, h.device("device-1", None, None)),
    "sliceWithMultipleDevices": h.slice_with_multiple_devices,
    "counterSet": h.counter_set,
    "resourcePool": h.resource_pool,
    "deviceAllocationResult": h.device_allocation_result,
    "deviceRequestAllocationResult": h.device_request_allocation_result,
    "deviceRequestAllocationResultWithBindingConditions": h.device_request_allocation_result_with_binding_conditions,
    "capacityRequests": h.capacity_requests,
    "multipleDeviceAllocationResults": h.multiple_device_allocation_results,
    "nodeLabelSelector": h.node_label_selector,
    "localNodeSelector": h.local_node_selector,
    "allocationResult": h.allocation_result,
    "allocationResultWithConfig": h.allocation_result_with_config,
    "allocationResultWithConfigs": h.allocation_result_with_configs,
    "objects": lambda *a: list(a),
    "unwrap": unwrap,
    "unwrapResourceSlices": unwrap,
    "fmt.Sprintf": go_sprintf,
    "ptr.To": lambda v: v,
    "new": lambda v: v,
    "resource.MustParse": lambda s: s,
    "resource.NewQuantity": new_quantity,
    "gomega.MatchError": h.match_error,
    "gomega.ContainSubstring": lambda s: s,
    "sets.New": lambda *a: [list(x) for x in a],
    "MakeDeviceID": lambda d, p, n: [d, p, n],
    "internal.MakeSharedDeviceID": lambda i, uid: [*i, uid or ""],
    "MakeSharedDeviceID": lambda i, uid: [*i, uid or ""],
    "slices.Concat": lambda *a: [x for part in a for x in part],
    "[]byte": lambda s: s,
    "struct:runtime.RawExtension": h.raw_extension,
}
METHODS = {
    name: (lambda n: lambda target, *args: getattr(target, n)(*args))(name)
    for name in [
        "withCapacityRequest",
        "withSelectors",
        "withAllocationMode",
        "withTolerations",
        "withRequests",
        "withConstraints",
        "withConfigs",
        "withTaints",
        "withDeviceCounterConsumption",
        "withNodeSelection",
        "withBindingConditions",
        "withBindsToNode",
        "withAllowMultipleAllocations",
        "withCapacityRequestPolicyRange",
        "withCapacityRequestPolicyValidValues",
        "withConsumedCapacity",
    ]
}
METHODS["DeepCopy"] = lambda target: (
    type(target)(__import__("copy").deepcopy(dict(target)))
    if isinstance(target, h.W)
    else __import__("copy").deepcopy(target)
)
METHODS["obj"] = lambda target: target.obj() if isinstance(target, h.W) else target

CONSTANTS: dict[str, Any] = {
    "resourceapi.DeviceAllocationModeAll": "All",
    "resourceapi.DeviceAllocationModeExactCount": "ExactCount",
    "resourceapi.AllocationResultsMaxSize": 32,
    "resourceapi.AllocationConfigSourceClass": "FromClass",
    "resourceapi.AllocationConfigSourceClaim": "FromClaim",
    "resourceapi.DeviceTaintEffectNone": "None",
    "resourceapi.DeviceTaintEffectNoSchedule": "NoSchedule",
    "resourceapi.DeviceTaintEffectNoExecute": "NoExecute",
    "resourceapi.DeviceTolerationOpExists": "Exists",
    "resourceapi.DeviceTolerationOpEqual": "Equal",
    "v1.NodeSelectorOpIn": "In",
    "v1.NodeSelectorOpNotIn": "NotIn",
    "resource.BinarySI": BINARY_SI,
    "resource.DecimalSI": "DecimalSI",
    "internal.Stable": "stable",
    "internal.Incubating": "incubating",
    "internal.Experimental": "experimental",
    "fixedShareID": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "nodeSelectionAll": h.NODE_SELECTION_ALL,
    "nodeSelectionPerDevice": h.NODE_SELECTION_PER_DEVICE,
    "fromCounters": h.FROM_COUNTERS,
}


def _balanced_end(toks: list[Any], start: int) -> int:
    depth = 0
    for i in range(start, len(toks)):
        if toks[i].text in "({[":
            depth += 1
        elif toks[i].text in ")}]":
            depth -= 1
            if depth == 0:
                return i
    raise GoError("unbalanced")


def _environment(src: str) -> Env:
    """Constants, package variables and ``TestAllocator``'s local variables."""
    env = Env(dict(CONSTANTS), dict(FUNCS), METHODS)
    for block in re.findall(r"\nconst \((.*?)\n\)", src, re.S):
        for name, value in re.findall(r"^\s*(\w+)\s*=\s*(\"[^\"]*\")", block, re.M):
            env.names[name] = json.loads(value)
    body = src[src.index("func TestAllocator(") :]
    preamble = body[body.index("{\n") : body.index("testcases := map[string]AllocatorTestCase{")]
    toks = tokenize(preamble)[1:]
    i = 0
    while i < len(toks):
        if toks[i].kind == "ident" and toks[i + 1].text == ":=":
            p = Parser(toks[i + 2 :])
            node = p.expr()
            env.names[toks[i].text] = evaluate(node, env)
            i += 2 + p.i
        else:
            i += 1
    return env


def port_table(src: str, env: Env, source: Path, out: Path) -> None:
    """Every case of the ``testcases := map[string]AllocatorTestCase{...}`` in ``src``."""
    table_src = src[src.index("testcases := map[string]AllocatorTestCase{") :]
    toks = tokenize(table_src)
    start = next(i for i, t in enumerate(toks) if t.text == "{")
    end = _balanced_end(toks, start)
    cases: list[dict[str, Any]] = []
    i = start + 1
    while i < end:
        name = json.loads(toks[i].text)
        value_start = i + 2
        value_end = _balanced_end(toks, value_start)
        entry: dict[str, Any] = {"name": name}
        try:
            p = Parser(toks[value_start : value_end + 1])
            node = p.composite_body("AllocatorTestCase")
            fields = {k.name: v for k, v in node.elems}
            for field in fields:
                value = fields[field]
                v = composite(value, "", env) if hasattr(value, "elems") else evaluate(value, env)
                entry[field] = strip(unwrap(*(v or [])) if field == "claimsToAllocate" else v)
        except (GoError, KeyError, TypeError, AttributeError, IndexError) as exc:
            entry = {"name": name, "skip": f"not ported: the case builds its objects in Go code ({exc})"}
        if "allocatedCapacityDevices" in entry:
            entry["allocatedCapacityDevices"] = [[list(k), v] for k, v in entry["allocatedCapacityDevices"].items()]
        cases.append(entry)
        i = value_end + 1
        if toks[i].text == ",":
            i += 1
    out.write_text(json.dumps({"source": str(source.relative_to(ROOT.parent.parent)), "cases": cases}, indent=1) + "\n")
    skipped = [c for c in cases if "skip" in c]
    print(f"{source.name}: {len(cases)} cases, {len(skipped)} not ported", file=sys.stderr)
    for c in skipped:
        print(f"  {c['name']}: {c['skip']}", file=sys.stderr)


def main() -> None:
    src = SOURCE.read_text()
    env = _environment(src)
    port_table(src, env, SOURCE, OUT)
    port_table(LEXICOGRAPHICAL.read_text(), env, LEXICOGRAPHICAL, LEXICOGRAPHICAL_OUT)


if __name__ == "__main__":
    main()

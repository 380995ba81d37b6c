"""DRA's CEL environment, as v1.36.3's ``staging/src/k8s.io/dynamic-resource-allocation/cel/``
(``compile.go``, ``cache.go``), on the PyPI library ``common-expression-language`` (Rust ``cel``).

Library choice (docs/dra-cel.md has the full comparison), on upstream's compile_test.go cases
that v1.36's default gates run and a typical three-clause selector with a quantity comparison:

    library                          cases   evaluations/s   compilations/s
    common-expression-language 0.10  38/38   14,000-17,000   3,000-5,200
    cel-python 0.5                   33/38   850-1,250       770-1,350

A selector sees one variable, ``device``: ``driver``, ``allowMultipleAllocations``,
``attributes`` and ``capacity`` (domain -> id -> value; an attribute without a domain gets the
driver's, a domain indexed by literal that the device lacks is an empty map, as upstream's
``newStringInterfaceMapWithDefault``). Capacities are quantities, version attributes semantic
versions; upstream's base-environment functions are in :mod:`.library`; ``cel.bind`` is rewritten
to a one-element ``map``. Parse errors, undeclared references, undefined ``device`` fields and a
constant non-bool result are compile errors in upstream's words; other type errors show at
evaluation. The library counts no cost, so the runtime cost limit (1,000,000) is not enforced: the
API server refuses a selector whose estimated cost exceeds it when the object is stored.

Errors are values, as upstream's: :attr:`CompilationResult.error` (``"compilation failed: ..."``)
and the second element of :meth:`CompilationResult.device_matches`.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import cel as _cel

from app.plugins.dynamicresources.cel.library import FUNCTIONS, wrap_quantity, wrap_semver

#: resourceapi.CELSelectorExpressionMaxCost
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000
DEVICE_FIELDS = frozenset({"driver", "attributes", "capacity", "allowMultipleAllocations"})
#: the CEL library's own functions and macros (not operators, which start with ``_``/``@``/``!``)
_BUILTINS = frozenset(
    [
        "size",
        "contains",
        "startsWith",
        "endsWith",
        "matches",
        "has",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "bool",
        "dyn",
        "type",
        "duration",
        "timestamp",
        "all",
        "exists",
        "exists_one",
        "map",
        "filter",
        "getDate",
        "getDayOfMonth",
        "getDayOfWeek",
        "getDayOfYear",
        "getFullYear",
        "getHours",
        "getMilliseconds",
        "getMinutes",
        "getMonth",
        "getSeconds",
        "optional",
        "or",
        "orValue",
        "value",
        "hasValue",
    ]
)
_MACRO_VAR = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,")
_DEVICE_FIELD = re.compile(r"(?<![\w.])device\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)")
_DOMAIN_LOOKUP = re.compile(r"\b(attributes|capacity)\s*\[\s*(\"|')([^\"'\\]*)\2\s*\]")
_PARSE_PREFIX = re.compile(r"^Failed to parse expression '.*?': ", re.S)


def _type_name(value: Any) -> str:
    for kind, name in ((bool, "bool"), (int, "int"), (float, "double"), (str, "string"), (bytes, "bytes")):
        if isinstance(value, kind):
            return name
    if isinstance(value, list):
        return "list(dyn)"
    if isinstance(value, dict):
        return "map(dyn, dyn)"
    return "null_type" if value is None else type(value).__name__


def _skip_string(text: str, i: int) -> int:
    """The index after the string literal starting at ``text[i]`` (a quote, maybe raw)."""
    raw = i > 0 and text[i - 1] in "rR"
    quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else text[i]
    j = i + len(quote)
    while j < len(text):
        if not raw and text[j] == "\\":
            j += 2
            continue
        if text.startswith(quote, j):
            return j + len(quote)
        j += 1
    return j


def _bind_args(text: str, start: int) -> tuple[list[str], int] | None:
    """The top-level arguments of the call whose "(" is at ``start`` and the index after ")"."""
    depth, args, j, begin = 0, [], start, start + 1
    while j < len(text):
        c = text[j]
        if c in "\"'":
            j = _skip_string(text, j)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[begin:j])
                return args, j + 1
        elif c == "," and depth == 1:
            args.append(text[begin:j])
            begin = j + 1
        j += 1
    return None


def rewrite_bind(expression: str) -> str:
    """``cel.bind(v, init, body)`` (cel-go ``ext.Bindings``) as ``[init].map(v, body)[0]``."""
    out, i = [], 0
    while i < len(expression):
        c = expression[i]
        if c in "\"'":
            j = _skip_string(expression, i)
            out.append(expression[i:j])
            i = j
            continue
        match = re.match(r"cel\s*\.\s*bind\s*\(", expression[i:])
        if match and (i == 0 or not (expression[i - 1].isalnum() or expression[i - 1] in "_.")):
            parsed = _bind_args(expression, i + match.end() - 1)
            if parsed is not None and len(parsed[0]) == 3:
                var, init, body = parsed[0]
                out.append(f"[{rewrite_bind(init)}].map({var.strip()}, {rewrite_bind(body)})[0]")
                i = parsed[1]
                continue
        out.append(c)
        i += 1
    return "".join(out)


@dataclass
class CompilationResult:
    """A compiled selector (upstream ``CompilationResult``); ``error`` is set when it did not
    compile, with upstream's ``"compilation failed: ..."`` detail."""

    expression: str
    error: str | None = None
    program: Any = None
    attribute_domains: frozenset[str] = field(default_factory=frozenset)
    capacity_domains: frozenset[str] = field(default_factory=frozenset)

    def device_matches(self, device: Mapping[str, Any] | DeviceContext) -> tuple[bool, str | None]:
        """Evaluate against a device's CEL input (:func:`device_input`, or its
        :class:`DeviceContext`): ``(matches, None)`` or ``(False, error)`` with the runtime error
        (``"no such key: name"``, ...)."""
        if self.program is None:
            return False, self.error or "not compiled"
        context = device if isinstance(device, DeviceContext) else DeviceContext(dict(device))
        try:
            result = self.program.execute(context.context(self.attribute_domains, self.capacity_domains))
        except KeyError as exc:
            return False, f"no such key: {exc.args[0] if exc.args else exc}"
        except Exception as exc:  # the library raises builtin errors of every kind for runtime errors
            return False, str(exc)
        if not isinstance(result, bool):
            return False, f"CEL result of type {_type_name(result)} could not be converted to bool"
        return result, None


class DeviceContext:
    """A device's CEL input converted once into the library's evaluation context (with the DRA
    functions), per set of defaulted domains: converting the input is most of an evaluation's cost."""

    __slots__ = ("_contexts", "device")

    def __init__(self, device: dict[str, Any]) -> None:
        self.device = device
        self._contexts: dict[tuple[frozenset[str], frozenset[str]], Any] = {}

    def context(self, attribute_domains: frozenset[str], capacity_domains: frozenset[str]) -> Any:
        """The library's ``Context`` with the domains a program indexes by literal defaulted."""
        key = (attribute_domains, capacity_domains)
        found = self._contexts.get(key)
        if found is None:
            attributes, capacity = self.device["attributes"], self.device["capacity"]
            device = self.device
            if any(d not in attributes for d in attribute_domains) or any(d not in capacity for d in capacity_domains):
                device = {
                    **device,
                    "attributes": {**{d: {} for d in attribute_domains}, **attributes},
                    "capacity": {**{d: {} for d in capacity_domains}, **capacity},
                }
            found = self._contexts[key] = _cel.Context({"device": device}, FUNCTIONS)
        return found


def compile_expression(expression: str, consumable_capacity: bool = True) -> CompilationResult:
    """``CompileCELExpression`` with the v1.36 environment (``allowMultipleAllocations`` only with
    DRAConsumableCapacity)."""

    def failed(detail: str) -> CompilationResult:
        return CompilationResult(expression, error=f"compilation failed: {detail}")

    rewritten = rewrite_bind(expression)
    try:
        program = _cel.compile(rewritten)
    except Exception as exc:  # ValueError for syntax errors, others for what the parser refuses
        return failed(_PARSE_PREFIX.sub("", str(exc)).strip())
    refs = program.references()
    bound = set(_MACRO_VAR.findall(rewritten))
    for name in refs["variables"]:
        if name != "device" and name not in bound:
            return failed(f"ERROR: <input>:1:1: undeclared reference to '{name}' (in container '')")
    for name in refs["functions"]:
        if name[0].isalpha() and name not in _BUILTINS and name not in FUNCTIONS:
            return failed(f"ERROR: <input>:1:1: undeclared reference to '{name}' (in container '')")
    fields = DEVICE_FIELDS if consumable_capacity else DEVICE_FIELDS - {"allowMultipleAllocations"}
    for name in _DEVICE_FIELD.findall(rewritten):
        if name not in fields:
            return failed(f"ERROR: <input>:1:1: undefined field '{name}'")
    if not refs["variables"]:
        try:
            value = program.execute(dict(FUNCTIONS))
        except Exception:  # a constant that fails fails at evaluation, as cel-go's would
            value = True
        if not isinstance(value, bool):
            return failed(f"must evaluate to bool or the unknown type, not {_type_name(value)}")
    domains: dict[str, set[str]] = {"attributes": set(), "capacity": set()}
    for kind, _, domain in _DOMAIN_LOOKUP.findall(rewritten):
        domains[kind].add(domain)
    return CompilationResult(
        expression,
        program=program,
        attribute_domains=frozenset(domains["attributes"]),
        capacity_domains=frozenset(domains["capacity"]),
    )


def _qualified(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def device_input(driver: str, device: Mapping[str, Any]) -> dict[str, Any]:
    """The ``device`` variable for a ResourceSlice device (``DeviceMatches``' maps). Raises
    ``ValueError("attribute NAME: unsupported attribute value")`` as upstream's error."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, attr in (device.get("attributes") or {}).items():
        value: Any
        if "int" in attr:
            value = attr["int"]
        elif "bool" in attr:
            value = attr["bool"]
        elif "string" in attr:
            value = attr["string"]
        elif "version" in attr:
            value = wrap_semver(attr["version"])
        else:
            raise ValueError(f"attribute {name}: unsupported attribute value")
        domain, ident = _qualified(name, driver)
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in (device.get("capacity") or {}).items():
        domain, ident = _qualified(name, driver)
        capacity.setdefault(domain, {})[ident] = wrap_quantity(str(cap.get("value", "0")))
    return {
        "driver": driver,
        "allowMultipleAllocations": bool(device.get("allowMultipleAllocations")),
        "attributes": attributes,
        "capacity": capacity,
    }


class Cache:
    """Compiled selectors, least recently used dropped first (upstream ``cel.Cache``); only
    successful compilations are kept, as upstream's ``GetOrCompile``."""

    #: how many devices' converted inputs are kept (:meth:`device_context`)
    MAX_DEVICES = 8192

    def __init__(self, max_entries: int = 10, consumable_capacity: bool = True) -> None:
        self.max_entries = max_entries
        self.consumable_capacity = consumable_capacity
        self._entries: OrderedDict[str, CompilationResult] = OrderedDict()
        self._devices: OrderedDict[int, tuple[Mapping[str, Any], DeviceContext]] = OrderedDict()
        self._lock = threading.Lock()

    def device_context(self, driver: str, device: Mapping[str, Any]) -> DeviceContext:
        """The device's converted input, kept across allocations while the same device object
        (a ResourceSlice's entry, unchanged) is asked for. Raises ``ValueError`` as
        :func:`device_input`."""
        key = id(device)
        with self._lock:
            found = self._devices.get(key)
            if found is not None and found[0] is device:
                self._devices.move_to_end(key)
                return found[1]
        context = DeviceContext(device_input(driver, device))
        with self._lock:
            self._devices[key] = (device, context)
            while len(self._devices) > self.MAX_DEVICES:
                self._devices.popitem(last=False)
        return context

    def get_or_compile(self, expression: str) -> CompilationResult:
        """The compiled ``expression``, from the cache or compiled now."""
        with self._lock:
            cached = self._entries.get(expression)
            if cached is not None:
                self._entries.move_to_end(expression)
                return cached
        result = compile_expression(expression, self.consumable_capacity)
        if result.error is None:
            with self._lock:
                self._entries[expression] = result
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        return result

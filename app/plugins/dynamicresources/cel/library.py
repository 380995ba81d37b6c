"""The Kubernetes CEL libraries a DRA selector may call that the CEL library lacks, as custom
functions: v1.36.3's ``k8s.io/apiserver/pkg/cel/library`` ``quantity.go`` (``quantity``,
``isQuantity``, ``sign``, ``isInteger``, ``asInteger``, ``asApproximateFloat``, ``add``, ``sub``,
``isGreaterThan``, ``isLessThan``, ``compareTo``), ``semverlib.go`` (``semver``, ``isSemver``,
``major``, ``minor``, ``patch`` and the comparisons), ``regex.go`` (``find``, ``findAll``),
``lists.go`` (``isSorted``, ``sum``, ``min``, ``max``, ``indexOf``, ``lastIndexOf``) and cel-go's
``ext.Strings`` (``split``, ``lowerAscii``, ``upperAscii``, ``replace``, ``trim``, ``join``,
``substring``, ``charAt``, ``indexOf``, ``lastIndexOf``).

Quantities and semantic versions cross into CEL as one-key maps (``{"@quantity": "1Gi"}``,
``{"@semver": "1.0.0"}``), since the library's values are plain CEL types; the functions here
recognise them. A function applied to a value it has no overload for raises ``TypeError`` with
cel-go's ``no such overload`` wording.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from functools import lru_cache
from typing import Any

from app.plugins.dynamicresources.cel.quantity import QuantityError, format_quantity, quantity

QUANTITY_KEY = "@quantity"
SEMVER_KEY = "@semver"
#: semver 2.0.0 (github.com/blang/semver/v4 ``Parse``, strict: no leading zeros, no "v")
_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)


def _no_overload(name: str) -> TypeError:
    return TypeError(f"no such overload: {name}")


def wrap_quantity(text: str) -> dict[str, str]:
    """A quantity as the map the CEL programs see: its exact value as a plain decimal, so that
    equal quantities are equal maps (``quantity("1Ki") == quantity("1024")``, as cel-go's
    ``Quantity.Equal``). Raises ``QuantityError``."""
    value = quantity(text).value.normalize()
    return {QUANTITY_KEY: format(value, "f")}


def wrap_semver(text: str) -> dict[str, str]:
    """A semantic version as the map the CEL programs see."""
    return {SEMVER_KEY: text}


def _is(value: Any, key: str) -> bool:
    return isinstance(value, dict) and len(value) == 1 and key in value


@lru_cache(maxsize=4096)
def parse_semver(text: str) -> tuple[int, int, int, tuple[str, ...]]:
    """``semver.Parse``: (major, minor, patch, pre-release identifiers). Raises ``ValueError``."""
    match = _SEMVER.fullmatch(text)
    if match is None:
        raise ValueError(f"could not parse {text!r} as semver")
    pre = tuple(match.group(4).split(".")) if match.group(4) else ()
    return int(match.group(1)), int(match.group(2)), int(match.group(3)), pre


def _pre_key(part: str) -> tuple[int, int, str]:
    return (0, int(part), "") if part.isdigit() else (1, 0, part)


def _semver_cmp(a: str, b: str) -> int:
    va, vb = parse_semver(a), parse_semver(b)
    if va[:3] != vb[:3]:
        return -1 if va[:3] < vb[:3] else 1
    if va[3] == vb[3]:
        return 0
    if not va[3] or not vb[3]:
        return 1 if not va[3] else -1
    ka, kb = [_pre_key(p) for p in va[3]], [_pre_key(p) for p in vb[3]]
    return -1 if ka < kb else 1


def _q(value: Any, name: str) -> Decimal:
    if not _is(value, QUANTITY_KEY):
        raise _no_overload(name)
    return quantity(value[QUANTITY_KEY]).value


def _compare(a: Any, b: Any, name: str) -> int:
    if _is(a, SEMVER_KEY) and _is(b, SEMVER_KEY):
        return _semver_cmp(a[SEMVER_KEY], b[SEMVER_KEY])
    qa, qb = _q(a, name), _q(b, name)
    return (qa > qb) - (qa < qb)


def _quantity(text: Any) -> dict[str, str]:
    if not isinstance(text, str):
        raise _no_overload("quantity")
    try:
        quantity(text)
    except QuantityError as exc:
        raise ValueError(f"quantities must match the regular expression: {exc}") from None
    return wrap_quantity(text)


def _is_quantity(text: Any) -> bool:
    try:
        quantity(text)
    except (QuantityError, TypeError):
        return False
    return isinstance(text, str)


def _semver(text: Any, normalize: bool = False) -> dict[str, str]:
    if not isinstance(text, str):
        raise _no_overload("semver")
    if normalize:
        text = _normalize_semver(text)
    parse_semver(text)
    return wrap_semver(text)


def _normalize_semver(text: str) -> str:
    """``semver(s, true)``: a leading "v" dropped, missing minor/patch added, leading zeros cut."""
    match = re.fullmatch(r"v?([0-9.]*)(.*)", text, re.S)
    core, rest = (match.group(1), match.group(2)) if match else (text, "")
    parts = [str(int(p)) if p.isdigit() else p for p in core.split(".")]
    parts += ["0"] * (3 - len(parts))
    return ".".join(parts) + rest


def _is_semver(text: Any, normalize: bool = False) -> bool:
    try:
        _semver(text, normalize)
    except (ValueError, TypeError):
        return False
    return True


def _arith(a: Any, b: Any, sign: int, name: str) -> dict[str, str]:
    qa = quantity(a[QUANTITY_KEY]) if _is(a, QUANTITY_KEY) else None
    if qa is None:
        raise _no_overload(name)
    other = Decimal(b) if isinstance(b, int) and not isinstance(b, bool) else _q(b, name)
    return wrap_quantity(format_quantity(qa.value + sign * other, qa.format))


def _version_part(index: int, name: str) -> Callable[[Any], int]:
    def part(value: Any) -> int:
        if not _is(value, SEMVER_KEY):
            raise _no_overload(name)
        parsed = parse_semver(value[SEMVER_KEY])
        return (parsed[0], parsed[1], parsed[2])[index]

    return part


def _as_integer(value: Any) -> int:
    v = _q(value, "asInteger")
    if v != v.to_integral_value() or not -(2**63) <= v < 2**63:
        raise ValueError("cannot convert value to integer")
    return int(v)


def _sign(value: Any) -> int:
    v = _q(value, "sign")
    return (v > 0) - (v < 0)


def _find(text: Any, pattern: Any) -> str:
    match = re.search(pattern, text)
    return match.group(0) if match else ""


def _index_of(target: Any, item: Any, start: int = 0) -> int:
    if isinstance(target, str):
        return target.find(item, start)
    try:
        return list(target).index(item)
    except ValueError:
        return -1


def _last_index_of(target: Any, item: Any) -> int:
    if isinstance(target, str):
        return target.rfind(item)
    items = list(target)
    return max((i for i, x in enumerate(items) if x == item), default=-1)


def _substring(text: str, start: int, end: int | None = None) -> str:
    if start < 0 or start > len(text) or (end is not None and (end < start or end > len(text))):
        raise IndexError(f"index out of range: {start}")
    return text[start:end]


def _split(text: str, sep: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    return text.split(sep, limit - 1) if limit > 0 else text.split(sep)


#: name -> implementation; the CEL library passes a member call's receiver as the first argument
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "sign": _sign,
    "isInteger": lambda v: _q(v, "isInteger") == _q(v, "isInteger").to_integral_value(),
    "asInteger": _as_integer,
    "asApproximateFloat": lambda v: float(_q(v, "asApproximateFloat")),
    "add": lambda a, b: _arith(a, b, 1, "add"),
    "sub": lambda a, b: _arith(a, b, -1, "sub"),
    "isGreaterThan": lambda a, b: _compare(a, b, "isGreaterThan") > 0,
    "isLessThan": lambda a, b: _compare(a, b, "isLessThan") < 0,
    "compareTo": lambda a, b: _compare(a, b, "compareTo"),
    "semver": _semver,
    "isSemver": _is_semver,
    "major": _version_part(0, "major"),
    "minor": _version_part(1, "minor"),
    "patch": _version_part(2, "patch"),
    "find": _find,
    "findAll": lambda text, pattern, limit=-1: re.findall(pattern, text)[: None if limit < 0 else limit],
    "isSorted": lambda items: list(items) == sorted(items),
    "sum": lambda items: sum(items),
    "min": lambda items: min(items),
    "max": lambda items: max(items),
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "split": _split,
    "lowerAscii": lambda s: "".join(c.lower() if c.isascii() else c for c in s),
    "upperAscii": lambda s: "".join(c.upper() if c.isascii() else c for c in s),
    "replace": lambda s, old, new, n=-1: s.replace(old, new, n),
    "trim": lambda s: s.strip(),
    "join": lambda items, sep="": sep.join(items),
    "substring": _substring,
    "charAt": lambda s, i: s[i] if 0 <= i < len(s) else ("" if i == len(s) else _substring(s, i)),
}

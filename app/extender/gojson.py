"""Go ``encoding/json`` decoding rules that kube-scheduler's extender types depend on.

The ``k8s.io/kube-scheduler/extender/v1`` structs have no json tags, and Go's decoder matches
object keys to struct fields case-insensitively: an exact match is preferred, otherwise the first
field whose name equals the key under Unicode case folding; when two keys land on one field the
last one in document order wins (Go's ``encoding/json``). Unknown keys are ignored and
``null`` into a non-pointer field leaves the zero value.

This module holds those rules once, for the pydantic contract models (:mod:`app.extender`) and for
the fast decoder (:mod:`app.extender.codec`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def match_field(key: str, names: Sequence[str], folded: Mapping[str, str]) -> str | None:
    """Return the field name that Go's decoder would pick for ``key``, or ``None`` if unknown.

    ``names`` are the canonical field names (exact match wins); ``folded`` maps each name's
    ``casefold()`` to the first canonical name with that folding (declaration order, as Go's
    ``encoding/json`` field cache does).
    """
    if key in names:
        return key
    return folded.get(key.casefold())


def fold_index(names: Sequence[str]) -> dict[str, str]:
    """Build the ``casefold() -> canonical name`` index used by :func:`match_field`."""
    index: dict[str, str] = {}
    for name in names:
        index.setdefault(name.casefold(), name)
    return index


def fold_keys(obj: Mapping[str, Any], names: Sequence[str], folded: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Rename the keys of a decoded JSON object to canonical field names, as Go would match them.

    Keys that match no field are dropped (Go ignores unknown keys). When several keys match the
    same field, the one that comes last in document order wins (Python dicts keep document order;
    a key repeated verbatim was already collapsed to its last value by the JSON parser).
    """
    index = folded if folded is not None else fold_index(names)
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = match_field(key, names, index)
        if name is not None:
            out[name] = value
    return out

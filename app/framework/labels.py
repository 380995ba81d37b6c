"""Label and node selectors, as the API machinery matches them.

- The string form (``kubectl -l``): ``key``, ``key=value``, ``key!=value``, comma-separated, every
  term must match (``k8s.io/apimachinery/pkg/labels/selector.go``, the equality-based subset):
  :func:`parse_selector`, :func:`matches`.
- ``metav1.LabelSelector`` (pod affinity terms, topology spread constraints):
  :func:`label_selector_matches`, following ``metav1.LabelSelectorAsSelector``: a ``None``
  selector matches nothing, an empty one everything; ``In``, ``NotIn`` (also true when the label
  is absent), ``Exists``, ``DoesNotExist``.
- ``v1.NodeSelector`` (required node affinity) and ``v1.NodeSelectorTerm`` (preferred terms):
  :func:`node_selector_matches`, :func:`node_selector_term_matches`, following
  ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go``: terms are ORed,
  requirements within a term ANDed, a term with no requirement matches nothing, ``Gt``/``Lt``
  compare the label's value and the one given value as 64-bit integers, ``matchFields`` knows
  only ``metadata.name`` (``In``/``NotIn``); an invalid requirement makes its term match nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from app.framework import objects

_INT64 = re.compile(r"^[+-]?[0-9]+$")


def parse_selector(selector: str) -> list[tuple[str, str, str | None]]:
    """``key``, ``key=value``, ``key!=value``, comma-separated (all must match) ->
    ``(key, op, value)`` with op ``exists``, ``=`` or ``!=``. Raises ``ValueError`` for an empty term."""
    out: list[tuple[str, str, str | None]] = []
    for term in (t.strip() for t in selector.split(",")) if selector.strip() else ():
        if not term:
            raise ValueError(f"empty term in label selector {selector!r}")
        if "!=" in term:
            key, value = term.split("!=", 1)
            out.append((key.strip(), "!=", value.strip()))
        elif "=" in term:
            key, value = term.split("=", 1)
            out.append((key.strip(), "=", value.strip().lstrip("=")))
        else:
            out.append((term, "exists", None))
    return out


def matches(selector: Sequence[tuple[str, str, str | None]], labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` satisfy every term of ``selector`` (:func:`parse_selector`)."""
    for key, op, value in selector:
        have = labels.get(key)
        if op == "exists" and have is None:
            return False
        if op == "=" and have != value:
            return False
        if op == "!=" and have == value:
            return False
    return True


def label_selector_matches(selector: objects.LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` satisfy ``selector`` (``None``: matches nothing; empty: everything)."""
    if selector is None:
        return False
    for key, value in (selector.match_labels or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.match_expressions or ():
        if not _label_requirement(req.operator or "", labels.get(req.key or ""), req.values or ()):
            return False
    return True


def _label_requirement(op: str, have: str | None, values: Sequence[str]) -> bool:
    if op == "In":
        return have is not None and have in values
    if op == "NotIn":
        return have is None or have not in values
    if op == "Exists":
        return have is not None
    if op == "DoesNotExist":
        return have is None
    return False  # an unknown operator: LabelSelectorAsSelector refuses the selector


def node_selector_matches(selector: objects.NodeSelector | None, name: str, labels: Mapping[str, str]) -> bool:
    """Whether the node ``name`` with ``labels`` matches one of ``selector``'s terms (``None``:
    no requirement, so every node matches; a selector with no term matches no node). ``name``
    ``""`` is a node without a name, as volume code's ``CheckNodeAffinity`` builds one: its
    ``matchFields`` are not compared (v1.30 component-helpers nodeaffinity ``extractNodeFields``
    gives such a node no fields, and a term's fields are matched only against non-empty ones)."""
    if selector is None:
        return True
    return any(node_selector_term_matches(t, name, labels) for t in selector.node_selector_terms or ())


def node_selector_term_matches(term: objects.NodeSelectorTerm, name: str, labels: Mapping[str, str]) -> bool:
    """Whether the node matches every requirement of ``term`` (an empty term matches nothing; a
    malformed ``matchFields`` requirement, nothing; with ``name`` ``""``, ``matchFields`` are not
    compared, as :func:`node_selector_matches` says)."""
    expressions, fields = term.match_expressions or (), term.match_fields or ()
    if not expressions and not fields:
        return False
    for req in expressions:
        if not _node_requirement(req, labels.get(req.key or "")):
            return False
    for req in fields:
        if req.key != "metadata.name" or req.operator not in ("In", "NotIn") or len(req.values or ()) != 1:
            return False  # nodeaffinity.go: only metadata.name, In/NotIn with one value
        if name and (name in (req.values or ())) != (req.operator == "In"):
            return False
    return True


def _node_requirement(req: objects.NodeSelectorRequirement, have: str | None) -> bool:
    op, values = req.operator or "", req.values or ()
    if op in ("In", "NotIn", "Exists", "DoesNotExist"):
        if op in ("In", "NotIn") and not values:
            return False  # invalid: In/NotIn need values
        if op in ("Exists", "DoesNotExist") and values:
            return False  # invalid: Exists/DoesNotExist take none
        return _label_requirement(op, have, values)
    if op in ("Gt", "Lt"):
        if len(values) != 1 or have is None:
            return False
        if not (_INT64.match(values[0]) and _INT64.match(have)):
            return False  # strconv.ParseInt: no spaces, no underscores
        want, value = int(values[0]), int(have)
        return value > want if op == "Gt" else value < want
    return False


__all__ = [
    "label_selector_matches",
    "matches",
    "node_selector_matches",
    "node_selector_term_matches",
    "parse_selector",
]

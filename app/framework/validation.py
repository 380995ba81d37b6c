"""The name and label checks of k8s.io/apimachinery/pkg/util/validation/validation.go, with
upstream's messages (``RegexError``, ``IsDNS1123Subdomain``, ``IsQualifiedName``,
``IsValidLabelValue``): one place for every plugin that validates a label key or value the way
kube-scheduler's API validation and ``labels.NewRequirement`` do. Each check returns the list of
problems, empty when the value is valid.

Also the two error texts built on them: :func:`selector_error` (``metav1.LabelSelectorAsSelector``,
k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go, with ``labels.NewRequirement`` of
pkg/labels/selector.go) and :func:`aggregate` (``utilerrors.NewAggregate(...).Error()``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from app.framework import objects

QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = f"({QUALIFIED_NAME_FMT})?"
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = f"{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*"
_QUALIFIED_NAME = re.compile(QUALIFIED_NAME_FMT)
_LABEL_VALUE = re.compile(LABEL_VALUE_FMT)
_DNS1123_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN_FMT)
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``RegexError``: ``msg`` with the examples and the regular expression it failed."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


_QUALIFIED_NAME_ERROR = regex_error(_QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
_LABEL_VALUE_ERROR = regex_error(_LABEL_VALUE_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
_DNS1123_SUBDOMAIN_ERROR = regex_error(_DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com")


def _bounded_match(value: str, most: int, pattern: re.Pattern[str], error: str) -> list[str]:
    """The two checks apimachinery's validators make in this order: a length of at most ``most``
    characters (``MaxLenError``), then ``pattern`` over the whole value (``error``)."""
    errs = []
    if len(value) > most:
        errs.append(f"must be no more than {most} characters")
    if not pattern.fullmatch(value):
        errs.append(error)
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: at most 253 characters of lowercase RFC 1123 labels joined by ``.``."""
    return _bounded_match(value, 253, _DNS1123_SUBDOMAIN, _DNS1123_SUBDOMAIN_ERROR)


def is_qualified_name(value: str) -> list[str]:
    """``IsQualifiedName``: a label key, ``[prefix/]name`` (a DNS subdomain prefix; a name of at most
    63 alphanumerics, ``-``, ``_`` or ``.``, starting and ending alphanumeric)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + _QUALIFIED_NAME_ERROR
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.fullmatch(name):
        errs.append("name part " + _QUALIFIED_NAME_ERROR)
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """``IsValidLabelValue``: empty, or at most 63 alphanumerics, ``-``, ``_`` or ``.``, starting and
    ending alphanumeric."""
    return _bounded_match(value, 63, _LABEL_VALUE, _LABEL_VALUE_ERROR)


# -- errors ---------------------------------------------------------------------------------------


def aggregate(errors: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()`` (k8s.io/apimachinery/pkg/util/errors/errors.go):
    one error's message as is; several as ``[a, b, ...]``, a message seen before dropped (a set of
    seen messages), and no brackets when only one distinct message is left; ``""`` for none."""
    if len(errors) == 1:
        return errors[0]
    distinct = list(dict.fromkeys(errors))
    return "[" + ", ".join(distinct) + "]" if len(distinct) > 1 else "".join(distinct)


def _go_quote(value: str) -> str:
    """Go's ``%q`` of a string (close enough: JSON escaping of a printable string is the same)."""
    return json.dumps(value, ensure_ascii=False)


def _go_string_slice(values: Sequence[str] | None) -> str:
    """Go's ``%#v`` of a ``[]string``."""
    if not values:
        return "[]string(nil)" if values is None else "[]string{}"
    return "[]string{" + ", ".join(_go_quote(v) for v in values) + "}"


#: the ``metav1.LabelSelectorOperator`` values ``LabelSelectorAsSelector`` accepts
LABEL_SELECTOR_OPERATORS = frozenset(("In", "NotIn", "Exists", "DoesNotExist"))


def _requirement_errors(key: str, op: str, values: list[str] | None) -> list[str]:
    """``labels.NewRequirement``'s field errors (``validateLabelKey``, the operator's values
    check, ``validateLabelValue`` per value), rendered as ``field.Error.Error()``. ``op`` is
    ``In``, ``NotIn``, ``Exists`` or ``DoesNotExist`` (a ``matchLabels`` pair is ``In`` with its
    one value: the same checks as ``selection.Equals`` then)."""
    out: list[str] = []
    key_errs = is_qualified_name(key)
    if key_errs:
        out.append(f"key: Invalid value: {_go_quote(key)}: {'; '.join(key_errs)}")
    if op in ("In", "NotIn"):
        if not values:
            out.append(
                f"values: Invalid value: {_go_string_slice(values)}: "
                "for 'in', 'notin' operators, values set can't be empty"
            )
    elif values:
        out.append(
            f"values: Invalid value: {_go_string_slice(values)}: values set must be empty for exists and does not exist"
        )
    for i, value in enumerate(values or ()):
        errs = is_valid_label_value(value)
        if errs:
            out.append(f"values[{i}][{key}]: Invalid value: {_go_quote(value)}: {'; '.join(errs)}")
    return out


def selector_error(selector: objects.LabelSelector | None) -> str | None:
    """The error ``metav1.LabelSelectorAsSelector`` returns for ``selector``, else ``None``
    (``None``, ``{}`` and every valid selector).

    ``matchLabels`` first, then ``matchExpressions`` in order; the first requirement
    ``labels.NewRequirement`` refuses gives the message (its errors aggregated, as
    ``ErrorList.ToAggregate``), an unknown operator ``"<op>" is not a valid label selector
    operator``. An expression's values are passed as ``append([]string(nil), values...)``, so
    empty values print as ``[]string(nil)``."""
    if selector is None:
        return None
    for key, value in (selector.match_labels or {}).items():
        errs = _requirement_errors(key, "In", [value])
        if errs:
            return aggregate(errs)
    for expr in selector.match_expressions or ():
        op = expr.operator or ""
        if op not in LABEL_SELECTOR_OPERATORS:
            return f"{_go_quote(op)} is not a valid label selector operator"
        errs = _requirement_errors(expr.key or "", op, list(expr.values) if expr.values else None)
        if errs:
            return aggregate(errs)
    return None


__all__ = [
    "LABEL_SELECTOR_OPERATORS",
    "aggregate",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "regex_error",
    "selector_error",
]

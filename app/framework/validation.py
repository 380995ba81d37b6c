"""The name and label checks of k8s.io/apimachinery/pkg/util/validation/validation.go, with
upstream's messages (``RegexError``, ``IsDNS1123Subdomain``, ``IsQualifiedName``,
``IsValidLabelValue``): one place for every plugin that validates a label key or value the way
kube-scheduler's API validation and ``labels.NewRequirement`` do.

Each check returns the list of problems, empty when the value is valid.
"""

from __future__ import annotations

import re

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


__all__ = ["is_dns1123_subdomain", "is_qualified_name", "is_valid_label_value", "regex_error"]

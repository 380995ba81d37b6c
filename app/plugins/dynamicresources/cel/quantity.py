"""Quantities as the DRA allocator and CEL environment compute with them:
``k8s.io/apimachinery/pkg/api/resource/quantity.go`` (``ParseQuantity``, ``Cmp``, ``Add``,
``String``'s canonical form from ``CanonicalizeBytes``).

A quantity is kept as its exact :class:`~decimal.Decimal` value and its format (``DecimalSI``,
``BinarySI`` or ``DecimalExponent``, from the suffix it was written with), so that a value the
allocator writes back (``consumedCapacity``) reads as upstream's ``Quantity.String()`` does:
``"1Gi"``, ``"1536Mi"``, ``"500m"``, ``"2k"``.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal
from functools import lru_cache
from typing import NamedTuple

from app.framework.resources import QuantityError, parse_quantity

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIX = {0: "", 10: "Ki", 20: "Mi", 30: "Gi", 40: "Ti", 50: "Pi", 60: "Ei"}
_BINARY = re.compile(r"[KMGTPE]i$")
_EXPONENT = re.compile(r"[0-9.][eE][+-]?[0-9]+$")


class Quantity(NamedTuple):
    """A parsed quantity: its exact value and the format ``String()`` writes it in."""

    value: Decimal
    format: str

    def __str__(self) -> str:
        return format_quantity(self.value, self.format)


__all__ = ["BINARY_SI", "DECIMAL_SI", "Quantity", "QuantityError", "format_quantity", "quantity"]


@lru_cache(maxsize=4096)
def quantity(text: str | int | float) -> Quantity:
    """``resource.ParseQuantity``: the quantity and its format. Raises :class:`QuantityError`."""
    value = parse_quantity(text)
    stripped = text.strip() if isinstance(text, str) else ""
    if _BINARY.search(stripped):
        fmt = BINARY_SI
    elif _EXPONENT.search(stripped):
        fmt = DECIMAL_EXPONENT
    else:
        fmt = DECIMAL_SI
    return Quantity(value, fmt)


def _decimal_canonical(value: Decimal, fmt: str) -> str:
    """``AsCanonicalBytes``: the mantissa at the largest power of 1000 (nano up to exa) that
    keeps it an integer; values below a nano are rounded up to one."""
    scaled = (value * Decimal(10) ** 9).to_integral_value(rounding=ROUND_CEILING)
    mantissa, exponent = int(scaled), -9
    if mantissa == 0:
        return "0"
    while exponent < 18 and mantissa % 1000 == 0:
        mantissa //= 1000
        exponent += 3
    if fmt == DECIMAL_EXPONENT:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_DECIMAL_SUFFIX[exponent]}"


def format_quantity(value: Decimal, fmt: str = DECIMAL_SI) -> str:
    """``Quantity.String()`` (``CanonicalizeBytes``) for ``value`` in format ``fmt``."""
    if fmt == BINARY_SI and not (-1024 < value < 1024) and value == value.to_integral_value():
        mantissa, exponent = int(value), 0
        while exponent < 60 and mantissa % 1024 == 0:
            mantissa //= 1024
            exponent += 10
        return f"{mantissa}{_BINARY_SUFFIX[exponent]}"
    return _decimal_canonical(value, DECIMAL_EXPONENT if fmt == DECIMAL_EXPONENT else DECIMAL_SI)

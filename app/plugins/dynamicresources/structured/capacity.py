"""Consumable capacity, as v1.36.3's ``structured/internal/incubating/consumable_capacity.go``
(``CmpRequestOverCapacity``, ``GetConsumedCapacityFromRequest``, the request policies) and the
``ConsumedCapacity`` arithmetic of ``structured/schedulerapi/types.go``.

Quantities are :class:`~app.plugins.dynamicresources.cel.quantity.Quantity` (exact value and
format); a consumed capacity is ``{capacity name: Quantity}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal
from typing import Any

from app.plugins.dynamicresources.cel.quantity import BINARY_SI, Quantity, format_quantity, quantity

ConsumedCapacity = dict[str, Decimal]


def _q(value: Any) -> Quantity:
    return quantity(value if isinstance(value, str | int | float) else str(value))


def _int_value(value: Decimal) -> int:
    """``Quantity.Value()``: rounded up."""
    return int(value.to_integral_value(rounding=ROUND_CEILING))


def _round_up_range(requested: Quantity, valid_range: Mapping[str, Any]) -> Quantity:
    minimum = _q(valid_range["min"])
    if requested.value < minimum.value:
        return minimum
    if valid_range.get("step") is None:
        return requested
    step, low = _int_value(_q(valid_range["step"]).value), _int_value(minimum.value)
    added = _int_value(requested.value) - low
    n = added // step + (1 if added % step else 0) if added >= 0 else -((-added) // step)
    value = Decimal(low + step * n)
    return Quantity(value, BINARY_SI)


def _round_up_valid_values(requested: Quantity, valid_values: list[Any]) -> Quantity:
    for valid in valid_values:
        q = _q(valid)
        if requested.value <= q.value:
            return q
    return requested


def _fill_empty_request(capacity: Mapping[str, Any]) -> Quantity:
    policy = capacity.get("requestPolicy") or {}
    if policy.get("default") is not None:
        return _q(policy["default"])
    return _q(capacity.get("value", "0"))


def calculate_consumed_capacity(requested: Quantity | None, capacity: Mapping[str, Any]) -> Quantity:
    """``calculateConsumedCapacity``: the request rounded up by the capacity's policy."""
    if requested is None:
        return _fill_empty_request(capacity)
    policy = capacity.get("requestPolicy")
    if policy is None:
        return requested
    valid_range = policy.get("validRange")
    if valid_range is not None and valid_range.get("min") is not None:
        return _round_up_range(requested, valid_range)
    if policy.get("validValues") is not None:
        return _round_up_valid_values(requested, policy["validValues"])
    return requested


def _violates_policy(requested: Quantity, policy: Mapping[str, Any] | None) -> bool:
    if policy is None:
        return False
    if policy.get("default") is not None and requested.value == _q(policy["default"]).value:
        return False
    valid_range = policy.get("validRange")
    if valid_range is not None:
        if valid_range.get("max") is not None and requested.value > _q(valid_range["max"]).value:
            return True
        if valid_range.get("step") is not None:
            step = _int_value(_q(valid_range["step"]).value)
            low = _int_value(_q(valid_range["min"]).value) if valid_range.get("min") is not None else 0
            added = _int_value(requested.value) - low
            if step and abs(added) % step != 0:
                return True
        return False
    valid_values = policy.get("validValues") or []
    if valid_values:
        return all(requested.value != _q(v).value for v in valid_values)
    return False


def _requests(request_capacity: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (request_capacity or {}).get("requests") or {}


def cmp_request_over_capacity(
    current: Mapping[str, Decimal],
    request_capacity: Mapping[str, Any] | None,
    capacities: Mapping[str, Any],
    allocating: Mapping[str, Decimal] | None,
) -> bool | None:
    """``CmpRequestOverCapacity``: whether the request fits the device's capacities beside what
    is consumed and being allocated; ``None`` (upstream's error) when it names a capacity the
    device lacks."""
    requests = _requests(request_capacity)
    if any(name not in capacities for name in requests):
        return None
    for name, capacity in capacities.items():
        requested = _q(requests[name]) if name in requests else None
        consumed = calculate_consumed_capacity(requested, capacity)
        if _violates_policy(consumed, capacity.get("requestPolicy")):
            return False
        total = current.get(name, Decimal(0)) + consumed.value
        if allocating and name in allocating:
            total += allocating[name]
        if total > _q(capacity.get("value", "0")).value:
            return False
    return True


def consumed_capacity_from_request(
    request_capacity: Mapping[str, Any] | None, capacities: Mapping[str, Any]
) -> dict[str, Quantity]:
    """``GetConsumedCapacityFromRequest``: what a share consumes of each capacity."""
    requests = _requests(request_capacity)
    return {
        name: calculate_consumed_capacity(_q(requests[name]) if name in requests else None, capacity)
        for name, capacity in capacities.items()
    }


def add_capacity(into: ConsumedCapacity, added: Mapping[str, Quantity]) -> None:
    """``ConsumedCapacity.Add``."""
    for name, q in added.items():
        into[name] = into.get(name, Decimal(0)) + q.value


def sub_capacity(into: ConsumedCapacity, removed: Mapping[str, Quantity]) -> None:
    """``ConsumedCapacity.Sub`` (absent entries ignored)."""
    for name, q in removed.items():
        if name in into:
            into[name] -= q.value


def quantity_string(q: Quantity) -> str:
    """The quantity as ``Quantity.String()`` writes it."""
    return format_quantity(q.value, q.format)


def counter_value(counter: Mapping[str, Any]) -> Decimal:
    """A counter's ``value`` (``{"value": "4Gi"}``) as a number."""
    return _q(counter.get("value", "0")).value

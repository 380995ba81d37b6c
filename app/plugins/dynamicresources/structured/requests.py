"""Requests and subrequests seen alike, as v1.36.3's ``requestAccessor`` in
``structured/internal/incubating/allocator_incubating.go``, and the constraints
(``matchAttributeConstraint`` there, ``distinctAttributeConstraint`` in ``constraint.go``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.plugins.dynamicresources.structured.api import DeviceID, Object

EXACT_COUNT = "ExactCount"
ALL = "All"


class RequestAccessor:
    """A claim's request (``exactly``) or one of its ``firstAvailable`` subrequests."""

    __slots__ = ("_body", "is_sub_request", "name")

    def __init__(self, request: Object, sub_request: bool) -> None:
        self.name: str = request.get("name", "")
        self.is_sub_request = sub_request
        self._body: Mapping[str, Any] = request if sub_request else (request.get("exactly") or {})

    @property
    def device_class_name(self) -> str:
        return str(self._body.get("deviceClassName") or "")

    @property
    def allocation_mode(self) -> str:
        return str(self._body.get("allocationMode") or EXACT_COUNT)

    @property
    def count(self) -> int:
        count = self._body.get("count")
        return 1 if count is None else int(count)

    @property
    def admin_access(self) -> bool:
        return not self.is_sub_request and bool(self._body.get("adminAccess"))

    @property
    def has_admin_access(self) -> bool:
        return not self.is_sub_request and self._body.get("adminAccess") is not None

    @property
    def selectors(self) -> list[Object]:
        return list(self._body.get("selectors") or [])

    @property
    def tolerations(self) -> list[Object] | None:
        tolerations = self._body.get("tolerations")
        return list(tolerations) if tolerations else None

    @property
    def capacity(self) -> Mapping[str, Any] | None:
        capacity: Mapping[str, Any] | None = self._body.get("capacity")
        return capacity


def lookup_attribute(device: Object, device_id: DeviceID, name: str) -> Object | None:
    """``lookupAttribute``: the fully qualified attribute, or the unqualified one when the domain
    is the device's driver."""
    attributes = device.get("attributes") or {}
    if name in attributes:
        found: Object = attributes[name]
        return found
    domain, sep, ident = name.partition("/")
    if not sep or domain != device_id[0]:
        return None
    attr: Object | None = attributes.get(ident)
    return attr


_VALUE_KINDS = ("string", "int", "bool", "version")


def _value(attribute: Object) -> tuple[str, Any] | None:
    for kind in _VALUE_KINDS:
        if attribute.get(kind) is not None:
            return kind, attribute[kind]
    return None


@dataclass
class Constraint:
    """A ``matchAttribute`` (``distinct`` False) or ``distinctAttribute`` constraint of a claim."""

    request_names: frozenset[str]
    attribute_name: str
    distinct: bool
    attribute: tuple[str, Any] | None = None
    num_devices: int = 0
    attributes: dict[str, tuple[str, Any] | None] = field(default_factory=dict)

    def _applies(self, request_name: str, sub_request_name: str) -> bool:
        if not self.request_names:
            return True
        if not sub_request_name:
            return request_name in self.request_names
        return request_name in self.request_names or f"{request_name}/{sub_request_name}" in self.request_names

    def add(self, request_name: str, sub_request_name: str, device: Object, device_id: DeviceID) -> bool:
        """Whether the device may join the set; if so, it is counted."""
        if not self._applies(request_name, sub_request_name):
            return True
        attribute = lookup_attribute(device, device_id, self.attribute_name)
        if attribute is None:
            return False
        value = _value(attribute)
        if self.num_devices == 0:
            if self.distinct:
                self.attributes[request_name] = value
            else:
                self.attribute = value
            self.num_devices = 1
            return True
        if self.distinct:
            if value is None or any(
                v is not None and v[0] == value[0] and v[1] == value[1] for v in self.attributes.values()
            ):
                return False
            self.attributes[request_name] = value
        elif value is None or self.attribute is None or value[0] != self.attribute[0] or value[1] != self.attribute[1]:
            return False
        self.num_devices += 1
        return True

    def remove(self, request_name: str, sub_request_name: str) -> None:
        """Undo one successful :meth:`add`."""
        if not self._applies(request_name, sub_request_name):
            return
        if self.distinct:
            self.attributes.pop(request_name, None)
        self.num_devices -= 1

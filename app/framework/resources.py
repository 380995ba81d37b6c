"""Kubernetes resource quantities and pod requests, in the units kube-scheduler computes with.

- cpu: millicores (``"250m"`` -> 250, ``"2"`` -> 2000)
- memory, ephemeral-storage, hugepages-*: bytes (``"256Mi"`` -> 268435456)
- pods and extended resources (``example.com/gpu``): plain integer counts

Parsing follows ``k8s.io/apimachinery/pkg/api/resource/quantity.go`` (``ParseQuantity``); the
integer conversions follow ``Quantity.Value`` and ``Quantity.MilliValue``, which round up (away
from zero). Pod requests follow ``k8s.io/component-helpers/resource/helpers.go``
(``PodRequests``/``AggregateContainerRequests``): the sum over containers and restartable init
containers (sidecars), at least the largest regular init container plus the sidecars started
before it, plus ``spec.overhead``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from functools import lru_cache

from app.framework import validation
from app.framework.errors import SchedulerExtenderError

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"

#: ``DefaultMilliCPURequest`` in pkg/scheduler/util/pod_resources.go: 0.1 core, used for scoring
#: containers that request no cpu.
DEFAULT_MILLI_CPU_REQUEST = 100
#: ``DefaultMemoryRequest`` in pkg/scheduler/util/pod_resources.go: 200 MiB.
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

_QUANTITY = re.compile(
    r"^([+-]?)([0-9]*)(?:\.([0-9]*))?"
    r"([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$"
)
#: suffix -> (power of 2, power of 10)
_SUFFIX: dict[str, tuple[int, int]] = {
    "": (0, 0),
    "n": (0, -9),
    "u": (0, -6),
    "m": (0, -3),
    "k": (0, 3),
    "M": (0, 6),
    "G": (0, 9),
    "T": (0, 12),
    "P": (0, 15),
    "E": (0, 18),
    "Ki": (10, 0),
    "Mi": (20, 0),
    "Gi": (30, 0),
    "Ti": (40, 0),
    "Pi": (50, 0),
    "Ei": (60, 0),
}


class QuantityError(SchedulerExtenderError, ValueError):
    """Raised for a string that is not a Kubernetes quantity (``resource.ErrFormatWrong``)."""


def _rational(text: str | int | float) -> tuple[int, int]:
    """The quantity as an exact fraction ``(numerator, denominator)``, denominator > 0."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise QuantityError(f"quantity must be a string or a number, not {text!r}")
    if isinstance(text, int):
        return text, 1
    if isinstance(text, float):
        text = repr(text)
        if "e" in text or "E" in text:
            mantissa, _, exp = text.partition("e")
            text = f"{mantissa}e{int(exp)}"
    match = _QUANTITY.match(text.strip())
    if match is None or not (match.group(2) or match.group(3)):
        raise QuantityError(f"{text!r} is not a quantity: use a number with an optional suffix (250m, 1Gi, 1e3)")
    sign, whole, frac, suffix = match.group(1), match.group(2), match.group(3) or "", match.group(4) or ""
    number = int((whole or "0") + frac)
    if sign == "-":
        number = -number
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        pow2, pow10 = 0, int(suffix[1:])
    else:
        pow2, pow10 = _SUFFIX[suffix]
    pow10 -= len(frac)
    number <<= pow2
    if pow10 >= 0:
        return number * 10**pow10, 1
    return number, 10**-pow10


def parse_quantity(text: str | int | float) -> Decimal:
    """Parse a Kubernetes quantity (``"7910m"``, ``"32386544Ki"``, ``"1e3"``, ``"1.5Gi"``) exactly.

    Numbers (JSON ints/floats) are accepted as their decimal value, as Go's Quantity
    ``UnmarshalJSON`` does. Raises :class:`QuantityError` on anything else.
    """
    num, den = _rational(text)
    return Decimal(num) / Decimal(den) if den != 1 else Decimal(num)


def _round_up(num: int, den: int) -> int:
    """``num / den`` rounded away from zero, as ``Quantity.Value``/``MilliValue`` do."""
    return -(-num // den) if num >= 0 else num // den


def quantity_value(text: str | int | float) -> int:
    """``Quantity.Value()``: the quantity as an integer, rounded up (bytes, counts)."""
    return _round_up(*_rational(text))


def quantity_milli_value(text: str | int | float) -> int:
    """``Quantity.MilliValue()``: the quantity times 1000, rounded up (cpu millicores)."""
    num, den = _rational(text)
    return _round_up(num * 1000, den)


@lru_cache(maxsize=8192)
def resource_amount(name: str, quantity: str | int | float) -> int:
    """One resource in kube-scheduler's units: cpu in millicores, everything else ``Value()``.

    Cached: the same few quantity strings repeat across the nodes of a cluster.
    """
    return quantity_milli_value(quantity) if name == CPU else quantity_value(quantity)


def resource_list(quantities: Mapping[str, str | int | float] | None) -> dict[str, int]:
    """Convert a ``v1.ResourceList`` (``{"cpu": "250m", "memory": "1Gi"}``) to integers.

    Raises :class:`QuantityError` naming the resource when a value does not parse.
    """
    if not quantities:
        return {}
    out: dict[str, int] = {}
    for name, quantity in quantities.items():
        try:
            out[name] = resource_amount(name, quantity)
        except QuantityError as exc:
            raise QuantityError(f"{name}: {exc}") from exc
    return out


def _add(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, value in other.items():
        into[name] = into.get(name, 0) + value


def _max(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, value in other.items():
        if value > into.get(name, 0):
            into[name] = value


def non_zero(requests: Mapping[str, int]) -> dict[str, int]:
    """A container's requests with kube-scheduler's scoring defaults for absent cpu and memory.

    Mirrors ``GetNonzeroRequests`` in pkg/scheduler/util/pod_resources.go: a missing (not a zero)
    cpu request counts as 100 millicores, a missing memory request as 200 MiB.
    """
    out = dict(requests)
    out.setdefault(CPU, DEFAULT_MILLI_CPU_REQUEST)
    out.setdefault(MEMORY, DEFAULT_MEMORY_REQUEST)
    return out


#: Resources that ``spec.resources`` (pod-level resources) may set: ``IsSupportedPodLevelResource`` in
#: k8s.io/component-helpers/resource/helpers.go (plus any ``hugepages-*``).
POD_LEVEL_RESOURCES = frozenset({CPU, MEMORY})


def pod_requests(
    containers: Iterable[tuple[Mapping[str, int], bool]],
    init_containers: Iterable[tuple[Mapping[str, int], bool]],
    overhead: Mapping[str, int] | None = None,
    non_missing: Mapping[str, int] | None = None,
    pod_level: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Effective requests of a pod, as kube-scheduler accounts them.

    ``containers`` and ``init_containers`` are ``(requests, restartable)`` pairs in spec order;
    ``restartable`` is true for an init container with ``restartPolicy: Always`` (a sidecar).
    ``non_missing`` fills a resource a container does not request (``NonMissingContainerRequests``:
    kube-scheduler passes 100 millicores and 200 MiB to compute the non-zero requests used for
    scoring). ``pod_level`` is ``spec.resources.requests``: its cpu, memory and hugepages replace the
    container aggregate (``applyPodLevelResources``). Mirrors ``PodRequests`` and
    ``AggregateContainerRequests`` in k8s.io/component-helpers/resource/helpers.go.
    """

    def filled(requests: Mapping[str, int]) -> Mapping[str, int]:
        if not non_missing:
            return requests
        out = dict(requests)
        for name, value in non_missing.items():
            out.setdefault(name, value)
        return out

    total: dict[str, int] = {}
    for requests, _ in containers:
        _add(total, filled(requests))
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for requests, restartable in init_containers:
        requests = filled(requests)
        if restartable:
            _add(total, requests)
            _add(sidecars, requests)
            _max(init_max, sidecars)
        else:
            need = dict(requests)
            _add(need, sidecars)
            _max(init_max, need)
    _max(total, init_max)
    if pod_level:
        for name, value in pod_level.items():
            if name in POD_LEVEL_RESOURCES or name.startswith("hugepages-"):
                total[name] = value
    if overhead:
        _add(total, overhead)
    return total


@lru_cache(maxsize=4096)
def is_extended_resource_name(value: str) -> bool:
    """``IsExtendedResourceName``: not native (it has a ``/`` and is outside ``kubernetes.io/``),
    not prefixed ``requests.``, and ``requests.<name>`` is a qualified name."""
    if "/" not in value or "kubernetes.io/" in value or value.startswith("requests."):
        return False
    return not validation.is_qualified_name("requests." + value)


def is_scalar_resource_name(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: an extended resource, a ``hugepages-*`` size, or another
    resource kube-scheduler counts outside cpu, memory, ephemeral-storage and pods (what
    ``NodeInfo.Allocatable.ScalarResources`` holds)."""
    return name not in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)

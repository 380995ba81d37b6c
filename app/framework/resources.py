"""Kubernetes resource quantities and pod requests, in the units kube-scheduler computes with.

- cpu: millicores (``"250m"`` -> 250, ``"2"`` -> 2000)
- memory, ephemeral-storage, hugepages-*: bytes (``"256Mi"`` -> 268435456)
- pods and extended resources (``example.com/gpu``): plain integer counts

Parsing follows ``k8s.io/apimachinery/pkg/api/resource/quantity.go`` (``ParseQuantity``); the
integer conversions follow ``Quantity.Value`` and ``Quantity.MilliValue``, which round up (away
from zero). Pod requests follow v1.36.3's ``k8s.io/component-helpers/resource/helpers.go``
(:func:`pod_resource_requests`: ``PodRequests``/``AggregateContainerRequests``): the sum over
containers and restartable init containers (sidecars), at least the largest regular init container
plus the sidecars started before it; an in-place resize's container statuses taken into account
(the larger of spec, ``allocatedResources`` and ``resources``); pod-level ``spec.resources``
replacing the aggregate; plus ``spec.overhead``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

from app.framework import objects, validation
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

#: ``parseQuantityString``'s scanner (k8s.io/apimachinery/pkg/api/resource/quantity.go) as one
#: expression: sign, digits, an optional ``.`` and digits (each part may be empty: ``"."``, ``"+"``
#: and ``"Gi"`` are zero), then the suffix: letters of ``eEinumkKMGTP``, an optional sign and
#: digits, up to the end. Which suffixes mean something is :func:`_interpret`'s (``interpret``).
_QUANTITY = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")
#: decimal (``DecimalSI``) and binary (``BinarySI``) suffix -> (power of 2, power of 10)
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
_INT64_MAX = (1 << 63) - 1
#: The largest decimal exponent this service computes with (``1e1000``). apimachinery accepts any
#: exponent that fits an int64 and truncates it to an int32; values that large (or that small)
#: mean nothing to a scheduler, and computing with them exactly would take unbounded time and
#: memory, so they are refused.
MAX_EXPONENT = 1000
#: The most digits a quantity's number may have (CPython's default limit on converting a decimal
#: string to an int; apimachinery has none).
MAX_DIGITS = 4300


class QuantityError(SchedulerExtenderError, ValueError):
    """Raised for a string that is not a Kubernetes quantity (``resource.ErrFormatWrong``,
    ``ErrSuffix``), or one beyond what this service computes with (:data:`MAX_EXPONENT`,
    :data:`MAX_DIGITS`)."""


def _interpret(text: str, suffix: str) -> tuple[int, int]:
    """``suffixHandler.interpret``: the suffix's (power of 2, power of 10): a decimal or binary
    SI suffix, else ``e``/``E`` and an int64 (``DecimalExponent``, truncated to an int32 as
    upstream's ``int32(parsed)``). Raises :class:`QuantityError`."""
    known = _SUFFIX.get(suffix)
    if known is not None:
        return known
    match = _EXPONENT.fullmatch(suffix)
    if match is None or not -_INT64_MAX - 1 <= (exponent := int(match.group(1))) <= _INT64_MAX:
        raise QuantityError(f"{text!r} has an unknown suffix {suffix!r}: use n, u, m, k, M, G, T, P, E, Ki..Ei or e<N>")
    exponent = ((exponent + (1 << 31)) % (1 << 32)) - (1 << 31)  # int32(parsed)
    if abs(exponent) > MAX_EXPONENT:
        raise QuantityError(f"{text!r}: the exponent is beyond ±{MAX_EXPONENT}")
    return 0, exponent


def _rational(text: str | int | float) -> tuple[int, int]:
    """The quantity as an exact fraction ``(numerator, denominator)``, denominator > 0, as
    ``ParseQuantity`` reads it after ``Quantity.UnmarshalJSON`` trimmed the spaces; a binary SI
    quantity beyond int64 is capped at its largest value, as upstream caps it. Raises
    :class:`QuantityError` for anything else."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise QuantityError(f"quantity must be a string or a number, not {text!r}")
    if isinstance(text, int):
        return text, 1
    if isinstance(text, float):
        if text != text or text in (float("inf"), float("-inf")):
            raise QuantityError(f"{text!r} is not a quantity")
        text = repr(text)
        if "e" in text or "E" in text:
            mantissa, _, exp = text.partition("e")
            text = f"{mantissa}e{int(exp)}"
    stripped = text.strip()
    match = _QUANTITY.fullmatch(stripped) if stripped else None
    if match is None:
        raise QuantityError(f"{text!r} is not a quantity: use a number with an optional suffix (250m, 1Gi, 1e3)")
    sign, whole, frac, suffix = match.group(1), match.group(2), match.group(3) or "", match.group(4)
    pow2, pow10 = _interpret(text, suffix)
    if len(whole) + len(frac) > MAX_DIGITS:
        raise QuantityError(f"{text[:20]!r}...: more than {MAX_DIGITS} digits")
    number = int((whole or "0") + frac)
    if sign == "-":
        number = -number
    pow10 -= len(frac)
    number <<= pow2
    num, den = (number * 10**pow10, 1) if pow10 >= 0 else (number, 10**-pow10)
    if pow2 and abs(num) > _INT64_MAX * den:  # BinarySI: capped at maxAllowed (2^63 - 1)
        return (_INT64_MAX if num > 0 else -_INT64_MAX), 1
    return num, den


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


def is_supported_pod_level_resource(name: str) -> bool:
    """``IsSupportedPodLevelResource``: cpu, memory or a ``hugepages-*`` size."""
    return name in POD_LEVEL_RESOURCES or name.startswith("hugepages-")


def is_pod_level_requests_set(spec: objects.PodSpec) -> bool:
    """``IsPodLevelRequestsSet``: ``spec.resources.requests`` names a supported resource."""
    requests = spec.resources.requests if spec.resources is not None else None
    return bool(requests) and any(is_supported_pod_level_resource(name) for name in requests or ())


@dataclass(frozen=True, slots=True)
class PodResourcesOptions:
    """``PodResourcesOptions`` (k8s.io/component-helpers/resource/helpers.go, v1.36.3), the fields
    the scheduler sets: ``use_status_resources`` (InPlacePodVerticalScaling: an in-place resize's
    container statuses count), ``in_place_pod_level`` (InPlacePodLevelResourcesVerticalScaling:
    the pod-level ``status.resources`` count too), ``skip_pod_level`` (``spec.resources`` is not
    read), ``non_missing`` (``NonMissingContainerRequests``: a value for each resource a container
    does not request, in this module's units), ``exclude_overhead``."""

    use_status_resources: bool = False
    in_place_pod_level: bool = False
    skip_pod_level: bool = False
    non_missing: Mapping[str, int] | None = None
    exclude_overhead: bool = False


def _resize_infeasible(status: objects.PodStatus | None) -> bool:
    """``IsPodResizeInfeasible``: the first ``PodResizePending`` condition's reason is
    ``Infeasible``."""
    for condition in (status.conditions if status is not None else None) or ():
        if condition.type == "PodResizePending":
            return condition.reason == "Infeasible"
    return False


def _max_of(first: Mapping[str, int], *others: Mapping[str, int]) -> dict[str, int]:
    """``max(a, b...)``: per resource the largest; every key of any list is kept."""
    out = dict(first)
    for other in others:
        for name, value in other.items():
            if name not in out or value > out[name]:
                out[name] = value
    return out


def _effective(
    infeasible: bool, spec: Mapping[str, int], actuated: Mapping[str, int], allocated: Mapping[str, int]
) -> dict[str, int]:
    """``determineEffectiveRequests``: ``max(actuated, allocated)`` when the resize is infeasible,
    else ``max(spec, actuated, allocated)``."""
    return _max_of(actuated, allocated) if infeasible else _max_of(spec, actuated, allocated)


def _requests_of(resources: objects.ResourceRequirements | None) -> dict[str, int]:
    return resource_list(resources.requests if resources is not None else None)


def _aggregate_container_requests(
    spec: objects.PodSpec, status: objects.PodStatus | None, opts: PodResourcesOptions
) -> dict[str, int]:
    """``AggregateContainerRequests``: containers and sidecars summed, at least the largest regular
    init container plus the sidecars before it; with ``use_status_resources`` a container (or
    sidecar) with a status carrying ``resources`` counts :func:`_effective` of its spec, its
    ``resources.requests`` and its ``allocatedResources``."""
    by_name: dict[str, objects.ContainerStatus] = {}
    infeasible = False
    if opts.use_status_resources and status is not None:
        for cs in (*(status.container_statuses or ()), *(status.init_container_statuses or ())):
            by_name[cs.name or ""] = cs
        infeasible = _resize_infeasible(status)

    def requests(container: objects.Container, resizable: bool) -> Mapping[str, int]:
        reqs = _requests_of(container.resources)
        if resizable and by_name:
            cs = by_name.get(container.name or "")
            if cs is not None and cs.resources is not None:
                reqs = _effective(infeasible, reqs, _requests_of(cs.resources), resource_list(cs.allocated_resources))
        if opts.non_missing:
            reqs = {**opts.non_missing, **reqs}
        return reqs

    return _aggregate(
        [requests(c, True) for c in spec.containers or ()],
        [(requests(c, c.restart_policy == "Always"), c.restart_policy == "Always") for c in spec.init_containers or ()],
    )


def _aggregate(
    containers: Iterable[Mapping[str, int]], init_containers: Iterable[tuple[Mapping[str, int], bool]]
) -> dict[str, int]:
    """``AggregateContainerRequests``' sum: the containers and the sidecars (restartable init
    containers) summed, at least the largest regular init container plus the sidecars started
    before it (k8s.io/component-helpers/resource/helpers.go)."""
    total: dict[str, int] = {}
    for requests in containers:
        _add(total, requests)
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for requests, restartable in init_containers:
        if restartable:
            _add(total, requests)
            _add(sidecars, requests)
            _max(init_max, sidecars)
        else:
            need = dict(requests)
            _add(need, sidecars)
            _max(init_max, need)
    _max(total, init_max)
    return total


def pod_resource_requests(
    spec: objects.PodSpec, status: objects.PodStatus | None = None, opts: PodResourcesOptions = PodResourcesOptions()
) -> dict[str, int]:
    """``PodRequests`` of v1.36.3 (k8s.io/component-helpers/resource/helpers.go): the containers'
    aggregate (:func:`_aggregate_container_requests`), each supported resource of the pod-level
    ``spec.resources.requests`` replacing it unless ``skip_pod_level`` (with
    ``in_place_pod_level`` and ``use_status_resources`` and a pod-level ``status.resources``: the
    larger of spec, ``status.resources.requests`` and ``status.allocatedResources``), then
    ``spec.overhead`` added unless ``exclude_overhead``. Units as :func:`resource_list`; raises
    :class:`QuantityError` for a malformed quantity."""
    reqs = _aggregate_container_requests(spec, status, opts)
    if not opts.skip_pod_level and is_pod_level_requests_set(spec):
        pod_level = _requests_of(spec.resources)
        effective: dict[str, int] | None = None
        if (
            opts.in_place_pod_level
            and opts.use_status_resources
            and status is not None
            and status.resources is not None
        ):
            effective = _effective(
                _resize_infeasible(status),
                pod_level,
                _requests_of(status.resources),
                resource_list(status.allocated_resources),
            )
        for name, value in pod_level.items():
            if is_supported_pod_level_resource(name):
                reqs[name] = effective.get(name, 0) if effective is not None else value
    if not opts.exclude_overhead and spec.overhead:
        _add(reqs, resource_list(spec.overhead))
    return reqs


def non_missing_container_requests(requests: Mapping[str, int], pod_level_set: bool) -> dict[str, int]:
    """``getNonMissingContainerRequests`` (pkg/scheduler/framework/types.go, v1.36.3): the scoring
    defaults (100 millicores, 200 MiB) a container that requests no cpu or memory counts; with
    pod-level requests set, only for what neither the pod nor a container (``requests``: the pod's
    requests) asks for."""
    if not pod_level_set:
        return {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}
    out = {}
    if CPU not in requests:
        out[CPU] = DEFAULT_MILLI_CPU_REQUEST
    if MEMORY not in requests:
        out[MEMORY] = DEFAULT_MEMORY_REQUEST
    return out


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

    total = _aggregate((filled(r) for r, _ in containers), ((filled(r), again) for r, again in init_containers))
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

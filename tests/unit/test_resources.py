"""Quantities and pod requests, against apimachinery's and component-helpers' rules."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec
import pytest

from app.framework import objects
from app.framework.resources import (
    PodResourcesOptions,
    QuantityError,
    non_zero,
    parse_quantity,
    pod_requests,
    pod_resource_requests,
    quantity_milli_value,
    quantity_value,
    resource_list,
)


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        # suffixes from k8s.io/apimachinery/pkg/api/resource/quantity.go
        ("0", 0, 0),
        ("1", 1, 1000),
        ("250m", 1, 250),  # Value() rounds up
        ("7910m", 8, 7910),
        ("0.1", 1, 100),
        (".5", 1, 500),
        ("1.", 1, 1000),
        ("100n", 1, 1),  # MilliValue() rounds 0.0001 up to 1
        ("1k", 1000, 1_000_000),
        ("1M", 10**6, 10**9),
        ("1E", 10**18, 10**21),  # exa, not an exponent
        ("1e3", 1000, 1_000_000),
        ("2E3", 2000, 2_000_000),
        ("1Ki", 1024, 1_024_000),
        ("1.5Gi", 1_610_612_736, 1_610_612_736_000),
        ("32386544Ki", 33_163_821_056, 33_163_821_056_000),
        ("-1.5", -2, -1500),  # away from zero
        ("+1k", 1000, 1_000_000),
        (5, 5, 5000),  # JSON numbers decode too
        (0.5, 1, 500),
    ],
)
def test_quantity_values(text: str | int | float, value: int, milli: int) -> None:
    assert quantity_value(text) == value
    assert quantity_milli_value(text) == milli


def test_parse_quantity_is_exact() -> None:
    assert parse_quantity("1.5Gi") == Decimal(1610612736)
    assert parse_quantity("100n") == Decimal("1E-7")


@pytest.mark.parametrize(
    "text",
    [
        # TestQuantityParse's invalid list (k8s.io/apimachinery/pkg/api/resource/quantity_test.go)
        "1.1.M",
        "1+1.0M",
        "0.1mi",
        "0.1am",
        "aoeu",
        ".5i",
        "1i",
        "-3.01i",
        "-3.01e-",
        # and what parseQuantityString or interpret refuse besides
        "",
        "abc",
        "1Z",
        "1.2.3",
        "1 Gi",
        "1e",
        "1e+",
        "1ee3",
        "1e3i",
        "1e3k",
        "1E3Ki",
        "1e+-3",
        "1e1.5",
        "1K",
        "1ki",
        "1KiB",
        "1Mi3",
        "0x10",
        "1e99999999999999999999",  # beyond int64: strconv.ParseInt fails
        True,
        float("nan"),
    ],
)
def test_bad_quantities_raise(text: object) -> None:
    with pytest.raises(QuantityError):
        quantity_value(text)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # parseQuantityString takes an empty number as 0 (quantity.go): these parse, as zero
        (".", 0),
        ("+", 0),
        ("-.", 0),
        ("e3", 0),
        ("Gi", 0),
        ("k", 0),
        # exponents: a sign, and upstream's int32(parsed) truncation
        ("1e+3", 1000),
        ("1E-3", 1),  # 0.001 rounds up
        ("1e4294967296", 1),  # int32(2^32) == 0
        ("1e4294967299", 1000),  # int32(2^32 + 3) == 3
        # binary SI: exa-binary parses, and the amount is capped at 2^63 - 1 (maxAllowed)
        ("1Ei", 2**60),
        ("7Ei", 7 * 2**60),
        ("8Ei", 2**63 - 1),
        ("-16Ei", -(2**63 - 1)),
        (" 1Ki ", 1024),  # Quantity.UnmarshalJSON trims the spaces
    ],
)
def test_quantities_upstream_reads_as_the_scanner_does(text: str, value: int) -> None:
    assert quantity_value(text) == value


def test_quantities_too_large_to_compute_are_refused_quickly() -> None:
    with pytest.raises(QuantityError, match="exponent"):
        quantity_value("1e2147483647")  # int32 max: 10**(2**31) would never finish
    with pytest.raises(QuantityError, match="digits"):
        quantity_value("9" * 5000)


def test_resource_list_units_and_errors() -> None:
    assert resource_list({"cpu": "1930m", "memory": "7244176Ki", "pods": "29", "example.com/ip": "10"}) == {
        "cpu": 1930,
        "memory": 7244176 * 1024,
        "pods": 29,
        "example.com/ip": 10,
    }
    assert resource_list(None) == {}
    with pytest.raises(QuantityError, match=r"^memory: "):
        resource_list({"memory": "lots"})


def test_pod_requests_sum_containers_and_max_init() -> None:
    # max(sum(containers), max(init)) + overhead
    got = pod_requests(
        [({"cpu": 100, "memory": 10}, False), ({"cpu": 200}, False)],
        [({"cpu": 500, "memory": 5}, False), ({"cpu": 50, "memory": 50}, False)],
        {"cpu": 10},
    )
    assert got == {"cpu": 510, "memory": 50}


def test_pod_requests_sidecars() -> None:
    # component-helpers AggregateContainerRequests: restartable init containers (sidecars) run
    # alongside the main containers, and alongside the init containers that start after them.
    got = pod_requests(
        [({"cpu": 100}, False)],
        [({"cpu": 1000}, False), ({"cpu": 200}, True), ({"cpu": 900}, False)],
    )
    # main phase: 100 + 200 sidecar = 300; init phase peaks: 1000, then 900 + 200 = 1100
    assert got == {"cpu": 1100}


def test_non_zero_defaults_only_absent_requests() -> None:
    assert non_zero({}) == {"cpu": 100, "memory": 200 * 1024 * 1024}
    assert non_zero({"cpu": 0}) == {"cpu": 0, "memory": 200 * 1024 * 1024}


# -- k8s.io/component-helpers/resource/helpers_test.go (v1.36.3), as data ------------------------------
#
# A container is (name, requests) or (name, requests, "Always") for a restartable init container; a
# status is (name, allocatedResources, resources.requests) (``None``: no ``resources``); the options
# are PodResourcesOptions' fields the rows set. Quantities as upstream writes them.


def _container(c: tuple[Any, ...]) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": c[0], "resources": {"requests": c[1]}}
    if len(c) > 2:
        doc["restartPolicy"] = c[2]
    return doc


def _status(s: tuple[str, dict[str, str] | None, dict[str, str] | None]) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": s[0]}
    if s[1] is not None:
        doc["allocatedResources"] = s[1]
    if s[2] is not None:
        doc["resources"] = {"requests": s[2]}
    return doc


INFEASIBLE = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]

# TestPodResourceRequests: description, options, overhead, conditions, init containers, their
# statuses, containers, their statuses, expected requests
POD_RESOURCE_REQUESTS: list[tuple[Any, ...]] = [
    (
        "nil options, larger init container",
        {},
        None,
        None,
        [("i", {"cpu": "4"})],
        [],
        [("c", {"cpu": "1"})],
        [],
        {"cpu": "4"},
    ),
    (
        "nil options, larger containers",
        {},
        None,
        None,
        [("i", {"cpu": "2"})],
        [],
        [("c1", {"cpu": "2"}), ("c2", {"cpu": "3"})],
        [],
        {"cpu": "5"},
    ),
    (
        "pod overhead excluded",
        {"exclude_overhead": True},
        {"cpu": "1"},
        None,
        [("i", {"cpu": "2"})],
        [],
        [("c1", {"cpu": "2"}), ("c2", {"cpu": "3"})],
        [],
        {"cpu": "5"},
    ),
    (
        "pod overhead included",
        {},
        {"cpu": "1", "memory": "1Gi"},
        None,
        [("i", {"cpu": "2"})],
        [],
        [("c1", {"cpu": "2"}), ("c2", {"cpu": "3"})],
        [],
        {"cpu": "6", "memory": "1Gi"},
    ),
    (
        "resized, infeasible",
        {"use_status_resources": True},
        None,
        INFEASIBLE,
        [],
        [],
        [("container-1", {"cpu": "4"})],
        [("container-1", None, {"cpu": "2"})],
        {"cpu": "2"},
    ),
    (
        "resized, infeasible & in-progress",
        {"use_status_resources": True},
        None,
        INFEASIBLE,
        [],
        [],
        [("container-1", {"cpu": "6"})],
        [("container-1", {"cpu": "4"}, {"cpu": "2"})],
        {"cpu": "4"},
    ),
    (
        "resized, no resize status",
        {"use_status_resources": True},
        None,
        None,
        [],
        [],
        [("container-1", {"cpu": "4"})],
        [("container-1", None, {"cpu": "2"})],
        {"cpu": "4"},
    ),
    (
        "resized: per-resource 3-way maximum",
        {"use_status_resources": True},
        None,
        None,
        [],
        [],
        [("container-1", {"cpu": "30m", "memory": "20M", "ephemeral-storage": "10G"})],
        [
            (
                "container-1",
                {"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"},
                {"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"},
            )
        ],
        {"cpu": "30m", "memory": "30M", "ephemeral-storage": "30G"},
    ),
    (
        "resized, infeasible, but don't use status",
        {"use_status_resources": False},
        None,
        INFEASIBLE,
        [],
        [],
        [("container-1", {"cpu": "4"})],
        [("container-1", None, {"cpu": "2"})],
        {"cpu": "4"},
    ),
    (
        "resized, restartable init container, infeasible",
        {"use_status_resources": True},
        None,
        INFEASIBLE,
        [("restartable-init-1", {"cpu": "4"}, "Always")],
        [("restartable-init-1", None, {"cpu": "2"})],
        [],
        [],
        {"cpu": "2"},
    ),
    (
        "resized, restartable init container, no resize status",
        {"use_status_resources": True},
        None,
        None,
        [("restartable-init-1", {"cpu": "4"}, "Always")],
        [("restartable-init-1", None, {"cpu": "2"})],
        [],
        [],
        {"cpu": "4"},
    ),
    (
        "resized, restartable init container, infeasible, but don't use status",
        {"use_status_resources": False},
        None,
        INFEASIBLE,
        [("restartable-init-1", {"cpu": "4"}, "Always")],
        [("restartable-init-1", None, {"cpu": "2"})],
        [],
        [],
        {"cpu": "4"},
    ),
    (
        "restartable init container",
        {},
        None,
        None,
        [("restartable-init-1", {"cpu": "1"}, "Always")],
        [],
        [("container-1", {"cpu": "1"})],
        [],
        {"cpu": "2"},
    ),
    (
        "multiple restartable init containers",
        {},
        None,
        None,
        [
            ("init-1", {"cpu": "5"}),
            ("restartable-init-1", {"cpu": "1"}, "Always"),
            ("restartable-init-2", {"cpu": "2"}, "Always"),
            ("restartable-init-3", {"cpu": "3"}, "Always"),
        ],
        [],
        [("container-1", {"cpu": "1"})],
        [],
        {"cpu": "7"},
    ),
    (
        "multiple restartable and regular init containers",
        {},
        None,
        None,
        [
            ("init-1", {"cpu": "5"}),
            ("restartable-init-1", {"cpu": "1"}, "Always"),
            ("restartable-init-2", {"cpu": "2"}, "Always"),
            ("init-2", {"cpu": "5"}),
            ("restartable-init-3", {"cpu": "3"}, "Always"),
        ],
        [],
        [("container-1", {"cpu": "1"})],
        [],
        {"cpu": "8"},
    ),
    (
        "restartable-init, init and regular",
        {},
        None,
        None,
        [("restartable-init-1", {"cpu": "10"}, "Always"), ("init-1", {"cpu": "200"})],
        [],
        [("container-1", {"cpu": "100"})],
        [],
        {"cpu": "210"},
    ),
]


@pytest.mark.parametrize(
    ("description", "options", "overhead", "conditions", "inits", "init_statuses", "containers", "statuses", "want"),
    POD_RESOURCE_REQUESTS,
    ids=[r[0] for r in POD_RESOURCE_REQUESTS],
)
def test_pod_resource_requests_upstream_table(
    description: str,
    options: dict[str, Any],
    overhead: dict[str, str] | None,
    conditions: list[dict[str, str]] | None,
    inits: list[tuple[Any, ...]],
    init_statuses: list[Any],
    containers: list[tuple[Any, ...]],
    statuses: list[Any],
    want: dict[str, str],
) -> None:
    """TestPodResourceRequests: ``PodRequests`` with in-place resize statuses, sidecars, overhead."""
    spec = {"containers": [_container(c) for c in containers], "initContainers": [_container(c) for c in inits]}
    if overhead:
        spec["overhead"] = overhead
    status = {
        "containerStatuses": [_status(s) for s in statuses],
        "initContainerStatuses": [_status(s) for s in init_statuses],
        "conditions": conditions or [],
    }
    pod = msgspec.convert({"spec": spec, "status": status}, objects.Pod)
    got = pod_resource_requests(pod.spec or objects.PodSpec(), pod.status, PodResourcesOptions(**options))
    assert got == resource_list(want)


# TestPodLevelResourceRequests: name, SkipPodLevelResources, pod-level requests, init containers,
# containers, expected requests
POD_LEVEL_RESOURCE_REQUESTS: list[tuple[Any, ...]] = [
    ("nil", False, None, [], [], {}),
    ("pod level memory resource with SkipPodLevelResources true", True, {"memory": "2Mi"}, [], [], {}),
    ("pod level memory resource with SkipPodLevelResources false", False, {"memory": "2Mi"}, [], [], {"memory": "2Mi"}),
    (
        "pod level memory and container level cpu resources with SkipPodLevelResources false",
        False,
        {"memory": "2Mi"},
        [],
        [("c", {"cpu": "2m"})],
        {"memory": "2Mi", "cpu": "2m"},
    ),
    (
        "pod level unsupported resources set at both pod-level and container-level with SkipPodLevelResources false",
        False,
        {"storage": "2Mi"},
        [],
        [("c", {"storage": "3Mi"})],
        {"storage": "3Mi"},
    ),
    (
        "pod level unsupported resources set at pod-level with SkipPodLevelResources false",
        False,
        {"storage": "2Mi"},
        [],
        [("c", {"memory": "3Mi"})],
        {"memory": "3Mi"},
    ),
    (
        "only container level resources set with SkipPodLevelResources false",
        False,
        None,
        [],
        [("c", {"memory": "3Mi", "cpu": "2m"})],
        {"memory": "3Mi", "cpu": "2m"},
    ),
    (
        "both container-level and pod-level resources set with SkipPodLevelResources false",
        False,
        {"memory": "6Mi", "cpu": "8m"},
        [],
        [("c", {"memory": "3Mi", "cpu": "2m"})],
        {"memory": "6Mi", "cpu": "8m"},
    ),
    (
        "container-level resources and init container set with SkipPodLevelResources false",
        False,
        None,
        [("i", {"memory": "5Mi", "cpu": "4m"})],
        [("c", {"memory": "3Mi", "cpu": "2m"})],
        {"memory": "5Mi", "cpu": "4m"},
    ),
    (
        # upstream's second row of this name (SkipPodLevelResources true); pytest needs unique ids
        "container-level resources and init container set with SkipPodLevelResources false (2)",
        True,
        None,
        [("i", {"memory": "5Mi", "cpu": "4m"})],
        [("c", {"memory": "3Mi", "cpu": "2m"})],
        {"memory": "5Mi", "cpu": "4m"},
    ),
    (
        "container-level resources and sidecar container set with SkipPodLevelResources false",
        False,
        None,
        [("i", {"memory": "5Mi", "cpu": "4m"}, "Always")],
        [("c", {"memory": "3Mi", "cpu": "2m"})],
        {"memory": "8Mi", "cpu": "6m"},
    ),
    (
        "container-level resources, init and sidecar container set with SkipPodLevelResources false",
        False,
        None,
        [("s", {"memory": "5Mi", "cpu": "4m"}, "Always"), ("i", {"memory": "6Mi", "cpu": "8m"})],
        [("c", {"memory": "3Mi", "cpu": "2m"})],
        {"memory": "11Mi", "cpu": "12m"},
    ),
    (
        "pod-level resources, container-level resources, init and sidecar container set with SkipPodLevelResources "
        "false",
        False,
        {"memory": "15Mi", "cpu": "18m"},
        [("s", {"memory": "5Mi", "cpu": "4m"}, "Always"), ("i", {"memory": "6Mi", "cpu": "8m"})],
        [("c", {"memory": "3Mi", "cpu": "2m"})],
        {"memory": "15Mi", "cpu": "18m"},
    ),
    (
        "pod-level resources, hugepage request/limit single page size",
        False,
        {"memory": "10Mi", "hugepages-2Mi": "2Mi"},
        [],
        [],
        {"memory": "10Mi", "hugepages-2Mi": "2Mi"},
    ),
    (
        "pod-level resources, hugepage request/limit multiple page sizes",
        False,
        {"cpu": "1", "hugepages-2Mi": "2Mi", "hugepages-1Gi": "1Gi"},
        [],
        [],
        {"cpu": "1", "hugepages-2Mi": "2Mi", "hugepages-1Gi": "1Gi"},
    ),
    (
        "pod-level resources, container-level resources, hugepage request/limit single page size",
        False,
        {"cpu": "1", "hugepages-2Mi": "10Mi"},
        [],
        [("c", {"hugepages-2Mi": "6Mi"})],
        {"cpu": "1", "hugepages-2Mi": "10Mi"},
    ),
    (
        "pod-level resources, container-level resources, hugepage request/limit multiple page sizes",
        False,
        {"cpu": "1", "hugepages-2Mi": "10Mi", "hugepages-1Gi": "2Gi"},
        [],
        [("c", {"cpu": "1", "hugepages-1Gi": "2Gi"})],
        {"cpu": "1", "hugepages-2Mi": "10Mi", "hugepages-1Gi": "2Gi"},
    ),
    (
        "pod-level resources, container-level resources, hugepage request/limit multiple page sizes between "
        "pod-level and container-level",
        False,
        {"cpu": "1", "hugepages-2Mi": "10Mi"},
        [],
        [("c", {"memory": "4Mi", "hugepages-1Gi": "1Gi"})],
        {"cpu": "1", "memory": "4Mi", "hugepages-2Mi": "10Mi", "hugepages-1Gi": "1Gi"},
    ),
]


@pytest.mark.parametrize(
    ("name", "skip", "pod_level", "inits", "containers", "want"),
    POD_LEVEL_RESOURCE_REQUESTS,
    ids=[r[0] for r in POD_LEVEL_RESOURCE_REQUESTS],
)
def test_pod_level_resource_requests_upstream_table(
    name: str,
    skip: bool,
    pod_level: dict[str, str] | None,
    inits: list[tuple[Any, ...]],
    containers: list[tuple[Any, ...]],
    want: dict[str, str],
) -> None:
    """TestPodLevelResourceRequests: ``spec.resources.requests`` of cpu, memory and hugepages
    replace the containers' aggregate unless SkipPodLevelResources."""
    spec: dict[str, Any] = {
        "containers": [_container(c) for c in containers],
        "initContainers": [_container(c) for c in inits],
    }
    if pod_level is not None:
        spec["resources"] = {"requests": pod_level}
    pod = msgspec.convert({"spec": spec}, objects.Pod)
    got = pod_resource_requests(pod.spec or objects.PodSpec(), None, PodResourcesOptions(skip_pod_level=skip))
    assert got == resource_list(want)


def test_pod_level_resize_counts_the_pod_status() -> None:
    """``PodRequests`` with InPlacePodLevelResourcesVerticalScaling and UseStatusResources: the
    pod-level requests are the larger of spec, ``status.resources.requests`` and
    ``status.allocatedResources`` (``determineEffectiveRequests``); only the status of the pod
    itself, not of its containers, and only with both options."""
    doc = {
        "spec": {"containers": [{"name": "c"}], "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
        "status": {"allocatedResources": {"cpu": "2"}, "resources": {"requests": {"cpu": "1500m", "memory": "2Gi"}}},
    }
    pod = msgspec.convert(doc, objects.Pod)
    spec = pod.spec or objects.PodSpec()
    both = PodResourcesOptions(use_status_resources=True, in_place_pod_level=True)
    assert pod_resource_requests(spec, pod.status, both) == {"cpu": 2000, "memory": 2 * 1024**3}
    assert pod_resource_requests(spec, pod.status, PodResourcesOptions(use_status_resources=True)) == {
        "cpu": 1000,
        "memory": 1024**3,
    }
    # a resize to more than the node has (infeasible): the spec no longer counts, what runs does
    grown = msgspec.convert({**doc, "spec": {**doc["spec"], "resources": {"requests": {"cpu": "3"}}}}, objects.Pod)
    spec = grown.spec or objects.PodSpec()
    assert pod_resource_requests(spec, pod.status, both)["cpu"] == 3000
    infeasible = msgspec.convert({**doc["status"], "conditions": INFEASIBLE}, objects.PodStatus)
    assert pod_resource_requests(spec, infeasible, both)["cpu"] == 2000


# -- pkg/scheduler/framework/types_test.go (v1.36.3): PodInfo.CalculateResource ------------------------
#
# PodInfo.requests is ``Resource`` and PodInfo.non_zero_requests ``(Non0CPU, Non0Mem)``: the gates at
# v1.36's defaults (PodLevelResources, InPlacePodLevelResourcesVerticalScaling on; upstream's rows
# set podLevelResourcesEnabled for the pod-level ones; the others have no pod-level resources).

MI = 1024 * 1024
C500 = {"cpu": "500m", "memory": "500Mi"}
C700 = {"cpu": "700m", "memory": "800Mi"}


def _pod_info(spec: dict[str, Any], status: dict[str, Any] | None = None) -> Any:
    from app.framework import PodInfo

    doc = {"metadata": {"name": "p", "namespace": "ns", "uid": "p"}, "spec": spec, "status": status or {}}
    return PodInfo(msgspec.convert(doc, objects.Pod))


# name, init containers, containers, pod-level requests, expected requests, (Non0CPU, Non0Mem)
CALCULATE_RESOURCES: list[tuple[Any, ...]] = [
    ("requestless container", [], [("c", {})], None, {}, (100, 200 * MI)),
    ("1X container with requests", [], [("c", C500)], None, C500, (500, 500 * MI)),
    (
        "2X container with requests",
        [],
        [("c1", C500), ("c2", C700)],
        None,
        {"cpu": "1200m", "memory": "1300Mi"},
        (1200, 1300 * MI),
    ),
    (
        "1X container and 1X init container with pod-level requests",
        [("i", C500)],
        [("c", C500)],
        {"cpu": "1200m", "memory": "1200Mi"},
        {"cpu": "1200m", "memory": "1200Mi"},
        (1200, 1200 * MI),
    ),
    (
        "1X container and 1X sidecar container with pod-level requests",
        [("s", C500, "Always")],
        [("c", C500)],
        {"cpu": "1200m", "memory": "1200Mi"},
        {"cpu": "1200m", "memory": "1200Mi"},
        (1200, 1200 * MI),
    ),
    (
        "1X container with pod-level memory requests",
        [("i", {})],
        [("c", {})],
        {"memory": "1200Mi"},
        {"memory": "1200Mi"},
        (100, 1200 * MI),
    ),
    (
        "1X container with pod-level cpu requests",
        [("i", {})],
        [("c", {})],
        {"cpu": "500m"},
        {"cpu": "500m"},
        (500, 200 * MI),
    ),
    (
        "1X container unsupported resources and pod-level supported resources",
        [("i", {"ephemeral-storage": "500Mi"})],
        [("c", {"ephemeral-storage": "800Mi"})],
        {"cpu": "500m"},
        {"cpu": "500m", "ephemeral-storage": "800Mi"},
        (500, 200 * MI),
    ),
]


@pytest.mark.parametrize(
    ("name", "inits", "containers", "pod_level", "want", "non_zero"),
    CALCULATE_RESOURCES,
    ids=[r[0] for r in CALCULATE_RESOURCES],
)
def test_pod_info_calculate_resources_upstream_table(
    name: str,
    inits: list[tuple[Any, ...]],
    containers: list[tuple[Any, ...]],
    pod_level: dict[str, str] | None,
    want: dict[str, str],
    non_zero: tuple[int, int],
) -> None:
    """TestPodInfoCalculateResources (the rows without DRA claims): the requests and the non-zero
    requests (``getNonMissingContainerRequests``: with pod-level requests, a default only for
    what neither the pod nor a container asks)."""
    spec: dict[str, Any] = {
        "containers": [_container(c) for c in containers],
        "initContainers": [_container(c) for c in inits],
    }
    if pod_level is not None:
        spec["resources"] = {"requests": pod_level}
    info = _pod_info(spec)
    assert dict(info.requests) == {k: v for k, v in resource_list(want).items()}
    assert info.non_zero_requests == non_zero


# TestCalculatePodResourcesWithResize: name, pod-level requests, pod-level status requests, the
# container's requests and status requests, the init container's, the sidecar's, conditions, then
# the expected requests (= Non0CPU/Non0Mem in every row)
RESIZE = [
    ("Pod with no pending resize", None, None, C500, C500, None, None, None, None, [], C500),
    (
        "Pod with pod-level resources no pending resize",
        {"cpu": "700m", "memory": "500Mi"},
        C500,
        C500,
        {"cpu": "700m", "memory": "500Mi"},
        None,
        None,
        None,
        None,
        [],
        {"cpu": "700m", "memory": "500Mi"},
    ),
    (
        "Pod with resize in progress",
        None,
        None,
        C500,
        C500,
        None,
        None,
        None,
        None,
        [{"type": "PodResizeInProgress", "status": "True"}],
        C500,
    ),
    (
        "Pod with pod-level resources and resize in progress",
        {"cpu": "700m", "memory": "500Mi"},
        C500,
        C500,
        {"cpu": "700m", "memory": "500Mi"},
        None,
        None,
        None,
        None,
        [{"type": "PodResizeInProgress", "status": "True"}],
        {"cpu": "700m", "memory": "500Mi"},
    ),
    (
        "Pod with deferred resize",
        None,
        None,
        C700,
        C500,
        None,
        None,
        None,
        None,
        [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}],
        C700,
    ),
    (
        "Pod with pod-level resources and with deferred resize",
        C700,
        C500,
        C500,
        C500,
        None,
        None,
        None,
        None,
        [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}],
        C700,
    ),
    ("Pod with infeasible resize", None, None, C700, C500, None, None, None, None, INFEASIBLE, C500),
    ("Pod with init container and no pending resize", None, None, C500, C500, C700, C700, None, None, [], C700),
    (
        "Pod with sider container and no pending resize",
        None,
        None,
        C500,
        C500,
        C700,
        C700,
        C700,
        C700,
        [],
        {"cpu": "1200m", "memory": "1300Mi"},
    ),
]


@pytest.mark.parametrize(
    (
        "name",
        "pod_level",
        "pod_level_status",
        "requests",
        "status_requests",
        "init",
        "init_status",
        "sidecar",
        "sidecar_status",
        "conditions",
        "want",
    ),
    RESIZE,
    ids=[r[0] for r in RESIZE],
)
def test_calculate_pod_resources_with_resize_upstream_table(
    name: str,
    pod_level: dict[str, str] | None,
    pod_level_status: dict[str, str] | None,
    requests: dict[str, str],
    status_requests: dict[str, str],
    init: dict[str, str] | None,
    init_status: dict[str, str] | None,
    sidecar: dict[str, str] | None,
    sidecar_status: dict[str, str] | None,
    conditions: list[dict[str, str]],
    want: dict[str, str],
) -> None:
    """TestCalculatePodResourcesWithResize: a bound pod's usage after an in-place resize (its
    containers' and the pod's status), as the node accounts it."""
    spec: dict[str, Any] = {"containers": [{"name": "c1", "resources": {"requests": requests}}], "initContainers": []}
    status: dict[str, Any] = {
        "phase": "Running",
        "containerStatuses": [{"name": "c1", "resources": {"requests": status_requests}}],
        "initContainerStatuses": [],
        "conditions": conditions,
    }
    if pod_level is not None:
        spec["resources"] = {"requests": pod_level}
    if pod_level_status is not None:
        status["resources"] = {"requests": pod_level_status}
    if init is not None:
        spec["initContainers"].append({"name": "i1", "resources": {"requests": init}})
    if init_status is not None:
        status["initContainerStatuses"].append({"name": "i1", "resources": {"requests": init_status}})
    if sidecar is not None:
        spec["initContainers"].append({"name": "s1", "resources": {"requests": sidecar}, "restartPolicy": "Always"})
    if sidecar_status is not None:
        status["initContainerStatuses"].append({"name": "s1", "resources": {"requests": sidecar_status}})
    info = _pod_info(spec, status)
    expected = resource_list(want)
    assert dict(info.requests) == expected
    assert info.non_zero_requests == (expected["cpu"], expected["memory"])


def test_the_gates_switch_pod_level_resources_and_their_resize() -> None:
    """PodLevelResources off: ``spec.resources`` is not read (the containers' aggregate, defaults
    for the non-zero requests); InPlacePodLevelResourcesVerticalScaling off: the pod-level status
    is not read. NodeResourcesFit's scoring reads the containers alone whatever the gates
    (``container_level_requests``)."""
    from app.framework import features

    spec = {"containers": [{"name": "c1", "resources": {"requests": {"cpu": "100m"}}}], "resources": {"requests": C700}}
    status = {"resources": {"requests": {"cpu": "900m", "memory": "800Mi"}}}
    assert dict(_pod_info(spec, status).requests) == resource_list({"cpu": "900m", "memory": "800Mi"})
    assert _pod_info(spec, status).container_level_requests == (100, 200 * MI)
    try:
        features.set_current(features.FeatureGates({"InPlacePodLevelResourcesVerticalScaling": False}))
        assert dict(_pod_info(spec, status).requests) == resource_list(C700)
        features.set_current(features.FeatureGates({"PodLevelResources": False}))
        info = _pod_info(spec, status)
        assert dict(info.requests) == {"cpu": 100}
        assert info.non_zero_requests == (100, 200 * MI)
        assert info.container_level_requests == (100, 200 * MI)
    finally:
        features.set_current(features.DEFAULT)

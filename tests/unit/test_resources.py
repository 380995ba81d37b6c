"""Quantities and pod requests, against apimachinery's and component-helpers' rules."""

from __future__ import annotations

from decimal import Decimal

import pytest

from app.framework.resources import (
    QuantityError,
    non_zero,
    parse_quantity,
    pod_requests,
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

"""The PreBind pre-flights and ``nominatedNodeName`` for expectation (NominatedNodeNameForExpectation,
beta and on in v1.36.3): ``RunPreBindPreFlights`` in pkg/scheduler/framework/runtime/framework.go and
``bindingCycle`` in pkg/scheduler/schedule_one.go, run by the Framework's binding cycle."""

from __future__ import annotations

import asyncio

import pytest

from app.framework import SKIP, SUCCESS, Code, CycleState, PodInfo, Status, features, plugin_lists
from app.framework.runtime import Framework
from tests.unit.helpers import enabled, pod


class PreBind:
    """A PreBind plugin whose pre-flight answers ``flight`` (``None``: it has none)."""

    def __init__(self, name: str, flight: Status | None) -> None:
        self.name, self.flight, self.ran = name, flight, False
        if flight is None:
            self.pre_bind_pre_flight = None  # type: ignore[assignment]

    def pre_bind_pre_flight(self, state: CycleState, p: PodInfo, node_name: str) -> Status:
        assert self.flight is not None
        return self.flight

    async def pre_bind(self, state: CycleState, p: PodInfo, node_name: str) -> Status:
        self.ran = True
        return SUCCESS


class Binder:
    name = "Binder"

    async def bind(self, state: CycleState, p: PodInfo, node_name: str) -> Status:
        return SUCCESS


def cycle(*plugins: PreBind, gate: bool = True) -> tuple[Status, list[str]]:
    fw = Framework("p", plugin_lists(pre_bind=[enabled(p) for p in plugins], bind=[enabled(Binder())]))
    nominated: list[str] = []
    previous = features.current()
    features.set_current(features.FeatureGates({"NominatedNodeNameForExpectation": gate}))
    try:
        status = asyncio.run(fw.run_binding_cycle(CycleState(), pod("p"), "n1", nominate=nominated.append))
    finally:
        features.set_current(previous)
    return status, nominated


def test_a_pre_bind_with_work_nominates_the_node_and_runs() -> None:
    work, idle = PreBind("Work", SUCCESS), PreBind("Idle", SKIP)
    status, nominated = cycle(work, idle)
    assert status.is_success() and nominated == ["n1"]
    assert work.ran and not idle.ran  # a plugin whose pre-flight said Skip is not run


def test_no_pre_bind_work_no_nomination() -> None:
    idle = PreBind("Idle", SKIP)
    status, nominated = cycle(idle)
    assert status.is_success() and nominated == [] and not idle.ran


def test_the_gate_off_runs_every_pre_bind_and_nominates_nothing() -> None:
    idle = PreBind("Idle", SKIP)
    status, nominated = cycle(idle, gate=False)
    assert status.is_success() and nominated == [] and idle.ran


@pytest.mark.parametrize(
    ("flight", "message"),
    [
        (Status.error("boom"), 'running PreBindPreFlight "Bad": boom'),
        (
            Status(Code.UNSCHEDULABLE, ("no",)),
            'PreBindPreFlight Bad returned "Unschedulable", which is unsupported. '
            "It is supposed to return Success, Skip, or Error status",
        ),
    ],
)
def test_a_failing_pre_flight_fails_the_binding_cycle(flight: Status, message: str) -> None:
    bad = PreBind("Bad", flight)
    status, nominated = cycle(bad)
    assert status.code is Code.ERROR and status.message == message and status.plugin == "Bad"
    assert nominated == [] and not bad.ran


def test_a_plugin_without_a_pre_flight_has_work() -> None:
    legacy = PreBind("Legacy", None)
    status, nominated = cycle(legacy)
    assert status.is_success() and nominated == ["n1"] and legacy.ran

"""SchedulingGates, ported from kube-scheduler v1.30's
pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates_test.go (``TestPreEnqueue``).

``Test_isSchedulableAfterPodChange`` is not ported: it tests the queueing hint that v1.30 registers
only with the ``SchedulerQueueingHints`` feature gate (off by default), which this port does not have.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from app.framework import SUCCESS, Code, PodInfo, PreEnqueuePlugin, Status, objects
from app.plugins.schedulinggates import PLUGIN, SchedulingGates, go_string_slice


def make_pod(gates: list[str] | None = None) -> PodInfo:
    """``st.MakePod().Name("p").SchedulingGates(gates)``."""
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
    if gates is not None:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return PodInfo(msgspec.convert({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}, objects.Pod))


CASES = [
    ("pod does not carry scheduling gates", make_pod(), SUCCESS),
    (
        "pod carries scheduling gates",
        make_pod(["foo", "bar"]),
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for scheduling gates: [foo bar]",)),
    ),
]


@pytest.mark.parametrize(("pod", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_pre_enqueue(pod: PodInfo, want: Status) -> None:
    got = SchedulingGates().pre_enqueue(pod)
    assert (got.code, got.reasons) == (want.code, want.reasons)


def test_empty_gate_list_admits_and_statuses_are_shared() -> None:
    assert SchedulingGates().pre_enqueue(make_pod([])) is SUCCESS
    first = SchedulingGates().pre_enqueue(make_pod(["a"]))
    assert first is SchedulingGates().pre_enqueue(make_pod(["a"]))
    assert first.message == "waiting for scheduling gates: [a]"


def test_go_string_slice_format() -> None:
    """Go's ``fmt.Sprintf("%v", []string{...})``."""
    assert go_string_slice(()) == "[]"
    assert go_string_slice(("example.com/one", "two")) == "[example.com/one two]"


def test_registered_as_pre_enqueue_plugin() -> None:
    plugin = PLUGIN.factory(None, None)  # type: ignore[arg-type]
    assert isinstance(plugin, PreEnqueuePlugin)
    assert PLUGIN.name == "SchedulingGates" and PLUGIN.args is None and not PLUGIN.needs_cluster

"""NodeUnschedulable: upstream's table of pkg/scheduler/framework/plugins/nodeunschedulable/
node_unschedulable_test.go (kubernetes/kubernetes, TestNodeUnschedulable), a generated check of
``filter`` against upstream's rule, and the plugin run through the
framework."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from app.extender.verbs import run_filter
from app.framework import CycleState, NodeInfo, PodInfo, objects
from app.framework.status import Code
from app.plugins import nodeunschedulable
from app.plugins.nodeunschedulable import ERR_REASON_UNSCHEDULABLE, NAME, TAINT_NODE_UNSCHEDULABLE, NodeUnschedulable
from tests.unit.helpers import framework


def make_pod(spec: dict[str, Any] | None = None) -> PodInfo:
    return PodInfo(msgspec.convert({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec or {}}, objects.Pod))


def make_node(name: str = "", spec: dict[str, Any] | None = None) -> NodeInfo:
    return NodeInfo(name, msgspec.convert({"metadata": {"name": name}, "spec": spec or {}}, objects.Node))


UNSCHEDULABLE_TOLERATION = {"key": TAINT_NODE_UNSCHEDULABLE, "effect": "NoSchedule"}

# (upstream case name, pod spec, node spec, expected code, expected reason)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], Code, str | None]] = [
    (
        "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
        {},
        {"unschedulable": True},
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ERR_REASON_UNSCHEDULABLE,
    ),
    ("Schedule pod to normal node", {}, {"unschedulable": False}, Code.SUCCESS, None),
    (
        "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
        {"tolerations": [UNSCHEDULABLE_TOLERATION]},
        {"unschedulable": True},
        Code.SUCCESS,
        None,
    ),
]


@pytest.mark.parametrize(("name", "pod_spec", "node_spec", "code", "reason"), CASES, ids=[c[0] for c in CASES])
def test_filter_upstream_table(
    name: str, pod_spec: dict[str, Any], node_spec: dict[str, Any], code: Code, reason: str | None
) -> None:
    status = NodeUnschedulable().filter(CycleState(), make_pod(pod_spec), make_node(spec=node_spec))
    assert status.code is code
    assert status.reasons == ((reason,) if reason else ())


def test_reason_is_upstreams() -> None:
    assert ERR_REASON_UNSCHEDULABLE == "node(s) were unschedulable"


def test_node_without_object_is_an_error() -> None:
    assert NodeUnschedulable().filter(CycleState(), make_pod(), NodeInfo("n")).code is Code.ERROR


TOLERATIONS = [
    UNSCHEDULABLE_TOLERATION,
    {"operator": "Exists"},
    {"key": TAINT_NODE_UNSCHEDULABLE, "operator": "Exists"},
    {"key": TAINT_NODE_UNSCHEDULABLE, "effect": "NoExecute"},
    {"key": TAINT_NODE_UNSCHEDULABLE, "operator": "Equal", "value": "x"},
    {"key": "other", "operator": "Exists"},
    {"effect": "NoSchedule", "operator": "Exists"},
]
TOLERATES = [True, True, True, False, False, False, True]


def test_filter_follows_the_rule_generated() -> None:
    rng = random.Random(2030)
    plugin = NodeUnschedulable()
    for _ in range(300):
        chosen = rng.sample(range(len(TOLERATIONS)), rng.randint(0, 3))
        pod = make_pod({"tolerations": [TOLERATIONS[i] for i in chosen]})
        nodes = [
            make_node(f"n{i}", {"unschedulable": rng.choice([True, False, None])})
            if rng.random() < 0.9
            else NodeInfo("x")
            for i in range(rng.randint(0, 6))
        ]
        batch = [plugin.filter(CycleState(), pod, n) for n in nodes]
        tolerated = any(TOLERATES[i] for i in chosen)
        for node, status in zip(nodes, batch, strict=True):
            if node.node is None:
                assert status.code is Code.ERROR
            else:
                assert status.is_success() == (not node.unschedulable or tolerated)


def test_run_through_framework() -> None:
    plugin = nodeunschedulable.PLUGIN.factory(None, None)  # type: ignore[arg-type]
    fw = framework(filter=[plugin])
    nodes = [make_node("a", {"unschedulable": True}), make_node("b")]
    outcome = run_filter(fw, make_pod(), nodes, CycleState(None))
    assert [s.code for s in outcome.statuses] == [Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.SUCCESS]
    assert outcome.statuses[0].reasons == (ERR_REASON_UNSCHEDULABLE,)
    assert outcome.statuses[0].plugin == NAME
    outcome = run_filter(fw, make_pod({"tolerations": [UNSCHEDULABLE_TOLERATION]}), nodes, CycleState(None))
    assert all(s.is_success() for s in outcome.statuses)

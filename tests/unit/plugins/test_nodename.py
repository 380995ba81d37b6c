"""NodeName: upstream's table of pkg/scheduler/framework/plugins/nodename/node_name_test.go
(kubernetes/kubernetes, TestNodeName), a generated check of ``filter`` against the rule,
and the plugin run through the framework."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from app.extender.verbs import run_filter
from app.framework import CycleState, NodeInfo, PodInfo, objects
from app.framework.status import Code
from app.plugins import nodename
from app.plugins.nodename import ERR_REASON, NAME, NodeName
from tests.unit.helpers import framework


def make_pod(spec: dict[str, Any] | None = None) -> PodInfo:
    return PodInfo(msgspec.convert({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec or {}}, objects.Pod))


def make_node(name: str) -> NodeInfo:
    return NodeInfo(name, msgspec.convert({"metadata": {"name": name}}, objects.Node))


# (upstream case name, pod spec, node name, expected code, expected reason)
CASES: list[tuple[str, dict[str, Any], str, Code, str | None]] = [
    ("no host specified", {}, "", Code.SUCCESS, None),
    ("host matches", {"nodeName": "foo"}, "foo", Code.SUCCESS, None),
    ("host doesn't match", {"nodeName": "bar"}, "foo", Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON),
]


@pytest.mark.parametrize(("name", "spec", "node_name", "code", "reason"), CASES, ids=[c[0] for c in CASES])
def test_filter_upstream_table(name: str, spec: dict[str, Any], node_name: str, code: Code, reason: str | None) -> None:
    status = NodeName().filter(CycleState(), make_pod(spec), make_node(node_name))
    assert status.code is code
    assert status.reasons == ((reason,) if reason else ())


def test_reason_is_upstreams() -> None:
    assert ERR_REASON == "node(s) didn't match the requested node name"


def test_filter_follows_fits_generated() -> None:
    rng = random.Random(1130)
    plugin = NodeName()
    names = ["a", "b", "c", "node-1", ""]
    for _ in range(300):
        pod = make_pod({"nodeName": rng.choice(names)} if rng.random() < 0.7 else {})
        nodes = [make_node(rng.choice(names[:-1])) for _ in range(rng.randint(0, 6))]
        for node in nodes:
            status = plugin.filter(CycleState(), pod, node)
            assert status.is_success() == (not pod.node_name or pod.node_name == node.name)


def test_run_through_framework() -> None:
    plugin = nodename.PLUGIN.factory(None, None)  # type: ignore[arg-type]
    fw = framework(filter=[plugin])
    nodes = [make_node("foo"), make_node("bar")]
    outcome = run_filter(fw, make_pod({"nodeName": "foo"}), nodes, CycleState(None))
    assert [s.code for s in outcome.statuses] == [Code.SUCCESS, Code.UNSCHEDULABLE_AND_UNRESOLVABLE]
    assert outcome.statuses[1].reasons == (ERR_REASON,)
    assert outcome.statuses[1].plugin == NAME
    # a node known only by name is still judged
    outcome = run_filter(fw, make_pod({"nodeName": "foo"}), [NodeInfo("foo"), NodeInfo("x")], CycleState(None))
    assert [s.code for s in outcome.statuses] == [Code.SUCCESS, Code.UNSCHEDULABLE_AND_UNRESOLVABLE]

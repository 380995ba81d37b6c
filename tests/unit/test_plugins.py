"""Table-driven tests of the in-tree plugins, including invalid args and their messages."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from app.framework import Code, CycleState, Handle, NodeInfo, NodeScore
from app.plugins.annotation_node_affinity import AnnotationNodeAffinity, AnnotationNodeAffinityArgs
from app.plugins.chaos.coin_flip import CoinFlip, CoinFlipArgs
from app.plugins.chaos.dice_roll import DiceRoll, DiceRollArgs
from app.plugins.node_resources_allocatable import (
    NAME,
    NodeResourcesAllocatable,
    NodeResourcesAllocatableArgs,
)
from app.plugins.noderesources.resource_allocation import go_div
from tests.unit.helpers import framework, node, pod

HANDLE = Handle(profile="test")


# -- args validation ---------------------------------------------------------------------------

INVALID_ARGS = [
    (CoinFlipArgs, {"headsProbability": 1.5}, "headsProbability", "less than or equal to 1"),
    (CoinFlipArgs, {"seed": "abc"}, "seed", "valid integer"),
    (CoinFlipArgs, {"sed": 1}, "sed", "Extra inputs are not permitted"),
    (DiceRollArgs, {"seed": 1.5}, "seed", "valid integer"),
    (AnnotationNodeAffinityArgs, {"annotationKey": ""}, "annotationKey", "at least 1 character"),
    (AnnotationNodeAffinityArgs, {"exclusive": "maybe"}, "exclusive", "valid boolean"),
    (AnnotationNodeAffinityArgs, {"node_label": "x"}, "node_label", "Extra inputs are not permitted"),
    (NodeResourcesAllocatableArgs, {"mode": "Middle"}, "mode", "'Least' or 'Most'"),
    (NodeResourcesAllocatableArgs, {"resources": []}, "resources", "at least 1 item"),
    # upstream: "resource Weight of memory should be a positive value, got -1"
    (
        NodeResourcesAllocatableArgs,
        {"resources": [{"name": "memory", "weight": -1}]},
        "resources.0.weight",
        "greater than 0",
    ),
    (
        NodeResourcesAllocatableArgs,
        {"resources": [{"name": "cpu", "weight": 0}]},
        "resources.0.weight",
        "greater than 0",
    ),
    (
        NodeResourcesAllocatableArgs,
        {"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 2}]},
        "resources",
        "must not repeat",
    ),
]


@pytest.mark.parametrize(("model", "args", "field", "message"), INVALID_ARGS)
def test_invalid_args_are_rejected_with_a_message(model: Any, args: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        model.model_validate(args)
    errors = info.value.errors()
    assert any(".".join(str(p) for p in e["loc"]) == field and message in e["msg"] for e in errors), errors


# -- CoinFlip / DiceRoll -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("heads", "expect_kept"),
    [(1.0, 100), (0.0, 0)],
)
def test_coin_flip_extremes(heads: float, expect_kept: int) -> None:
    plugin = CoinFlip(CoinFlipArgs(seed=1, heads_probability=heads), HANDLE)
    statuses = [plugin.filter(CycleState(), pod(), node(f"n{i}")) for i in range(100)]
    assert sum(s.code is Code.SUCCESS for s in statuses) == expect_kept
    for s in statuses:
        if s.code is not Code.SUCCESS:
            assert s.code is Code.UNSCHEDULABLE and s.reasons == ("coin is tails",)


def test_coin_flip_seeded_is_reproducible_and_fair() -> None:
    a = CoinFlip(CoinFlipArgs(seed=42), HANDLE)
    b = CoinFlip(CoinFlipArgs(seed=42), HANDLE)
    nodes = [node(f"n{i}") for i in range(1000)]
    first = [a.filter(CycleState(), pod(), n).code for n in nodes]
    assert first == [b.filter(CycleState(), pod(), n).code for n in reversed(nodes)][::-1]  # order-independent
    heads = sum(c is Code.SUCCESS for c in first)
    assert 430 < heads < 570  # a fair coin over 1000 flips
    other = CoinFlip(CoinFlipArgs(seed=43), HANDLE)
    assert first != [other.filter(CycleState(), pod(), n).code for n in nodes]


def test_dice_roll_range_and_seed() -> None:
    dice = DiceRoll(DiceRollArgs(seed=7), HANDLE)
    rolls = [dice.score(CycleState(), pod(), node(f"n{i}"))[0] for i in range(2000)]
    assert set(rolls) == {r * 10 for r in range(11)}  # every face 0..10, on the 0..100 scale
    assert rolls == [
        DiceRoll(DiceRollArgs(seed=7), HANDLE).score(CycleState(), pod(), node(f"n{i}"))[0] for i in range(2000)
    ]


# -- AnnotationNodeAffinity --------------------------------------------------------------------

EDGE = {"kubernetes.io/role": "edge"}
WORKER = {"kubernetes.io/role": "node"}
SPACE = {"type": "space"}
REQUIRES = "pod annotation type=space requires node label kubernetes.io/role=edge"
RESERVED = "node label kubernetes.io/role=edge is reserved for pods annotated type=space"


@pytest.mark.parametrize(
    ("args", "annotations", "labels", "code", "reason"),
    [
        ({}, SPACE, EDGE, Code.SUCCESS, None),
        ({}, SPACE, WORKER, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REQUIRES),
        ({}, SPACE, {}, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REQUIRES),
        ({}, {"type": "ground"}, WORKER, None, None),  # PreFilter: Skip
        ({}, {}, EDGE, None, None),
        ({"exclusive": True}, {}, EDGE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, RESERVED),
        ({"exclusive": True}, {}, WORKER, Code.SUCCESS, None),
        ({"exclusive": True}, SPACE, EDGE, Code.SUCCESS, None),
        (
            {"annotationKey": "tier", "annotationValue": "gpu", "nodeLabelKey": "gpu", "nodeLabelValue": "true"},
            {"tier": "gpu"},
            {"gpu": "false"},
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "pod annotation tier=gpu requires node label gpu=true",
        ),
    ],
)
def test_annotation_node_affinity(
    args: dict[str, Any], annotations: dict[str, str], labels: dict[str, str], code: Code | None, reason: str | None
) -> None:
    plugin = AnnotationNodeAffinity(AnnotationNodeAffinityArgs.model_validate(args), HANDLE)
    state = CycleState()
    n = node("n1", labels)
    _, pre = plugin.pre_filter(state, pod(annotations=annotations), [n])
    if code is None:
        assert pre.code is Code.SKIP
        return
    assert pre.code is Code.SUCCESS
    status = plugin.filter(state, pod(annotations=annotations), n)
    assert status.code is code
    if reason:
        assert status.reasons == (reason,)
        assert "n1" not in status.message


def test_annotation_node_affinity_without_node_object_is_an_error() -> None:
    plugin = AnnotationNodeAffinity(AnnotationNodeAffinityArgs(), HANDLE)
    state = CycleState()
    plugin.pre_filter(state, pod(annotations=SPACE), [])
    status = plugin.filter(state, pod(annotations=SPACE), NodeInfo("only-a-name"))
    assert status.code is Code.ERROR and "nodeCacheCapable" in status.message


# -- NodeResourcesAllocatable ------------------------------------------------------------------
# Cases from kubernetes-sigs/scheduler-plugins pkg/noderesources/allocatable_test.go
# (TestNodeResourcesAllocatable); nodes are (milliCPU, memory bytes).

DEFAULT = [{"name": "cpu", "weight": 1 << 20}, {"name": "memory", "weight": 1}]
CPU_HEAVY = [{"name": "cpu", "weight": 1 << 30}, {"name": "memory", "weight": 1}]


@pytest.mark.parametrize(
    ("nodes", "resources", "mode", "expected"),
    [
        ([(4000, 10000), (4000, 10000)], DEFAULT, "Least", [0, 0]),
        ([(4000, 10000), (6000, 10000)], DEFAULT, "Least", [100, 0]),
        ([(4000, 10000), (6000, 10000)], DEFAULT, "Most", [0, 100]),
        ([(4000, 1000), (5000, 1000)], DEFAULT, "Least", [100, 0]),
        ([(4000, 1000), (5000, 1000)], DEFAULT, "Most", [0, 100]),
        ([(1000, 2000), (1005, 1000)], CPU_HEAVY, "Least", [100, 0]),
        ([(1000, 2000), (1005, 1000)], CPU_HEAVY, "Most", [0, 100]),
        ([(1000, 1000 << 20), (2000, 2000 << 20), (3000, 3000 << 20)], DEFAULT, "Least", [100, 50, 0]),
        ([(1000, 1000 << 20), (2000, 2000 << 20), (3000, 3000 << 20)], DEFAULT, "Most", [0, 50, 100]),
    ],
)
def test_node_resources_allocatable_upstream_cases(
    nodes: list[tuple[int, int]], resources: list[dict[str, Any]], mode: str, expected: list[int]
) -> None:
    args = NodeResourcesAllocatableArgs.model_validate({"mode": mode, "resources": resources})
    plugin = NodeResourcesAllocatable(args, HANDLE)
    infos = [node(f"machine{i + 1}", cpu=f"{c}m", memory=str(m)) for i, (c, m) in enumerate(nodes)]
    state, p = CycleState(), pod()
    scores = [NodeScore(n.name, plugin.score(state, p, n)[0]) for n in infos]
    assert plugin.normalize_score(state, p, scores).is_success()
    assert [s.score for s in scores] == expected
    # through the framework: score_nodes, then NormalizeScore over the list of scores alone
    result, status = framework(score=[plugin]).run_score_plugins(CycleState(), p, infos)
    assert status.is_success() and result.plugin_scores == {NAME: expected} and result.totals == expected


def test_node_resources_allocatable_defaults_are_upstreams() -> None:
    args = NodeResourcesAllocatableArgs()
    assert args.mode == "Least"
    assert [(r.name, r.weight) for r in args.resources] == [("cpu", 1 << 20), ("memory", 1)]


def test_go_div_truncates_toward_zero() -> None:
    assert go_div(-7, 2) == -3 and go_div(7, 2) == 3 and go_div(-7, -2) == 3 and go_div(7, -2) == -3


def test_node_resources_allocatable_needs_the_node_object() -> None:
    plugin = NodeResourcesAllocatable(NodeResourcesAllocatableArgs(), HANDLE)
    _, status = plugin.score(CycleState(), pod(), NodeInfo("only-a-name"))
    assert status.code is Code.ERROR and "node object unavailable" in status.message


def test_node_resources_allocatable_same_nodes_again_same_scores() -> None:
    """The last nodes' raw scores and the last normalization are kept: the same NodeInfos again
    answer the same; other NodeInfos of the same names (a node changed) are scored anew."""
    plugin = NodeResourcesAllocatable(NodeResourcesAllocatableArgs(mode="Most"), HANDLE)
    infos = [node(f"n{i}", cpu=f"{1000 + i * 500}m", memory="1Gi") for i in range(4)]
    fw = framework(score=[plugin])
    first, _ = fw.run_score_plugins(CycleState(), pod(), infos)
    again, _ = fw.run_score_plugins(CycleState(), pod(), list(infos))
    assert first.totals == again.totals == [0, 33, 66, 100]
    changed = [*infos[:3], node("n3", cpu="1000m", memory="1Gi")]
    out, _ = fw.run_score_plugins(CycleState(), pod(), changed)
    assert out.totals == [0, 50, 100, 0]
    moved = [infos[3], *infos[:3]]  # the same NodeInfos in another order
    out, _ = fw.run_score_plugins(CycleState(), pod(), moved)
    assert out.totals == [100, 0, 33, 66]
    out, status = fw.run_score_plugins(CycleState(), pod(), [*infos[:3], NodeInfo("n3")])
    assert status.code is Code.ERROR and "node n3: node object unavailable" in status.message
    scores = [5, 1, 9]
    assert plugin.normalize_scores(CycleState(), pod(), scores).is_success() and scores == [50, 0, 100]
    scores = [5, 1, 9]
    assert plugin.normalize_scores(CycleState(), pod(), scores).is_success() and scores == [50, 0, 100]

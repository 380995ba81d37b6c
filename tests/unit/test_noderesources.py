"""NodeResourcesFit and NodeResourcesBalancedAllocation against the numbers of upstream's own tests.

Cases are taken from kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources:
``least_allocated_test.go`` (TestLeastAllocatedScoringStrategy), ``most_allocated_test.go``
(TestMostAllocatedScoringStrategy), ``requested_to_capacity_ratio_test.go``
(TestRequestedToCapacityRatioScoringStrategy, TestBrokenLinearFunction,
TestResourceBinPackingSingleExtended) and ``balanced_allocation_test.go``
(TestNodeResourcesBalancedAllocation, v1.36.3). Nodes and pods go through the real cluster-state cache, as
kube-scheduler's ``cache.NewSnapshot(existingPods, nodes)``.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from app.cluster.connection import ClusterConnection, ClusterSettings
from app.config import parse_config
from app.framework import SUCCESS, Code, CycleState, NodeInfo, PodInfo, objects
from app.framework.registry import Handle
from app.plugins import default_registry
from app.plugins.noderesources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
)
from app.plugins.noderesources.fit import NodeResourcesFit, NodeResourcesFitArgs
from app.plugins.noderesources.resource_allocation import broken_linear
from tests.unit.helpers import seed

EXT = "abc.com/xyz"  # upstream's extendedRes


def make_node(name: str, cpu: str | None = None, memory: str | None = None, ext: str | None = None) -> dict[str, Any]:
    """``st.MakeNode().Name(name).Capacity(...)``: capacity and allocatable alike; ``ext`` is the
    amount of :data:`EXT`."""
    res = {k: v for k, v in (("cpu", cpu), ("memory", memory), (EXT, ext)) if v is not None}
    return {"metadata": {"name": name}, "status": {"capacity": res, "allocatable": res}}


def make_pod(*containers: dict[str, str] | None, node: str = "", name: str = "p", **resources: Any) -> dict[str, Any]:
    """``st.MakePod().Req(c1).Req(c2)...``: one container per request map (``None``: a container
    without requests, ``st.MakePod().Container(...)``)."""
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "resources": {"requests": c} if c else {}} for i, c in enumerate(containers)]
    }
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec, "status": {}}


def snapshot(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> list[NodeInfo]:
    """The NodeInfos of ``nodes`` with ``pods`` accounted, through the cache (each existing pod
    gets its own name and UID: upstream's ``st.MakePod()`` pods share theirs)."""
    state = ClusterConnection(ClusterSettings()).cache
    seed(
        state,
        nodes,
        [{**p, "metadata": {**p["metadata"], "name": f"e{i}", "uid": f"e{i}"}} for i, p in enumerate(pods)],
    )
    snap = state.snapshot()
    return [snap.get(n["metadata"]["name"]) for n in nodes]  # type: ignore[misc]


def pod_info(doc: dict[str, Any]) -> PodInfo:
    return PodInfo(msgspec.convert(doc, objects.Pod))


def fit(strategy: dict[str, Any] | None = None, **args: Any) -> NodeResourcesFit:
    raw = dict(args)
    if strategy is not None:
        raw["scoringStrategy"] = strategy
    return NodeResourcesFit(NodeResourcesFitArgs.model_validate(raw), Handle("p"))


def scores(plugin: Any, pod: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]] = ()) -> list[int]:  # type: ignore[assignment]
    infos = snapshot(nodes, list(pods))
    state = CycleState()
    p = pod_info(pod)
    status = plugin.pre_score(state, p, infos)
    assert status.code in (Code.SUCCESS, Code.SKIP)
    got, status = plugin.score_nodes(state, p, infos)
    assert status.is_success()
    return got  # type: ignore[no-any-return]


CPU_MEM = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXT_SET = [*CPU_MEM, {"name": EXT, "weight": 1}]
REQ_2 = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})

N_4_10 = [make_node("n1", cpu="4000", memory="10000"), make_node("n2", cpu="4000", memory="10000")]
N_4_6 = [make_node("n1", cpu="4000", memory="10000"), make_node("n2", cpu="6000", memory="10000")]
N_10_20 = [make_node("n1", cpu="10000", memory="20000"), make_node("n2", cpu="10000", memory="20000")]
N_EXT = [make_node("n1", cpu="6000", memory="10000", ext="4"), make_node("n2", cpu="6000", memory="10000", ext="10")]
ON_N1_N2 = [make_pod({"cpu": "3000", "memory": "0"}, node="n1"), make_pod({"cpu": "3000", "memory": "5000"}, node="n2")]
FOUR_PODS = [
    make_pod({"cpu": "3000", "memory": "0"}, node="n1"),
    make_pod({"cpu": "3000", "memory": "0"}, node="n1"),
    make_pod({"cpu": "3000", "memory": "0"}, node="n2"),
    make_pod({"cpu": "3000", "memory": "5000"}, node="n2"),
]
MEM_2_CPU_1 = [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}]

# The inputs of TestLeastAllocatedScoringStrategy and TestMostAllocatedScoringStrategy (most are in
# both): name -> (pod, nodes, existing pods, resources)
SCENARIOS: dict[str, tuple[Any, ...]] = {
    "nothing scheduled, nothing requested": (make_pod(), N_4_10, [], CPU_MEM),
    "nothing scheduled, resources requested, differently sized nodes": (make_pod(*REQ_2), N_4_6, [], CPU_MEM),
    "no resources requested, pods scheduled with resources": (make_pod(), N_10_20, FOUR_PODS, CPU_MEM),
    "resources requested, pods scheduled with resources": (make_pod(*REQ_2), N_10_20, ON_N1_N2, CPU_MEM),
    "resources requested, differently sized nodes": (
        make_pod(*REQ_2),
        [make_node("n1", cpu="10000", memory="20000"), make_node("n2", cpu="10000", memory="50000")],
        ON_N1_N2,
        CPU_MEM,
    ),
    "requested resources exceed node capacity": (make_pod({"cpu": "3000", "memory": "0"}), N_4_10, ON_N1_N2, CPU_MEM),
    "zero node resources": (
        make_pod(),
        [make_node("n1"), make_node("n2")],
        [make_pod({"cpu": "3000", "memory": "0"}, node="n1")],
        CPU_MEM,
    ),
    "different weight on CPU and memory": (make_pod(*REQ_2), N_4_6, [], MEM_2_CPU_1),
    "resources requested equal node capacity": (
        make_pod({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        [make_node("n1", cpu="5000", memory="10000"), make_node("n2", cpu="10000", memory="9000")],
        [],
        CPU_MEM,
    ),
    "nonzero request for resource": (
        make_pod(None),
        [make_node("n1", cpu="250m", memory="1000Mi"), make_node("n2", cpu="250m", memory="1000Mi")],
        [make_pod(None, node="n1"), make_pod(None, node="n1")],
        CPU_MEM,
    ),
    "bypass extended resource if the pod does not request": (
        make_pod(*REQ_2),
        [make_node("n1", cpu="6000", memory="10000"), make_node("n2", cpu="6000", memory="10000", ext="4")],
        [],
        EXT_SET,
    ),
    "honor extended resource if the pod requests": (
        make_pod({"cpu": "3000", "memory": "5000", EXT: "2"}),
        N_EXT,
        [],
        EXT_SET,
    ),
    "if the node doesn't have a resource": (
        make_pod({"cpu": "3000", "memory": "4000"}),
        [make_node("n1", cpu="6000", memory="10000"), make_node("n2", cpu="6000", memory="10000", ext="4")],
        [],
        [{"name": EXT, "weight": 2}, *CPU_MEM],
    ),
}

# (strategy, scenario, expected scores) as upstream's tests expect them
LEAST = [
    ("nothing scheduled, nothing requested", [100, 100]),
    ("nothing scheduled, resources requested, differently sized nodes", [37, 50]),
    ("no resources requested, pods scheduled with resources", [70, 57]),
    ("resources requested, pods scheduled with resources", [57, 45]),
    ("resources requested, differently sized nodes", [57, 60]),
    ("requested resources exceed node capacity", [50, 25]),
    ("zero node resources", [0, 0]),
    ("different weight on CPU and memory", [41, 50]),
    ("bypass extended resource if the pod does not request", [50, 50]),
    ("honor extended resource if the pod requests", [50, 60]),
    ("if the node doesn't have a resource", [55, 55]),
]
MOST = [
    ("nothing scheduled, nothing requested", [0, 0]),
    ("nothing scheduled, resources requested, differently sized nodes", [62, 50]),
    ("no resources requested, pods scheduled with resources", [30, 42]),
    ("resources requested equal node capacity", [95, 75]),
    ("different weight on CPU and memory", [58, 50]),
    ("nonzero request for resource", [80, 30]),
    ("honor extended resource if the pod requests", [50, 40]),
]

SHAPE = {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]}
# TestRequestedToCapacityRatioScoringStrategy has its own inputs: (name, pod, nodes, pods, resources, expected)
RTCR = [
    (
        "nothing scheduled, nothing requested",
        make_pod(),
        N_4_10,
        [make_pod(node="n1"), make_pod(node="n1")],
        CPU_MEM,
        [100, 100],
    ),
    (
        "resources requested, differently sized nodes",
        make_pod(*REQ_2),
        N_4_6,
        [make_pod(node="n1"), make_pod(node="n1")],
        CPU_MEM,
        [38, 50],
    ),
    (
        "no resources requested, pods scheduled with resources",
        make_pod(),
        N_4_6,
        [
            make_pod({"cpu": "3000", "memory": "5000"}, node="n1"),
            make_pod({"cpu": "3000", "memory": "5000"}, node="n2"),
        ],
        CPU_MEM,
        [38, 50],
    ),
]


def _ids(cases: list[tuple[Any, ...]]) -> list[str]:
    return [c[0] for c in cases]


STRATEGY_CASES = [("LeastAllocated", name, *SCENARIOS[name], want) for name, want in LEAST]
STRATEGY_CASES += [("MostAllocated", name, *SCENARIOS[name], want) for name, want in MOST]
STRATEGY_CASES += [("RequestedToCapacityRatio", *c) for c in RTCR]


@pytest.mark.parametrize(
    ("strategy", "name", "pod", "nodes", "pods", "resources", "want"),
    STRATEGY_CASES,
    ids=[f"{c[0]}: {c[1]}" for c in STRATEGY_CASES],
)
def test_scoring_strategies_upstream_cases(
    strategy: str, name: str, pod: Any, nodes: Any, pods: Any, resources: Any, want: list[int]
) -> None:
    args: dict[str, Any] = {"type": strategy, "resources": resources}
    if strategy == "RequestedToCapacityRatio":
        args["requestedToCapacityRatio"] = SHAPE
    assert scores(fit(args), pod, nodes, pods) == want


def test_bin_packing_single_extended_upstream_cases() -> None:
    # TestResourceBinPackingSingleExtended: shape 0->0, 100->1 on intel.com/foo
    strategy = {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": "intel.com/foo", "weight": 1}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]},
    }

    def n(name: str, foo: str) -> dict[str, Any]:
        res = {"cpu": "4", "memory": str(10000 * 1024 * 1024), "intel.com/foo": foo}
        return {"metadata": {"name": name}, "status": {"capacity": res, "allocatable": res}}

    nodes = [n("n1", "8"), n("n2", "4")]
    assert scores(fit(strategy), make_pod(), nodes) == [0, 0]
    assert scores(fit(strategy), make_pod({"intel.com/foo": "2"}), nodes, [make_pod()]) == [2, 5]
    assert scores(
        fit(strategy), make_pod({"intel.com/foo": "2"}), nodes, [make_pod({"intel.com/foo": "2"}, node="n2")]
    ) == [2, 10]
    assert scores(fit(strategy), make_pod({"intel.com/foo": "4"}), nodes, [make_pod()]) == [5, 10]


@pytest.mark.parametrize(
    ("points", "checks"),
    [  # TestBrokenLinearFunction
        (
            [(10, 1), (90, 9)],
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
        ),
        ([(0, 2), (40, 10), (100, 0)], [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)]),
        ([(0, 2), (40, 2), (100, 2)], [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
    ],
)
def test_broken_linear_function_upstream_cases(points: list[tuple[int, int]], checks: list[tuple[int, int]]) -> None:
    f = broken_linear(points)
    assert [f(p) for p, _ in checks] == [want for _, want in checks]


# balanced_allocation_test.go (v1.36.3), TestNodeResourcesBalancedAllocation: makeNode(name, milliCPU,
# memory, extended); cpuOnly = 1000m+2000m cpu; cpuAndMemory = (1000m, 2000) + (2000m, 3000)
CPU_ONLY = ({"cpu": "1000m"}, {"cpu": "2000m"})
CPU_AND_MEMORY = ({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"})
GPU = "nvidia.com/gpu"
WITH_GPU = [*CPU_MEM, {"name": GPU, "weight": 1}]


def bnode(name: str, milli: int, memory: int, gpu: int | None = None) -> dict[str, Any]:
    node = make_node(name, cpu=f"{milli}m", memory=str(memory))
    if gpu is not None:
        for side in ("capacity", "allocatable"):
            node["status"][side][GPU] = str(gpu)
    return node


# name, pod, nodes, existing pods, resources, expected scores, runPreScore
BALANCED = [
    (
        "nothing scheduled, resources requested, differently sized nodes",
        make_pod(*CPU_AND_MEMORY),
        [bnode("node1", 4000, 10000), bnode("node2", 6000, 10000)],
        [],
        CPU_MEM,
        [68, 75],
        True,
    ),
    (
        "resources requested, pods scheduled with resources",
        make_pod(*CPU_AND_MEMORY),
        [bnode("node1", 10000, 20000), bnode("node2", 10000, 20000)],
        [make_pod(*CPU_ONLY, node="node1"), make_pod(*CPU_AND_MEMORY, node="node2")],
        CPU_MEM,
        [73, 74],
        True,
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        make_pod(*CPU_AND_MEMORY),
        [bnode("node1", 10000, 20000), bnode("node2", 10000, 50000)],
        [make_pod(*CPU_ONLY, node="node1"), make_pod(*CPU_AND_MEMORY, node="node2")],
        CPU_MEM,
        [73, 70],
        True,
    ),
    (
        "resources requested, pods scheduled with resources, nodes to reach min/max score",
        make_pod({"memory": "2000"}, {"memory": "3000"}),
        [bnode("node1", 3000, 5000), bnode("node2", 3000, 5000)],
        [make_pod(*CPU_ONLY, node="node1")],
        CPU_MEM,
        [100, 50],
        True,
    ),
    (
        "requested resources at node capacity",
        make_pod(*CPU_ONLY),
        [bnode("node1", 6000, 10000), bnode("node2", 6000, 10000)],
        [make_pod(*CPU_ONLY, node="node1"), make_pod(*CPU_AND_MEMORY, node="node2")],
        CPU_MEM,
        [62, 62],
        True,
    ),
    (
        "scalar resource is included in the score computation if pod requests the scalar resource",
        make_pod({"cpu": "0", "memory": "0", GPU: "1"}),
        [bnode("node1", 3500, 40000, gpu=8), bnode("node2", 3500, 40000, gpu=8)],
        [
            make_pod(CPU_AND_MEMORY[0], {**CPU_AND_MEMORY[1], GPU: "3"}, node="node1"),
            make_pod(*CPU_AND_MEMORY, node="node2"),
        ],
        WITH_GPU,
        [75, 76],
        True,
    ),
    (
        "scalar resource is not included in the score computation if pod doesn't request the scalar resource",
        make_pod(*CPU_AND_MEMORY),
        [bnode("node1", 3500, 40000, gpu=8), bnode("node2", 3500, 40000)],
        [],
        WITH_GPU,
        [56, 56],
        True,
    ),
    (
        "resources requested, pods scheduled with resources if PreScore not called",
        make_pod(*CPU_AND_MEMORY),
        [bnode("node1", 10000, 20000), bnode("node2", 10000, 20000)],
        [make_pod(*CPU_ONLY, node="node1"), make_pod(*CPU_AND_MEMORY, node="node2")],
        CPU_MEM,
        [73, 74],
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "pods", "resources", "want", "pre_score"), BALANCED, ids=_ids(BALANCED)
)
def test_balanced_allocation_upstream_cases(
    name: str, pod: Any, nodes: Any, pods: Any, resources: Any, want: list[int], pre_score: bool
) -> None:
    args = NodeResourcesBalancedAllocationArgs.model_validate({"resources": resources})
    plugin = NodeResourcesBalancedAllocation(args, Handle("p"))
    infos = snapshot(nodes, list(pods))
    state = CycleState()
    p = pod_info(pod)
    if pre_score:
        assert plugin.pre_score(state, p, infos) is SUCCESS
    assert plugin.score_nodes(state, p, infos) == (want, SUCCESS)
    assert [plugin.score(state, p, n) for n in infos] == [(w, SUCCESS) for w in want]


def test_balanced_allocation_skips_best_effort_pods_in_pre_score() -> None:
    """TestNodeResourcesBalancedAllocation's "nothing scheduled, nothing requested, skip in PreScore"
    (v1.36.3: PreScore returns Skip for a pod requesting none of the resources, kubernetes issue
    #129138); Score without PreScore gives such a pod 0 (``BalancedAllocation.Score``'s fallback)."""
    plugin = NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs(), Handle("p"))
    state = CycleState()
    infos = snapshot([bnode("node1", 4000, 10000), bnode("node2", 4000, 10000)], [])
    assert plugin.pre_score(state, pod_info(make_pod()), infos).code is Code.SKIP
    assert plugin.score_nodes(CycleState(), pod_info(make_pod()), infos) == ([0, 0], SUCCESS)
    # a container requesting zero of each (not a missing request) is best effort too
    zero = pod_info(make_pod({"cpu": "0", "memory": "0"}))
    assert plugin.pre_score(CycleState(), zero, infos).code is Code.SKIP


@pytest.mark.skip(
    reason="DRA-backed extended resources (DRAExtendedResource): DynamicResources does not build them yet, issue 36"
)
@pytest.mark.parametrize(
    "name",
    [
        "include DRA resource on a node for balanced resource allocation",
        "include DRA resource on a node for balanced resource allocation if PreScore not called",
    ],
)
def test_balanced_allocation_dra_rows(name: str) -> None:
    """TestNodeResourcesBalancedAllocation's two rows scoring a resource of ResourceSlices."""


def test_fit_filter_reasons_and_codes() -> None:
    nodes = [make_node("n1", cpu="2", memory="4Gi", ext="2"), make_node("n2", cpu="8", memory="4Gi")]
    for n in nodes:
        n["status"]["allocatable"]["pods"] = "2"
    infos = snapshot(nodes, [make_pod({"cpu": "1500m", "memory": "1Gi"}, node="n1"), make_pod(None, node="n1")])
    plugin = fit()
    state = CycleState()
    small = pod_info(make_pod({"cpu": "1", "memory": "1Gi"}))
    first = plugin.filter(state, small, infos[0])
    # upstream's reasons, in upstream's order; room could be made by evicting: Unschedulable
    assert first.code is Code.UNSCHEDULABLE and first.reasons == ("Too many pods", "Insufficient cpu")
    assert plugin.filter(state, small, infos[1]).code is Code.SUCCESS
    # more than the node's whole allocatable: UnschedulableAndUnresolvable (kubernetes#131345, v1.34)
    huge = pod_info(make_pod({"cpu": "4", EXT: "3"}))
    status = plugin.filter(state, huge, infos[0])
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("Too many pods", "Insufficient cpu", f"Insufficient {EXT}")
    # the extended resource alone beyond allocatable is unresolvable too; within it, not
    only_ext = pod_info(make_pod({"cpu": "100m", EXT: "3"}))
    assert plugin.filter(state, only_ext, infos[0]).code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    some_ext = pod_info(make_pod({"cpu": "100m", EXT: "1"}))
    assert plugin.filter(state, some_ext, infos[0]).code is Code.UNSCHEDULABLE  # too many pods only
    # ignored extended resources (by name or by group) are not checked; cpu still is
    for args in ({"ignoredResources": [EXT]}, {"ignoredResourceGroups": ["abc.com"]}):
        assert fit(**args).filter(state, huge, infos[0]).reasons == ("Too many pods", "Insufficient cpu")
    # Reserve repeats the check at bind
    assert plugin.reserve(CycleState(), small, infos[0]).message == "Too many pods, Insufficient cpu"
    assert plugin.reserve(CycleState(), small, infos[1]).is_success()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"scoringStrategy": {"resources": [{"name": "cpu", "weight": 101}]}}, "less than or equal to 100"),
        ({"scoringStrategy": {"resources": [{"name": "cpu", "weight": 0}]}}, "greater than 0"),
        ({"scoringStrategy": {"type": "RequestedToCapacityRatio"}}, "requestedToCapacityRatio.shape is required"),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]
                    },
                }
            },
            "increasing",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 50, "score": 11}]},
                }
            },
            "less than or equal to 10",
        ),
        ({"ignoredResourceGroups": ["example.com/foo"]}, "can't contain '/'"),
        ({"scoringStrategy": {"type": "Balanced"}}, "LeastAllocated"),
    ],
)
def test_fit_args_are_validated_in_the_config(args: dict[str, Any], message: str) -> None:
    from app.config import ConfigError

    doc = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "cluster": {},
        "profiles": [
            {
                "name": "p",
                "extender": {"verbs": ["filter", "prioritize"]},
                "plugins": {"filter": [{"name": "NodeResourcesFit"}], "score": [{"name": "NodeResourcesFit"}]},
                "pluginConfig": [{"name": "NodeResourcesFit", "args": args}],
            }
        ],
    }
    with pytest.raises(ConfigError) as err:
        parse_config(doc, default_registry(load_entry_points=False))
    assert message in str(err.value)
    assert "profiles[0].pluginConfig[0].args" in str(err.value)

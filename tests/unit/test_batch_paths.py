"""The plugins whose one implementation is a many-nodes path (``filter_nodes``/``score_nodes``;
``filter``/``score`` are that path over one node): on generated clusters a node's verdict does not
depend on the nodes judged with it, the fast reader of two native resources gives the vectors the
generic one gives, and the runtime's handling of batches.

Nodes and pods go through the real cluster-state cache, so :class:`NodeResources` and pool usage
come from the same accounting requests see.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.cluster.connection import ClusterConnection, ClusterSettings
from app.extender.verbs import run_filter
from app.framework import SUCCESS, Code, CycleState, NodeInfo, PodInfo, Status
from app.framework.registry import Handle
from app.plugins.node_resource_pool import NodeResourcePool, NodeResourcePoolArgs
from app.plugins.noderesources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
)
from app.plugins.noderesources.fit import NodeResourcesFit, NodeResourcesFitArgs
from app.plugins.noderesources.resource_allocation import node_vectors
from tests.unit.helpers import enabled, framework, pod, seed

EXT = "example.com/gpu"
IP = "ipam.example.com/ip"
RESOURCES = {"cpu": st.integers(0, 9000).map(lambda m: f"{m}m"), "memory": st.integers(0, 2**34).map(str)}
RESOURCES |= {"ephemeral-storage": st.integers(0, 2**36).map(str), EXT: st.integers(0, 4).map(str)}
RESOURCES |= {IP: st.integers(0, 3).map(str)}

allocatable = st.fixed_dictionaries({}, optional={**RESOURCES, "pods": st.integers(0, 6).map(str)})
requests = st.fixed_dictionaries({}, optional=RESOURCES)
node_docs = st.lists(
    st.tuples(allocatable, st.sampled_from([None, "0", "1", "3", "12", "x"]), st.booleans()),
    min_size=1,
    max_size=10,
)
pod_docs = st.lists(st.tuples(st.integers(0, 9), st.lists(requests, max_size=2)), max_size=25)


def cluster(
    nodes: list[tuple[dict[str, str], str | None, bool]], pods: list[tuple[int, list[dict[str, str]]]]
) -> tuple[NodeResourcePool, list[NodeInfo]]:
    """The pool plugin (registered before the cache is loaded) and the NodeInfos of ``nodes`` with
    ``pods`` accounted, plus one node the cache does not know."""
    rt = ClusterConnection(ClusterSettings())
    args = {"pool": "ip", "capacityAnnotation": "pool-size", "consumers": {"resource": IP}}
    ip_pool = NodeResourcePool(NodeResourcePoolArgs.model_validate(args), Handle("p", cluster=rt))
    node_list = []
    for i, (alloc, size, control_plane) in enumerate(nodes):
        meta: dict[str, Any] = {"name": f"n{i}", "labels": {}, "annotations": {}}
        if size is not None:
            meta["annotations"]["pool-size"] = size
        if control_plane:
            meta["labels"]["node-role.kubernetes.io/control-plane"] = ""
        node_list.append({"metadata": meta, "status": {"allocatable": alloc}})
    pod_list = [
        {
            "metadata": {"name": f"e{j}", "namespace": "ns", "uid": f"e{j}"},
            "spec": {
                "nodeName": f"n{at % len(nodes)}",
                "containers": [{"name": f"c{k}", "resources": {"requests": r}} for k, r in enumerate(containers)],
            },
            "status": {"phase": "Running"},
        }
        for j, (at, containers) in enumerate(pods)
    ]
    seed(rt.cache, node_list, pod_list)
    snap = rt.cache.snapshot()
    infos = [snap.get(f"n{i}") for i in range(len(nodes))]
    return ip_pool, [*infos, NodeInfo("unknown-to-the-cache")]  # type: ignore[list-item]


def candidate(containers: list[dict[str, str]]) -> PodInfo:
    return pod(containers=[{"name": f"c{k}", "resources": {"requests": r}} for k, r in enumerate(containers)])


def plugins(ip_pool: NodeResourcePool) -> list[Any]:
    both = [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]
    storage = [{"name": "ephemeral-storage", "weight": 2}, {"name": "cpu", "weight": 1}]
    fits = [
        {},
        {"ignoredResources": [IP]},
        {"ignoredResourceGroups": ["example.com", "ipam.example.com"]},
        {"scoringStrategy": {"type": "MostAllocated", "resources": both}},
        {"scoringStrategy": {"type": "LeastAllocated", "resources": storage}},
        {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu"}]}},  # per node
    ]
    balanced = [{}, {"resources": storage}, {"resources": [{"name": "cpu"}, {"name": EXT}]}]
    return [
        *(NodeResourcesFit(NodeResourcesFitArgs.model_validate(a), Handle("p")) for a in fits),
        *(
            NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs.model_validate(a), Handle("p"))
            for a in balanced
        ),
        ip_pool,
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(node_docs, pod_docs, st.lists(requests, max_size=3))
def test_a_nodes_verdict_and_score_do_not_depend_on_the_nodes_judged_with_it(
    nodes: Any, pods: Any, containers: list[dict[str, str]]
) -> None:
    ip_pool, infos = cluster(nodes, pods)
    p = candidate(containers)
    known = infos[:-1]
    for plugin in plugins(ip_pool):
        state = CycleState()
        if hasattr(plugin, "filter_nodes") and (
            not hasattr(plugin, "pre_filter") or plugin.pre_filter(state, p, infos)[1].code is not Code.SKIP
        ):
            assert plugin.filter_nodes(state, p, infos) == [plugin.filter(state, p, n) for n in infos], plugin.name
        state = CycleState()
        if plugin.pre_score(state, p, infos).code is Code.SKIP:
            continue
        scores, status = plugin.score_nodes(state, p, known)
        assert status is SUCCESS and scores == [plugin.score(state, p, n)[0] for n in known], plugin.name
        scores, status = plugin.score_nodes(state, p, infos)  # the last node: unknown to the cache
        assert (scores, status.code, status.message) == (
            [],
            Code.ERROR,
            "node unknown-to-the-cache: node object unavailable: the node is not in the extender's cluster state",
        )
        read = getattr(plugin, "read", None)
        if read is not None:  # the reader of the plugin's resources, against the generic one
            use_requested = isinstance(plugin, NodeResourcesBalancedAllocation)
            pod_side = state.read(f"{plugin.name}/pod-requests")
            for n in known:
                # a resource of allocatable 0 is skipped by every scorer, whatever its request
                requested, allocated, allocatable = read(n, pod_side)
                fast = [
                    (r if a else 0, u if a else 0, a) for r, u, a in zip(requested, allocated, allocatable, strict=True)
                ]
                requested, allocated, allocatable = node_vectors(n, plugin.names, pod_side, use_requested)
                assert fast == list(zip(requested, allocated, allocatable, strict=True)), plugin.name


class Judge:
    """A filter plugin with a per-node answer table and, optionally, a batch form that lies or raises."""

    def __init__(self, name: str, verdicts: dict[str, Status], batch: str = "") -> None:
        self.name, self.verdicts, self.batch, self.seen = name, verdicts, batch, []  # type: list[str]

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        self.seen.append(node.name)
        verdict = self.verdicts.get(node.name, Status())
        if verdict.code is Code.ERROR and verdict.message == "raise":
            raise RuntimeError("boom on " + node.name)
        return verdict


class BatchJudge(Judge):
    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[Status]:
        if self.batch == "raise":
            raise RuntimeError("batch failed")
        if self.batch == "short":
            return []
        return [self.filter(state, pod, n) for n in nodes]


def test_runtime_runs_each_plugin_on_the_nodes_earlier_plugins_passed() -> None:
    nodes = [NodeInfo(f"n{i}") for i in range(4)]
    first = BatchJudge("First", {"n1": Status.unschedulable("full"), "n2": Status.unresolvable()})
    second = Judge("Second", {"n0": Status.unschedulable("no"), "n1": Status.unschedulable("never asked")})
    outcome = run_filter(framework(filter=[first, second]), pod(), nodes)
    assert second.seen == ["n0", "n3"]
    assert [(s.code, s.reasons, s.plugin) for s in outcome.statuses] == [
        (Code.UNSCHEDULABLE, ("no",), "Second"),
        (Code.UNSCHEDULABLE, ("full",), "First"),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("rejected by First",), "First"),
        (Code.SUCCESS, (), ""),
    ]


@pytest.mark.parametrize("batch", ["raise", "short"])
def test_a_failing_batch_is_an_error_of_its_nodes(batch: str) -> None:
    nodes = [NodeInfo(f"n{i}") for i in range(3)]
    judge = BatchJudge("J", {"n1": Status.error("raise")}, batch=batch)
    outcome = run_filter(framework(filter=[judge]), pod(), nodes)
    if batch == "raise":
        assert outcome.error == "J: node n0: plugin failed unexpectedly (the extender's log has the details)"
    else:
        assert outcome.error == "J: node n0: filter_nodes returned 0 statuses for 3 nodes"
    ignored = run_filter(framework(filter=[enabled(judge, fail_open=True)]), pod(), nodes)
    assert not ignored.error and ignored.ignored_errors["J"] == 3


def test_a_failing_score_batch_names_the_node() -> None:
    _, infos = cluster([({"cpu": "1"}, None, False)], [])
    fit = NodeResourcesFit(NodeResourcesFitArgs(), Handle("p"))
    fw = framework(score=[fit])
    state = CycleState()
    fw.run_pre_score_plugins(state, pod(), infos)
    _, status = fw.run_score_plugins(state, pod(), infos)
    assert status.message == (
        'running Score plugins: plugin "NodeResourcesFit" failed with: node unknown-to-the-cache: '
        "node object unavailable: the node is not in the extender's cluster state"
    )
    state = CycleState()
    fw.run_pre_score_plugins(state, pod(), infos[:1])
    result, status = fw.run_score_plugins(state, pod(), infos[:1])
    assert status.is_success() and result.totals == [100]  # an empty node, a pod without containers

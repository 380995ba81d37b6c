"""NodeResourcePool, Coscheduling and PreemptionRules on a small in-memory cluster
(:class:`tests.support.cluster.MemoryCluster`), table-driven; the gang's cycle through the
framework (Reserve, Permit, Unreserve)."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from app.cluster.podgroups import PodGroup
from app.extender.verbs import run_bind_verb
from app.framework import Code, CycleState, Handle, NodeInfo, PodInfo, PodRef, Victims, objects
from app.framework.runtime import Framework
from app.plugins import coscheduling
from app.plugins import node_resource_pool as node_resource_pool_plugin
from app.plugins.coscheduling import Coscheduling
from app.plugins.node_resource_pool import NodeResourcePool
from app.plugins.preemption_rules import PreemptionRules, PreemptionRulesArgs
from tests.support.apiserver import node as node_doc
from tests.support.apiserver import pod as pod_doc
from tests.support.cluster import MemoryCluster
from tests.unit.helpers import framework

IP = "ipam.example.com/ip"


def runtime() -> MemoryCluster:
    return MemoryCluster()


def load(rt: MemoryCluster, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
    rt.seed(nodes, pods)


def info(rt: MemoryCluster, name: str) -> NodeInfo:
    found = rt.cache.snapshot().get(name)
    assert found is not None
    return found


def as_pod(doc: dict[str, Any]) -> PodInfo:
    return PodInfo(msgspec.convert(doc, objects.Pod))


def annotated(doc: dict[str, Any], **annotations: str) -> dict[str, Any]:
    doc["metadata"]["annotations"] = {k.replace("__", "/").replace("_", "."): v for k, v in annotations.items()}
    return doc


def consumer(name: str, node_name: str = "", ips: int = 1) -> dict[str, Any]:
    doc = pod_doc(name, "net", node_name, cpu="10m", memory="16Mi")
    doc["spec"]["containers"][0]["resources"]["requests"][IP] = str(ips)
    return doc


def pool(rt: MemoryCluster, **args: Any) -> NodeResourcePool:
    raw = {"pool": "underlay-ip", "capacityAnnotation": "ipam.example.com/pool-size", "consumers": {"resource": IP}}
    raw.update(args)
    plugin: NodeResourcePool = rt.build(node_resource_pool_plugin.PLUGIN, raw)
    return plugin


def pool_node(name: str, size: str | None = None, **labels: str) -> dict[str, Any]:
    doc = node_doc(name, **labels)
    if size is not None:
        doc["metadata"]["annotations"] = {"ipam.example.com/pool-size": size}
    return doc


@pytest.mark.parametrize(
    ("node", "used", "code", "reason"),
    [
        (pool_node("n"), 9, Code.SUCCESS, ""),
        (pool_node("n"), 10, Code.UNSCHEDULABLE, "pool underlay-ip exhausted: 10/10 in use"),
        (pool_node("n", "16"), 15, Code.SUCCESS, ""),
        (pool_node("n", "16"), 16, Code.UNSCHEDULABLE, "pool underlay-ip exhausted: 16/16 in use"),
        (pool_node("n", "0"), 0, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "pool underlay-ip has no capacity on this node"),
        (
            pool_node("n", "lots"),
            0,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "pool underlay-ip capacity annotation ipam.example.com/pool-size='lots' is not a non-negative integer",
        ),
        (
            pool_node("n", **{"node-role.kubernetes.io/control-plane": ""}),
            0,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node is excluded from pool underlay-ip (label node-role.kubernetes.io/control-plane)",
        ),
    ],
)
def test_pool_filter(node: dict[str, Any], used: int, code: Code, reason: str) -> None:
    rt = runtime()
    plugin = pool(rt)
    load(rt, [node], [consumer(f"c{i}", "n") for i in range(used)])
    state = CycleState()
    incoming = as_pod(consumer("new"))
    assert plugin.pre_filter(state, incoming, [])[1].code is Code.SUCCESS
    status = plugin.filter(state, incoming, info(rt, "n"))
    assert (status.code, status.message) == (code, reason)
    assert plugin.reserve(state, incoming, info(rt, "n")).message == reason


@pytest.mark.parametrize(
    ("consumers", "doc", "slots"),
    [
        ({"resource": IP}, consumer("a", ips=3), 3),
        ({"resource": IP}, pod_doc("a"), 0),
        ({"annotation": "net.example.com/underlay=true"}, annotated(pod_doc("a"), net_example_com__underlay="true"), 1),
        ({"annotation": "net.example.com/underlay=true"}, annotated(pod_doc("a"), net_example_com__underlay="no"), 0),
        ({"annotation": "net.example.com/underlay"}, annotated(pod_doc("a"), net_example_com__underlay="no"), 1),
        ({"label": "tier"}, {**pod_doc("a"), "metadata": {**pod_doc("a")["metadata"], "labels": {"tier": "x"}}}, 1),
        ({"schedulerNames": ["ip-scheduler"]}, pod_doc("a", schedulerName="ip-scheduler"), 1),
        ({"schedulerNames": ["ip-scheduler"]}, pod_doc("a"), 0),
    ],
)
def test_pool_consumers(consumers: dict[str, Any], doc: dict[str, Any], slots: int) -> None:
    rt = runtime()
    plugin = pool(rt, consumers=consumers)
    assert plugin.slots(as_pod(doc)) == slots
    # the cache counts the same slots per node (annotations the plugin reads are kept in records)
    doc["spec"]["nodeName"] = "n"
    load(rt, [pool_node("n")], [doc])
    assert info(rt, "n").usage.pool_usage.get("underlay-ip", 0) == slots


def test_pool_skips_non_consumers_and_scores_free_slots() -> None:
    rt = runtime()
    plugin = pool(rt)
    nodes = [pool_node("a", "16"), pool_node("b", "10"), pool_node("c", "4")]
    load(rt, nodes, [consumer(f"x{i}", "a") for i in range(6)] + [consumer("y", "c", ips=4)])
    assert plugin.pre_filter(CycleState(), as_pod(pod_doc("plain")), [])[1].code is Code.SKIP
    state = CycleState()
    incoming = as_pod(consumer("new"))
    plugin.pre_score(state, incoming, [])
    raw = [plugin.score(state, incoming, info(rt, n))[0] for n in "abc"]
    assert raw == [10, 10, 0]
    from app.framework.types import NodeScore

    scores = [NodeScore(n, s) for n, s in zip("abc", raw, strict=True)]
    assert plugin.normalize_score(state, incoming, scores).is_success()
    assert [s.score for s in scores] == [100, 100, 0]


def test_pool_preemption_keeps_only_nodes_where_victims_free_a_slot() -> None:
    rt = runtime()
    plugin = pool(rt)
    load(
        rt,
        [pool_node("full"), pool_node("also-full")],
        [consumer(f"f{i}", "full") for i in range(10)]
        + [consumer(f"g{i}", "also-full") for i in range(10)]
        + [pod_doc("plain", "net", "also-full")],
    )
    snap = rt.cache.snapshot()
    candidates = {
        "full": Victims([snap.pod("full", "uid-net-f0")]),  # type: ignore[list-item]
        "also-full": Victims([snap.pod("also-full", "uid-net-plain")]),  # type: ignore[list-item]
    }
    assert set(plugin.process_preemption(CycleState(), as_pod(consumer("new")), candidates)[0]) == {"full"}
    # a preemptor outside the pool leaves the candidates alone
    assert plugin.process_preemption(CycleState(), as_pod(pod_doc("other")), candidates)[0] == candidates


def test_two_pool_plugins_need_distinct_pools() -> None:
    rt = runtime()
    pool(rt)
    with pytest.raises(ValueError, match="give each its own name"):
        pool(rt)


# -- Coscheduling -----------------------------------------------------------------------------------


def member(name: str, group: str, node_name: str = "", min_member: str | None = None) -> dict[str, Any]:
    doc = pod_doc(name, "ml", node_name)
    doc["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": group}
    if min_member is not None:
        doc["metadata"]["annotations"] = {"scheduling.x-k8s.io/min-member": min_member}
    return doc


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def gang(rt: MemoryCluster, http_timeout: float = 5.0, clock: Clock | None = None, **args: Any) -> Coscheduling:
    plugin: Coscheduling = rt.build(coscheduling.PLUGIN, args, http_timeout, clock=clock or Clock())
    return plugin


def test_permit_wait_must_be_safely_below_http_timeout() -> None:
    with pytest.raises(ValueError, match=r"permitWaitingTimeSeconds 4 is not safely below .* at most 3.5s"):
        gang(runtime(), 5.0, permitWaitingTimeSeconds=4)
    assert gang(runtime(), 5.0, permitWaitingTimeSeconds=3.5).wait == 3.5
    assert gang(runtime(), 30.0).wait == 18.0  # default: 60 % of httpTimeout


@pytest.mark.parametrize(
    ("crd", "pods", "code", "reason"),
    [
        ({"g": 3}, [member(f"m{i}", "g") for i in range(3)], Code.SUCCESS, ""),
        (
            {"g": 3},
            [member(f"m{i}", "g") for i in range(2)],
            Code.ERROR,  # still gathering: retried with backoff, not parked as unschedulable
            "pod group ml/g has 2 of minMember 3 pods: waiting up to 60s for the rest to be created "
            "(kube-scheduler retries it with backoff)",
        ),
        ({}, [member(f"m{i}", "g") for i in range(3)], Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "PodGroup ml/g not found"),
        (None, [member(f"m{i}", "g", min_member="2") for i in range(2)], Code.SUCCESS, ""),
        (
            None,
            [member("m0", "g", min_member="3")],
            Code.ERROR,
            "pod group ml/g has 1 of minMember 3 pods: waiting up to 60s for the rest to be created "
            "(kube-scheduler retries it with backoff)",
        ),
        (
            None,
            [member("m0", "g")],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "pod group ml/g: no PodGroup CRD and no scheduling.x-k8s.io/min-member annotation",
        ),
    ],
)
def test_coscheduling_pre_filter(
    crd: dict[str, int] | None, pods: list[dict[str, Any]], code: Code, reason: str
) -> None:
    rt = runtime()
    plugin = gang(rt)
    load(rt, [node_doc("n")], pods)
    store = rt.podgroups
    assert store is not None
    if crd is None:
        store.missing("404")
    else:
        store.replace(
            [
                msgspec.convert({"metadata": {"namespace": "ml", "name": g}, "spec": {"minMember": m}}, PodGroup)
                for g, m in crd.items()
            ]
        )
        store.mark_synced("podgroups")
    status = plugin.pre_filter(CycleState(), as_pod(pods[0]), [])[1]
    assert (status.code, status.message) == (code, reason)


def test_a_gathering_group_errs_until_its_schedule_timeout_then_is_rejected() -> None:
    rt, clock = runtime(), Clock()
    plugin = gang(rt, clock=clock, scheduleTimeoutSeconds=60)
    pods = [member(f"m{i}", "g") for i in range(3)]
    load(rt, [node_doc("n")], pods[:1])
    store = rt.podgroups
    assert store is not None
    spec = {"minMember": 3, "scheduleTimeoutSeconds": 30}  # the PodGroup's own timeout wins
    store.replace([msgspec.convert({"metadata": {"namespace": "ml", "name": "g"}, "spec": spec}, PodGroup)])
    store.mark_synced("podgroups")
    first = plugin.pre_filter(CycleState(), as_pod(pods[0]), [])[1]
    assert first.code is Code.ERROR and "waiting up to 30s" in first.message
    clock.now += 30
    assert plugin.pre_filter(CycleState(), as_pod(pods[0]), [])[1].code is Code.ERROR
    clock.now += 1
    late = plugin.pre_filter(CycleState(), as_pod(pods[0]), [])[1]
    assert (late.code, late.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "pod group ml/g has 1 of minMember 3 pods after 30s",
    )
    load(rt, [node_doc("n")], pods)  # the rest arrive: the group passes and its clock is forgotten
    assert plugin.pre_filter(CycleState(), as_pod(pods[0]), [])[1].is_success()
    assert plugin._forming == {}


def test_coscheduling_before_podgroups_sync_is_an_error_and_plain_pods_skip() -> None:
    rt = runtime()
    plugin = gang(rt)
    load(rt, [node_doc("n")], [member("m0", "g")])
    assert plugin.pre_filter(CycleState(), as_pod(member("m0", "g")), [])[1].code is Code.ERROR
    assert plugin.pre_filter(CycleState(), as_pod(pod_doc("plain")), [])[1].code is Code.SKIP


def _ref(doc: dict[str, Any]) -> PodRef:
    m = doc["metadata"]
    return PodRef(m["namespace"], m["name"], m["uid"])


def _gang_profile(rt: MemoryCluster, *plugins: Any) -> Framework:
    """A profile with ``plugins`` (Coscheduling, a pool) and a binder recording into ``rt``."""
    from app.plugins import default_binder

    binder = rt.build(default_binder.PLUGIN)
    return framework(filter=plugins, bind=[binder], cluster=rt, waiting_pods=plugins[0].waiting_pods)


def test_members_wait_reserved_at_permit_until_min_member_then_all_bind() -> None:
    rt = runtime()
    plugin = gang(rt, permitWaitingTimeSeconds=3)
    pods = [member(f"m{i}", "g", min_member="3") for i in range(2)] + [member("done", "g", "n", min_member="3")]
    load(rt, [node_doc("n")], pods)
    assert rt.podgroups is not None
    rt.podgroups.missing("404")
    fw = _gang_profile(rt, plugin)

    async def run() -> list[Any]:
        first = asyncio.ensure_future(run_bind_verb(fw, _ref(pods[0]), "n"))
        await asyncio.sleep(0.05)
        assert not first.done() and fw.waiting_pods.get("uid-ml-m0") is not None  # 1 reserved + 1 bound < 3
        assert rt.placement("uid-ml-m0") == "n"  # a waiting member keeps its reservation
        second = await run_bind_verb(fw, _ref(pods[1]), "n")  # 2 reserved + 1 bound: every waiting member goes
        return [await first, second]

    assert [s.code for s in asyncio.run(run())] == [Code.SUCCESS, Code.SUCCESS]
    assert sorted(rt.bindings) == [("uid-ml-m0", "n"), ("uid-ml-m1", "n")]


def test_permit_timeout_rejects_every_waiting_member_and_denies_the_group() -> None:
    rt = runtime()
    clock = Clock()
    plugin = gang(rt, clock=clock, permitWaitingTimeSeconds=0.2, deniedPGExpirationTimeSeconds=20)
    pods = [member(f"m{i}", "g", min_member="4") for i in range(4)]
    load(rt, [node_doc("n")], pods)
    assert rt.podgroups is not None
    rt.podgroups.missing("404")
    fw = _gang_profile(rt, plugin)

    async def run() -> list[Any]:
        return list(await asyncio.gather(*(run_bind_verb(fw, _ref(p), "n") for p in pods[:3])))

    results = asyncio.run(run())
    assert all(s.code is Code.ERROR for s in results)
    assert any("rejected due to timeout after waiting 0.2s at plugin Coscheduling" in s.message for s in results)
    assert rt.bindings == [] and rt.cache.assumed() == {}  # nothing bound, every reservation undone
    denied = plugin.pre_filter(CycleState(), as_pod(pods[3]), [])[1]
    # an Error, so kube-scheduler retries it with backoff and it proceeds as soon as the denial expires
    assert denied.code is Code.ERROR and denied.message.startswith("pod group ml/g is denied for 20s more")
    clock.now += 21  # deniedPGExpirationTimeSeconds later the group may try again
    assert plugin.pre_filter(CycleState(), as_pod(pods[3]), [])[1].code is Code.SUCCESS


def test_a_gang_released_at_permit_whose_last_member_fails_reserve_binds_none() -> None:
    """The order that keeps a gang whole: every member reserves before Permit; when the last one's
    Reserve fails (the pool one slot short), Coscheduling's Unreserve rejects the waiting ones and
    every reservation is undone, so no member is bound."""
    rt = runtime()
    cos = gang(rt, permitWaitingTimeSeconds=3)
    ips = pool(rt)
    pods = [member(f"m{i}", "g", min_member="4") for i in range(4)]
    for doc in pods:
        doc["spec"]["containers"][0]["resources"]["requests"][IP] = "1"
    load(rt, [pool_node("n", "3")], pods)  # 3 slots for a gang of 4
    assert rt.podgroups is not None
    rt.podgroups.missing("404")
    fw = _gang_profile(rt, cos, ips)

    async def run() -> list[Any]:
        waiting = [asyncio.ensure_future(run_bind_verb(fw, _ref(p), "n")) for p in pods[:3]]
        await asyncio.sleep(0.05)
        assert info(rt, "n").usage.pool_usage["underlay-ip"] == 3  # three reserved, waiting at Permit
        last = await run_bind_verb(fw, _ref(pods[3]), "n")
        return [last, *(await asyncio.gather(*waiting))]

    results = asyncio.run(run())
    assert results[0].message == "cannot bind to n: NodeResourcePool: Reserve: pool underlay-ip exhausted: 3/3 in use"
    assert all("rejection in Unreserve" in s.message for s in results[1:])
    assert rt.bindings == [] and rt.cache.assumed() == {}
    assert info(rt, "n").usage.pool_usage.get("underlay-ip", 0) == 0


def test_gang_preemption_never_evicts_half_a_gang() -> None:
    rt = runtime()
    plugin = gang(rt)
    load(
        rt, [node_doc("a"), node_doc("b")], [member("x0", "g", "a"), member("x1", "g", "b"), pod_doc("solo", "ml", "a")]
    )
    snap = rt.cache.snapshot()
    half = Victims([snap.pod("a", "uid-ml-x0")])  # type: ignore[list-item]
    alone = Victims([snap.pod("a", "uid-ml-solo")])  # type: ignore[list-item]
    kept = plugin.process_preemption(CycleState(), as_pod(pod_doc("p")), {"a": half, "b": alone})[0]
    assert set(kept) == {"b"}


# -- PreemptionRules ----------------------------------------------------------------------------------


def victim(name: str, namespace: str = "batch", **meta: Any) -> PodInfo:
    doc = pod_doc(name, namespace, "n", priorityClassName=meta.pop("priority_class", None) or "")
    doc["metadata"].update(meta)
    return as_pod(doc)


@pytest.mark.parametrize(
    ("victims", "kept"),
    [
        ([victim("a")], True),
        ([victim("a"), victim("b", labels={"scheduling.example.com/protected": "true"})], False),
        ([victim("a", annotations={"example.com/keep": "yes"})], False),
        ([victim("a", annotations={"example.com/keep": "no"})], True),
        ([victim("a", "kube-system")], False),
        ([victim("a", priority_class="system-node-critical")], False),
        ([PodInfo(None, "uid-unknown")], False),
    ],
)
def test_preemption_rules_drop_nodes_with_protected_victims(victims: list[PodInfo], kept: bool) -> None:
    args = PreemptionRulesArgs.model_validate(
        {
            "protect": {
                "labels": ["scheduling.example.com/protected"],
                "annotations": ["example.com/keep=yes"],
                "namespaces": ["kube-system"],
                "priorityClassNames": ["system-node-critical"],
            }
        }
    )
    plugin = PreemptionRules(args, Handle("p"))
    candidates = {"n": Victims(victims)}
    result = plugin.process_preemption(CycleState(), victim("preemptor"), candidates)[0]
    assert (result == candidates) is kept
    if kept:
        assert result["n"].pods == victims  # never reordered or trimmed


def test_preemption_rules_keep_the_fewest_pdb_violations() -> None:
    plugin = PreemptionRules(PreemptionRulesArgs(), Handle("p"))
    candidates = {"a": Victims([victim("a")], 1), "b": Victims([victim("b")], 0), "c": Victims([victim("c")], 0)}
    assert set(plugin.process_preemption(CycleState(), victim("p"), candidates)[0]) == {"b", "c"}
    keep_all = PreemptionRules(PreemptionRulesArgs.model_validate({"fewestPDBViolations": False}), Handle("p"))
    assert set(keep_all.process_preemption(CycleState(), victim("p"), candidates)[0]) == {"a", "b", "c"}


def test_enabled_plugin_whose_args_have_no_defaults_needs_a_plugin_config() -> None:
    from app.config import ConfigError, parse_config
    from app.plugins import default_registry

    doc = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "cluster": {},
        "profiles": [
            {"name": "p", "extender": {"verbs": ["filter"]}, "plugins": {"filter": [{"name": "NodeResourcePool"}]}}
        ],
    }
    with pytest.raises(ConfigError) as err:
        parse_config(doc, default_registry(load_entry_points=False))
    assert err.value.problems == [
        "profiles[0].pluginConfig[NodeResourcePool].args.pool: Field required "
        "(no pluginConfig for NodeResourcePool: add one with these args)",
        "profiles[0].pluginConfig[NodeResourcePool].args.consumers: Field required "
        "(no pluginConfig for NodeResourcePool: add one with these args)",
    ]


def test_pods_nominated_to_a_node_are_counted_for_pods_of_lower_or_equal_priority() -> None:
    """kube-scheduler's addNominatedPods: a preemptor nominated to n1 (status.nominatedNodeName,
    3 of 4 cpu) keeps the room its victims are freeing from pods of lower or equal priority."""
    from app.framework.types import CycleState as State
    from app.plugins.noderesources.fit import NodeResourcesFit, NodeResourcesFitArgs

    rt = runtime()
    preemptor = pod_doc("preemptor", cpu="3", priority=1000)
    preemptor["status"]["nominatedNodeName"] = "n1"
    load(rt, [node_doc("n1", cpu="4")], [preemptor])
    fit = NodeResourcesFit(NodeResourcesFitArgs(), Handle("p", cluster=rt))
    snapshot = rt.cache.snapshot()
    assert [p.name for p in snapshot.nominated["n1"]] == ["preemptor"] == [p.name for p in rt.cache.nominated()["n1"]]

    def verdict(doc: dict[str, Any]) -> str:
        pod = as_pod(doc)
        node = snapshot.with_nominated(info(rt, "n1"), pod)
        status = fit.filter(State(), pod, node)
        return "" if status.is_success() else status.message

    assert verdict(pod_doc("low", cpu="2", priority=10)) == "Insufficient cpu"
    assert verdict(pod_doc("same", cpu="2", priority=1000)) == "Insufficient cpu"
    assert verdict(pod_doc("high", cpu="2", priority=2000)) == ""  # may preempt the preemptor's room
    assert verdict(preemptor) == ""  # its own nomination is not counted against it
    assert info(rt, "n1").usage.requested.get("cpu", 0) == 0  # the cache itself is unchanged

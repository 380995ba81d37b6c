"""Opportunistic batching (KEP-5598, beta and on in v1.36.3), against upstream's tables as data:
pkg/scheduler/framework/runtime/batch_test.go (TestBatchBasic) and
pkg/scheduler/schedule_one_test.go (TestSignatures), then the standalone scheduler placing a burst
of identical pods with it and without it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import msgspec
import pytest

from app.bootstrap import assemble
from app.config import parse_config
from app.framework import SUCCESS, CycleState, NodeInfo, PodInfo, SignFragment, Status, features, objects
from app.framework.runtime import Framework
from app.framework.runtime.batch import OpportunisticBatch, batchable_plugins, sign_pod
from app.framework.types import NodeUsage
from app.plugins import default_registry
from app.scheduler.queue import SchedulingQueue
from app.scheduler.scheduler import Scheduler
from tests.unit.helpers import enabled, pod

# -- TestBatchBasic ------------------------------------------------------------------------------


class Nodes:
    """``testSortedScoredNodes``: a ranking popped from its front."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)

    def pop(self) -> str:
        return self.names.pop(0)

    def __len__(self) -> int:
        return len(self.names)


def blocking_filter(state: CycleState, p: PodInfo, node: NodeInfo) -> Status:
    """``BatchTestPlugin.Filter``: a node holds one pod whose UID starts with ``b``."""
    if p.uid.startswith("b") and any(q.uid.startswith("b") for q in node.pods):
        return Status.unschedulable("unsched")
    return SUCCESS


# name, first pod UID, first signature, first scheduled, first chosen, first others, skip a cycle,
# second pod UID, second signature, second chosen, expected hint, expected kept ranking
BATCH_BASIC: list[tuple[Any, ...]] = [
    (
        "a second pod with the same signature gets a hint",
        "b-1",
        "sig",
        True,
        "n3",
        ["n1"],
        False,
        "b-2",
        "sig",
        "n1",
        "n1",
        None,
    ),
    (
        "a second pod with a different signature doesn't get a hint",
        "a-1",
        "sig",
        True,
        "n3",
        ["n1"],
        False,
        "a-2",
        "sig2",
        "n1",
        "",
        None,
    ),
    (
        "a second pod doesn't get a hint if it's not 1-pod-per-node",
        "a-1",
        "sig",
        True,
        "n3",
        ["n1"],
        False,
        "a-2",
        "sig",
        "n1",
        "",
        None,
    ),
    (
        "pod doesn't get hint if previous pod didn't scheduled",
        "b-1",
        "sig",
        False,
        "n3",
        ["n1"],
        False,
        "b-2",
        "sig",
        "n1",
        "",
        None,
    ),
    ("empty list", "b-1", "sig", True, "n3", [], False, "b-2", "sig", "n4", "", None),
    ("nil list", "b-1", "sig", True, "n3", None, False, "b-2", "sig", "n4", "", None),
    (
        "pod doesn't get hint because the previous pod is to a different profile",
        "b-1",
        "sig",
        True,
        "n3",
        ["n1"],
        True,
        "b-2",
        "sig",
        "n1",
        "",
        None,
    ),
    (
        "pod uses batch from preceding pod and leaves remaining batch to next pod",
        "b-1",
        "sig",
        True,
        "n3",
        ["n1", "n2"],
        False,
        "b-2",
        "sig",
        "n1",
        "n1",
        ("sig", ["n2"]),
    ),
]


def named_pod(uid: str, name: str) -> PodInfo:
    return PodInfo(msgspec.convert({"metadata": {"name": name, "uid": uid}}, objects.Pod))


@pytest.mark.parametrize("row", BATCH_BASIC, ids=[r[0] for r in BATCH_BASIC])
def test_batch_basic(row: tuple[Any, ...]) -> None:
    """``TestBatchBasic``: the first pod gets no hint; the second one gets the next node of the
    first one's ranking only when its signature, its cycle and the full chosen node allow it."""
    _, uid1, sig1, scheduled, chosen1, others1, skip, uid2, sig2, chosen2, want_hint, want_state = row
    batch = OpportunisticBatch(lambda state, p, node: blocking_filter(state, p, node))
    state = CycleState()
    first = named_pod(uid1, "pod")
    assert batch.get_node_hint(state, first, sig1.encode(), 1, lambda name: None) == ""
    if scheduled:
        batch.store_schedule_results(sig1.encode(), "", chosen1, None if others1 is None else Nodes(others1), 1)
    # the node chosen for the first pod now holds it
    last = NodeInfo(chosen1, msgspec.convert({"metadata": {"name": chosen1}}, objects.Node), NodeUsage(pods=(first,)))
    cycle = 3 if skip else 2
    second = named_pod(uid2, "pod2")
    hint = batch.get_node_hint(state, second, sig2.encode(), cycle, lambda name: last if name == chosen1 else None)
    assert hint == want_hint
    batch.store_schedule_results(sig2.encode(), hint, chosen2, None, cycle)
    kept = batch._state
    if want_state is None:
        assert kept is None or len(kept.sorted_nodes) == 0
    else:
        assert kept is not None and kept.signature == want_state[0].encode()
        assert isinstance(kept.sorted_nodes, Nodes) and kept.sorted_nodes.names == want_state[1]


def test_a_kept_ranking_expires() -> None:
    """``maxBatchAge``: a ranking older than 500 ms is not used."""
    now = [100.0]
    batch = OpportunisticBatch(lambda state, p, node: Status.unschedulable("full"), clock=lambda: now[0])
    batch.store_schedule_results(b"s", "", "n1", Nodes(["n2"]), 1)
    node = NodeInfo("n1", msgspec.convert({"metadata": {"name": "n1"}}, objects.Node))
    now[0] += 0.6
    assert batch.get_node_hint(CycleState(), named_pod("b-2", "p"), b"s", 2, lambda name: node) == ""
    assert batch.stats["expired"] == 1


# -- TestSignatures ------------------------------------------------------------------------------


class ConstSig:
    """``constSigPlugin``: signs every pod with ``fragments`` and ``status`` at one point."""

    def __init__(self, name: str, fragments: list[SignFragment], status: Status) -> None:
        self.name, self.fragments, self.status = name, fragments, status

    def sign_pod(self, p: PodInfo) -> tuple[list[SignFragment], Status]:
        return self.fragments, self.status


class ConstSigFilter(ConstSig):
    def filter(self, state: CycleState, p: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS


class ConstSigScore(ConstSig):
    def score(self, state: CycleState, p: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        return 0, SUCCESS


class Unsigned:
    """A Filter plugin that does not implement signing."""

    name = "Unsigned"

    def filter(self, state: CycleState, p: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS


OK = SUCCESS
#: what every signature here ends with
TAIL = b'{"v1.Pod.Spec.SchedulerName":"test-scheduler"}'
UNSCHEDULABLE = Status.unschedulable("")
SIGNATURES: list[tuple[str, list[tuple[str, list[SignFragment], Status, str]], bytes | None]] = [
    ("no plugins", [], TAIL),
    ("single filter", [("ConstSig", [("test", 16)], OK, "filter")], b'{"test":16,' + TAIL[1:]),
    ("single score", [("ConstSig", [("test", 16)], OK, "score")], b'{"test":16,' + TAIL[1:]),
    (
        "two plugins",
        [("ConstSig", [("test", 16)], OK, "filter"), ("ConstSig2", [("test2", 17)], OK, "score")],
        b'{"test":16,"test2":17,' + TAIL[1:],
    ),
    (
        "plugin with multiple fragments",
        [("ConstSig", [("test", 16), ("test2", 17)], OK, "filter")],
        b'{"test":16,"test2":17,' + TAIL[1:],
    ),
    (
        "overlapping fragments",
        [("ConstSig", [("test", 16)], OK, "filter"), ("ConstSig2", [("test", 16)], OK, "score")],
        b'{"test":16,' + TAIL[1:],
    ),
    ("unsignable plugin", [("ConstSig", [], UNSCHEDULABLE, "filter")], None),
    ("error plugin", [("ConstSig", [], Status.error("error"), "filter")], None),
]


@pytest.mark.parametrize(("name", "plugins", "want"), SIGNATURES, ids=[s[0] for s in SIGNATURES])
def test_signatures(name: str, plugins: list[tuple[str, list[SignFragment], Status, str]], want: bytes | None) -> None:
    """``TestSignatures``: the fragments of every signing plugin with the ``schedulerName``, as
    Go's ``json.Marshal`` of a map writes them (keys sorted); ``None`` when one cannot sign."""
    filters = [enabled(ConstSigFilter(n, f, s)) for n, f, s, point in plugins if point == "filter"]
    scores = [enabled(ConstSigScore(n, f, s)) for n, f, s, point in plugins if point == "score"]
    signing = batchable_plugins((filters, filters, scores, scores))
    p = PodInfo(msgspec.convert({"metadata": {"name": "p"}, "spec": {"schedulerName": "test-scheduler"}}, objects.Pod))
    assert sign_pod(signing, p) == want


def test_a_plugin_that_does_not_sign_turns_signatures_off() -> None:
    """``computeBatchablePlugins``: one PreFilter, Filter, PreScore or Score plugin without
    ``SignPod`` and the profile signs no pod."""
    signing = batchable_plugins(([], [enabled(Unsigned()), enabled(ConstSigFilter("C", [], OK))], [], []))
    assert signing is None and sign_pod(signing, pod("p")) is None


# -- the standalone scheduler --------------------------------------------------------------------


def framework(spread: dict[str, Any] | None) -> tuple[Any, Framework]:
    registry = default_registry(False)
    profile: dict[str, Any] = {"name": "s", "schedulerName": "s"}
    if spread is not None:
        profile["pluginConfig"] = [{"name": "PodTopologySpread", "args": spread}]
    doc = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "cluster": {},
        "profiles": [profile],
    }
    service = assemble(parse_config(doc, registry), registry)
    return service, service.frameworks["s"]


def node(name: str, memory: str) -> objects.Node:
    doc = {"metadata": {"name": name}, "status": {"allocatable": {"cpu": "5", "memory": memory, "pods": "110"}}}
    return msgspec.convert(doc, objects.Node)


REQUESTS = {"cpu": "3", "memory": "3Gi"}


def big_pod(i: int) -> PodInfo:
    doc = {
        "metadata": {"name": f"big-{i}", "namespace": "default", "uid": f"u-{i}", "labels": {"app": "big"}},
        "spec": {
            "schedulerName": "s",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "3", "memory": "3Gi"}}}],
        },
    }
    return PodInfo(msgspec.convert(doc, objects.Pod))


def place(spread: dict[str, Any] | None, batching: bool, count: int) -> tuple[list[str], OpportunisticBatch]:
    """``count`` identical pods, each of which only fits a node alone, scheduled one cycle after
    the other (each assumed by Reserve before the next): where they went and the batch."""
    service, fw = framework(spread)
    cache = service.cluster.cache
    cache.seed([node(f"n{i}", m) for i, m in enumerate(("4Gi", "5Gi", "6Gi", "8Gi", "12Gi", "16Gi"))], [])
    sched = Scheduler("s", fw, service.cluster, SchedulingQueue(nominator=fw.nominator))
    previous = features.current()
    features.set_current(features.FeatureGates({"OpportunisticBatching": batching}))
    placed = []
    try:
        for i in range(count):
            sched.queue.scheduling_cycle += 1  # as each Pop counts a cycle
            state = CycleState()
            result, status = asyncio.run(sched.scheduling_cycle(state, big_pod(i), time.perf_counter()))
            assert status.is_success(), status
            placed.append(result.suggested_host)
    finally:
        features.set_current(previous)
    return placed, fw.batch


def test_identical_pods_reuse_the_ranking_and_land_where_full_cycles_would() -> None:
    """With PodTopologySpread's ``defaultingType: List`` (no default constraints) every default
    plugin signs: the second pod onward takes the next node of the first pod's ranking without
    scoring, and the placements equal those of full cycles (a node's scores do not change when a
    pod lands elsewhere, and no two nodes tie: totals 403 to 424)."""
    spread = {"defaultingType": "List"}
    batched, batch = place(spread, True, 5)
    full, no_batch = place(spread, False, 5)
    assert batched == full and len(set(batched)) == 5
    assert batch.batched_pods == 4 and batch.stats["hint_used"] == 4
    assert no_batch.batched_pods == 0


def test_the_default_profile_never_batches() -> None:
    """v1.36.3's default PodTopologySpread has system-default constraints: every pod is
    unsignable ("pods with default topology constraints are not signable")."""
    _, fw = framework(None)
    assert fw.batchable_plugins is not None  # every default plugin signs ...
    assert fw.sign_pod(big_pod(1)) is None  # ... but PodTopologySpread refuses
    placed, batch = place(None, True, 3)
    assert len(set(placed)) == 3 and batch.batched_pods == 0


def spec_pod(name: str, **spec: Any) -> PodInfo:
    doc = {"metadata": {"name": name, "labels": {"app": "a"}}, "spec": {"schedulerName": "s", **spec}}
    return PodInfo(msgspec.convert(doc, objects.Pod))


def test_the_default_plugins_sign_what_they_read() -> None:
    """Pods alike in what the plugins read share a signature (the name and the order of
    tolerations and node selector terms do not count); a toleration, a host port, a request, an
    image or a label makes it differ."""
    _, fw = framework({"defaultingType": "List"})
    tol = [{"key": "k", "operator": "Exists"}, {"key": "a", "operator": "Exists"}]
    c = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}
    base = fw.sign_pod(spec_pod("one", tolerations=tol, containers=[c]))
    assert base is not None
    assert fw.sign_pod(spec_pod("two", tolerations=tol[::-1], containers=[c])) == base
    others = [
        spec_pod("t", tolerations=tol[:1], containers=[c]),
        spec_pod("p", tolerations=tol, containers=[{**c, "ports": [{"containerPort": 80, "hostPort": 80}]}]),
        spec_pod("r", tolerations=tol, containers=[{**c, "resources": {"requests": {"cpu": "2"}}}]),
        spec_pod("i", tolerations=tol, containers=[{**c, "image": "redis"}]),
        spec_pod("s", tolerations=tol, containers=[c], nodeSelector={"zone": "a"}),
    ]
    assert all(fw.sign_pod(p) not in (None, base) for p in others)
    labelled = PodInfo(
        msgspec.convert(
            {
                "metadata": {"name": "l", "labels": {"app": "b"}},
                "spec": {"schedulerName": "s", "tolerations": tol, "containers": [c]},
            },
            objects.Pod,
        )
    )
    assert fw.sign_pod(labelled) not in (None, base)  # InterPodAffinity signs the labels
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "h"}]}}
    assert fw.sign_pod(spec_pod("a", containers=[c], affinity=affinity)) is None


def test_a_pod_with_resource_claims_is_unsignable() -> None:
    """DynamicResources' ``SignPod``: "pods with dra resource claims are not signable"."""
    _, fw = framework({"defaultingType": "List"})
    claims = [{"name": "gpu", "resourceClaimName": "gpu-claim"}]
    assert fw.sign_pod(spec_pod("c", resourceClaims=claims)) is None
    assert fw.sign_pod(spec_pod("n")) is not None

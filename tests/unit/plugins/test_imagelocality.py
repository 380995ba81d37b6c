"""ImageLocality, ported from kube-scheduler v1.30's
pkg/scheduler/framework/plugins/imagelocality/image_locality_test.go (``TestImageLocalityPriority``,
``TestNormalizedImageName``), plus the cluster-wide node count from ``state.snapshot`` and a run
through the framework.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import pytest

from app.extender.verbs import extender_scores
from app.framework import SUCCESS, CycleState, NodeInfo, PodInfo, objects
from app.plugins.imagelocality import (
    MB,
    PLUGIN,
    ImageLocality,
    calculate_priority,
    normalized_image_name,
)
from tests.unit.helpers import framework, prioritize


def make_image_node(name: str, images: Sequence[tuple[Sequence[str], int]]) -> NodeInfo:
    """upstream's ``makeImageNode``: a node whose ``status.images`` are ``(names, size in MiB)``."""
    status: dict[str, Any] = {"images": [{"names": list(names), "sizeBytes": size * MB} for names, size in images]}
    doc = {"metadata": {"name": name}, "status": status if images else {}}
    return NodeInfo(name, msgspec.convert(doc, objects.Node))


def pod_spec(containers: Sequence[str], init: Sequence[str] = ()) -> PodInfo:
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(containers)]}
    if init:
        spec["initContainers"] = [{"name": f"i{i}", "image": image} for i, image in enumerate(init)]
    return PodInfo(msgspec.convert({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}, objects.Pod))


TEST_40_250 = pod_spec(["gcr.io/40", "gcr.io/250"])
TEST_40_300 = pod_spec(["gcr.io/40", "gcr.io/300"])
TEST_MIN_MAX = pod_spec(["gcr.io/10", "gcr.io/4000"])
TEST_300_600_900 = pod_spec(["gcr.io/300", "gcr.io/600", "gcr.io/900"])
TEST_30_40 = pod_spec(["gcr.io/30", "gcr.io/40"])
TEST_30_INIT_300 = pod_spec(["gcr.io/30"], init=["gcr.io/300"])

NODE_40_300_2000 = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300),
    (["gcr.io/2000:latest"], 2000),
]
NODE_250_10 = [(["gcr.io/250:latest"], 250), (["gcr.io/10:latest", "gcr.io/10:v1"], 10)]
NODE_600_40_900 = [(["gcr.io/600:latest"], 600), (["gcr.io/40:latest"], 40), (["gcr.io/900:latest"], 900)]
NODE_300_600_900 = [(["gcr.io/300:latest"], 300), (["gcr.io/600:latest"], 600), (["gcr.io/900:latest"], 900)]
NODE_4000_30 = [(["gcr.io/4000:latest"], 4000), (["gcr.io/30:latest"], 30)]
NODE_20_30_40 = [(["gcr.io/20:latest"], 20), (["gcr.io/30:latest"], 30), (["gcr.io/40:latest"], 40)]
NODE_WITH_NO_IMAGES: list[tuple[list[str], int]] = []

Images = list[tuple[list[str], int]]
# (name, pod, nodes, expected scores) as upstream's TestImageLocalityPriority table
CASES: list[tuple[str, PodInfo, list[tuple[str, Images]], list[int]]] = [
    (
        "two images spread on two nodes, prefer the larger image one",
        TEST_40_250,
        [("node1", NODE_40_300_2000), ("node2", NODE_250_10)],
        [0, 5],
    ),
    (
        "two images on one node, prefer this node",
        TEST_40_300,
        [("node1", NODE_40_300_2000), ("node2", NODE_250_10)],
        [7, 0],
    ),
    ("if exceed limit, use limit", TEST_MIN_MAX, [("node1", NODE_4000_30), ("node2", NODE_250_10)], [100, 0]),
    (
        "if exceed limit, use limit (with node which has no images present)",
        TEST_MIN_MAX,
        [("node1", NODE_4000_30), ("node2", NODE_250_10), ("node3", NODE_WITH_NO_IMAGES)],
        [66, 0, 0],
    ),
    (
        "pod with multiple large images, node2 is preferred",
        TEST_300_600_900,
        [("node1", NODE_600_40_900), ("node2", NODE_300_600_900), ("node3", NODE_WITH_NO_IMAGES)],
        [32, 36, 0],
    ),
    ("pod with multiple small images", TEST_30_40, [("node1", NODE_20_30_40), ("node2", NODE_4000_30)], [1, 0]),
    (
        "include InitContainers: two images spread on two nodes, prefer the larger image one",
        TEST_30_INIT_300,
        [("node1", NODE_40_300_2000), ("node2", NODE_20_30_40)],
        [6, 0],
    ),
]


class Lister:
    """A minimal :class:`~app.framework.NodeLister` over fixed NodeInfos (upstream's snapshot)."""

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        self.nodes = list(nodes)

    def get(self, name: str) -> NodeInfo | None:
        return next((n for n in self.nodes if n.name == name), None)

    def list(self) -> Sequence[NodeInfo]:
        return self.nodes

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return None


@pytest.mark.parametrize("with_snapshot", [False, True], ids=["request-nodes", "snapshot"])
@pytest.mark.parametrize(("pod", "nodes", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_image_locality_priority(
    pod: PodInfo, nodes: list[tuple[str, Images]], expected: list[int], with_snapshot: bool
) -> None:
    infos = [make_image_node(name, images) for name, images in nodes]
    plugin = ImageLocality()
    state = CycleState(Lister(infos) if with_snapshot else None)
    assert plugin.pre_score(state, pod, infos).is_success()
    assert [plugin.score(state, pod, n) for n in infos] == [(e, SUCCESS) for e in expected]


FAKE_DIGEST = "sha256:" + hashlib.sha256(b"root").hexdigest()


@pytest.mark.parametrize(
    ("value", "output"),
    [
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root:tag", "root:tag"),
        ("root@" + FAKE_DIGEST, "root@" + FAKE_DIGEST),
    ],
    ids=["add :latest postfix 1", "add :latest postfix 2", "keep it as is 1", "keep it as is 2"],
)
def test_normalized_image_name(value: str, output: str) -> None:
    assert normalized_image_name(value) == output


def test_spread_counts_every_node_of_the_snapshot() -> None:
    """TotalNodes and NumNodes come from the whole cluster, not only the candidates: a 2000 MiB
    image on 1 of 4 nodes scores 100 * (500 MiB - 23 MiB) / (1000 MiB - 23 MiB) = 48."""
    candidate = make_image_node("a", [(["big:1"], 2000)])
    others = [make_image_node(n, []) for n in ("b", "c", "d")]
    pod = pod_spec(["big:1"])
    plugin = ImageLocality()
    state = CycleState(Lister([candidate, *others]))
    plugin.pre_score(state, pod, [candidate])
    assert plugin.score(state, pod, candidate)[0] == 100 * (500 * MB - 23 * MB) // (977 * MB) == 48
    # without a snapshot only the candidates are known: 1 of 1 node, the max
    state = CycleState()
    plugin.pre_score(state, pod, [candidate])
    assert plugin.score(state, pod, candidate)[0] == 100


def test_calculate_priority_bounds() -> None:
    assert calculate_priority(0, 1) == 0
    assert calculate_priority(23 * MB, 1) == 0
    assert calculate_priority(1000 * MB, 1) == 100
    assert calculate_priority(10**15, 3) == 100
    assert calculate_priority(0, 0) == 0


def test_through_framework() -> None:
    infos = [make_image_node("node1", NODE_40_300_2000), make_image_node("node2", NODE_250_10)]
    plugin = PLUGIN.factory(None, None)  # type: ignore[arg-type]
    out = prioritize(framework(score=[plugin]), TEST_40_300, infos)
    assert out.plugin_scores == {"ImageLocality": [7, 0]} and out.totals == [7, 0]
    assert extender_scores(out) == [1, 0]  # 7 on 0..100 -> 0.7 -> 1 on the extender's 0..10
    assert PLUGIN.name == "ImageLocality" and not PLUGIN.needs_cluster and PLUGIN.args is None

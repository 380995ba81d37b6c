"""The node tree against kube-scheduler's tables: pkg/scheduler/internal/cache/node_tree_test.go
(kubernetes/kubernetes; TestNodeTree_AddNode, _RemoveNode, _UpdateNode, _List, _List_Exhausted,
TestNodeTreeMultiOperations) as data, then the cluster state listing its nodes in the tree's
order."""

from __future__ import annotations

from typing import Any

import pytest

from app.cluster.cache import Cache
from app.cluster.node_tree import NodeTree, zone_key
from tests.unit.helpers import seed

REGION, ZONE = "topology.kubernetes.io/region", "topology.kubernetes.io/zone"
BETA_REGION, BETA_ZONE = "failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone"

#: ``allNodes``: (name, labels)
ALL_NODES: list[tuple[str, dict[str, str]]] = [
    ("node-0", {}),  # no region-zone label
    ("node-1", {REGION: "region-1"}),  # region only
    ("node-2", {ZONE: "zone-2"}),  # zone only
    ("node-3", {REGION: "region-1", ZONE: "zone-2"}),
    ("node-4", {REGION: "region-1", ZONE: "zone-2"}),
    ("node-5", {REGION: "region-1", ZONE: "zone-3"}),  # another zone, same region
    ("node-6", {REGION: "region-2", ZONE: "zone-2"}),  # a new region and zone
    ("node-7", {REGION: "region-2", ZONE: "zone-2"}),
    ("node-8", {REGION: "region-2", ZONE: "zone-2"}),
    # the current and the deprecated labels
    ("node-9", {REGION: "region-2", ZONE: "zone-2", BETA_REGION: "region-2", BETA_ZONE: "zone-2"}),
    ("node-10", {BETA_REGION: "region-2", BETA_ZONE: "zone-3"}),  # the deprecated ones only
]

Tree = dict[str, list[str]]


def tree_of(nodes: list[tuple[str, dict[str, str]]]) -> NodeTree:
    """``newNodeTree(nodes)``."""
    tree = NodeTree()
    for name, labels in nodes:
        tree.add_node(name, labels)
    return tree


def verify(tree: NodeTree, expected: Tree) -> None:
    """``verifyNodeTree``."""
    assert tree.num_nodes == sum(len(names) for names in expected.values())
    assert tree.tree == expected
    assert sorted(tree.zones) == sorted(expected)


@pytest.mark.parametrize(
    ("to_add", "expected"),
    [
        pytest.param(ALL_NODES[:1], {"": ["node-0"]}, id="single node no labels"),
        pytest.param([ALL_NODES[0], ALL_NODES[0]], {"": ["node-0"]}, id="same node specified twice"),
        pytest.param(
            ALL_NODES[:4],
            {
                "": ["node-0"],
                "region-1:\x00:": ["node-1"],
                ":\x00:zone-2": ["node-2"],
                "region-1:\x00:zone-2": ["node-3"],
            },
            id="mix of nodes with and without proper labels",
        ),
        pytest.param(
            ALL_NODES[:7],
            {
                "": ["node-0"],
                "region-1:\x00:": ["node-1"],
                ":\x00:zone-2": ["node-2"],
                "region-1:\x00:zone-2": ["node-3", "node-4"],
                "region-1:\x00:zone-3": ["node-5"],
                "region-2:\x00:zone-2": ["node-6"],
            },
            id="mix of nodes with and without proper labels and some zones with multiple nodes",
        ),
        pytest.param(
            ALL_NODES[9:],
            {"region-2:\x00:zone-2": ["node-9"], "region-2:\x00:zone-3": ["node-10"]},
            id="nodes also using deprecated zone/region label",
        ),
    ],
)
def test_add_node(to_add: list[tuple[str, dict[str, str]]], expected: Tree) -> None:
    verify(tree_of(to_add), expected)


@pytest.mark.parametrize(
    ("existing", "to_remove", "expected", "found"),
    [
        pytest.param(
            ALL_NODES[:7],
            ALL_NODES[:1],
            {
                "region-1:\x00:": ["node-1"],
                ":\x00:zone-2": ["node-2"],
                "region-1:\x00:zone-2": ["node-3", "node-4"],
                "region-1:\x00:zone-3": ["node-5"],
                "region-2:\x00:zone-2": ["node-6"],
            },
            True,
            id="remove a single node with no labels",
        ),
        pytest.param(
            ALL_NODES[:7],
            ALL_NODES[1:4],
            {
                "": ["node-0"],
                "region-1:\x00:zone-2": ["node-4"],
                "region-1:\x00:zone-3": ["node-5"],
                "region-2:\x00:zone-2": ["node-6"],
            },
            True,
            id="remove a few nodes including one from a zone with multiple nodes",
        ),
        pytest.param(ALL_NODES[:7], ALL_NODES[:7], {}, True, id="remove all nodes"),
        pytest.param([], ALL_NODES[:5], {}, False, id="remove non-existing node"),
    ],
)
def test_remove_node(
    existing: list[tuple[str, dict[str, str]]],
    to_remove: list[tuple[str, dict[str, str]]],
    expected: Tree,
    found: bool,
) -> None:
    tree = tree_of(existing)
    for name, labels in to_remove:
        assert tree.remove_node(name, labels) is found
    verify(tree, expected)


REGION_1_ZONE_2 = {REGION: "region-1", ZONE: "zone-2"}


@pytest.mark.parametrize(
    ("existing", "update", "expected"),
    [
        pytest.param(
            ALL_NODES[:7],
            ("node-0", REGION_1_ZONE_2),
            {
                "region-1:\x00:": ["node-1"],
                ":\x00:zone-2": ["node-2"],
                "region-1:\x00:zone-2": ["node-3", "node-4", "node-0"],
                "region-1:\x00:zone-3": ["node-5"],
                "region-2:\x00:zone-2": ["node-6"],
            },
            id="update a node without label",
        ),
        pytest.param(
            ALL_NODES[:1],
            ("node-0", REGION_1_ZONE_2),
            {"region-1:\x00:zone-2": ["node-0"]},
            id="update the only existing node",
        ),
        pytest.param(
            ALL_NODES[:1],
            ("node-new", REGION_1_ZONE_2),
            {"": ["node-0"], "region-1:\x00:zone-2": ["node-new"]},
            id="update non-existing node",
        ),
    ],
)
def test_update_node(existing: list[tuple[str, dict[str, str]]], update: tuple[str, Any], expected: Tree) -> None:
    tree = tree_of(existing)
    name, labels = update
    old = next((old for n, old in ALL_NODES if n == name), {})  # "nonexisting-node": no labels
    assert tree.update_node(name, old, labels) is True  # the zone key changed: the node moved
    verify(tree, expected)


def test_update_node_within_its_zone_keeps_its_place() -> None:
    tree = tree_of(ALL_NODES[:7])
    name, labels = ALL_NODES[3]
    assert tree.update_node(name, labels, {**labels, "other": "label"}) is False
    assert tree.list() == tree_of(ALL_NODES[:7]).list()


@pytest.mark.parametrize(
    ("to_add", "expected"),
    [
        pytest.param([], [], id="empty tree"),
        pytest.param(ALL_NODES[:1], ["node-0"], id="one node"),
        pytest.param(ALL_NODES[:4], ["node-0", "node-1", "node-2", "node-3"], id="four nodes"),
        pytest.param(
            ALL_NODES[:9],
            ["node-0", "node-1", "node-2", "node-3", "node-5", "node-6", "node-4", "node-7", "node-8"],
            id="all nodes",
        ),
    ],
)
def test_list(to_add: list[tuple[str, dict[str, str]]], expected: list[str]) -> None:
    assert tree_of(to_add).list() == expected


def test_list_exhausted() -> None:
    tree = tree_of(ALL_NODES[:9])
    tree.num_nodes += 1
    with pytest.raises(ValueError, match="all zones exhausted"):
        tree.list()


@pytest.mark.parametrize(
    ("to_add", "to_remove", "operations", "expected"),
    [
        pytest.param(ALL_NODES[2:9], ALL_NODES[2:9], "aaarrr", [], id="add and remove all nodes"),
        pytest.param(ALL_NODES[2:9], ALL_NODES[2:9], "aaar", ["node-3", "node-4"], id="add and remove some nodes"),
        pytest.param(ALL_NODES[2:9], ALL_NODES[2:9], "aaarrra", ["node-5"], id="remove three nodes"),
        pytest.param(
            [*ALL_NODES[4:9], ALL_NODES[3]],
            [],
            "aaaaaa",
            ["node-4", "node-5", "node-6", "node-3", "node-7", "node-8"],
            id="add more nodes to an exhausted zone",
        ),
        pytest.param(
            [*ALL_NODES[3:5], *ALL_NODES[6:8]],
            ALL_NODES[3:5],
            "aaraar",
            ["node-6", "node-7"],
            id="remove zone and add new",
        ),
    ],
)
def test_multi_operations(
    to_add: list[tuple[str, dict[str, str]]],
    to_remove: list[tuple[str, dict[str, str]]],
    operations: str,
    expected: list[str],
) -> None:
    tree = NodeTree()
    adds, removes = iter(to_add), iter(to_remove)
    for op in operations:
        if op == "a":
            tree.add_node(*next(adds))
        else:
            tree.remove_node(*next(removes))
    assert tree.list() == expected


def test_zone_key_reads_the_deprecated_labels_first() -> None:
    assert zone_key(None) == "" and zone_key({"other": "x"}) == ""
    assert zone_key({ZONE: "a", BETA_ZONE: "b", REGION: "r"}) == "r:\x00:b"


# -- the cluster state's order ------------------------------------------------------------------------


def node_doc(name: str, zone: str | None) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name} | ({ZONE: zone} if zone else {})
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": {"cpu": "4", "pods": "110"}}}


def test_the_snapshot_lists_nodes_round_robin_across_zones() -> None:
    """Node pools added zone by zone are listed one node of each zone in turn (a search that
    stops early samples every zone); a node whose zone label changes moves to the end of its new
    zone; a deleted node leaves the order."""
    state = Cache()
    seed(state, [node_doc(f"a{i}", "a") for i in range(3)] + [node_doc(f"b{i}", "b") for i in range(2)], [])
    assert [n.name for n in state.snapshot().list()] == ["a0", "b0", "a1", "b1", "a2"]
    for i in range(2):
        state.upsert_node(_node(node_doc(f"c{i}", "c")))
    assert [n.name for n in state.snapshot().list()] == ["a0", "b0", "c0", "a1", "b1", "c1", "a2"]
    state.upsert_node(_node(node_doc("a0", "b")))
    assert [n.name for n in state.snapshot().list()] == ["a1", "b0", "c0", "a2", "b1", "c1", "a0"]
    state.delete_node(_node(node_doc("b0", "b")))
    assert [n.name for n in state.snapshot().list()] == ["a1", "b1", "c0", "a2", "a0", "c1"]
    # a relist keeps the order of the nodes it still shows and adds the new ones last
    state.replace_nodes([_node(node_doc(n, z)) for n, z in [("c0", "c"), ("a2", "a"), ("a1", "a"), ("d0", "d")]])
    assert [n.name for n in state.snapshot().list()] == ["a1", "c0", "d0", "a2"]


def _node(doc: dict[str, Any]) -> Any:
    import msgspec

    from app.framework import objects

    return msgspec.convert(doc, objects.Node)


def test_names_resolved_in_the_next_snapshot_are_the_names_resolved_anew() -> None:
    """A NodeNames list resolved in a snapshot and then in the cluster state's next one (only the
    nodes changed meanwhile looked up again: :attr:`Snapshot.changed`) gives what resolving it
    anew gives, through node and pod changes, a node deleted and added back, and a relist."""
    import random
    import types

    import msgspec

    from app.api.service import ExtenderService
    from app.extender.codec import ExtenderArgsView
    from app.framework import PodInfo, objects
    from tests.support.apiserver import pod

    state = Cache()
    names = [f"n{i}" for i in range(40)]
    seed(state, [node_doc(n, "a") for n in names], [])
    service: Any = types.SimpleNamespace(_resolved=None)
    view = ExtenderArgsView(None, None, None, b"{}", True, names)  # type: ignore[arg-type]
    rng = random.Random(7)
    patched = 0
    for step in range(200):
        choice = rng.random()
        name = rng.choice(names)
        if choice < 0.5:
            state.upsert_pod(PodInfo(msgspec.convert(pod(f"p{step}", "default", name), objects.Pod)))
        elif choice < 0.7:
            state.upsert_node(_node(node_doc(name, rng.choice("ab"))))
        elif choice < 0.8:
            state.delete_node(_node(node_doc(name, "a")))
        elif choice < 0.82:
            state.replace_nodes([_node(node_doc(n, "a")) for n in names[: rng.randrange(30, 41)]])
        snapshot = state.snapshot()
        before = service._resolved
        got = ExtenderService.resolve_nodes(service, view, snapshot)
        expected = [snapshot.known.get(n) for n in names]
        assert [*got.nodes] == [info for info in expected if info is not None]
        assert got.unknown == [i for i, info in enumerate(expected) if info is None]
        patched += before is not None and service._resolved.index is not None and not got.unknown
    assert patched > 20

"""``CheckNodeAffinity`` (component-helpers storage/volume/helpers.go) as the volume plugins call it:
against a node with the given labels and no name, matched by component-helpers'
``MatchNodeSelectorTerms``, which compares ``matchFields`` only against the fields of a node that
has a name; and ``FindMatchingVolume`` (v1.36.3 pv_helpers_test.go ``TestFindMatchVolumeWithNode``,
its rows with the ``VolumeAttributesClass`` gate on: it is GA and locked on in v1.36)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from app.framework.volumes import PersistentVolume, PersistentVolumeClaim
from app.plugins.volumes.helpers import check_node_affinity, find_matching_volume


def pv_with(*terms: dict[str, Any]) -> PersistentVolume:
    doc = {"metadata": {"name": "pv"}, "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": list(terms)}}}}
    return msgspec.convert(doc, PersistentVolume)


ZONE_A = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
NAME_N1 = {"key": "metadata.name", "operator": "In", "values": ["n1"]}


@pytest.mark.parametrize(
    ("terms", "labels", "matches"),
    [
        ([{"matchExpressions": [ZONE_A]}], {"topology.kubernetes.io/zone": "a"}, True),
        ([{"matchExpressions": [ZONE_A]}], {"topology.kubernetes.io/zone": "b"}, False),
        # a nameless node has no fields: the term's matchFields are not compared, so it matches
        ([{"matchFields": [NAME_N1]}], {}, True),
        ([{"matchExpressions": [ZONE_A], "matchFields": [NAME_N1]}], {"topology.kubernetes.io/zone": "b"}, False),
        # a malformed matchFields requirement is a parse error: the term matches nothing
        ([{"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["x"]}]}], {}, False),
        ([{}], {}, False),  # an empty term matches nothing
    ],
)
def test_check_node_affinity_against_a_nameless_node(
    terms: list[dict[str, Any]], labels: dict[str, str], matches: bool
) -> None:
    assert check_node_affinity(pv_with(*terms), labels) is matches


# -- TestFindMatchVolumeWithNode (pv_helpers_test.go, v1.36.3) ------------------------------------------


def make_test_volume(uid: str, name: str, capacity: str, available: bool, **spec: Any) -> dict[str, Any]:
    """``makeTestVolume``: a local volume, RWO and ROX, ``Filesystem``; ``spec`` overrides."""
    doc: dict[str, Any] = {
        "metadata": {"uid": uid, "name": name},
        "spec": {
            "capacity": {"storage": capacity},
            "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
            "volumeMode": "Filesystem",
            **spec,
        },
    }
    if available:
        doc["status"] = {"phase": "Available"}
    return doc


def affinity(value: str) -> dict[str, Any]:
    """``makeNodeAffinity("key1", value)``."""
    expression = {"key": "key1", "operator": "In", "values": [value]}
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}}


FIND_VOLUMES = [
    make_test_volume("local-small", "local001", "5G", True),
    make_test_volume("local-pd-very-large", "local002", "200E", True, storageClassName="large"),
    make_test_volume(
        "affinity-pv", "affinity001", "100G", True, storageClassName="wait", nodeAffinity=affinity("value1")
    ),
    make_test_volume(
        "affinity-pv2", "affinity002", "150G", True, storageClassName="wait", nodeAffinity=affinity("value1")
    ),
    make_test_volume(
        "affinity-prebound",
        "affinity003",
        "100G",
        True,
        storageClassName="wait",
        claimRef={"name": "claim02", "namespace": "myns"},
        nodeAffinity=affinity("value1"),
    ),
    make_test_volume(
        "affinity-pv3", "affinity003", "200G", True, storageClassName="wait", nodeAffinity=affinity("value3")
    ),
    make_test_volume(
        "affinity-pv4", "affinity004", "200G", False, storageClassName="wait", nodeAffinity=affinity("value4")
    ),
]
GOLD = [{**v, "spec": {**v["spec"], "volumeAttributesClassName": "gold"}} for v in FIND_VOLUMES]


def make_test_claim(name: str, modes: list[str], vac: str | None = None) -> PersistentVolumeClaim:
    """``makeTestPersistentVolumeClaim(name, "100G", modes, ...)``: class ``wait``, ``Filesystem``."""
    spec: dict[str, Any] = {
        "accessModes": modes,
        "resources": {"requests": {"storage": "100G"}},
        "storageClassName": "wait",
        "volumeMode": "Filesystem",
    }
    if vac is not None:
        spec["volumeAttributesClassName"] = vac
    return msgspec.convert({"metadata": {"name": name, "namespace": "myns"}, "spec": spec}, PersistentVolumeClaim)


RWO, RWX = ["ReadWriteOnce"], ["ReadWriteMany"]
# (name, expected uid, volumes, claim, node's key1 label, excluded volume names)
FIND_MATCHING: list[tuple[str, str, list[dict[str, Any]], PersistentVolumeClaim, str, set[str]]] = [
    ("success-match", "affinity-pv", FIND_VOLUMES, make_test_claim("claim01", RWO), "value1", set()),
    ("success-prebound", "affinity-prebound", FIND_VOLUMES, make_test_claim("claim02", RWO), "value1", set()),
    ("success-exclusion", "affinity-pv2", FIND_VOLUMES, make_test_claim("claim01", RWO), "value1", {"affinity001"}),
    (
        "fail-exclusion",
        "",
        FIND_VOLUMES,
        make_test_claim("claim01", RWO),
        "value1",
        {"affinity001", "affinity002", "affinity002-vac"},
    ),
    ("fail-accessmode", "", FIND_VOLUMES, make_test_claim("claim01", RWX), "value1", set()),
    ("fail-nodeaffinity", "", FIND_VOLUMES, make_test_claim("claim01", RWO), "value2", set()),
    ("fail-prebound-node-affinity", "", FIND_VOLUMES, make_test_claim("claim02", RWO), "value3", set()),
    ("fail-nonavaliable", "", FIND_VOLUMES, make_test_claim("claim04", RWO), "value4", set()),
    (
        "success-bad-and-good-node-affinity",
        "affinity-pv3",
        FIND_VOLUMES,
        make_test_claim("claim03", RWO),
        "value3",
        set(),
    ),
    ("success-match-with-vac", "affinity-pv", GOLD, make_test_claim("claim01", RWO, "gold"), "value1", set()),
    ("fail-vac", "", FIND_VOLUMES, make_test_claim("claim01", RWO, "silver"), "value1", set()),
    ("fail-prebound-vac", "", GOLD, make_test_claim("claim02", RWO, "silver"), "value1", set()),
]


@pytest.mark.parametrize(
    ("name", "want", "volumes", "claim", "label", "excluded"), FIND_MATCHING, ids=[c[0] for c in FIND_MATCHING]
)
def test_find_matching_volume_with_node(
    name: str, want: str, volumes: list[dict[str, Any]], claim: PersistentVolumeClaim, label: str, excluded: set[str]
) -> None:
    pvs = [msgspec.convert(v, PersistentVolume) for v in volumes]
    found = find_matching_volume(claim, pvs, {"key1": label}, excluded, True)
    assert (found.meta.uid if found is not None else "") == want


@pytest.mark.skip(reason="the VolumeAttributesClass gate is GA and locked on in v1.36: its off rows cannot run")
def test_find_matching_volume_with_the_gate_off() -> None:
    """``fail-on-error`` and ``fail-volumes-vac`` (``vacEnabled: false``) of upstream's table."""

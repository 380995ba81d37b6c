"""``CheckNodeAffinity`` (v1.30 pkg/volume/util/util.go) as the volume plugins call it: against a
node with the given labels and no name, matched by component-helpers' ``MatchNodeSelectorTerms``,
which compares ``matchFields`` only against the fields of a node that has a name."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from app.framework.volumes import PersistentVolume
from app.plugins.volumes.helpers import check_node_affinity


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

"""PodTopologySpread, against kube-scheduler v1.30's tables.

Ported from pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go
(``TestSingleConstraint``, ``TestMultipleConstraints``, and ``TestPreFilterStateAddPod`` and
``TestPreFilterStateRemovePod`` with the NodeInclusionPolicy feature on, as v1.30) and scoring_test.go
(``TestPodTopologySpreadScore``, ``TestPreScoreStateEmptyNodes``) of kubernetes/kubernetes, as
data: each case keeps upstream's name. Upstream's builders (``st.MakePod()``,
``st.MakeNode()``) become the small helpers below; pods have upstream's empty namespace unless a
case sets one.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import pytest

from app.extender.verbs import run_filter
from app.framework import objects
from app.framework.runtime import Framework, ScoreResult
from app.framework.status import Code
from app.framework.types import CycleState, NodeInfo, NodeUsage, PodInfo
from app.plugins.podtopologyspread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
    NAME,
    PLUGIN,
    Constraint,
    PodTopologySpread,
    PodTopologySpreadArgs,
    PreScoreState,
    SelectorError,
    compile_selector,
    go_round,
    required_node_affinity,
    topology_normalizing_weight,
)
from tests.support.cluster import MemoryCluster
from tests.unit.helpers import framework as profile
from tests.unit.helpers import prioritize

DNS, SA = "DoNotSchedule", "ScheduleAnyway"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
#: upstream's ``taints``: node.kubernetes.io/unschedulable:NoSchedule
TAINTS = [{"key": "node.kubernetes.io/unschedulable", "value": "", "effect": "NoSchedule"}]
S, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# -- builders (upstream's st.MakePod / st.MakeNode) -------------------------------------------------


def tsc(
    max_skew: int,
    key: str,
    mode: str,
    selector: dict[str, Any] | None,
    min_domains: int | None = None,
    affinity_policy: str | None = None,
    taints_policy: str | None = None,
    match_label_keys: list[str] | None = None,
) -> dict[str, Any]:
    """``SpreadConstraint(maxSkew, key, mode, selector, minDomains, nodeAffinityPolicy,
    nodeTaintsPolicy, matchLabelKeys)``."""
    doc: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": mode}
    for field, value in (
        ("labelSelector", selector),
        ("minDomains", min_domains),
        ("nodeAffinityPolicy", affinity_policy),
        ("nodeTaintsPolicy", taints_policy),
        ("matchLabelKeys", match_label_keys),
    ):
        if value is not None:
            doc[field] = value
    return doc


def in_pod(
    labels: Mapping[str, str],
    *constraints: dict[str, Any],
    node_selector: Mapping[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    namespace: str = "",
    tolerations: list[dict[str, Any]] | None = None,
) -> PodInfo:
    """The incoming pod ``p``."""
    spec: dict[str, Any] = {"topologySpreadConstraints": list(constraints)}
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        spec["affinity"] = affinity
    if tolerations is not None:
        spec["tolerations"] = tolerations
    doc = {"metadata": {"name": "p", "namespace": namespace, "uid": "uid-p", "labels": dict(labels)}, "spec": spec}
    return PodInfo(msgspec.convert(doc, objects.Pod))


def affinity_in(key: str, values: list[str], op: str = "In") -> dict[str, Any]:
    """``NodeAffinityIn`` / ``NodeAffinityNotIn`` (one matchExpressions term)."""
    req = {"key": key, "operator": op, "values": values}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [req]}]}
        }
    }


def nd(name: str, labels: Mapping[str, str], taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A node document."""
    doc: dict[str, Any] = {"metadata": {"name": name, "labels": dict(labels)}}
    if taints is not None:
        doc["spec"] = {"taints": taints}
    return doc


def zn(name: str, zone: str, **extra: str) -> dict[str, Any]:
    """``MakeNode().Name(name).Label("zone", zone).Label("node", name)``."""
    return nd(name, {"zone": zone, "node": name, **extra})


def hn(name: str) -> dict[str, Any]:
    """``MakeNode().Name(name).Label(v1.LabelHostname, name)``."""
    return nd(name, {LABEL_HOSTNAME: name})


def ep(
    name: str, node: str, labels: Mapping[str, str] | None = None, namespace: str = "", terminating: bool = False
) -> dict[str, Any]:
    """An existing pod on ``node``, labelled ``foo`` unless ``labels`` are given."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "labels": dict(labels if labels is not None else {"foo": ""}),
    }
    if terminating:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node}}


def foo_pods(node: str, *names: str) -> list[dict[str, Any]]:
    """Existing pods labelled ``foo`` on ``node``."""
    return [ep(n, node) for n in names]


def node_infos(nodes: Sequence[dict[str, Any]], pods: Sequence[dict[str, Any]]) -> list[NodeInfo]:
    """NodeInfos of ``nodes`` with the ``pods`` bound to them."""
    by_node: dict[str, list[PodInfo]] = {}
    for p in pods:
        by_node.setdefault(p["spec"]["nodeName"], []).append(PodInfo(msgspec.convert(p, objects.Pod)))
    out = []
    for n in nodes:
        name = n["metadata"]["name"]
        out.append(NodeInfo(name, msgspec.convert(n, objects.Node), NodeUsage(pods=tuple(by_node.get(name, ())))))
    return out


class Snapshot:
    """A :class:`~app.framework.handle.NodeLister` over fixed NodeInfos."""

    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        self.infos = list(infos)

    def list(self) -> Sequence[NodeInfo]:
        return self.infos

    def get(self, name: str) -> NodeInfo | None:
        return next((n for n in self.infos if n.name == name), None)

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return None


def framework(plugin: PodTopologySpread) -> Framework:
    return profile(filter=[plugin], score=[plugin])


def run_score(plugin: PodTopologySpread, pod: PodInfo, nodes: Sequence[NodeInfo], state: CycleState) -> ScoreResult:
    return prioritize(framework(plugin), pod, nodes, state)


LIST = PodTopologySpreadArgs(defaulting_type="List")

FOUR = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")]
SPREAD_2103 = [*foo_pods("node-a", "p-a1", "p-a2"), ep("p-b1", "node-b"), *foo_pods("node-y", "p-y1", "p-y2", "p-y3")]
FOO_ONLY = [nd("node-a", {"node": "node-a", "foo": ""}), nd("node-b", {"node": "node-b", "foo": ""})]
FOO_ONLY += [nd("node-x", {"node": "node-x", "foo": ""})]
P_B1_B2_Y1 = [ep("p-b1", "node-a"), ep("p-b2", "node-b"), ep("p-y1", "node-y")]
FOO_POD = {"foo": ""}

# -- TestSingleConstraint ---------------------------------------------------------------------------

SINGLE_CONSTRAINT: list[dict[str, Any]] = [
    {
        "name": "no existing pods",
        "pod": in_pod(FOO_POD, tsc(1, "zone", DNS, FOO)),
        "nodes": FOUR,
        "pods": [],
        "want": {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    },
    {
        "name": "no existing pods, incoming pod doesn't match itself",
        "pod": in_pod(FOO_POD, tsc(1, "zone", DNS, BAR)),
        "nodes": FOUR,
        "pods": [],
        "want": {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    },
    {
        "name": "existing pods in a different namespace do not count",
        "pod": in_pod(FOO_POD, tsc(1, "zone", DNS, FOO)),
        "nodes": FOUR,
        "pods": [
            ep("p-a1", "node-a", namespace="ns1"),
            ep("p-b1", "node-a", namespace="ns2"),
            ep("p-x1", "node-x"),
            ep("p-y1", "node-y"),
        ],
        "want": {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
    },
    {
        "name": "existing pods do not match null selector",
        "pod": in_pod(FOO_POD, tsc(1, "zone", DNS, None)),
        "nodes": FOUR,
        "pods": [ep("p-x1", "node-x"), ep("p-y1", "node-y")],
        "want": {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    },
    {
        "name": "pods spread across zones as 3/3, all nodes fit",
        "pod": in_pod(FOO_POD, tsc(1, "zone", DNS, FOO)),
        "nodes": FOUR,
        "pods": SPREAD_2103,
        "want": {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    },
    {
        "name": "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        "pod": in_pod(FOO_POD, tsc(1, "zone", DNS, FOO)),
        "nodes": [zn("node-a", "zone1"), nd("node-b", {"zon": "zone1", "node": "node-b"}), *FOUR[2:]],
        "pods": [ep("p-a1", "node-a"), ep("p-b1", "node-b"), ep("p-x1", "node-x"), ep("p-y1", "node-y")],
        "want": {"node-a": S, "node-b": UU, "node-x": U, "node-y": U},
    },
    {
        "name": "pod cannot be scheduled as all nodes don't have label 'rack'",
        "pod": in_pod(FOO_POD, tsc(1, "rack", DNS, FOO)),
        "nodes": [zn("node-a", "zone1"), zn("node-x", "zone2")],
        "pods": [],
        "want": {"node-a": UU, "node-x": UU},
    },
    {
        "name": "pods spread across nodes as 2/1/0/3, only node-x fits",
        "pod": in_pod(FOO_POD, tsc(1, "node", DNS, FOO)),
        "nodes": FOUR,
        "pods": SPREAD_2103,
        "want": {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    },
    {
        "name": "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        "pod": in_pod(FOO_POD, tsc(2, "node", DNS, FOO)),
        "nodes": FOUR,
        "pods": SPREAD_2103,
        "want": {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
    },
    {
        "name": "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        "pod": in_pod({"bar": ""}, tsc(1, "node", DNS, FOO)),
        "nodes": FOUR,
        "pods": SPREAD_2103,
        "want": {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
    },
    {
        "name": "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        "pod": in_pod(FOO_POD, tsc(1, "node", DNS, FOO), affinity=affinity_in("node", ["node-a", "node-y"])),
        "nodes": FOUR,
        "pods": SPREAD_2103,
        "want": {"node-a": S, "node-b": S, "node-x": S, "node-y": U},
    },
    {
        "name": "terminating Pods should be excluded",
        "pod": in_pod(FOO_POD, tsc(1, "node", DNS, FOO)),
        "nodes": [nd("node-a", {"node": "node-a"}), nd("node-b", {"node": "node-b"})],
        "pods": [ep("p-a", "node-a", terminating=True), ep("p-b", "node-b")],
        "want": {"node-a": S, "node-b": U},
    },
    {
        "name": "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
        "pod": in_pod(FOO_POD, tsc(1, "zone", DNS, FOO), affinity=affinity_in("node", ["node-b"], "NotIn")),
        "nodes": FOUR,
        "pods": [ep("p-b1", "node-b"), ep("p-b2", "node-b"), ep("p-y1", "node-y")],
        "want": {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
    },
    {
        "name": "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, "
        "then the third node fits",
        "pod": in_pod(FOO_POD, tsc(2, "node", DNS, FOO, 4)),
        "nodes": [nd(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
        "pods": [*foo_pods("node-a", "p-a1", "p-a2"), *foo_pods("node-b", "p-b1", "p-b2"), ep("p-c1", "node-c")],
        "want": {"node-a": U, "node-b": U, "node-c": S},
    },
    {
        "name": "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, "
        "then the all nodes fit",
        "pod": in_pod(FOO_POD, tsc(2, "node", DNS, FOO, 2)),
        "nodes": [nd(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
        "pods": [*foo_pods("node-a", "p-a1", "p-a2"), *foo_pods("node-b", "p-b1", "p-b2"), ep("p-c1", "node-c")],
        "want": {"node-a": S, "node-b": S, "node-c": S},
    },
    {
        "name": "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, "
        "then the third and fourth nodes fit",
        "pod": in_pod(FOO_POD, tsc(2, "zone", DNS, FOO, 3)),
        "nodes": FOUR,
        "pods": P_B1_B2_Y1,
        "want": {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
    },
    {
        "name": "pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, "
        "then the all nodes fit",
        "pod": in_pod(FOO_POD, tsc(2, "zone", DNS, FOO, 1)),
        "nodes": FOUR,
        "pods": P_B1_B2_Y1,
        "want": {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    },
    {
        "name": "NodeAffinityPolicy honored with labelSelectors",
        "pod": in_pod(FOO_POD, tsc(1, "node", DNS, FOO), node_selector=FOO_POD),
        "nodes": [*FOO_ONLY, nd("node-y", {"node": "node-y"})],
        "pods": P_B1_B2_Y1,
        "want": {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
    },
    {
        "name": "NodeAffinityPolicy ignored with labelSelectors",
        "pod": in_pod(FOO_POD, tsc(1, "node", DNS, FOO, None, "Ignore"), node_selector=FOO_POD),
        "nodes": [*FOO_ONLY, nd("node-y", {"node": "node-y"})],
        "pods": P_B1_B2_Y1,
        "want": {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    },
    {
        "name": "NodeAffinityPolicy honored with nodeAffinity",
        "pod": in_pod(FOO_POD, tsc(1, "node", DNS, FOO), affinity=affinity_in("foo", [""])),
        "nodes": [*FOO_ONLY, nd("node-y", {"node": "node-y"})],
        "pods": P_B1_B2_Y1,
        "want": {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
    },
    {
        "name": "NodeAffinityPolicy ignored with labelSelectors",  # upstream's name (with nodeAffinity)
        "pod": in_pod(FOO_POD, tsc(1, "node", DNS, FOO, None, "Ignore"), affinity=affinity_in("foo", [""])),
        "nodes": [*FOO_ONLY, nd("node-y", {"node": "node-y"})],
        "pods": P_B1_B2_Y1,
        "want": {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    },
    {
        "name": "NodeTaintsPolicy honored",
        "pod": in_pod(FOO_POD, tsc(1, "node", DNS, FOO, None, None, "Honor")),
        "nodes": [*FOO_ONLY, nd("node-y", {"node": "node-y"}, TAINTS)],
        "pods": P_B1_B2_Y1,
        "want": {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
    },
    {
        "name": "NodeTaintsPolicy ignored",
        "pod": in_pod(FOO_POD, tsc(1, "node", DNS, FOO)),
        "nodes": [*FOO_ONLY, nd("node-y", {"node": "node-y"}, TAINTS)],
        "pods": P_B1_B2_Y1,
        "want": {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    },
]

# -- TestMultipleConstraints ------------------------------------------------------------------------

ZONE_NODE_FOO = (tsc(1, "zone", DNS, FOO), tsc(1, "node", DNS, FOO))
ZONE_FOO_NODE_BAR = (tsc(1, "zone", DNS, FOO), tsc(1, "node", DNS, BAR))
FOO_BAR = {"foo": "", "bar": ""}
P_A1_B1_Y1 = [ep("p-a1", "node-a"), ep("p-b1", "node-b"), ep("p-y1", "node-y")]

MULTIPLE_CONSTRAINTS: list[dict[str, Any]] = [
    {
        "name": "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        "pod": in_pod(FOO_POD, *ZONE_NODE_FOO),
        "nodes": FOUR,
        "pods": SPREAD_2103,
        "want": {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    },
    {
        "name": "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        "pod": in_pod(FOO_POD, *ZONE_NODE_FOO),
        "nodes": FOUR,
        "pods": [*SPREAD_2103, ep("p-y4", "node-y")],
        "want": {"node-a": U, "node-b": U, "node-x": U, "node-y": U},
    },
    {
        "name": "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        "pod": in_pod(FOO_BAR, *ZONE_FOO_NODE_BAR),
        "nodes": FOUR,
        "pods": [ep("p-a1", "node-a"), ep("p-y1", "node-y", {"bar": ""})],
        "want": {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    },
    {
        "name": "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        "pod": in_pod(FOO_BAR, *ZONE_FOO_NODE_BAR),
        "nodes": FOUR,
        "pods": [ep("p-a1", "node-a"), ep("p-x1", "node-x", {"bar": ""}), ep("p-y1", "node-y", {"bar": ""})],
        "want": {"node-a": U, "node-b": U, "node-x": U, "node-y": U},
    },
    {
        "name": "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        "pod": in_pod(FOO_BAR, *ZONE_FOO_NODE_BAR),
        "nodes": FOUR,
        "pods": [
            ep("p-a1", "node-a"),
            ep("p-a2", "node-a", FOO_BAR),
            ep("p-y1", "node-y"),
            ep("p-y2", "node-y", FOO_BAR),
            ep("p-y3", "node-y"),
        ],
        "want": {"node-a": U, "node-b": S, "node-x": U, "node-y": U},
    },
    {
        "name": "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
        "pod": in_pod({"bar": ""}, *ZONE_FOO_NODE_BAR),
        "nodes": FOUR,
        "pods": [ep("p-a1", "node-a"), ep("p-x1", "node-x", {"bar": ""}), ep("p-y1", "node-y", {"bar": ""})],
        "want": {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
    },
    {
        "name": "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
        "pod": in_pod(FOO_POD, *ZONE_NODE_FOO),
        "nodes": [*FOUR[:2], nd("node-x", {"zone": "zone2"}), FOUR[3]],
        "pods": [ep("p-a1", "node-a"), ep("p-y3", "node-y")],
        "want": {"node-a": U, "node-b": S, "node-x": UU, "node-y": U},
    },
    {
        "name": "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        "pod": in_pod(
            FOO_POD, tsc(1, "zone", DNS, FOO), tsc(1, "node", DNS, FOO, None, "Ignore"), node_selector=FOO_POD
        ),
        "nodes": [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1", foo=""),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2"),
        ],
        "pods": P_A1_B1_Y1,
        "want": {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    },
    {
        "name": "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        "pod": in_pod(FOO_POD, tsc(1, "zone", DNS, FOO, None, None, "Honor"), tsc(1, "node", DNS, FOO)),
        "nodes": [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1", foo=""),
            zn("node-x", "zone2", foo=""),
            nd("node-y", {"zone": "zone2", "node": "node-y"}, TAINTS),
        ],
        "pods": P_A1_B1_Y1,
        "want": {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    },
    {
        "name": "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        "pod": in_pod(FOO_POD, *ZONE_NODE_FOO, node_selector=FOO_POD),
        "nodes": [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1"),
            zn("node-x", "zone2", foo=""),
            nd("node-y", {"zone": "zone2", "node": "node-y", "foo": ""}, TAINTS),
        ],
        "pods": P_A1_B1_Y1,
        "want": {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
    },
    {
        "name": "two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
        "pod": in_pod(
            FOO_POD,
            tsc(1, "zone", DNS, FOO, None, None, "Honor"),
            tsc(1, "node", DNS, FOO, None, "Ignore"),
            node_selector=FOO_POD,
        ),
        "nodes": [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1"),
            zn("node-x", "zone2", foo=""),
            nd("node-y", {"zone": "zone2", "node": "node-y", "foo": ""}, TAINTS),
        ],
        "pods": P_A1_B1_Y1,
        "want": {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    },
]

_REASONS = {U: (ERR_REASON_CONSTRAINTS_NOT_MATCH,), UU: (ERR_REASON_NODE_LABEL_NOT_MATCH,), S: ()}


@pytest.mark.parametrize(
    "case", SINGLE_CONSTRAINT + MULTIPLE_CONSTRAINTS, ids=[c["name"] for c in SINGLE_CONSTRAINT + MULTIPLE_CONSTRAINTS]
)
def test_filter_tables(case: dict[str, Any]) -> None:
    """TestSingleConstraint and TestMultipleConstraints, through the framework: every node's
    code and upstream's reason byte for byte."""
    plugin = PodTopologySpread(LIST, None)
    nodes = node_infos(case["nodes"], case["pods"])
    outcome = run_filter(framework(plugin), case["pod"], nodes, CycleState(Snapshot(nodes)))
    assert not outcome.error
    got = {n.name: s.code for n, s in zip(nodes, outcome.statuses, strict=True)}
    assert got == case["want"]
    for status in outcome.statuses:
        assert status.reasons == _REASONS[status.code]
        if status.code is not S:
            assert status.plugin == NAME


# -- TestPodTopologySpreadScore ---------------------------------------------------------------------

HOST4 = [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")]
SPREAD_4321 = [
    *foo_pods("node-a", "p-a1", "p-a2", "p-a3", "p-a4"),
    *foo_pods("node-b", "p-b1", "p-b2", "p-b3"),
    *foo_pods("node-c", "p-c1", "p-c2"),
    ep("p-d1", "node-d"),
]
SPREAD_2103_D = [*foo_pods("node-a", "p-a1", "p-a2"), ep("p-b1", "node-b"), *foo_pods("node-d", "p-d1", "p-d2", "p-d3")]
SPREAD_4213 = [
    *foo_pods("node-a", "p-a1", "p-a2", "p-a3", "p-a4"),
    *foo_pods("node-b", "p-b1", "p-b2"),
    ep("p-x1", "node-x"),
    *foo_pods("node-y", "p-y1", "p-y2", "p-y3"),
]


def zh(name: str, zone: str) -> dict[str, Any]:
    """``MakeNode().Name(name).Label("zone", zone).Label(v1.LabelHostname, name)``."""
    return nd(name, {"zone": zone, LABEL_HOSTNAME: name})


ZH4 = [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2"), zh("node-y", "zone2")]
ZH4_ABCD = [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-c", "zone2"), zh("node-d", "zone2")]
P_A1_B1FB_Y1F_Y2B = [
    ep("p-a1", "node-a"),
    ep("p-b1", "node-b", FOO_BAR),
    ep("p-y1", "node-y"),
    ep("p-y2", "node-y", {"bar": ""}),
]
P_MATCH_LABEL_KEYS = [
    ep("p-a1", "node-a"),
    ep("p-b1", "node-b", FOO_BAR),
    ep("p-y1", "node-c"),
    ep("p-y2", "node-c", {"bar": ""}),
]
P_A2_B1_C1 = [*foo_pods("node-a", "p-a1", "p-a2"), ep("p-b1", "node-b"), ep("p-c1", "node-c")]
FOO_AB_C = [*FOO_ONLY[:2], nd("node-c", {"node": "node-c"})]
TAINTED_C = [nd("node-a", {"node": "node-a"}), nd("node-b", {"node": "node-b"})]
TAINTED_C += [nd("node-c", {"node": "node-c"}, TAINTS)]


SCORE: list[dict[str, Any]] = [
    {
        "name": "one constraint on node, no existing pods",
        "pod": in_pod(FOO_POD, tsc(1, LABEL_HOSTNAME, SA, FOO)),
        "pods": [],
        "nodes": [hn("node-a"), hn("node-b")],
        "failed": [],
        "want": {"node-a": 100, "node-b": 100},
    },
    {
        "name": "one constraint on node, only one node is candidate",
        "pod": in_pod(FOO_POD, tsc(1, LABEL_HOSTNAME, SA, FOO)),
        "pods": [*foo_pods("node-a", "p-a1", "p-a2"), ep("p-b1", "node-b")],
        "nodes": [hn("node-a")],
        "failed": [hn("node-b")],
        "want": {"node-a": 100},
    },
    {
        "name": "one constraint on node, all nodes have the same number of matching pods",
        "pod": in_pod(FOO_POD, tsc(1, LABEL_HOSTNAME, SA, FOO)),
        "pods": [ep("p-a1", "node-a"), ep("p-b1", "node-b")],
        "nodes": [hn("node-a"), hn("node-b")],
        "failed": [],
        "want": {"node-a": 100, "node-b": 100},
    },
    {
        "name": "one constraint on node, all 4 nodes are candidates",
        "pod": in_pod(FOO_POD, tsc(1, LABEL_HOSTNAME, SA, FOO)),
        "pods": SPREAD_2103_D,
        "nodes": HOST4,
        "failed": [],
        "want": {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
    },
    {
        "name": "one constraint on node, null selector",
        "pod": in_pod(FOO_POD, tsc(1, LABEL_HOSTNAME, SA, None)),
        "pods": SPREAD_2103_D,
        "nodes": HOST4,
        "failed": [],
        "want": {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
    },
    {
        "name": "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        "pod": in_pod(FOO_POD, tsc(2, LABEL_HOSTNAME, SA, FOO)),
        "pods": SPREAD_2103_D,
        "nodes": HOST4,
        "failed": [],
        "want": {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
    },
    {
        "name": "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        "pod": in_pod(FOO_POD, tsc(3, LABEL_HOSTNAME, SA, FOO)),
        "pods": SPREAD_4321,
        "nodes": HOST4,
        "failed": [],
        "want": {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
    },
    {
        "name": "system defaulting, nodes don't have zone, pods match service",
        "pod": in_pod(FOO_POD),
        "pods": SPREAD_4321,
        "nodes": HOST4,
        "failed": [],
        # a Service selecting foo="" (upstream's objs)
        "default_selector": objects.LabelSelector(match_labels={"foo": ""}),
        "want": {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
    },
    {
        "name": "one constraint on node, 3 out of 4 nodes are candidates",
        "pod": in_pod(FOO_POD, tsc(1, LABEL_HOSTNAME, SA, FOO)),
        "pods": SPREAD_4213,
        "nodes": [hn("node-a"), hn("node-b"), hn("node-x")],
        "failed": [hn("node-y")],
        "want": {"node-a": 33, "node-b": 83, "node-x": 100},
    },
    {
        "name": "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
        "pod": in_pod(FOO_POD, tsc(1, LABEL_HOSTNAME, SA, FOO)),
        "pods": SPREAD_4213,
        "nodes": [hn("node-a"), nd("node-b", {"n": "node-b"}), hn("node-x")],
        "failed": [hn("node-y")],
        "want": {"node-a": 16, "node-b": 0, "node-x": 100},
    },
    {
        "name": "one constraint on zone, 3 out of 4 nodes are candidates",
        "pod": in_pod(FOO_POD, tsc(1, "zone", SA, FOO)),
        "pods": SPREAD_4213,
        "nodes": [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2")],
        "failed": [zh("node-y", "zone2")],
        "want": {"node-a": 75, "node-b": 75, "node-x": 100},
    },
    {
        # matching pods spread as 2/~1~/2/~4~
        "name": "two Constraints on zone and node, 2 out of 4 nodes are candidates",
        "pod": in_pod(FOO_POD, tsc(1, "zone", SA, FOO), tsc(1, LABEL_HOSTNAME, SA, FOO)),
        "pods": [
            *foo_pods("node-a", "p-a1", "p-a2"),
            ep("p-b1", "node-b"),
            *foo_pods("node-x", "p-x1", "p-x2"),
            *foo_pods("node-y", "p-y1", "p-y2", "p-y3", "p-y4"),
        ],
        "nodes": [zh("node-a", "zone1"), zh("node-x", "zone2")],
        "failed": [zh("node-b", "zone1"), zh("node-y", "zone2")],
        "want": {"node-a": 100, "node-x": 63},
    },
    {
        # zone: the matching pods spread as 2/2/1/1; node: 0/1/0/1
        "name": "two Constraints on zone and node, with different labelSelectors",
        "pod": in_pod(FOO_BAR, tsc(1, "zone", SA, FOO), tsc(1, LABEL_HOSTNAME, SA, BAR)),
        "pods": P_A1_B1FB_Y1F_Y2B,
        "nodes": ZH4,
        "failed": [],
        "want": {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
    },
    {
        # zone: the matching pods spread as 0/0/2/2; node: 0/1/0/1
        "name": "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
        "pod": in_pod(FOO_BAR, tsc(1, "zone", SA, FOO), tsc(1, LABEL_HOSTNAME, SA, BAR)),
        "pods": [ep("p-b1", "node-b", {"bar": ""}), ep("p-x1", "node-x"), ep("p-y1", "node-y", FOO_BAR)],
        "nodes": ZH4,
        "failed": [],
        "want": {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
    },
    {
        # zone: the matching pods spread as 2/2/1/~1~; node: 0/1/0/~1~
        "name": "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
        "pod": in_pod(FOO_BAR, tsc(1, "zone", SA, FOO), tsc(1, LABEL_HOSTNAME, SA, BAR)),
        "pods": P_A1_B1FB_Y1F_Y2B,
        "nodes": ZH4[:3],
        "failed": ZH4[3:],
        "want": {"node-a": 50, "node-b": 25, "node-x": 100},
    },
    {
        "name": "existing pods in a different namespace do not count",
        "pod": in_pod(FOO_POD, tsc(1, LABEL_HOSTNAME, SA, FOO)),
        "pods": [ep("p-a1", "node-a", namespace="ns1"), ep("p-a2", "node-a"), *foo_pods("node-b", "p-b1", "p-b2")],
        "nodes": [hn("node-a"), hn("node-b")],
        "failed": [],
        "want": {"node-a": 100, "node-b": 33},
    },
    {
        "name": "terminating Pods should be excluded",
        "pod": in_pod(FOO_POD, tsc(1, LABEL_HOSTNAME, SA, FOO)),
        "pods": [ep("p-a", "node-a", terminating=True), ep("p-b", "node-b")],
        "nodes": [hn("node-a"), hn("node-b")],
        "failed": [],
        "want": {"node-a": 100, "node-b": 0},
    },
    {
        # artificial: the API server refuses a non-default minDomains with ScheduleAnyway
        "name": "minDomains has no effect when ScheduleAnyway",
        "pod": in_pod(FOO_POD, tsc(2, "node", SA, FOO, 10)),  # 10: more than the 3 domains
        "pods": [*foo_pods("node-a", "p-a1", "p-a2"), *foo_pods("node-b", "p-b1", "p-b2"), ep("p-c1", "node-c")],
        "nodes": [nd(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
        "failed": [],
        "want": {"node-a": 75, "node-b": 75, "node-c": 100},
    },
    {
        "name": "NodeAffinityPolicy honoed with labelSelectors",  # upstream's spelling
        "pod": in_pod(FOO_POD, tsc(1, "node", SA, FOO), node_selector=FOO_POD),
        "pods": P_A2_B1_C1,
        "nodes": FOO_AB_C,
        "failed": [],
        "want": {"node-a": 0, "node-b": 33, "node-c": 100},
    },
    {
        "name": "NodeAffinityPolicy ignored with labelSelectors",
        "pod": in_pod(FOO_POD, tsc(1, "node", SA, FOO, None, "Ignore"), node_selector=FOO_POD),
        "pods": P_A2_B1_C1,
        "nodes": FOO_AB_C,
        "failed": [],
        "want": {"node-a": 66, "node-b": 100, "node-c": 100},
    },
    {
        "name": "NodeAffinityPolicy honoed with nodeAffinity",  # upstream's spelling
        "pod": in_pod(FOO_POD, tsc(1, "node", SA, FOO), affinity=affinity_in("foo", [""])),
        "pods": P_A2_B1_C1,
        "nodes": FOO_AB_C,
        "failed": [],
        "want": {"node-a": 0, "node-b": 33, "node-c": 100},
    },
    {
        "name": "NodeAffinityPolicy ignored with nodeAffinity",
        "pod": in_pod(FOO_POD, tsc(1, "node", SA, FOO, None, "Ignore"), affinity=affinity_in("foo", [""])),
        "pods": P_A2_B1_C1,
        "nodes": FOO_AB_C,
        "failed": [],
        "want": {"node-a": 66, "node-b": 100, "node-c": 100},
    },
    {
        "name": "NodeTaintsPolicy honored",
        "pod": in_pod(FOO_POD, tsc(1, "node", SA, FOO, None, None, "Honor")),
        "pods": P_A2_B1_C1,
        "nodes": TAINTED_C,
        "failed": [],
        "want": {"node-a": 0, "node-b": 33, "node-c": 100},
    },
    {
        "name": "NodeTaintsPolicy ignored",
        "pod": in_pod(FOO_POD, tsc(1, "node", SA, FOO)),
        "pods": P_A2_B1_C1,
        "nodes": TAINTED_C,
        "failed": [],
        "want": {"node-a": 66, "node-b": 100, "node-c": 100},
    },
    {
        "name": "matchLabelKeys ignored when feature gate disabled",
        "skip": "runs upstream with the MatchLabelKeysInPodTopologySpread gate off; v1.30 has it on by "
        "default and the plugin has no feature gates (matchLabelKeys always apply)",
        "pod": in_pod(
            {**FOO_BAR, "baz": ""},
            tsc(1, "zone", SA, FOO, None, None, None, ["baz"]),
            tsc(1, LABEL_HOSTNAME, SA, BAR, None, None, None, ["baz"]),
        ),
        "pods": P_MATCH_LABEL_KEYS,
        "nodes": ZH4_ABCD,
        "failed": [],
        "want": {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    },
    {
        "name": "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        "pod": in_pod(
            FOO_BAR,
            tsc(1, "zone", SA, {}, None, None, None, ["foo"]),
            tsc(1, LABEL_HOSTNAME, SA, {}, None, None, None, ["bar"]),
        ),
        "pods": P_MATCH_LABEL_KEYS,
        "nodes": ZH4_ABCD,
        "failed": [],
        "want": {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    },
    {
        "name": "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        "pod": in_pod(
            {**FOO_BAR, "baz": ""},
            tsc(1, "zone", SA, FOO),
            tsc(1, LABEL_HOSTNAME, SA, BAR, None, None, None, ["baz"]),
        ),
        "pods": [
            ep("p-a1", "node-a"),
            ep("p-b1", "node-b", {**FOO_BAR, "baz": ""}),
            ep("p-c1", "node-c"),
            ep("p-c2", "node-c", {"bar": ""}),
            ep("p-d3", "node-c", {"bar": "", "baz": ""}),
        ],
        "nodes": ZH4_ABCD,
        "failed": [],
        "want": {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    },
]


def _params(cases: list[dict[str, Any]]) -> list[Any]:
    """``cases`` as pytest params named after upstream's cases; a case with ``skip`` is skipped
    with that reason."""
    return [
        pytest.param(c, id=c["name"], marks=pytest.mark.skip(reason=c["skip"]) if "skip" in c else ()) for c in cases
    ]


@pytest.mark.parametrize("case", _params(SCORE))
def test_score_table(case: dict[str, Any]) -> None:
    """TestPodTopologySpreadScore through the framework: the plugin's 0..100 scores after
    NormalizeScore (upstream runs it with ``defaultingType: System``)."""
    given = case.get("default_selector")
    plugin = PodTopologySpread(PodTopologySpreadArgs(), None, default_selector=lambda pod: given)
    all_nodes = node_infos(case["nodes"] + case["failed"], case["pods"])
    candidates = all_nodes[: len(case["nodes"])]
    outcome = run_score(plugin, case["pod"], candidates, CycleState(Snapshot(all_nodes)))
    got = dict(zip([n.name for n in candidates], outcome.plugin_scores[NAME], strict=True))
    assert got == case["want"]


# -- TestPreScoreStateEmptyNodes -------------------------------------------------------------------
#
# Upstream compares the whole ``preScoreState`` PreScore writes (no existing pod: every count is 0);
# here the plugin's :class:`PreScoreState` under its cycle-state key: ``constraints`` (upstream's
# ``Constraints``), ``ignored`` (``IgnoredNodes``), ``counts`` (``TopologyPairToPodCounts``, one map
# per constraint, hostname constraints left empty as upstream counts them at Score) and
# ``weights`` (``TopologyNormalizingWeight``, given below as the sizes passed to
# ``topologyNormalizingWeight``). Upstream's ReplicaSet ``rs1`` (selector ``fooSelector``) is the
# plugin's ``default_selector``.


def want_c(
    max_skew: int, key: str, selector: dict[str, Any] | None, affinity: str = "Honor", taints: str = "Ignore"
) -> Constraint:
    """An expected ``topologySpreadConstraint`` (``MinDomains`` 1)."""
    compiled = compile_selector(None if selector is None else msgspec.convert(selector, objects.LabelSelector))
    return Constraint(max_skew, key, compiled, 1, affinity == "Honor", taints == "Honor")


ZONE_HOST_ABX = [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2")]
FOO_ZONE_ABX = [
    nd("node-a", {"zone": "zone1", "foo": "", LABEL_HOSTNAME: "node-a"}),
    nd("node-b", {"zone": "zone1", "foo": "", LABEL_HOSTNAME: "node-b"}),
    nd("node-x", {"zone": "zone2", LABEL_HOSTNAME: "node-x"}),
]
TAINTED_ZONE_ABX = [*FOO_ZONE_ABX[:2], nd("node-x", {"zone": "zone2", LABEL_HOSTNAME: "node-x"}, TAINTS)]
ZONES_00 = {"zone1": 0, "zone2": 0}
RS_POD = {"foo": "tar", "baz": "sup"}
SUP = {"matchLabels": {"baz": "sup"}}


def _list_args(*constraints: tuple[int, str, str]) -> PodTopologySpreadArgs:
    return PodTopologySpreadArgs.model_validate(
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": m, "topologyKey": k, "whenUnsatisfiable": w} for m, k, w in constraints],
        }
    )


PRE_SCORE_STATE: list[dict[str, Any]] = [
    {
        "name": "normal case",
        "pod": in_pod(FOO_POD, tsc(1, "zone", SA, FOO), tsc(1, LABEL_HOSTNAME, SA, FOO)),
        "nodes": ZONE_HOST_ABX,
        "args": LIST,
        "constraints": [want_c(1, "zone", FOO), want_c(1, LABEL_HOSTNAME, FOO)],
        "ignored": set(),
        "counts": [ZONES_00, {}],
        "sizes": [2, 3],
    },
    {
        "name": "null selector",
        "pod": in_pod(FOO_POD, tsc(1, "zone", SA, None)),
        "nodes": ZONE_HOST_ABX,
        "args": LIST,
        "constraints": [want_c(1, "zone", None)],  # labels.Nothing()
        "ignored": set(),
        "counts": [ZONES_00],
        "sizes": [2],
    },
    {
        "name": "node-x doesn't have label zone",
        "pod": in_pod(FOO_POD, tsc(1, "zone", SA, FOO), tsc(1, LABEL_HOSTNAME, SA, BAR)),
        "nodes": [zh("node-a", "zone1"), zh("node-b", "zone1"), hn("node-x")],
        "args": LIST,
        "constraints": [want_c(1, "zone", FOO), want_c(1, LABEL_HOSTNAME, BAR)],
        "ignored": {"node-x"},
        "counts": [{"zone1": 0}, {}],
        "sizes": [1, 2],
    },
    {
        "name": "system default constraints and a replicaset",
        "pod": in_pod(RS_POD, namespace="default"),
        # nodes with no zone are not excluded: they are a separate zone
        "nodes": [
            nd("node-a", {LABEL_HOSTNAME: "node-a", LABEL_TOPOLOGY_ZONE: "mars"}),
            nd("node-b", {LABEL_HOSTNAME: "node-b", LABEL_TOPOLOGY_ZONE: "mars"}),
            hn("node-c"),
            hn("node-d"),
        ],
        "args": PodTopologySpreadArgs(),
        "default_selector": FOO,
        "constraints": [want_c(3, LABEL_HOSTNAME, FOO), want_c(5, LABEL_TOPOLOGY_ZONE, FOO)],
        "ignored": set(),
        "counts": [{}, {"mars": 0, "": 0}],
        "sizes": [4, 2],
    },
    {
        "name": "default constraints and a replicaset",
        "pod": in_pod(RS_POD, namespace="default"),
        "nodes": [nd("node-a", {"rack": "rack1", LABEL_HOSTNAME: "node-a", "planet": "mars"})],
        "args": _list_args((1, LABEL_HOSTNAME, SA), (2, "rack", DNS), (2, "planet", SA)),
        "default_selector": FOO,
        "constraints": [want_c(1, LABEL_HOSTNAME, FOO), want_c(2, "planet", FOO)],
        "ignored": set(),
        "counts": [{}, {"mars": 0}],
        "sizes": [1, 1],
    },
    {
        "name": "default constraints and a replicaset, but pod has constraints",
        "pod": in_pod(
            {"foo": "bar", "baz": "sup"}, tsc(1, "zone", DNS, BAR), tsc(2, "planet", SA, SUP), namespace="default"
        ),
        "nodes": [nd("node-a", {"planet": "mars", "galaxy": "andromeda"})],
        "args": _list_args((2, "galaxy", SA)),
        "default_selector": FOO,
        "constraints": [want_c(2, "planet", SUP)],
        "ignored": set(),
        "counts": [{"mars": 0}],
        "sizes": [1],
    },
    {
        "name": "NodeAffinityPolicy honored with labelSelectors",
        "pod": in_pod(FOO_POD, tsc(1, "zone", SA, BAR), node_selector=FOO_POD),
        "nodes": FOO_ZONE_ABX,
        "args": LIST,
        "constraints": [want_c(1, "zone", BAR)],
        "ignored": set(),
        "counts": [ZONES_00],
        "sizes": [2],
    },
    {
        "name": "NodeAffinityPolicy ignored with labelSelectors",
        "pod": in_pod(FOO_POD, tsc(1, "zone", SA, BAR, None, "Ignore"), node_selector=FOO_POD),
        "nodes": FOO_ZONE_ABX,
        "args": LIST,
        "constraints": [want_c(1, "zone", BAR, affinity="Ignore")],
        "ignored": set(),
        "counts": [ZONES_00],
        "sizes": [2],
    },
    {
        "name": "NodeAffinityPolicy honored with nodeAffinity",
        "pod": in_pod(FOO_POD, tsc(1, "zone", SA, BAR), affinity=affinity_in("foo", [""])),
        "nodes": FOO_ZONE_ABX,
        "args": LIST,
        "constraints": [want_c(1, "zone", BAR)],
        "ignored": set(),
        "counts": [ZONES_00],
        "sizes": [2],
    },
    {
        "name": "NodeAffinityPolicy ignored with nodeAffinity",
        "pod": in_pod(FOO_POD, tsc(1, "zone", SA, BAR, None, "Ignore"), affinity=affinity_in("foo", [""])),
        "nodes": FOO_ZONE_ABX,
        "args": LIST,
        "constraints": [want_c(1, "zone", BAR, affinity="Ignore")],
        "ignored": set(),
        "counts": [ZONES_00],
        "sizes": [2],
    },
    {
        "name": "NodeTaintsPolicy honored",
        "pod": in_pod(FOO_POD, tsc(1, "zone", SA, BAR, None, None, "Honor")),
        "nodes": TAINTED_ZONE_ABX,
        "args": LIST,
        "constraints": [want_c(1, "zone", BAR, taints="Honor")],
        "ignored": set(),
        "counts": [ZONES_00],
        "sizes": [2],
    },
    {
        "name": "NodeTaintsPolicy ignored",
        "pod": in_pod(FOO_POD, tsc(1, "zone", SA, BAR)),
        "nodes": TAINTED_ZONE_ABX,
        "args": LIST,
        "constraints": [want_c(1, "zone", BAR)],
        "ignored": set(),
        "counts": [ZONES_00],
        "sizes": [2],
    },
]


@pytest.mark.parametrize("case", _params(PRE_SCORE_STATE))
def test_pre_score_state_table(case: dict[str, Any]) -> None:
    """TestPreScoreStateEmptyNodes: the state PreScore writes, over a snapshot of ``nodes`` and
    no pod, with every node a candidate."""
    given = case.get("default_selector")
    selector = None if given is None else msgspec.convert(given, objects.LabelSelector)
    plugin = PodTopologySpread(case["args"], None, default_selector=lambda pod: selector)
    nodes = node_infos(case["nodes"], [])
    state = CycleState(Snapshot(nodes))
    assert plugin.pre_score(state, case["pod"], nodes).code is Code.SUCCESS
    got = state.read(f"{NAME}/pre-score")
    assert isinstance(got, PreScoreState)
    assert got.constraints == tuple(case["constraints"])
    assert got.ignored == frozenset(case["ignored"])
    assert got.counts == tuple(case["counts"])
    assert got.weights == tuple(topology_normalizing_weight(n) for n in case["sizes"])


# -- more behaviour ---------------------------------------------------------------------------------


def test_pre_filter_skips_without_hard_constraints() -> None:
    """No DoNotSchedule constraint (and no default selector): PreFilter returns Skip."""
    plugin = PodTopologySpread(PodTopologySpreadArgs(), None)
    nodes = node_infos(FOUR, [])
    state = CycleState(Snapshot(nodes))
    assert plugin.pre_filter(state, in_pod(FOO_POD, tsc(1, "zone", SA, FOO)), nodes)[1].code is Code.SKIP
    assert plugin.pre_filter(state, in_pod(FOO_POD), nodes)[1].code is Code.SKIP
    assert plugin.pre_score(state, in_pod(FOO_POD), nodes).code is Code.SKIP


def test_match_label_keys_narrow_the_selector() -> None:
    """matchLabelKeys: only pods with the incoming pod's value of the key count."""
    pod = in_pod({"foo": "", "rev": "2"}, tsc(1, "node", DNS, FOO, None, None, None, ["rev"]))
    pods = [ep("p-a1", "node-a", {"foo": "", "rev": "1"}), ep("p-a2", "node-a", {"foo": "", "rev": "1"})]
    pods += [ep("p-b1", "node-b", {"foo": "", "rev": "2"})]
    nodes = node_infos([nd("node-a", {"node": "node-a"}), nd("node-b", {"node": "node-b"})], pods)
    outcome = run_filter(framework(PodTopologySpread(LIST, None)), pod, nodes, CycleState(Snapshot(nodes)))
    assert [s.code for s in outcome.statuses] == [S, U]


def test_default_constraints_list() -> None:
    """defaultingType List: the given constraints with the default selector; none without one."""
    args = PodTopologySpreadArgs.model_validate(
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": DNS}],
        }
    )
    nodes = node_infos([nd("node-a", {"node": "node-a"}), nd("node-b", {"node": "node-b"})], [ep("p-a1", "node-a")])
    selected = PodTopologySpread(args, None, default_selector=lambda p: objects.LabelSelector(match_labels=FOO_POD))
    outcome = run_filter(framework(selected), in_pod(FOO_POD), nodes, CycleState(Snapshot(nodes)))
    assert [s.code for s in outcome.statuses] == [U, S]
    unselected = PodTopologySpread(args, None)
    outcome = run_filter(framework(unselected), in_pod(FOO_POD), nodes, CycleState(Snapshot(nodes)))
    assert [s.code for s in outcome.statuses] == [S, S]


def test_snapshot_counts_nodes_beyond_the_candidates() -> None:
    """PreFilter counts every node of the snapshot, not only the candidates."""
    nodes = node_infos(FOUR, SPREAD_2103)
    pod = in_pod(FOO_POD, tsc(1, "node", DNS, FOO))
    with_snapshot = run_filter(framework(PodTopologySpread(LIST, None)), pod, nodes[:2], CycleState(Snapshot(nodes)))
    assert [s.code for s in with_snapshot.statuses] == [U, U]  # node-x has 0 matching pods
    without = run_filter(framework(PodTopologySpread(LIST, None)), pod, nodes[:2], CycleState())
    assert [s.code for s in without.statuses] == [U, S]  # minimum among node-a/node-b is 1


def test_invalid_selector_is_an_error() -> None:
    """A selector LabelSelectorAsSelector refuses makes PreFilter an Error."""
    bad = {"matchExpressions": [{"key": "foo", "operator": "In", "values": []}]}
    nodes = node_infos(FOUR, [])
    outcome = run_filter(
        framework(PodTopologySpread(LIST, None)),
        in_pod(FOO_POD, tsc(1, "zone", DNS, bad)),
        nodes,
        CycleState(Snapshot(nodes)),
    )
    assert outcome.error


_KEY_ERROR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_VALUE_ERROR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ({"matchLabels": {"bad key": "x"}}, f'key: Invalid value: "bad key": {_KEY_ERROR}'),
        ({"matchLabels": {"app": "not a value"}}, f'values[0][app]: Invalid value: "not a value": {_VALUE_ERROR}'),
        (
            {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]},
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]},
            'values: Invalid value: []string{"x"}: values set must be empty for exists and does not exist',
        ),
        ({"matchExpressions": [{"key": "app", "operator": "Like"}]}, '"Like" is not a valid label selector operator'),
        (
            {"matchExpressions": [{"key": "bad key", "operator": "NotIn", "values": ["ok", "-x"]}]},
            f'[key: Invalid value: "bad key": {_KEY_ERROR}, values[1][bad key]: Invalid value: "-x": {_VALUE_ERROR}]',
        ),
    ],
)
def test_selector_errors_are_upstreams(selector: dict[str, Any], message: str) -> None:
    """``LabelSelectorAsSelector``'s error text (``labels.NewRequirement``'s field errors,
    aggregated), in the PreFilter error too."""
    with pytest.raises(SelectorError) as info:
        compile_selector(msgspec.convert(selector, objects.LabelSelector))
    assert str(info.value) == message
    nodes = node_infos(FOUR, [])
    outcome = run_filter(
        framework(PodTopologySpread(LIST, None)),
        in_pod(FOO_POD, tsc(1, "zone", DNS, selector)),
        nodes,
        CycleState(Snapshot(nodes)),
    )
    assert outcome.error is not None
    assert outcome.error.endswith(f"obtaining pod's hard topology spread constraints: {message}")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"defaultingType": "Foo"}, 'defaultingType: Unsupported value: "Foo"'),
        (
            {"defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": SA}]},
            "when .defaultConstraints are not empty",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 0, "topologyKey": "z", "whenUnsatisfiable": SA}],
            },
            "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": SA}]},
            "defaultConstraints[0].topologyKey: Required value: can not be empty",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "z"}]},
            "defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": SA, "labelSelector": {}},
                ],
            },
            "defaultConstraints[0].labelSelector: Forbidden",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": SA},
                    {"maxSkew": 2, "topologyKey": "z", "whenUnsatisfiable": SA},
                ],
            },
            'defaultConstraints[1]: Duplicate value: "{z, ScheduleAnyway}"',
        ),
    ],
)
def test_args_validation(doc: dict[str, Any], message: str) -> None:
    """ValidatePodTopologySpreadArgs."""
    with pytest.raises(ValueError, match=re.escape(message)):
        PodTopologySpreadArgs.model_validate(doc)


def test_args_defaults_and_entry() -> None:
    """defaultingType defaults to System; the registry entry builds the plugin."""
    assert PodTopologySpreadArgs().defaulting_type == "System"
    assert PLUGIN.name == "PodTopologySpread" and PLUGIN.needs_cluster
    assert isinstance(PLUGIN.factory(PodTopologySpreadArgs(), None), PodTopologySpread)  # type: ignore[arg-type]


def test_go_round() -> None:
    """Go's math.Round: half away from zero."""
    assert [go_round(x) for x in (0.5, 1.5, 2.5, 2.4999, -0.5, 0.0)] == [1, 2, 3, 2, -1, 0]


# -- generated ----------------------------------------------------------------------------------------


def _random_case(rng: random.Random) -> tuple[PodInfo, list[NodeInfo]]:
    zones = ["z1", "z2", "z3"]
    nodes, pods = [], []
    for i in range(rng.randint(1, 8)):
        labels = {"node": f"n{i}"}
        if rng.random() < 0.85:
            labels["zone"] = rng.choice(zones)
        if rng.random() < 0.5:
            labels["disk"] = "ssd"
        taints = TAINTS if rng.random() < 0.2 else None
        nodes.append(nd(f"n{i}", labels, taints))
        for j in range(rng.randint(0, 4)):
            pod_labels = {"app": rng.choice(["a", "b"])}
            pods.append(
                ep(f"p{i}-{j}", f"n{i}", pod_labels, rng.choice(["", "", "other"]), terminating=rng.random() < 0.1)
            )
    selector = {"matchLabels": {"app": "a"}}
    constraints = [
        tsc(
            rng.randint(1, 3),
            key,
            DNS,
            selector,
            rng.choice([None, 1, 2, 4]),
            rng.choice([None, "Honor", "Ignore"]),
            rng.choice([None, "Honor", "Ignore"]),
        )
        for key in rng.sample(["zone", "node"], rng.randint(1, 2))
    ]
    node_selector = {"disk": "ssd"} if rng.random() < 0.3 else None
    return in_pod({"app": rng.choice(["a", "b"])}, *constraints, node_selector=node_selector), node_infos(nodes, pods)


def _reference(pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Code]:
    """A direct reading of filtering.go: counts per domain over eligible nodes, then the skew."""
    out = []
    constraints = pod.topology_spread_constraints
    keys = [c.topology_key or "" for c in constraints]
    for node in nodes:
        code = S
        for c in constraints:
            key = c.topology_key or ""
            if key not in node.labels:
                code = UU
                break
            counts: dict[str, int] = {}
            for other in nodes:
                if not all(k in other.labels for k in keys):
                    continue
                if (c.node_affinity_policy or "Honor") == "Honor" and any(
                    other.labels.get(k) != v for k, v in pod.node_selector.items()
                ):
                    continue
                if (c.node_taints_policy or "Ignore") == "Honor" and other.taints:
                    continue  # the pod tolerates nothing
                value = other.labels[key]
                matching = [
                    p
                    for p in other.pods
                    if p.namespace == pod.namespace and not p.deleting and p.labels.get("app") == "a"
                ]
                counts[value] = counts.get(value, 0) + len(matching)
            lowest = min(counts.values(), default=2**31 - 1)
            if len(counts) < (1 if c.min_domains is None else c.min_domains):
                lowest = 0
            self_match = 1 if pod.labels.get("app") == "a" else 0
            if counts.get(node.labels[key], 0) + self_match - lowest > (c.max_skew or 0):
                code = U
                break
        out.append(code)
    return out


def test_generated_filter_matches_reference_and_batch() -> None:
    """Random clusters: ``filter_nodes`` equals ``filter`` per node (a batch of one), and both
    equal a direct per-node reading of upstream's rule."""
    rng = random.Random(20240530)
    plugin = PodTopologySpread(LIST, None)
    for _ in range(300):
        pod, nodes = _random_case(rng)
        state = CycleState(Snapshot(nodes))
        assert plugin.pre_filter(state, pod, nodes)[1].code is Code.SUCCESS
        batch = plugin.filter_nodes(state, pod, nodes)
        single = [plugin.filter(state, pod, n) for n in nodes]
        assert [s.code for s in batch] == [s.code for s in single]
        assert [s.code for s in batch] == _reference(pod, nodes)


# -- the default selector from the cluster state (helper.DefaultSelector) ----------------------------


def owned_pod(labels: Mapping[str, str], namespace: str, replica_set: str) -> PodInfo:
    """The incoming pod ``p`` of a Deployment: controlled by the ReplicaSet ``replica_set``
    (``st.MakePod().OwnerReference(name, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))``)."""
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": replica_set, "uid": "uid-rs", "controller": True}
    meta = {"name": "p", "namespace": namespace, "uid": "uid-p", "labels": dict(labels), "ownerReferences": [owner]}
    return PodInfo(msgspec.convert({"metadata": meta, "spec": {}}, objects.Pod))


def replica_set(name: str, namespace: str, selector: dict[str, Any]) -> dict[str, Any]:
    """An ``apps/v1`` ReplicaSet as the API server serves it."""
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"replicas": 10, "selector": selector, "template": {"metadata": {"labels": {"foo": ""}}}},
        "status": {"replicas": 10, "readyReplicas": 10},
    }


@pytest.mark.parametrize(
    ("doc", "watched"),
    [
        ({}, True),  # System
        ({"defaultingType": "List"}, False),  # no default constraint: nothing to deduce
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": SA}],
            },
            True,
        ),
    ],
)
def test_needs_watch_the_selecting_objects_when_defaulting_applies(doc: dict[str, Any], watched: bool) -> None:
    """The registration declares ``spread_selectors`` exactly when upstream's ``New`` sets the
    Service/controller listers (``len(pl.defaultConstraints) != 0``)."""
    assert PLUGIN.needs is not None
    assert PLUGIN.needs(PodTopologySpreadArgs.model_validate(doc), 5.0).spread_selectors is watched


def test_a_deployment_pod_gets_the_system_default_scores() -> None:
    """TestPodTopologySpreadScore's "system defaulting, nodes don't have zone, pods match service"
    with a Deployment's ReplicaSet selecting the pods instead of the Service: the plugin built on
    the cluster handle takes ``helper.DefaultSelector`` from the cluster state, so the system
    default constraints (hostname maxSkew 3, zone maxSkew 5) score the pod as upstream does."""
    cluster = MemoryCluster()
    plugin = cluster.build(PLUGIN, {})  # defaultingType System
    cluster.seed_selecting("replicasets", [replica_set("web-5d8f", "", {"matchLabels": {"foo": ""}})])
    pod = owned_pod(FOO_POD, "", "web-5d8f")
    nodes = node_infos(HOST4, SPREAD_4321)
    outcome = run_score(plugin, pod, nodes, CycleState(Snapshot(nodes)))
    got = dict(zip([n.name for n in nodes], outcome.plugin_scores[NAME], strict=True))
    assert got == {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100}
    selected = {"matchLabels": {"foo": ""}}
    assert plugin.constraints(pod, SA) == [
        want_c(3, LABEL_HOSTNAME, selected),
        want_c(5, LABEL_TOPOLOGY_ZONE, selected),
    ]
    # a pod whose ReplicaSet is not known: nothing selects it, no default constraint (PreScore skips)
    stray = owned_pod(FOO_POD, "", "web-0000")
    assert plugin.pre_score(CycleState(Snapshot(nodes)), stray, nodes).code is Code.SKIP
    # the cluster state without the spread selectors (nobody declared them): none either
    assert MemoryCluster().default_selector(pod) is None


# -- TestPreFilterStateAddPod / TestPreFilterStateRemovePod (filtering_test.go) ---------------------
#
# Upstream compares the whole ``preFilterState`` after ``AddPod``/``RemovePod``: here per
# constraint (upstream keys by topology key, one constraint per key) the domains number, the two
# critical paths (value, count) and the matching pods per value. Pods are (name, node, labels,
# namespace); the NodeInclusionPolicy-disabled rows are left out (the feature is on in v1.30).

TWO_NODES = [zn("node-a", "zone1"), zn("node-b", "zone1")]
A_X = [zn("node-a", "zone1"), zn("node-x", "zone2")]
A_B_X = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")]
A_B_X_Y = [*A_B_X, zn("node-y", "zone2")]
FOO_BAR_AB = [zn("node-a", "zone1", foo="bar"), zn("node-b", "zone2", foo="")]
TAINTED_AB = [nd("node-a", {"zone": "zone1", "node": "node-a"}, TAINTS), zn("node-b", "zone2")]
NODE_C = tsc(1, "node", DNS, FOO)
ZONE_C = tsc(1, "zone", DNS, FOO)
MAX = 2**31 - 1


def _pod(name: str, node: str, *labels: str, namespace: str = "") -> dict[str, Any]:
    return ep(name, node, dict.fromkeys(labels, ""), namespace)


# (name, preemptor, added pod, existing pods, node index, nodes,
#  want per constraint: (domains, [(value, count), (value, count)], {value: count}))
ADD_POD: list[tuple[str, PodInfo, dict[str, Any], list[dict[str, Any]], int, list[dict[str, Any]], list[Any]]] = [
    (
        "node a and b both impact current min match",
        in_pod(FOO_POD, NODE_C),
        _pod("p-a1", "node-a", "foo"),
        [],
        0,
        TWO_NODES,
        [(2, [("node-b", 0), ("node-a", 1)], {"node-a": 1, "node-b": 0})],
    ),
    (
        "only node a impacts current min match",
        in_pod(FOO_POD, NODE_C),
        _pod("p-a1", "node-a", "foo"),
        [_pod("p-b1", "node-b", "foo")],
        0,
        TWO_NODES,
        [(2, [("node-a", 1), ("node-b", 1)], {"node-a": 1, "node-b": 1})],
    ),
    (
        "add a pod in a different namespace doesn't change topologyKeyToMinPodsMap",
        in_pod(FOO_POD, NODE_C),
        _pod("p-a1", "node-a", "foo", namespace="ns1"),
        [_pod("p-b1", "node-b", "foo")],
        0,
        TWO_NODES,
        [(2, [("node-a", 0), ("node-b", 1)], {"node-a": 0, "node-b": 1})],
    ),
    (
        "add pod on non-critical node won't trigger re-calculation",
        in_pod(FOO_POD, NODE_C),
        _pod("p-b2", "node-b", "foo"),
        [_pod("p-b1", "node-b", "foo")],
        1,
        TWO_NODES,
        [(2, [("node-a", 0), ("node-b", 2)], {"node-a": 0, "node-b": 2})],
    ),
    (
        "node a and x both impact topologyKeyToMinPodsMap on zone and node",
        in_pod(FOO_POD, ZONE_C, NODE_C),
        _pod("p-a1", "node-a", "foo"),
        [],
        0,
        A_X,
        [
            (2, [("zone2", 0), ("zone1", 1)], {"zone1": 1, "zone2": 0}),
            (2, [("node-x", 0), ("node-a", 1)], {"node-a": 1, "node-x": 0}),
        ],
    ),
    (
        "only node a impacts topologyKeyToMinPodsMap on zone and node",
        in_pod(FOO_POD, ZONE_C, NODE_C),
        _pod("p-a1", "node-a", "foo"),
        [_pod("p-x1", "node-x", "foo")],
        0,
        A_X,
        [
            (2, [("zone1", 1), ("zone2", 1)], {"zone1": 1, "zone2": 1}),
            (2, [("node-a", 1), ("node-x", 1)], {"node-a": 1, "node-x": 1}),
        ],
    ),
    (
        "node a impacts topologyKeyToMinPodsMap on node, node x impacts topologyKeyToMinPodsMap on zone",
        in_pod(FOO_POD, ZONE_C, NODE_C),
        _pod("p-a1", "node-a", "foo"),
        [_pod("p-b1", "node-b", "foo"), _pod("p-b2", "node-b", "foo"), _pod("p-x1", "node-x", "foo")],
        0,
        A_B_X,
        [
            (2, [("zone2", 1), ("zone1", 3)], {"zone1": 3, "zone2": 1}),
            (3, [("node-a", 1), ("node-x", 1)], {"node-a": 1, "node-b": 2, "node-x": 1}),
        ],
    ),
    (
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on zone",
        in_pod({"foo": "", "bar": ""}, ZONE_C, tsc(1, "node", DNS, BAR)),
        _pod("p-a1", "node-a", "foo"),
        [_pod("p-b1", "node-b", "foo", "bar"), _pod("p-x1", "node-x", "foo", "bar"), _pod("p-x2", "node-x", "bar")],
        0,
        A_B_X,
        [
            (2, [("zone2", 1), ("zone1", 2)], {"zone1": 2, "zone2": 1}),
            (3, [("node-a", 0), ("node-b", 1)], {"node-a": 0, "node-b": 1, "node-x": 2}),
        ],
    ),
    (
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on both zone and node",
        in_pod({"foo": "", "bar": ""}, ZONE_C, tsc(1, "node", DNS, BAR)),
        _pod("p-a1", "node-a", "foo", "bar"),
        [_pod("p-b1", "node-b", "bar"), _pod("p-x1", "node-x", "foo", "bar"), _pod("p-x2", "node-x", "bar")],
        0,
        A_B_X,
        [
            (2, [("zone1", 1), ("zone2", 1)], {"zone1": 1, "zone2": 1}),
            (3, [("node-a", 1), ("node-b", 1)], {"node-a": 1, "node-b": 1, "node-x": 2}),
        ],
    ),
    (
        "add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled",
        in_pod(FOO_POD, ZONE_C, affinity=affinity_in("foo", ["bar"], "NotIn")),
        _pod("p-a1", "node-a", "foo", "zone"),
        [_pod("p-a2", "node-a", "foo", "zone"), _pod("p-b1", "node-b", "foo", "zone")],
        0,
        FOO_BAR_AB,
        [(1, [("zone2", 1), ("", MAX)], {"zone2": 1})],
    ),
    (
        "add a pod when scheduling node affinity matched pod with NodeInclusionPolicy enabled",
        in_pod(FOO_POD, ZONE_C),
        _pod("p-b1", "node-b", "foo", "zone"),
        [_pod("p-a1", "node-a", "foo", "zone"), _pod("p-b2", "node-b", "foo", "zone")],
        1,
        FOO_BAR_AB,
        [(2, [("zone1", 1), ("zone2", 2)], {"zone1": 1, "zone2": 2})],
    ),
    (
        "add a label selector not matched pod when with NodeInclusionPolicy enabled",
        in_pod(FOO_POD, ZONE_C),
        _pod("p-b1", "node-b", "zone"),
        [_pod("p-a1", "node-a", "foo", "zone"), _pod("p-b2", "node-b", "foo", "zone")],
        1,
        FOO_BAR_AB,
        [(2, [("zone1", 1), ("zone2", 1)], {"zone1": 1, "zone2": 1})],
    ),
    (
        "add a pod when scheduling taint tolerated pod with NodeInclusionPolicy enabled",
        in_pod(FOO_POD, ZONE_C, tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]),
        _pod("p-b1", "node-b", "foo", "zone"),
        [_pod("p-a1", "node-a", "foo", "zone"), _pod("p-b2", "node-b", "foo", "zone")],
        1,
        TAINTED_AB,
        [(2, [("zone1", 1), ("zone2", 2)], {"zone1": 1, "zone2": 2})],
    ),
]

# (name, preemptor, nodes, existing pods, removed pod (an existing one's index, or a pod),
#  node index, want per constraint)
REMOVE_POD: list[tuple[str, PodInfo, list[dict[str, Any]], list[dict[str, Any]], Any, int, list[Any]]] = [
    (
        "one spreadConstraint on zone, topologyKeyToMinPodsMap unchanged",
        in_pod(FOO_POD, ZONE_C),
        A_B_X,
        [_pod("p-a1", "node-a", "foo"), _pod("p-b1", "node-b", "foo"), _pod("p-x1", "node-x", "foo")],
        0,
        0,
        [(2, [("zone1", 1), ("zone2", 1)], {"zone1": 1, "zone2": 1})],
    ),
    (
        "one spreadConstraint on node, topologyKeyToMinPodsMap changed",
        in_pod(FOO_POD, ZONE_C),
        A_B_X_Y,
        [
            _pod("p-a1", "node-a", "foo"),
            _pod("p-b1", "node-b", "foo"),
            _pod("p-x1", "node-x", "foo"),
            _pod("p-y1", "node-y", "foo"),
        ],
        0,
        0,
        [(2, [("zone1", 1), ("zone2", 2)], {"zone1": 1, "zone2": 2})],
    ),
    (
        "delete an irrelevant pod won't help",
        in_pod(FOO_POD, ZONE_C),
        A_B_X_Y,
        [
            _pod("p-a0", "node-a", "bar"),
            _pod("p-a1", "node-a", "foo"),
            _pod("p-b1", "node-b", "foo"),
            _pod("p-x1", "node-x", "foo"),
            _pod("p-y1", "node-y", "foo"),
        ],
        0,
        0,
        [(2, [("zone1", 2), ("zone2", 2)], {"zone1": 2, "zone2": 2})],
    ),
    (
        "delete a non-existing pod won't help",
        in_pod(FOO_POD, ZONE_C),
        A_B_X_Y,
        [
            _pod("p-a1", "node-a", "foo"),
            _pod("p-b1", "node-b", "foo"),
            _pod("p-x1", "node-x", "foo"),
            _pod("p-y1", "node-y", "foo"),
        ],
        _pod("p-a0", "node-a", "bar"),
        0,
        [(2, [("zone1", 2), ("zone2", 2)], {"zone1": 2, "zone2": 2})],
    ),
    (
        "two spreadConstraints",
        in_pod(FOO_POD, ZONE_C, NODE_C),
        A_B_X,
        [
            _pod("p-a1", "node-a", "foo"),
            _pod("p-a2", "node-a", "foo"),
            _pod("p-b1", "node-b", "foo"),
            _pod("p-x1", "node-x", "foo"),
            _pod("p-x2", "node-x", "foo"),
        ],
        3,
        2,
        [
            (2, [("zone2", 1), ("zone1", 3)], {"zone1": 3, "zone2": 1}),
            (3, [("node-b", 1), ("node-x", 1)], {"node-a": 2, "node-b": 1, "node-x": 1}),
        ],
    ),
]


def _sorted_paths(paths: Any) -> list[tuple[str, int]]:
    """The two critical paths as upstream's test comparer sees them (``criticalPaths.sort``:
    on a tie the values in alphabetical order)."""
    pairs = list(zip(paths.values, paths.counts, strict=True))
    if pairs[0][1] == pairs[1][1] and pairs[0][0] > pairs[1][0]:
        pairs.reverse()
    return pairs


def _state_of(plugin: PodTopologySpread, state: CycleState) -> list[Any]:
    s = state.read(f"{NAME}/pre-filter")
    return [(s.domains[i], _sorted_paths(s.paths[i]), s.counts[i]) for i in range(len(s.constraints))]


@pytest.mark.parametrize("case", ADD_POD, ids=[c[0] for c in ADD_POD])
def test_prefilter_state_add_pod(case: Any) -> None:
    _, preemptor, added, existing, node_index, nodes, want = case
    plugin = PodTopologySpread(LIST, None)
    infos = node_infos(nodes, existing)
    state = CycleState(Snapshot(infos))
    assert plugin.pre_filter(state, preemptor, infos)[1].is_success()
    assert plugin.add_pod(
        state, preemptor, PodInfo(msgspec.convert(added, objects.Pod)), infos[node_index]
    ).is_success()
    assert _state_of(plugin, state) == want


@pytest.mark.parametrize("case", REMOVE_POD, ids=[c[0] for c in REMOVE_POD])
def test_prefilter_state_remove_pod(case: Any) -> None:
    _, preemptor, nodes, existing, removed, node_index, want = case
    plugin = PodTopologySpread(LIST, None)
    infos = node_infos(nodes, existing)
    state = CycleState(Snapshot(infos))
    assert plugin.pre_filter(state, preemptor, infos)[1].is_success()
    doc = existing[removed] if isinstance(removed, int) else removed
    gone = PodInfo(msgspec.convert(doc, objects.Pod))
    assert plugin.remove_pod(state, preemptor, gone, infos[node_index]).is_success()
    assert _state_of(plugin, state) == want


def test_required_node_affinity_is_node_affinitys_get_required_node_affinity() -> None:
    """The node-inclusion matcher is NodeAffinity's compiled ``GetRequiredNodeAffinity``: a term
    whose requirement does not parse (a ``NotIn`` value that is no label value) matches no node,
    as upstream's lazy-error selector, while a valid one still matches."""
    node = NodeInfo(msgspec.convert({"metadata": {"name": "n1", "labels": {"zone": "a"}}}, objects.Node))

    def with_not_in(value: str) -> PodInfo:
        term = {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": [value]}]}
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
        doc = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"affinity": affinity}}
        return PodInfo(msgspec.convert(doc, objects.Pod))

    valid = required_node_affinity(with_not_in("b"))
    invalid = required_node_affinity(with_not_in("not a label value"))
    assert valid is not None and valid(node, node.labels)
    assert invalid is not None and not invalid(node, node.labels)
    assert required_node_affinity(PodInfo(msgspec.convert({"metadata": {"name": "p"}}, objects.Pod))) is None

# ruff: noqa: E501  (upstream case names are kept verbatim)
"""InterPodAffinity against kube-scheduler v1.30's tables.

Ports pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go
(``TestRequiredAffinitySingleNode``, ``TestRequiredAffinityMultipleNodes``) and scoring_test.go
(``TestPreferredAffinity``, all 26 rows, and ``TestPreferredAffinityWithHardPodAffinitySymmetricWeight``)
as data, keeping upstream's case names; ``st.MakePod`` wrappers and ``v1.Pod`` literals become
Kubernetes JSON dicts decoded with ``msgspec.convert``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest
from pydantic import ValidationError

from app.extender.verbs import run_filter
from app.framework import (
    SUCCESS,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    NodeScore,
    PodInfo,
    objects,
)
from app.framework.types import NodeUsage
from app.framework.validation import selector_error
from app.plugins.interpodaffinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    NAME,
    PLUGIN,
    InterPodAffinity,
    InterPodAffinityArgs,
)
from tests.unit.helpers import enabled, framework, prioritize

# -- builders (st.MakePod in Kubernetes JSON) -----------------------------------------------------


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def term(topology: str, *exprs: dict[str, Any], **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"labelSelector": {"matchExpressions": list(exprs)}, "topologyKey": topology}
    out.update(extra)
    return out


def t_in(key: str, topology: str, *values: str) -> dict[str, Any]:
    return term(topology, expr(key, "In", *values))


def t_not_in(key: str, topology: str, *values: str) -> dict[str, Any]:
    return term(topology, expr(key, "NotIn", *values))


def t_exists(key: str, topology: str) -> dict[str, Any]:
    return term(topology, expr(key, "Exists"))


def weighted(weight: int, t: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": t}


def mk_pod(
    ns: str = "",
    labels: Mapping[str, str] | None = None,
    node: str = "",
    aff: Sequence[dict[str, Any]] | None = None,
    anti: Sequence[dict[str, Any]] | None = None,
    pref_aff: Sequence[dict[str, Any]] | None = None,
    pref_anti: Sequence[dict[str, Any]] | None = None,
    name: str = "",
    both: bool = False,
) -> dict[str, Any]:
    """A pod; ``both``: ``createPodWithAffinityTerms`` (both podAffinity and podAntiAffinity set,
    their required lists possibly null)."""
    affinity: dict[str, Any] = {}
    if aff is not None or pref_aff is not None or both:
        affinity["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(aff) if aff is not None else None,
            "preferredDuringSchedulingIgnoredDuringExecution": list(pref_aff) if pref_aff is not None else None,
        }
    if anti is not None or pref_anti is not None or both:
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(anti) if anti is not None else None,
            "preferredDuringSchedulingIgnoredDuringExecution": list(pref_anti) if pref_anti is not None else None,
        }
    spec: dict[str, Any] = {"nodeName": node}
    if affinity:
        spec["affinity"] = affinity
    return {"metadata": {"name": name, "namespace": ns, "labels": dict(labels or {})}, "spec": spec}


def mk_node(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": dict(labels or {})}}


def pod_info(doc: dict[str, Any]) -> PodInfo:
    return PodInfo(msgspec.convert(doc, objects.Pod))


@dataclass
class FakeSnapshot:
    """A ``NodeLister`` over fixed NodeInfos and namespace labels."""

    nodes: list[NodeInfo]
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)

    def list(self) -> Sequence[NodeInfo]:
        return self.nodes

    def get(self, name: str) -> NodeInfo | None:
        return next((n for n in self.nodes if n.name == name), None)

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self.namespaces.get(namespace)


def snapshot(
    nodes: Sequence[dict[str, Any]], pods: Sequence[dict[str, Any]], namespaces: dict[str, dict[str, str]] | None = None
) -> FakeSnapshot:
    """``cache.NewSnapshot(pods, nodes)``: pods on a node that is not listed get a NodeInfo
    without a node object, as upstream."""
    by_node: dict[str, list[PodInfo]] = {}
    for p in pods:
        info = pod_info(p)
        by_node.setdefault(info.node_name, []).append(info)
    infos = [
        NodeInfo(
            n["metadata"]["name"],
            msgspec.convert(n, objects.Node),
            NodeUsage(pods=tuple(by_node.get(n["metadata"]["name"], ()))),
        )
        for n in nodes
    ]
    known = {i.name for i in infos}
    infos += [NodeInfo(name, None, NodeUsage(pods=tuple(ps))) for name, ps in by_node.items() if name not in known]
    return FakeSnapshot(infos, dict(namespaces or {}))


def plugin(**args: Any) -> InterPodAffinity:
    return InterPodAffinity(InterPodAffinityArgs(**args), Handle("test"))


#: the namespaces of upstream's fake namespace lister (scoring_test.go / filtering_test.go)
NAMESPACES = {
    "subteam1.team1": {"team": "team1"},
    "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"},
    "subteam2.team2": {"team": "team2"},
}

OK = (Code.SUCCESS, "")
AFF = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY_RULES_NOT_MATCH)
ANTI = (Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
EXISTING = (Code.UNSCHEDULABLE, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
SKIP_ = (Code.SKIP, "")

# -- TestRequiredAffinitySingleNode ----------------------------------------------------------------

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = mk_node("node1", {"region": "r1", "zone": "z11"})
EXISTING_POD = mk_pod(labels=POD_LABEL, node="node1")
BAD_VALUE = (
    'parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: "{{.bad-value.}}": a valid label must '
    "be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
NS_TEAM1 = {"matchExpressions": [expr("team", "In", "team1")]}
TERM_SECURITYSCAN = {"matchExpressions": [expr("service", "In", "securityscan", "value2")]}

# (name, pod, existing pods, want PreFilter (code, reason) or None for success, want Filter)
SINGLE_NODE: list[tuple[str, dict[str, Any], list[dict[str, Any]], tuple[Code, str] | None, tuple[Code, str]]] = [
    (
        "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
        mk_pod(),
        [],
        SKIP_,
        OK,
    ),
    (
        "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
        mk_pod(labels=POD_LABEL2, aff=[t_in("service", "region", "securityscan", "value2")]),
        [EXISTING_POD],
        None,
        OK,
    ),
    (
        "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in labelSelector that matches the existing pod",
        mk_pod(labels=POD_LABEL2, aff=[t_not_in("service", "region", "securityscan3", "value3")]),
        [EXISTING_POD],
        None,
        OK,
    ),
    (
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        mk_pod(
            labels=POD_LABEL2, aff=[{"labelSelector": TERM_SECURITYSCAN, "namespaces": ["DiffNameSpace"]}], both=True
        ),
        [mk_pod(ns="ns", labels={"service": "securityscan"}, node="node1")],
        None,
        AFF,
    ),
    (
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
        mk_pod(labels=POD_LABEL, aff=[t_in("service", "", "antivirusscan", "value2")]),
        [EXISTING_POD],
        None,
        AFF,
    ),
    (
        "satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution ",
        mk_pod(
            labels=POD_LABEL2,
            aff=[
                term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                term("region", expr("service", "In", "securityscan"), expr("service", "NotIn", "WrongValue")),
            ],
            both=True,
        ),
        [EXISTING_POD],
        None,
        OK,
    ),
    (
        "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node because one of the matchExpression item don't match.",
        mk_pod(
            labels=POD_LABEL2,
            aff=[
                term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                term("region", expr("service", "In", "securityscan2"), expr("service", "NotIn", "WrongValue")),
            ],
            both=True,
        ),
        [EXISTING_POD],
        None,
        AFF,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        mk_pod(
            labels=POD_LABEL2,
            aff=[t_in("service", "region", "securityscan", "value2")],
            anti=[t_in("service", "node", "antivirusscan", "value2")],
        ),
        [EXISTING_POD],
        None,
        OK,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
        mk_pod(
            labels=POD_LABEL2,
            aff=[t_in("service", "region", "securityscan", "value2")],
            anti=[t_in("service", "node", "antivirusscan", "value2")],
        ),
        [mk_pod(node="node1", labels=POD_LABEL, anti=[t_in("service", "node", "antivirusscan", "value2")])],
        None,
        OK,
    ),
    (
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        mk_pod(
            labels=POD_LABEL2,
            aff=[t_in("service", "region", "securityscan", "value2")],
            anti=[t_in("service", "zone", "securityscan", "value2")],
        ),
        [EXISTING_POD],
        None,
        ANTI,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        mk_pod(
            labels=POD_LABEL,
            aff=[t_in("service", "region", "securityscan", "value2")],
            anti=[t_in("service", "node", "antivirusscan", "value2")],
        ),
        [mk_pod(labels=POD_LABEL, node="node1", anti=[t_in("service", "zone", "securityscan", "value2")])],
        None,
        EXISTING,
    ),
    (
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        mk_pod(labels=POD_LABEL, aff=[t_not_in("service", "region", "securityscan", "value2")]),
        [mk_pod(labels={"service": "securityscan"}, node="node2")],
        None,
        AFF,
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        mk_pod(labels=POD_LABEL),
        [mk_pod(node="node1", labels=POD_LABEL, anti=[t_in("service", "zone", "securityscan", "value2")])],
        None,
        EXISTING,
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
        mk_pod(labels=POD_LABEL),
        [mk_pod(node="node1", labels=POD_LABEL, anti=[t_not_in("service", "zone", "securityscan", "value2")])],
        SKIP_,
        OK,
    ),
    (
        "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
        mk_pod(labels=POD_LABEL, anti=[t_exists("service", "region"), t_exists("security", "region")]),
        [mk_pod(node="node1", labels=POD_LABEL2, anti=[t_exists("security", "zone")])],
        None,
        ANTI,
    ),
    (
        "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",
        mk_pod(labels=POD_LABEL, anti=[t_exists("service", "zone"), t_exists("security", "zone")]),
        [mk_pod(node="node1", labels=POD_LABEL2, anti=[t_exists("security", "zone")])],
        None,
        ANTI,
    ),
    (
        "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
        mk_pod(labels=POD_LABEL2, anti=[t_exists("security", "zone")]),
        [mk_pod(node="node1", labels=POD_LABEL, anti=[t_exists("service", "zone"), t_exists("security", "zone")])],
        None,
        EXISTING,
    ),
    (
        "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
        mk_pod(labels={"abc": "", "xyz": ""}, anti=[t_exists("abc", "zone"), t_exists("def", "zone")]),
        [mk_pod(node="node1", labels={"def": "", "xyz": ""}, anti=[t_exists("abc", "zone"), t_exists("def", "zone")])],
        None,
        ANTI,
    ),
    (
        "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms",
        mk_pod(labels={"def": "", "xyz": ""}, anti=[t_exists("abc", "zone"), t_exists("def", "zone")]),
        [mk_pod(node="node1", labels={"abc": "", "xyz": ""}, anti=[t_exists("abc", "zone"), t_exists("def", "zone")])],
        None,
        ANTI,
    ),
    (
        "PodAffinity fails PreFilter with an invalid affinity label syntax",
        mk_pod(
            labels=POD_LABEL,
            aff=[t_in("service", "region", "{{.bad-value.}}"), t_in("service", "node", "antivirusscan", "value2")],
        ),
        [],
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, BAD_VALUE),
        OK,
    ),
    (
        "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
        mk_pod(labels=POD_LABEL, aff=[t_in("service", "region", "foo"), t_in("service", "node", "{{.bad-value.}}")]),
        [],
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, BAD_VALUE),
        OK,
    ),
    (
        "affinity with NamespaceSelector",
        mk_pod(
            labels=POD_LABEL2,
            aff=[{"labelSelector": TERM_SECURITYSCAN, "namespaceSelector": NS_TEAM1, "topologyKey": "region"}],
            both=True,
        ),
        [mk_pod(ns="subteam1.team1", labels=POD_LABEL, node="node1")],
        None,
        OK,
    ),
    (
        "affinity with non-matching NamespaceSelector",
        mk_pod(
            labels=POD_LABEL2,
            aff=[{"labelSelector": TERM_SECURITYSCAN, "namespaceSelector": NS_TEAM1, "topologyKey": "region"}],
            both=True,
        ),
        [mk_pod(ns="subteam1.team2", labels=POD_LABEL, node="node1")],
        None,
        AFF,
    ),
    (
        "anti-affinity with matching NamespaceSelector",
        mk_pod(
            ns="subteam1.team1",
            labels=POD_LABEL2,
            anti=[{"labelSelector": TERM_SECURITYSCAN, "namespaceSelector": NS_TEAM1, "topologyKey": "zone"}],
            both=True,
        ),
        [mk_pod(ns="subteam2.team1", labels=POD_LABEL, node="node1")],
        None,
        ANTI,
    ),
    (
        "anti-affinity with matching all NamespaceSelector",
        mk_pod(
            ns="subteam1.team1",
            labels=POD_LABEL2,
            anti=[{"labelSelector": TERM_SECURITYSCAN, "namespaceSelector": {}, "topologyKey": "zone"}],
            both=True,
        ),
        [mk_pod(ns="subteam2.team1", labels=POD_LABEL, node="node1")],
        None,
        ANTI,
    ),
    (
        "anti-affinity with non-matching NamespaceSelector",
        mk_pod(
            ns="subteam1.team1",
            labels=POD_LABEL2,
            anti=[{"labelSelector": TERM_SECURITYSCAN, "namespaceSelector": NS_TEAM1, "topologyKey": "zone"}],
            both=True,
        ),
        [mk_pod(ns="subteam1.team2", labels=POD_LABEL, node="node1")],
        None,
        OK,
    ),
]


def _status_tuple(status: Any) -> tuple[Code, str]:
    return (status.code, status.message)


@pytest.mark.parametrize(
    ("pod", "pods", "want_pre", "want"), [c[1:] for c in SINGLE_NODE], ids=[c[0] for c in SINGLE_NODE]
)
def test_required_affinity_single_node(
    pod: dict[str, Any], pods: list[dict[str, Any]], want_pre: tuple[Code, str] | None, want: tuple[Code, str]
) -> None:
    snap = snapshot([NODE1], pods, NAMESPACES)
    p, state, incoming = plugin(), CycleState(snap), pod_info(pod)
    got_pre = p.pre_filter(state, incoming, snap.nodes[:1])[1]
    assert _status_tuple(got_pre) == (want_pre or OK)
    if got_pre.code is not Code.SUCCESS:
        return
    assert _status_tuple(p.filter(state, incoming, snap.nodes[0])) == want


# -- TestRequiredAffinityMultipleNodes -------------------------------------------------------------

RG_CHINA = {"region": "China"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
RG_INDIA = {"region": "India"}


def _abc(zone_b: str = "z1", extra: bool = False) -> list[dict[str, Any]]:
    nodes = [
        mk_node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
        mk_node("nodeB", {"region": "r1", "zone": zone_b, "hostname": "nodeB"}),
    ]
    if extra:
        nodes.append(mk_node("nodeC", {"region": "r1", "zone": "z3", "hostname": "nodeC"}))
    return nodes


# (name, pod, existing pods, nodes, want PreFilter or None, want Filter per node)
MULTIPLE_NODES: list[
    tuple[
        str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], tuple[Code, str] | None, list[tuple[Code, str]]
    ]
] = [
    (
        "A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has an existing pod that matches the affinity rules",
        mk_pod(aff=[t_in("foo", "region", "bar")]),
        [mk_pod(name="p1", node="node1", labels={"foo": "bar"})],
        [mk_node("node1", RG_CHINA), mk_node("node2", RG_CHINA_AZ1), mk_node("node3", RG_INDIA)],
        None,
        [OK, OK, AFF],
    ),
    (
        "The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the collection "
        "should not be blocked from being scheduled onto any node, even there's no existing pod that matches the rule anywhere.",
        mk_pod(
            labels={"foo": "bar", "service": "securityscan"},
            aff=[t_in("foo", "zone", "bar"), t_in("service", "zone", "securityscan")],
        ),
        [mk_pod(name="p1", node="nodeA", labels={"foo": "bar"})],
        [mk_node("nodeA", {"zone": "az1", "hostname": "h1"}), mk_node("nodeB", {"zone": "az2", "hostname": "h2"})],
        None,
        [OK, OK],
    ),
    (
        "The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
        mk_pod(
            labels={"foo": "bar", "service": "securityscan"},
            aff=[t_in("foo", "zone", "bar"), t_in("service", "zone", "securityscan")],
        ),
        [mk_pod(name="p1", node="nodeA", labels={"foo": "bar"})],
        [
            mk_node("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
            mk_node("nodeB", {"zoneLabel": "az2", "hostname": "h2"}),
        ],
        None,
        [AFF, AFF],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
        mk_pod(anti=[t_in("foo", "region", "abc")]),
        [mk_pod(node="nodeA", labels={"foo": "abc"})],
        [
            mk_node("nodeA", {"region": "r1", "hostname": "nodeA"}),
            mk_node("nodeB", {"region": "r1", "hostname": "nodeB"}),
        ],
        None,
        [ANTI, ANTI],
    ),
    (
        "This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
        mk_pod(anti=[t_in("foo", "region", "abc"), t_in("service", "zone", "securityscan")]),
        [mk_pod(node="nodeA", labels={"foo": "abc", "service": "securityscan"})],
        [
            mk_node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
            mk_node("nodeB", {"region": "r1", "zone": "z2", "hostname": "nodeB"}),
        ],
        None,
        [ANTI, ANTI],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
        mk_pod(anti=[t_in("foo", "region", "abc")]),
        [mk_pod(node="nodeA", labels={"foo": "abc"})],
        [mk_node("nodeA", RG_CHINA), mk_node("nodeB", RG_CHINA_AZ1), mk_node("nodeC", RG_INDIA)],
        None,
        [ANTI, ANTI, OK],
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
        mk_pod(ns="NS1", labels={"foo": "123"}, anti=[t_in("foo", "region", "bar")]),
        [
            mk_pod(node="nodeA", ns="NS1", labels={"foo": "bar"}),
            mk_pod(node="nodeC", ns="NS2", anti=[t_in("foo", "region", "123")]),
        ],
        [mk_node("nodeA", RG_CHINA), mk_node("nodeB", RG_CHINA_AZ1), mk_node("nodeC", RG_INDIA)],
        None,
        [ANTI, ANTI, OK],
    ),
    (
        "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of the term is firstly checked, and then topologyKey of the term is also checked",
        mk_pod(labels={"foo": ""}),
        [mk_pod(node="nodeA", anti=[t_exists("foo", "invalid-node-label")])],
        _abc(),
        SKIP_,
        [OK, OK],
    ),
    (
        "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
        mk_pod(node="nodeA", anti=[t_exists("foo", "invalid-node-label")]),
        [mk_pod(node="nodeA", labels={"foo": ""})],
        _abc(),
        None,
        [OK, OK],
    ),
    (
        "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each existingPod's terms on all nodes",
        mk_pod(labels={"foo": "", "bar": ""}),
        [
            mk_pod(node="nodeA", anti=[t_exists("foo", "zone")]),
            mk_pod(node="nodeA", anti=[t_exists("bar", "region")]),
        ],
        _abc("z2"),
        None,
        [EXISTING, EXISTING],
    ),
    (
        "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one anti-affinity rule of existingPod",
        mk_pod(anti=[t_exists("foo", "zone"), t_exists("bar", "region")]),
        [mk_pod(node="nodeA", labels={"foo": ""}), mk_pod(node="nodeB", labels={"bar": ""})],
        _abc("z2"),
        None,
        [ANTI, ANTI],
    ),
    (
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
        mk_pod(labels={"foo": "", "bar": ""}),
        [mk_pod(node="nodeA", anti=[t_exists("foo", "invalid-node-label"), t_exists("bar", "zone")])],
        _abc("z2"),
        None,
        [EXISTING, OK],
    ),
    (
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
        mk_pod(anti=[t_exists("foo", "invalid-node-label"), t_exists("bar", "zone")]),
        [mk_pod(name="podA", node="nodeA", labels={"foo": "", "bar": ""})],
        _abc("z2"),
        None,
        [ANTI, OK],
    ),
    (
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
        mk_pod(labels={"foo": "", "bar": ""}),
        [mk_pod(node="nodeA", anti=[t_exists("foo", "region"), t_exists("bar", "zone")])],
        _abc("z2"),
        None,
        [EXISTING, EXISTING],
    ),
    (
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
        mk_pod(anti=[t_exists("foo", "region"), t_exists("bar", "zone")]),
        [mk_pod(node="nodeA", labels={"foo": "", "bar": ""})],
        _abc("z2"),
        None,
        [ANTI, ANTI],
    ),
    (
        "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term matches incoming pod, so incoming pod can only be scheduled to nodeC",
        mk_pod(labels={"foo": "", "bar": ""}),
        [
            mk_pod(node="nodeA", anti=[t_exists("foo", "zone"), t_exists("labelA", "zone")]),
            mk_pod(node="nodeB", anti=[t_exists("bar", "zone"), t_exists("labelB", "zone")]),
        ],
        _abc("z2", extra=True),
        None,
        [EXISTING, EXISTING, OK],
    ),
    (
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match",
        mk_pod(aff=[t_exists("foo", "region"), t_exists("bar", "zone")]),
        [mk_pod(name="pod1", labels={"foo": "", "bar": ""}, node="nodeA")],
        _abc(),
        None,
        [OK, OK],
    ),
    (
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match, and the match logic should be satisfied on the same pod",
        mk_pod(aff=[t_exists("foo", "region"), t_exists("bar", "zone")]),
        [
            mk_pod(node="nodeA", name="pod1", labels={"foo": ""}),
            mk_pod(node="nodeB", name="pod2", labels={"bar": ""}),
        ],
        _abc("z2"),
        None,
        [AFF, AFF],
    ),
]


@pytest.mark.parametrize(
    ("pod", "pods", "nodes", "want_pre", "want"),
    [c[1:] for c in MULTIPLE_NODES],
    ids=[c[0][:100] for c in MULTIPLE_NODES],
)
def test_required_affinity_multiple_nodes(
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    want_pre: tuple[Code, str] | None,
    want: list[tuple[Code, str]],
) -> None:
    snap = snapshot(nodes, pods, {"NS1": {}})
    p, state, incoming = plugin(), CycleState(snap), pod_info(pod)
    candidates = snap.nodes[: len(nodes)]
    got_pre = p.pre_filter(state, incoming, candidates)[1]
    assert _status_tuple(got_pre) == (want_pre or OK)
    if got_pre.code is Code.SKIP:
        return
    assert [_status_tuple(p.filter(state, incoming, n)) for n in candidates] == want
    # the framework's wiring: a skipped or passing node has no status, a rejected one its reason
    outcome = run_filter(framework(filter=[p]), incoming, candidates, CycleState(snap))
    assert [(s.code, s.message) for s in outcome.statuses] == want


def test_pre_filter_without_snapshot_uses_the_given_nodes() -> None:
    snap = snapshot(
        [mk_node("nodeA", RG_CHINA), mk_node("nodeB", RG_INDIA)], [mk_pod(node="nodeA", labels={"foo": "abc"})]
    )
    p, incoming = plugin(), pod_info(mk_pod(anti=[t_in("foo", "region", "abc")]))
    state = CycleState(None)
    assert p.pre_filter(state, incoming, snap.nodes)[1].is_success()
    assert [_status_tuple(p.filter(state, incoming, n)) for n in snap.nodes] == [ANTI, OK]


def test_unknown_namespace_and_selector_semantics() -> None:
    """An incoming term's namespaceSelector selects only known namespaces; an existing pod's
    selector is matched against the incoming namespace's labels, empty when unknown
    (``GetNamespaceLabelsSnapshot``), so ``DoesNotExist`` matches there."""
    nodes = [mk_node("nodeA", RG_CHINA)]
    does_not_exist = {"matchExpressions": [expr("team", "DoesNotExist")]}
    # incoming affinity selecting namespaces without "team": the pod's namespace "ghost" is unknown
    web = {"matchLabels": {"app": "web"}}
    incoming = mk_pod(
        ns="x", aff=[{"labelSelector": web, "namespaceSelector": does_not_exist, "topologyKey": "region"}]
    )
    snap = snapshot(nodes, [mk_pod(ns="ghost", node="nodeA", labels={"app": "web"})], {"x": {}})
    p, state = plugin(), CycleState(snap)
    assert p.pre_filter(state, pod_info(incoming), snap.nodes)[1].is_success()
    assert _status_tuple(p.filter(state, pod_info(incoming), snap.nodes[0])) == AFF
    snap = snapshot(nodes, [mk_pod(ns="ghost", node="nodeA", labels={"app": "web"})], {"x": {}, "ghost": {}})
    state = CycleState(snap)
    assert p.pre_filter(state, pod_info(incoming), snap.nodes)[1].is_success()
    assert _status_tuple(p.filter(state, pod_info(incoming), snap.nodes[0])) == OK
    # an existing pod's anti-affinity with that selector matches an incoming pod in an unknown namespace
    existing = mk_pod(
        ns="y", node="nodeA", anti=[{"labelSelector": {}, "namespaceSelector": does_not_exist, "topologyKey": "region"}]
    )
    snap = snapshot(nodes, [existing], {})
    state = CycleState(snap)
    assert p.pre_filter(state, pod_info(mk_pod(ns="ghost")), snap.nodes)[1].is_success()
    assert _status_tuple(p.filter(state, pod_info(mk_pod(ns="ghost")), snap.nodes[0])) == EXISTING
    # a null labelSelector selects nothing
    existing = mk_pod(ns="ghost", node="nodeA", anti=[{"topologyKey": "region"}])
    snap = snapshot(nodes, [existing], {})
    assert plugin().pre_filter(CycleState(snap), pod_info(mk_pod(ns="ghost")), snap.nodes)[1].code is Code.SKIP


# -- the properties: Filter == the definitions, and AddPod/RemovePod == PreFilter recomputed ------


RANDOM_NAMESPACES = {"ns1": {"team": "t1"}, "ns2": {}}


def _random_case(rng: random.Random) -> tuple[FakeSnapshot, dict[str, Any]]:
    nodes, pods, incoming, _ = _random_docs(rng)
    return snapshot(nodes, pods, RANDOM_NAMESPACES), incoming


def _random_docs(
    rng: random.Random,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """Random nodes, pods on them, an incoming pod and one more pod on a random node."""
    keys, values = ["app", "tier"], ["a", "b", ""]
    topo = ["zone", "region", "hostname", "missing"]

    def labels() -> dict[str, str]:
        return {k: rng.choice(values) for k in keys if rng.random() < 0.6}

    def rterm() -> dict[str, Any]:
        kind = rng.random()
        key = rng.choice(keys)
        if kind < 0.4:
            e = expr(key, "In", rng.choice(values))
        elif kind < 0.6:
            e = expr(key, "NotIn", rng.choice(values))
        elif kind < 0.8:
            e = expr(key, "Exists")
        else:
            e = expr(key, "DoesNotExist")
        out = term(rng.choice(topo), e)
        if rng.random() < 0.2:
            out["namespaces"] = [rng.choice(["ns1", "ns2"])]
        if rng.random() < 0.1:
            out["namespaceSelector"] = rng.choice([{}, {"matchLabels": {"team": "t1"}}])
        return out

    def rpod(node: str) -> dict[str, Any]:
        aff = [rterm() for _ in range(rng.choice([0, 0, 1, 2]))] or None
        anti = [rterm() for _ in range(rng.choice([0, 0, 1]))] or None
        return mk_pod(ns=rng.choice(["ns1", "ns2"]), labels=labels(), node=node, aff=aff, anti=anti)

    nodes = []
    for i in range(rng.randint(1, 8)):
        nl = {"hostname": f"n{i}"}
        if rng.random() < 0.8:
            nl["zone"] = rng.choice(["z1", "z2"])
        if rng.random() < 0.8:
            nl["region"] = rng.choice(["r1", "r2"])
        nodes.append(mk_node(f"n{i}", nl))
    pods = [rpod(f"n{rng.randrange(len(nodes))}") for _ in range(rng.randint(0, 12))]
    extra = rpod(f"n{rng.randrange(len(nodes))}")
    extra["metadata"]["name"] = "extra"
    return nodes, pods, rpod(""), extra


def _brute_force(snap: FakeSnapshot, pod: PodInfo, node: NodeInfo) -> tuple[Code, str]:
    """The Filter verdict computed pod by pod, from the definitions (no counts)."""
    from app.plugins.interpodaffinity import IncomingTerm, existing_term_matches, namespace_lookup

    state = CycleState(snap)
    lookup = namespace_lookup(state)
    aff = pod.affinity
    req = [
        IncomingTerm(t, pod, lookup)
        for t in (
            (aff.pod_affinity.required_during_scheduling_ignored_during_execution or [])
            if aff and aff.pod_affinity
            else []
        )
    ]
    anti = [
        IncomingTerm(t, pod, lookup)
        for t in (
            (aff.pod_anti_affinity.required_during_scheduling_ignored_during_execution or [])
            if aff and aff.pod_anti_affinity
            else []
        )
    ]
    labels = node.labels
    placed = [(n, q) for n in snap.nodes if n.node is not None for q in n.pods]
    if req:
        if any(t.topology_key not in labels for t in req):
            return AFF
        in_domain = all(
            any(
                all(u.matches(q) for u in req) and n.labels.get(t.topology_key) == labels[t.topology_key]
                for n, q in placed
            )
            for t in req
        )
        anywhere = any(
            all(u.matches(q) for u in req) and any(u.topology_key in n.labels for u in req) for n, q in placed
        )
        if not in_domain and (anywhere or not all(u.matches(pod) for u in req)):
            return AFF
    for t in anti:
        if t.topology_key in labels and any(
            t.matches(q) and n.labels.get(t.topology_key) == labels[t.topology_key] for n, q in placed
        ):
            return ANTI
    ns_labels = snap.namespace_labels(pod.namespace) or {}
    for n, q in placed:
        qa = q.affinity.pod_anti_affinity if q.affinity else None
        for raw in (qa.required_during_scheduling_ignored_during_execution or []) if qa else []:
            key = raw.topology_key or ""
            if (
                key in labels
                and n.labels.get(key) == labels[key]
                and existing_term_matches(raw, q.namespace, pod, ns_labels)
            ):
                return EXISTING
    return OK


def test_property_filter_equals_brute_force() -> None:
    rng = random.Random(20240530)
    for _ in range(400):
        snap, doc = _random_case(rng)
        pod = pod_info(doc)
        p, state = plugin(), CycleState(snap)
        candidates = [n for n in snap.nodes if n.node is not None]
        pre = p.pre_filter(state, pod, candidates)[1]
        if pre.code is Code.SKIP:
            assert all(_brute_force(snap, pod, n) == OK for n in candidates)
            continue
        assert pre.is_success()
        single = [p.filter(state, pod, n) for n in candidates]
        assert [_status_tuple(s) for s in single] == [_brute_force(snap, pod, n) for n in candidates], doc


def test_property_add_and_remove_pod_equal_prefilter_recomputed() -> None:
    """``AddPod``/``RemovePod`` (``updateWithPod``) leave PreFilter's state as PreFilter over the
    cluster with the pod added or removed would compute it: every node's verdict agrees. The
    cycle's own state is untouched (the framework changes a clone)."""
    rng = random.Random(20240601)
    checked = 0
    for _ in range(400):
        nodes, pods, doc, extra_doc = _random_docs(rng)
        without = snapshot(nodes, pods, RANDOM_NAMESPACES)
        with_extra = snapshot(nodes, [*pods, extra_doc], RANDOM_NAMESPACES)
        extra = pod_info(extra_doc)
        node = next(n for n in with_extra.nodes if n.name == extra.node_name)
        pod = pod_info(doc)
        p = plugin()
        base = CycleState(without)
        if p.pre_filter(base, pod, without.nodes)[1].code is Code.SKIP:
            continue  # upstream runs no AddPod for a plugin PreFilter skipped
        added = base.clone()
        assert p.add_pod(added, pod, extra, node).is_success()
        full = CycleState(with_extra)
        assert p.pre_filter(full, pod, with_extra.nodes)[1].is_success()
        verdicts = [_status_tuple(p.filter(full, pod, n)) for n in with_extra.nodes]
        assert [_status_tuple(p.filter(added, pod, n)) for n in with_extra.nodes] == verdicts, doc
        before = [_status_tuple(p.filter(base, pod, n)) for n in without.nodes]
        assert before == [_brute_force(without, pod, n) for n in without.nodes]  # the clone only changed
        removed = full.clone()
        assert p.remove_pod(removed, pod, extra, node).is_success()
        assert [_status_tuple(p.filter(removed, pod, n)) for n in without.nodes] == before
        checked += 1
    assert checked > 100


# -- args ------------------------------------------------------------------------------------------


def test_args_defaults_and_validation() -> None:
    args = InterPodAffinityArgs()
    assert args.hard_pod_affinity_weight == 1 and args.ignore_preferred_terms_of_existing_pods is False
    assert InterPodAffinityArgs.model_validate({"hardPodAffinityWeight": 0}).hard_pod_affinity_weight == 0
    assert InterPodAffinityArgs.model_validate({"hardPodAffinityWeight": 100}).hard_pod_affinity_weight == 100
    for bad in (-1, 101):
        with pytest.raises(ValidationError, match=r"not in valid range \[0-100\]"):
            InterPodAffinityArgs.model_validate({"hardPodAffinityWeight": bad})
    with pytest.raises(ValidationError):
        InterPodAffinityArgs.model_validate({"unknown": 1})
    assert PLUGIN.name == "InterPodAffinity" and PLUGIN.needs_cluster and PLUGIN.args is InterPodAffinityArgs


def test_normalize_score_min_max() -> None:
    """NormalizeScore: ``int(100 * (s - min) / (max - min))``; equal scores all become 0."""
    p, state = plugin(), CycleState()
    state.write(f"{NAME}/pre-score", {"zone": {"z1": 1}})
    scores = [NodeScore("a", -5), NodeScore("b", 0), NodeScore("c", 10)]
    assert p.normalize_score(state, pod_info(mk_pod()), scores) is SUCCESS
    assert [s.score for s in scores] == [0, 33, 100]
    scores = [NodeScore("a", 3), NodeScore("b", 3)]
    p.normalize_score(state, pod_info(mk_pod()), scores)
    assert [s.score for s in scores] == [0, 0]


# -- TestPreferredAffinity (scoring_test.go) -------------------------------------------------------

S1 = {"security": "S1"}
S2 = {"security": "S2"}
RG_CHINA_ = {"region": "China"}
RG_INDIA_ = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
RG_CHINA_AZ1_ = {"region": "China", "az": "az1"}
NS_TEAM1_SELECTOR = {"namespaces": ["subteam2.team2"], "namespaceSelector": NS_TEAM1}

# the affinities of upstream's table, as ``mk_pod`` keyword arguments
STAY_WITH_S1_IN_REGION: dict[str, Any] = {"pref_aff": [weighted(5, t_in("security", "region", "S1"))]}
STAY_WITH_S2_IN_REGION: dict[str, Any] = {"pref_aff": [weighted(6, t_in("security", "region", "S2"))]}
AFFINITY3: dict[str, Any] = {
    "pref_aff": [
        weighted(8, term("region", expr("security", "NotIn", "S1"), expr("security", "In", "S2"))),
        weighted(2, term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist"))),
    ]
}
HARD_AFFINITY: dict[str, Any] = {
    "aff": [
        t_in("security", "region", "S1", "value2"),
        term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist")),
    ]
}
AWAY_FROM_S1_IN_AZ: dict[str, Any] = {"pref_anti": [weighted(5, t_in("security", "az", "S1"))]}
AWAY_FROM_S2_IN_AZ: dict[str, Any] = {"pref_anti": [weighted(5, t_in("security", "az", "S2"))]}
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ: dict[str, Any] = {
    "pref_aff": [weighted(8, t_in("security", "region", "S1"))],
    "pref_anti": [weighted(5, t_in("security", "az", "S2"))],
}
AFFINITY_NAMESPACE_SELECTOR: dict[str, Any] = {
    "pref_aff": [weighted(5, term("region", expr("security", "In", "S1"), **NS_TEAM1_SELECTOR))]
}
ANTI_AFFINITY_NAMESPACE_SELECTOR: dict[str, Any] = {
    "pref_anti": [weighted(5, term("region", expr("security", "In", "S1"), **NS_TEAM1_SELECTOR))]
}
INVALID_AFFINITY_LABELS: dict[str, Any] = {"pref_aff": [weighted(8, t_in("security", "region", "{{.bad-value.}}"))]}
INVALID_ANTI_AFFINITY_LABELS: dict[str, Any] = {"pref_anti": [weighted(5, t_in("security", "az", "{{.bad-value.}}"))]}
BAD_VALUE_SUBSTRING = 'Invalid value: "{{.bad-value.}}"'


def _nodes(*labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """``node1``, ``node2``, ... with the given labels."""
    return [mk_node(f"node{i}", lab) for i, lab in enumerate(labels, 1)]


@dataclass
class PreferredCase:
    """A row of upstream's table: ``want`` the normalized scores per node (``expectedList``),
    ``want_status`` the (code, message substring) of a PreScore that does not succeed."""

    name: str
    pod: dict[str, Any]
    pods: list[dict[str, Any]]
    nodes: list[dict[str, Any]]
    want: list[int] | None = None
    want_status: tuple[Code, str] | None = None
    ignore_preferred_terms_of_existing_pods: bool = False


MAX = 100  # framework.MaxNodeScore

PREFERRED_AFFINITY: list[PreferredCase] = [
    PreferredCase(
        "all nodes are same priority as Affinity is nil",
        mk_pod(labels=S1),
        [],
        _nodes(RG_CHINA_, RG_INDIA_, AZ1),
        want_status=(Code.SKIP, ""),
    ),
    PreferredCase(
        "Affinity: pod that matches topology key & pods in nodes will get high score comparing to others"
        "which doesn't match either pods in nodes or in topology key",
        mk_pod(labels=S1, **STAY_WITH_S1_IN_REGION),
        [mk_pod(node="node1", labels=S1), mk_pod(node="node2", labels=S2), mk_pod(node="node3", labels=S1)],
        _nodes(RG_CHINA_, RG_INDIA_, AZ1),
        [MAX, 0, 0],
    ),
    PreferredCase(
        "All the nodes that have the same topology key & label value with one of them has an existing pod that match the affinity rules, have the same score",
        mk_pod(**STAY_WITH_S1_IN_REGION),
        [mk_pod(node="node1", labels=S1)],
        _nodes(RG_CHINA_, RG_CHINA_AZ1_, RG_INDIA_),
        [MAX, MAX, 0],
    ),
    PreferredCase(
        "Affinity: nodes in one region has more matching pods comparing to other region, so the region which has more matches will get high score",
        mk_pod(labels=S1, **STAY_WITH_S2_IN_REGION),
        [mk_pod(node=n, labels=S2) for n in ("node1", "node1", "node2", "node3", "node4", "node5")],
        _nodes(RG_CHINA_, RG_INDIA_, RG_CHINA_, RG_CHINA_, RG_INDIA_),
        [MAX, 0, MAX, MAX, 0],
    ),
    PreferredCase(
        "Affinity: different Label operators and values for pod affinity scheduling preference, including some match failures ",
        mk_pod(labels=S1, **AFFINITY3),
        [mk_pod(node="node1", labels=S1), mk_pod(node="node2", labels=S2), mk_pod(node="node3", labels=S1)],
        _nodes(RG_CHINA_, RG_INDIA_, AZ1),
        [20, MAX, 0],
    ),
    PreferredCase(
        "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
        mk_pod(labels=S2),
        [
            mk_pod(node="node1", labels=S1, **STAY_WITH_S1_IN_REGION),
            mk_pod(node="node2", labels=S2, **STAY_WITH_S2_IN_REGION),
        ],
        _nodes(RG_CHINA_, RG_INDIA_, AZ1),
        [0, MAX, 0],
    ),
    PreferredCase(
        "Affinity symmetry with namespace selector",
        mk_pod(ns="subteam1.team1", labels=S1),
        [
            mk_pod(node="node1", labels=S1, **AFFINITY_NAMESPACE_SELECTOR),
            mk_pod(node="node2", labels=S2, **STAY_WITH_S2_IN_REGION),
        ],
        _nodes(RG_CHINA_, RG_INDIA_, AZ1),
        [MAX, 0, 0],
    ),
    PreferredCase(
        "AntiAffinity symmetry with namespace selector",
        mk_pod(ns="subteam1.team1", labels=S1),
        [
            mk_pod(node="node1", labels=S1, **ANTI_AFFINITY_NAMESPACE_SELECTOR),
            mk_pod(node="node2", labels=S2, **STAY_WITH_S2_IN_REGION),
        ],
        _nodes(RG_CHINA_, RG_INDIA_, AZ1),
        [0, MAX, MAX],
    ),
    PreferredCase(
        "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
        mk_pod(labels=S1),
        [mk_pod(node="node1", labels=S1, **HARD_AFFINITY), mk_pod(node="node2", labels=S2, **HARD_AFFINITY)],
        _nodes(RG_CHINA_, RG_INDIA_, AZ1),
        [MAX, MAX, 0],
    ),
    PreferredCase(
        "Anti Affinity: pod that does not match existing pods in node will get high score ",
        mk_pod(labels=S1, **AWAY_FROM_S1_IN_AZ),
        [mk_pod(node="node1", labels=S1), mk_pod(node="node2", labels=S2)],
        _nodes(AZ1, RG_CHINA_),
        [0, MAX],
    ),
    PreferredCase(
        "Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score comparing to others ",
        mk_pod(labels=S1, **AWAY_FROM_S1_IN_AZ),
        [mk_pod(node="node1", labels=S1), mk_pod(node="node2", labels=S1)],
        _nodes(AZ1, RG_CHINA_),
        [0, MAX],
    ),
    PreferredCase(
        "Anti Affinity: one node has more matching pods comparing to other node, so the node which has more unmatches will get high score",
        mk_pod(labels=S1, **AWAY_FROM_S1_IN_AZ),
        [mk_pod(node="node1", labels=S1), mk_pod(node="node1", labels=S1), mk_pod(node="node2", labels=S2)],
        _nodes(AZ1, RG_INDIA_),
        [0, MAX],
    ),
    PreferredCase(
        "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
        mk_pod(labels=S2),
        [
            mk_pod(node="node1", labels=S1, **AWAY_FROM_S2_IN_AZ),
            mk_pod(node="node2", labels=S2, **AWAY_FROM_S1_IN_AZ),
        ],
        _nodes(AZ1, AZ2),
        [0, MAX],
    ),
    PreferredCase(
        "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity",
        mk_pod(labels=S1, **STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [mk_pod(node="node1", labels=S1), mk_pod(node="node2", labels=S1)],
        _nodes(RG_CHINA_, AZ1),
        [MAX, 0],
    ),
    PreferredCase(
        "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing pods have the same labels",
        mk_pod(labels=S1, **STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [mk_pod(node=n, labels=S1) for n in ("node1", "node1", "node2", "node3", "node3", "node4", "node5")],
        _nodes(RG_CHINA_AZ1_, RG_INDIA_, RG_CHINA_, RG_CHINA_, RG_INDIA_),
        [MAX, 0, MAX, MAX, 0],
    ),
    PreferredCase(
        "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity & symmetry",
        mk_pod(labels=S1, **STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [
            mk_pod(node="node1", labels=S1),
            mk_pod(node="node2", labels=S2),
            mk_pod(node="node3", **STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            mk_pod(node="node4", **AWAY_FROM_S1_IN_AZ),
        ],
        _nodes(RG_CHINA_, AZ1, RG_INDIA_, AZ2),
        [MAX, 0, MAX, 0],
    ),
    PreferredCase(
        "Avoid panic when partial nodes in a topology don't have pods with affinity",
        mk_pod(labels=S1),
        [mk_pod(node="node1", labels=S1), mk_pod(node="node2", **STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)],
        _nodes(RG_CHINA_, RG_CHINA_),
        [0, 0],
    ),
    PreferredCase(
        "invalid Affinity fails PreScore",
        mk_pod(**INVALID_AFFINITY_LABELS),
        [],
        _nodes(RG_CHINA_, RG_CHINA_),
        want_status=(Code.ERROR, BAD_VALUE_SUBSTRING),
    ),
    PreferredCase(
        "invalid AntiAffinity fails PreScore",
        mk_pod(**INVALID_ANTI_AFFINITY_LABELS),
        [],
        _nodes(RG_CHINA_, RG_CHINA_),
        want_status=(Code.ERROR, BAD_VALUE_SUBSTRING),
    ),
    PreferredCase(
        "Affinity with pods matching NamespaceSelector",
        mk_pod(ns="subteam1.team1", labels=S1, **AFFINITY_NAMESPACE_SELECTOR),
        [
            mk_pod(node="node1", ns="subteam1.team1", labels=S1),
            mk_pod(node="node1", ns="subteam1.team1", labels=S1),
            mk_pod(node="node1", ns="subteam1.team2", labels=S1),
            mk_pod(node="node2", ns="subteam2.team1", labels=S1),
        ],
        _nodes(RG_CHINA_, RG_INDIA_),
        [MAX, 0],
    ),
    PreferredCase(
        "Affinity with pods matching both NamespaceSelector and Namespaces fields",
        mk_pod(ns="subteam1.team1", labels=S1, **AFFINITY_NAMESPACE_SELECTOR),
        [
            mk_pod(node="node1", ns="subteam1.team1", labels=S1),
            mk_pod(node="node1", ns="subteam1.team1", labels=S1),
            mk_pod(node="node1", ns="subteam2.team2", labels=S1),
            mk_pod(node="node2", ns="subteam2.team1", labels=S1),
        ],
        _nodes(RG_CHINA_, RG_INDIA_),
        [MAX, 0],
    ),
    # upstream reuses the two names above for the anti-affinity rows (pytest suffixes the ids)
    PreferredCase(
        "Affinity with pods matching NamespaceSelector",
        mk_pod(ns="subteam1.team1", labels=S1, **ANTI_AFFINITY_NAMESPACE_SELECTOR),
        [
            mk_pod(node="node1", ns="subteam1.team1", labels=S1),
            mk_pod(node="node1", ns="subteam1.team1", labels=S1),
            mk_pod(node="node1", ns="subteam1.team2", labels=S1),
            mk_pod(node="node2", ns="subteam2.team1", labels=S1),
        ],
        _nodes(RG_CHINA_, RG_INDIA_),
        [0, MAX],
    ),
    PreferredCase(
        "Affinity with pods matching both NamespaceSelector and Namespaces fields",
        mk_pod(ns="subteam1.team1", labels=S1, **ANTI_AFFINITY_NAMESPACE_SELECTOR),
        [
            mk_pod(node="node1", ns="subteam1.team1", labels=S1),
            mk_pod(node="node1", ns="subteam1.team1", labels=S1),
            mk_pod(node="node1", ns="subteam2.team2", labels=S1),
            mk_pod(node="node2", ns="subteam2.team1", labels=S1),
        ],
        _nodes(RG_CHINA_, RG_INDIA_),
        [0, MAX],
    ),
    PreferredCase(
        "Ignore preferred terms of existing pods",
        mk_pod(labels=S2),
        [
            mk_pod(node="node1", labels=S1, **STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            mk_pod(node="node2", labels=S2, **STAY_WITH_S2_IN_REGION),
        ],
        _nodes(RG_CHINA_, RG_INDIA_),
        [0, 0],
        want_status=(Code.SKIP, ""),
        ignore_preferred_terms_of_existing_pods=True,
    ),
    PreferredCase(
        "Do not ignore preferred terms of existing pods",
        mk_pod(labels=S2),
        [
            mk_pod(node="node1", labels=S1, **STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            mk_pod(node="node2", labels=S2, **STAY_WITH_S2_IN_REGION),
        ],
        _nodes(RG_CHINA_, RG_INDIA_),
        [0, MAX],
        ignore_preferred_terms_of_existing_pods=False,
    ),
    PreferredCase(
        "No nodes to score",
        mk_pod(labels=S2),
        [],
        [],
        want_status=(Code.SKIP, ""),
    ),
]


@pytest.mark.parametrize("case", PREFERRED_AFFINITY, ids=[c.name for c in PREFERRED_AFFINITY])
def test_preferred_affinity(case: PreferredCase) -> None:
    """Upstream's loop: PreScore over the nodes; a status that is not success must have the
    wanted code and contain the wanted message; otherwise Score each node, NormalizeScore, and
    compare the list with ``expectedList``."""
    snap = snapshot(case.nodes, case.pods, NAMESPACES)
    p = plugin(hardPodAffinityWeight=1, ignorePreferredTermsOfExistingPods=case.ignore_preferred_terms_of_existing_pods)
    state, incoming = CycleState(snap), pod_info(case.pod)
    nodes = snap.nodes[: len(case.nodes)]
    status = p.pre_score(state, incoming, nodes)
    if not status.is_success():
        assert case.want_status is not None, status
        code, message = case.want_status
        assert status.code is code
        assert message in status.message
        return
    scores = [NodeScore(n.name, p.score(state, incoming, n)[0]) for n in nodes]
    assert p.normalize_score(state, incoming, scores).is_success()
    assert case.want is not None
    assert [(s.name, s.score) for s in scores] == [
        (n["metadata"]["name"], w) for n, w in zip(case.nodes, case.want, strict=True)
    ]
    # the framework's wiring: PreScore, Score, NormalizeScore
    outcome = prioritize(framework(score=[p]), incoming, nodes, CycleState(snap))
    assert outcome.plugin_scores[NAME] == case.want


# -- TestPreferredAffinityWithHardPodAffinitySymmetricWeight (scoring_test.go) ---------------------

HARD_POD_AFFINITY = [
    {
        "labelSelector": {"matchExpressions": [expr("service", "In", "S1")]},
        "namespaces": ["", "subteam2.team2"],
        "namespaceSelector": {"matchExpressions": [expr("team", "In", "team1")]},
        "topologyKey": "region",
    }
]
SYMMETRIC_NODES = [
    mk_node("node1", {"region": "China"}),
    mk_node("node2", {"region": "India"}),
    mk_node("node3", {"az": "az1"}),
]
SYMMETRIC_PODS = [mk_pod(node="node1", aff=HARD_POD_AFFINITY), mk_pod(node="node2", aff=HARD_POD_AFFINITY)]

# (name, incoming pod's namespace, hardPodAffinityWeight, want scores or None for PreScore Skip)
SYMMETRIC_WEIGHT: list[tuple[str, str, int, list[int] | None]] = [
    ("with default weight", "", 1, [100, 100, 0]),
    ("with zero weight", "", 0, None),
    ("with no matching namespace", "subteam1.team2", 1, None),
    ("with matching NamespaceSelector", "subteam1.team1", 1, [100, 100, 0]),
    ("with matching Namespaces", "subteam2.team2", 1, [100, 100, 0]),
]


@pytest.mark.parametrize(
    ("ns", "weight", "want"), [c[1:] for c in SYMMETRIC_WEIGHT], ids=[c[0] for c in SYMMETRIC_WEIGHT]
)
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(
    ns: str, weight: int, want: list[int] | None
) -> None:
    snap = snapshot(SYMMETRIC_NODES, SYMMETRIC_PODS, NAMESPACES)
    p, state = plugin(hardPodAffinityWeight=weight), CycleState(snap)
    incoming = pod_info(mk_pod(ns=ns, labels={"service": "S1"}))
    nodes = snap.nodes[:3]
    status = p.pre_score(state, incoming, nodes)
    if want is None:
        assert status.code is Code.SKIP
        return
    assert status.is_success()
    scores = [NodeScore(n.name, p.score(state, incoming, n)[0]) for n in nodes]
    assert p.normalize_score(state, incoming, scores).is_success()
    assert [s.score for s in scores] == want
    # the framework's wiring: PreScore, Score, NormalizeScore, weight
    outcome = prioritize(framework(score=[enabled(p, 2)]), incoming, nodes, CycleState(snap))
    assert outcome.plugin_scores[NAME] == want and outcome.totals == [2 * w for w in want]


def test_preferred_terms_of_the_incoming_pod_and_ignore_flag() -> None:
    """Preferred affinity adds its weight in the matching pod's domain, preferred anti-affinity
    subtracts; existing pods' preferred terms count too; ``ignorePreferredTermsOfExistingPods``
    skips a pod without preferred terms of its own."""
    nodes = [mk_node("n1", {"zone": "z1"}), mk_node("n2", {"zone": "z2"}), mk_node("n3", {"zone": "z3"})]
    pods = [
        mk_pod(node="n1", labels={"app": "web"}),
        mk_pod(node="n2", labels={"app": "db"}),
        mk_pod(node="n3", pref_aff=[weighted(7, t_exists("role", "zone"))]),
    ]
    snap = snapshot(nodes, pods)
    incoming = pod_info(
        mk_pod(
            labels={"role": "x"},
            pref_aff=[weighted(5, t_in("app", "zone", "web"))],
            pref_anti=[weighted(3, t_in("app", "zone", "db"))],
        )
    )
    p, state = plugin(), CycleState(snap)
    assert p.pre_score(state, incoming, snap.nodes).is_success()
    raw = [p.score(state, incoming, n)[0] for n in snap.nodes]
    assert raw == [5, -3, 7]
    scores = [NodeScore(n.name, r) for n, r in zip(snap.nodes, raw, strict=True)]
    p.normalize_score(state, incoming, scores)
    assert [s.score for s in scores] == [80, 0, 100]
    plain = pod_info(mk_pod(labels={"role": "x"}))
    assert plugin().pre_score(CycleState(snap), plain, snap.nodes).is_success()
    ignoring = plugin(ignorePreferredTermsOfExistingPods=True)
    assert ignoring.pre_score(CycleState(snap), plain, snap.nodes).code is Code.SKIP
    assert ignoring.pre_score(CycleState(snap), incoming, snap.nodes).is_success()


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        (None, None),
        ({}, None),
        ({"matchExpressions": [{"key": "app", "operator": "Like"}]}, '"Like" is not a valid label selector operator'),
        (
            {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": []}]},
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "app", "operator": "DoesNotExist", "values": ["a", "b"]}]},
            'values: Invalid value: []string{"a", "b"}: values set must be empty for exists and does not exist',
        ),
    ],
)
def test_selector_error(selector: dict[str, Any] | None, message: str | None) -> None:
    """``metav1.LabelSelectorAsSelector``'s error (values passed as ``append([]string(nil), ...)``,
    so no values print as ``[]string(nil)``)."""
    given = None if selector is None else msgspec.convert(selector, objects.LabelSelector)
    assert selector_error(given) == message


def test_parse_errors_of_several_term_lists_are_aggregated() -> None:
    """``NewPodInfo``: one ``<list>: <error>`` per term list with an invalid selector, aggregated."""
    bad = t_in("service", "region", "{{.bad-value.}}")
    incoming = pod_info(mk_pod(aff=[bad], anti=[bad]))
    status = plugin().pre_filter(CycleState(snapshot([], [])), incoming, [])[1]
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    detail = BAD_VALUE.removeprefix("parsing pod: requiredAffinityTerms: ")
    assert status.message == f"parsing pod: [requiredAffinityTerms: {detail}, requiredAntiAffinityTerms: {detail}]"

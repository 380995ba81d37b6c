"""NodeAffinity: upstream's tables of pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go
(kubernetes/kubernetes: TestNodeAffinity, the PreFilter/Filter table, and TestNodeAffinityPriority,
the PreScore/Score table), ``addedAffinity`` validation (ValidateNodeAffinityArgs), a generated
check of ``filter`` against :mod:`app.framework.labels` on valid selectors, and the plugin run
through the framework."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest
from pydantic import ValidationError

from app.extender.verbs import run_filter
from app.framework import CycleState, NodeInfo, NodeScore, PodInfo, objects
from app.framework.labels import node_selector_matches
from app.framework.status import Code
from app.framework.validation import aggregate
from app.plugins import nodeaffinity
from app.plugins.nodeaffinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NAME,
    NodeAffinity,
    NodeAffinityArgs,
)
from tests.unit.helpers import enabled, framework, prioritize

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
POD = (UU, ERR_REASON_POD)
ENFORCED = (UU, ERR_REASON_ENFORCED)
CONFLICT = (UU, ERR_REASON_CONFLICT)
SKIPPED = (Code.SKIP, None)


def req(key: str, op: str, values: list[str] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"key": key, "operator": op}
    if values is not None:
        doc["values"] = values
    return doc


def term(exprs: list[dict[str, Any]] | None = None, fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if exprs is not None:
        doc["matchExpressions"] = exprs
    if fields is not None:
        doc["matchFields"] = fields
    return doc


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def name_in(name: str) -> dict[str, Any]:
    return req("metadata.name", "In", [name])


def make_pod(spec: dict[str, Any] | None = None) -> PodInfo:
    return PodInfo(msgspec.convert({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec or {}}, objects.Pod))


def make_node(name: str, labels: dict[str, str] | None = None) -> NodeInfo:
    return NodeInfo(name, msgspec.convert({"metadata": {"name": name, "labels": labels or {}}}, objects.Node))


def plugin_with(args: dict[str, Any] | None) -> NodeAffinity:
    return NodeAffinity(NodeAffinityArgs.model_validate(args or {}), None)


# TestNodeAffinity: (name, pod spec, node labels, node name, Filter status, PreFilter status,
# PreFilterResult node names, plugin args, runPreFilter)
Status_ = tuple[Code, str | None] | None
FILTER_CASES: list[
    tuple[
        str, dict[str, Any], dict[str, str] | None, str, Status_, Status_, set[str] | None, dict[str, Any] | None, bool
    ]
] = [
    ("missing labels", {"nodeSelector": {"foo": "bar"}}, None, "", POD, None, None, None, True),
    ("same labels", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, "", None, None, None, None, True),
    (
        "node labels are superset",
        {"nodeSelector": {"foo": "bar"}},
        {"foo": "bar", "baz": "blah"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "node labels are subset",
        {"nodeSelector": {"foo": "bar", "baz": "blah"}},
        {"foo": "bar"},
        "",
        POD,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using In operator that matches the existing node",
        {"affinity": required(term([req("foo", "In", ["bar", "value2"])]))},
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using Gt operator that matches the existing node",
        {"affinity": required(term([req("kernel-version", "Gt", ["0204"])]))},
        {"kernel-version": "0206"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        {"affinity": required(term([req("mem-type", "NotIn", ["DDR", "DDR2"])]))},
        {"mem-type": "DDR3"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using Exists operator that matches the existing node",
        {"affinity": required(term([req("GPU", "Exists")]))},
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        {"affinity": required(term([req("foo", "In", ["value1", "value2"])]))},
        {"foo": "bar"},
        "",
        POD,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
        {"affinity": required(term([]))},
        {"foo": "bar"},
        "",
        POD,
        None,
        None,
        None,
        True,
    ),
    ("Pod with no Affinity will schedule onto a node", {}, {"foo": "bar"}, "", None, SKIPPED, None, None, True),
    (
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        {"affinity": {"nodeAffinity": {}}},
        {"foo": "bar"},
        "",
        None,
        SKIPPED,
        None,
        None,
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        {"affinity": required(term([req("GPU", "Exists"), req("GPU", "NotIn", ["AMD", "INTER"])]))},
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        {"affinity": required(term([req("GPU", "Exists"), req("GPU", "In", ["AMD", "INTER"])]))},
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        POD,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels "
        "and will schedule onto the node",
        {
            "affinity": required(
                term([req("foo", "In", ["bar", "value2"])]), term([req("diffkey", "In", ["wrong", "value2"])])
            )
        },
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) "
        "both are satisfied, will schedule onto the node",
        {"nodeSelector": {"foo": "bar"}, "affinity": required(term([req("foo", "Exists")]))},
        {"foo": "bar"},
        "",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector"
        "(the old thing that we are deprecating) "
        "is not satisfied, won't schedule onto the node",
        {"nodeSelector": {"foo": "bar"}, "affinity": required(term([req("foo", "Exists")]))},
        {"foo": "barrrrrr"},
        "",
        POD,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        {"affinity": required(term([req("foo", "NotIn", ["invalid value: ___@#$%^"])]))},
        {"foo": "bar"},
        "",
        POD,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchFields using In operator that matches the existing node",
        {"affinity": required(term(fields=[name_in("node1")]))},
        None,
        "node1",
        None,
        None,
        {"node1"},
        None,
        True,
    ),
    (
        "Pod with matchFields using In operator that does not match the existing node",
        {"affinity": required(term(fields=[name_in("node1")]))},
        None,
        "node2",
        POD,
        None,
        {"node1"},
        None,
        True,
    ),
    (
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        {"affinity": required(term(fields=[name_in("node1"), name_in("node2")]), term([req("foo", "In", ["bar"])]))},
        {"foo": "bar"},
        "node2",
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        {"affinity": required(term([req("foo", "In", ["bar"])], [name_in("node1")]))},
        {"foo": "bar"},
        "node2",
        POD,
        None,
        {"node1"},
        None,
        True,
    ),
    (
        "Pod with one term: both matchFields and matchExpressions match",
        {"affinity": required(term([req("foo", "In", ["bar"])], [name_in("node1")]))},
        {"foo": "bar"},
        "node1",
        None,
        None,
        {"node1"},
        None,
        True,
    ),
    (
        "Pod with two terms: both matchFields and matchExpressions do not match",
        {"affinity": required(term(fields=[name_in("node1")]), term([req("foo", "In", ["not-match-to-bar"])]))},
        {"foo": "bar"},
        "node2",
        POD,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with two terms of node.Name affinity",
        {"affinity": required(term(fields=[name_in("node1")]), term(fields=[name_in("node2")]))},
        None,
        "node2",
        None,
        None,
        {"node1", "node2"},
        None,
        True,
    ),
    (
        "Pod with two conflicting mach field requirements",
        {"affinity": required(term(fields=[name_in("node1"), name_in("node2")]))},
        {"foo": "bar"},
        "node2",
        POD,
        CONFLICT,
        None,  # upstream: a nil PreFilterResult with the Conflict status
        None,
        True,
    ),
    (
        "Matches added affinity and Pod's node affinity",
        {"affinity": required(term([req("zone", "In", ["foo"])]))},
        {"zone": "foo"},
        "node2",
        None,
        None,
        None,
        {"addedAffinity": required(term(fields=[name_in("node2")]))["nodeAffinity"]},
        True,
    ),
    (
        "Matches added affinity but not Pod's node affinity",
        {"affinity": required(term([req("zone", "In", ["bar"])]))},
        {"zone": "foo"},
        "node2",
        POD,
        None,
        None,
        {"addedAffinity": required(term(fields=[name_in("node2")]))["nodeAffinity"]},
        True,
    ),
    (
        "Doesn't match added affinity",
        {},
        {"zone": "foo"},
        "node2",
        ENFORCED,
        None,
        None,
        {"addedAffinity": required(term([req("zone", "In", ["bar"])]))["nodeAffinity"]},
        True,
    ),
    (
        "Matches node selector correctly even if PreFilter is not called",
        {"nodeSelector": {"foo": "bar"}},
        {"foo": "bar", "baz": "blah"},
        "",
        None,
        None,
        None,
        None,
        False,
    ),
    (
        "Matches node affinity correctly even if PreFilter is not called",
        {"affinity": required(term([req("GPU", "Exists"), req("GPU", "NotIn", ["AMD", "INTER"])]))},
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        None,
        None,
        None,
        None,
        False,
    ),
]


def _check(status: Any, want: Status_) -> None:
    if want is None:
        assert status.code is Code.SUCCESS and status.reasons == ()
    else:
        assert status.code is want[0]
        assert status.reasons == ((want[1],) if want[1] else ())


@pytest.mark.parametrize(
    ("name", "spec", "labels", "node_name", "want", "want_pre", "want_names", "args", "run_pre_filter"),
    FILTER_CASES,
    ids=[c[0][:70] for c in FILTER_CASES],
)
def test_filter_upstream_table(
    name: str,
    spec: dict[str, Any],
    labels: dict[str, str] | None,
    node_name: str,
    want: Status_,
    want_pre: Status_,
    want_names: set[str] | None,
    args: dict[str, Any] | None,
    run_pre_filter: bool,
) -> None:
    plugin = plugin_with(args)
    pod, node = make_pod(spec), make_node(node_name, labels)
    # upstream's Filter on its own (no PreFilterResult applied): the fallback without PreFilter
    _check(plugin.filter(CycleState(), pod, node), want)
    if not run_pre_filter:
        return
    state = CycleState()
    result, pre = plugin.pre_filter(state, pod, [node])
    _check(pre, want_pre)
    assert (result.node_names if result is not None else None) == want_names
    # upstream runs Filter after PreFilter whatever its result (the framework applies it)
    _check(plugin.filter(state, pod, node), want)


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
PREFERRED1 = [{"weight": 2, "preference": term([req("foo", "In", ["bar"])])}]
AFFINITY1 = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": PREFERRED1}}
AFFINITY2 = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 2, "preference": term([req("foo", "In", ["bar"])])},
            {"weight": 4, "preference": term([req("key", "In", ["value"])])},
            {
                "weight": 5,
                "preference": term([req("foo", "In", ["bar"]), req("key", "In", ["value"]), req("az", "In", ["az1"])]),
            },
        ]
    }
}
BROKEN_KEY_ERROR = (
    '[0].matchExpressions[0].key: Invalid value: "invalid key": name part must consist of alphanumeric characters, '
    "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
    "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)

# TestNodeAffinityPriority: (name, pod spec, nodes, expected scores, args, runPreScore, PreScore status)
SCORE_CASES: list[
    tuple[str, dict[str, Any], list[tuple[str, dict[str, str]]], list[int], dict[str, Any] | None, bool, Status_]
] = [
    (
        "all nodes are same priority as NodeAffinity is nil",
        {},
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        [0, 0, 0],
        None,
        False,
        None,
    ),
    ("Skip is returned in PreScore when NodeAffinity is nil", {}, [("node1", LABEL1)], [], None, True, SKIPPED),
    (
        "PreScore returns error when an incoming Pod has a broken affinity",
        {
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 2, "preference": term([req("invalid key", "In", ["bar"])])}
                    ]
                }
            }
        },
        [("node1", LABEL1)],
        [],
        None,
        True,
        (Code.ERROR, BROKEN_KEY_ERROR),
    ),
    (
        "no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority is zero",
        {"affinity": AFFINITY1},
        [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)],
        [0, 0, 0],
        None,
        True,
        None,
    ),
    (
        "only node1 matches the preferred scheduling requirements of pod",
        {"affinity": AFFINITY1},
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        [100, 0, 0],
        None,
        True,
        None,
    ),
    (
        "all nodes matches the preferred scheduling requirements of pod but with different priorities ",
        {"affinity": AFFINITY2},
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        [18, 100, 36],
        None,
        True,
        None,
    ),
    (
        "added affinity",
        {},
        [("node1", LABEL1), ("node2", LABEL2)],
        [100, 0],
        {"addedAffinity": AFFINITY1["nodeAffinity"]},
        True,
        None,
    ),
    (
        "added affinity and pod has default affinity",
        {"affinity": AFFINITY1},
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
        [40, 60, 100],
        {
            "addedAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 3, "preference": term([req("key", "In", ["value"])])}
                ]
            }
        },
        True,
        None,
    ),
    (
        "calculate the priorities correctly even if PreScore is not called",
        {"affinity": AFFINITY2},
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        [18, 100, 36],
        None,
        True,
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "spec", "nodes", "expected", "args", "run_pre_score", "want_pre"),
    SCORE_CASES,
    ids=[c[0][:70] for c in SCORE_CASES],
)
def test_score_upstream_table(
    name: str,
    spec: dict[str, Any],
    nodes: list[tuple[str, dict[str, str]]],
    expected: list[int],
    args: dict[str, Any] | None,
    run_pre_score: bool,
    want_pre: Status_,
) -> None:
    plugin = plugin_with(args)
    pod = make_pod(spec)
    infos = [make_node(n, labels) for n, labels in nodes]
    state = CycleState()
    if run_pre_score:
        status = plugin.pre_score(state, pod, infos)
        _check(status, want_pre)
        if not status.is_success():
            return
    scores = []
    for n in infos:
        score, status = plugin.score(state, pod, n)
        assert status.is_success()
        scores.append(NodeScore(n.name, score))
    assert plugin.normalize_score(state, pod, scores).is_success()
    assert [s.score for s in scores] == expected


# -- args -------------------------------------------------------------------------------------------


def test_args_default_and_valid() -> None:
    assert NodeAffinityArgs().added_affinity is None
    args = NodeAffinityArgs.model_validate({"addedAffinity": AFFINITY2["nodeAffinity"]})
    assert NodeAffinity(args, None).added_preferred is not None
    # an empty term is no error (it matches nothing), nor is an invalid term of weight 0
    NodeAffinityArgs.model_validate(
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 0, "preference": term([req("bad key", "In", ["x"])])}
                ],
            }
        }
    )


@pytest.mark.parametrize(
    ("added", "message"),
    [
        (
            required(term([req("foo", "Bogus", ["x"])]))["nodeAffinity"],
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"
            '.operator: Unsupported value: "Bogus": supported values: "In", "NotIn", "Exists", "DoesNotExist", '
            '"Gt", "Lt"',
        ),
        (
            required(term([req("foo", "In", [])]))["nodeAffinity"],
            "nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: []string{}: for 'in', 'notin' "
            "operators, values set can't be empty",
        ),
        (
            required(term(fields=[req("metadata.name", "In", ["a", "b"])]))["nodeAffinity"],
            "nodeSelectorTerms[0].matchFields[0].values: Invalid value",
        ),
        (
            required(term([req("n", "Gt", ["abc"])]))["nodeAffinity"],
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": term([req("a/b/c", "Exists")])}
                ]
            },
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchExpressions[0].key",
        ),
        ({"requiredDuringSchedulingIgnoredDuringExecution": "nope"}, "addedAffinity"),
        (
            {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpression": []}]}},
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]: unknown field(s) "
            "matchExpression",
        ),
        (
            {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": "1", "preference": {}}]},
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: expected int",
        ),
    ],
)
def test_args_invalid(added: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        NodeAffinityArgs.model_validate({"addedAffinity": added})
    assert message.replace("[]string{}", "[]string(nil)") in str(info.value) or message in str(info.value)


def test_aggregate_is_new_aggregate_error() -> None:
    """``utilerrors.NewAggregate(errs).Error()``: one message as is, several bracketed, a repeated
    message once (no brackets when one distinct message is left)."""
    assert aggregate([]) == ""
    assert aggregate(["a"]) == "a"
    assert aggregate(["a", "b"]) == "[a, b]"
    assert aggregate(["a", "a"]) == "a"
    assert aggregate(["a", "b", "a", "c"]) == "[a, b, c]"


def test_args_unknown_key_refused() -> None:
    with pytest.raises(ValidationError):
        NodeAffinityArgs.model_validate({"addedAffinities": {}})


# -- semantics where app.framework.labels is more lenient than upstream --------------------------


@pytest.mark.parametrize(
    ("terms", "labels", "expected"),
    [
        ([term([req("foo", "NotIn", ["bad value!"])])], {"foo": "bar"}, False),  # invalid value: no match
        ([term([req("bad key", "DoesNotExist")])], {}, False),  # invalid key: no match
        ([term([req("n", "Gt", ["99999999999999999999"])])], {"n": "1"}, False),  # beyond int64
        ([term([req("n", "Lt", ["5"])])], {"n": "99999999999999999999"}, False),  # label beyond int64
        ([term([req("n", "Gt", ["-1"])])], {"n": "0"}, False),  # "-1" is no valid label value
        ([term(fields=[req("spec.other", "NotIn", ["x"])])], {}, True),  # fields.Set has only metadata.name
        ([term(fields=[req("spec.other", "In", [""])])], {}, True),
        ([term(fields=[req("spec.other", "In", ["x"])])], {}, False),
        ([term(fields=[req("metadata.name", "NotIn", ["n1"])])], {}, False),
    ],
)
def test_required_matching_edge_cases(terms: list[dict[str, Any]], labels: dict[str, str], expected: bool) -> None:
    pod = make_pod({"affinity": required(*terms)})
    assert NodeAffinity().filter(CycleState(), pod, make_node("n1", labels)).is_success() is expected


def test_match_fields_ignored_for_a_node_without_a_name() -> None:
    pod = make_pod({"affinity": required(term(fields=[name_in("node1")]))})
    assert NodeAffinity().filter(CycleState(), pod, make_node("", {})).is_success()


def test_node_without_object() -> None:
    pod = make_pod({"nodeSelector": {"a": "b"}})
    assert NodeAffinity().filter(CycleState(), pod, NodeInfo("n")).code is Code.ERROR


# -- generated --------------------------------------------------------------------------------------

KEYS, VALUES = ["a", "b", "c"], ["x", "y", "1", "7"]
NAMES = ["n0", "n1", "n2", "n3"]


def random_requirement(rng: random.Random) -> dict[str, Any]:
    op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
    if op in ("In", "NotIn"):
        return req(rng.choice(KEYS), op, rng.sample(VALUES, rng.randint(1, 2)))
    if op in ("Gt", "Lt"):
        return req(rng.choice(KEYS), op, [str(rng.randint(0, 9))])
    return req(rng.choice(KEYS), op)


def random_term(rng: random.Random) -> dict[str, Any]:
    exprs = [random_requirement(rng) for _ in range(rng.randint(0, 2))]
    fields = [req("metadata.name", rng.choice(["In", "NotIn"]), [rng.choice(NAMES)]) for _ in range(rng.randint(0, 1))]
    return term(exprs or None, fields or None)


def test_filter_equals_the_labels_module_generated() -> None:
    rng = random.Random(4130)
    for _ in range(400):
        spec: dict[str, Any] = {}
        if rng.random() < 0.4:
            spec["nodeSelector"] = {rng.choice(KEYS): rng.choice(VALUES)}
        if rng.random() < 0.8:
            spec["affinity"] = required(*[random_term(rng) for _ in range(rng.randint(0, 3))])
        pod = make_pod(spec)
        nodes = [make_node(name, {k: rng.choice(VALUES) for k in KEYS if rng.random() < 0.6}) for name in NAMES]
        plugin = NodeAffinity()
        state = CycleState()
        result, pre = plugin.pre_filter(state, pod, nodes)
        if pre.code is Code.SKIP:
            assert not spec
            continue
        if pre.is_rejected():
            assert pre.reasons == (ERR_REASON_CONFLICT,)
            assert not any(plugin.filter(CycleState(), pod, n).is_success() for n in nodes)
            continue
        affinity = pod.affinity
        selector = (
            affinity.node_affinity.required_during_scheduling_ignored_during_execution
            if affinity and affinity.node_affinity
            else None
        )
        for node in nodes:
            status = plugin.filter(state, pod, node)
            assert status == plugin.filter(CycleState(), pod, node)  # the fallback without PreFilter
            expected = all(node.labels.get(k) == v for k, v in pod.node_selector.items()) and node_selector_matches(
                selector, node.name, node.labels
            )
            assert status.is_success() == expected, (spec, node.labels, node.name)
            if result is not None and result.node_names is not None and node.name not in result.node_names:
                assert not expected  # a node the PreFilterResult leaves out never passes Filter


# -- through the framework ------------------------------------------------------------------------


def test_run_through_framework() -> None:
    args = NodeAffinityArgs.model_validate(
        {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": PREFERRED1}}
    )
    plugin = nodeaffinity.PLUGIN.factory(args, None)  # type: ignore[arg-type]
    fw = framework(filter=[plugin], score=[enabled(plugin, 2)])
    nodes = [make_node("node1", LABEL1), make_node("node2", LABEL2), make_node("node3", LABEL5)]
    pinned = make_pod({"affinity": required(term(fields=[name_in("node1")]), term(fields=[name_in("node3")]))})
    state = CycleState()
    result, status, _narrowed = fw.run_pre_filter_plugins(state, pinned, nodes)
    assert status.is_success() and result.node_names == {"node1", "node3"}
    # the extender's filter answers for the node the PreFilterResult leaves out (v1.36.3's text)
    outcome = run_filter(fw, pinned, nodes, CycleState())
    assert [s.code for s in outcome.statuses] == [Code.SUCCESS, UU, Code.SUCCESS]
    assert outcome.statuses[1].reasons == ("node(s) didn't satisfy plugin(s) [NodeAffinity]",)
    conflict = make_pod({"affinity": required(term(fields=[name_in("node1"), name_in("node2")]))})
    outcome = run_filter(fw, conflict, nodes, CycleState())
    assert all(s.reasons == (ERR_REASON_CONFLICT,) and s.code is UU for s in outcome.statuses)
    assert outcome.pre_filter is not None and outcome.pre_filter.plugin == NAME
    selector = make_pod({"nodeSelector": {"key": "value"}})
    outcome = run_filter(fw, selector, nodes, CycleState())
    assert [s.reasons for s in outcome.statuses] == [(ERR_REASON_POD,), (), ()]
    # Score: the added preferred term (foo=bar, weight 2) plus the pod's AFFINITY2
    scored = prioritize(fw, make_pod({"affinity": AFFINITY2}), nodes)
    # raw: node1 2+2, node2 4, node3 2+2+4+5 = 13 -> 400//13, 400//13, 100; weight 2
    assert scored.plugin_scores[NAME] == [30, 30, 100]
    assert scored.totals == [60, 60, 200]
    assert scored.skipped == {}
    # a pod with no preferred terms and no added ones: Skip
    bare = prioritize(framework(score=[NodeAffinity()]), make_pod(), nodes)
    assert NAME in bare.skipped and bare.totals == [0, 0, 0]

"""``FitError.Error()`` against kube-scheduler v1.36.3's TestFitError_Error
(pkg/scheduler/framework/types_test.go), as data, and the counts of the nodes without a status
(``NodeToStatus.AbsentNodesStatus``)."""

from __future__ import annotations

import pytest

from app.framework import Status
from app.framework.status import Diagnosis, FitError, absent_nodes_status, fit_error_message

PRE = "Node(s) failed PreFilter plugin FalsePreFilter"
POST = "Error running PostFilter plugin FailedPostFilter"
F1, F2 = "Node(s) failed Filter plugin FalseFilter-1", "Node(s) failed Filter plugin FalseFilter-2"

# name, numAllNodes, PreFilterMsg, each node's reason, PostFilterMsg, wantReasonMsg
FIT_ERROR = [
    ("nodes failed Prefilter plugin", 3, PRE, [PRE] * 3, "", f"0/3 nodes are available: {PRE}."),
    (
        "nodes failed Prefilter plugin and the preemption also failed",
        3,
        PRE,
        [PRE] * 3,
        POST,
        f"0/3 nodes are available: {PRE}. {POST}",
    ),
    (
        "nodes failed one Filter plugin with an empty PostFilterMsg",
        3,
        "",
        [F1] * 3,
        "",
        f"0/3 nodes are available: 3 {F1}.",
    ),
    (
        "nodes failed one Filter plugin with a non-empty PostFilterMsg",
        3,
        "",
        [F1] * 3,
        POST,
        f"0/3 nodes are available: 3 {F1}. {POST}",
    ),
    (
        "nodes failed two Filter plugins with an empty PostFilterMsg",
        3,
        "",
        [F1, F1, F2],
        "",
        f"0/3 nodes are available: 1 {F2}, 2 {F1}.",
    ),
    (
        "nodes failed two Filter plugins with a non-empty PostFilterMsg",
        3,
        "",
        [F1, F1, F2],
        POST,
        f"0/3 nodes are available: 1 {F2}, 2 {F1}. {POST}",
    ),
    (
        "failed to Permit on node",
        1,
        "",
        ["Node failed Permit plugin Permit-1"],
        "",
        "0/1 nodes are available: 1 Node failed Permit plugin Permit-1.",
    ),
    (
        "failed to Reserve on node",
        1,
        "",
        ["Node failed Reserve plugin Reserve-1"],
        "",
        "0/1 nodes are available: 1 Node failed Reserve plugin Reserve-1.",
    ),
]


@pytest.mark.parametrize(("name", "total", "pre", "reasons", "post", "want"), FIT_ERROR, ids=[r[0] for r in FIT_ERROR])
def test_fit_error_upstream_table(name: str, total: int, pre: str, reasons: list[str], post: str, want: str) -> None:
    statuses = {f"node{i + 1}": Status.unschedulable(r) for i, r in enumerate(reasons)}
    fit = FitError(total, Diagnosis(statuses, pre_filter_msg=pre, post_filter_msg=post))
    assert fit.error() == want


def test_the_nodes_without_a_status_count_with_the_absent_status() -> None:
    """``Error()`` adds, for ``NumAllNodes - NodeToStatus.Len()`` nodes, the reasons of
    ``AbsentNodesStatus``: what ``findNodesThatFitPod`` gives the nodes a PreFilterResult left out,
    and preemption the nodes its dry run did not try."""
    absent = absent_nodes_status(["NodeAffinity"])
    assert absent.reasons == ("node(s) didn't satisfy plugin(s) [NodeAffinity]",)
    assert absent_nodes_status(["PodTopologySpread", "NodeAffinity"]).reasons == (
        "node(s) didn't satisfy plugin(s) [NodeAffinity PodTopologySpread]",
    )
    statuses = {"n1": Status.unschedulable("node(s) didn't have free ports for the requested pod ports")}
    fit = FitError(10, Diagnosis(dict(statuses), absent_nodes_status=absent))
    assert fit.error() == (
        "0/10 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
        "9 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
    # without an absent status (or with every node's status) only the statuses count
    assert FitError(10, Diagnosis(dict(statuses))).error() == (
        "0/10 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
    )
    assert fit_error_message(1, statuses.values(), absent=absent) == FitError(1, Diagnosis(dict(statuses))).error()

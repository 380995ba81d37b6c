"""NodeDeclaredFeatures (pkg/scheduler/framework/plugins/nodedeclaredfeatures, v1.36.3): the rows of
its ``TestPreFilter`` and ``TestFilter``, as data. Upstream's rows use mock features (FeatureA...);
here they are the two of k8s.io/component-helpers/nodedeclaredfeatures a pod can need when it is
scheduled (``RestartAllContainersOnContainerExits``, ``UserNamespacesHostNetworkSupport``) and one a
node declares that no pod needs at scheduling (``ExtendWebSocketsToKubelet``)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from app.framework import SUCCESS, Code, CycleState, NodeInfo, PodInfo, features, objects
from app.framework.events import NODE, POD, QUEUE, ActionType, ClusterEvent
from app.framework.events import SKIP as QUEUE_SKIP
from app.framework.types import RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK
from app.plugins.nodedeclaredfeatures import (
    ERR_REASON_UNSATISFIED_REQUIREMENTS,
    NodeDeclaredFeatures,
    is_schedulable_after_node_change,
    is_schedulable_after_pod_update,
)

A, B, C = RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK, "ExtendWebSocketsToKubelet"
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def pod(*needs: str) -> PodInfo:
    """A pod needing ``needs``: a RestartAllContainers rule for A, hostNetwork without host users
    for B."""
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if A in needs:
        spec["containers"][0]["restartPolicyRules"] = [
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
        ]
    if B in needs:
        spec["hostNetwork"], spec["hostUsers"] = True, False
    return PodInfo(msgspec.convert({"metadata": {"name": "test-pod"}, "spec": spec}, objects.Pod))


def node(*declared: str) -> NodeInfo:
    status: dict[str, Any] = {"declaredFeatures": list(declared)} if declared else {}
    return NodeInfo("node-1", msgspec.convert({"metadata": {"name": "node-1"}, "status": status}, objects.Node))


def plugin(enabled: bool) -> NodeDeclaredFeatures:
    try:
        features.set_current(features.FeatureGates({"NodeDeclaredFeatures": enabled}))
        return NodeDeclaredFeatures()
    finally:
        features.set_current(features.DEFAULT)


def test_what_a_pod_needs_is_inferred_from_its_spec() -> None:
    """``InferForPodScheduling`` of the features whose inference can be true at scheduling."""
    assert pod().declared_features == frozenset()
    assert pod(A).declared_features == {A}
    assert pod(A, B).declared_features == {A, B}
    init = {"initContainers": [{"name": "i", "restartPolicyRules": [{"action": "RestartAllContainers"}]}]}
    assert PodInfo(msgspec.convert({"spec": init}, objects.Pod)).declared_features == {A}
    host_users = {"hostNetwork": True, "hostUsers": True}  # host network in the host's user namespace
    assert PodInfo(msgspec.convert({"spec": host_users}, objects.Pod)).declared_features == frozenset()


# TestPreFilter: name, enabled, the pod's needs, expected code
PRE_FILTER = [
    ("plugin disabled", False, (A,), Code.SKIP),
    ("Pod with feature requirements", True, (A,), Code.SUCCESS),
    ("Pod with multiple feature requirements", True, (A, B), Code.SUCCESS),
    ("Pod with no requirements", True, (), Code.SKIP),
]


@pytest.mark.parametrize(("name", "enabled", "needs", "code"), PRE_FILTER, ids=[r[0] for r in PRE_FILTER])
def test_pre_filter(name: str, enabled: bool, needs: tuple[str, ...], code: Code) -> None:
    _, status = plugin(enabled).pre_filter(CycleState(), pod(*needs), [])
    assert status.code is code


@pytest.mark.skip(reason="no feature of v1.36.3's nodedeclaredfeatures registry has a MaxVersion")
def test_pre_filter_feature_not_required_beyond_its_max_version() -> None:
    """TestPreFilter's "Feature not required, version > MaxVersion"."""


# TestFilter: name, enabled, the node's declared features, the pod's needs, expected status
FILTER = [
    ("plugin disabled", False, (A, B), (), SUCCESS),
    ("Node matches requirements", True, (A, B), (A,), SUCCESS),
    ("Node does not match requirements", True, (B,), (A,), ERR_REASON_UNSATISFIED_REQUIREMENTS),
    ("Node with multiple features, pod requires subset", False, (A, B, C), (A,), SUCCESS),
    ("Node with multiple features, pod requires subset (enabled)", True, (A, B, C), (A, B), SUCCESS),
    ("Node has no declared features", True, (), (A,), ERR_REASON_UNSATISFIED_REQUIREMENTS),
    ("Node with some but not all required features", True, (A,), (A, B), ERR_REASON_UNSATISFIED_REQUIREMENTS),
]


@pytest.mark.parametrize(("name", "enabled", "declared", "needs", "want"), FILTER, ids=[r[0] for r in FILTER])
def test_filter(name: str, enabled: bool, declared: tuple[str, ...], needs: tuple[str, ...], want: Any) -> None:
    status = plugin(enabled).filter(CycleState(), pod(*needs), node(*declared))
    if want is SUCCESS:
        assert status is SUCCESS
    else:
        assert (status.code, status.reasons) == (UU, (want,))


def test_the_gate_takes_it_out_of_the_default_profile() -> None:
    """``applyFeatureGates`` (pkg/scheduler/apis/config/v1/default_plugins.go): appended last while
    the gate is on."""
    from app.framework.defaults import default_plugins

    assert default_plugins(features.DEFAULT)[-1] == ("NodeDeclaredFeatures", None)
    off = features.FeatureGates({"NodeDeclaredFeatures": False})
    assert "NodeDeclaredFeatures" not in dict(default_plugins(off))
    assert plugin(False).events_to_register() == () and plugin(True).events_to_register()


def _with_uid(info: PodInfo, uid: str) -> PodInfo:
    info.uid = uid
    return info


# TestEnqueueExtensionsNodeUpdate (nodedeclaredfeatures_test.go, v1.36.3)
@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("Node Add with feature", None, ("FeatureA",), QUEUE),
        ("Node Update (Features Added)", (), ("FeatureA",), QUEUE),
        ("Node Update (Features Unchanged)", ("FeatureA",), ("FeatureA",), QUEUE_SKIP),
    ],
)
def test_node_update_hint(name: str, old: tuple[str, ...] | None, new: tuple[str, ...], want: int) -> None:
    original = node(*old).node if old is not None else None
    assert is_schedulable_after_node_change(pod(), original, node(*new).node) == want


# TestEnqueueExtensionsPodUpdate (nodedeclaredfeatures_test.go, v1.36.3): the mock feature's
# inference stands for a real one here (A: a RestartAllContainers rule)
@pytest.mark.parametrize(
    ("name", "old", "new", "uid", "want"),
    [
        ("Pod Update adds requirement", (), (A,), "123", QUEUE),
        ("Pod Update removes requirement", (A,), (), "123", QUEUE),
        ("Pod Update with no change in requirements", (), (), "123", QUEUE_SKIP),
        ("Updated pod not the same as target pod", (A,), (), "456", QUEUE_SKIP),
    ],
)
def test_pod_update_hint(name: str, old: tuple[str, ...], new: tuple[str, ...], uid: str, want: int) -> None:
    target = _with_uid(pod(), "123")
    assert is_schedulable_after_pod_update(target, _with_uid(pod(*old), uid), _with_uid(pod(*new), uid)) == want


def test_the_hints_are_registered_with_upstreams_events() -> None:
    events = {e.event: e.hint for e in plugin(True).events_to_register()}
    assert events == {
        ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE): is_schedulable_after_node_change,
        ClusterEvent(POD, ActionType.UPDATE): is_schedulable_after_pod_update,
    }
    assert plugin(False).events_to_register() == ()

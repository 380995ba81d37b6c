"""NodeDeclaredFeatures: a pod that needs a node feature goes only to nodes that declare it.

Ports kube-scheduler v1.36.3's plugin (pkg/scheduler/framework/plugins/nodedeclaredfeatures/
nodedeclaredfeatures.go, beta and on by default: the ``NodeDeclaredFeatures`` gate) with the
inference of k8s.io/component-helpers/nodedeclaredfeatures (``InferForPodScheduling``): of its
registered features, two can be needed at scheduling, ``RestartAllContainersOnContainerExits``
(a container or init container whose ``restartPolicyRules`` have the action
``RestartAllContainers``) and ``UserNamespacesHostNetworkSupport`` (``hostNetwork`` with
``hostUsers: false``); none has a maximum version. A node declares its features in
``status.declaredFeatures`` (names the helper does not know are ignored, ``TryMap``).

- PreFilter: ``Skip`` for a pod that needs none (its Filter then does not run), and with the gate
  off.
- Filter: ``UnschedulableAndUnresolvable`` ``node(s) didn't match Pod's required features`` for
  a node that does not declare every one.

Reads only the pod and the node object (no cluster state); the pod's needs are computed when its
record is built (:attr:`~app.framework.types.PodInfo.declared_features`).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.framework import features, objects, signers
from app.framework.events import (
    NODE,
    POD,
    QUEUE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    objects_as,
)
from app.framework.events import (
    SKIP as QUEUE_SKIP,
)
from app.framework.handle import Handle
from app.framework.interfaces import SignFragment
from app.framework.registry import PluginEntry
from app.framework.status import SKIP, SUCCESS, Code, Status
from app.framework.types import NO_NODE, CycleState, NodeInfo, PodInfo, PreFilterResult

NAME = "NodeDeclaredFeatures"
#: ``errReasonUnsatisfiedRequirements``
ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"
_REJECTED = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_UNSATISFIED_REQUIREMENTS,), reason_code="NodeFeatureMissing"
)
_NO_NODE_STATUS = Status.error(NO_NODE)


def is_schedulable_after_node_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterNodeChange`` (v1.36.3 nodedeclaredfeatures.go): ``Skip`` when an
    updated node's ``status.declaredFeatures`` are the same list as before, else ``Queue``."""
    original, modified = objects_as(old, new, objects.Node)
    if modified is None:
        raise TypeError("no new node")
    if original is not None and _declared_list(original) == _declared_list(modified):
        return QUEUE_SKIP
    return QUEUE


def is_schedulable_after_pod_update(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPodUpdate`` (v1.36.3 nodedeclaredfeatures.go): ``Skip`` for another
    pod, and for the pod itself when the features it needs (``InferForPodScheduling``) did not
    change; ``Queue`` when they did."""
    original, modified = objects_as(old, new, PodInfo)
    if modified is None or original is None:
        raise TypeError("no old or new pod")
    if modified.uid != pod.uid:
        return QUEUE_SKIP
    return QUEUE_SKIP if original.declared_features == modified.declared_features else QUEUE


def _declared_list(node: objects.Node) -> list[str]:
    return list((node.status.declared_features if node.status is not None else None) or [])


_EVENTS = (
    ClusterEventWithHint(
        ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE), is_schedulable_after_node_change
    ),
    ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE), is_schedulable_after_pod_update),
)


def declared(node: NodeInfo) -> frozenset[str]:
    """The node's ``status.declaredFeatures`` (empty for a body node without them)."""
    status = node.node.status if node.node is not None else None
    names = getattr(status, "declared_features", None) if status is not None else None
    return frozenset(names) if names else frozenset()


class NodeDeclaredFeatures:
    """PreFilter + Filter (see the module doc). Takes no args; reads the ``NodeDeclaredFeatures``
    gate when built, as upstream's ``New``."""

    name = NAME

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (nodedeclaredfeatures.go, v1.36.3): the features the pod needs."""
        return [(signers.FEATURES, sorted(pod.declared_features))], SUCCESS

    def __init__(self, args: None = None, handle: Handle | None = None) -> None:
        self.enabled = features.current().enabled("NodeDeclaredFeatures")

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """``Skip`` unless the gate is on and the pod needs a declared feature."""
        if not self.enabled or not pod.declared_features:
            return None, SKIP
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``SUCCESS`` when the node declares every feature the pod needs."""
        if not self.enabled or not pod.declared_features:
            return SUCCESS
        if node.node is None:
            return _NO_NODE_STATUS
        return SUCCESS if pod.declared_features <= declared(node) else _REJECTED

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister`` (v1.36.3): Node Add|UpdateNodeDeclaredFeature judged by
        :func:`is_schedulable_after_node_change`, Pod Update by :func:`is_schedulable_after_pod_update`;
        none with the gate off."""
        return _EVENTS if self.enabled else ()


PLUGIN = PluginEntry(
    name=NAME,
    factory=NodeDeclaredFeatures,
    args=None,
    needs_cluster=False,
    summary="filter: kube-scheduler's NodeDeclaredFeatures (nodes declaring the features a pod needs)",
)

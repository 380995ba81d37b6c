"""Slim views of the Kubernetes objects plugins read, decoded with msgspec.

Only the fields a policy can use are declared; everything else in a 15 KB node object is skipped
by the decoder without being materialised. Attribute names are snake_case and map to the
Kubernetes camelCase JSON keys (``rename="camel"``). Every field accepts ``null`` (Go leaves the
zero value), so the views decode whatever kube-scheduler's ``json.Marshal`` produced, before and
after Kubernetes 1.34 (``creationTimestamp: null`` or absent).
"""

from __future__ import annotations

import msgspec

#: A ``v1.ResourceList`` value: Go's Quantity decodes from a JSON string or number.
QuantityValue = str | int | float


class OwnerReference(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``metav1.OwnerReference``: who owns a pod (a ReplicaSet, Job, ...)."""

    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    uid: str | None = None
    controller: bool | None = None


class ObjectMeta(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``metav1.ObjectMeta``: the identity, labels and annotations of an object."""

    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None


class Taint(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.Taint``."""

    key: str | None = None
    value: str | None = None
    effect: str | None = None


class NodeSpec(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """The parts of ``v1.NodeSpec`` policies read."""

    unschedulable: bool | None = None
    taints: list[Taint] | None = None


class NodeStatus(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """The parts of ``v1.NodeStatus`` policies read: quantities as strings."""

    allocatable: dict[str, QuantityValue] | None = None
    capacity: dict[str, QuantityValue] | None = None


class Node(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """A ``v1.Node`` reduced to metadata, spec.taints/unschedulable and status.allocatable/capacity."""

    metadata: ObjectMeta | None = None
    spec: NodeSpec | None = None
    status: NodeStatus | None = None


class ResourceRequirements(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.ResourceRequirements``."""

    requests: dict[str, QuantityValue] | None = None
    limits: dict[str, QuantityValue] | None = None


class Container(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """A container or init container: its name, resources and (init containers) restart policy."""

    name: str | None = None
    resources: ResourceRequirements | None = None
    restart_policy: str | None = None


class Toleration(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.Toleration``."""

    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class PodSpec(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """The parts of ``v1.PodSpec`` policies read."""

    node_name: str | None = None
    scheduler_name: str | None = None
    priority: int | None = None
    priority_class_name: str | None = None
    node_selector: dict[str, str] | None = None
    tolerations: list[Toleration] | None = None
    containers: list[Container] | None = None
    init_containers: list[Container] | None = None
    overhead: dict[str, QuantityValue] | None = None
    #: pod-level resources (``spec.resources``, PodLevelResources)
    resources: ResourceRequirements | None = None


class PodStatus(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.PodStatus`` phase and nominated node."""

    phase: str | None = None
    nominated_node_name: str | None = None


class Pod(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """A ``v1.Pod`` reduced to what scheduling policies read."""

    metadata: ObjectMeta | None = None
    spec: PodSpec | None = None
    status: PodStatus | None = None


EMPTY_META = ObjectMeta()
EMPTY_POD_SPEC = PodSpec()
EMPTY_NODE_SPEC = NodeSpec()
EMPTY_NODE_STATUS = NodeStatus()

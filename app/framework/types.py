"""The framework's per-request data: PodInfo, NodeInfo, CycleState, NodeScore, Victims.

Names and meanings follow kube-scheduler's ``pkg/scheduler/framework/types.go`` and
``cycle_state.go``. Views are read-only; derived values (requests, allocatable) are computed on
first use and cached, so a plugin that never reads them costs nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from app.framework import features, objects
from app.framework.errors import SchedulerExtenderError
from app.framework.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    PodResourcesOptions,
    QuantityError,
    is_pod_level_requests_set,
    non_missing_container_requests,
    pod_resource_requests,
    resource_list,
)

_EMPTY: Mapping[str, str] = {}
T = TypeVar("T")


class PodInfo:
    """A pod as plugins see it (kube-scheduler's ``framework.PodInfo``).

    Two sources, one shape:

    - a pod in a request body (the ``Pod`` being scheduled, or a victim pod), decoded into
      :class:`objects.Pod` and kept as :attr:`pod` so plugins can read any decoded field;
    - a slim record of the cluster-state cache (:func:`PodInfo.record`): identity, placement,
      priority, labels, the annotations policies asked for, owner references, the effective
      requests computed once when the watch event arrived, and what kube-scheduler's default
      plugins read (node selector, tolerations, affinity, topology spread constraints, host ports,
      images, scheduling gates), shared between pods that have the same. :attr:`pod` is ``None``.

    A cache-mode preemption victim the cache does not know has only :attr:`uid`.
    Requests are cpu in millicores, memory and storage in bytes, other resources as counts.
    """

    __slots__ = (
        "_container_level",
        "_non_zero",
        "_requests",
        "affinity",
        "annotations",
        "creation_timestamp",
        "declared_features",
        "deleting",
        "host_ports",
        "images",
        "labels",
        "name",
        "namespace",
        "node_name",
        "node_selector",
        "nominated_node_name",
        "owner_references",
        "phase",
        "pod",
        "preemption_policy",
        "priority",
        "priority_class_name",
        "resource_claim_statuses",
        "resource_claims",
        "scheduler_name",
        "scheduling_gates",
        "start_time",
        "terminating_by_preemption",
        "tolerations",
        "topology_spread_constraints",
        "uid",
        "volumes",
    )

    def __init__(self, pod: objects.Pod | None, uid_only: str = "") -> None:
        self.pod = pod
        meta = (pod.metadata if pod is not None else None) or objects.EMPTY_META
        spec = (pod.spec if pod is not None else None) or objects.EMPTY_POD_SPEC
        status = pod.status if pod is not None else None
        self.namespace: str = meta.namespace or ""
        self.name: str = meta.name or ""
        self.uid: str = meta.uid or uid_only
        self.labels: Mapping[str, str] = meta.labels or _EMPTY
        self.annotations: Mapping[str, str] = meta.annotations or _EMPTY
        self.owner_references: tuple[objects.OwnerReference, ...] = tuple(meta.owner_references or ())
        self.deleting: bool = bool(meta.deletion_timestamp)
        self.node_name: str = spec.node_name or ""
        self.scheduler_name: str = spec.scheduler_name or ""
        #: ``spec.priority`` (0 when unset, as ``corev1helpers.PodPriority``)
        self.priority: int = spec.priority or 0
        self.priority_class_name: str = spec.priority_class_name or ""
        self.phase: str = (status.phase if status is not None else None) or ""
        self.nominated_node_name: str = (status.nominated_node_name if status is not None else None) or ""
        #: ``spec.nodeSelector`` and ``spec.tolerations`` (what the standalone scheduler checks)
        self.node_selector: Mapping[str, str] = spec.node_selector or _EMPTY
        self.tolerations: tuple[objects.Toleration, ...] = tuple(spec.tolerations or ())
        #: ``spec.affinity`` (node affinity, pod affinity and anti-affinity), ``None`` when unset
        self.affinity: objects.Affinity | None = spec.affinity
        #: ``spec.topologySpreadConstraints``
        self.topology_spread_constraints: tuple[objects.TopologySpreadConstraint, ...] = tuple(
            spec.topology_spread_constraints or ()
        )
        #: the names of ``spec.schedulingGates`` (a gated pod is not attempted)
        self.scheduling_gates: tuple[str, ...] = tuple(g.name or "" for g in spec.scheduling_gates or ())
        #: ``spec.preemptionPolicy`` (``""`` is ``PreemptLowerPriority``)
        self.preemption_policy: str = spec.preemption_policy or ""
        #: the host ports the containers ask for, as ``(hostIP, protocol, hostPort)`` with
        #: ``0.0.0.0`` and ``TCP`` for unset (pkg/scheduler/util ``GetHostPorts`` of v1.36.3: the
        #: ports with a ``hostPort`` above 0 of the sidecars (init containers with
        #: ``restartPolicy: Always``, which run the pod's whole life), then of the containers)
        self.host_ports: tuple[tuple[str, str, int], ...] = _host_ports(spec)
        #: ``spec.volumes`` the volume plugins read (claims and in-tree disks,
        #: :meth:`objects.Volume.relevant`), in the pod's order; the others are not kept
        self.volumes: tuple[objects.Volume, ...] = tuple(v for v in spec.volumes or () if v.relevant())
        #: the containers' and init containers' images (ImageLocality)
        self.images: tuple[str, ...] = tuple(
            c.image for c in (*(spec.containers or ()), *(spec.init_containers or ())) if c.image
        )
        self.creation_timestamp: str = meta.creation_timestamp or ""
        #: ``status.startTime`` (RFC 3339), ``""`` before the kubelet started it
        self.start_time: str = (status.start_time if status is not None else None) or ""
        #: deleted because of a preemption (``podTerminatingByPreemption`` with
        #: PodDisruptionConditions): ``metadata.deletionTimestamp`` set and the first
        #: ``DisruptionTarget`` condition ``True`` with reason ``PreemptionByScheduler``; the only
        #: trace of ``status.conditions`` kept
        self.terminating_by_preemption: bool = self.deleting and _disrupted_by_preemption(status)
        #: the node features the pod needs (NodeDeclaredFeatures' ``InferForPodScheduling``)
        self.declared_features: frozenset[str] = _declared_features(spec)
        #: ``spec.resourceClaims`` and ``status.resourceClaimStatuses`` (DynamicResources)
        self.resource_claims: tuple[objects.PodResourceClaim, ...] = tuple(spec.resource_claims or ())
        self.resource_claim_statuses: tuple[objects.PodResourceClaimStatus, ...] = tuple(
            (status.resource_claim_statuses if status is not None else None) or ()
        )
        self._requests: dict[str, int] | None = None
        self._non_zero: tuple[int, int] | None = None
        self._container_level: tuple[int, int] | None = None

    @classmethod
    def record(
        cls,
        pod: objects.Pod,
        keep_annotations: frozenset[str] | None = None,
        interner: Interner | None = None,
        keep_images: bool = True,
    ) -> PodInfo:
        """A slim cluster-state record of ``pod``: the decoded object is dropped after its
        requests are computed, annotations are cut to ``keep_annotations`` (``None``: keep all),
        repeated strings (namespaces, node names, label keys and values) are interned, and equal
        tolerations, affinities and spread constraints are shared through ``interner`` (the
        cache's own; ``None``: nothing shared beyond the strings).

        Raises :class:`ObjectDecodeError` (a ``ValueError``) for a malformed quantity.
        """
        info = cls(pod)
        intern = sys.intern
        info.requests  # noqa: B018 - computed now, while the spec is at hand
        info.non_zero_requests  # noqa: B018
        info.container_level_requests  # noqa: B018
        info.pod = None
        info.namespace = intern(info.namespace)
        info.node_name = intern(info.node_name)
        info.scheduler_name = intern(info.scheduler_name)
        info.phase = intern(info.phase)
        if info.labels:
            info.labels = {intern(k): intern(v) for k, v in info.labels.items()}
        if info.owner_references:
            # siblings share their owner: intern its identity instead of keeping a copy per pod
            info.owner_references = tuple(
                objects.OwnerReference(
                    api_version=intern(o.api_version or ""),
                    kind=intern(o.kind or ""),
                    name=intern(o.name or ""),
                    uid=intern(o.uid or ""),
                    controller=o.controller,
                )
                for o in info.owner_references
            )
        if keep_annotations is not None:
            kept = {k: v for k, v in info.annotations.items() if k in keep_annotations}
            info.annotations = kept or _EMPTY
        if info.node_selector:
            info.node_selector = {intern(k): intern(v) for k, v in info.node_selector.items()}
        if interner is not None:
            if info.tolerations:  # most pods carry the same few: one shared tuple per distinct set
                info.tolerations = interner.tolerations(info.tolerations)
            if info.affinity is not None:  # a Deployment's pods share one affinity: keep one copy
                info.affinity = interner.value(info.affinity)
            if info.topology_spread_constraints:
                info.topology_spread_constraints = interner.value(info.topology_spread_constraints)
        if info.images:
            info.images = tuple(intern(i) for i in info.images) if keep_images else ()
        # not read of a cached pod (preemption orders victims by status.startTime): one string less
        info.creation_timestamp = ""
        return info

    @classmethod
    def placeholder(cls, namespace: str, name: str, uid: str, node_name: str = "") -> PodInfo:
        """A pod known only by identity (a bind for a pod the watch has not shown yet)."""
        info = cls(None, uid)
        info.namespace, info.name, info.node_name = namespace, name, node_name
        info._requests, info._non_zero, info._container_level = {}, (0, 0), (0, 0)
        return info

    @property
    def meta(self) -> objects.ObjectMeta:
        """The decoded pod's metadata (empty for a cluster record or a UID-only victim)."""
        return (self.pod.metadata if self.pod is not None else None) or objects.EMPTY_META

    @property
    def spec(self) -> objects.PodSpec:
        """The decoded pod's spec (empty for a cluster record or a UID-only victim)."""
        return (self.pod.spec if self.pod is not None else None) or objects.EMPTY_POD_SPEC

    @property
    def requests(self) -> Mapping[str, int]:
        """Effective requests: cpu in millicores, memory in bytes, others as integers.

        ``PodInfo.CalculateResource``'s requests (pkg/scheduler/framework/types.go, v1.36.3):
        :func:`~app.framework.resources.pod_resource_requests` with the status of an in-place
        resize (InPlacePodVerticalScaling, GA) and, as the feature gates say, pod-level resources
        (PodLevelResources) and their resize (InPlacePodLevelResourcesVerticalScaling). Raises
        :class:`ObjectDecodeError` (a ``ValueError``) naming the pod for a malformed quantity: in
        a request, the client's mistake.
        """
        if self._requests is None:
            try:
                self._requests = pod_resource_requests(self.spec, self._status(), _options())
            except QuantityError as exc:
                raise ObjectDecodeError(f"pod {self.key()}: {exc}") from None
        return self._requests

    @property
    def non_zero_requests(self) -> tuple[int, int]:
        """``(milli_cpu, memory_bytes)`` with kube-scheduler's scoring defaults (100m, 200 MiB) for a
        container that requests no cpu or memory: ``CalculateResource``'s ``Non0CPU``/``Non0Mem``
        (pkg/scheduler/framework/types.go, v1.36.3: ``getNonMissingContainerRequests``; with
        pod-level requests set, a default only for what neither the pod nor a container asks)."""
        if self._non_zero is None:
            try:
                requests = self.requests
                options = _options()
                level_set = not options.skip_pod_level and is_pod_level_requests_set(self.spec)
                non_missing = non_missing_container_requests(requests, level_set)
                both = requests
                if non_missing:
                    opts = PodResourcesOptions(
                        options.use_status_resources, options.in_place_pod_level, options.skip_pod_level, non_missing
                    )
                    both = pod_resource_requests(self.spec, self._status(), opts)
            except QuantityError as exc:
                raise ObjectDecodeError(f"pod {self.key()}: {exc}") from None
            self._non_zero = (both.get(CPU, 0), both.get(MEMORY, 0))
        return self._non_zero

    @property
    def container_level_requests(self) -> tuple[int, int]:
        """``(milli_cpu, memory_bytes)`` as NodeResourcesFit's scoring computes the pod's requests
        in v1.36.3 (``resourceAllocationScorer.calculatePodResourceRequest``, noderesources/
        resource_allocation.go, whose scorer NewFit builds without the plugin's pod-level and
        resize features): the containers' with the scoring defaults, pod-level resources not
        read, the spec only."""
        if self._container_level is None:
            if self._requests is not None and self._non_zero is not None and not is_pod_level_requests_set(self.spec):
                self._container_level = self._non_zero if not self._resized() else None
            if self._container_level is None:
                try:
                    opts = PodResourcesOptions(skip_pod_level=True, non_missing=_NON_MISSING)
                    both = pod_resource_requests(self.spec, None, opts)
                except QuantityError as exc:
                    raise ObjectDecodeError(f"pod {self.key()}: {exc}") from None
                self._container_level = (both.get(CPU, 0), both.get(MEMORY, 0))
        return self._container_level

    def _status(self) -> objects.PodStatus | None:
        return self.pod.status if self.pod is not None else None

    def _resized(self) -> bool:
        """Whether a container status carries resources (an in-place resize may count)."""
        status = self._status()
        if status is None:
            return False
        return any(
            cs.resources is not None
            for cs in (*(status.container_statuses or ()), *(status.init_container_statuses or ()))
        )

    def key(self) -> str:
        """``namespace/name``, for logs and tables."""
        return f"{self.namespace}/{self.name}"


_NON_MISSING = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}


class Interner:
    """One shared copy of equal immutable values among the pod records of one cache
    (:meth:`PodInfo.record`): most pods carry the same few tolerations, and a Deployment's pods one
    affinity and one set of spread constraints. Each table holds at most ``limit`` values and is
    emptied when full (records keep the copies they got)."""

    __slots__ = ("_tolerations", "_values", "limit")

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self._tolerations: dict[tuple[objects.Toleration, ...], tuple[objects.Toleration, ...]] = {}
        self._values: dict[bytes, Any] = {}

    def tolerations(self, tolerations: tuple[objects.Toleration, ...]) -> tuple[objects.Toleration, ...]:
        """The shared tuple equal to ``tolerations``."""
        shared = self._tolerations.get(tolerations)
        if shared is None:
            if len(self._tolerations) >= self.limit:
                self._tolerations.clear()
            shared = self._tolerations[tolerations] = tolerations
        return shared

    def value(self, value: T) -> T:
        """The shared copy of ``value`` (an affinity, spread constraints), equal by its JSON."""
        key = _ENCODE.encode(value)
        found = self._values.get(key)
        if found is None:
            if len(self._values) >= self.limit:
                self._values.clear()
            found = self._values[key] = value
        return found


_ENCODE = msgspec.json.Encoder()


def _disrupted_by_preemption(status: objects.PodStatus | None) -> bool:
    """The condition half of ``podTerminatingByPreemption``: the first ``DisruptionTarget``
    condition decides (``True`` with reason ``PreemptionByScheduler``)."""
    for condition in (status.conditions if status is not None else None) or ():
        if condition.type == "DisruptionTarget":
            return condition.status == "True" and condition.reason == "PreemptionByScheduler"
    return False


def _host_ports(spec: objects.PodSpec) -> tuple[tuple[str, str, int], ...]:
    sidecars = [c for c in spec.init_containers or () if c.restart_policy == "Always"]
    ports = [
        (p.host_ip or "0.0.0.0", p.protocol or "TCP", p.host_port)
        for c in (*sidecars, *(spec.containers or ()))
        for p in c.ports or ()
        if p.host_port is not None and p.host_port > 0
    ]
    return tuple(ports)


def _options() -> PodResourcesOptions:
    """``CalculateResource``'s options under the gates in effect: the status of an in-place resize
    (InPlacePodVerticalScaling is GA), pod-level resources and their resize as the gates say."""
    gates = features.current()
    return PodResourcesOptions(
        use_status_resources=True,
        in_place_pod_level=gates.enabled("InPlacePodLevelResourcesVerticalScaling"),
        skip_pod_level=not gates.enabled("PodLevelResources"),
    )


#: NodeDeclaredFeatures' features a pod may need (component-helpers/nodedeclaredfeatures/features
#: of v1.36.3 whose ``InferForScheduling`` can be true)
RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
_NO_FEATURES: frozenset[str] = frozenset()


def _declared_features(spec: objects.PodSpec) -> frozenset[str]:
    """``InferForPodScheduling``: ``RestartAllContainersOnContainerExits`` for a container or init
    container with a ``restartPolicyRules`` action ``RestartAllContainers``;
    ``UserNamespacesHostNetworkSupport`` for ``hostNetwork`` with ``hostUsers: false``."""
    needed = []
    for c in (*(spec.containers or ()), *(spec.init_containers or ())):
        if any(rule.action == "RestartAllContainers" for rule in c.restart_policy_rules or ()):
            needed.append(RESTART_ALL_CONTAINERS)
            break
    if spec.host_network and spec.host_users is False:
        needed.append(USER_NAMESPACES_HOST_NETWORK)
    return frozenset(needed) if needed else _NO_FEATURES


class ObjectDecodeError(SchedulerExtenderError, ValueError):
    """A Kubernetes object in the request could not be decoded, or one of its quantities does not
    parse (the client's mistake: HTTP 400). The codec raises it before any plugin runs; a plugin
    reading a malformed quantity of an object the codec did not check raises it too, and the
    runtime lets it through instead of treating it as the plugin's error.
    """


_NO_COUNTS: Mapping[str, int] = {}


@dataclass(frozen=True, slots=True)
class NodeUsage:
    """What the cluster-state cache accounts on one node: the bound pods plus the pods assumed
    onto it at bind (kube-scheduler's ``NodeInfo.Pods``/``Requested``/``NonZeroRequested``).

    ``requested``: the sum of the pods' effective requests (cpu millicores, memory bytes, others
    as counts). ``non_zero_requested``: ``(milli_cpu, memory_bytes)`` with the scoring defaults
    for pods that request nothing. ``pool_usage``: slots taken per registered resource pool.
    Immutable: the cache replaces the whole value when a pod comes or goes.
    """

    pods: tuple[PodInfo, ...] = ()
    requested: Mapping[str, int] = field(default_factory=dict)
    non_zero_requested: tuple[int, int] = (0, 0)
    pool_usage: Mapping[str, int] = field(default_factory=dict)

    @property
    def pod_count(self) -> int:
        """How many pods are bound or assumed on the node."""
        return len(self.pods)


EMPTY_USAGE = NodeUsage()
#: The reason a plugin needing a node's object gives for a node the cluster state does not know.
NO_NODE = "node object unavailable: the node is not in the extender's cluster state"


class NodeResources:
    """A node's native resources as Filter and Score read them, flattened once per
    :class:`NodeInfo` (in cache mode: once per node version, not once per request), so that
    per-request loops over thousands of nodes read attributes instead of walking maps.

    Allocatable (``status.allocatable``, kube-scheduler's ``NodeInfo.Allocatable``):
    ``milli_cpu`` (millicores), ``memory`` and ``ephemeral_storage`` (bytes),
    ``allowed_pod_number``. What the pods bound or assumed there request (``NodeInfo.Requested``):
    ``requested_milli_cpu``, ``requested_memory``, ``requested_ephemeral_storage``; with the
    scoring defaults for pods that request nothing (``NodeInfo.NonZeroRequested``):
    ``non_zero_milli_cpu``, ``non_zero_memory``; and ``pod_count``. A resource the node does not
    offer has allocatable 0.
    """

    __slots__ = (
        "allowed_pod_number",
        "ephemeral_storage",
        "memory",
        "milli_cpu",
        "non_zero_memory",
        "non_zero_milli_cpu",
        "pod_count",
        "requested_ephemeral_storage",
        "requested_memory",
        "requested_milli_cpu",
    )

    def __init__(self, allocatable: Mapping[str, int], usage: NodeUsage) -> None:
        get = allocatable.get
        self.milli_cpu = get(CPU, 0)
        self.memory = get(MEMORY, 0)
        self.ephemeral_storage = get(EPHEMERAL_STORAGE, 0)
        self.allowed_pod_number = get(PODS, 0)
        requested = usage.requested.get
        self.requested_milli_cpu = requested(CPU, 0)
        self.requested_memory = requested(MEMORY, 0)
        self.requested_ephemeral_storage = requested(EPHEMERAL_STORAGE, 0)
        self.non_zero_milli_cpu, self.non_zero_memory = usage.non_zero_requested
        self.pod_count = len(usage.pods)


UsageLookup = Callable[[str], "NodeUsage | None"]


class NodeInfo:
    """A node as plugins see it: its name and, when known, the decoded node object.

    Built from a name and, when known, the decoded :class:`objects.Node` (the request's codec
    decodes every node of a non-cache request before any plugin runs). In
    ``nodeCacheCapable: true`` requests the service resolves names through its cluster-state
    cache, whose NodeInfos carry the node and its :class:`NodeUsage`. Without cluster state only
    the name is known: plugins that need the object must check :attr:`node` and return an
    ``ERROR`` status when it is ``None`` (the runtime then applies the plugin's failure policy).
    A node decoded from a request body finds its usage in the cache by name, on first read
    (:meth:`use_usage_lookup`).
    """

    __slots__ = ("_allocatable", "_lookup", "_memo", "_resources", "_usage", "name", "node")

    def __init__(self, name: str = "", node: objects.Node | None = None, usage: NodeUsage | None = None) -> None:
        #: ``metadata.name``
        self.name = name
        #: the decoded node object, or ``None`` when only the name is known
        self.node = node
        self._allocatable: dict[str, int] | None = None
        self._usage = usage
        self._lookup: UsageLookup | None = None
        self._memo: dict[Any, Any] | None = None
        self._resources: NodeResources | None = None

    def memo(self, key: Any, compute: Callable[[NodeInfo], Any]) -> Any:
        """``compute(self)``, remembered under ``key`` for the life of this NodeInfo.

        For values that depend only on this NodeInfo's node object and pods (not on the pod
        being scheduled), such as a score from allocatable or :attr:`used_ports`: both are fixed
        for a NodeInfo's life (the cluster state builds a new one when the node or its pods
        change), so in cache mode the value is computed once per node version instead of once
        per request. ``key`` must identify the plugin and its args.
        """
        memo = self._memo
        if memo is None:
            memo = self._memo = {}
        try:
            return memo[key]
        except KeyError:
            value = memo[key] = compute(self)
            return value

    def use_usage_lookup(self, lookup: UsageLookup) -> NodeInfo:
        """Find :attr:`usage` with ``lookup(name)`` on first read (non-cache requests with cluster
        state); returns ``self``."""
        self._lookup = lookup
        return self

    @property
    def usage(self) -> NodeUsage:
        """The pods and requests the cluster-state cache accounts on this node
        (:data:`EMPTY_USAGE` without cluster state or for a node the cache does not know)."""
        if self._usage is None:
            found = self._lookup(self.name) if self._lookup is not None else None
            self._usage = found if found is not None else EMPTY_USAGE
        return self._usage

    @property
    def pods(self) -> tuple[PodInfo, ...]:
        """Pods bound or assumed on this node (``NodeInfo.Pods``)."""
        return self.usage.pods

    @property
    def requested(self) -> Mapping[str, int]:
        """Sum of those pods' requests (``NodeInfo.Requested``)."""
        return self.usage.requested

    @property
    def non_zero_requested(self) -> tuple[int, int]:
        """``(milli_cpu, memory_bytes)`` with scoring defaults (``NodeInfo.NonZeroRequested``)."""
        return self.usage.non_zero_requested

    @property
    def labels(self) -> Mapping[str, str]:
        """``metadata.labels`` (empty when absent or unknown)."""
        node = self.node
        meta = node.metadata if node is not None else None
        return (meta.labels if meta is not None else None) or _EMPTY

    @property
    def annotations(self) -> Mapping[str, str]:
        """``metadata.annotations`` (empty when absent or unknown)."""
        node = self.node
        meta = node.metadata if node is not None else None
        return (meta.annotations if meta is not None else None) or _EMPTY

    @property
    def taints(self) -> tuple[objects.Taint, ...]:
        """``spec.taints``."""
        node = self.node
        spec = node.spec if node is not None else None
        return tuple(spec.taints or ()) if spec is not None else ()

    @property
    def images(self) -> Mapping[str, int]:
        """``status.images``: every name of every image on the node -> its size in bytes
        (kube-scheduler's ``NodeInfo.ImageStates`` without the cluster-wide node count)."""
        return self.memo(_IMAGES, _node_images)  # type: ignore[no-any-return]

    @property
    def pods_with_affinity(self) -> tuple[PodInfo, ...]:
        """The pods on the node with pod affinity or anti-affinity terms (``PodsWithAffinity``)."""
        return self.memo(_WITH_AFFINITY, _pods_with_affinity)  # type: ignore[no-any-return]

    @property
    def pods_with_required_anti_affinity(self) -> tuple[PodInfo, ...]:
        """The pods on the node with required anti-affinity terms (``PodsWithRequiredAntiAffinity``)."""
        return self.memo(_WITH_ANTI_AFFINITY, _pods_with_required_anti_affinity)  # type: ignore[no-any-return]

    @property
    def used_ports(self) -> frozenset[tuple[str, str, int]]:
        """``(hostIP, protocol, hostPort)`` of every host port the pods on the node use (``UsedPorts``)."""
        return self.memo(_USED_PORTS, _used_ports)  # type: ignore[no-any-return]

    @property
    def unschedulable(self) -> bool:
        """``spec.unschedulable`` (cordoned)."""
        node = self.node
        spec = node.spec if node is not None else None
        return bool(spec.unschedulable) if spec is not None else False

    @property
    def allocatable(self) -> Mapping[str, int]:
        """``status.allocatable`` in kube-scheduler units (cpu millicores, memory bytes, counts).

        Raises :class:`ObjectDecodeError` naming the node for a malformed quantity (in a request,
        the client's mistake: HTTP 400).
        """
        if self._allocatable is None:
            node = self.node
            status = node.status if node is not None else None
            try:
                self._allocatable = resource_list(status.allocatable if status is not None else None)
            except QuantityError as exc:
                raise ObjectDecodeError(f"node {self.name}: status.allocatable: {exc}") from None
        return self._allocatable

    @property
    def resources(self) -> NodeResources | None:
        """:class:`NodeResources` of this node with its :attr:`usage`, computed on first read and
        kept (``None`` when the node object is unknown). Raises :class:`ObjectDecodeError` for a
        malformed allocatable quantity."""
        resources = self._resources
        if resources is None:
            if self.node is None:
                return None
            resources = self._resources = NodeResources(self.allocatable, self.usage)
        return resources


_IMAGES, _WITH_AFFINITY, _WITH_ANTI_AFFINITY, _USED_PORTS = (
    "node/images",
    "node/pods-with-affinity",
    "node/pods-with-required-anti-affinity",
    "node/used-ports",
)


def _node_images(info: NodeInfo) -> Mapping[str, int]:
    node = info.node
    status = node.status if node is not None else None
    out: dict[str, int] = {}
    for image in (status.images if status is not None else None) or ():
        for name in image.names or ():
            out[name] = image.size_bytes or 0
    return out


def _pods_with_affinity(info: NodeInfo) -> tuple[PodInfo, ...]:
    return tuple(
        p
        for p in info.pods
        if p.affinity is not None and (p.affinity.pod_affinity is not None or p.affinity.pod_anti_affinity is not None)
    )


def _pods_with_required_anti_affinity(info: NodeInfo) -> tuple[PodInfo, ...]:
    out = []
    for p in info.pods_with_affinity:
        anti = p.affinity.pod_anti_affinity if p.affinity is not None else None
        if anti is not None and anti.required_during_scheduling_ignored_during_execution:
            out.append(p)
    return tuple(out)


def _used_ports(info: NodeInfo) -> frozenset[tuple[str, str, int]]:
    return frozenset(port for p in info.pods for port in p.host_ports)


class CycleState:
    """Per-cycle scratch space shared by the plugins of one scheduling call (kube-scheduler's
    ``CycleState``, pkg/scheduler/framework/cycle_state.go).

    PreFilter writes what Filter reads for every node, PreScore what Score reads. Keys are
    strings, by convention ``"<PluginName>/<what>"``. :attr:`skip_filter_plugins` and
    :attr:`skip_score_plugins` name the plugins whose PreFilter/PreScore returned ``Skip`` (their
    Filter/Score is not run, nor their PreFilterExtensions). :meth:`clone` copies the state for a
    what-if (the pods nominated to a node, preemption's dry run): a value with a ``clone()``
    method is cloned, any other value is shared, so a plugin whose ``add_pod``/``remove_pod``
    change its state gives that state a ``clone()``.
    """

    __slots__ = ("_data", "ignored_errors", "skip_filter_plugins", "skip_score_plugins", "snapshot")

    def __init__(self, snapshot: Any = None) -> None:
        self._data: dict[str, Any] = {}
        #: every node of the cluster as this cycle sees it (a
        #: :class:`~app.framework.handle.NodeLister`: kube-scheduler's ``SnapshotSharedLister``),
        #: for plugins whose PreFilter or PreScore looks beyond the candidate nodes (pod affinity,
        #: topology spread); ``None`` without cluster state (then only the candidates are known)
        self.snapshot = snapshot
        #: the plugins whose PreFilter returned ``Skip`` (``SkipFilterPlugins``)
        self.skip_filter_plugins: frozenset[str] = frozenset()
        #: the plugins whose PreScore returned ``Skip`` (``SkipScorePlugins``)
        self.skip_score_plugins: frozenset[str] = frozenset()
        #: plugin name -> errors a ``failurePolicy: Ignore`` plugin made in this cycle
        self.ignored_errors: dict[str, int] = {}

    def read(self, key: str) -> Any:
        """Return the value stored under ``key``; raises ``KeyError`` if nothing was written."""
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        """The value stored under ``key``, or ``default`` when nothing was written."""
        return self._data.get(key, default)

    def write(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``."""
        self._data[key] = value

    def delete(self, key: str) -> None:
        """Forget ``key`` (no error when absent)."""
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        """A copy (``CycleState.Clone``): each value with a ``clone()`` method cloned, the others
        shared; the snapshot and the skip sets shared (they are not changed after PreFilter and
        PreScore)."""
        copy = CycleState(self.snapshot)
        copy._data = {k: (v.clone() if hasattr(v, "clone") else v) for k, v in self._data.items()}
        copy.skip_filter_plugins = self.skip_filter_plugins
        copy.skip_score_plugins = self.skip_score_plugins
        copy.ignored_errors = self.ignored_errors
        return copy

    def ignore_error(self, plugin: str) -> None:
        """Count an error of ``plugin`` its ``failurePolicy: Ignore`` swallowed."""
        self.ignored_errors[plugin] = self.ignored_errors.get(plugin, 0) + 1

    def __contains__(self, key: str) -> bool:
        return key in self._data


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """What a PreFilter may return besides its status (``framework.PreFilterResult``,
    pkg/scheduler/framework/types.go): ``node_names``, the only nodes worth evaluating, ``None``
    for every node (``AllNodes``)."""

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        """Whether every node is worth evaluating (``AllNodes``)."""
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult | None:
        """``Merge``: the intersection of the two node sets; ``None`` when both allow every node."""
        mine = self.node_names
        theirs = other.node_names if other is not None else None
        if mine is None and theirs is None:
            return None
        if mine is None:
            return PreFilterResult(theirs)
        if theirs is None:
            return PreFilterResult(mine)
        return PreFilterResult(mine & theirs)


@dataclass(slots=True)
class PluginScore:
    """One plugin's weighted score of a node (``framework.PluginScore``: its 0..100 score after
    NormalizeScore times its weight)."""

    name: str
    score: int


@dataclass(slots=True)
class NodePluginScores:
    """A node's scores (``framework.NodePluginScores``): each plugin's weighted score and their
    sum, ``total_score``, what the node is chosen by; ``randomizer`` breaks ties (v1.36.3 sets it
    only when extenders score: :class:`~app.framework.scores.SortedNodeScores`)."""

    name: str
    scores: list[PluginScore] = field(default_factory=list)
    total_score: int = 0
    randomizer: int = 0


@dataclass(slots=True)
class NodeScore:
    """A node's score from one Score plugin: 0..100 after NormalizeScore (``framework.NodeScore``)."""

    name: str
    score: int


@dataclass(slots=True)
class Victims:
    """The pods kube-scheduler proposes to evict on one node, most important first.

    ``pods`` keep kube-scheduler's order (the first one is the highest-priority victim);
    ``num_pdb_violations`` is how many of them a PodDisruptionBudget protects.
    """

    pods: list[PodInfo] = field(default_factory=list)
    num_pdb_violations: int = 0


@dataclass(slots=True)
class QueuedPodInfo:
    """A pod in the scheduling queue (``framework.QueuedPodInfo``): the pod, when it entered the
    queue (``timestamp``, seconds on the queue's clock) and how many times it was tried."""

    pod: PodInfo
    timestamp: float
    attempts: int = 0


@dataclass(frozen=True, slots=True)
class PodRef:
    """The pod of a bind request: namespace, name and the UID to bind with as a precondition."""

    namespace: str
    name: str
    uid: str

"""What a plugin may use of the service around it: kube-scheduler's ``framework.Handle``
(``pkg/scheduler/framework/interface.go`` v1.30), and what a plugin declares it needs of the
cluster state.

The framework is the ground floor: it imports nothing else of ``app``. The cluster-state cache
(``app.cluster``) *implements* :class:`ClusterHandle`; plugins see only this protocol, so a
stateful plugin is tested with any small in-memory implementation of it. A plugin declares what
the cache must keep for it (:class:`ClusterNeeds`: resource pools, pod indexes, pod annotation
keys, PodGroups) on its registration (``PluginEntry.needs``), not in its factory: the
composition root registers the needs before the cache is filled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from app.framework.dra import ClaimWrite, ClaimWriteResult, DRALister
from app.framework.nominator import PodNominator
from app.framework.objects import LabelSelector
from app.framework.status import SUCCESS, Status
from app.framework.types import CycleState, NodeInfo, PodInfo, PodRef
from app.framework.volumes import VolumeLister, VolumeWrite, VolumeWriteResult
from app.framework.waiting import WaitingPods

#: The share of ``httpTimeout`` (:attr:`Handle.http_timeout`) a bind (Permit included) may use:
#: the extender's ``bind`` verb ends within it, and a plugin that holds a bind (a Permit that
#: waits) must fit in it; the rest is for the answer to reach kube-scheduler, which fails a binding
#: cycle whose extender answers late.
BIND_BUDGET = 0.9
#: CycleState key of a binding cycle: the ``time.monotonic()`` by which it must end (the
#: extender's bind verb), absent when it has no deadline (the standalone scheduler).
BIND_DEADLINE = "framework/bind-deadline"
#: ``Status.reason_code`` of a Bind that failed without knowing whether the Binding was created
#: (a timeout, :meth:`ClusterHandle.bind`): the assumption is kept until the watch shows the pod or
#: the assumption expires.
BINDING_UNCERTAIN = "BindingUncertain"


@dataclass(frozen=True)
class PoolSpec:
    """A countable per-node resource pool (such as underlay IPs) a plugin asks the cache to count.

    ``consumes(pod)`` is how many slots ``pod`` takes (0 for pods outside the pool); the cache sums
    it per node into :attr:`~app.framework.types.NodeUsage.pool_usage` under ``name``.
    """

    name: str
    consumes: Callable[[PodInfo], int]


@dataclass(frozen=True)
class PodIndex:
    """An index of the watched pods (bound or pending) by a key, such as the pod group a pod
    belongs to (client-go's ``Indexer``). ``key(pod)`` returns the pod's key or ``None`` for pods
    outside the index."""

    name: str
    key: Callable[[PodInfo], str | None]


@dataclass(frozen=True)
class Reservation:
    """The answer of :meth:`ClusterHandle.assume`.

    ``ok``: the pod now counts on the node. ``already_bound``: the API server already shows the
    pod bound to that node (nothing to do). ``reason``: why the reservation was refused, and
    ``status`` the refusing Reserve plugin's status when one refused.
    """

    ok: bool
    already_bound: bool = False
    reason: str = ""
    status: Status | None = None


@dataclass(frozen=True)
class ClusterNeeds:
    """What one plugin needs the cluster state to keep (declared on its ``PluginEntry``).

    ``pools``: per-node pools to count. ``indexes``: pod indexes to maintain. ``pod_annotations``:
    pod annotation keys pod records must keep (records drop the others). ``pod_groups``: watch
    PodGroups (``scheduling.x-k8s.io``). ``bind_deadline``: seconds a Binding this plugin sends
    may stay in flight (a restarted or newly elected replica waits that long before it reserves
    anything). ``cluster_wide_reserve``: this plugin's Reserve check holds for every profile
    (a resource pool's slots are the same whichever profile binds), so every profile's Reserve
    runs it too. ``images``: nodes keep ``status.images`` and pod records their containers'
    images (ImageLocality; without it neither is kept: a node's 40-odd image entries would cost
    about 12 KB a node). ``pod_disruption_budgets``: watch PodDisruptionBudgets (``policy/v1``:
    preemption). ``spread_selectors``: watch Services, ReplicationControllers (``v1``), ReplicaSets
    and StatefulSets (``apps/v1``) for :meth:`ClusterHandle.default_selector` (PodTopologySpread's
    default constraints). ``reserves_capacity``: this plugin's Reserve refuses a node whose
    capacity is taken (a pool's slots, cpu and memory), so a Binding a previous process may
    still have in flight could make it over-commit: binds of a profile running such a Reserve
    wait out the warm-up after a start or takeover (a pool implies it, :attr:`guards_capacity`).
    ``volumes``: watch PersistentVolumes, PersistentVolumeClaims (``v1``), StorageClasses,
    CSINodes and CSIDrivers (``storage.k8s.io/v1``) for :attr:`ClusterHandle.volumes` (the volume
    plugins: VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits and the in-tree
    limits), and let PreBind write claims and volumes (:meth:`ClusterHandle.update_volume`:
    PATCH of ``persistentvolumeclaims`` and ``persistentvolumes``). ``csi_storage_capacities``:
    also watch CSIStorageCapacities (``storage.k8s.io/v1``; VolumeBinding's capacity check).
    Render derives the RBAC of both from these flags (``system:volume-scheduler``'s and
    ``system:kube-scheduler``'s rules for those kinds).
    ``namespaces``: watch Namespaces (their labels only) for :meth:`NodeLister.namespace_labels`
    (InterPodAffinity's ``namespaceSelector``). ``dynamic_resources``: watch ResourceClaims,
    ResourceSlices and DeviceClasses (``resource.k8s.io/v1``) for :attr:`ClusterHandle.dra`
    (DynamicResources), and let it write claims (:meth:`ClusterHandle.write_resource_claim`).
    """

    pools: tuple[PoolSpec, ...] = ()
    indexes: tuple[PodIndex, ...] = ()
    pod_annotations: tuple[str, ...] = ()
    pod_groups: bool = False
    bind_deadline: float = 0.0
    cluster_wide_reserve: bool = False
    images: bool = False
    reserves_capacity: bool = False
    pod_disruption_budgets: bool = False
    spread_selectors: bool = False
    volumes: bool = False
    csi_storage_capacities: bool = False
    namespaces: bool = False
    dynamic_resources: bool = False

    @property
    def guards_capacity(self) -> bool:
        """Whether binds need the warm-up for this plugin: it counts a pool or says it
        ``reserves_capacity``."""
        return self.reserves_capacity or bool(self.pools)


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    """What kube-scheduler's preemption reads of a ``policy/v1`` PodDisruptionBudget: its
    namespace and name, ``spec.selector`` (``None`` or empty: it selects no pod),
    ``status.disruptionsAllowed`` and the pod names in ``status.disruptedPods``."""

    namespace: str
    name: str
    selector: LabelSelector | None
    disruptions_allowed: int
    disrupted_pods: frozenset[str] = frozenset()


class NodeLister(Protocol):
    """An immutable view of the nodes (kube-scheduler's ``NodeInfoLister`` over a snapshot)."""

    def get(self, name: str) -> NodeInfo | None:
        """The NodeInfo of ``name`` when the node object is known, else ``None``."""
        ...

    def list(self) -> Sequence[NodeInfo]:
        """Every known node's NodeInfo, in the node tree's order (zone by zone, round robin)."""
        ...

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The labels of ``namespace`` (``namespaceSelector`` of pod affinity terms), ``None`` when
        the namespace is not known."""
        ...

    def with_pods(self, info: NodeInfo, pods: Sequence[PodInfo]) -> NodeInfo:
        """``info`` with ``pods`` counted as if they ran there (``NodeInfo.AddPod``)."""
        ...

    def without_pods(self, info: NodeInfo, pods: Sequence[PodInfo]) -> NodeInfo:
        """``info`` with ``pods`` no longer counted (``NodeInfo.RemovePod``)."""
        ...


class PodGroupLister(Protocol):
    """The watched PodGroups (``scheduling.x-k8s.io/v1alpha1``): ``synced`` once listed,
    ``absent`` while the CRD is not installed."""

    synced: bool
    absent: bool

    def min_member(self, namespace: str, name: str) -> int | None:
        """``spec.minMember`` of the group, or ``None`` when it does not exist."""
        ...

    def schedule_timeout(self, namespace: str, name: str) -> int | None:
        """``spec.scheduleTimeoutSeconds`` of the group, or ``None``."""
        ...


class ClusterHandle(Protocol):
    """What plugins (and the framework's binding cycle) may use of the cluster state.

    Reads are of one consistent moment each; ``assume``/``forget`` are the framework's (Reserve
    and Unreserve), plugins do not call them. Blocking calls are marked; the async ones run on the
    event loop.
    """

    @property
    def podgroups(self) -> PodGroupLister | None:
        """The PodGroups, when a plugin declared ``pod_groups``."""
        ...

    @property
    def volumes(self) -> VolumeLister | None:
        """The watched storage objects, when a plugin declared ``volumes``."""
        ...

    async def update_volume(self, write: VolumeWrite, timeout: float) -> VolumeWriteResult:
        """Send one of VolumeBinding's PreBind writes (a claim's ``selected-node``, a volume's
        ``claimRef``) to the API server within ``timeout`` seconds, off the event loop: its
        ``resourceVersion`` after the write, or the API server's error (never raises)."""
        ...

    @property
    def dra(self) -> DRALister | None:
        """The watched DRA objects and allocations, when a plugin declared ``dynamic_resources``."""
        ...

    async def write_resource_claim(self, write: ClaimWrite, timeout: float) -> ClaimWriteResult:
        """One API call on a ResourceClaim (DynamicResources' PreBind, PostFilter, Unreserve)
        within ``timeout`` seconds, off the event loop: the claim returned, or the API server's
        error (never raises)."""
        ...

    def snapshot(self) -> NodeLister:
        """The nodes with the pods bound or assumed on them, as of now (shared until a change)."""
        ...

    def pod(self, uid: str) -> PodInfo | None:
        """The watched pod with ``uid`` (bound or pending), or ``None``."""
        ...

    def indexed(self, index: str, key: str) -> tuple[PodInfo, ...]:
        """The watched pods whose key in the declared ``index`` is ``key``."""
        ...

    def placement(self, uid: str) -> str | None:
        """The node pod ``uid`` is bound to or assumed on, or ``None``."""
        ...

    async def read_pod(self, pod: PodRef, timeout: float) -> PodInfo | None:
        """The cache's record of ``pod`` (by UID) or, when the watch has not shown it yet, the pod
        read from the API server within ``timeout`` seconds: ``None`` when that fails, a record
        with another UID when a pod of that name was recreated."""
        ...

    def assume(self, pod: PodInfo, node: str, check: Callable[[NodeInfo], Status] | None = None) -> Reservation:
        """Atomically run ``check`` on ``node`` (as it is, with everything bound and assumed so far)
        and, when it succeeds, count ``pod`` there (kube-scheduler's ``AssumePod`` together with
        Reserve). Refused when the pod is bound or assumed on another node."""
        ...

    def forget(self, uid: str, node: str) -> None:
        """Drop the assumption of ``uid`` on ``node`` (``ForgetPod``)."""
        ...

    def finish_binding(self, uid: str) -> None:
        """The binding cycle of ``uid`` ended and its assumption stands (``FinishBinding``): it
        waits for the watch (or expires); until then no other cycle may assume the pod."""
        ...

    async def bind(self, pod: PodInfo, node: str, timeout: float) -> Status:
        """Create the pod's Binding to ``node`` with its UID as precondition, within ``timeout``
        seconds: ``SUCCESS`` (bound now, or already bound there) or an ``ERROR`` status. A
        Binding whose outcome is unknown (a timeout, ``reason_code`` :data:`BINDING_UNCERTAIN`)
        keeps the assumption until the watch shows it or it expires; a refused one forgets it."""
        ...

    def bind_admission(self, warm_up: bool = True) -> str | None:
        """Why nothing may be reserved now (not the leader, not synced, warming up), or ``None``.
        ``warm_up=False``: a profile with no capacity-bearing Reserve ignores the warm-up."""
        ...

    def bind_admission_wait(self, warm_up: bool = True, asked_at: float | None = None) -> float | None:
        """Seconds after which :meth:`bind_admission` may admit (0.0: it admits now; the warm-up's
        remainder; a short poll while the watch syncs), ``None`` when waiting cannot help (this
        replica does not hold the Lease, by a read of it begun at or after ``asked_at``, the
        ``time.monotonic()`` the bind first asked; without ``asked_at``, by the last read)."""
        ...

    def pod_disruption_budgets(self) -> Sequence[PodDisruptionBudget]:
        """The watched PodDisruptionBudgets (empty unless a plugin declared
        ``pod_disruption_budgets``, and until their first list)."""
        ...

    def default_selector(self, pod: PodInfo) -> LabelSelector | None:
        """The selector kube-scheduler's ``helper.DefaultSelector`` deduces for ``pod`` from the
        Services of its namespace that select it and its controller (a ReplicationController,
        ReplicaSet or StatefulSet named by its controller owner reference): an empty selector when
        nothing selects it; ``None`` unless a plugin declared ``spread_selectors``."""
        ...

    async def preempt_pod(self, preemptor: PodInfo, node: str, victim: PodInfo) -> Status:
        """The API calls of one victim of a preemption (``Executor.PreemptPod``,
        pkg/scheduler/framework/preemption/executor.go, v1.36.3): the condition
        ``DisruptionTarget=True`` reason ``PreemptionByScheduler`` patched on ``victim`` (unless it
        has it), then its DELETE with its UID as precondition. ``SUCCESS`` once deleted; ``SKIP``
        when the victim is gone already (a 404 at either call: no Event); ``ERROR`` with the
        failure otherwise (a failed patch skips the DELETE). Runs off the event loop."""
        ...

    async def clear_nominated_node_name(self, pods: Sequence[PodInfo]) -> Status:
        """``clearNominatedNodeName``: ``status.nominatedNodeName`` of each of ``pods`` (that has
        one) cleared; ``ERROR`` with every failure joined, else ``SUCCESS``."""
        ...

    def preempted(self, victim: PodInfo, preemptor: PodInfo, node: str, in_memory: bool = False) -> None:
        """The ``Preempted`` Event on ``victim`` ("Preempted by pod <uid> on node <node>", with
        `` (in kube-scheduler memory).`` for a victim rejected at Permit, ``in_memory``). Does not
        block."""
        ...


class PodActivator(Protocol):
    """What receives the pods a cycle asked to retry now (kube-scheduler's ``PodActivator``,
    implemented by the scheduling queue): pods parked or backing off move to the active queue."""

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """Move ``pods`` to the active queue if they are waiting in it."""
        ...


#: CycleState key of the pods a plugin asks to retry now (``framework.PodsToActivateKey``): a
#: ``dict`` of UID to :class:`PodInfo`; the standalone scheduler hands them to its queue.
PODS_TO_ACTIVATE = "kubernetes.io/pods-to-activate"


class NoCluster:
    """The cluster handle of a profile without a ``cluster:`` section (a null object): nothing is
    watched, so reads find nothing; Reserve checks a node known only by name and counts nothing;
    a bind or a preemption cannot be carried out."""

    podgroups: PodGroupLister | None = None
    #: no storage object is watched
    volumes: VolumeLister | None = None

    async def update_volume(self, write: VolumeWrite, timeout: float) -> VolumeWriteResult:
        """An error: there is no API server to write to."""
        return VolumeWriteResult(error="the profile has no cluster state (a cluster: section) to write volumes through")

    #: no DRA object is watched
    dra: DRALister | None = None

    async def write_resource_claim(self, write: ClaimWrite, timeout: float) -> ClaimWriteResult:
        """An error: there is no API server to write to."""
        return ClaimWriteResult(error="the profile has no cluster state (a cluster: section) to write claims through")

    def snapshot(self) -> NodeLister:
        """No node."""
        return _NO_NODES

    def pod(self, uid: str) -> PodInfo | None:
        """No pod."""
        return None

    def indexed(self, index: str, key: str) -> tuple[PodInfo, ...]:
        """No pod."""
        return ()

    def placement(self, uid: str) -> str | None:
        """Nowhere."""
        return None

    async def read_pod(self, pod: PodRef, timeout: float) -> PodInfo | None:
        """A pod known only by its identity (nothing to read it from)."""
        return PodInfo.placeholder(pod.namespace, pod.name, pod.uid)

    def assume(self, pod: PodInfo, node: str, check: Callable[[NodeInfo], Status] | None = None) -> Reservation:
        """``check`` on the node known only by name; nothing is counted."""
        status = check(NodeInfo(node)) if check is not None else None
        if status is not None and not status.is_success():
            return Reservation(False, reason=status.message, status=status)
        return Reservation(True)

    def forget(self, uid: str, node: str) -> None:
        """Nothing was counted."""

    def finish_binding(self, uid: str) -> None:
        """Nothing was counted."""

    async def bind(self, pod: PodInfo, node: str, timeout: float) -> Status:
        """An ``ERROR``: there is no API server to bind through."""
        return Status.error("the profile has no cluster state (a cluster: section) to bind through")

    def bind_admission(self, warm_up: bool = True) -> str | None:
        """Always admitted: nothing can over-commit."""
        return None

    def bind_admission_wait(self, warm_up: bool = True, asked_at: float | None = None) -> float | None:
        """Admitted now."""
        return 0.0

    def pod_disruption_budgets(self) -> Sequence[PodDisruptionBudget]:
        """None watched."""
        return ()

    def default_selector(self, pod: PodInfo) -> LabelSelector | None:
        """Nothing watched."""
        return None

    async def preempt_pod(self, preemptor: PodInfo, node: str, victim: PodInfo) -> Status:
        """An ``ERROR``: there is no API server to delete through."""
        return Status.error("the profile has no cluster state (a cluster: section) to preempt through")

    async def clear_nominated_node_name(self, pods: Sequence[PodInfo]) -> Status:
        """An ``ERROR`` for any pod: there is no API server."""
        if not pods:
            return SUCCESS
        return Status.error("the profile has no cluster state (a cluster: section) to write through")

    def preempted(self, victim: PodInfo, preemptor: PodInfo, node: str, in_memory: bool = False) -> None:
        """No Event: nothing to write to."""


class _NoNodes:
    """The :class:`NodeLister` of :class:`NoCluster`: no node, no namespace."""

    def get(self, name: str) -> NodeInfo | None:
        return None

    def list(self) -> Sequence[NodeInfo]:
        return ()

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return None

    def with_pods(self, info: NodeInfo, pods: Sequence[PodInfo]) -> NodeInfo:
        return info

    def without_pods(self, info: NodeInfo, pods: Sequence[PodInfo]) -> NodeInfo:
        return info


_NO_NODES = _NoNodes()
#: the one :class:`NoCluster`
NO_CLUSTER = NoCluster()


class Handle:
    """What the framework gives a plugin factory (kube-scheduler's ``framework.Handle``,
    pkg/scheduler/framework/interface.go): the profile's services.

    ``profile`` is the profile name; ``http_timeout`` the profile's ``httpTimeout`` in seconds
    (a plugin that waits must answer well inside it). ``cluster`` is the cluster state, or
    :data:`NO_CLUSTER` when the configuration has no ``cluster:`` section (:attr:`has_cluster`;
    plugins registered with ``needs_cluster=True`` are built only with one). ``waiting_pods``: the
    profile's pods waiting at Permit (``IterateOverWaitingPods``, ``GetWaitingPod``).
    ``nominator``: the pods nominated to nodes (``PodNominator``; the standalone schedulers' own,
    shared by their profiles). The profile's :class:`~app.framework.runtime.Framework` is itself a
    Handle, and the one its plugins are built with: it also runs the profile's Filter for a
    preemption's dry run (:meth:`run_filter_plugins_with_nominated_pods` and the PreFilter
    extensions). A bare Handle (tests building one plugin) has no plugins to run: those methods
    raise ``RuntimeError``.
    """

    def __init__(
        self,
        profile: str,
        http_timeout: float = 5.0,
        cluster: ClusterHandle | None = None,
        waiting_pods: WaitingPods | None = None,
        nominator: PodNominator | None = None,
    ) -> None:
        self.profile = profile
        self.http_timeout = http_timeout
        self.cluster: ClusterHandle = cluster if cluster is not None else NO_CLUSTER
        self.waiting_pods = waiting_pods if waiting_pods is not None else WaitingPods()
        self.nominator = nominator if nominator is not None else PodNominator()
        #: the scheduling queue of the profile's standalone scheduler (``PodActivator``), set by it
        self.pod_activator: PodActivator | None = None
        #: the event loop the profile's standalone scheduler runs on, set by it when it starts:
        #: where work begun in a cycle run off the loop (a preemption's) continues
        self.loop: asyncio.AbstractEventLoop | None = None

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """``Activate``: ``pods`` to the active queue of :attr:`pod_activator` (none: nothing)."""
        if self.pod_activator is not None:
            self.pod_activator.activate(pods)

    @property
    def has_cluster(self) -> bool:
        """Whether the profile has cluster state (a ``cluster:`` section)."""
        return self.cluster is not NO_CLUSTER

    def require_cluster(self, plugin: str) -> ClusterHandle:
        """:attr:`cluster`; raises ``ValueError`` naming ``plugin`` when there is none."""
        if not self.has_cluster:
            raise ValueError(f"{plugin} needs cluster state: add a `cluster:` section")
        return self.cluster

    def nominated_pods_for_node(self, node: str) -> list[PodInfo]:
        """The pods nominated to ``node`` (``NominatedPodsForNode``)."""
        return self.nominator.nominated_pods_for_node(node)

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``RunFilterPluginsWithNominatedPods`` for ``node`` (implemented by the Framework)."""
        raise RuntimeError("a bare Handle runs no plugins: build the plugin through its profile's Framework")

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, added: PodInfo, node: NodeInfo
    ) -> Status:
        """``RunPreFilterExtensionAddPod`` (implemented by the Framework)."""
        raise RuntimeError("a bare Handle runs no plugins: build the plugin through its profile's Framework")

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, removed: PodInfo, node: NodeInfo
    ) -> Status:
        """``RunPreFilterExtensionRemovePod`` (implemented by the Framework)."""
        raise RuntimeError("a bare Handle runs no plugins: build the plugin through its profile's Framework")


__all__ = [
    "BINDING_UNCERTAIN",
    "BIND_BUDGET",
    "BIND_DEADLINE",
    "NO_CLUSTER",
    "PODS_TO_ACTIVATE",
    "ClusterHandle",
    "ClusterNeeds",
    "Handle",
    "NoCluster",
    "NodeLister",
    "PodActivator",
    "PodGroupLister",
    "PodIndex",
    "PoolSpec",
    "Reservation",
]

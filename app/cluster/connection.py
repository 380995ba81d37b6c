"""The service's connection to its cluster: the cache and what keeps it current (the API client,
the reflectors and their stores, the requeuer, the Lease follower) and the calls that write to the
cluster (Bindings, preemption, volume writes), behind the framework's
:class:`~app.framework.handle.ClusterHandle`.

It holds the three parts of the cluster state: :attr:`ClusterConnection.cache`
(:mod:`app.cluster.cache`), :attr:`~ClusterConnection.events`, what the scheduling queues follow
(:mod:`app.cluster.events`), and :attr:`~ClusterConnection.health`, the watched kinds' sync
health (:mod:`app.cluster.health`). Built by the composition root (:mod:`app.bootstrap`) before
the profiles' plugins: the needs the enabled plugins declare (pools, pod indexes, annotation
keys, PodGroups: :meth:`ClusterConnection.register`) are registered first, then the plugins are
built with this connection as their handle, then ``serve``/``schedule`` connect it
(:meth:`ClusterConnection.connect`), never ``validate`` or ``replay``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from app.cluster.binding import Binder
from app.cluster.cache import Cache, ReserveCheck
from app.cluster.dra import DRAStores
from app.cluster.events import ClusterEvents
from app.cluster.health import KINDS, SyncHealth
from app.cluster.leader import LeaderElectionSettings, LeaseFollower
from app.cluster.namespaces import KIND as NAMESPACES
from app.cluster.namespaces import NamespaceStore
from app.cluster.pdbs import KIND as PDBS
from app.cluster.pdbs import PDBStore
from app.cluster.podgroups import KIND as PODGROUPS
from app.cluster.podgroups import PodGroupStore
from app.cluster.reflector import Reflector, Store, cache_store
from app.cluster.requeue import Requeuer
from app.cluster.selectors import SpreadSelectors
from app.cluster.snapshot import Snapshot
from app.cluster.volumes import VolumeStores
from app.framework import features
from app.framework.dra import ClaimWrite, ClaimWriteResult
from app.framework.handle import ClusterNeeds, PodDisruptionBudget, Reservation
from app.framework.objects import LabelSelector
from app.framework.status import SUCCESS, Code, Status
from app.framework.types import PodInfo, PodRef
from app.framework.volumes import CLAIMS, VolumeWrite, VolumeWriteResult
from app.kube.errors import APIError
from app.kube.timefmt import rfc3339_time

if TYPE_CHECKING:
    from app.kube.aio import AsyncBindingClient
    from app.kube.client import KubeClient

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterSettings:
    """How to reach and mirror the cluster (seconds for every duration).

    ``kubeconfig``/``context``: explicit credentials (else in-cluster, else the default
    kubeconfig). ``assumed_pod_ttl``: how long a bound-but-unconfirmed pod counts on its node.
    ``watch_timeout``: the server-side watch timeout's lower bound. ``stale_after``: failing
    list/watch time before ``/readyz`` reports not ready. ``pod_annotations``: annotation keys pod
    records keep besides those plugins ask for.
    """

    kubeconfig: str | None = None
    context: str | None = None
    assumed_pod_ttl: float = 30.0
    watch_timeout: int = 300
    page_size: int = 500
    stale_after: float = 60.0
    backoff_initial: float = 0.8
    backoff_max: float = 30.0
    api_workers: int = 16
    #: Bindings in flight (connections of :mod:`app.kube.aio`) at most
    bind_connections: int = 128
    pod_annotations: tuple[str, ...] = field(default_factory=tuple)
    #: follow kube-scheduler's Lease (None: this replica always binds, after its warm-up)
    leader_election: LeaderElectionSettings | None = None
    #: re-queue assistance (:mod:`app.cluster.requeue`): pods patched per second at most; 0: off
    requeue_qps: float = 5.0


#: Added to a binder's deadline before binds are admitted after a start or a takeover: the time
#: for the watch to show a Binding created at the very end of that deadline (seconds).
WATCH_MARGIN = 1.0
#: How often (seconds) a bind waiting for the watch's first sync looks again.
SYNC_POLL = 0.05
#: Pooled connections to the API server beside one per API worker: one for each other thread that
#: may call at once (every reflector's watch, the Lease, re-queue and Event workers, the metrics
#: listener's review threads). urllib3 opens a connection past its pool's size anyway, and then
#: discards it after one use ("Connection pool is full, discarding connection"): a new TCP and
#: TLS handshake for the next call. A connection is only opened when needed.
POOL_EXTRA = 32


class ClusterConnection:
    """The cache, the cluster events and the sync health (see the module doc) plus, once
    connected, the API client, reflectors and executor; implements
    :class:`~app.framework.handle.ClusterHandle` for the plugins and the framework."""

    def __init__(self, settings: ClusterSettings) -> None:
        self.settings = settings
        #: the watched kinds' sync health (``/readyz``, bind admission, metrics)
        self.health = SyncHealth(stale_after=settings.stale_after)
        #: nodes, pods, usage, pools, indexes, assumed pods; snapshots
        self.cache = Cache(
            assumed_ttl=settings.assumed_pod_ttl, keep_annotations=settings.pod_annotations, health=self.health
        )
        #: the cluster events and pod changes the scheduling queues follow (written by the cache)
        self.events: ClusterEvents = self.cache.events
        self.client: KubeClient | None = None
        self.executor: ThreadPoolExecutor | None = None
        self.reflectors: list[Reflector] = []
        self._podgroups: PodGroupStore | None = None
        self._pdbs: PDBStore | None = None
        self._selectors: SpreadSelectors | None = None
        self._volumes: VolumeStores | None = None
        self._namespaces: NamespaceStore | None = None
        self._dra: DRAStores | None = None
        #: told ``(victim, preemptor, node, in_memory)`` once a preemption victim is deleted, or
        #: rejected at Permit (given to :meth:`connect`: the standalone schedulers' ``Preempted``
        #: Event on the victim, :meth:`preempted`)
        self.on_preempted: Callable[[PodInfo, PodInfo, str, bool], None] | None = None
        self.follower: LeaseFollower | None = None
        self.requeuer: Requeuer | None = None
        self._binder: Binder | None = None
        self._bindings: AsyncBindingClient | None = None
        #: the longest bind deadline of the binders (seconds): how long a Binding this process's
        #: predecessor (or the previous leader) sent may still be in flight
        self.bind_deadline = 0.0
        #: whether a registered plugin's Reserve guards capacity (:attr:`ClusterNeeds.guards_capacity`):
        #: without one no profile waits out the warm-up
        self.guards_capacity = False
        self._admit_at = 0.0

    # -- what plugins declare (before connect) -------------------------------------------------------

    def register(self, plugin: str, needs: ClusterNeeds) -> None:
        """Keep what ``plugin`` declared it needs (call before :meth:`connect`): its pools (a pool
        name may be counted once: ``ValueError`` when another plugin counts it already), pod
        indexes (one per name), pod annotation keys, PodGroups, and its bind deadline."""
        self.cache.register(plugin, needs)
        if needs.pod_groups and self._podgroups is None:
            self._podgroups = PodGroupStore()
        if needs.pod_disruption_budgets and self._pdbs is None:
            self._pdbs = PDBStore()
        if needs.spread_selectors and self._selectors is None:
            self._selectors = SpreadSelectors()
        if (needs.volumes or needs.csi_storage_capacities) and self._volumes is None:
            self._volumes = VolumeStores(self.health, self.events)
        if needs.csi_storage_capacities and self._volumes is not None:
            self._volumes.want_capacities()
        if needs.dynamic_resources and self._dra is None:
            self._dra = DRAStores(self.health, self.events, features.current().enabled("DRAConsumableCapacity"))
        if needs.namespaces and self._namespaces is None:
            self._namespaces = NamespaceStore(self.health)
            self.cache.namespace_labels = self._namespaces.labels
        self.bind_deadline = max(self.bind_deadline, needs.bind_deadline)
        self.guards_capacity = self.guards_capacity or needs.guards_capacity

    # -- ClusterHandle ------------------------------------------------------------------------------

    @property
    def podgroups(self) -> PodGroupStore | None:
        """The PodGroups store, when a plugin declared ``pod_groups``."""
        return self._podgroups

    @property
    def volumes(self) -> VolumeStores | None:
        """The storage objects (:class:`~app.cluster.volumes.VolumeStores`), when a plugin
        declared ``volumes``."""
        return self._volumes

    async def update_volume(self, write: VolumeWrite, timeout: float) -> VolumeWriteResult:
        """VolumeBinding's PreBind write (``bindAPIUpdate``, whose ``Update`` of the claim or volume
        this sends as a JSON merge PATCH with the decision's ``resourceVersion`` as precondition:
        :meth:`KubeClient.patch_volume_object`), on the API executor; an error result before
        :meth:`connect`."""
        if self.executor is None or self.client is None:
            return VolumeWriteResult(error="the cluster connection is not started (schedule connects it)")
        meta: dict[str, Any] = {"resourceVersion": write.resource_version or None}
        if write.annotations:
            meta["annotations"] = dict(write.annotations)
        patch: dict[str, Any] = {"metadata": {k: v for k, v in meta.items() if v is not None}}
        if write.claim_ref is not None:
            ref = write.claim_ref
            fields = {
                "kind": ref.kind,
                "namespace": ref.namespace,
                "name": ref.name,
                "uid": ref.uid,
                "apiVersion": ref.api_version,
                "resourceVersion": ref.resource_version,
            }
            patch["spec"] = {"claimRef": {k: v for k, v in fields.items() if v}}
        namespace = write.namespace if write.kind == CLAIMS else ""
        call = partial(self.client.patch_volume_object, write.kind, namespace, write.name, patch, timeout)
        try:
            version = await asyncio.get_running_loop().run_in_executor(self.executor, call)
        except APIError as exc:
            return VolumeWriteResult(error=exc.message or str(exc))
        return VolumeWriteResult(resource_version=version)

    @property
    def dra(self) -> DRAStores | None:
        """The DRA objects and allocations (:class:`~app.cluster.dra.DRAStores`), when a plugin
        declared ``dynamic_resources``."""
        return self._dra

    async def write_resource_claim(self, write: ClaimWrite, timeout: float) -> ClaimWriteResult:
        """DynamicResources' call on a ResourceClaim (:meth:`KubeClient.resource_claim_call`), on
        the API executor; an error result before :meth:`connect`."""
        if self.executor is None or self.client is None:
            return ClaimWriteResult(error="the cluster connection is not started (schedule connects it)")
        call = partial(self.client.resource_claim_call, write.verb, write.namespace, write.name, write.body, timeout)
        try:
            claim = await asyncio.get_running_loop().run_in_executor(self.executor, call)
        except APIError as exc:
            return ClaimWriteResult(error=exc.message or str(exc), code=exc.status)
        return ClaimWriteResult(claim=claim)

    def snapshot(self) -> Snapshot:
        """The cache as of now (:meth:`Cache.snapshot`)."""
        return self.cache.snapshot()

    def pod(self, uid: str) -> PodInfo | None:
        """The watched pod with ``uid``, or ``None``."""
        return self.cache.pod(uid)

    def indexed(self, index: str, key: str) -> tuple[PodInfo, ...]:
        """The watched pods whose key in ``index`` is ``key``."""
        return self.cache.indexed(index, key)

    def placement(self, uid: str) -> str | None:
        """The node pod ``uid`` is bound to or assumed on, or ``None``."""
        return self.cache.placement(uid)

    def stats(self) -> dict[str, float]:
        """For metrics: :meth:`Cache.stats` and :meth:`SyncHealth.stats` in one mapping."""
        return {**self.cache.stats(), **self.health.stats()}

    async def read_pod(self, pod: PodRef, timeout: float) -> PodInfo | None:
        """The cached record of ``pod``, else the pod read from the API server (``None`` when
        unreadable or not connected; another UID when the name was reused)."""
        if self._binder is None:
            cached = self.cache.pod(pod.uid)
            return cached
        return await self._binder.read_pod(pod, timeout)

    def assume(self, pod: PodInfo, node: str, check: ReserveCheck | None = None) -> Reservation:
        """:meth:`Cache.assume_pod`."""
        return self.cache.assume_pod(pod, node, check)

    def forget(self, uid: str, node: str) -> None:
        """:meth:`Cache.forget_pod`."""
        self.cache.forget_pod(uid, node)

    def finish_binding(self, uid: str) -> None:
        """:meth:`Cache.finish_binding`."""
        self.cache.finish_binding(uid)

    async def bind(self, pod: PodInfo, node: str, timeout: float) -> Status:
        """Create the pod's Binding (:meth:`app.cluster.binding.Binder.bind`); an ``ERROR`` before
        :meth:`connect`."""
        if self._binder is None:
            return Status.error("the cluster connection is not started (serve connects it)")
        return await self._binder.bind(pod, node, timeout)

    def bind_admission(self, warm_up: bool = True) -> str | None:
        """Why a bind may not reserve anything now, or ``None`` when it may.

        After a start or a takeover, binds wait until the watch has synced and, for a profile
        whose Reserve guards capacity (``warm_up``; a pool, NodeResourcesFit, DefaultBinder's
        ``verifyFit``), one whole bind deadline (plus :data:`WATCH_MARGIN`): a Binding an earlier
        process or the previous leader sent can land at the API server until then, and counting
        the pod only once the watch shows it is what keeps a restart from over-committing a node.
        Without such a Reserve there is nothing to over-commit, so no warm-up (kube-scheduler has
        none either). With ``leader_election``, only the leader binds. The bind verb waits for
        the admission while its budget allows (:meth:`bind_admission_wait`), else answers
        ``Error`` (kube-scheduler retries the pod with backoff); filter keeps answering.
        """
        if self.follower is not None and not self.follower.is_leader():
            s = self.follower.settings
            holder = self.follower.holder or "nobody"
            return (
                f"this extender's kube-scheduler ({s.identity}) does not hold the Lease "
                f"{s.lease_namespace}/{s.lease_name} (held by {holder}): only the leader's extender binds"
            )
        if not self.health.has_synced():
            return "the extender's cluster state has not synced with the API server yet"
        wait = self._admit_at - time.monotonic()
        if warm_up and wait > 0:
            return (
                f"warming up: binds are admitted in {wait:.1f}s, once a Binding sent before this "
                f"extender started or took over can no longer be in flight ({self.bind_deadline:g}s bind deadline)"
            )
        return None

    def bind_admission_wait(self, warm_up: bool = True, asked_at: float | None = None) -> float | None:
        """Seconds until :meth:`bind_admission` may admit: ``0.0`` when it admits, the warm-up's
        remainder, :data:`SYNC_POLL` while the watch has not synced; for a follower, the wait for
        a read of the Lease begun at or after ``asked_at`` (:meth:`LeaseFollower.refresh_wait`:
        kube-scheduler sends binds only while it leads, so it most likely just took the Lease
        over), ``None`` once such a read says another holder leads (or without ``asked_at``)."""
        if self.follower is not None and not self.follower.is_leader():
            return self.follower.refresh_wait(asked_at) if asked_at is not None else None
        if not self.health.has_synced():
            return SYNC_POLL
        return max(self._admit_at - time.monotonic(), 0.0) if warm_up else 0.0

    def pod_disruption_budgets(self) -> Sequence[PodDisruptionBudget]:
        """The watched PodDisruptionBudgets (:class:`~app.cluster.pdbs.PDBStore`), or none."""
        return self._pdbs.budgets() if self._pdbs is not None else ()

    def default_selector(self, pod: PodInfo) -> LabelSelector | None:
        """``helper.DefaultSelector`` for ``pod`` over the watched Services, ReplicationControllers,
        ReplicaSets and StatefulSets (:class:`~app.cluster.selectors.SpreadSelectors`), or ``None``
        when no plugin declared ``spread_selectors``."""
        return self._selectors.default_selector(pod) if self._selectors is not None else None

    async def preempt_pod(self, preemptor: PodInfo, node: str, victim: PodInfo) -> Status:
        """On the API executor, as kube-scheduler v1.36.3's ``Executor.PreemptPod``
        (pkg/scheduler/framework/preemption/executor.go): the condition ``DisruptionTarget=True``
        reason ``PreemptionByScheduler`` (message ``<schedulerName>: preempting to accommodate a
        higher priority pod``) patched on ``victim`` unless it has it (``UpdatePodCondition``), then
        its DELETE with its UID as precondition. ``SUCCESS`` once deleted, ``SKIP`` when a call
        found it gone (404), ``ERROR`` with the failure (a failed patch skips the DELETE)."""
        if self.executor is None or self.client is None:
            return Status.error(f"preempting {victim.key()} for {preemptor.key()}: not connected")
        call = partial(self._preempt_pod, self.client, preemptor, node, victim)
        return await asyncio.get_running_loop().run_in_executor(self.executor, call)

    @staticmethod
    def _preempt_pod(client: KubeClient, preemptor: PodInfo, node: str, victim: PodInfo) -> Status:
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod",
            "lastTransitionTime": rfc3339_time(time.time()),
        }
        try:
            client.set_pod_condition(victim.namespace, victim.name, condition)
        except APIError as exc:
            if exc.status == 404:
                log.info("victim %s of %s on %s is already deleted", victim.key(), preemptor.key(), node)
                return Status(Code.SKIP)
            log.warning("could not add DisruptionTarget to %s (preemptor %s): %s", victim.key(), preemptor.key(), exc)
            return Status.error(f"adding DisruptionTarget to {victim.key()}: {exc}")
        try:
            client.delete_pod(victim.namespace, victim.name, victim.uid)  # a 404 is no error there
        except APIError as exc:
            log.warning("preempting %s on %s for %s failed: %s", victim.key(), node, preemptor.key(), exc)
            return Status.error(f"deleting {victim.key()}: {exc}")
        log.info("preempted %s on %s for %s", victim.key(), node, preemptor.key())
        return SUCCESS

    async def clear_nominated_node_name(self, pods: Sequence[PodInfo]) -> Status:
        """On the API executor, ``clearNominatedNodeName`` (executor.go): each pod with a
        ``status.nominatedNodeName`` has it cleared; ``ERROR`` with the failures joined."""
        pods = [p for p in pods if p.nominated_node_name]
        if not pods:
            return SUCCESS
        if self.executor is None or self.client is None:
            return Status.error("clearing nominations: not connected")
        call = partial(self._clear_nominations, self.client, tuple(pods))
        return await asyncio.get_running_loop().run_in_executor(self.executor, call)

    @staticmethod
    def _clear_nominations(client: KubeClient, pods: tuple[PodInfo, ...]) -> Status:
        errors = []
        for pod in pods:
            try:
                client.set_nominated_node(pod.namespace, pod.name, "")
            except APIError as exc:
                errors.append(f"clearing the nomination of {pod.key()}: {exc}")
        return Status.error(", ".join(errors)) if errors else SUCCESS

    def preempted(self, victim: PodInfo, preemptor: PodInfo, node: str, in_memory: bool = False) -> None:
        """The ``Preempted`` Event on ``victim``: :attr:`on_preempted` told."""
        if self.on_preempted is not None:
            self.on_preempted(victim, preemptor, node, in_memory)

    # -- leadership ---------------------------------------------------------------------------------

    def _warm_up(self) -> None:
        if self.guards_capacity:
            self._admit_at = time.monotonic() + self.bind_deadline + WATCH_MARGIN

    def start_warm_up(self) -> None:
        """This process just became a leader (of its own Lease): admit binds only once a Binding
        the previous leader sent can no longer be in flight (:meth:`bind_admission`)."""
        self._warm_up()

    # -- the connection -----------------------------------------------------------------------------

    def connect(
        self,
        client: KubeClient | None = None,
        on_preempted: Callable[[PodInfo, PodInfo, str, bool], None] | None = None,
    ) -> list[Any]:
        """Load credentials (unless ``client`` is given: :func:`cluster_client`) and build the
        background workers that keep the cache current: the reflectors (nodes, pods, and PodGroups,
        PodDisruptionBudgets, the spread selectors' four kinds and the storage kinds when declared),
        the requeuer and the Lease follower (as configured). Returns them, not started: the
        caller's supervisor starts and stops them (:mod:`app.lifecycle`). ``on_preempted``: see
        :attr:`on_preempted`.

        Raises :class:`app.kube.errors.KubeConfigError` when no credentials work. An unreachable
        API server is not an error here: the reflectors retry and ``/readyz`` says why.
        """
        if client is None:
            client = cluster_client(self.settings)
        self.client = client
        self.on_preempted = on_preempted
        s = self.settings
        self.executor = ThreadPoolExecutor(max_workers=s.api_workers, thread_name_prefix="kube-api")
        self._binder = Binder(client, self.cache, self.executor, self._async_bindings(client))
        stores: list[tuple[str, Store]] = [(kind, cache_store(kind, self.cache)) for kind in KINDS]
        if self._podgroups is not None:
            stores.append((PODGROUPS, self._podgroups))
        if self._pdbs is not None:
            stores.append((PDBS, self._pdbs))
        if self._selectors is not None:
            stores.extend(self._selectors.stores.items())
        if self._volumes is not None:
            stores.extend(self._volumes.stores.items())
        if self._namespaces is not None:
            stores.append((NAMESPACES, self._namespaces))
        if self._dra is not None:
            stores.extend(self._dra.stores.items())
        self.reflectors = [
            Reflector(
                kind,
                client,
                store,
                page_size=s.page_size,
                watch_timeout=s.watch_timeout,
                backoff_initial=s.backoff_initial,
                backoff_max=s.backoff_max,
            )
            for kind, store in stores
        ]
        workers: list[Any] = list(self.reflectors)
        self._warm_up()
        if s.requeue_qps > 0:
            self.requeuer = Requeuer(
                self.cache, lambda ns, name, annotations: client.annotate_pod(ns, name, annotations, 5.0), s.requeue_qps
            )
            workers.append(self.requeuer)
        if s.leader_election is not None:
            le = s.leader_election
            self.follower = LeaseFollower(
                le, lambda ns, name: client.get_lease(ns, name, le.retry_period), self._warm_up
            )
            workers.append(self.follower)
        return workers

    def _async_bindings(self, client: KubeClient) -> AsyncBindingClient | None:
        """The event loop's Binding client over ``client``'s credentials (:mod:`app.kube.aio`), at
        most ``cluster.bindConnections`` connections; ``None`` (the API executor sends the Bindings)
        for a configuration with an HTTP proxy or a client that is not a :class:`KubeClient`."""
        from app.kube.aio import binding_client
        from app.kube.client import KubeClient

        if not isinstance(client, KubeClient):
            return None
        self._bindings = binding_client(
            client.configuration, client.auth, self.settings.bind_connections, client.api_client.default_headers
        )
        return self._bindings

    def close(self) -> None:
        """Shut the executor down and close the clients (after the workers stopped)."""
        if self._bindings is not None:
            self._bindings.close()
        if self.executor is not None:
            self.executor.shutdown(wait=False, cancel_futures=True)
        if self.client is not None:
            self.client.close()


def cluster_client(settings: ClusterSettings) -> KubeClient:
    """The API client of ``settings``' credentials (``kubeconfig``/``context``, else in-cluster,
    else the default kubeconfig), pooling a connection for each thread that may call at once
    (:data:`POOL_EXTRA` beside the API workers), so none is opened, used once and discarded
    ("Connection pool is full"). Raises :class:`app.kube.errors.KubeConfigError`."""
    from app.kube.client import KubeClient, load_client

    loaded = load_client(settings.kubeconfig, settings.context, settings.api_workers + POOL_EXTRA)
    return KubeClient(loaded.api_client)


__all__ = [
    "WATCH_MARGIN",
    "ClusterConnection",
    "ClusterSettings",
    "cluster_client",
]

"""The cluster connection of a running service: credentials, the two reflectors, the binder.

Built from the configuration's ``cluster:`` section before the profiles' plugins (which register
pools and pod annotations on :attr:`ClusterRuntime.state`), connected by ``serve``
(:meth:`ClusterRuntime.connect`), never by ``validate`` or ``replay``.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from app.cluster.leader import LEADER, LeaderElectionSettings, LeaseFollower
from app.cluster.podgroups import KIND as PODGROUPS
from app.cluster.podgroups import PodGroupStore
from app.cluster.reflector import Reflector, Sink, state_sink
from app.cluster.requeue import Requeuer
from app.cluster.state import KINDS, ClusterState
from app.framework.interfaces import ReservePlugin
from app.framework.registry import PolicyRule

if TYPE_CHECKING:
    from app.kube.binder import Binder
    from app.kube.client import KubeClient
    from app.observe.events import EventRecorder

log = logging.getLogger(__name__)

#: What the list+watch cache needs from the API server (rendered into the extender's ClusterRole
#: together with the enabled plugins' own rules).
CACHE_RBAC = (
    PolicyRule(("",), ("nodes",), ("list", "watch")),
    PolicyRule(("",), ("pods",), ("list", "watch")),
)
#: What re-queue assistance needs (:mod:`app.cluster.requeue`): annotate pending pods.
REQUEUE_RBAC = PolicyRule(("",), ("pods",), ("patch",))
#: What pod events need (:mod:`app.observe.events`): create Events, patch their series.
EVENTS_RBAC = PolicyRule(("events.k8s.io",), ("events",), ("create", "patch"))


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
    pod_annotations: tuple[str, ...] = field(default_factory=tuple)
    #: follow kube-scheduler's Lease (None: this replica always binds, after its warm-up)
    leader_election: LeaderElectionSettings | None = None
    #: re-queue assistance (:mod:`app.cluster.requeue`): pods patched per second at most; 0: off
    requeue_qps: float = 5.0


#: Added to a binder's deadline before binds are admitted after a start or a takeover: the time
#: for the watch to show a Binding created at the very end of that deadline (seconds).
WATCH_MARGIN = 1.0
#: ``role()`` while binds are not admitted yet on a leader.
WARMING_UP = "warming up"


class ClusterRuntime:
    """:class:`ClusterState` plus, once connected, the API client, reflectors and executor."""

    def __init__(self, settings: ClusterSettings) -> None:
        self.settings = settings
        self.state = ClusterState(
            assumed_ttl=settings.assumed_pod_ttl,
            keep_annotations=settings.pod_annotations,
            stale_after=settings.stale_after,
        )
        self.client: KubeClient | None = None
        self.source = ""
        self.executor: ThreadPoolExecutor | None = None
        self.reflectors: list[Reflector] = []
        self.podgroups: PodGroupStore | None = None
        self.follower: LeaseFollower | None = None
        self.requeuer: Requeuer | None = None
        #: the pod-event recorders started (the service's, and one per standalone scheduler)
        self.recorders: list[EventRecorder] = []
        #: Reserve plugins whose reservations hold cluster-wide, whichever profile binds: a
        #: resource pool's slots are the same for every profile (``NodeResourcePool`` registers
        #: itself), so a binder in a profile without the pool's filter still cannot over-commit it
        self.cluster_reserve: list[ReservePlugin] = []
        #: the longest bind deadline of the binders (seconds): how long a Binding this process's
        #: predecessor (or the previous leader) sent may still be in flight
        self.bind_deadline = 0.0
        self._admit_at = 0.0

    def hold_binds(self, deadline: float) -> None:
        """Register a binder whose Bindings may stay in flight for ``deadline`` seconds (call
        before :meth:`connect`): binds are admitted that long after a start or a takeover."""
        self.bind_deadline = max(self.bind_deadline, deadline)

    def _warm_up(self) -> None:
        self._admit_at = time.monotonic() + self.bind_deadline + WATCH_MARGIN

    def start_warm_up(self) -> None:
        """This process just became a leader (of its own Lease): admit binds only once a Binding
        the previous leader sent can no longer be in flight (:meth:`bind_admission`)."""
        self._warm_up()

    def bind_admission(self) -> str | None:
        """Why a bind may not reserve anything now, or ``None`` when it may.

        After a start or a takeover, binds wait until the watch has synced and one whole bind
        deadline (plus :data:`WATCH_MARGIN`) has passed: a Binding an earlier process or the
        previous leader sent can land at the API server until then, and counting the pod only
        once the watch shows it is what keeps a restart from over-committing a node. With
        ``leader_election``, only the leader binds. Until admitted, bind answers ``Error``
        (kube-scheduler retries the pod with backoff); filter keeps answering.
        """
        if self.follower is not None and not self.follower.is_leader():
            s = self.follower.settings
            holder = self.follower.holder or "nobody"
            return (
                f"this extender's kube-scheduler ({s.identity}) does not hold the Lease "
                f"{s.lease_namespace}/{s.lease_name} (held by {holder}): only the leader's extender binds"
            )
        if not self.state.has_synced():
            return "the extender's cluster state has not synced with the API server yet"
        wait = self._admit_at - time.monotonic()
        if wait > 0:
            return (
                f"warming up: binds are admitted in {wait:.1f}s, once a Binding sent before this "
                f"extender started or took over can no longer be in flight ({self.bind_deadline:g}s bind deadline)"
            )
        return None

    def role(self) -> str:
        """``leader``, ``warming up`` or ``follower`` (``/readyz``)."""
        if self.follower is not None and not self.follower.is_leader():
            return self.follower.role()
        return LEADER if self.bind_admission() is None else WARMING_UP

    def watch_podgroups(self) -> PodGroupStore:
        """Watch PodGroups too (call before :meth:`connect`); returns their store (one per runtime)."""
        if self.podgroups is None:
            self.podgroups = PodGroupStore()
        return self.podgroups

    def connect(self, client: KubeClient | None = None) -> None:
        """Load credentials (unless ``client`` is given) and start the reflectors.

        Raises :class:`app.kube.errors.KubeConfigError` when no credentials work. An unreachable
        API server is not an error here: the reflectors retry and ``/readyz`` says why.
        """
        if client is None:
            from app.kube.client import KubeClient, load_client

            # one pooled connection per API worker: the binds' Binding calls run concurrently
            loaded = load_client(self.settings.kubeconfig, self.settings.context, self.settings.api_workers)
            client, self.source = KubeClient(loaded.api_client), loaded.source
        self.client = client
        s = self.settings
        self.executor = ThreadPoolExecutor(max_workers=s.api_workers, thread_name_prefix="kube-api")
        sinks: list[tuple[str, Sink]] = [(kind, state_sink(kind, self.state)) for kind in KINDS]
        if self.podgroups is not None:
            sinks.append((PODGROUPS, self.podgroups))
        self.reflectors = [
            Reflector(
                kind,
                client,
                sink,
                page_size=s.page_size,
                watch_timeout=s.watch_timeout,
                backoff_initial=s.backoff_initial,
                backoff_max=s.backoff_max,
            )
            for kind, sink in sinks
        ]
        for reflector in self.reflectors:
            reflector.start()
        self._warm_up()
        log.info("cluster state: list+watch of nodes and pods started (%s)", self.source or "given client")
        if s.requeue_qps > 0:
            self.requeuer = Requeuer(
                self.state, lambda ns, name, annotations: client.annotate_pod(ns, name, annotations, 5.0), s.requeue_qps
            )
            self.requeuer.start()
        if s.leader_election is not None:
            le = s.leader_election
            self.follower = LeaseFollower(
                le, lambda ns, name: client.get_lease(ns, name, le.retry_period), self._warm_up
            )
            self.follower.start()

    def record_events(
        self, qps: float, burst: int, finish_time: float, reporting_controller: str | None = None
    ) -> EventRecorder:
        """Start posting pod events (:mod:`app.observe.events`) through this runtime's client, as
        ``reporting_controller`` (default: the extender's); returns the recorder (``observe``: the decision listener,
        ``post``: one event). Raises ``RuntimeError`` before :meth:`connect`."""
        client = self.client
        if client is None:
            raise RuntimeError("the cluster connection is not started (serve connects it)")
        from app.observe.events import REPORTING_CONTROLLER, EventRecorder

        controller = reporting_controller or REPORTING_CONTROLLER
        recorder = EventRecorder(
            client.create_event, client.patch_event, qps, burst, finish_time, reporting_controller=controller
        )
        recorder.start()
        self.recorders.append(recorder)
        return recorder

    def binder(self, timeout: float) -> Binder:
        """A :class:`~app.kube.binder.Binder` bounded by ``timeout`` seconds.

        Raises ``RuntimeError`` before :meth:`connect`.
        """
        if self.client is None or self.executor is None:
            raise RuntimeError("the cluster connection is not started (serve connects it)")
        from app.kube.binder import Binder

        return Binder(self.client, self.state, self.executor, timeout)

    def stop(self) -> None:
        """Stop the reflectors and the executor; close the client."""
        for reflector in self.reflectors:
            reflector.stop()
        if self.follower is not None:
            self.follower.stop()
        if self.requeuer is not None:
            self.requeuer.stop()
        for recorder in self.recorders:
            recorder.stop()
        if self.executor is not None:
            self.executor.shutdown(wait=False, cancel_futures=True)
        if self.client is not None:
            self.client.close()


__all__ = [
    "CACHE_RBAC",
    "EVENTS_RBAC",
    "REQUEUE_RBAC",
    "WARMING_UP",
    "WATCH_MARGIN",
    "ClusterRuntime",
    "ClusterSettings",
]

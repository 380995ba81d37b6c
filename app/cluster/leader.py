"""Which replica may bind: it follows the Lease kube-scheduler's own leader election holds.

kube-scheduler elects its leader with a ``coordination.k8s.io/v1`` Lease (``kube-system/
kube-scheduler`` by default; client-go ``tools/leaderelection`` with ``resourcelock.LeaseLock``),
its identity ``<hostname>_<uuid>`` (component-base ``leaderelection``: ``id := hostname + "_" +
string(uuid.NewUUID())``). Only the leader schedules, so only the extender beside it receives
binds. Rather than elect itself (and risk disagreeing with its kube-scheduler), the extender
*follows* that Lease: it is the leader while the holder is its own kube-scheduler, whose hostname
it shares (a static pod with ``hostNetwork``, or a sidecar in the second scheduler's pod).

Timing follows client-go's ``LeaderElector``: the Lease is read every ``retryPeriod`` (2 s), and
the holder counts as leading while its record was seen to change within ``renewDeadline`` (10 s),
measured on this process's clock (client-go's ``observedTime``), as the leader itself gives up
after failing to renew for that long. ``leaseDuration`` (15 s) is what the Lease says when it has
``spec.leaseDurationSeconds``. A takeover starts the warm-up of
:meth:`app.cluster.connection.ClusterConnection.bind_admission`.

The standalone scheduler's replicas elect their own leader instead (:class:`LeaseElector`,
client-go's ``LeaderElector`` with ``ReleaseOnCancel`` as kube-scheduler sets it: a stopped leader
hands its Lease over at once). :class:`Leadership` gathers what a replica's Leases say, for
``/readyz`` and the metrics: only a Lease's holder reports ``leader``.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from app.kube.errors import APIError
from app.kube.timefmt import micro_time
from app.lifecycle import PeriodicWorker

log = logging.getLogger(__name__)

#: reads of the Lease that binds ask for (:meth:`LeaseFollower.refresh_wait`) begin at least this
#: many seconds apart (a standby sent binds by mistake reads it at most 10 times a second)
MIN_REFRESH = 0.1
#: how often a bind waiting for that read looks again (seconds)
REFRESH_POLL = 0.005


@dataclass(frozen=True)
class LeaderElectionSettings:
    """Which Lease to follow and how (seconds). ``identity``: this replica's kube-scheduler's
    hostname (the part of its holder identity before ``_``)."""

    lease_name: str = "kube-scheduler"
    lease_namespace: str = "kube-system"
    identity: str = field(default_factory=socket.gethostname)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


class _LeaseSpec(msgspec.Struct, rename="camel"):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int | None = None


class _LeaseMeta(msgspec.Struct, rename="camel"):
    resource_version: str | None = None


class _Lease(msgspec.Struct):
    metadata: _LeaseMeta | None = None
    spec: _LeaseSpec | None = None


_LEASE = msgspec.json.Decoder(_Lease)

#: The roles ``/readyz`` shows (:meth:`Leadership.role`): this replica holds the Lease and acts
#: (binds, schedules); holds it but does not act yet (the cluster state has not synced, or the
#: warm-up after a start or a takeover); does not hold it (another replica's acts).
LEADER, WARMING_UP, STANDBY = "leader", "leader (warming up)", "standby"


class LeaseFollower(PeriodicWorker):
    """Follows one Lease from a daemon thread (see the module doc): a
    :class:`~app.lifecycle.PeriodicWorker` named ``lease-follower`` reading it every
    ``retry_period`` seconds.

    kube-scheduler sends binds only while it leads, so a bind arriving while the last read says
    another holder (or nobody) leads means the Lease most likely changed since: kube-scheduler took
    it over within the last ``retryPeriod`` (a start, a failover). Such a bind asks for a read at once
    (:meth:`LeaseFollower.refresh_wait`) and is judged by the first read begun after it asked,
    instead of being refused by a read up to 2 s old: at a start, kube-scheduler's first pods were
    otherwise all refused (and retried with backoff, each refusal a pod status write and an Event at
    the API server). The binds waiting share each read; reads asked for so are at least
    :data:`MIN_REFRESH` apart.

    ``read(namespace, name)`` returns the Lease's raw JSON, ``None`` when it does not exist, and
    raises :class:`APIError`. ``on_takeover()`` is called (from the thread) each time this replica
    becomes the leader. ``clock``: monotonic seconds (tests pass their own). A failed read, or a
    Lease that does not exist, is the worker's ``error`` until a read finds it again.
    """

    def __init__(
        self,
        settings: LeaderElectionSettings,
        read: Callable[[str, str], bytes | None],
        on_takeover: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__("lease-follower", settings.retry_period)
        self.settings = settings
        self._read = read
        self._on_takeover = on_takeover
        self._clock = clock
        self._record: tuple[str, str | None] | None = None  # (holder, renewTime) last seen
        self._observed = 0.0  # when the record last changed, on our clock
        self._leading = False
        self.holder = ""
        self.takeovers = 0
        self._read_started = float("-inf")  # when the last completed poll began, on our clock
        self._wake = threading.Event()  # a read is wanted now (:meth:`refresh_wait`)

    def step(self) -> None:
        """One :meth:`poll` (what the thread runs every ``retryPeriod``)."""
        self.poll()

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` until the next poll, or less when :meth:`refresh_wait` asks for one
        (at least :data:`MIN_REFRESH` after the last read began), or until stop is asked; returns
        ``True`` when stop was asked."""
        if self._wake.wait(seconds) and not self.stopping.is_set():
            self._wake.clear()
            soonest = self._read_started + MIN_REFRESH - self._clock()
            if soonest > 0:
                self.stopping.wait(min(soonest, MIN_REFRESH))
        return self.stopping.is_set()

    def stop(self) -> None:
        super().stop()
        self._wake.set()

    def refresh_wait(self, asked_at: float) -> float | None:
        """For a bind that finds this replica not leading since ``asked_at`` (this follower's
        clock; see the module doc): ``None`` when a read begun at or after ``asked_at`` has
        completed (its verdict stands), else such a read is asked for and the seconds to look
        again are returned. Any thread."""
        if self._read_started >= asked_at:
            return None
        self._wake.set()
        return REFRESH_POLL

    def poll(self) -> None:
        """Read the Lease once and update :meth:`is_leader` (calls ``on_takeover`` on a takeover)."""
        s = self.settings
        started = self._clock()
        try:
            raw = self._read(s.lease_namespace, s.lease_name)
            spec = (_LEASE.decode(raw).spec if raw is not None else None) or _LeaseSpec()
            if raw is None:
                self.failed(f"Lease {s.lease_namespace}/{s.lease_name} does not exist")
            else:
                self.recovered()
        except (APIError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            if self.failed(f"reading Lease {s.lease_namespace}/{s.lease_name}: {exc}"):
                log.warning("%s", self.error)  # once per distinct error, not every retryPeriod
            spec = None
        now = self._clock()
        if spec is not None:
            record = (spec.holder_identity or "", spec.renew_time)
            if record != self._record:
                self._record, self._observed = record, now
            self.holder = record[0]
        # a failed read keeps the last record: leadership lapses only once renewDeadline passes
        # without seeing it renewed, as the holder itself would give up (client-go)
        leading = (
            self._record is not None
            and self.holder.split("_", 1)[0] == s.identity
            and now - self._observed < s.renew_deadline
        )
        if leading and not self._leading:
            self.takeovers += 1
            log.info("Lease %s/%s: %s leads: this replica binds now", s.lease_namespace, s.lease_name, self.holder)
            self._on_takeover()
        elif self._leading and not leading:
            log.info("Lease %s/%s: %s leads: this replica follows", s.lease_namespace, s.lease_name, self.holder)
        self._leading = leading
        self._read_started = started

    def is_leader(self) -> bool:
        """This replica's kube-scheduler holds the Lease (as of the last read)."""
        return self._leading

    def role(self) -> str:
        """:data:`LEADER` or :data:`STANDBY` (whether binds are admitted yet: :class:`Leadership`)."""
        return LEADER if self._leading else STANDBY

    @property
    def lease(self) -> str:
        """``<namespace>/<name>`` of the Lease followed."""
        return f"{self.settings.lease_namespace}/{self.settings.lease_name}"


class LeaseElector(PeriodicWorker):
    """Elects this process the holder of a Lease, as client-go's ``LeaderElector``
    (k8s.io/client-go/tools/leaderelection/leaderelection.go, ``tryAcquireOrRenew`` and
    ``release``, with ``resourcelock.LeaseLock``), for the standalone scheduler's replicas.

    Every ``retry_period`` seconds: read the Lease; create it when it does not exist; when another
    identity holds it and its record was seen to change less than its ``leaseDurationSeconds``
    ago (on this process's clock: client-go's ``observedTime``), wait; otherwise write ourselves
    as the holder (``renewTime`` now; ``acquireTime`` and ``leaseTransitions`` + 1 on a change of
    holder) with the read ``resourceVersion`` as precondition, so two candidates never both win.
    A Lease whose ``holderIdentity`` is empty (released) is taken at once. The leader stops
    leading when it has not renewed for ``renew_deadline`` seconds.

    Stopped while leading, it releases the Lease (``ReleaseOnCancel``, which kube-scheduler sets:
    :meth:`release`) once the work the Lease guards has ended (``guarded_done()``; a scheduler's
    binding cycles), so the next candidate takes it at its next ``retry_period`` instead of after
    ``leaseDuration``; while that work may still be running the Lease is left to expire.

    ``read`` as for :class:`LeaseFollower`; ``create(namespace, body)`` and ``replace(namespace,
    name, body)`` raise :class:`APIError` (409 when another write came first). ``identity``:
    ``<hostname>_<uuid>`` as kube-scheduler's. ``on_start``/``on_stop`` are called from the thread,
    a :class:`~app.lifecycle.PeriodicWorker` named ``lease-elector`` stepping every
    ``retry_period`` seconds. A failed Lease read or write is the worker's ``error`` until a step
    succeeds. ``takeovers``: how many times this process became the holder (its first acquisition
    included).
    """

    def __init__(
        self,
        settings: LeaderElectionSettings,
        read: Callable[[str, str], bytes | None],
        create: Callable[[str, dict[str, Any]], None],
        replace: Callable[[str, str, dict[str, Any]], None],
        on_start: Callable[[], None] = lambda: None,
        on_stop: Callable[[], None] = lambda: None,
        identity: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        guarded_done: Callable[[], bool] = lambda: True,
    ) -> None:
        super().__init__("lease-elector", settings.retry_period)
        self.settings = settings
        self.identity = identity or f"{settings.identity}_{uuid.uuid4()}"
        self._read, self._create, self._replace = read, create, replace
        self._on_start, self._on_stop = on_start, on_stop
        self._clock, self._wall = clock, wall
        #: whether the work the Lease guards has ended (checked before :meth:`release`)
        self.guarded_done = guarded_done
        self._record: tuple[str, str | None] | None = None
        self._observed = 0.0
        self._renewed = 0.0
        self._leading = False
        self.holder = ""
        self.takeovers = 0

    @property
    def lease(self) -> str:
        """``<namespace>/<name>`` of the Lease elected on."""
        return f"{self.settings.lease_namespace}/{self.settings.lease_name}"

    def run(self) -> None:
        """Step every ``retry_period`` until stopped, then :meth:`release` (``renew`` returning
        with ``ReleaseOnCancel``)."""
        super().run()
        self.release()

    def is_leader(self) -> bool:
        """This process holds the Lease (renewed within ``renew_deadline``)."""
        return self._leading

    def release(self) -> bool:
        """Give the Lease up if this process holds it, as client-go's ``release``: the record
        written with the read ``resourceVersion`` as precondition, ``holderIdentity`` empty,
        ``leaseDurationSeconds`` 1, ``acquireTime`` and ``renewTime`` now, ``leaseTransitions``
        kept. Not while the guarded work may still run (``guarded_done()`` false), nor when the
        Lease names another holder by now. Returns whether the Lease is not (or no longer) held
        by this process; a failed write is logged and leaves it to expire."""
        if not self._leading:
            return True
        s = self.settings
        if not self.guarded_done():
            log.warning(
                "Lease %s: not released: the work it guards may still be running; it expires %gs after the "
                "last renewal",
                self.lease,
                s.lease_duration,
            )
            return False
        try:
            raw = self._read(s.lease_namespace, s.lease_name)
            lease = _LEASE.decode(raw) if raw is not None else None
            spec = (lease.spec if lease is not None else None) or _LeaseSpec()
            if lease is None or spec.holder_identity != self.identity:
                holder = spec.holder_identity or "nobody"
                self._stopped_leading("Lease %s: held by %s by now: nothing to release", holder)
                return True
            now = micro_time(self._wall())
            version = lease.metadata.resource_version if lease.metadata is not None else None
            body = self._body(version, now, spec.lease_transitions or 0)
            body["spec"] |= {"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": now}
            self._replace(s.lease_namespace, s.lease_name, body)
        except (APIError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            log.error("Lease %s: failed to release: %s", self.lease, exc)
            return False
        self.holder = ""
        self._stopped_leading("Lease %s: released by %s", self.identity)
        return True

    def _stopped_leading(self, message: str, detail: str, level: int = logging.INFO) -> None:
        log.log(level, message, self.lease, detail)
        self._leading = False
        self._on_stop()

    def step(self) -> None:
        """One ``tryAcquireOrRenew``, then start or stop leading accordingly."""
        now = self._clock()
        errors = self.errors
        acquired = self._try_acquire_or_renew(now)
        if self.errors == errors:  # the Lease was read (and written) without an error
            self.recovered()
        if acquired:
            self._renewed = now
        leading = acquired or (self._leading and now - self._renewed < self.settings.renew_deadline)
        if leading and not self._leading:
            log.info("Lease %s: %s is the leader", self.lease, self.identity)
            self._leading = True
            self.takeovers += 1
            self._on_start()
        elif self._leading and not leading:
            detail = f"{self.settings.renew_deadline:.0f}s"
            self._stopped_leading("Lease %s: not renewed for %s: stopped leading", detail, logging.WARNING)

    def _try_acquire_or_renew(self, now: float) -> bool:
        s = self.settings
        try:
            raw = self._read(s.lease_namespace, s.lease_name)
            if raw is None:
                self._create(s.lease_namespace, self._body(None, None, 0))
                self.holder = self.identity
                return True
            lease = _LEASE.decode(raw)
        except (APIError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            self._error(f"Lease {self.lease}: {exc}")
            return False
        spec = lease.spec or _LeaseSpec()
        record = (spec.holder_identity or "", spec.renew_time)
        if record != self._record:
            self._record, self._observed = record, now
        self.holder = record[0]
        duration = spec.lease_duration_seconds or s.lease_duration
        if self.holder and self.holder != self.identity and now - self._observed < duration:
            return False  # held by another candidate, renewed recently
        ours = self.holder == self.identity
        transitions = (spec.lease_transitions or 0) + (0 if ours else 1)
        version = lease.metadata.resource_version if lease.metadata is not None else None
        body = self._body(version, spec.acquire_time if ours else None, transitions)
        try:
            self._replace(s.lease_namespace, s.lease_name, body)
        except APIError as exc:
            self._error(f"Lease {self.lease}: {exc}")
            return False
        self.holder = self.identity
        self._record = None  # our own write: observed anew on the next read
        return True

    def _body(self, resource_version: str | None, acquire_time: str | None, transitions: int) -> dict[str, Any]:
        s = self.settings
        now = micro_time(self._wall())
        meta: dict[str, Any] = {"name": s.lease_name, "namespace": s.lease_namespace}
        if resource_version:
            meta["resourceVersion"] = resource_version
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": meta,
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": int(s.lease_duration),
                "acquireTime": acquire_time or now,
                "renewTime": now,
                "leaseTransitions": transitions,
            },
        }

    def _error(self, error: str) -> None:
        if self.failed(error):  # once per distinct error, not every retryPeriod
            log.warning("%s", error)


@dataclass(frozen=True)
class LeaseReport:
    """One Lease as this replica sees it: ``lease`` (``<namespace>/<name>``), its ``holder`` as
    last read, this replica's ``role`` for it (:data:`LEADER`, :data:`WARMING_UP` or
    :data:`STANDBY`) and how many times it became the holder (``takeovers``)."""

    lease: str
    holder: str
    role: str
    takeovers: int


class _Elected(Protocol):
    """A :class:`LeaseFollower` or :class:`LeaseElector` as :class:`Leadership` reads it."""

    holder: str
    takeovers: int

    @property
    def lease(self) -> str: ...

    def is_leader(self) -> bool: ...


class Leadership:
    """What this replica's Leases say, as ``/readyz`` (``role``, ``leases``) and the metrics
    (``scheduler_extender_is_leader``, ``scheduler_extender_takeovers_total``) report it.

    Each Lease (``leases``, in the order reported) comes with the ``admission()`` of the work it
    guards (why that work may not act yet, or ``None``: the bind verb's
    :meth:`~app.cluster.connection.ClusterConnection.bind_admission` for kube-scheduler's Lease, a
    standalone scheduler's own admission for its Lease), so the role
    says what the replica does: :data:`STANDBY` while another holds the Lease, :data:`WARMING_UP`
    while it holds the Lease but its work waits (the cluster state's sync, the warm-up after a
    start or a takeover), :data:`LEADER` once it acts. Without any Lease (no election) the replica
    acts alone: :data:`LEADER` once ``admission()`` (given here) admits."""

    def __init__(
        self,
        admission: Callable[[], str | None] = lambda: None,
        leases: Sequence[tuple[_Elected, Callable[[], str | None]]] = (),
    ) -> None:
        self._admission = admission
        self._leases = tuple(leases)

    @property
    def elected(self) -> bool:
        """Whether any Lease is followed or elected on."""
        return bool(self._leases)

    def leases(self) -> list[LeaseReport]:
        """Each Lease, in the order added."""
        return [
            LeaseReport(lease.lease, lease.holder, _role(lease.is_leader(), admission), lease.takeovers)
            for lease, admission in self._leases
        ]

    def role(self) -> str:
        """:data:`STANDBY` when this replica holds none of its Leases; :data:`WARMING_UP` when it
        holds some and the work of one of them waits; else :data:`LEADER` (see the class doc)."""
        if not self._leases:
            return _role(True, self._admission)
        held = [r.role for r in self.leases() if r.role != STANDBY]
        if not held:
            return STANDBY
        return WARMING_UP if WARMING_UP in held else LEADER


def _role(leading: bool, admission: Callable[[], str | None]) -> str:
    if not leading:
        return STANDBY
    return LEADER if admission() is None else WARMING_UP


__all__ = [
    "LEADER",
    "STANDBY",
    "WARMING_UP",
    "LeaderElectionSettings",
    "Leadership",
    "LeaseElector",
    "LeaseFollower",
    "LeaseReport",
]

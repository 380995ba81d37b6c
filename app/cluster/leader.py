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
:meth:`app.cluster.runtime.ClusterRuntime.bind_admission`.
"""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from app.kube.errors import APIError
from app.kube.timefmt import micro_time
from app.lifecycle import PeriodicWorker

log = logging.getLogger(__name__)


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

#: ``role()`` values, as ``/readyz`` shows them.
LEADER, FOLLOWER = "leader", "follower"


class LeaseFollower(PeriodicWorker):
    """Follows one Lease from a daemon thread (see the module doc): a
    :class:`~app.lifecycle.PeriodicWorker` named ``lease-follower`` reading it every
    ``retry_period`` seconds.

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

    def step(self) -> None:
        """One :meth:`poll` (what the thread runs every ``retryPeriod``)."""
        self.poll()

    def poll(self) -> None:
        """Read the Lease once and update :meth:`is_leader` (calls ``on_takeover`` on a takeover)."""
        s = self.settings
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

    def is_leader(self) -> bool:
        """This replica's kube-scheduler holds the Lease (as of the last read)."""
        return self._leading

    def role(self) -> str:
        """:data:`LEADER` or :data:`FOLLOWER`."""
        return LEADER if self._leading else FOLLOWER


class LeaseElector(PeriodicWorker):
    """Elects this process the holder of a Lease, as client-go's ``LeaderElector``
    (k8s.io/client-go/tools/leaderelection/leaderelection.go, ``tryAcquireOrRenew``, with
    ``resourcelock.LeaseLock``), for the standalone scheduler's replicas.

    Every ``retry_period`` seconds: read the Lease; create it when it does not exist; when another
    identity holds it and its record was seen to change less than ``lease_duration`` ago (on this
    process's clock: client-go's ``observedTime``), wait; otherwise write ourselves as the holder
    (``renewTime`` now; ``acquireTime`` and ``leaseTransitions`` + 1 on a change of holder) with the
    read ``resourceVersion`` as precondition, so two candidates never both win. The leader stops
    leading when it has not renewed for ``renew_deadline`` seconds. ``read`` as for
    :class:`LeaseFollower`; ``create(namespace, body)`` and ``replace(namespace, name, body)``
    raise :class:`APIError` (409 when another write came first). ``identity``: ``<hostname>_<uuid>``
    as kube-scheduler's. ``on_start``/``on_stop`` are called from the thread, a
    :class:`~app.lifecycle.PeriodicWorker` named ``lease-elector`` stepping every ``retry_period``
    seconds. A failed Lease read or write is the worker's ``error`` until a step succeeds.
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
    ) -> None:
        super().__init__("lease-elector", settings.retry_period)
        self.settings = settings
        self.identity = identity or f"{settings.identity}_{uuid.uuid4()}"
        self._read, self._create, self._replace = read, create, replace
        self._on_start, self._on_stop = on_start, on_stop
        self._clock, self._wall = clock, wall
        self._record: tuple[str, str | None] | None = None
        self._observed = 0.0
        self._renewed = 0.0
        self._leading = False
        self.holder = ""

    def stop(self) -> None:
        """Stop electing (the Lease is left to expire, as client-go without ``ReleaseOnCancel``);
        does not wait for a step in progress (see :meth:`join`)."""
        super().stop()

    def is_leader(self) -> bool:
        """This process holds the Lease (renewed within ``renew_deadline``)."""
        return self._leading

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
            log.info(
                "Lease %s/%s: %s is the leader", self.settings.lease_namespace, self.settings.lease_name, self.identity
            )
            self._leading = True
            self._on_start()
        elif self._leading and not leading:
            log.warning(
                "Lease %s/%s: not renewed for %.0fs: stopped leading",
                self.settings.lease_namespace,
                self.settings.lease_name,
                self.settings.renew_deadline,
            )
            self._leading = False
            self._on_stop()

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
            self._error(f"Lease {s.lease_namespace}/{s.lease_name}: {exc}")
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
            self._error(f"Lease {s.lease_namespace}/{s.lease_name}: {exc}")
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


__all__ = ["FOLLOWER", "LEADER", "LeaderElectionSettings", "LeaseElector", "LeaseFollower"]

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
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from app.kube.errors import APIError

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
    renew_time: str | None = None
    lease_transitions: int | None = None


class _Lease(msgspec.Struct):
    spec: _LeaseSpec | None = None


_LEASE = msgspec.json.Decoder(_Lease)

#: ``role()`` values, as ``/readyz`` shows them.
LEADER, FOLLOWER = "leader", "follower"


class LeaseFollower:
    """Follows one Lease from a daemon thread (see the module doc).

    ``read(namespace, name)`` returns the Lease's raw JSON, ``None`` when it does not exist, and
    raises :class:`APIError`. ``on_takeover()`` is called (from the thread) each time this replica
    becomes the leader. ``clock``: monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        settings: LeaderElectionSettings,
        read: Callable[[str, str], bytes | None],
        on_takeover: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._read = read
        self._on_takeover = on_takeover
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._record: tuple[str, str | None] | None = None  # (holder, renewTime) last seen
        self._observed = 0.0  # when the record last changed, on our clock
        self._leading = False
        self.holder = ""
        self.takeovers = 0
        self.last_error = ""

    def start(self) -> None:
        """Poll the Lease every ``retryPeriod`` in a daemon thread."""
        self._thread = threading.Thread(target=self._run, name="lease-follower", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the polling thread."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.poll()
            self._stop.wait(self.settings.retry_period)

    def poll(self) -> None:
        """Read the Lease once and update :meth:`is_leader` (calls ``on_takeover`` on a takeover)."""
        s = self.settings
        try:
            raw = self._read(s.lease_namespace, s.lease_name)
            spec = (_LEASE.decode(raw).spec if raw is not None else None) or _LeaseSpec()
            self.last_error = "" if raw is not None else f"Lease {s.lease_namespace}/{s.lease_name} does not exist"
        except (APIError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            error = f"reading Lease {s.lease_namespace}/{s.lease_name}: {exc}"
            if error != self.last_error:  # once per distinct error, not every retryPeriod
                log.warning("%s", error)
            self.last_error = error
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


__all__ = ["FOLLOWER", "LEADER", "LeaderElectionSettings", "LeaseFollower"]

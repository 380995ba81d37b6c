"""The sync health of the watched kinds: what ``/readyz``, the metrics and bind admission read.

Each kind a reflector lists and watches into the cache or a store the cluster state counts
(nodes, pods, and the kinds :meth:`SyncHealth.track_kind` adds: namespaces, the storage kinds)
reports here, as client-go's ``Reflector`` feeds its informer's ``HasSynced``
(k8s.io/client-go/tools/cache/reflector.go, shared_informer.go): synced once a list completed,
failing since the first error of a list or watch that has not worked since. Nothing is scheduled
or bound before every kind synced (kube-scheduler's ``WaitForCacheSync``), and the cluster state
is not ready while one kind has failed for longer than ``stale_after``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

#: The kinds every cluster state watches (into :class:`~app.cluster.cache.Cache`).
KINDS = ("nodes", "pods")


@dataclass
class _KindState:
    synced: bool = False
    #: monotonic time since when list/watch has been failing; ``None`` while connected
    failing_since: float | None = None
    last_error: str = ""
    #: monotonic time of the last completed list or working watch; ``None`` before the first
    ok_at: float | None = None
    relists: int = 0
    watch_restarts: int = 0
    errors: int = 0


class SyncHealth:
    """Per watched kind: synced, failing since, the last error, and the reflector's counters;
    thread-safe (written by the reflectors' threads).

    ``stale_after``: seconds of failing list/watch after which :meth:`ready` reports not ready.
    ``clock``: a monotonic clock in seconds (tests pass their own). The kinds are :data:`KINDS`
    and those :meth:`track_kind` adds; the methods taking a ``kind`` raise ``KeyError`` for
    another. Calls no other object while holding its lock.
    """

    def __init__(self, stale_after: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.stale_after = stale_after
        self._clock = clock
        self._lock = threading.Lock()
        self._kinds = {kind: _KindState() for kind in KINDS}

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every kind counted, in the order added."""
        with self._lock:
            return tuple(self._kinds)

    def track_kind(self, kind: str) -> None:
        """Count ``kind``'s list and watch as nodes' and pods' (the namespaces or storage kinds a
        plugin needs): :meth:`has_synced` and :meth:`ready` wait for it too."""
        with self._lock:
            self._kinds.setdefault(kind, _KindState())

    # -- written by the reflectors (the Store protocol's health half) --------------------------------

    def mark_synced(self, kind: str) -> None:
        """``kind`` completed a list."""
        with self._lock:
            state = self._kinds[kind]
            if not state.synced:
                log.info("cluster state: %s synced", kind)
            state.synced = True
            state.failing_since = None
            state.ok_at = self._clock()

    def mark_ok(self, kind: str) -> None:
        """``kind``'s list or watch is working."""
        with self._lock:
            state = self._kinds[kind]
            state.failing_since = None
            state.ok_at = self._clock()

    def mark_failing(self, kind: str, error: str) -> None:
        """``kind``'s list or watch failed with ``error``."""
        with self._lock:
            state = self._kinds[kind]
            state.errors += 1
            state.last_error = error
            if state.failing_since is None:
                state.failing_since = self._clock()

    def count(self, kind: str, what: str) -> None:
        """Count a ``relist`` or a ``watch_restart`` of ``kind`` (for metrics)."""
        with self._lock:
            state = self._kinds[kind]
            if what == "relist":
                state.relists += 1
            else:
                state.watch_restarts += 1

    # -- read by /readyz, the metrics, bind admission and the cache's snapshots ----------------------

    def has_synced(self) -> bool:
        """Whether every kind completed its first list (``HasSynced``)."""
        with self._lock:
            return all(s.synced for s in self._kinds.values())

    def ready(self) -> tuple[bool, str]:
        """``(ready, reason)``: synced, and no reflector failing for longer than ``stale_after``;
        ``reason`` is ``/readyz``'s ``cluster`` text (``synced`` when ready)."""
        now = self._clock()
        with self._lock:
            for kind, state in self._kinds.items():
                if not state.synced:
                    detail = f": {state.last_error}" if state.last_error else ""
                    return False, f"{kind} have not synced yet{detail}"
                if state.failing_since is not None and now - state.failing_since > self.stale_after:
                    return False, (
                        f"{kind} list/watch has failed for {now - state.failing_since:.0f}s "
                        f"(cache may be stale): {state.last_error}"
                    )
        return True, "synced"

    def stats(self) -> dict[str, float]:
        """For metrics, per kind: ``<kind>_synced`` (0 or 1), ``_since_ok`` (seconds since the last
        completed list or working watch, -1 before the first), ``_relists``, ``_watch_restarts``
        and ``_errors``."""
        with self._lock:
            out: dict[str, float] = {}
            now = self._clock()
            for kind, state in self._kinds.items():
                out[f"{kind}_synced"] = 1 if state.synced else 0
                out[f"{kind}_since_ok"] = now - state.ok_at if state.ok_at is not None else -1
                out[f"{kind}_relists"] = state.relists
                out[f"{kind}_watch_restarts"] = state.watch_restarts
                out[f"{kind}_errors"] = state.errors
            return out


__all__ = ["KINDS", "SyncHealth"]

"""Re-queue assistance: make kube-scheduler retry the pods this extender rejected everywhere, as soon
as capacity may have been freed, instead of when a cluster event or the 5-minute flush happens to
move them.

kube-scheduler parks a pod that no node fits in its unschedulable pool and moves it back only on a
cluster event that a queueing hint of one of its rejector plugins matches, or after
``podMaxInUnschedulablePodsDuration`` (5 minutes) (``pkg/scheduler/internal/queue/
scheduling_queue.go``; kubernetes#122019: extender rejections). Some of what frees room here is no
such event: an assumed pod's reservation expiring or being forgotten in this service's ledger, or
a pod whose deletion kube-scheduler filed under a hint that does not match. What v1.30 reacts to
for any pod is an *update of the pending pod itself*: ``PriorityQueue.Update`` moves a pod whose
object changed beyond status and metadata bookkeeping (``isPodUpdated``) out of the unschedulable
pool into the active or backoff queue. So when the cluster events report freed capacity
(:attr:`~app.cluster.events.ClusterEvents.freed_generation`: a pod deleted or gone terminal, a
node added or changed, a reservation forgotten or expired), the
:class:`Requeuer` patches each tracked pod's annotation :data:`ANNOTATION` with the time, at most
``qps`` pods per second, and forgets it (a new rejection tracks it again).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from app.cluster.cache import Cache
from app.kube.errors import APIError
from app.kube.timefmt import micro_time
from app.lifecycle import ThreadWorker

log = logging.getLogger(__name__)

#: The annotation whose change re-queues a pod (value: the time of the request, RFC 3339 with
#: microseconds, as :func:`~app.kube.timefmt.micro_time`).
ANNOTATION = "scheduler-extender.dev/requeued-at"


class Requeuer(ThreadWorker):
    """Tracks the pods rejected on every node and re-queues them on freed capacity (see the module
    doc). ``cache``: the pods known as pending, and in its :attr:`~app.cluster.cache.Cache.events`
    the capacity freed. ``patch(namespace, name, annotations)`` merges annotations into a pod and
    raises :class:`APIError`; blocking, it runs in the requeuer's daemon thread (a
    :class:`~app.lifecycle.ThreadWorker` named ``requeuer``, checking every ``interval`` seconds).
    ``max_tracked`` bounds the pods remembered (the oldest are forgotten first). ``requeued`` and
    ``failed_patches`` count the patches made and failed; a failure other than a deleted pod (404)
    is the worker's ``error`` until a patch succeeds."""

    def __init__(
        self,
        cache: Cache,
        patch: Callable[[str, str, dict[str, str]], None],
        qps: float = 5.0,
        max_tracked: int = 10_000,
        interval: float = 0.2,
    ) -> None:
        super().__init__("requeuer")
        self.cache = cache
        self.events = cache.events
        self._patch = patch
        self.qps = qps
        self.max_tracked = max_tracked
        self.interval = interval
        self._lock = threading.Lock()
        self._tracked: OrderedDict[str, tuple[str, str]] = OrderedDict()  # uid -> (namespace, name)
        self._pending: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self._seen = self.events.freed_generation
        self.requeued = 0
        self.failed_patches = 0

    def rejected(self, namespace: str, name: str, uid: str) -> None:
        """A filter rejected this pod on every node it was sent."""
        with self._lock:
            self._tracked.pop(uid, None)
            self._tracked[uid] = (namespace, name)
            while len(self._tracked) > self.max_tracked:
                self._tracked.popitem(last=False)

    def passed(self, uid: str) -> None:
        """A filter let this pod through somewhere: no need to re-queue it."""
        with self._lock:
            self._tracked.pop(uid, None)
            self._pending.pop(uid, None)

    def tracked(self) -> int:
        """How many pods wait for freed capacity."""
        with self._lock:
            return len(self._tracked) + len(self._pending)

    def run(self) -> None:
        """Every ``interval`` seconds, a :meth:`step` within the ``qps`` budget, until stopped."""
        budget, last = 0.0, time.monotonic()
        while not self.wait(self.interval):
            now = time.monotonic()
            budget = min(budget + (now - last) * self.qps, max(self.qps, 1.0))
            last = now
            budget -= self.step(int(budget))

    def step(self, allowed: int) -> int:
        """Move the tracked pods to the re-queue list when capacity was freed since the last
        step, and take up to ``allowed`` of them: each is patched, or skipped when the cache does
        not know it as pending; returns how many were taken (what the rate budget is charged)."""
        generation = self.events.freed_generation
        with self._lock:
            if generation != self._seen:
                self._seen = generation
                self._pending.update(self._tracked)
                self._tracked.clear()
            batch: list[tuple[str, tuple[str, str]]] = []
            while self._pending and len(batch) < allowed:
                batch.append(self._pending.popitem(last=False))
        stamp = micro_time(time.time())
        for uid, (namespace, name) in batch:
            # only a pod the cache knows as pending, by its UID: a filter body names any pod it
            # likes, and no caller may make this service write to a pod that is not waiting
            known = self.cache.pod(uid)
            if known is None or known.node_name or (known.namespace, known.name) != (namespace, name):
                continue
            try:
                self._patch(namespace, name, {ANNOTATION: stamp})
                self.requeued += 1
                self.recovered()
            except APIError as exc:
                self.failed_patches += 1
                if exc.status != 404:  # a deleted pod needs no retry
                    log.warning("re-queueing %s/%s (uid %s) failed: %s", namespace, name, uid, exc)
                    self.failed(f"re-queueing {namespace}/{name}: {exc}")
        return len(batch)


__all__ = ["ANNOTATION", "Requeuer"]

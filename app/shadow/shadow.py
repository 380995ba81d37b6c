"""The shadow scheduler: it watches the pods another scheduler binds and, for each bind, runs a
profile's cycle (:func:`~app.shadow.cycle.shadow_cycle`) on the cluster state as it was just before
that bind, and records what it would have done (:class:`~app.shadow.record.ShadowLog`).

:meth:`Shadow.before_bind` is the cache's hook (:attr:`app.cluster.cache.Cache.before_bind`): the
pod reflector's thread calls it when the watch shows a pending pod bound, before the cache counts
the pod on its node; it takes the cache's immutable :class:`~app.cluster.snapshot.Snapshot` then
(every earlier watch event applied, this bind not yet) and queues it with the pod. The shadow's own
thread runs the cycles in the order of the binds, off the reflector's path, so a slow cycle delays
no watch event; past ``max_pending`` queued binds, a bind is skipped and counted. Binds the watch
shows only in a relist (after a watch gap), or before the cluster state synced, are not shadowed.

The shadow makes no API call of its own: the cluster state it reads is the standalone scheduler's
(:mod:`app.cluster`), connected with a :class:`~app.shadow.readonly.ReadOnlyClient`.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable, Collection

from app.cluster.cache import Cache
from app.cluster.snapshot import Snapshot
from app.framework import PodInfo
from app.framework.runtime import Framework
from app.lifecycle import ThreadWorker
from app.observe.decisions import Decision
from app.shadow.cycle import shadow_cycle
from app.shadow.record import ShadowLog

log = logging.getLogger(__name__)

#: binds queued for the shadow's thread at most (each holds a snapshot of the cluster state)
MAX_PENDING = 1000
#: ``schedulerName`` the shadow follows by default (kube-scheduler's default profile)
DEFAULT_SCHEDULER = "default-scheduler"

_Item = tuple[PodInfo, str, Snapshot]


class Shadow(ThreadWorker):
    """See the module doc. ``framework``: the profile run; ``schedulers``: the ``schedulerName``s
    whose binds are shadowed; ``log``: where the records go; ``decide``: told of each record as a
    decision (the decision store, for ``/explain``; ``None``: not kept there)."""

    def __init__(
        self,
        framework: Framework,
        cache: Cache,
        schedulers: Collection[str],
        records: ShadowLog,
        decide: Callable[[Decision], None] | None = None,
        max_pending: int = MAX_PENDING,
    ) -> None:
        super().__init__(f"shadow-{framework.profile}")
        self.framework = framework
        self.cache = cache
        self.schedulers = frozenset(schedulers)
        self.records = records
        self.decide = decide
        self._queue: queue.Queue[_Item] = queue.Queue(maxsize=max_pending)
        #: binds shadowed since start
        self.shadowed = 0

    def attach(self) -> None:
        """Become the cache's :attr:`~app.cluster.cache.Cache.before_bind` hook (before the
        reflectors start)."""
        self.cache.before_bind = self.before_bind

    def before_bind(self, pending: PodInfo, bound: PodInfo) -> None:
        """The hook: queue ``pending`` (the pod as it waited) with its node and the cluster state
        now, when its ``schedulerName`` is followed (the reflector's thread; see the module doc)."""
        if bound.scheduler_name not in self.schedulers:
            return
        snapshot = self.cache.snapshot()
        if not snapshot.synced:
            self.records.skip("not_synced")
            return
        try:
            self._queue.put_nowait((pending, bound.node_name, snapshot))
        except queue.Full:
            self.records.skip("behind")

    def run(self) -> None:
        """Run the queued cycles in order until stopped; a cycle that raises is logged and counted
        (``skipped``: ``failed``), and the next one runs."""
        while not self.stopping.is_set():
            try:
                pod, node, snapshot = self._queue.get(timeout=0.1)
            except queue.Empty:
                continue
            try:
                self.shadow(pod, node, snapshot)
            except Exception:
                log.exception("shadow of %s/%s failed", pod.namespace, pod.name)
                self.records.skip("failed")

    def shadow(self, pod: PodInfo, node: str, snapshot: Snapshot) -> None:
        """One bind: the cycle, its record and decision."""
        record, decision = shadow_cycle(self.framework, snapshot, pod, node, pod.scheduler_name)
        self.shadowed += 1
        if record.error:
            log.warning("shadow of %s/%s: %s", pod.namespace, pod.name, record.error)
        self.records.add(record)
        if self.decide is not None:
            self.decide(decision)

    @property
    def pending(self) -> int:
        """Binds queued, not shadowed yet."""
        return self._queue.qsize()


__all__ = ["DEFAULT_SCHEDULER", "MAX_PENDING", "Shadow"]

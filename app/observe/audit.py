"""Audit mode's ``violated``: pods seen bound to a node a plugin their profile audits
(``enforcement: audit``) would have rejected.

Whoever binds (kube-scheduler itself, or the extender's ``bind`` verb), the cluster state's watch
shows the pod assigned to its node: an ``AssignedPod`` ``Add`` cluster event
(:meth:`app.cluster.events.ClusterEvents.events_since`, read every :data:`INTERVAL` seconds). The
pod's last filter decision with audit verdicts (:meth:`~app.observe.decisions.DecisionStore.last_audited`,
the same pod UID) says which audited plugins would have rejected that node; each is marked once on
the decision (``violated``: ``explain`` shows it) and reported to ``on_violation(profile,
plugin)`` (the metric ``scheduler_extender_audit_verdicts_total{outcome="violated"}``). A pod
whose decisions were dropped from the ring (or with ``diagnostics.decisions`` off) is not judged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from app.framework.events import ASSIGNED_POD, ActionType, ObservedEvent
from app.framework.types import PodInfo
from app.lifecycle import PeriodicWorker
from app.observe.decisions import DecisionStore

log = logging.getLogger(__name__)

#: Seconds between two reads of the cluster events.
INTERVAL = 0.5

#: ``events_since(seq)``: ``(last, events)`` (``None``: some were no longer kept)
EventsSince = Callable[[int], tuple[int, Sequence[ObservedEvent] | None]]


class AuditWatcher(PeriodicWorker):
    """Finds the pods bound to a node an audited plugin would have rejected (see the module doc):
    a :class:`~app.lifecycle.PeriodicWorker` named ``audit-watcher``. ``violations`` counts them
    (one per pod and plugin)."""

    def __init__(
        self,
        events_since: EventsSince,
        decisions: DecisionStore,
        on_violation: Callable[[str, str], None],
        interval: float = INTERVAL,
    ) -> None:
        super().__init__("audit-watcher", interval)
        self._events_since = events_since
        self._decisions = decisions
        self._on_violation = on_violation
        self._seq = 0
        self.violations = 0

    def step(self) -> None:
        """Judge the pods bound since the last step."""
        self._seq, events = self._events_since(self._seq)
        for observed in events or ():
            event, pod = observed.event, observed.new
            if event.resource == ASSIGNED_POD and event.action & ActionType.ADD and isinstance(pod, PodInfo):
                self.bound(pod)

    def bound(self, pod: PodInfo) -> None:
        """``pod`` was seen bound to ``pod.node_name``: mark and report each audited plugin that
        would have rejected that node."""
        decision = self._decisions.last_audited(pod.namespace, pod.name, pod.uid)
        if decision is None or not pod.node_name:
            return
        for plugin, status in decision.would_reject(pod.node_name).items():
            if plugin in decision.violated:
                continue
            decision.violated = {**decision.violated, plugin: pod.node_name}  # one swap: readers see old or new
            self.violations += 1
            log.info(
                "audit: pod %s/%s was bound to node %s, which %s (audited in profile %s) would have rejected: %s",
                pod.namespace,
                pod.name,
                pod.node_name,
                plugin,
                decision.profile,
                status.message,
            )
            self._on_violation(decision.profile, plugin)


__all__ = ["INTERVAL", "AuditWatcher", "EventsSince"]

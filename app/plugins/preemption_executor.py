"""DefaultPreemption's ``Executor``: carrying out the chosen candidate, as kube-scheduler v1.36.3's
(pkg/scheduler/framework/preemption/executor.go), with ``SchedulerAsyncPreemption`` (beta, on
since v1.33) off the scheduling cycle (``prepareCandidateAsync``, KEP 4832):

- PostFilter returns the nominated node at once; the victims already being deleted are left
  out, and with none left nothing is done. Else the preemptor is marked ``preempting`` and a
  task on the scheduler's event loop (upstream's goroutine) clears the nomination of the
  lower-priority pods nominated to the node, preempts every victim but the last at once, then,
  if none of them failed, the last one (recorded first in ``lastVictimsPendingPreemption``);
- preempting a victim (``PreemptPod``): one waiting at Permit is rejected there ("preempted",
  Event "... (in kube-scheduler memory)."); the others get ``DisruptionTarget=True`` and are
  deleted (:meth:`~app.framework.handle.ClusterHandle.preempt_pod`), then the ``Preempted``
  Event; a victim found gone is no failure;
- while marked, the preemptor is kept out of the active queue (``IsPodRunningPreemption``, read
  by DefaultPreemption's PreEnqueue), until the last victim is gone or terminating;
- on any failure the preemptor goes back to the active queue (``Activate``), as the API calls'
  failure may have left it parked for good.

With the gate off (``prepareCandidate``) the same calls run, unawaited, without the mark: this
scheduler's cycle runs on the event loop and does not block on API calls. The pods in kube-
scheduler's ``PreBind`` cancellation (``GetPodInPreBind``) are not kept here: such a victim is
deleted.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine, Sequence
from typing import Any

from app.framework import SUCCESS, ClusterHandle, Code, Handle, PodInfo, Status

log = logging.getLogger(__name__)

#: the feature gate of the asynchronous preemption (beta, on by default in v1.36)
ASYNC_PREEMPTION_GATE = "SchedulerAsyncPreemption"


class Executor:
    """``preemption.Executor`` for one profile: ``handle`` (waiting pods, nominator, ``Activate``,
    the scheduler's loop), ``cluster`` (the API calls and the victims' current records),
    ``plugin`` (the name a Permit rejection carries), ``asynchronous`` (the gate). The marks are
    guarded by a lock: PostFilter may run in the verb worker thread."""

    def __init__(self, handle: Handle, cluster: ClusterHandle, plugin: str, asynchronous: bool = True) -> None:
        self.handle = handle
        self.cluster = cluster
        self.plugin = plugin
        self.asynchronous = asynchronous
        self._lock = threading.Lock()
        #: UIDs of the preemptors whose preemption is in flight (``preempting``)
        self.preempting: set[str] = set()
        #: preemptor UID -> the victim being preempted last (``lastVictimsPendingPreemption``)
        self.last_victims: dict[str, PodInfo] = {}
        self._tasks: set[Any] = set()

    def is_pod_running_preemption(self, uid: str) -> bool:
        """``IsPodRunningPreemption``: ``uid`` is marked, and either its last victim is not yet
        being preempted, or that victim is still in the cluster state and not terminating (read
        by its UID: a pod that took its name is not it)."""
        with self._lock:
            if uid not in self.preempting:
                return False
            victim = self.last_victims.get(uid)
        if victim is None:
            return True
        current = self.cluster.pod(victim.uid)
        return current is not None and not current.deleting

    def actuate(self, preemptor: PodInfo, node: str, victims: Sequence[PodInfo]) -> Status:
        """``actuatePodPreemption``: start carrying out the candidate (see the module doc);
        ``SUCCESS`` (a failure is handled off the cycle)."""
        if not self.asynchronous:
            self._start(self._prepare(preemptor, node, [v for v in victims if not v.deleting], marked=False))
            return SUCCESS
        self.prepare_candidate_async(preemptor, node, victims)
        return SUCCESS

    def prepare_candidate_async(self, preemptor: PodInfo, node: str, victims: Sequence[PodInfo]) -> None:
        """``prepareCandidateAsync``: mark ``preemptor`` and start the task (nothing when every
        victim is already terminating)."""
        pending = [v for v in victims if not v.deleting]
        if not pending:
            return
        with self._lock:
            self.preempting.add(preemptor.uid)
        self._start(self._prepare(preemptor, node, pending, marked=True))

    async def preempt_pod(self, preemptor: PodInfo, node: str, victim: PodInfo) -> Status:
        """``PreemptPod``: reject ``victim`` at Permit if it waits there (no API call), else
        :meth:`ClusterHandle.preempt_pod`; the ``Preempted`` Event unless it was gone already.
        ``ERROR`` when a call failed, else ``SUCCESS``."""
        waiting = self.handle.waiting_pods.get(victim.uid)
        if waiting is not None and not waiting.result.done():
            waiting.reject(self.plugin, "preempted")
            log.info("preemptor %s rejected the waiting pod %s on %s", preemptor.key(), victim.key(), node)
            self.cluster.preempted(victim, preemptor, node, in_memory=True)
            return SUCCESS
        status = await self.cluster.preempt_pod(preemptor, node, victim)
        if status.code is Code.SKIP:
            return SUCCESS
        if not status.is_success():
            return status
        self.cluster.preempted(victim, preemptor, node)
        return SUCCESS

    async def _prepare(self, preemptor: PodInfo, node: str, victims: list[PodInfo], marked: bool) -> None:
        """The goroutine of ``prepareCandidateAsync`` (see the module doc)."""
        failed = False
        try:
            # lower-priority pods nominated to the node may no longer fit there (getLowerPriorityNominatedPods)
            lower = [p for p in self.handle.nominated_pods_for_node(node) if p.priority < preemptor.priority]
            status = await self.cluster.clear_nominated_node_name(lower)
            if not status.is_success():
                log.warning("cannot clear the nominations to %s of lower-priority pods: %s", node, status.message)
                failed = True  # not critical: the victims are preempted still
            last = True
            if len(victims) > 1:
                results = await asyncio.gather(*(self.preempt_pod(preemptor, node, v) for v in victims[:-1]))
                errors = [r.message for r in results if not r.is_success()]
                if errors:
                    log.warning("async preemption for %s on %s: %s", preemptor.key(), node, "; ".join(errors))
                    failed, last = True, False  # the preemptor goes back to the queue sooner
            if last:
                if marked:
                    with self._lock:
                        self.last_victims[preemptor.uid] = victims[-1]
                status = await self.preempt_pod(preemptor, node, victims[-1])
                if not status.is_success():
                    log.warning("async preemption of the last victim for %s: %s", preemptor.key(), status.message)
                    failed = True
        except Exception:  # an API call's unexpected failure: as a failed preemption
            log.exception("async preemption for %s on %s", preemptor.key(), node)
            failed = True
        finally:
            with self._lock:
                self.preempting.discard(preemptor.uid)
                self.last_victims.pop(preemptor.uid, None)
            if failed and marked:
                self.handle.activate([preemptor])
            log.info("async preemption for %s on %s finished (%s)", preemptor.key(), node, "error" if failed else "ok")

    async def wait(self) -> None:
        """Until the preemptions started from this loop have ended (tests, shutdown)."""
        tasks = [t for t in self._tasks if isinstance(t, asyncio.Future)]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def _start(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` as a task on the running loop, or on the scheduler's
        (:attr:`Handle.loop`) from the verb worker thread; with no loop at all (a tool or a test
        running PostFilter on its own) to its end before returning."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        task: asyncio.Future[None] | concurrent.futures.Future[None]
        if loop is not None:
            task = loop.create_task(work)
        elif self.handle.loop is not None and self.handle.loop.is_running():
            task = asyncio.run_coroutine_threadsafe(work, self.handle.loop)
        else:
            asyncio.run(work)
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


__all__ = ["ASYNC_PREEMPTION_GATE", "Executor"]

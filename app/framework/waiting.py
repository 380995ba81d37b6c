"""Pods waiting at Permit (kube-scheduler's ``waitingPodsMap`` and ``waitingPod``,
``pkg/scheduler/framework/runtime/waiting_pods_map.go`` v1.30).

A pod waits when one or more Permit plugins answered ``WAIT``; each of them then has until its
own timeout to :meth:`WaitingPod.allow` it. The pod goes on once every such plugin allowed it,
and fails at once when any plugin rejects it or a timeout passes ("rejected due to timeout after
waiting 10s at plugin Coscheduling"). A waiting pod keeps its reservation. Everything here runs
on the event loop (timers are ``loop.call_later``); it is not thread-safe.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

from app.framework.status import SUCCESS, Code, Status
from app.framework.types import PodInfo

#: upstream's ``maxTimeout``: no plugin may make a pod wait longer (seconds)
MAX_TIMEOUT = 15 * 60.0


class WaitingPod:
    """One pod waiting at Permit for ``node_name`` (``framework.WaitingPod``)."""

    def __init__(self, pod: PodInfo, node_name: str, timeouts: dict[str, float]) -> None:
        self.pod = pod
        self.node_name = node_name
        loop = asyncio.get_running_loop()
        self.result: asyncio.Future[Status] = loop.create_future()
        self._pending: dict[str, asyncio.TimerHandle] = {}
        for plugin, timeout in timeouts.items():
            message = f"rejected due to timeout after waiting {_go_duration(timeout)} at plugin {plugin}"
            self._pending[plugin] = loop.call_later(timeout, self.reject, plugin, message)

    def pending_plugins(self) -> list[str]:
        """The plugins that have not allowed the pod yet."""
        return list(self._pending)

    def allow(self, plugin: str) -> None:
        """``plugin`` lets the pod go on; it goes on once every waiting plugin did."""
        timer = self._pending.pop(plugin, None)
        if timer is not None:
            timer.cancel()
        if not self._pending and not self.result.done():
            self.result.set_result(SUCCESS)

    def reject(self, plugin: str, message: str) -> None:
        """``plugin`` rejects the pod (``Unschedulable`` with ``message``): it fails at once."""
        for timer in self._pending.values():
            timer.cancel()
        if not self.result.done():
            self.result.set_result(Status(Code.UNSCHEDULABLE, (message,), plugin))


class WaitingPods:
    """The waiting pods of one profile, by pod UID (``waitingPodsMap``); handed to plugins through
    :class:`~app.framework.handle.Handle` (``IterateOverWaitingPods``, ``GetWaitingPod``)."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, pod: WaitingPod) -> None:
        """Start tracking ``pod`` (replacing a pod with the same UID, which is rejected)."""
        previous = self._pods.get(pod.pod.uid)
        if previous is not None and previous is not pod:
            previous.reject("", "superseded by a newer attempt for the same pod")
        self._pods[pod.pod.uid] = pod

    def remove(self, uid: str, pod: WaitingPod | None = None) -> None:
        """Stop tracking ``uid`` (only when it is still ``pod``, if given)."""
        if pod is None or self._pods.get(uid) is pod:
            self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        """The waiting pod with ``uid``, or ``None`` (``GetWaitingPod``)."""
        return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)

    def iterate(self, callback: Callable[[WaitingPod], None]) -> None:
        """Call ``callback`` on each waiting pod (``IterateOverWaitingPods``)."""
        for pod in list(self._pods.values()):
            callback(pod)


def _go_duration(seconds: float) -> str:
    """``time.Duration.String`` for the durations Permit timeouts use: ``10s``, ``1.5s``, ``2m0s``."""
    if seconds < 60:
        return f"{seconds:g}s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:g}s"


__all__ = ["MAX_TIMEOUT", "WaitingPod", "WaitingPods"]

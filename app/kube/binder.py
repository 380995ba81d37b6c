"""Binding a pod through the API server, with the assumed-pod ledger around it.

Follows kube-scheduler's binding cycle (pkg/scheduler/schedule_one.go: ``assume`` then ``bind``,
``ForgetPod`` on failure) and its DefaultBinder
(pkg/scheduler/framework/plugins/defaultbinder/default_binder.go): the ``Binding`` carries the
pod's UID in ``metadata.uid``, so the API server refuses to bind a pod that was deleted and
recreated under the same name (409, "Precondition failed: UID in precondition").
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, Protocol, TypeVar

import msgspec

from app.cluster.state import ClusterState, ReserveCheck
from app.framework import objects
from app.framework.status import SUCCESS, Status
from app.framework.types import PodInfo, PodRef
from app.kube.errors import APIError

log = logging.getLogger(__name__)
T = TypeVar("T")

_POD = msgspec.json.Decoder(objects.Pod)


class BindingClient(Protocol):
    """The two API calls a bind needs (implemented by :class:`app.kube.client.KubeClient`)."""

    def create_binding(self, namespace: str, name: str, uid: str, node: str, timeout: float) -> None: ...

    def get_pod(self, namespace: str, name: str, timeout: float) -> bytes: ...


class Binder:
    """Reserve in the ledger, create the Binding, and forget the reservation when it fails.

    ``timeout``: seconds the whole bind may take (keep it below the profile's ``httpTimeout``:
    kube-scheduler fails a binding cycle whose extender answers late, even when the Binding was
    created). API calls run on ``executor`` (the official client blocks).
    """

    def __init__(self, client: BindingClient, state: ClusterState, executor: Executor, timeout: float) -> None:
        self.client = client
        self.state = state
        self.executor = executor
        self.timeout = timeout

    async def _call(self, deadline: float, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args, seconds_left)`` on the executor, abandoned with ``TimeoutError`` at ``deadline``."""
        loop = asyncio.get_running_loop()
        left = deadline - loop.time()
        if left <= 0:
            raise TimeoutError
        call = functools.partial(fn, *args, left)
        return await asyncio.wait_for(loop.run_in_executor(self.executor, call), left)

    async def pod_record(self, pod: PodRef, timeout: float) -> PodInfo | None:
        """The cache's record of ``pod`` (by UID) or, when the watch has not shown it yet, the pod
        read from the API server (``None`` when that fails or it is another pod of that name)."""
        cached = self.state.pod(pod.uid)
        if cached is not None:
            return cached
        loop = asyncio.get_running_loop()
        try:
            raw = await self._call(loop.time() + timeout, self.client.get_pod, pod.namespace, pod.name)
            decoded = _POD.decode(raw)
        except (TimeoutError, APIError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            log.warning("reading pod %s/%s failed: %s", pod.namespace, pod.name, exc)
            return None
        record = self.state.record(decoded)
        return record if record.uid == pod.uid else None

    async def bind(
        self,
        pod: PodRef,
        node: str,
        check: ReserveCheck | None = None,
        timeout: float | None = None,
        record: PodInfo | None = None,
    ) -> Status:
        """Bind ``pod`` to ``node``. Returns ``SUCCESS`` (bound now, or already bound to ``node``)
        or an ``ERROR`` status whose message kube-scheduler logs and records in the pod's events.

        ``check`` runs atomically with the reservation (see :meth:`ClusterState.assume`); a pod the
        watch has not shown yet is read from the API server first (unless ``record`` already
        holds it), so the check sees its labels and requests. ``timeout`` (seconds) shortens this
        bind's deadline below :attr:`timeout`.
        """
        loop = asyncio.get_running_loop()
        budget = self.timeout if timeout is None else min(self.timeout, timeout)
        deadline = loop.time() + budget
        if check is not None and record is None:
            record = await self.pod_record(pod, max(budget / 2, 0.001))
            if record is None:
                return Status.error(f"cannot bind to {node}: pod {pod.namespace}/{pod.name} not found")
        reservation = self.state.assume(pod.namespace, pod.name, pod.uid, node, check, record)
        if not reservation.ok:
            return Status.error(f"cannot bind to {node}: {reservation.reason}")
        if reservation.already_bound:
            return SUCCESS
        try:
            await self._call(deadline, self.client.create_binding, pod.namespace, pod.name, pod.uid, node)
            return SUCCESS
        except TimeoutError:
            # The Binding may still be created: keep the reservation; the watch confirms it or
            # the ledger's TTL releases it.
            return Status.error(f"binding did not finish within {budget:g}s")
        except APIError as exc:
            if exc.timed_out:
                # sent, but no answer in time: as uncertain as the deadline above
                return Status.error(f"binding did not finish within {budget:g}s")
            if exc.status == 409:
                return await self._conflict(pod, node, exc, deadline)
            self.state.forget(pod.uid, node)
            if exc.status == 404:
                return Status.error(f"pod {pod.namespace}/{pod.name} not found")
            log.warning("bind %s/%s to %s: %s", pod.namespace, pod.name, node, exc)
            return Status.error(f"binding failed: {api_failure(exc)}")

    async def _conflict(self, pod: PodRef, node: str, exc: APIError, deadline: float) -> Status:
        """A 409: the pod may already be bound (to this node: success, as kube-scheduler treats a
        re-sent bind), bound elsewhere, or recreated with another UID."""
        try:
            current = _POD.decode(await self._call(deadline, self.client.get_pod, pod.namespace, pod.name))
        except (TimeoutError, APIError, msgspec.DecodeError, msgspec.ValidationError) as read_exc:
            self.state.forget(pod.uid, node)
            log.warning(
                "bind %s/%s to %s: conflict (%s); reading the pod failed: %s",
                pod.namespace,
                pod.name,
                node,
                exc,
                read_exc,
            )
            why = (
                api_failure(read_exc)
                if isinstance(read_exc, APIError)
                else "no answer"
                if isinstance(read_exc, TimeoutError)
                else "malformed pod"
            )
            return Status.error(f"binding conflict; reading the pod failed: {why}")
        meta = current.metadata or objects.EMPTY_META
        bound_to = (current.spec.node_name if current.spec is not None else None) or ""
        if meta.uid and meta.uid != pod.uid:
            self.state.forget(pod.uid, node)
            return Status.error(
                f"pod {pod.namespace}/{pod.name} was recreated: its UID is not the one kube-scheduler sent"
            )
        if bound_to == node:
            log.info("bind %s/%s: already bound to %s", pod.namespace, pod.name, node)
            return SUCCESS
        self.state.forget(pod.uid, node)
        if bound_to:
            return Status.error(f"pod {pod.namespace}/{pod.name} is already bound to node {bound_to!r}")
        log.warning("bind %s/%s to %s: conflict: %s", pod.namespace, pod.name, node, exc)
        return Status.error("binding conflict (the pod changed while binding; kube-scheduler retries it)")


def api_failure(exc: APIError) -> str:
    """What an answer may say of a failed API request: the HTTP status and reason, or that the API
    server could not be reached; never the transport's text (host names, addresses) nor the API
    server's message (a precondition failure names the object's real UID). The full error goes to
    the log."""
    if exc.status == 0:
        return "the API server did not answer in time" if exc.timed_out else "the API server is unreachable"
    return f"{exc.status} {exc.reason}" if exc.reason else f"HTTP {exc.status}"


__all__ = ["Binder", "BindingClient", "api_failure"]

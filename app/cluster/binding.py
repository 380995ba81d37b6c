"""The API calls of the binding cycle: reading a pod the watch has not shown yet, and creating
its Binding (kube-scheduler's DefaultBinder,
pkg/scheduler/framework/plugins/defaultbinder/default_binder.go). The ``Binding`` carries the
pod's UID in ``metadata.uid``, so the API server refuses to bind a pod that was deleted and
recreated under the same name (409, "Precondition failed: UID in precondition").

The assumption around it (``AssumePod`` at Reserve, ``ForgetPod`` when the cycle fails) is the
framework's (:meth:`app.framework.runtime.Framework.run_binding_cycle`) over the cache's assumed
pods; this module says only whether a Binding's outcome is known: a timeout is
:data:`~app.framework.handle.BINDING_UNCERTAIN` (the assumption is kept until the watch shows
the pod or it expires), anything else is certain.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, Protocol, TypeVar

import msgspec

from app.cluster.cache import Cache
from app.framework import objects
from app.framework.handle import BINDING_UNCERTAIN
from app.framework.status import SUCCESS, Code, Status
from app.framework.types import PodInfo, PodRef
from app.kube.errors import APIError

log = logging.getLogger(__name__)
T = TypeVar("T")

_POD = msgspec.json.Decoder(objects.Pod)


class BindingClient(Protocol):
    """The two API calls a bind needs (implemented by :class:`app.kube.client.KubeClient`)."""

    def create_binding(self, namespace: str, name: str, uid: str, node: str, timeout: float) -> None: ...

    def get_pod(self, namespace: str, name: str, timeout: float) -> bytes: ...


class AsyncBindings(Protocol):
    """Bindings created on the event loop (implemented by :class:`app.kube.aio.AsyncBindingClient`):
    raises ``TimeoutError`` past ``deadline`` (the loop's clock) and :class:`APIError`."""

    async def create_binding(self, namespace: str, name: str, uid: str, node: str, deadline: float) -> None: ...


class Binder:
    """Reads pods and creates Bindings through ``client``, off the event loop on ``executor`` (the
    official client blocks); ``cache`` resolves pods the watch has shown. With ``bindings``, the
    Bindings are created on the event loop instead (no thread hop: :mod:`app.kube.aio`)."""

    def __init__(
        self, client: BindingClient, cache: Cache, executor: Executor, bindings: AsyncBindings | None = None
    ) -> None:
        self.client = client
        self.cache = cache
        self.executor = executor
        self.bindings = bindings

    async def _call(self, deadline: float, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args, seconds_left)`` on the executor, abandoned with ``TimeoutError`` at ``deadline``."""
        loop = asyncio.get_running_loop()
        left = deadline - loop.time()
        if left <= 0:
            raise TimeoutError
        call = functools.partial(fn, *args, left)
        return await asyncio.wait_for(loop.run_in_executor(self.executor, call), left)

    async def read_pod(self, pod: PodRef, timeout: float) -> PodInfo | None:
        """The cache's record of ``pod`` (by UID) or, when the watch has not shown it yet, the pod
        read from the API server within ``timeout`` seconds: ``None`` when that fails, a record
        with another UID when a pod of that name was recreated."""
        cached = self.cache.pod(pod.uid)
        if cached is not None:
            return cached
        loop = asyncio.get_running_loop()
        try:
            raw = await self._call(loop.time() + timeout, self.client.get_pod, pod.namespace, pod.name)
            decoded = _POD.decode(raw)
        except (TimeoutError, APIError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            log.warning("reading pod %s/%s failed: %s", pod.namespace, pod.name, exc)
            return None
        return self.cache.record(decoded)

    async def bind(self, pod: PodInfo, node: str, timeout: float) -> Status:
        """Create ``pod``'s Binding to ``node`` within ``timeout`` seconds. Returns ``SUCCESS``
        (bound now, or already bound to ``node``) or an ``ERROR`` status whose message
        kube-scheduler logs and records in the pod's events; its ``reason_code`` is
        :data:`BINDING_UNCERTAIN` when the Binding may still be created."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            if self.bindings is not None:
                await self.bindings.create_binding(pod.namespace, pod.name, pod.uid, node, deadline)
            else:
                await self._call(deadline, self.client.create_binding, pod.namespace, pod.name, pod.uid, node)
            return SUCCESS
        except TimeoutError:
            return _uncertain(timeout)
        except APIError as exc:
            if exc.timed_out:  # sent, but no answer in time: as uncertain as the deadline above
                return _uncertain(timeout)
            if exc.status == 409:
                return await self._conflict(pod, node, exc, deadline)
            if exc.status == 404:
                return Status.error(f"pod {pod.namespace}/{pod.name} not found")
            log.warning("bind %s/%s to %s: %s", pod.namespace, pod.name, node, exc)
            return Status.error(f"binding failed: {api_failure(exc)}")

    async def _conflict(self, pod: PodInfo, node: str, exc: APIError, deadline: float) -> Status:
        """A 409: the pod may already be bound (to this node: success, as kube-scheduler treats a
        re-sent bind), bound elsewhere, or recreated with another UID."""
        try:
            current = _POD.decode(await self._call(deadline, self.client.get_pod, pod.namespace, pod.name))
        except (TimeoutError, APIError, msgspec.DecodeError, msgspec.ValidationError) as read_exc:
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
            return Status.error(
                f"pod {pod.namespace}/{pod.name} was recreated: its UID is not the one kube-scheduler sent"
            )
        if bound_to == node:
            log.info("bind %s/%s: already bound to %s", pod.namespace, pod.name, node)
            return SUCCESS
        if bound_to:
            return Status.error(f"pod {pod.namespace}/{pod.name} is already bound to node {bound_to!r}")
        log.warning("bind %s/%s to %s: conflict: %s", pod.namespace, pod.name, node, exc)
        return Status.error("binding conflict (the pod changed while binding; kube-scheduler retries it)")


def _uncertain(timeout: float) -> Status:
    return Status(Code.ERROR, (f"binding did not finish within {timeout:g}s",), reason_code=BINDING_UNCERTAIN)


def api_failure(exc: APIError) -> str:
    """What an answer may say of a failed API request: the HTTP status and reason, or that the API
    server could not be reached; never the transport's text (host names, addresses) nor the API
    server's message (a precondition failure names the object's real UID). The full error goes to
    the log."""
    if exc.status == 0:
        return "the API server did not answer in time" if exc.timed_out else "the API server is unreachable"
    return f"{exc.status} {exc.reason}" if exc.reason else f"HTTP {exc.status}"


__all__ = ["AsyncBindings", "Binder", "BindingClient", "api_failure"]

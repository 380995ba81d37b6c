"""The cycle after a node is chosen, as ``frameworkImpl`` and ``schedule_one.go`` run it
(pkg/scheduler/framework/runtime/framework.go, v1.36.3): Reserve (the pod assumed in the cluster
state and every Reserve plugin, atomically), Permit (a pod may wait, keeping its reservation,
:mod:`app.framework.waiting`), then the binding cycle: for the standalone scheduler the PreBind
pre-flights and ``nominatedNodeName`` for expectation, WaitOnPermit, PreBind (the plugins whose
pre-flight said Skip skipped), Bind (the first bind plugin that does not return ``SKIP``
decides), PostBind; any failure after Reserve runs Unreserve
on every Reserve plugin in reverse order and forgets the assumption, except after a Binding whose
outcome is unknown (:data:`~app.framework.handle.BINDING_UNCERTAIN`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from app.framework import features
from app.framework.handle import BINDING_UNCERTAIN, Handle
from app.framework.interfaces import PermitPlugin, PostBindPlugin, PreBindPlugin, ReservePlugin
from app.framework.points import EnabledPlugin
from app.framework.runtime.failures import describe, error_text
from app.framework.status import SKIP, SUCCESS, Code, Status, code_name
from app.framework.types import CycleState, NodeInfo, PodInfo
from app.framework.waiting import MAX_TIMEOUT, WaitingPod

#: CycleState key: the PreBind plugins whose pre-flight said Skip (``SetSkipPreBindPlugins``)
SKIP_PRE_BIND_PLUGINS = "framework/skip-pre-bind-plugins"


class BindingCycle(Handle):
    """The Reserve-to-PostBind part of the Framework (its base): the lists it reads are the
    Framework's; ``shared_reserve`` the cluster-wide Reserve plugins of other profiles."""

    reserve_plugins: tuple[ReservePlugin, ...]
    permit_plugins: tuple[PermitPlugin, ...]
    pre_bind_plugins: tuple[PreBindPlugin, ...]
    bind_plugins: tuple[EnabledPlugin, ...]
    post_bind_plugins: tuple[PostBindPlugin, ...]
    shared_reserve: Sequence[ReservePlugin]

    def _reserve_plugins(self) -> tuple[ReservePlugin, ...]:
        own = self.reserve_plugins
        return (*own, *(p for p in self.shared_reserve if p not in own))

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Reserve (``AssumePod`` and ``RunReservePluginsReserve``): assume ``pod`` on ``node_name``
        in the cluster state and run every Reserve plugin (the profile's, then the cluster-wide
        ones of other profiles), atomically (``assume`` with the plugins as its check). Returns
        ``SUCCESS``; the refusing plugin's rejection; an ``ERROR`` ``running Reserve plugin
        "<plugin>": <message>``, or of the cluster state (bound or being bound elsewhere). On
        refusal every Reserve plugin's Unreserve has run and nothing is assumed."""
        plugins = self._reserve_plugins()

        def check(node: NodeInfo) -> Status:
            for plugin in plugins:
                try:
                    status = plugin.reserve(state, pod, node)
                except Exception as exc:
                    status = Status.error(describe(exc))
                if not status.is_success():
                    if status.is_rejected():
                        return status.with_plugin(plugin.name)
                    message = f'running Reserve plugin "{plugin.name}": {error_text(status)}'
                    return Status(Code.ERROR, (message,), plugin.name, status.reason_code)
            return SUCCESS

        reservation = self.cluster.assume(pod, node_name, check if plugins else None)
        if reservation.ok:
            return SUCCESS
        status = reservation.status or Status(Code.ERROR, (reservation.reason,), "ClusterState")
        self.run_unreserve(state, pod, node_name, forget=False)
        return status

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Permit (``RunPermitPlugins``): ``SUCCESS``; the first rejection; an ``ERROR`` ``running
        Permit plugin "<plugin>": <message>``; or ``WAIT`` when one or more plugins asked the pod
        to wait and none rejected it (the pod is then in :attr:`waiting_pods`, each such plugin's
        timeout capped at 15 minutes). Call :meth:`run_unreserve` after a rejection. On the
        event loop."""
        timeouts: dict[str, float] = {}
        for plugin in self.permit_plugins:
            try:
                status, timeout = plugin.permit(state, pod, node_name)
            except Exception as exc:
                status, timeout = Status.error(describe(exc)), 0.0
            if status.is_success():
                continue
            if status.is_rejected():
                return status.with_plugin(plugin.name)
            if status.code is Code.WAIT:
                timeouts[plugin.name] = min(max(timeout, 0.0), MAX_TIMEOUT)
                continue
            message = f'running Permit plugin "{plugin.name}": {error_text(status)}'
            return Status(Code.ERROR, (message,), plugin.name)
        if timeouts:
            self.waiting_pods.add(WaitingPod(pod, node_name, timeouts))
            message = f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"'
            return Status(Code.WAIT, (message,))
        return SUCCESS

    async def wait_on_permit(self, pod: PodInfo, deadline: float | None = None) -> Status:
        """``WaitOnPermit``: ``SUCCESS`` at once for a pod that is not waiting; else the waiting
        pod's outcome (allowed by every plugin, or the rejection). ``deadline`` (monotonic
        seconds) rejects it when it passes first."""
        waiting = self.waiting_pods.get(pod.uid)
        if waiting is None:
            return SUCCESS
        try:
            if deadline is None:
                status = await waiting.result
            else:
                try:
                    status = await asyncio.wait_for(asyncio.shield(waiting.result), max(deadline - time.monotonic(), 0))
                except TimeoutError:
                    waiting.reject("", "the bind's time budget ended while waiting at Permit")
                    status = waiting.result.result()
        finally:
            self.waiting_pods.remove(pod.uid, waiting)
        if status.is_success() or status.is_rejected():
            return status
        return Status(Code.ERROR, (f"waiting on permit for pod: {status.message}",), status.plugin)

    def run_pre_bind_pre_flights(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """``RunPreBindPreFlights``: ``SUCCESS`` when a PreBind plugin has work for the pod,
        ``SKIP`` when none has, or the ``ERROR`` of one (a status other than Success, Skip or Error
        is one too). The plugins that said Skip are kept in ``state`` for :meth:`run_pre_bind`. A
        plugin without ``pre_bind_pre_flight`` counts as having work."""
        skipped: set[str] = set()
        result = SKIP
        for plugin in self.pre_bind_plugins:
            flight = getattr(plugin, "pre_bind_pre_flight", None)
            try:
                status: Status = flight(state, pod, node_name) if flight is not None else SUCCESS
            except Exception as exc:
                status = Status.error(describe(exc))
            if status.code is Code.ERROR:
                return Status(Code.ERROR, (f'running PreBindPreFlight "{plugin.name}": {status.message}',), plugin.name)
            if status.is_success():
                result = SUCCESS
            elif status.code is Code.SKIP:
                skipped.add(plugin.name)
            else:
                message = (
                    f'PreBindPreFlight {plugin.name} returned "{code_name(status.code)}", which is unsupported. '
                    "It is supposed to return Success, Skip, or Error status"
                )
                return Status(Code.ERROR, (message,), plugin.name)
        state.write(SKIP_PRE_BIND_PLUGINS, frozenset(skipped))
        return result

    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """``RunPreBindPlugins`` (in order; upstream may run adjacent ``AllowParallel`` plugins
        at once, with the same outcome): the plugins a pre-flight skipped are not run; a
        rejection is returned as it is, attributed to its plugin; any other failure is an
        ``ERROR`` ``running PreBind plugin "<name>": <message>``."""
        skipped = state.get(SKIP_PRE_BIND_PLUGINS, frozenset())
        for plugin in self.pre_bind_plugins:
            if plugin.name in skipped:
                continue
            try:
                status: Status = await plugin.pre_bind(state, pod, node_name)
            except Exception as exc:
                status = Status.error(describe(exc))
            if status.is_rejected():
                return Status(status.code, status.reasons, plugin.name, status.reason_code)
            if not status.is_success():
                return Status(Code.ERROR, (f'running PreBind plugin "{plugin.name}": {status.message}',), plugin.name)
        return SUCCESS

    async def run_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Bind: ask bind plugins in order; the first that does not return ``SKIP`` decides.

        Returns ``SUCCESS`` or an ``ERROR`` status naming the plugin (its ``reason_code`` kept).
        An ignored (``failurePolicy: Ignore``) error passes the pod to the next bind plugin.
        """
        errors: list[str] = []
        for ep in self.bind_plugins:
            try:
                status: Status = await ep.plugin.bind(state, pod, node_name)  # type: ignore[attr-defined]
            except Exception as exc:
                status = Status.error(describe(exc))
            if status.code is Code.SKIP:
                continue
            if status.is_success():
                return status.with_plugin(ep.name)
            if ep.ignores_errors:
                errors.append(f"{ep.name}: {error_text(status)}")
                continue
            return Status(Code.ERROR, (f"{ep.name}: {error_text(status)}",), ep.name, status.reason_code)
        detail = f" ({'; '.join(errors)})" if errors else ""
        if not self.bind_plugins:
            return Status.error(f"no binder is configured in profile {self.profile!r}")
        return Status.error(f"no bind plugin bound pod {pod.namespace}/{pod.name}{detail}")

    def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """PostBind: informational; a plugin's exception is logged."""
        for plugin in self.post_bind_plugins:
            try:
                plugin.post_bind(state, pod, node_name)
            except Exception as exc:
                describe(exc)

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str, forget: bool = True) -> None:
        """Unreserve every Reserve plugin in reverse order (``RunReservePluginsUnreserve``), then,
        unless ``forget`` is false, drop the pod's assumption (``ForgetPod``)."""
        for plugin in reversed(self._reserve_plugins()):
            try:
                plugin.unreserve(state, pod, node_name)
            except Exception as exc:
                describe(exc)
        if forget:
            self.cluster.forget(pod.uid, node_name)

    async def run_binding_cycle(
        self,
        state: CycleState,
        pod: PodInfo,
        node_name: str,
        deadline: float | None = None,
        nominate: Callable[[str], None] | None = None,
    ) -> Status:
        """The binding cycle of a reserved (and permitted or waiting) pod: WaitOnPermit, PreBind,
        Bind, PostBind. With ``nominate`` (the standalone scheduler's ``status.nominatedNodeName``
        write) and NominatedNodeNameForExpectation (beta, on; ``bindingCycle`` in v1.36.3
        schedule_one.go) first the PreBind pre-flights: an error fails the cycle; when a PreBind
        plugin has work or the pod waits at Permit, ``nominate(node_name)`` tells other components
        where the pod is about to go. On failure Unreserve runs and the assumption is forgotten,
        except after a Bind whose outcome is unknown (:data:`BINDING_UNCERTAIN`: the assumption
        stays until the watch shows the pod or it expires). Returns the outcome."""
        status = SUCCESS
        if nominate is not None and features.current().enabled("NominatedNodeNameForExpectation"):
            status = self.run_pre_bind_pre_flights(state, pod, node_name)
            if status.is_success() or (status.code is Code.SKIP and self.waiting_pods.get(pod.uid) is not None):
                nominate(node_name)
            if status.code is Code.SKIP:
                status = SUCCESS
        if status.is_success():
            status = await self.wait_on_permit(pod, deadline)
        if status.is_success():
            status = await self.run_pre_bind(state, pod, node_name)
        if status.is_success():
            status = await self.run_bind_plugins(state, pod, node_name)
        if status.is_success():
            self.cluster.finish_binding(pod.uid)
            self.run_post_bind(state, pod, node_name)
            return status
        uncertain = status.reason_code == BINDING_UNCERTAIN
        self.run_unreserve(state, pod, node_name, forget=not uncertain)
        if uncertain:
            self.cluster.finish_binding(pod.uid)
        return status


__all__ = ["BindingCycle"]

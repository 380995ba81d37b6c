"""DefaultBinder: bind the pod through the API server, as kube-scheduler's own DefaultBinder.

Creates ``pods/binding`` with the pod's UID as precondition
(pkg/scheduler/framework/plugins/defaultbinder/default_binder.go), around the assumed-pod ledger
(:meth:`app.cluster.state.ClusterState.assume`): the pod counts on the node from the moment the
bind starts, so a filter that runs before the watch shows the binding already sees it.

Args:

- ``timeoutSeconds``: the whole bind's deadline (default: 80 % of the profile's ``httpTimeout``);
  must be below ``httpTimeout``, because kube-scheduler fails a binding cycle whose extender
  answers late even when the Binding was created.
- ``verifyFit`` (default false): refuse the bind when the pod no longer fits the node by the
  cache's count (``allocatable`` pods, cpu, memory, ephemeral storage, extended resources; upstream
  ``fitsRequest``), checked atomically with the reservation. Two binds racing for the last slot
  then never both succeed. ``ignoredResources`` are not checked (list the extended resources this
  extender manages with ``ignoredByScheduler``).
"""

from __future__ import annotations

import time

from pydantic import Field

from app.cluster.state import ReserveCheck
from app.framework.args import PluginArgs
from app.framework.fit import insufficient
from app.framework.registry import Handle, PluginEntry, PolicyRule
from app.framework.runtime import BIND_DEADLINE, POD_RECORD, RESERVE_CHECK
from app.framework.status import Status
from app.framework.types import CycleState, NodeInfo, PodInfo, PodRef
from app.kube.binder import Binder

NAME = "DefaultBinder"


class DefaultBinderArgs(PluginArgs):
    """``DefaultBinder`` args (see the module doc); seconds."""

    timeout_seconds: float | None = Field(default=None, gt=0)
    verify_fit: bool = False
    ignored_resources: list[str] = Field(default_factory=list)


class DefaultBinder:
    """The Bind plugin of the module doc."""

    name = NAME

    def __init__(self, args: DefaultBinderArgs, handle: Handle) -> None:
        if handle.cluster is None:
            raise ValueError(f"{NAME} needs cluster state: add a `cluster:` section")
        timeout = args.timeout_seconds if args.timeout_seconds is not None else 0.8 * handle.http_timeout
        if timeout >= handle.http_timeout:
            raise ValueError(
                f"{NAME}: timeoutSeconds {timeout:g} must be below the profile's httpTimeout "
                f"({handle.http_timeout:g}s), or kube-scheduler gives up before the bind answers"
            )
        self.timeout = timeout
        self.cluster = handle.cluster
        self.cluster.hold_binds(timeout)
        self.verify_fit = args.verify_fit
        self.ignored = frozenset(args.ignored_resources)
        self._binder: Binder | None = None

    def _fits(self, node: NodeInfo, pod: PodInfo) -> str | None:
        """``verifyFit``: why ``pod`` no longer fits ``node`` by the cache's count, or ``None``."""
        if node.node is None:
            return "node is not in the extender's cluster state"
        return ", ".join(r.reason for r in insufficient(node, pod.requests, self.ignored)) or None

    def _reserve_check(self, state: CycleState) -> ReserveCheck | None:
        """``verifyFit`` followed by the profile's Reserve plugins (:data:`RESERVE_CHECK`)."""
        profile: ReserveCheck | None = state.get(RESERVE_CHECK)
        if not self.verify_fit:
            return profile

        def check(node: NodeInfo, pod: PodInfo) -> str | None:
            return self._fits(node, pod) or (profile(node, pod) if profile is not None else None)

        return check

    async def bind(self, state: CycleState, pod: PodRef, node_name: str) -> Status:
        """Reserve (``verifyFit`` and the profile's Reserve plugins, atomically), then create the
        Binding, within what is left of the bind's deadline; ``ERROR`` with the reason when either
        fails, or while binds are not admitted (:meth:`ClusterRuntime.bind_admission`: not the
        Lease's leader, or warming up after a start or a takeover)."""
        refusal = self.cluster.bind_admission()
        if refusal is not None:
            return Status.error(refusal)
        if self._binder is None:
            try:
                self._binder = self.cluster.binder(self.timeout)
            except RuntimeError as exc:
                return Status.error(str(exc))
        deadline: float | None = state.get(BIND_DEADLINE)
        timeout = None if deadline is None else deadline - time.monotonic()
        if timeout is not None and timeout <= 0:
            return Status.error("no time left to bind within the profile's httpTimeout")
        return await self._binder.bind(pod, node_name, self._reserve_check(state), timeout, state.get(POD_RECORD))


PLUGIN = PluginEntry(
    name=NAME,
    factory=DefaultBinder,
    args=DefaultBinderArgs,
    needs_cluster=True,
    # POST pods/binding; GET pods to read a pod back after a 409 (app/kube/binder.py)
    rbac=(PolicyRule(("",), ("pods/binding",), ("create",)), PolicyRule(("",), ("pods",), ("get",))),
    sees_every_pod=False,
    summary="Bind: create pods/binding with the pod UID as precondition, reserving the node in the ledger.",
)

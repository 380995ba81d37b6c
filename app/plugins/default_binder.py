"""DefaultBinder: bind the pod through the API server, as kube-scheduler's own DefaultBinder.

Creates ``pods/binding`` with the pod's UID as precondition
(pkg/scheduler/framework/plugins/defaultbinder/default_binder.go). The framework has assumed the
pod on the node at Reserve, before any bind plugin runs, so a filter that runs before the watch
shows the binding already counts it.

Args:

- ``timeoutSeconds``: the whole bind's deadline (default: 80 % of the profile's ``httpTimeout``);
  must be below ``httpTimeout``, because kube-scheduler fails a binding cycle whose extender
  answers late even when the Binding was created.
- ``verifyFit`` (default false): refuse the bind when the pod no longer fits the node by the
  cache's count (``allocatable`` pods, cpu, memory, ephemeral storage, extended resources; upstream
  ``fitsRequest``), checked at Reserve, atomically with the pod's assumption. Two binds racing for
  the last slot then never both succeed. ``ignoredResources`` are not checked (list the extended resources this
  extender manages with ``ignoredByScheduler``).
"""

from __future__ import annotations

import time

from pydantic import Field

from app.framework import (
    BIND_DEADLINE,
    SUCCESS,
    ClusterNeeds,
    CycleState,
    Handle,
    NodeInfo,
    PluginArgs,
    PluginEntry,
    PodInfo,
    PolicyRule,
    Status,
)
from app.framework.fit import insufficient

NAME = "DefaultBinder"


class DefaultBinderArgs(PluginArgs):
    """``DefaultBinder`` args (see the module doc); seconds."""

    timeout_seconds: float | None = Field(default=None, gt=0)
    verify_fit: bool = False
    ignored_resources: list[str] = Field(default_factory=list)


def bind_timeout(args: DefaultBinderArgs, http_timeout: float) -> float:
    """The whole bind's deadline in seconds: ``timeoutSeconds``, default 80 % of ``httpTimeout``."""
    return args.timeout_seconds if args.timeout_seconds is not None else 0.8 * http_timeout


class DefaultBinder:
    """Reserve (``verifyFit``) and Bind, as the module doc says."""

    name = NAME

    def __init__(self, args: DefaultBinderArgs, handle: Handle) -> None:
        timeout = bind_timeout(args, handle.http_timeout)
        if timeout >= handle.http_timeout:
            raise ValueError(
                f"{NAME}: timeoutSeconds {timeout:g} must be below the profile's httpTimeout "
                f"({handle.http_timeout:g}s), or kube-scheduler gives up before the bind answers"
            )
        self.timeout = timeout
        self.cluster = handle.require_cluster(NAME)
        self.verify_fit = args.verify_fit
        self.ignored = frozenset(args.ignored_resources)

    def reserve(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``verifyFit``: refuse when ``pod`` no longer fits ``node`` by the cache's count
        (upstream ``fitsRequest``), atomically with the pod's assumption."""
        if not self.verify_fit:
            return SUCCESS
        if node.node is None:
            return Status.unschedulable("node is not in the extender's cluster state")
        shortages = insufficient(node, pod.requests, self.ignored)
        return Status.unschedulable(", ".join(r.reason for r in shortages)) if shortages else SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Nothing to undo: the assumption is the framework's."""

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Create the Binding within what is left of the cycle's deadline (and ``timeoutSeconds``)."""
        deadline: float | None = state.get(BIND_DEADLINE)
        timeout = self.timeout if deadline is None else min(self.timeout, deadline - time.monotonic())
        if timeout <= 0:
            return Status.error("no time left to bind within the profile's httpTimeout")
        return await self.cluster.bind(pod, node_name, timeout)


PLUGIN = PluginEntry(
    name=NAME,
    factory=DefaultBinder,
    args=DefaultBinderArgs,
    needs_cluster=True,
    needs=lambda args, http_timeout: ClusterNeeds(
        bind_deadline=bind_timeout(args, http_timeout), reserves_capacity=args.verify_fit
    ),
    # POST pods/binding; GET pods to read a pod back after a 409 (app/cluster/binding.py)
    rbac=(PolicyRule(("",), ("pods/binding",), ("create",)), PolicyRule(("",), ("pods",), ("get",))),
    sees_every_pod=False,
    summary="Bind: create pods/binding with the pod UID as precondition, reserving the node in the ledger.",
)

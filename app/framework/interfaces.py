"""Extension-point protocols, in kube-scheduler's vocabulary (``framework/interface.go``).

A plugin is any object with a ``name`` that implements one or more of these methods; the runtime
finds the points a plugin implements with ``isinstance`` against these runtime-checkable protocols.
Plugins are constructed once per profile and shared by concurrent requests: keep per-request data
in the :class:`~app.framework.types.CycleState`, never on ``self``.

Errors: a plugin signals "cannot decide" by returning ``Status.error(...)`` (or, from ``score``,
by raising); any exception a plugin raises is caught and becomes an ``ERROR`` status naming the
plugin. What an ``ERROR`` does is the plugin's configured ``failurePolicy`` (``Fail`` or
``Ignore``), see :mod:`app.framework.runtime`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from app.framework.status import Status
from app.framework.types import CycleState, NodeInfo, NodeScore, PodInfo, PodRef, Victims


@runtime_checkable
class Plugin(Protocol):
    """Every plugin has a PascalCase ``name`` (its registry name)."""

    name: str


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    """Runs once per filter request before Filter.

    Return ``SUCCESS`` to go on, ``SKIP`` to skip this plugin's Filter for this pod, or a
    rejection (``UNSCHEDULABLE``/``UNSCHEDULABLE_AND_UNRESOLVABLE``) that applies to every node.
    """

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    """Decides whether ``pod`` may run on ``node``: ``SUCCESS`` or a rejection with a reason."""

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status: ...


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    """A Filter plugin that can also judge many nodes in one call: ``filter_nodes`` returns, per
    node of ``nodes`` and in their order, exactly the status :meth:`FilterPlugin.filter` would
    (kube-scheduler runs Filter per node on 16 goroutines; here one tight loop over nodes does
    the work instead of one call per node). The runtime uses it when present and evaluates a
    plugin only on the nodes the earlier plugins passed. If it raises, the runtime calls
    ``filter`` per node to find the failing node and apply the failure policy there.
    """

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Sequence[Status]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    """Runs once per prioritize request before Score; ``SKIP`` skips this plugin's Score."""

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    """Scores ``node`` for ``pod``: an integer in 0..100 (``MaxNodeScore``), or any integer when
    the plugin also implements :class:`NormalizeScorePlugin` to map its raw scores onto 0..100."""

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int: ...


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    """A Score plugin that can also score many nodes in one call: ``score_nodes`` returns, per
    node of ``nodes`` and in their order, exactly what :meth:`ScorePlugin.score` would. The
    runtime uses it when present; if it raises, the runtime calls ``score`` per node to name the
    failing node.
    """

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]: ...


@runtime_checkable
class NormalizeScorePlugin(Plugin, Protocol):
    """``ScoreExtensions.NormalizeScore``: rewrites ``scores`` in place to 0..100."""

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status: ...


@runtime_checkable
class PreemptionPlugin(Plugin, Protocol):
    """The extender's part of preemption (kube-scheduler's PostFilter calls the ``preempt`` verb).

    Receives the candidate nodes and their victims as kube-scheduler proposed them and returns
    the candidates it accepts: a node may be dropped, and its victims may be trimmed or
    reordered. The runtime drops a node whose victim list a plugin emptied (an empty list for a
    node that had victims is an error upstream, PROTOCOL.md 3.6) and refuses victims that were
    not proposed for that node.
    """

    def process_preemption(
        self, state: CycleState, pod: PodInfo, candidates: dict[str, Victims]
    ) -> dict[str, Victims]: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    """Binds ``pod`` to ``node_name`` (async: it may wait on the API server or a Permit).

    Returns ``SUCCESS`` when bound, ``SKIP`` when this plugin does not bind this pod (the next
    bind plugin is asked), or an ``ERROR`` status whose message goes back in ``Error``.
    """

    async def bind(self, state: CycleState, pod: PodRef, node_name: str) -> Status: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    """Checked at bind, atomically with the pod's reservation in the assumed-pod ledger
    (kube-scheduler's Reserve, made a check-and-reserve: :meth:`ClusterState.assume`).

    ``reserve(pod, node)`` sees ``node`` with every pod bound or assumed on it so far and returns
    ``None`` to admit the pod or the reason to refuse. It runs under the cache's lock: keep it
    short and never block. Every plugin of a profile that implements it takes part, whatever
    points it is enabled at (upstream enables Reserve with the plugin's other points).
    """

    def reserve(self, pod: PodInfo, node: NodeInfo) -> str | None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    """Runs at bind before any bind plugin (kube-scheduler's Permit): ``SUCCESS`` lets the bind go
    on, any other status fails it with that message. A plugin may hold the pod (``await``) until
    ``deadline`` (``time.monotonic()`` seconds) at most; the event loop is never blocked. Every
    plugin of a profile that implements it takes part, whatever points it is enabled at.
    """

    async def permit(self, state: CycleState, pod: PodRef, node_name: str, deadline: float) -> Status: ...


#: Profile extension-point names and the protocol a plugin must implement to be enabled there.
EXTENSION_POINTS: dict[str, Any] = {
    "filter": FilterPlugin,
    "score": ScorePlugin,
    "preemption": PreemptionPlugin,
    "bind": BindPlugin,
}

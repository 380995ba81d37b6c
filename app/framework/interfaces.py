"""Extension-point protocols, in kube-scheduler's vocabulary (pkg/scheduler/framework/interface.go).

A plugin is any object with a ``name`` that implements one or more of these methods; the profile's
framework puts it, when built, in the ordered list of each point it is enabled at and implements
(``isinstance`` against these runtime-checkable protocols; the points, each with its protocol, are
the table :data:`app.framework.points.EXTENSION_POINTS`). Plugins are constructed once per
profile and shared by concurrent requests: keep per-request data in the
:class:`~app.framework.types.CycleState`, never on ``self``.

Every point returns a :class:`~app.framework.status.Status` (Score and PreFilter with their value);
a plugin signals "cannot decide" with ``Status.error(...)``. An exception a plugin raises is caught
and becomes an ``ERROR`` status naming the plugin. What an ``ERROR`` does is the plugin's
configured ``failurePolicy`` (``Fail`` or ``Ignore``), see :mod:`app.framework.runtime`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from app.framework.events import ClusterEvent, ClusterEventWithHint
from app.framework.nominator import NominatingInfo
from app.framework.status import SUCCESS, Status
from app.framework.types import (
    CycleState,
    NodeInfo,
    NodeScore,
    PodInfo,
    PreFilterResult,
    QueuedPodInfo,
    Victims,
)


@runtime_checkable
class Plugin(Protocol):
    """Every plugin has a PascalCase ``name`` (its registry name)."""

    name: str


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    """Runs once per pod before Filter (``PreFilterPlugin.PreFilter``); ``nodes`` are the
    candidate nodes (every node of the cluster is ``state.snapshot.list()`` when there is cluster
    state).

    Returns ``(result, status)``. ``status``: ``SUCCESS`` to go on, ``SKIP`` to skip this
    plugin's Filter (and its PreFilter extensions) for this pod, or a rejection
    (``UNSCHEDULABLE``/``UNSCHEDULABLE_AND_UNRESOLVABLE``) that applies to every node.
    ``result``: a :class:`~app.framework.types.PreFilterResult` naming the only nodes worth
    evaluating, or ``None`` for all of them (the framework intersects the plugins' results).
    """

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]: ...


@runtime_checkable
class PreFilterExtensions(Plugin, Protocol):
    """``PreFilterExtensions``: keep what PreFilter wrote in ``state`` true when the framework
    evaluates ``pod`` as if ``pod_to_add`` ran on ``node`` (``add_pod``: a nominated pod, a
    reprieved victim) or as if ``pod_to_remove`` no longer did (``remove_pod``: a victim of a
    preemption's dry run). ``node`` already shows the change. ``state`` is a clone the framework
    made for that what-if: state a plugin changes here must implement ``clone()``
    (:meth:`~app.framework.types.CycleState.clone`). Returns ``SUCCESS`` or an ``ERROR``."""

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status: ...

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status: ...


class PreFilterStateExtensions:
    """:class:`PreFilterExtensions` for a plugin whose PreFilter writes, under
    :attr:`pre_filter_key`, a state with ``update_with_pod(pod, node, delta)`` (and ``clone()``):
    ``add_pod`` counts ``pod_to_add`` on ``node`` (``delta`` 1), ``remove_pod`` uncounts
    ``pod_to_remove`` (-1), as upstream's InterPodAffinity and PodTopologySpread extensions do.
    An ``ERROR`` when PreFilter wrote nothing (``reading "<key>" from cycleState``)."""

    #: the cycle-state key of the plugin's PreFilter state
    pre_filter_key: str

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status:
        """``AddPod``."""
        return self._update_pre_filter_state(state, pod_to_add, node, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status:
        """``RemovePod``."""
        return self._update_pre_filter_state(state, pod_to_remove, node, -1)

    def _update_pre_filter_state(self, state: CycleState, other: PodInfo, node: NodeInfo, delta: int) -> Status:
        found = state.get(self.pre_filter_key)
        if found is None:
            return Status.error(f'reading "{self.pre_filter_key}" from cycleState: not found')
        found.update_with_pod(other, node, delta)
        return SUCCESS


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    """Decides whether ``pod`` may run on ``node``: ``SUCCESS`` or a rejection with a reason
    (``ERROR`` when it cannot decide)."""

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status: ...


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    """A Filter plugin whose one implementation judges many nodes per call: ``filter_nodes``
    returns, per node of ``nodes`` and in their order, its status (kube-scheduler runs Filter per
    node on 16 goroutines; here one tight loop over nodes does the work instead of one call per
    node). Its ``filter`` is then that batch of one node (``filter_nodes(state, pod, (node,))[0]``):
    one evaluation path, never two copies of the logic. The framework calls ``filter_nodes``
    whenever the plugin has it, on the nodes every earlier plugin passed.
    """

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Sequence[Status]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    """Runs once per pod before Score, with the nodes to score; ``SKIP`` skips this plugin's
    Score for the pod."""

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    """Scores ``node`` for ``pod`` (``ScorePlugin.Score``): ``(score, status)``, the score an
    integer in 0..100 (``MaxNodeScore``), or any integer when the plugin also implements
    :class:`NormalizeScorePlugin` to map its raw scores onto 0..100; the status ``SUCCESS`` or an
    ``ERROR`` (the score is then ignored)."""

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]: ...


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    """A Score plugin whose one implementation scores many nodes per call: ``score_nodes``
    returns ``(scores, status)``, one score per node of ``nodes`` in their order (its ``score`` is
    that batch of one node). The framework calls ``score_nodes`` whenever the plugin has it."""

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]: ...


@runtime_checkable
class NormalizeScorePlugin(Plugin, Protocol):
    """``ScoreExtensions.NormalizeScore``: rewrites ``scores`` in place to 0..100."""

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status: ...


@runtime_checkable
class BatchNormalizeScorePlugin(NormalizeScorePlugin, Protocol):
    """A NormalizeScore plugin whose normalization reads the scores alone, not the nodes' names:
    ``normalize_scores`` rewrites a list of scores in place, one per node in their order, as
    ``normalize_score`` rewrites the same scores held in NodeScores (its ``normalize_score`` is
    that list's). The framework calls ``normalize_scores`` whenever the plugin has it, and builds
    no NodeScore."""

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: list[int]) -> Status: ...


@runtime_checkable
class PreemptionPlugin(Plugin, Protocol):
    """The extender's part of preemption (kube-scheduler's PostFilter calls the ``preempt`` verb).

    Receives the candidate nodes and their victims as kube-scheduler proposed them and returns
    ``(candidates, status)``: the candidates it accepts (a node may be dropped, and its victims
    may be trimmed or reordered) and ``SUCCESS``, or an ``ERROR`` status. The runtime drops a node
    whose victim list a plugin emptied (an empty list for a node that had victims is an error
    upstream, ``convertToVictims`` in pkg/scheduler/extender.go) and refuses victims that were
    not proposed for that node.
    """

    def process_preemption(
        self, state: CycleState, pod: PodInfo, candidates: dict[str, Victims]
    ) -> tuple[dict[str, Victims], Status]: ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    """Runs when no node passed Filter (kube-scheduler's PostFilter, e.g. DefaultPreemption).

    ``statuses`` maps each node name to the status Filter gave it (a node without a status was
    not evaluated: outside the PreFilterResult). Returns ``(result, status)``: the result a
    :class:`~app.framework.nominator.NominatingInfo` (``PostFilterResult``: the node the pod is
    nominated to; a plain node name reads as ``ModeOverride``, ``""`` as nil) and the status:
    ``SUCCESS`` when it made room (the pod is retried), a rejection otherwise.
    """

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: Mapping[str, Status]
    ) -> tuple[NominatingInfo | str, Status]: ...


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    """Decides whether a pod may enter the active queue at all (kube-scheduler's PreEnqueue, e.g.
    SchedulingGates): ``SUCCESS`` to admit it, any other status to keep it out (a gated pod is
    never attempted). Must be cheap: it runs on every queue change of the pod."""

    def pre_enqueue(self, pod: PodInfo) -> Status: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    """Orders the active queue (kube-scheduler's QueueSort, e.g. PrioritySort): ``less(a, b)``
    is whether ``a`` is tried before ``b``. A profile has exactly one."""

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    """kube-scheduler's Reserve and Unreserve (``framework/interface.go`` ``ReservePlugin``).

    ``reserve(state, pod, node)`` runs once a node is chosen, in the same atomic step as the pod's
    assumption in the cluster state (:meth:`~app.framework.handle.ClusterHandle.assume`): ``node``
    shows every pod bound or assumed there so far, not yet ``pod``. It returns ``SUCCESS`` to
    admit the pod or a rejection with the reason. It runs under the cluster state's lock: keep it
    short, never block, and never call back into the cluster state.

    ``unreserve(state, pod, node_name)`` undoes whatever ``reserve`` (or later points) did. The
    framework calls it on every Reserve plugin, in reverse order, whenever the pod fails after
    Reserve (a Reserve or Permit rejection, a failed PreBind or Bind), whether or not this plugin's
    own ``reserve`` ran: it must be idempotent. A plugin of the profile that implements Reserve
    takes part whatever points it is enabled at, unless disabled at ``reserve``
    (:func:`~app.framework.points.implied`).
    """

    def reserve(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    """kube-scheduler's Permit: runs after Reserve. Returns ``(status, timeout)``: ``SUCCESS`` to
    let the pod be bound, a rejection to fail it (Unreserve follows), or ``WAIT`` with ``timeout``
    seconds: the pod then waits, keeping its reservation, until every plugin that asked it to wait
    allows it through :class:`~app.framework.waiting.WaitingPods` (``allow``), one rejects it, or
    the timeout passes ("rejected due to timeout after waiting ..."). Never blocks: waiting is the
    framework's. Every plugin of a profile that implements it takes part, unless disabled at
    ``permit`` (:func:`~app.framework.points.implied`).
    """

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    """kube-scheduler's PreBind: runs after Permit, before Bind (async: it may call the API
    server). A non-success status fails the binding cycle (Unreserve follows). A plugin may also
    define ``pre_bind_pre_flight(state, pod, node_name) -> Status`` (v1.36.3's
    ``PreBindPreFlight``, cheap, no API call): ``SUCCESS`` when its PreBind has work for the pod,
    ``SKIP`` when it has none (its PreBind is then not run), or an error; without it the plugin
    counts as having work."""

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    """Binds ``pod`` to ``node_name`` (async: it waits on the API server).

    Runs only after Reserve and Permit admitted the pod: a bind plugin cannot skip them. Returns
    ``SUCCESS`` when bound, ``SKIP`` when this plugin does not bind this pod (the next bind plugin
    is asked), or an ``ERROR`` status whose message goes back in ``Error``.
    """

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    """kube-scheduler's PostBind: informational, after a successful Bind."""

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    """The cluster events that may make a pod this plugin rejected schedulable, each with its
    queueing hint (``fwk.EnqueueExtensions.EventsToRegister``, v1.36.3
    staging/src/k8s.io/kube-scheduler/framework/interface.go): the scheduling queue moves a
    parked pod back only when a hint of one of its rejecting plugins returns ``Queue`` for an
    event that happened (a plain :class:`ClusterEvent`: registered without a hint, always
    ``Queue``; an empty list: no event moves it, only the pool's flush)."""

    def events_to_register(self) -> Sequence[ClusterEventWithHint | ClusterEvent]: ...


#: A signature fragment (``fwk.SignFragment``): ``(key, value)``, the value JSON-serializable.
SignFragment = tuple[str, Any]


@runtime_checkable
class SignPlugin(Plugin, Protocol):
    """kube-scheduler's ``SignPlugin`` (v1.36.3 staging/src/k8s.io/kube-scheduler/framework/
    interface.go, KEP-5598 opportunistic batching): what of the pod this plugin's PreFilter,
    Filter, PreScore and Score read, as fragments. Two pods with equal fragments from every
    plugin of the profile are judged alike on the same nodes. A status that is not ``SUCCESS``
    (``Unschedulable``: "pods with X are not signable") makes the pod unsignable."""

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]: ...

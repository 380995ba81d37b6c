"""The framework runtime: a profile's plugins in one ordered list per extension point, each point
run as kube-scheduler's ``frameworkImpl`` runs it (pkg/scheduler/framework/runtime/framework.go,
v1.30).

The points and what runs them:

- QueueSort, PreEnqueue: the standalone scheduler's queue (:mod:`app.scheduler.queue`).
- PreFilter (:meth:`Framework.run_pre_filter_plugins`: ``RunPreFilterPlugins`` with its
  :class:`~app.framework.types.PreFilterResult`), Filter (:meth:`Framework.run_filter_plugins`, a
  node's verdict the first status that is no success, plugin by plugin over the nodes still
  passing), the nominated pods' second pass (:meth:`Framework.run_filter_plugins_with_nominated_pods`)
  and the PreFilter extensions (``AddPod``/``RemovePod``) a what-if updates the cycle's state with.
- PostFilter (:meth:`Framework.run_post_filter`), PreScore and Score
  (:meth:`Framework.run_pre_score_plugins`, :meth:`Framework.run_score_plugins`: each node's
  weighted plugin scores and their sum, ``TotalScore``).
- the cycle after a node is chosen: Reserve (the pod assumed in the cluster state and every
  Reserve plugin, atomically), Permit (a pod may wait, keeping its reservation,
  :mod:`app.framework.waiting`), then the binding cycle: WaitOnPermit, PreBind, Bind (the first
  bind plugin that does not return ``SKIP`` decides), PostBind; any failure after Reserve runs
  Unreserve on every Reserve plugin in reverse order and forgets the assumption.
- this service's own: the extender's ``filter`` (:meth:`Framework.run_filter`: PreFilter and
  Filter over the nodes sent), ``preempt`` (:meth:`Framework.run_preemption`) and ``bind``
  (:meth:`Framework.run_bind_verb`, within :data:`BIND_BUDGET` of the profile's ``httpTimeout``).

An ``ERROR`` status (or an exception) from a plugin follows that plugin's ``failurePolicy``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from app.framework.errors import SchedulerExtenderError
from app.framework.events import ANY_EVENT, ClusterEvent
from app.framework.handle import ClusterHandle, Handle
from app.framework.interfaces import (
    BatchFilterPlugin,
    BatchNormalizeScorePlugin,
    BatchScorePlugin,
    BindPlugin,
    FilterPlugin,
    NormalizeScorePlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreemptionPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from app.framework.nominator import NOMINATING_NOOP, NominatingInfo, NominatingMode, PodNominator
from app.framework.status import SUCCESS, Code, Status
from app.framework.types import (
    CycleState,
    NodeInfo,
    NodePluginScores,
    NodeScore,
    ObjectDecodeError,
    PluginScore,
    PodInfo,
    PodRef,
    PreFilterResult,
    Victims,
)
from app.framework.waiting import MAX_TIMEOUT, WaitingPod, WaitingPods

log = logging.getLogger(__name__)

#: ``framework.MaxNodeScore`` and ``MinNodeScore``: the range of a Score plugin's score.
MAX_NODE_SCORE, MIN_NODE_SCORE = 100, 0
#: ``extenderv1.MaxExtenderPriority``: the top of the score range on the wire.
MAX_EXTENDER_PRIORITY = 10
#: CycleState key of a binding cycle: the ``time.monotonic()`` by which it must end (the
#: extender's bind verb), absent when it has no deadline (the standalone scheduler).
BIND_DEADLINE = "framework/bind-deadline"
#: ``Status.reason_code`` of a Bind that failed without knowing whether the Binding was created
#: (a timeout): the assumption is kept until the watch shows the pod or the assumption expires.
BINDING_UNCERTAIN = "BindingUncertain"
#: The share of ``httpTimeout`` a bind (Permit included) may use; the rest is for the answer to
#: reach kube-scheduler, which fails a binding cycle whose extender answers late.
BIND_BUDGET = 0.9
#: Seconds of a bind's budget kept for the Binding itself when the bind waits for its admission
#: (the watch's first sync, the warm-up): a bind admitted later than its deadline minus this
#: answers ``Error`` at once instead of waiting.
ADMISSION_MARGIN = 1.0
#: What kube-scheduler v1.30 gives a node the extender's filter was sent but a PreFilterResult
#: excludes (the extender must answer every node; the scheduler leaves such nodes out)
ERR_REASON_PRE_FILTER_RESULT = "node is filtered out by the prefilter result"
_FILTERED_OUT = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_PRE_FILTER_RESULT,), reason_code="PreFilterResult"
)


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> Status:
    """kube-scheduler's ``helper.DefaultNormalizeScore``
    (pkg/scheduler/framework/plugins/helper/normalize_score.go): scale ``scores`` in place to
    0..``max_priority`` by the highest (integer division, as upstream); all zero: ``max_priority``
    each when ``reverse``, else unchanged; ``reverse`` then flips every score
    (``max_priority - score``)."""
    highest = max((s.score for s in scores), default=0)
    if highest == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return SUCCESS
    for s in scores:
        score = max_priority * s.score // highest
        s.score = max_priority - score if reverse else score
    return SUCCESS


class FrameworkError(SchedulerExtenderError):
    """A verb could not be answered because a fail-closed plugin returned ``ERROR``."""

    def __init__(self, plugin: str, message: str) -> None:
        super().__init__(f"{plugin}: {message}" if plugin else message)
        self.plugin = plugin


@dataclass(frozen=True)
class EnabledPlugin:
    """A plugin instance at one extension point, with its weight and ``failure_policy``:
    ``Fail`` (an ``ERROR`` fails the verb) or ``Ignore`` (the plugin is skipped where it erred)."""

    name: str
    plugin: Plugin
    weight: int = 1
    failure_policy: str = "Fail"

    @property
    def ignores_errors(self) -> bool:
        """``failurePolicy: Ignore``."""
        return self.failure_policy == "Ignore"


#: point -> the protocol a plugin implements to take part in it
PROTOCOLS: dict[str, Any] = {
    "queue_sort": QueueSortPlugin,
    "pre_enqueue": PreEnqueuePlugin,
    "pre_filter": PreFilterPlugin,
    "filter": FilterPlugin,
    "post_filter": PostFilterPlugin,
    "pre_score": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "pre_bind": PreBindPlugin,
    "bind": BindPlugin,
    "post_bind": PostBindPlugin,
    "preemption": PreemptionPlugin,
}


@dataclass(frozen=True)
class PluginLists:
    """A profile's plugins, one ordered list per extension point (``frameworkImpl``'s
    ``preFilterPlugins``, ``filterPlugins``...), as ``expandMultiPointPlugins`` builds them
    (:func:`app.framework.build.build_framework`; :func:`plugin_lists` for a hand-made profile).
    ``preemption`` is the extender's ``preempt`` verb."""

    queue_sort: tuple[EnabledPlugin, ...] = ()
    pre_enqueue: tuple[EnabledPlugin, ...] = ()
    pre_filter: tuple[EnabledPlugin, ...] = ()
    filter: tuple[EnabledPlugin, ...] = ()
    post_filter: tuple[EnabledPlugin, ...] = ()
    pre_score: tuple[EnabledPlugin, ...] = ()
    score: tuple[EnabledPlugin, ...] = ()
    reserve: tuple[EnabledPlugin, ...] = ()
    permit: tuple[EnabledPlugin, ...] = ()
    pre_bind: tuple[EnabledPlugin, ...] = ()
    bind: tuple[EnabledPlugin, ...] = ()
    post_bind: tuple[EnabledPlugin, ...] = ()
    preemption: tuple[EnabledPlugin, ...] = ()


def implementing(point: str, plugins: Sequence[EnabledPlugin]) -> tuple[EnabledPlugin, ...]:
    """The plugins of ``plugins`` that implement ``point``, once each, in their order."""
    seen: set[int] = set()
    out = []
    for ep in plugins:
        if id(ep.plugin) not in seen and isinstance(ep.plugin, PROTOCOLS[point]):
            seen.add(id(ep.plugin))
            out.append(ep)
    return tuple(out)


def plugin_lists(
    *,
    queue_sort: Sequence[EnabledPlugin] = (),
    pre_enqueue: Sequence[EnabledPlugin] = (),
    filter: Sequence[EnabledPlugin] = (),
    post_filter: Sequence[EnabledPlugin] = (),
    score: Sequence[EnabledPlugin] = (),
    reserve: Sequence[EnabledPlugin] | None = None,
    permit: Sequence[EnabledPlugin] | None = None,
    bind: Sequence[EnabledPlugin] = (),
    preemption: Sequence[EnabledPlugin] = (),
    pre_filter: Sequence[EnabledPlugin] | None = None,
    pre_score: Sequence[EnabledPlugin] | None = None,
    pre_bind: Sequence[EnabledPlugin] | None = None,
    post_bind: Sequence[EnabledPlugin] | None = None,
) -> PluginLists:
    """:class:`PluginLists` from the points a profile configures; a point left ``None`` is this
    service's implied list: PreFilter the Filter plugins that implement it, PreScore the Score
    plugins that do, Reserve, Permit, PreBind and PostBind every plugin given that implements it
    (in the order given, first point first). The :class:`Framework` checks the lists."""
    every = [*queue_sort, *pre_enqueue, *filter, *post_filter, *score, *bind, *preemption]
    every += [*(reserve or ()), *(permit or ())]
    lists = PluginLists(
        queue_sort=tuple(queue_sort),
        pre_enqueue=tuple(pre_enqueue),
        pre_filter=tuple(pre_filter) if pre_filter is not None else implementing("pre_filter", filter),
        filter=tuple(filter),
        post_filter=tuple(post_filter),
        pre_score=tuple(pre_score) if pre_score is not None else implementing("pre_score", score),
        score=tuple(score),
        reserve=tuple(reserve) if reserve is not None else implementing("reserve", every),
        permit=tuple(permit) if permit is not None else implementing("permit", every),
        pre_bind=tuple(pre_bind) if pre_bind is not None else implementing("pre_bind", every),
        bind=tuple(bind),
        post_bind=tuple(post_bind) if post_bind is not None else implementing("post_bind", every),
        preemption=tuple(preemption),
    )
    return lists


#: What an answer says of a plugin's unexpected exception: the exception itself (class, message,
#: traceback, which may name hosts or objects) goes to the log only.
PLUGIN_FAILED = "plugin failed unexpectedly (the extender's log has the details)"


def _describe(exc: BaseException) -> str:
    """The answer's text for a plugin exception; logs the exception with its traceback. (A
    malformed quantity in a request is the data's fault: ``PodInfo.requests`` and
    ``NodeInfo.allocatable`` raise :class:`ObjectDecodeError` for it, which the runtime lets
    through as a 400.)"""
    log.error("plugin raised %s", type(exc).__name__, exc_info=exc)
    return PLUGIN_FAILED


def _error_text(status: Status) -> str:
    if status.code is Code.ERROR:
        return status.message or "error"
    return f"unexpected status {status.code.name}" + (f": {status.message}" if status.reasons else "")


@dataclass
class FilterOutcome:
    """Result of :meth:`Framework.run_filter` (the extender's filter).

    ``statuses[i]`` is the verdict for ``nodes[i]`` (``SUCCESS`` for a node that passes, otherwise
    the rejecting plugin's status). ``error`` is set when a fail-closed plugin errored; the node
    verdicts are then meaningless. ``ignored_errors`` counts errors swallowed by fail-open plugins.
    """

    statuses: list[Status]
    error: str = ""
    ignored_errors: dict[str, int] = field(default_factory=dict)
    #: the fail-closed plugin whose error set ``error``, and its status's ``reason_code``
    error_plugin: str = ""
    error_code: str = ""
    #: a PreFilter's rejection, which every node then carries (FitError's ``PreFilterMsg``)
    pre_filter: Status | None = None


@dataclass
class ScoreResult:
    """Result of :meth:`Framework.run_score_plugins` (``RunScorePlugins``), by column: for the
    plugins that scored (in profile order), ``plugin_scores[name][i]`` is the 0..100 score of
    ``nodes[i]`` after NormalizeScore and ``weights[name]`` the plugin's weight; ``totals[i]`` is
    the node's ``TotalScore``, the sum of weight x score. ``skipped`` names the plugins that did
    not score and why (PreScore ``Skip``, an ignored error)."""

    nodes: Sequence[NodeInfo]
    plugin_scores: dict[str, list[int]] = field(default_factory=dict)
    weights: dict[str, int] = field(default_factory=dict)
    totals: list[int] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    def node_plugin_scores(self) -> list[NodePluginScores]:
        """The same by row (``[]framework.NodePluginScores``): each node's weighted plugin scores
        in profile order and their sum."""
        out = []
        for i, node in enumerate(self.nodes):
            scores = [PluginScore(name, values[i] * self.weights[name]) for name, values in self.plugin_scores.items()]
            out.append(NodePluginScores(node.name, scores, self.totals[i]))
        return out


class _FilterCall(NamedTuple):
    """One Filter plugin as the framework calls it: its per-node ``filter`` and, when its
    implementation is a batch, ``filter_nodes`` (found once when the framework is built:
    ``isinstance`` against a runtime-checkable protocol costs microseconds)."""

    ep: EnabledPlugin
    one: Callable[[CycleState, PodInfo, NodeInfo], Status]
    batch: Callable[[CycleState, PodInfo, Sequence[NodeInfo]], Sequence[Status]] | None


class _ScoreCall(NamedTuple):
    """One Score plugin as the framework calls it: its per-node ``score``, its ``score_nodes``
    when it scores a batch, its NormalizeScore, and ``normalize_scores`` when that reads the
    scores alone (each found once when the framework is built)."""

    ep: EnabledPlugin
    one: Callable[[CycleState, PodInfo, NodeInfo], tuple[int, Status]]
    batch: Callable[[CycleState, PodInfo, Sequence[NodeInfo]], tuple[list[int], Status]] | None
    normalize: NormalizeScorePlugin | None
    normalize_values: Callable[[CycleState, PodInfo, list[int]], Status] | None = None


class Framework(Handle):
    """A profile's plugins, ready to run: one per profile, shared by concurrent requests, holding no
    request state. It is the :class:`~app.framework.handle.Handle` its plugins are built with.

    ``plugins``: the per-point lists (:class:`PluginLists`), or a function building them from this
    framework as the plugins' handle (what :func:`~app.framework.build.build_framework` passes, as
    upstream's ``NewFramework`` builds each plugin with the framework it joins). ``cluster``: the
    cluster state (``None``: :data:`~app.framework.handle.NO_CLUSTER`). ``nominator``: the pods
    nominated to nodes (the standalone schedulers'). ``shared_reserve``: Reserve plugins of other
    profiles whose reservations hold cluster-wide (a live list: profiles built later add theirs);
    checked after this profile's own. Raises ``ValueError`` for a plugin at a point it does not
    implement.
    """

    def __init__(
        self,
        profile: str,
        plugins: PluginLists | Callable[[Framework], PluginLists] = PluginLists(),
        *,
        http_timeout: float = 5.0,
        cluster: ClusterHandle | None = None,
        waiting_pods: WaitingPods | None = None,
        nominator: PodNominator | None = None,
        shared_reserve: Sequence[ReservePlugin] = (),
        bind_warm_up: bool = True,
    ) -> None:
        super().__init__(profile, http_timeout, cluster, waiting_pods, nominator)
        lists = plugins(self) if callable(plugins) else plugins
        self.shared_reserve = shared_reserve
        #: whether this profile's binds wait out the cluster's warm-up (a Reserve of its, or a
        #: cluster-wide one, guards capacity: :attr:`~app.framework.handle.ClusterNeeds.guards_capacity`)
        self.bind_warm_up = bind_warm_up
        for point, protocol in PROTOCOLS.items():
            for ep in getattr(lists, point):
                if not isinstance(ep.plugin, protocol):
                    raise ValueError(f"plugin {ep.name} does not implement the {point} extension point")
        if len(lists.queue_sort) > 1:
            raise ValueError("only one QueueSort plugin can be enabled")
        self.queue_sort_plugins = lists.queue_sort
        self.pre_enqueue_plugins = lists.pre_enqueue
        self.pre_filter_plugins = lists.pre_filter
        self.filter_plugins = lists.filter
        self.post_filter_plugins = lists.post_filter
        self.pre_score_plugins = lists.pre_score
        self.score_plugins = lists.score
        self.preemption_plugins = lists.preemption
        self.bind_plugins = lists.bind
        #: the plain plugins of the cycle after a node is chosen, in their order
        self.reserve_plugins: tuple[ReservePlugin, ...] = tuple(ep.plugin for ep in lists.reserve)  # type: ignore[misc]
        self.permit_plugins: tuple[PermitPlugin, ...] = tuple(ep.plugin for ep in lists.permit)  # type: ignore[misc]
        self.pre_bind_plugins: tuple[PreBindPlugin, ...] = tuple(ep.plugin for ep in lists.pre_bind)  # type: ignore[misc]
        self.post_bind_plugins: tuple[PostBindPlugin, ...] = tuple(ep.plugin for ep in lists.post_bind)  # type: ignore[misc]
        for ep in lists.score:
            if ep.weight <= 0:
                raise ValueError(f"score plugin {ep.name}: weight must be > 0")
        self._filters = tuple(
            _FilterCall(
                ep,
                ep.plugin.filter,  # type: ignore[attr-defined]
                ep.plugin.filter_nodes if isinstance(ep.plugin, BatchFilterPlugin) else None,
            )
            for ep in lists.filter
        )
        self._scores = tuple(
            _ScoreCall(
                ep,
                ep.plugin.score,  # type: ignore[attr-defined]
                ep.plugin.score_nodes if isinstance(ep.plugin, BatchScorePlugin) else None,
                ep.plugin if isinstance(ep.plugin, NormalizeScorePlugin) else None,
                ep.plugin.normalize_scores if isinstance(ep.plugin, BatchNormalizeScorePlugin) else None,
            )
            for ep in lists.score
        )
        self._extensions = tuple(
            (ep.name, ep.plugin) for ep in lists.pre_filter if isinstance(ep.plugin, PreFilterExtensions)
        )
        unique: dict[int, Plugin] = {}
        for point in PROTOCOLS:
            for ep in getattr(lists, point):
                unique.setdefault(id(ep.plugin), ep.plugin)
        #: every plugin of the profile, once, in point order
        self.plugins = tuple(unique.values())

    # -- PreFilter and Filter ---------------------------------------------------------------------

    def run_pre_filter_plugins(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """``RunPreFilterPlugins``: each PreFilter in order; a ``Skip`` puts the plugin in
        ``state.skip_filter_plugins``. Returns the intersection of their results (``None``: every
        node) and ``SUCCESS``; an ``UnschedulableAndUnresolvable`` at once; an ``Unschedulable``
        after every PreFilter ran (preemption may need their state); ``UnschedulableAndUnresolvable``
        ``node(s) didn't satisfy plugin(s) [A B] simultaneously`` when the results leave no node;
        an ``ERROR`` naming the plugin (its message the plugin's; an ignored one counted in
        ``state.ignored_errors``)."""
        skipped: set[str] = set()
        result: PreFilterResult | None = None
        with_nodes: list[str] = []
        rejected: Status | None = None
        try:
            for ep in self.pre_filter_plugins:
                try:
                    answer, status = ep.plugin.pre_filter(state, pod, nodes)  # type: ignore[attr-defined]
                except ObjectDecodeError:
                    raise
                except Exception as exc:
                    answer, status = None, Status.error(_describe(exc))
                code = status.code
                if code is Code.SKIP:
                    skipped.add(ep.name)
                    continue
                if code is Code.UNSCHEDULABLE or code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    if not status.reasons:
                        status = Status(code, (f"rejected by {ep.name}",), reason_code=status.reason_code)
                    status = status.with_plugin(ep.name)
                    if code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                        return None, status
                    rejected = status
                    continue
                if code is not Code.SUCCESS:
                    if ep.ignores_errors:
                        state.ignore_error(ep.name)
                        continue
                    return None, Status(Code.ERROR, (_error_text(status),), ep.name, status.reason_code)
                if answer is not None and not answer.all_nodes():
                    with_nodes.append(ep.name)
                result = answer.merge(result) if answer is not None else result
                if result is not None and not result.all_nodes() and not result.node_names:
                    if len(with_nodes) == 1:
                        message = f"node(s) didn't satisfy plugin {with_nodes[0]}"
                    else:
                        message = f"node(s) didn't satisfy plugin(s) [{' '.join(with_nodes)}] simultaneously"
                    return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))
        finally:
            state.skip_filter_plugins = frozenset(skipped)
        return result, rejected or SUCCESS

    def filter_statuses(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status]:
        """Each node's Filter verdict (``RunFilterPlugins`` per node), plugin by plugin over the
        nodes every earlier plugin passed (a batch plugin in one call): ``SUCCESS``, the first
        rejection (attributed to its plugin), or an ``ERROR`` with the plugin's own message and
        name (a ``failurePolicy: Ignore`` plugin's error counted in ``state.ignored_errors`` and
        passed). The plugins PreFilter skipped are not run."""
        return self._filter_statuses(state, pod, nodes)[0]

    def _filter_statuses(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[Status], int]:
        """:meth:`filter_statuses` and the index of the first node with an ``ERROR`` (-1: none)."""
        first_error = -1
        count = len(nodes)
        statuses: list[Status] = [SUCCESS] * count
        pending: list[int] | None = None  # None: every node
        skip = state.skip_filter_plugins
        for call in self._filters:
            ep = call.ep
            if skip and ep.name in skip:
                continue
            subset = nodes if pending is None else [nodes[i] for i in pending]
            if not subset:
                break
            # the plugin's verdict on each node of subset: its batch in one call, else filter per
            # node; an exception is an ERROR (of every node of a batch that raised)
            verdicts: Sequence[Status]
            if call.batch is not None:
                try:
                    verdicts = call.batch(state, pod, subset)
                except ObjectDecodeError:
                    raise
                except Exception as exc:
                    verdicts = [Status.error(_describe(exc))] * len(subset)
                if len(verdicts) != len(subset):
                    message = f"filter_nodes returned {len(verdicts)} statuses for {len(subset)} nodes"
                    verdicts = [Status.error(message)] * len(subset)
            else:
                one = call.one
                verdicts = []
                append = verdicts.append
                for node in subset:
                    try:
                        append(one(state, pod, node))
                    except ObjectDecodeError:
                        raise
                    except Exception as exc:
                        append(Status.error(_describe(exc)))
            still: list[int] = []
            attributed: dict[int, Status] = {}
            for i, status in zip(range(count) if pending is None else pending, verdicts, strict=True):
                code = status.code
                if code is Code.SUCCESS:
                    still.append(i)
                elif code is Code.UNSCHEDULABLE or code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    # one attributed copy per distinct status object, not one per node
                    named = attributed.get(id(status))
                    if named is None:
                        named = status if status.reasons else Status(code, (f"rejected by {ep.name}",))
                        named = attributed[id(status)] = named.with_plugin(ep.name)
                    statuses[i] = named
                elif ep.ignores_errors:
                    state.ignore_error(ep.name)
                    still.append(i)
                else:
                    statuses[i] = Status(Code.ERROR, (_error_text(status),), ep.name, status.reason_code)
                    if first_error < 0 or i < first_error:
                        first_error = i
            pending = still
        return statuses, first_error

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``RunFilterPlugins`` for one node: ``SUCCESS``, the first rejection, or an ``ERROR``
        ``running "<plugin>" filter plugin: <message>``."""
        return filter_error(self.filter_statuses(state, pod, (node,))[0])

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``RunFilterPluginsWithNominatedPods``: when pods of at least ``pod``'s priority are
        nominated to ``node`` (``pod`` itself excepted: ``addNominatedPods``), Filter first with
        them counted there (the node with them added, the cycle's state cloned and updated by the
        PreFilter extensions' ``AddPod``), and, when that passes, again on ``node`` as it is; else
        once, as it is. The first status that is no success, else ``SUCCESS``: a preemptor's room
        is not given away, and an affinity only a nominated pod satisfies does not count."""
        return self.filter_with_nominated_pods(state, pod, node, self.nominated_to_add(pod, node))

    def filter_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, added: Sequence[PodInfo]
    ) -> Status:
        """:meth:`run_filter_plugins_with_nominated_pods` with the nominated pods to count on
        ``node`` already found (:meth:`nominated_to_add`), for a caller that looked them up to
        decide how to judge the node."""
        if added:
            outcome, state_out, node_out = self._add_nominated(state, pod, node, added)
            if outcome is not None:
                return outcome
            status = self.run_filter_plugins(state_out, pod, node_out)
            if not status.is_success():
                return status
        return self.run_filter_plugins(state, pod, node)

    def nominated_to_add(self, pod: PodInfo, node: NodeInfo) -> list[PodInfo]:
        """The pods ``addNominatedPods`` counts on ``node`` for ``pod``: those nominated there with
        a priority at least ``pod``'s, ``pod`` itself excepted."""
        nominated = self.nominator.nominated_pods_for_node(node.name)
        if not nominated:
            return nominated
        priority, uid = pod.priority, pod.uid
        return [p for p in nominated if p.priority >= priority and p.uid != uid]

    def _add_nominated(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, added: Sequence[PodInfo]
    ) -> tuple[Status | None, CycleState, NodeInfo]:
        """``addNominatedPods``: the node with ``added`` counted and a clone of ``state`` their
        ``AddPod`` updated; an ``ERROR`` first when an extension failed."""
        snapshot = state.snapshot
        node_out = snapshot.with_pods(node, added) if snapshot is not None else node
        state_out = state.clone()
        for nominated in added:
            status = self.run_pre_filter_extension_add_pod(state_out, pod, nominated, node_out)
            if not status.is_success():
                return status, state, node
        return None, state_out, node_out

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, added: PodInfo, node: NodeInfo
    ) -> Status:
        """``RunPreFilterExtensionAddPod``: every PreFilter plugin with extensions (not skipped)
        updates ``state`` as if ``added`` ran on ``node``; ``ERROR`` ``running AddPod on PreFilter
        plugin "<plugin>": <message>`` when one fails."""
        return self._extend(state, pod, added, node, "AddPod")

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, removed: PodInfo, node: NodeInfo
    ) -> Status:
        """``RunPreFilterExtensionRemovePod``: as :meth:`run_pre_filter_extension_add_pod`, for
        ``removed`` no longer running on ``node``."""
        return self._extend(state, pod, removed, node, "RemovePod")

    def _extend(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo, which: str) -> Status:
        skip = state.skip_filter_plugins
        for name, plugin in self._extensions:
            if skip and name in skip:
                continue
            try:
                if which == "AddPod":
                    status = plugin.add_pod(state, pod, other, node)
                else:
                    status = plugin.remove_pod(state, pod, other, node)
            except ObjectDecodeError:
                raise
            except Exception as exc:
                status = Status.error(_describe(exc))
            if not status.is_success():
                message = f'running {which} on PreFilter plugin "{name}": {status.message or "error"}'
                return Status(Code.ERROR, (message,), name)
        return SUCCESS

    def run_filter(self, pod: PodInfo, nodes: Sequence[NodeInfo], state: CycleState | None = None) -> FilterOutcome:
        """The extender's filter: PreFilter, then Filter over ``nodes`` (see :class:`FilterOutcome`).
        A node a PreFilterResult excludes gets what v1.30 records for it,
        ``UnschedulableAndUnresolvable`` "node is filtered out by the prefilter result". Errors
        read ``<plugin>: PreFilter: <message>`` and ``<plugin>: node <name>: <message>``."""
        state = state if state is not None else CycleState()
        result, status = self.run_pre_filter_plugins(state, pod, nodes)
        ignored = state.ignored_errors
        if status.code is Code.ERROR:
            message = f"{status.plugin}: PreFilter: {status.message}"
            return FilterOutcome([], message, ignored, status.plugin, status.reason_code)
        if status.is_rejected():
            return FilterOutcome([status] * len(nodes), "", ignored, pre_filter=status)
        if result is None or result.node_names is None:
            statuses, first_error = self._filter_statuses(state, pod, nodes)
        else:
            names = result.node_names
            kept = [i for i, n in enumerate(nodes) if n.name in names]
            statuses = [_FILTERED_OUT] * len(nodes)
            verdicts, first_error = self._filter_statuses(state, pod, [nodes[i] for i in kept])
            for i, verdict in zip(kept, verdicts, strict=True):
                statuses[i] = verdict
            first_error = kept[first_error] if first_error >= 0 else -1
        if first_error >= 0:
            verdict = statuses[first_error]
            message = f"{verdict.plugin}: node {nodes[first_error].name}: {verdict.message}"
            return FilterOutcome([], message, ignored, verdict.plugin, verdict.reason_code)
        return FilterOutcome(statuses, "", ignored)

    # -- PostFilter -------------------------------------------------------------------------------

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: Mapping[str, Status]
    ) -> tuple[NominatingInfo, Status]:
        """PostFilter (``RunPostFilterPlugins``), for a pod no node passed: the first plugin that
        succeeds decides (its result, as a :class:`NominatingInfo`: its nominated node); an
        ``UnschedulableAndUnresolvable`` stops with that plugin's result; an error stops with
        :data:`NOMINATING_NOOP` (nil); else ``Unschedulable`` with every plugin's reasons and the
        last result of them that is not ``NOOP`` (DefaultPreemption's clearing result when it found
        no candidate), :data:`NOMINATING_NOOP` when none."""
        reasons: list[str] = []
        rejector = ""
        result = NOMINATING_NOOP
        for ep in self.post_filter_plugins:
            try:
                nominated, status = ep.plugin.post_filter(state, pod, statuses)  # type: ignore[attr-defined]
            except Exception as exc:
                nominated, status = NOMINATING_NOOP, Status.error(_describe(exc))
            info = NominatingInfo.of(nominated)
            if status.is_success():
                return info, status.with_plugin(ep.name)
            if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return info, status.with_plugin(ep.name)
            if not status.is_rejected():
                return NOMINATING_NOOP, Status(Code.ERROR, (_error_text(status),), ep.name)
            if info.mode is not NominatingMode.NOOP:
                result = info
            reasons += status.reasons
            rejector = rejector or ep.name
        return result, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)

    # -- PreScore and Score -----------------------------------------------------------------------

    def run_pre_score_plugins(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """``RunPreScorePlugins``: each PreScore in order; a ``Skip`` (or an ignored error) puts
        the plugin in ``state.skip_score_plugins``. ``SUCCESS``, or an ``ERROR`` ``running PreScore
        plugin "<plugin>": <message>``."""
        skipped: set[str] = set()
        try:
            for ep in self.pre_score_plugins:
                try:
                    status = ep.plugin.pre_score(state, pod, nodes)  # type: ignore[attr-defined]
                except ObjectDecodeError:
                    raise
                except Exception as exc:
                    status = Status.error(_describe(exc))
                if status.code is Code.SKIP:
                    skipped.add(ep.name)
                elif not status.is_success():
                    if ep.ignores_errors:
                        state.ignore_error(ep.name)
                        skipped.add(ep.name)
                        continue
                    message = f'running PreScore plugin "{ep.name}": {_error_text(status)}'
                    return Status(Code.ERROR, (message,), ep.name, status.reason_code)
        finally:
            state.skip_score_plugins = frozenset(skipped)
        return SUCCESS

    def run_score_plugins(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[ScoreResult, Status]:
        """``RunScorePlugins``: each Score plugin PreScore did not skip scores every node (a batch
        plugin in one call), NormalizeScore maps its scores onto 0..100, and each node's
        ``TotalScore`` sums weight x score (:class:`ScoreResult`). An ``ERROR`` (the result then
        partial) ``running Score plugins: plugin "<p>" failed with: <message>``, ``running
        Normalize on Score plugins: ...`` or ``applying score defaultWeights on Score plugins:
        plugin "<p>" returns an invalid score <s>, it should in the range of [0, 100] after
        normalizing``; a ``failurePolicy: Ignore`` plugin's error drops the plugin instead."""
        count = len(nodes)
        result = ScoreResult(nodes, totals=[0] * count)
        skip = state.skip_score_plugins
        for call in self._scores:
            ep = call.ep
            if skip and ep.name in skip:
                result.skipped[ep.name] = "PreScore returned Skip"
                continue
            values, status, stage = self._score(call, state, pod, nodes)
            if not status.is_success():
                message = _error_text(status)
                if ep.ignores_errors:
                    state.ignore_error(ep.name)
                    result.skipped[ep.name] = message
                    continue
                if stage == "defaultWeights":
                    text = f"applying score defaultWeights on Score plugins: {message}"
                elif stage == "Normalize":
                    text = f'running Normalize on Score plugins: plugin "{ep.name}" failed with: {message}'
                else:
                    text = f'running Score plugins: plugin "{ep.name}" failed with: {message}'
                return result, Status(Code.ERROR, (text,), ep.name, status.reason_code)
            weight = ep.weight
            result.plugin_scores[ep.name] = values
            result.weights[ep.name] = weight
            if len(result.weights) == 1:
                result.totals = list(values) if weight == 1 else [weight * v for v in values]
            else:
                result.totals = [t + weight * v for t, v in zip(result.totals, values, strict=True)]
        return result, SUCCESS

    def _score(
        self, call: _ScoreCall, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[int], Status, str]:
        """One plugin's scores of ``nodes`` after NormalizeScore, a status, and the stage that
        failed (``Score``, ``Normalize``, ``defaultWeights``)."""
        ep = call.ep
        values: list[int] = []
        if call.batch is not None:
            try:
                values, status = call.batch(state, pod, nodes)
            except ObjectDecodeError:
                raise
            except Exception as exc:
                return [], Status.error(_describe(exc)), "Score"
            if not status.is_success():
                return [], status, "Score"
            if len(values) != len(nodes):
                return [], Status.error(f"score_nodes returned {len(values)} scores for {len(nodes)} nodes"), "Score"
        else:
            one = call.one
            append = values.append
            for node in nodes:
                try:
                    value, status = one(state, pod, node)
                except ObjectDecodeError:
                    raise
                except Exception as exc:
                    return [], Status.error(f"node {node.name}: {_describe(exc)}"), "Score"
                if status is not SUCCESS and not status.is_success():
                    return [], Status(Code.ERROR, (f"node {node.name}: {_error_text(status)}",)), "Score"
                append(value)
        if values and not set(map(type, values)) <= {int}:
            i = next(i for i, v in enumerate(values) if type(v) is not int)
            return [], Status.error(f"node {nodes[i].name}: score {values[i]!r} is not an integer"), "Score"
        if call.normalize is not None:
            node_scores: list[NodeScore] | None = None
            try:
                if call.normalize_values is not None:  # the scores alone: no NodeScore built
                    values = list(values)
                    status = call.normalize_values(state, pod, values)
                else:
                    node_scores = [NodeScore(n.name, v) for n, v in zip(nodes, values, strict=True)]
                    status = call.normalize.normalize_score(state, pod, node_scores)
            except ObjectDecodeError:
                raise
            except Exception as exc:
                status = Status.error(_describe(exc))
            if not status.is_success():
                return [], status, "Normalize"
            if node_scores is not None:
                values = [ns.score for ns in node_scores]
        if values and (min(values) < MIN_NODE_SCORE or max(values) > MAX_NODE_SCORE):
            bad = next(v for v in values if not MIN_NODE_SCORE <= v <= MAX_NODE_SCORE)
            message = (
                f'plugin "{ep.name}" returns an invalid score {bad}, it should in the range of '
                f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
            )
            return [], Status.error(message), "defaultWeights"
        return values, SUCCESS, ""

    # -- preempt (the extender's verb) --------------------------------------------------------------

    def run_preemption(
        self, pod: PodInfo, candidates: dict[str, Victims], dropped: dict[str, str] | None = None
    ) -> dict[str, Victims]:
        """Let each preemption plugin narrow ``candidates`` (node -> victims); see
        :class:`~app.framework.interfaces.PreemptionPlugin`. A node whose non-empty victim list
        a plugin emptied is dropped; a node or victim UID that was not proposed is an error.
        ``dropped``, when given, receives node -> the plugin that dropped it.
        Raises :class:`FrameworkError` for a fail-closed plugin's error."""
        current = candidates
        for ep in self.preemption_plugins:
            state = CycleState()
            try:
                proposed, status = ep.plugin.process_preemption(state, pod, dict(current))  # type: ignore[attr-defined]
                if not status.is_success():
                    raise ValueError(_error_text(status))
                checked = _checked_victims(current, proposed)
                if dropped is not None:
                    dropped.update((node, ep.name) for node in current.keys() - checked.keys())
                current = checked
            except Exception as exc:
                message = str(exc) if isinstance(exc, ValueError) else _describe(exc)
                if ep.ignores_errors:
                    log.warning("preemption plugin %s failed, ignored (failurePolicy Ignore): %s", ep.name, message)
                    continue
                raise FrameworkError(ep.name, message) from exc
        return current

    # -- the cycle after a node is chosen -----------------------------------------------------------

    def events_to_register(self) -> dict[str, tuple[ClusterEvent, ...]]:
        """Plugin name -> the cluster events that may make a pod it rejected schedulable
        (``EnqueueExtensions.EventsToRegister``; a plugin that does not implement it is woken by
        every event, :data:`~app.framework.events.ANY_EVENT`, as upstream registers it)."""
        out: dict[str, tuple[ClusterEvent, ...]] = {}
        for plugin in self.plugins:
            register = getattr(plugin, "events_to_register", None)
            out[plugin.name] = tuple(register()) if callable(register) else (ANY_EVENT,)
        return out

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
                    status = Status.error(_describe(exc))
                if not status.is_success():
                    if status.is_rejected():
                        return status.with_plugin(plugin.name)
                    message = f'running Reserve plugin "{plugin.name}": {_error_text(status)}'
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
                status, timeout = Status.error(_describe(exc)), 0.0
            if status.is_success():
                continue
            if status.is_rejected():
                return status.with_plugin(plugin.name)
            if status.code is Code.WAIT:
                timeouts[plugin.name] = min(max(timeout, 0.0), MAX_TIMEOUT)
                continue
            message = f'running Permit plugin "{plugin.name}": {_error_text(status)}'
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

    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """PreBind: the first non-success status, attributed to its plugin."""
        for plugin in self.pre_bind_plugins:
            try:
                status: Status = await plugin.pre_bind(state, pod, node_name)
            except Exception as exc:
                status = Status.error(_describe(exc))
            if not status.is_success():
                return Status(Code.ERROR, (f"running PreBind plugin {plugin.name}: {status.message}",), plugin.name)
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
                status = Status.error(_describe(exc))
            if status.code is Code.SKIP:
                continue
            if status.is_success():
                return status.with_plugin(ep.name)
            if ep.ignores_errors:
                errors.append(f"{ep.name}: {_error_text(status)}")
                continue
            return Status(Code.ERROR, (f"{ep.name}: {_error_text(status)}",), ep.name, status.reason_code)
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
                _describe(exc)

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str, forget: bool = True) -> None:
        """Unreserve every Reserve plugin in reverse order (``RunReservePluginsUnreserve``), then,
        unless ``forget`` is false, drop the pod's assumption (``ForgetPod``)."""
        for plugin in reversed(self._reserve_plugins()):
            try:
                plugin.unreserve(state, pod, node_name)
            except Exception as exc:
                _describe(exc)
        if forget:
            self.cluster.forget(pod.uid, node_name)

    async def run_binding_cycle(
        self, state: CycleState, pod: PodInfo, node_name: str, deadline: float | None = None
    ) -> Status:
        """The binding cycle of a reserved (and permitted or waiting) pod: WaitOnPermit, PreBind,
        Bind, PostBind. On failure Unreserve runs and the assumption is forgotten, except after a
        Bind whose outcome is unknown (:data:`BINDING_UNCERTAIN`: the assumption stays until the
        watch shows the pod or it expires). Returns the outcome."""
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

    async def run_bind_verb(self, ref: PodRef, node_name: str) -> Status:
        """The extender's ``bind`` verb: kube-scheduler chose ``node_name`` in its own scheduling
        cycle; here the pod goes through Reserve, Permit and the binding cycle, all within
        :data:`BIND_BUDGET` of ``httpTimeout``. Returns ``SUCCESS`` or an ``ERROR`` status whose
        message is the answer's ``Error`` (``cannot bind to NODE: ...`` when nothing was tried)."""
        deadline = time.monotonic() + BIND_BUDGET * self.http_timeout
        if not self.bind_plugins:
            return Status.error(f"no binder is configured in profile {self.profile!r}")
        state = CycleState()
        state.write(BIND_DEADLINE, deadline)
        refusal = await self._admitted(deadline)
        if refusal is not None:
            return Status.error(refusal)
        pod = await self.cluster.read_pod(ref, max((deadline - time.monotonic()) / 2, 0.001))
        if pod is None:
            return Status.error(f"cannot bind to {node_name}: pod {ref.namespace}/{ref.name} not found")
        if pod.uid != ref.uid:  # the name now belongs to another pod: never bind it in this one's place
            return Status.error(
                f"cannot bind to {node_name}: pod {ref.namespace}/{ref.name} was recreated: "
                "its UID is not the one kube-scheduler sent"
            )
        if pod.node_name:
            if pod.node_name == node_name:
                return SUCCESS  # bound already (a re-sent bind): as kube-scheduler treats it
            return Status.error(f"cannot bind to {node_name}: pod is already bound to node {pod.node_name!r}")
        status = self.run_reserve(state, pod, node_name)
        if not status.is_success():
            return _failed(node_name, status, "Reserve")
        status = self.run_permit(state, pod, node_name)
        if not status.is_success() and status.code is not Code.WAIT:
            self.run_unreserve(state, pod, node_name)
            return _failed(node_name, status, "Permit")
        status = await self.run_binding_cycle(state, pod, node_name, deadline)
        if status.is_success():
            return status
        if status.is_rejected():  # rejected while waiting at Permit
            return _failed(node_name, status, "Permit")
        return status

    async def _admitted(self, deadline: float) -> str | None:
        """Wait for the cluster's bind admission while it can come with :data:`ADMISSION_MARGIN`
        left before ``deadline`` (monotonic seconds); the refusal when it cannot, else ``None``."""
        asked_at = time.monotonic()  # a follower's refusal stands on a read of the Lease begun since
        while True:
            refusal = self.cluster.bind_admission(self.bind_warm_up)
            if refusal is None:
                return None
            wait = self.cluster.bind_admission_wait(self.bind_warm_up, asked_at)
            if wait is None or time.monotonic() + wait > deadline - ADMISSION_MARGIN:
                return refusal
            await asyncio.sleep(max(wait, 0.001))


def filter_error(status: Status) -> Status:
    """A Filter verdict as ``RunFilterPlugins`` returns it: an ``ERROR`` reads ``running
    "<plugin>" filter plugin: <message>``; any other status is itself."""
    if status.code is not Code.ERROR or not status.plugin:
        return status
    return Status(Code.ERROR, (f'running "{status.plugin}" filter plugin: {status.message}',), status.plugin)


def _failed(node_name: str, status: Status, point: str) -> Status:
    """The bind verb's ``ERROR`` for a pod refused at ``point`` before any Binding was sent."""
    who = f"{status.plugin}: " if status.plugin and status.plugin != "ClusterState" else ""
    where = f"{point}: " if who else ""
    message = f"cannot bind to {node_name}: {who}{where}{status.message or status.code.name}"
    return Status(Code.ERROR, (message,), status.plugin, status.reason_code)


def _checked_victims(before: dict[str, Victims], after: dict[str, Victims]) -> dict[str, Victims]:
    """Enforce the protocol's rules on a preemption plugin's answer (kube-scheduler's
    ``HTTPExtender.ProcessPreemption``, pkg/scheduler/extender.go).

    Raises ``ValueError`` for a node or victim that was not proposed; drops a node whose
    non-empty victim list became empty (upstream would reject the whole answer).
    """
    if not isinstance(after, dict):
        raise ValueError(f"returned {type(after).__name__}, not a dict of node name to Victims")
    checked: dict[str, Victims] = {}
    for node, victims in after.items():
        original = before.get(node)
        if original is None:
            raise ValueError(f"returned node {node!r}, which was not a candidate")
        proposed = {p.uid for p in original.pods}
        unknown = [p.uid for p in victims.pods if p.uid not in proposed]
        if unknown:
            raise ValueError(f"returned victims {unknown} on node {node!r} that were not proposed for it")
        if not victims.pods and original.pods:
            log.info("preemption: dropping node %s, its victim list was emptied", node)
            continue
        checked[node] = victims
    return checked


__all__ = [
    "ADMISSION_MARGIN",
    "BINDING_UNCERTAIN",
    "BIND_BUDGET",
    "BIND_DEADLINE",
    "ERR_REASON_PRE_FILTER_RESULT",
    "MAX_EXTENDER_PRIORITY",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "PLUGIN_FAILED",
    "PROTOCOLS",
    "EnabledPlugin",
    "FilterOutcome",
    "Framework",
    "FrameworkError",
    "PluginLists",
    "ScoreResult",
    "default_normalize_score",
    "filter_error",
    "implementing",
    "plugin_lists",
]

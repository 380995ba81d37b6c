"""The framework runtime: runs a profile's plugins for each verb.

Verb -> extension points (DESIGN.md section 3):

- ``filter``: PreFilter once per pod, then Filter per node in profile order; the first non-success
  status decides the node (kube-scheduler's ``RunFilterPlugins``).
- ``prioritize``: PreScore, Score per node, NormalizeScore, then the weighted mean of the plugins'
  0..100 scores, scaled to the extender range 0..``MaxExtenderPriority`` (10) and rounded half up.
  kube-scheduler multiplies that by the extender ``weight`` x 10 (PROTOCOL.md 3.4).
- ``preempt``: each preemption plugin in turn narrows the candidates (nodes and victims).
- the cycle after a node is chosen, in kube-scheduler's order (``schedule_one.go``): Reserve (the
  pod assumed in the cluster state and every Reserve plugin, atomically), Permit (a pod may wait,
  keeping its reservation, :mod:`app.framework.waiting`), then the binding cycle: WaitOnPermit,
  PreBind, Bind (the first bind plugin that does not return ``SKIP`` decides), PostBind; any
  failure after Reserve runs Unreserve on every Reserve plugin in reverse order and forgets the
  assumption. The standalone scheduler runs Reserve and Permit in its scheduling cycle and the
  rest as a task; the extender's ``bind`` verb runs all of it (:meth:`Framework.run_bind_verb`)
  within :data:`BIND_BUDGET` of the profile's ``httpTimeout``.

An ``ERROR`` status (or an exception) from a plugin follows that plugin's ``failurePolicy``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import partial
from typing import Any, NamedTuple, Self

from app.framework.errors import SchedulerExtenderError
from app.framework.events import ANY_EVENT, ClusterEvent
from app.framework.handle import Handle
from app.framework.interfaces import (
    BatchFilterPlugin,
    BatchScorePlugin,
    BindPlugin,
    FilterPlugin,
    NormalizeScorePlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PreBindPlugin,
    PreemptionPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from app.framework.status import SUCCESS, Code, Status
from app.framework.types import CycleState, NodeInfo, NodeScore, ObjectDecodeError, PodInfo, PodRef, Victims
from app.framework.waiting import MAX_TIMEOUT, WaitingPod

log = logging.getLogger(__name__)

#: ``framework.MaxNodeScore``: the top of a Score plugin's range.
MAX_NODE_SCORE = 100
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


#: The verdict of a node a Filter search stopped before (enough feasible nodes were found).
UNEVALUATED = Status(Code.SKIP, ("not evaluated: enough feasible nodes were found first",))

#: kube-scheduler's ``minFeasibleNodesToFind`` and ``minFeasibleNodesPercentageToFind``.
MIN_FEASIBLE_NODES_TO_FIND, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 100, 5


def num_feasible_nodes_to_find(percentage_of_nodes_to_score: int, num_all_nodes: int) -> int:
    """kube-scheduler's ``numFeasibleNodesToFind`` (pkg/scheduler/schedule_one.go): every node below
    100; else ``percentageOfNodesToScore`` percent of them (0: adaptive, 50 % less one per 125
    nodes, at least 5 %), and at least 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    percentage = percentage_of_nodes_to_score
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


class NominatingMode(Enum):
    """``framework.NominatingMode`` (pkg/scheduler/framework/types.go): how a scheduling failure
    treats the pod's ``status.nominatedNodeName``."""

    #: ``ModeNoop``: leave it as it is
    NOOP = "Noop"
    #: ``ModeOverride``: set it to the result's node (``""`` clears it)
    OVERRIDE = "Override"


class NominatingInfo(str):
    """``framework.NominatingInfo`` of a PostFilter result (``PostFilterResult``,
    pkg/scheduler/framework/types.go): the nominated node name (the string itself, ``""`` for none)
    and its :class:`NominatingMode` (:attr:`mode`). ``NominatingInfo(node)`` is
    ``NewPostFilterResultWithNominatedNode(node)`` (``OVERRIDE``; with ``""`` it clears the pod's
    nomination); :data:`NOMINATING_NOOP` stands for upstream's nil result. A plugin may return a
    plain ``str``, read by :meth:`of`."""

    mode: NominatingMode

    def __new__(cls, node: str = "", mode: NominatingMode = NominatingMode.OVERRIDE) -> Self:
        info = super().__new__(cls, node)
        info.mode = mode
        return info

    @classmethod
    def of(cls, value: str) -> NominatingInfo:
        """``value`` as a result: itself when it is one, else ``OVERRIDE`` when it names a node
        and ``NOOP`` (nil) when it is ``""``."""
        if isinstance(value, NominatingInfo):
            return value
        return cls(value, NominatingMode.OVERRIDE if value else NominatingMode.NOOP)

    def clears(self) -> bool:
        """Whether it clears the pod's nomination (``ModeOverride`` with ``""``)."""
        return self.mode is NominatingMode.OVERRIDE and not self

    def __repr__(self) -> str:
        return f"NominatingInfo({str(self)!r}, {self.mode.name})"


#: upstream's nil ``PostFilterResult`` (``ModeNoop``): the nomination stays as it is
NOMINATING_NOOP = NominatingInfo("", NominatingMode.NOOP)
#: ``clearNominatedNode`` (pkg/scheduler/schedule_one.go), also
#: ``NewPostFilterResultWithNominatedNode("")``: ``ModeOverride`` with no node
CLEAR_NOMINATED_NODE = NominatingInfo("", NominatingMode.OVERRIDE)


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


class _Points(NamedTuple):
    """The optional points one enabled Filter or Score plugin implements, found once when the
    framework is built (``isinstance`` against a runtime-checkable protocol inspects every member:
    several microseconds, too much per plugin per request): each is the plugin, or ``None``."""

    pre_filter: PreFilterPlugin | None
    batch_filter: BatchFilterPlugin | None
    pre_score: PreScorePlugin | None
    batch_score: BatchScorePlugin | None
    normalize_score: NormalizeScorePlugin | None


def _points(plugin: Plugin) -> _Points:
    return _Points(
        plugin if isinstance(plugin, PreFilterPlugin) else None,
        plugin if isinstance(plugin, BatchFilterPlugin) else None,
        plugin if isinstance(plugin, PreScorePlugin) else None,
        plugin if isinstance(plugin, BatchScorePlugin) else None,
        plugin if isinstance(plugin, NormalizeScorePlugin) else None,
    )


def _guarded(call: Callable[[], Status]) -> Status:
    """Run a once-per-request plugin method; an exception becomes an ``ERROR`` status, except a
    request decode error, which is the client's and propagates (HTTP 400)."""
    try:
        return call()
    except ObjectDecodeError:
        raise
    except Exception as exc:
        return Status.error(_describe(exc))


@dataclass
class FilterOutcome:
    """Result of :meth:`Framework.run_filter`.

    ``statuses[i]`` is the verdict for ``nodes[i]`` (``SUCCESS`` for a node that passes, otherwise
    the rejecting plugin's status). ``error`` is set when a fail-closed plugin errored; the node
    verdicts are then meaningless. ``ignored_errors`` counts errors swallowed by fail-open plugins.
    """

    statuses: list[Status]
    error: str = ""
    ignored_errors: Counter[str] = field(default_factory=Counter)
    #: the fail-closed plugin whose error set ``error``, and its status's ``reason_code``
    error_plugin: str = ""
    error_code: str = ""
    #: a PreFilter's rejection, which every node then carries (FitError's ``PreFilterMsg``)
    pre_filter: Status | None = None
    #: how many nodes were judged, in the search order (all of them unless ``feasible_wanted``)
    evaluated: int = 0


@dataclass
class ScoreOutcome:
    """Result of :meth:`Framework.run_score`: ``scores[i]`` in 0..10 for ``nodes[i]``.

    ``plugin_scores`` holds each plugin's 0..100 scores (after NormalizeScore); ``skipped`` names
    plugins that did not contribute and why (PreScore ``SKIP`` or an ignored error).
    """

    scores: list[int]
    plugin_scores: dict[str, list[int]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


class Framework:
    """A profile's plugins, ready to run. Shared by concurrent requests; holds no request state."""

    def __init__(
        self,
        profile: str,
        filter_plugins: Sequence[EnabledPlugin] = (),
        score_plugins: Sequence[EnabledPlugin] = (),
        preemption_plugins: Sequence[EnabledPlugin] = (),
        bind_plugins: Sequence[EnabledPlugin] = (),
        http_timeout: float = 5.0,
        shared_reserve: Sequence[ReservePlugin] = (),
        handle: Handle | None = None,
        queue_sort_plugins: Sequence[EnabledPlugin] = (),
        pre_enqueue_plugins: Sequence[EnabledPlugin] = (),
        post_filter_plugins: Sequence[EnabledPlugin] = (),
        other_plugins: Sequence[EnabledPlugin] = (),
    ) -> None:
        self.profile = profile
        self.http_timeout = http_timeout
        #: what the plugins were built with: the cluster state and the pods waiting at Permit
        self.handle = handle if handle is not None else Handle(profile, http_timeout)
        self.cluster = self.handle.cluster
        self.waiting_pods = self.handle.waiting_pods
        #: Reserve plugins of other profiles whose reservations hold cluster-wide (a live list:
        #: profiles built later add theirs); checked after this profile's own at bind
        self.shared_reserve = shared_reserve
        #: whether this profile's binds wait out the cluster's warm-up (a Reserve of its guards
        #: capacity: :attr:`~app.framework.handle.ClusterNeeds.guards_capacity`); set by the assembly
        self.bind_warm_up = True
        self.filter_plugins = tuple(filter_plugins)
        self.score_plugins = tuple(score_plugins)
        self.preemption_plugins = tuple(preemption_plugins)
        self.bind_plugins = tuple(bind_plugins)
        #: the standalone scheduler's points: QueueSort (one), PreEnqueue, PostFilter
        self.queue_sort_plugins = tuple(queue_sort_plugins)
        self.pre_enqueue_plugins = tuple(pre_enqueue_plugins)
        self.post_filter_plugins = tuple(post_filter_plugins)
        if len(self.queue_sort_plugins) > 1:
            raise ValueError("only one QueueSort plugin can be enabled")
        for ep in self.filter_plugins:
            _require(ep, FilterPlugin, "filter")
        #: the optional points of each filter and score plugin, in their order
        self._filter_points = tuple(_points(ep.plugin) for ep in self.filter_plugins)
        self._score_points = tuple(_points(ep.plugin) for ep in self.score_plugins)
        for ep in self.score_plugins:
            _require(ep, ScorePlugin, "score")
            if ep.weight <= 0:
                raise ValueError(f"score plugin {ep.name}: weight must be > 0")
        for ep in self.preemption_plugins:
            _require(ep, PreemptionPlugin, "preemption")
        for ep in self.bind_plugins:
            _require(ep, BindPlugin, "bind")
        unique: dict[int, Plugin] = {}
        for ep in (
            *self.filter_plugins,
            *self.score_plugins,
            *self.preemption_plugins,
            *self.bind_plugins,
            *self.queue_sort_plugins,
            *self.pre_enqueue_plugins,
            *self.post_filter_plugins,
            *other_plugins,
        ):
            unique.setdefault(id(ep.plugin), ep.plugin)
        #: every plugin of the profile, once, in profile order
        self.plugins = tuple(unique.values())
        #: every plugin of the profile implementing Reserve / Permit / PreBind / PostBind, in profile order
        self.reserve_plugins = tuple(p for p in unique.values() if isinstance(p, ReservePlugin))
        self.permit_plugins = tuple(p for p in unique.values() if isinstance(p, PermitPlugin))
        self.pre_bind_plugins = tuple(p for p in unique.values() if isinstance(p, PreBindPlugin))
        self.handle.run_filter.run = self.run_filter_with_nominated
        self.post_bind_plugins = tuple(p for p in unique.values() if isinstance(p, PostBindPlugin))

    # -- filter ---------------------------------------------------------------------------------

    def run_filter(
        self,
        pod: PodInfo,
        nodes: Sequence[NodeInfo],
        state: CycleState | None = None,
        feasible_wanted: int | None = None,
        start: int = 0,
        nominated: Mapping[str, Sequence[PodInfo]] | None = None,
    ) -> FilterOutcome:
        """Run PreFilter and Filter for ``pod`` over ``nodes``; see :class:`FilterOutcome`.
        ``state``: the cycle's state when the cycle goes on past Filter (the standalone scheduler).
        ``feasible_wanted``: stop once that many nodes passed, judging ``nodes`` from index
        ``start`` on, wrapping around (kube-scheduler's ``numFeasibleNodesToFind`` and
        ``nextStartNodeIndex``); the nodes not reached keep :data:`UNEVALUATED`.

        ``nominated``: node name -> the pods nominated to it, by default ``state.snapshot``'s
        (``Snapshot.nominated``; ``{}``: judge every node by the batch pass alone). A node with
        nominations is judged as ``findNodesThatPassFilters`` (pkg/scheduler/schedule_one.go)
        judges it, with ``RunFilterPluginsWithNominatedPods`` (:meth:`run_filter_with_nominated`,
        its pass as it is being the batch pass with the cycle's PreFilter), before it counts as
        feasible."""
        state = state if state is not None else CycleState()
        if nominated is None:
            nominated = getattr(state.snapshot, "nominated", None) or {}
        ignored: Counter[str] = Counter()
        active: list[tuple[EnabledPlugin, BatchFilterPlugin | None]] = []
        # RunPreFilterPlugins: an Unschedulable PreFilter lets the others run (preemption may need
        # their state) and rejects every node at the end; UnschedulableAndUnresolvable at once
        unschedulable: Status | None = None
        for ep, points in zip(self.filter_plugins, self._filter_points, strict=True):
            pre_filter = points.pre_filter
            if pre_filter is not None:
                try:
                    status = pre_filter.pre_filter(state, pod, nodes)
                except ObjectDecodeError:
                    raise
                except Exception as exc:
                    status = Status.error(_describe(exc))
                if status.code is Code.SKIP:
                    continue
                if status.code is Code.ERROR or not (status.is_success() or status.is_rejected()):
                    if ep.ignores_errors:
                        ignored[ep.name] += 1
                        continue
                    message = f"{ep.name}: PreFilter: {_error_text(status)}"
                    return FilterOutcome([], message, ignored, ep.name, status.reason_code)
                if status.is_rejected():
                    if not status.reasons:
                        status = Status(status.code, (f"rejected by {ep.name}",))
                    rejected = status.with_plugin(ep.name)
                    if rejected.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                        return FilterOutcome([rejected] * len(nodes), "", ignored, pre_filter=rejected)
                    unschedulable = unschedulable or rejected
                    continue
            active.append((ep, points.batch_filter))
        if unschedulable is not None:
            return FilterOutcome([unschedulable] * len(nodes), "", ignored, pre_filter=unschedulable)

        # plugin by plugin (profile order), each on the nodes every earlier plugin passed: a node's
        # verdict is still the first non-success status in profile order, as RunFilterPlugins.
        # With ``feasible_wanted``, the nodes are judged in chunks in the order starting at
        # ``start`` until that many passed (findNodesThatPassFilters); the rest stay unevaluated.
        count = len(nodes)
        if feasible_wanted is None or feasible_wanted >= count:
            order: Sequence[int] = range(count)
            chunk_size = count
            statuses: list[Status] = [SUCCESS] * count
        else:
            order = [(start + i) % count for i in range(count)]
            chunk_size = max(feasible_wanted, 1)
            statuses = [UNEVALUATED] * count
        position = found = 0
        while position < count:
            chunk = order[position : position + chunk_size]
            pending = list(chunk)
            for ep, batch in active:
                if not pending:
                    break
                subset = nodes if len(pending) == count else [nodes[i] for i in pending]
                verdicts = _filter_nodes(ep, batch, state, pod, subset)
                still: list[int] = []
                attributed: dict[int, Status] = {}
                for i, node, status in zip(pending, subset, verdicts, strict=True):
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
                        ignored[ep.name] += 1
                        still.append(i)
                    else:
                        message = f"{ep.name}: node {node.name}: {_error_text(status)}"
                        return FilterOutcome([], message, ignored, ep.name, status.reason_code)
                pending = still
            for i in pending:
                statuses[i] = SUCCESS
            if nominated:  # RunFilterPluginsWithNominatedPods on each node of the chunk
                for i in chunk:
                    if nodes[i].name not in nominated:
                        continue
                    status = self.run_filter_with_nominated(state, pod, nodes[i], statuses[i])
                    if status.code is Code.ERROR:
                        return FilterOutcome([], status.message, ignored, status.plugin, status.reason_code)
                    statuses[i] = status
                pending = [i for i in pending if statuses[i].code is Code.SUCCESS]
            position += len(chunk)
            found += len(pending)
            if feasible_wanted is not None and found >= feasible_wanted:
                break
        return FilterOutcome(statuses, "", ignored, evaluated=position)

    def run_filter_on(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """The profile's PreFilter and Filter for ``pod`` on ``node`` alone, ``node`` standing in
        for the node of its name in ``state.snapshot`` (PreFilter recomputed over the cluster so
        changed, as upstream's ``AddPod``/``RemovePod`` extensions update the cycle state): the
        node's verdict, or an ``ERROR`` naming the fail-closed plugin that erred."""
        snapshot = state.snapshot
        lister = _Replaced(snapshot, node) if snapshot is not None else None
        outcome = self.run_filter(pod, [node], CycleState(lister), nominated={})
        if outcome.error:
            return Status(Code.ERROR, (outcome.error,), outcome.error_plugin, outcome.error_code)
        return outcome.statuses[0] if outcome.statuses else SUCCESS

    def run_filter_with_nominated(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, as_is: Status | None = None
    ) -> Status:
        """``RunFilterPluginsWithNominatedPods`` (pkg/scheduler/framework/runtime/framework.go) for
        ``node``: the profile's Filter first with the pods nominated to it of at least ``pod``'s
        priority (``pod`` itself excepted) counted there (``addNominatedPods``:
        ``state.snapshot.with_nominated``), then, when there were any and that passed, on ``node``
        as it is, each through :meth:`run_filter_on`; the first status that is no success, else
        ``SUCCESS``. So a nominated preemptor's room is not given away, and a pod affinity only a
        nominated pod satisfies does not count (it may never run there). ``as_is``: the verdict of
        ``node`` as it is when the caller has it (the search's batch pass), else computed here.
        The Filter of preemption's dry run (:class:`~app.framework.handle.FilterRunner`) and of
        the standalone scheduler's search (:meth:`run_filter`)."""
        snapshot = state.snapshot
        if snapshot is not None:
            added = snapshot.with_nominated(node, pod)
            if added is not node:  # podsAdded
                status = self.run_filter_on(state, pod, added)
                if not status.is_success():
                    return status
        return as_is if as_is is not None else self.run_filter_on(state, pod, node)

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: Mapping[str, Status]
    ) -> tuple[NominatingInfo, Status]:
        """PostFilter (``RunPostFilterPlugins``, pkg/scheduler/framework/runtime/framework.go), for
        a pod no node passed: the first plugin that succeeds decides (its result, as a
        :class:`NominatingInfo`: its nominated node); an ``UnschedulableAndUnresolvable`` stops with
        that plugin's result; an error stops with :data:`NOMINATING_NOOP` (nil); else
        ``Unschedulable`` with every plugin's reasons and the last result of them that is not
        ``NOOP`` (DefaultPreemption's :data:`CLEAR_NOMINATED_NODE` when it found no candidate),
        :data:`NOMINATING_NOOP` when none."""
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

    # -- score ----------------------------------------------------------------------------------

    def run_score(self, pod: PodInfo, nodes: Sequence[NodeInfo], state: CycleState | None = None) -> ScoreOutcome:
        """Score ``nodes`` for ``pod``: the weighted mean of the plugins' 0..100 scores, scaled to
        0..10 and rounded half up. Raises :class:`FrameworkError` when a fail-closed plugin errs.
        With no contributing plugin every node scores 0."""
        state = state if state is not None else CycleState()
        totals = [0] * len(nodes)
        weight_sum = 0
        outcome = ScoreOutcome([])
        for ep, points in zip(self.score_plugins, self._score_points, strict=True):
            try:
                scores = self._score_one(ep, points, state, pod, nodes)
            except FrameworkError as exc:
                if not ep.ignores_errors:
                    raise
                outcome.skipped[ep.name] = str(exc)
                continue
            if scores is None:
                outcome.skipped[ep.name] = "PreScore returned Skip"
                continue
            outcome.plugin_scores[ep.name] = scores
            weight = ep.weight
            weight_sum += weight
            totals = [t + weight * s for t, s in zip(totals, scores, strict=True)]
        if weight_sum:
            # mean on 0..100 -> 0..10, half up: (total / weight_sum) / 10 + 0.5, in integers
            divisor = weight_sum * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
            outcome.scores = [(t + divisor // 2) // divisor for t in totals]
        else:
            outcome.scores = [0] * len(nodes)
        return outcome

    def _score_one(
        self, ep: EnabledPlugin, points: _Points, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> list[int] | None:
        plugin = ep.plugin
        if points.pre_score is not None:
            status = _guarded(partial(points.pre_score.pre_score, state, pod, nodes))
            if status.code is Code.SKIP:
                return None
            if not status.is_success():
                raise FrameworkError(ep.name, f"PreScore: {_error_text(status)}")
        values: list[Any] | None = None
        if points.batch_score is not None:
            values = _batch(ep.name, "score_nodes", partial(points.batch_score.score_nodes, state, pod, nodes))
            if values is not None and len(values) != len(nodes):
                raise FrameworkError(ep.name, f"score_nodes returned {len(values)} scores for {len(nodes)} nodes")
        if values is None:
            values = []
            score = plugin.score  # type: ignore[attr-defined]
            append = values.append
            for node in nodes:
                try:
                    append(score(state, pod, node))
                except ObjectDecodeError:
                    raise
                except Exception as exc:
                    raise FrameworkError(ep.name, f"node {node.name}: {_describe(exc)}") from exc
        if values and not set(map(type, values)) <= {int}:
            i = next(i for i, v in enumerate(values) if type(v) is not int)
            raise FrameworkError(ep.name, f"node {nodes[i].name}: score {values[i]!r} is not an integer")
        if points.normalize_score is not None:
            node_scores = [NodeScore(n.name, v) for n, v in zip(nodes, values, strict=True)]
            status = _guarded(partial(points.normalize_score.normalize_score, state, pod, node_scores))
            if not status.is_success():
                raise FrameworkError(ep.name, f"NormalizeScore: {_error_text(status)}")
            values = [ns.score for ns in node_scores]
        if values and (min(values) < 0 or max(values) > MAX_NODE_SCORE):
            i = next(i for i, v in enumerate(values) if not 0 <= v <= MAX_NODE_SCORE)
            raise FrameworkError(
                ep.name,
                f"node {nodes[i].name}: score {values[i]} is outside 0..{MAX_NODE_SCORE} after normalizing",
            )
        return values

    # -- preempt --------------------------------------------------------------------------------

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
                proposed = ep.plugin.process_preemption(state, pod, dict(current))  # type: ignore[attr-defined]
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
        """Reserve: assume ``pod`` on ``node_name`` in the cluster state and run every Reserve
        plugin (the profile's, then the cluster-wide ones of other profiles), atomically
        (``assume`` with the plugins as its check). Returns ``SUCCESS``, or the refusal (the
        refusing plugin's status, or an ``ERROR`` from the cluster state: bound or being bound
        elsewhere); on refusal every Reserve plugin's Unreserve has run and nothing is assumed.
        Without cluster state the plugins see a node known only by name."""
        plugins = self._reserve_plugins()

        def check(node: NodeInfo) -> Status:
            for plugin in plugins:
                try:
                    status = plugin.reserve(state, pod, node)
                except Exception as exc:
                    status = Status.error(_describe(exc))
                if not status.is_success():
                    return status.with_plugin(plugin.name)
            return SUCCESS

        if self.cluster is None:
            status = check(NodeInfo(node_name))
        else:
            reservation = self.cluster.assume(pod, node_name, check if plugins else None)
            if reservation.ok:
                return SUCCESS
            status = reservation.status or Status(Code.ERROR, (reservation.reason,), "ClusterState")
        if not status.is_success():
            self.run_unreserve(state, pod, node_name, forget=False)
        return status

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Permit (``RunPermitPlugins``): ``SUCCESS``; the first rejection (or ``ERROR``); or
        ``WAIT`` when one or more plugins asked the pod to wait and none rejected it (the pod is
        then in :attr:`waiting_pods`, each such plugin's timeout capped at 15 minutes). Call
        :meth:`run_unreserve` after a rejection. On the event loop."""
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
            message = f"running Permit plugin {plugin.name}: {_error_text(status)}"
            return Status(Code.ERROR, (message,), plugin.name)
        if timeouts:
            self.waiting_pods.add(WaitingPod(pod, node_name, timeouts))
            message = f"one or more plugins asked to wait and no plugin rejected pod {pod.name!r}"
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
        if forget and self.cluster is not None:
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
            if self.cluster is not None:
                self.cluster.finish_binding(pod.uid)
            self.run_post_bind(state, pod, node_name)
            return status
        uncertain = status.reason_code == BINDING_UNCERTAIN
        self.run_unreserve(state, pod, node_name, forget=not uncertain)
        if uncertain and self.cluster is not None:
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
        if self.cluster is None:
            pod: PodInfo | None = PodInfo.placeholder(ref.namespace, ref.name, ref.uid)
        else:
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
        assert self.cluster is not None
        while True:
            refusal = self.cluster.bind_admission(self.bind_warm_up)
            if refusal is None:
                return None
            wait = self.cluster.bind_admission_wait(self.bind_warm_up)
            if wait is None or time.monotonic() + wait > deadline - ADMISSION_MARGIN:
                return refusal
            await asyncio.sleep(max(wait, 0.001))


def _failed(node_name: str, status: Status, point: str) -> Status:
    """The bind verb's ``ERROR`` for a pod refused at ``point`` before any Binding was sent."""
    who = f"{status.plugin}: " if status.plugin and status.plugin != "ClusterState" else ""
    where = f"{point}: " if who else ""
    message = f"cannot bind to {node_name}: {who}{where}{status.message or code_name_of(status)}"
    return Status(Code.ERROR, (message,), status.plugin, status.reason_code)


def code_name_of(status: Status) -> str:
    """The status's code name, for a status without a message."""
    return status.code.name


class _Replaced:
    """A :class:`NodeLister` with one node standing in for the node of its name."""

    def __init__(self, base: Any, node: NodeInfo) -> None:
        self.base, self.node = base, node

    def get(self, name: str) -> NodeInfo | None:
        found: NodeInfo | None = self.node if name == self.node.name else self.base.get(name)
        return found

    def list(self) -> list[NodeInfo]:
        name = self.node.name
        return [self.node if n.name == name else n for n in self.base.list()]

    def nominated_pods(self, node: str) -> Any:
        return self.base.nominated_pods(node)

    def with_nominated(self, info: NodeInfo, pod: PodInfo) -> NodeInfo:
        return self.base.with_nominated(info, pod)  # type: ignore[no-any-return]

    def namespace_labels(self, namespace: str) -> Any:
        return self.base.namespace_labels(namespace)

    def with_pods(self, info: NodeInfo, pods: Sequence[PodInfo]) -> NodeInfo:
        return self.base.with_pods(info, pods)  # type: ignore[no-any-return]

    def without_pods(self, info: NodeInfo, pods: Sequence[PodInfo]) -> NodeInfo:
        return self.base.without_pods(info, pods)  # type: ignore[no-any-return]


def _batch(plugin: str, method: str, call: Callable[[], Any]) -> Any:
    """``call()`` (a plugin's ``filter_nodes``/``score_nodes``), or ``None`` when it raised: the
    caller then asks node by node, which names the failing node (a request decode error
    propagates: it is the client's)."""
    try:
        return call()
    except ObjectDecodeError:
        raise
    except Exception as exc:
        log.warning("plugin %s: %s raised %s; asking node by node", plugin, method, type(exc).__name__)
        return None


def _filter_nodes(
    ep: EnabledPlugin, batch: BatchFilterPlugin | None, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
) -> Sequence[Status]:
    """``ep``'s Filter verdict on each of ``nodes``: one :meth:`BatchFilterPlugin.filter_nodes`
    call when the plugin has it (``batch``), else ``filter`` per node; an exception becomes an
    ``ERROR`` status of the node that raised it (a batch that raises is re-run per node to find it)."""
    plugin = ep.plugin
    if batch is not None:
        verdicts: Sequence[Status] | None = _batch(
            ep.name, "filter_nodes", partial(batch.filter_nodes, state, pod, nodes)
        )
        if verdicts is not None:
            if len(verdicts) != len(nodes):
                message = f"filter_nodes returned {len(verdicts)} statuses for {len(nodes)} nodes"
                return [Status.error(message)] * len(nodes)
            return verdicts
    out: list[Status] = []
    filter_one = plugin.filter  # type: ignore[attr-defined]
    for node in nodes:
        try:
            out.append(filter_one(state, pod, node))
        except ObjectDecodeError:
            raise
        except Exception as exc:
            out.append(Status.error(_describe(exc)))
    return out


def _require(ep: EnabledPlugin, protocol: Any, point: str) -> None:
    if not isinstance(ep.plugin, protocol):
        raise ValueError(f"plugin {ep.name} does not implement the {point} extension point")


def _error_text(status: Status) -> str:
    if status.code is Code.ERROR:
        return status.message or "error"
    return f"unexpected status {status.code.name}" + (f": {status.message}" if status.reasons else "")


def _checked_victims(before: dict[str, Victims], after: dict[str, Victims]) -> dict[str, Victims]:
    """Enforce the protocol's rules on a preemption plugin's answer (PROTOCOL.md 3.6).

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

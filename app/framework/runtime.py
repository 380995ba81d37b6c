"""The framework runtime: runs a profile's plugins for each verb.

Verb -> extension points (DESIGN.md section 3):

- ``filter``: PreFilter once per pod, then Filter per node in profile order; the first non-success
  status decides the node (kube-scheduler's ``RunFilterPlugins``).
- ``prioritize``: PreScore, Score per node, NormalizeScore, then the weighted mean of the plugins'
  0..100 scores, scaled to the extender range 0..``MaxExtenderPriority`` (10) and rounded half up.
  kube-scheduler multiplies that by the extender ``weight`` x 10 (PROTOCOL.md 3.4).
- ``preempt``: each preemption plugin in turn narrows the candidates (nodes and victims).
- ``bind``: Permit (every plugin of the profile implementing :class:`PermitPlugin`), then the
  first bind plugin that does not return ``SKIP`` decides. The plugins implementing
  :class:`ReservePlugin` give the bind's atomic check-and-reserve (:data:`RESERVE_CHECK`), and the
  whole bind must end by :data:`BIND_DEADLINE` (90 % of the profile's ``httpTimeout``).

An ``ERROR`` status (or an exception) from a plugin follows that plugin's ``failurePolicy``.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from app.framework.interfaces import (
    BatchFilterPlugin,
    BatchScorePlugin,
    BindPlugin,
    FilterPlugin,
    NormalizeScorePlugin,
    PermitPlugin,
    Plugin,
    PreemptionPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from app.framework.status import SUCCESS, Code, Status
from app.framework.types import CycleState, NodeInfo, NodeScore, ObjectDecodeError, PodInfo, PodRef, Victims

log = logging.getLogger(__name__)

#: ``framework.MaxNodeScore``: the top of a Score plugin's range.
MAX_NODE_SCORE = 100
#: ``extenderv1.MaxExtenderPriority``: the top of the score range on the wire.
MAX_EXTENDER_PRIORITY = 10
#: CycleState key of a bind: ``ReserveCheck`` (``(node, pod) -> reason | None``) combining the
#: profile's :class:`ReservePlugin` s, or absent when there are none.
RESERVE_CHECK = "framework/reserve-check"
#: CycleState key of a bind: the pod's :class:`PodInfo` when a plugin (Permit) had to read it from
#: the API server because the cluster state did not know it yet, so the binder need not read it again.
POD_RECORD = "framework/pod-record"
#: CycleState key of a bind: the ``time.monotonic()`` by which the bind must have answered.
BIND_DEADLINE = "framework/bind-deadline"
#: The share of ``httpTimeout`` a bind (Permit included) may use; the rest is for the answer to
#: reach kube-scheduler, which fails a binding cycle whose extender answers late.
BIND_BUDGET = 0.9


class FrameworkError(Exception):
    """A verb could not be answered because a fail-closed plugin returned ``ERROR``."""

    def __init__(self, plugin: str, message: str) -> None:
        super().__init__(f"{plugin}: {message}" if plugin else message)
        self.plugin = plugin


@dataclass(frozen=True)
class EnabledPlugin:
    """A plugin instance at one extension point, with its weight and failure policy."""

    name: str
    plugin: Plugin
    weight: int = 1
    fail_open: bool = False


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
    ) -> None:
        self.profile = profile
        self.http_timeout = http_timeout
        #: Reserve plugins of other profiles whose reservations hold cluster-wide (a live list:
        #: profiles built later add theirs); checked after this profile's own at bind
        self.shared_reserve = shared_reserve
        self.filter_plugins = tuple(filter_plugins)
        self.score_plugins = tuple(score_plugins)
        self.preemption_plugins = tuple(preemption_plugins)
        self.bind_plugins = tuple(bind_plugins)
        for ep in self.filter_plugins:
            _require(ep, FilterPlugin, "filter")
        for ep in self.score_plugins:
            _require(ep, ScorePlugin, "score")
            if ep.weight <= 0:
                raise ValueError(f"score plugin {ep.name}: weight must be > 0")
        for ep in self.preemption_plugins:
            _require(ep, PreemptionPlugin, "preemption")
        for ep in self.bind_plugins:
            _require(ep, BindPlugin, "bind")
        unique: dict[int, Plugin] = {}
        for ep in (*self.filter_plugins, *self.score_plugins, *self.preemption_plugins, *self.bind_plugins):
            unique.setdefault(id(ep.plugin), ep.plugin)
        #: every plugin of the profile implementing Reserve / Permit, in profile order
        self.reserve_plugins = tuple(p for p in unique.values() if isinstance(p, ReservePlugin))
        self.permit_plugins = tuple(p for p in unique.values() if isinstance(p, PermitPlugin))

    # -- filter ---------------------------------------------------------------------------------

    def run_filter(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> FilterOutcome:
        """Run PreFilter and Filter for ``pod`` over ``nodes``; see :class:`FilterOutcome`."""
        state = CycleState()
        ignored: Counter[str] = Counter()
        active: list[EnabledPlugin] = []
        for ep in self.filter_plugins:
            plugin = ep.plugin
            if isinstance(plugin, PreFilterPlugin):
                status = _guarded(partial(plugin.pre_filter, state, pod, nodes))
                if status.code is Code.SKIP:
                    continue
                if status.code is Code.ERROR or not (status.is_success() or status.is_rejected()):
                    if ep.fail_open:
                        ignored[ep.name] += 1
                        continue
                    message = f"{ep.name}: PreFilter: {_error_text(status)}"
                    return FilterOutcome([], message, ignored, ep.name, status.reason_code)
                if status.is_rejected():
                    if not status.reasons:
                        status = Status(status.code, (f"rejected by {ep.name}",))
                    rejected = status.with_plugin(ep.name)
                    return FilterOutcome([rejected] * len(nodes), "", ignored)
            active.append(ep)

        # plugin by plugin (profile order), each on the nodes every earlier plugin passed: a node's
        # verdict is still the first non-success status in profile order, as RunFilterPlugins
        statuses: list[Status] = [SUCCESS] * len(nodes)
        pending = list(range(len(nodes)))
        for ep in active:
            if not pending:
                break
            subset = nodes if len(pending) == len(nodes) else [nodes[i] for i in pending]
            verdicts = _filter_nodes(ep, state, pod, subset)
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
                elif ep.fail_open:
                    ignored[ep.name] += 1
                    still.append(i)
                else:
                    message = f"{ep.name}: node {node.name}: {_error_text(status)}"
                    return FilterOutcome([], message, ignored, ep.name, status.reason_code)
            pending = still
        return FilterOutcome(statuses, "", ignored)

    # -- score ----------------------------------------------------------------------------------

    def run_score(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> ScoreOutcome:
        """Score ``nodes`` for ``pod``: the weighted mean of the plugins' 0..100 scores, scaled to
        0..10 and rounded half up. Raises :class:`FrameworkError` when a fail-closed plugin errs.
        With no contributing plugin every node scores 0."""
        state = CycleState()
        totals = [0] * len(nodes)
        weight_sum = 0
        outcome = ScoreOutcome([])
        for ep in self.score_plugins:
            try:
                scores = self._score_one(ep, state, pod, nodes)
            except FrameworkError as exc:
                if not ep.fail_open:
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
        self, ep: EnabledPlugin, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> list[int] | None:
        plugin = ep.plugin
        if isinstance(plugin, PreScorePlugin):
            status = _guarded(partial(plugin.pre_score, state, pod, nodes))
            if status.code is Code.SKIP:
                return None
            if not status.is_success():
                raise FrameworkError(ep.name, f"PreScore: {_error_text(status)}")
        values: list[Any] | None = None
        if isinstance(plugin, BatchScorePlugin):
            values = _batch(ep.name, "score_nodes", partial(plugin.score_nodes, state, pod, nodes))
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
        if isinstance(plugin, NormalizeScorePlugin):
            node_scores = [NodeScore(n.name, v) for n, v in zip(nodes, values, strict=True)]
            status = _guarded(partial(plugin.normalize_score, state, pod, node_scores))
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
                if ep.fail_open:
                    log.warning("preemption plugin %s failed, ignored (failurePolicy Ignore): %s", ep.name, message)
                    continue
                raise FrameworkError(ep.name, message) from exc
        return current

    # -- bind -----------------------------------------------------------------------------------

    async def run_bind(self, pod: PodRef, node_name: str) -> Status:
        """Ask bind plugins in order; the first that does not return ``SKIP`` decides.

        Returns ``SUCCESS`` or an ``ERROR`` status naming the plugin. An ignored (fail-open)
        error passes the pod to the next bind plugin.
        """
        state = CycleState()
        deadline = time.monotonic() + BIND_BUDGET * self.http_timeout
        state.write(BIND_DEADLINE, deadline)
        if self.reserve_plugins or self.shared_reserve:
            state.write(RESERVE_CHECK, self._reserve_check)
        for permit in self.permit_plugins:
            try:
                verdict: Status = await permit.permit(state, pod, node_name, deadline)
            except Exception as exc:
                verdict = Status.error(_describe(exc))
            if not verdict.is_success():
                message = f"{permit.name}: Permit: {verdict.message or verdict.code.name}"
                return Status(Code.ERROR, (message,), permit.name)
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
            if ep.fail_open:
                errors.append(f"{ep.name}: {_error_text(status)}")
                continue
            return Status(Code.ERROR, (f"{ep.name}: {_error_text(status)}",), ep.name)
        detail = f" ({'; '.join(errors)})" if errors else ""
        if not self.bind_plugins:
            return Status.error(f"no binder is configured in profile {self.profile!r}")
        return Status.error(f"no bind plugin bound pod {pod.namespace}/{pod.name}{detail}")

    def _reserve_check(self, node: NodeInfo, pod: PodInfo) -> str | None:
        """The profile's Reserve checks in order, then the cluster-wide ones of other profiles
        (``shared_reserve``); the first refusal, prefixed by its plugin."""
        own = self.reserve_plugins
        for plugin in (*own, *(p for p in self.shared_reserve if p not in own)):
            reason = plugin.reserve(pod, node)
            if reason:
                return f"{plugin.name}: {reason}"
        return None


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


def _filter_nodes(ep: EnabledPlugin, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Sequence[Status]:
    """``ep``'s Filter verdict on each of ``nodes``: one :meth:`BatchFilterPlugin.filter_nodes`
    call when the plugin has it, else ``filter`` per node; an exception becomes an ``ERROR``
    status of the node that raised it (a batch that raises is re-run per node to find it)."""
    plugin = ep.plugin
    if isinstance(plugin, BatchFilterPlugin):
        verdicts: Sequence[Status] | None = _batch(
            ep.name, "filter_nodes", partial(plugin.filter_nodes, state, pod, nodes)
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

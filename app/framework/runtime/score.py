"""PreScore and Score of :class:`~app.framework.runtime.Framework`, as ``frameworkImpl`` runs
them (pkg/scheduler/framework/runtime/framework.go, v1.30): ``RunPreScorePlugins`` and
``RunScorePlugins``, each node's weighted plugin scores after NormalizeScore and their sum, its
``TotalScore`` (:class:`ScoreResult`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from app.framework.handle import Handle
from app.framework.interfaces import NormalizeScorePlugin
from app.framework.points import EnabledPlugin
from app.framework.runtime.failures import describe, error_text
from app.framework.scores import MAX_NODE_SCORE, MIN_NODE_SCORE
from app.framework.status import SUCCESS, Code, Status
from app.framework.types import (
    CycleState,
    NodeInfo,
    NodePluginScores,
    NodeScore,
    ObjectDecodeError,
    PluginScore,
    PodInfo,
)


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


class ScoreCall(NamedTuple):
    """One Score plugin as the framework calls it: its per-node ``score``, its ``score_nodes``
    when it scores a batch, its NormalizeScore, and ``normalize_scores`` when that reads the
    scores alone (each found once when the framework is built)."""

    ep: EnabledPlugin
    one: Callable[[CycleState, PodInfo, NodeInfo], tuple[int, Status]]
    batch: Callable[[CycleState, PodInfo, Sequence[NodeInfo]], tuple[list[int], Status]] | None
    normalize: NormalizeScorePlugin | None
    normalize_values: Callable[[CycleState, PodInfo, list[int]], Status] | None = None


class ScorePoints(Handle):
    """The scoring part of the Framework (its base): the lists it reads are the Framework's."""

    pre_score_plugins: tuple[EnabledPlugin, ...]
    _scores: tuple[ScoreCall, ...]

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
                    status = Status.error(describe(exc))
                if status.code is Code.SKIP:
                    skipped.add(ep.name)
                elif not status.is_success():
                    if ep.ignores_errors:
                        state.ignore_error(ep.name)
                        skipped.add(ep.name)
                        continue
                    message = f'running PreScore plugin "{ep.name}": {error_text(status)}'
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
                message = error_text(status)
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
        self, call: ScoreCall, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
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
                return [], Status.error(describe(exc)), "Score"
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
                    return [], Status.error(f"node {node.name}: {describe(exc)}"), "Score"
                if status is not SUCCESS and not status.is_success():
                    return [], Status(Code.ERROR, (f"node {node.name}: {error_text(status)}",)), "Score"
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
                status = Status.error(describe(exc))
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


__all__ = ["ScoreCall", "ScorePoints", "ScoreResult"]

"""The extender's verbs over a profile's :class:`~app.framework.runtime.Framework`: the adapter
between kube-scheduler's extender calls (pkg/scheduler/extender.go) and the same
``run_*_plugins`` the standalone scheduler's cycle calls.

- ``filter`` (:func:`run_filter`): ``RunPreFilterPlugins``, then the Filter plugins over the nodes
  sent; a node a PreFilterResult excludes is answered as v1.30 records it (:class:`FilterOutcome`);
  then the audited plugins (``enforcement: audit``) beside it, recorded and never answered;
- ``prioritize`` (:func:`run_prioritize`): ``RunPreScorePlugins`` and ``RunScorePlugins``, then
  the scores on the extender's 0..10 (:func:`extender_scores`);
- ``preempt`` (:func:`run_preemption`): the preemption plugins narrow kube-scheduler's candidates,
  under ``ProcessPreemption``'s rules;
- ``bind`` (:func:`run_bind_verb`): kube-scheduler chose the node; the pod goes through Reserve,
  Permit and the binding cycle within :data:`~app.framework.handle.BIND_BUDGET` of ``httpTimeout``,
  after the cluster's bind admission (:data:`ADMISSION_MARGIN`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from app.framework.handle import BIND_BUDGET, BIND_DEADLINE
from app.framework.runtime import Framework, FrameworkError, ScoreResult
from app.framework.runtime.failures import describe, error_text
from app.framework.scores import MAX_EXTENDER_PRIORITY, MAX_NODE_SCORE
from app.framework.status import SUCCESS, Code, Status, absent_nodes_status
from app.framework.types import CycleState, NodeInfo, PodInfo, PodRef, Victims

log = logging.getLogger(__name__)

#: Seconds of a bind's budget kept for the Binding itself when the bind waits for its admission
#: (the watch's first sync, the warm-up): a bind admitted later than its deadline minus this
#: answers ``Error`` at once instead of waiting.
ADMISSION_MARGIN = 1.0
#: What kube-scheduler v1.36.3 gives a node a PreFilterResult excludes (``findNodesThatFitPod``),
#: the plugins that narrowed in place of ``{}``; the extender must answer every node it was sent
ERR_REASON_PRE_FILTER_RESULT = "node(s) didn't satisfy plugin(s) [{}]"


def _filtered_out(narrowed: Iterable[str]) -> Status:
    status = absent_nodes_status(narrowed)
    return Status(status.code, status.reasons, reason_code="PreFilterResult")


@dataclass
class FilterOutcome:
    """Result of :func:`run_filter` (the extender's filter).

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
    #: audited plugin -> what it would have decided of each node (never part of the answer)
    audit: dict[str, list[Status]] = field(default_factory=dict)


def run_filter(
    framework: Framework, pod: PodInfo, nodes: Sequence[NodeInfo], state: CycleState | None = None
) -> FilterOutcome:
    """The extender's filter: PreFilter, then Filter over ``nodes`` (see :class:`FilterOutcome`).
    A node a PreFilterResult excludes gets what v1.36.3 records for it,
    ``UnschedulableAndUnresolvable`` "node(s) didn't satisfy plugin(s) [A B]" (the PreFilter
    plugins that narrowed, sorted). Errors
    read ``<plugin>: PreFilter: <message>`` and ``<plugin>: node <name>: <message>``. A decided
    outcome also holds the audited plugins' verdicts on ``nodes``
    (:meth:`~app.framework.runtime.filter.FilterPoints.audit_filter`), which change nothing of it."""
    state = state if state is not None else CycleState()
    result, status, narrowed = framework.run_pre_filter_plugins(state, pod, nodes)
    ignored = state.ignored_errors
    if status.code is Code.ERROR:
        message = f"{status.plugin}: PreFilter: {status.message}"
        return FilterOutcome([], message, ignored, status.plugin, status.reason_code)
    if status.is_rejected():
        outcome = FilterOutcome([status] * len(nodes), "", ignored, pre_filter=status)
    else:
        if result is None or result.node_names is None:
            statuses, first_error = framework.filter_verdicts(state, pod, nodes)
        else:
            names = result.node_names
            kept = [i for i, n in enumerate(nodes) if n.name in names]
            statuses = [_filtered_out(narrowed)] * len(nodes)
            verdicts, first_error = framework.filter_verdicts(state, pod, [nodes[i] for i in kept])
            for i, verdict in zip(kept, verdicts, strict=True):
                statuses[i] = verdict
            first_error = kept[first_error] if first_error >= 0 else -1
        if first_error >= 0:
            verdict = statuses[first_error]
            message = f"{verdict.plugin}: node {nodes[first_error].name}: {verdict.message}"
            return FilterOutcome([], message, ignored, verdict.plugin, verdict.reason_code)
        outcome = FilterOutcome(statuses, "", ignored)
    if framework.audited:  # beside the answer, on a state of their own: nothing of it changes
        outcome.audit = framework.audit_filter(state.snapshot, pod, nodes)
    return outcome


def run_prioritize(
    framework: Framework, pod: PodInfo, nodes: Sequence[NodeInfo], state: CycleState
) -> tuple[ScoreResult | None, Status]:
    """prioritize: ``RunPreScorePlugins`` then ``RunScorePlugins`` over the nodes sent; the
    framework's scores (``None`` with a failed status). Raises
    :class:`~app.framework.types.ObjectDecodeError` for a node a plugin reads that does not decode."""
    status = framework.run_pre_score_plugins(state, pod, nodes)
    if not status.is_success():
        return None, status
    return framework.run_score_plugins(state, pod, nodes)


def extender_scores(result: ScoreResult) -> list[int]:
    """The extender's answer from the framework's scores: each node's weighted mean of the
    plugins' 0..100 scores (``TotalScore`` over the sum of the weights that scored), scaled to
    0..``MaxExtenderPriority`` (10) and rounded half up; every node 0 when no plugin scored.
    kube-scheduler multiplies it by the extender ``weight`` x 10 (``prioritizeNodes``,
    pkg/scheduler/schedule_one.go)."""
    weight_sum = sum(result.weights.values())
    if not weight_sum:
        return [0] * len(result.totals)
    # mean on 0..100 -> 0..10, half up: (total / weight_sum) / 10 + 0.5, in integers
    divisor = weight_sum * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
    half = divisor // 2
    return [(t + half) // divisor for t in result.totals]


def run_preemption(
    framework: Framework, pod: PodInfo, candidates: dict[str, Victims], dropped: dict[str, str] | None = None
) -> dict[str, Victims]:
    """Let each preemption plugin narrow ``candidates`` (node -> victims); see
    :class:`~app.framework.interfaces.PreemptionPlugin`. A node whose non-empty victim list
    a plugin emptied is dropped; a node or victim UID that was not proposed is an error.
    ``dropped``, when given, receives node -> the plugin that dropped it.
    Raises :class:`FrameworkError` for a fail-closed plugin's error."""
    current = candidates
    for ep in framework.preemption_plugins:
        state = CycleState()
        try:
            proposed, status = ep.plugin.process_preemption(state, pod, dict(current))  # type: ignore[attr-defined]
            if not status.is_success():
                raise ValueError(error_text(status))
            checked = _checked_victims(current, proposed)
            if dropped is not None:
                dropped.update((node, ep.name) for node in current.keys() - checked.keys())
            current = checked
        except Exception as exc:
            message = str(exc) if isinstance(exc, ValueError) else describe(exc)
            if ep.ignores_errors:
                log.warning("preemption plugin %s failed, ignored (failurePolicy Ignore): %s", ep.name, message)
                continue
            raise FrameworkError(ep.name, message) from exc
    return current


async def run_bind_verb(framework: Framework, ref: PodRef, node_name: str) -> Status:
    """The extender's ``bind`` verb: kube-scheduler chose ``node_name`` in its own scheduling
    cycle; here the pod goes through Reserve, Permit and the binding cycle, all within
    :data:`BIND_BUDGET` of ``httpTimeout``. Returns ``SUCCESS`` or an ``ERROR`` status whose
    message is the answer's ``Error`` (``cannot bind to NODE: ...`` when nothing was tried)."""
    deadline = time.monotonic() + BIND_BUDGET * framework.http_timeout
    if not framework.bind_plugins:
        return Status.error(f"no binder is configured in profile {framework.profile!r}")
    state = CycleState()
    state.write(BIND_DEADLINE, deadline)
    refusal = await _admitted(framework, deadline)
    if refusal is not None:
        return Status.error(refusal)
    pod = await framework.cluster.read_pod(ref, max((deadline - time.monotonic()) / 2, 0.001))
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
    status = framework.run_reserve(state, pod, node_name)
    if not status.is_success():
        return _failed(node_name, status, "Reserve")
    status = framework.run_permit(state, pod, node_name)
    if not status.is_success() and status.code is not Code.WAIT:
        framework.run_unreserve(state, pod, node_name)
        return _failed(node_name, status, "Permit")
    status = await framework.run_binding_cycle(state, pod, node_name, deadline)
    if status.is_success():
        return status
    if status.is_rejected():  # rejected while waiting at Permit
        return _failed(node_name, status, "Permit")
    return status


async def _admitted(framework: Framework, deadline: float) -> str | None:
    """Wait for the cluster's bind admission while it can come with :data:`ADMISSION_MARGIN`
    left before ``deadline`` (monotonic seconds); the refusal when it cannot, else ``None``."""
    asked_at = time.monotonic()  # a follower's refusal stands on a read of the Lease begun since
    while True:
        refusal = framework.cluster.bind_admission(framework.bind_warm_up)
        if refusal is None:
            return None
        wait = framework.cluster.bind_admission_wait(framework.bind_warm_up, asked_at)
        if wait is None or time.monotonic() + wait > deadline - ADMISSION_MARGIN:
            return refusal
        await asyncio.sleep(max(wait, 0.001))


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
    "ERR_REASON_PRE_FILTER_RESULT",
    "FilterOutcome",
    "extender_scores",
    "run_bind_verb",
    "run_filter",
    "run_preemption",
    "run_prioritize",
]

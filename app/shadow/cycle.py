"""One shadow cycle: what a profile would have decided for a pod another scheduler bound, on the
cluster state as it was just before that bind, compared with where the pod went.

The profile's cycle as kube-scheduler's ``schedulePod`` runs it (pkg/scheduler/schedule_one.go,
v1.36.3: ``findNodesThatFitPod``, ``prioritizeNodes``), with two differences that the comparison
needs: Filter judges **every** node (no ``percentageOfNodesToScore`` sample, no search from
``nextStartNodeIndex``), and every feasible node is scored, even a single one, so the bound node's
``TotalScore`` and rank are known. PreFilter (a rejection or a PreFilterResult leaving a node
out makes it infeasible with its status), Filter, PreScore, Score with the profile's weights;
no PostFilter (a pod the profile finds no node for is ``infeasible`` wherever it went), no
Reserve, Permit or Bind. Pods nominated to nodes (``status.nominatedNodeName``) are not added.
"""

from __future__ import annotations

import time

from app.cluster.snapshot import Snapshot
from app.framework import PODS_TO_ACTIVATE, Code, CycleState, NodeInfo, PodInfo, Status
from app.framework.runtime import Framework
from app.framework.status import absent_nodes_status
from app.shadow.record import ERROR, FEASIBLE, INFEASIBLE, MAX_BEST_NODES, SAME, ShadowDecision, ShadowRecord

#: the status of a bound node the cluster state does not know
UNKNOWN_NODE = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node not found in the cluster state",))


def shadow_cycle(
    framework: Framework, snapshot: Snapshot, pod: PodInfo, bound_node: str, scheduler_name: str
) -> tuple[ShadowRecord, ShadowDecision]:
    """The shadow cycle of ``pod`` (its pending record: no ``spec.nodeName``) on ``snapshot``,
    compared with ``bound_node``, where ``scheduler_name`` bound it. Returns the
    :class:`ShadowRecord` and the same as a :class:`ShadowDecision` (per-node verdicts and scores)
    for the decision store."""
    started = time.perf_counter()
    state = CycleState()
    state.write(PODS_TO_ACTIVATE, {})
    state.snapshot = snapshot
    nodes = snapshot.list()
    names = [n.name for n in nodes]
    record = ShadowRecord(
        time.time(), framework.profile, scheduler_name, pod.namespace, pod.name, pod.uid, bound_node, ERROR
    )
    record.nodes = len(nodes)
    statuses: list[Status] = []
    totals: list[int] = []
    plugin_scores: dict[str, list[int]] = {}
    error = ""
    result, status, narrowed = framework.run_pre_filter_plugins(state, pod, nodes)
    if status.code is Code.ERROR:
        error = f'running PreFilter plugin "{status.plugin}": {status.message}'
    elif not status.is_success():
        statuses = [status] * len(nodes)
    else:
        statuses = [status] * len(nodes)  # replaced below
        candidates = list(range(len(nodes)))
        if result is not None and result.node_names is not None:
            allowed = result.node_names
            absent = absent_nodes_status(narrowed)
            statuses = [absent] * len(nodes)
            candidates = [i for i, n in enumerate(names) if n in allowed]
        verdicts = framework.filter_statuses(state, pod, [nodes[i] for i in candidates])
        for i, verdict in zip(candidates, verdicts, strict=True):
            statuses[i] = verdict
            if verdict.code is Code.ERROR and not error:
                error = f'running "{verdict.plugin}" filter plugin: {verdict.message}'
    feasible = [i for i, s in enumerate(statuses) if s.code is Code.SUCCESS]
    if not error and feasible:
        error, totals, plugin_scores, weights = _score(framework, state, pod, nodes, feasible)
        if not error:
            _compare(record, names, statuses, feasible, totals, plugin_scores, weights)
    elif not error:
        _compare(record, names, statuses, feasible, [], {}, {})
    record.error = error
    record.feasible_nodes = len(feasible)
    record.seconds = time.perf_counter() - started
    decision = ShadowDecision(
        record.time,
        record.profile,
        "shadow",
        pod.namespace,
        pod.name,
        pod.uid,
        names=names,
        statuses=statuses,
        total_scores=totals,
        plugin_scores=plugin_scores,
        node=bound_node,
        error=error,
        seconds=record.seconds,
        record=record,
    )
    return record, decision


def _score(
    framework: Framework, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], feasible: list[int]
) -> tuple[str, list[int], dict[str, list[int]], dict[str, int]]:
    """PreScore and Score over the feasible nodes: an error (``""``: none), every node's
    ``TotalScore`` and each plugin's 0..100 aligned with ``nodes`` (0 for the others), the
    weights."""
    scored = [nodes[i] for i in feasible]
    count = len(nodes)
    totals = [0] * count
    plugin_scores: dict[str, list[int]] = {}
    if not framework.score_plugins:
        return "", totals, plugin_scores, {}
    status = framework.run_pre_score_plugins(state, pod, scored)
    if not status.is_success():
        return status.message, totals, plugin_scores, {}
    result, status = framework.run_score_plugins(state, pod, scored)
    if not status.is_success():
        return status.message, totals, plugin_scores, {}
    for j, i in enumerate(feasible):
        totals[i] = result.totals[j]
    for plugin, values in result.plugin_scores.items():
        column = [0] * count
        for j, i in enumerate(feasible):
            column[i] = values[j]
        plugin_scores[plugin] = column
    return "", totals, plugin_scores, dict(result.weights)


def _compare(
    record: ShadowRecord,
    names: list[str],
    statuses: list[Status],
    feasible: list[int],
    totals: list[int],
    plugin_scores: dict[str, list[int]],
    weights: dict[str, int],
) -> None:
    """Fill ``record``'s agreement, choice, rank, scores and the plugin that made the difference."""
    bound = names.index(record.bound_node) if record.bound_node in names else -1

    def weighted(i: int) -> dict[str, int]:
        return {p: weights[p] * values[i] for p, values in plugin_scores.items()}

    best_total = max((totals[i] for i in feasible), default=None) if totals else None
    best = [i for i in feasible if totals and totals[i] == best_total] if feasible else []
    if bound >= 0 and bound in feasible:
        real_total = totals[bound] if totals else 0
        record.bound_total = real_total
        record.bound_scores = weighted(bound)
        record.rank = 1 + sum(1 for i in feasible if totals and totals[i] > real_total)
        record.agreement = SAME if bound in best else FEASIBLE
    else:
        record.agreement = INFEASIBLE
        status = statuses[bound] if bound >= 0 else UNKNOWN_NODE
        record.rejected_by = status.plugin
        record.rejected_reason = status.message
        record.difference = status.plugin
    record.best_nodes = [names[i] for i in best[:MAX_BEST_NODES]]
    if best:
        chosen = bound if record.agreement == SAME else best[0]
        record.chosen_node = names[chosen]
        record.chosen_total = best_total
        record.chosen_scores = weighted(chosen)
        if record.agreement == FEASIBLE:
            gaps = {p: record.chosen_scores[p] - record.bound_scores.get(p, 0) for p in record.chosen_scores}
            plugin = max(gaps, key=lambda p: gaps[p], default="")
            record.difference = plugin
            record.difference_score = gaps.get(plugin, 0)


__all__ = ["UNKNOWN_NODE", "shadow_cycle"]

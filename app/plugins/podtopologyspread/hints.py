"""PodTopologySpread's queueing hints (kube-scheduler v1.36.3
pkg/scheduler/framework/plugins/podtopologyspread/plugin.go: ``isSchedulableAfterPodChange``,
``isSchedulableAfterNodeChange``, ``involvedInTopologySpreading``,
``hasConstraintWithNodeTaintsPolicyHonor``, ``checkTopologyKeyLabelsChanged``; common.go:
``nodeLabelsMatchSpreadConstraints``, ``podLabelsMatchSpreadConstraints``).

A hint receives the parked pod and the event's old and new objects: the cache's
:class:`~app.framework.types.PodInfo` records for a pod event, node objects for a node event
(``None`` for the side an Add or a Delete has not). The constraints are the pod's
``DoNotSchedule`` ones, or the default ones (``getConstraints``:
:meth:`~app.plugins.podtopologyspread.common.SpreadConstraints.constraints`); a selector that
fails to compile raises :class:`~app.plugins.podtopologyspread.common.SelectorError` (the queue
counts it as ``Queue``). Slices and maps compare as ``equality.Semantic.DeepEqual`` does: unset
and empty are equal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.framework import objects
from app.framework.events import QUEUE, SKIP, QueueingHint, objects_as
from app.framework.types import PodInfo
from app.plugins.podtopologyspread.common import DO_NOT_SCHEDULE, Constraint, SpreadConstraints

_NO_LABELS: Mapping[str, str] = {}


def involved_in_topology_spreading(incoming: PodInfo, pod_with_spreading: PodInfo) -> bool:
    """``involvedInTopologySpreading``: ``incoming`` is the pod itself, or is bound or nominated
    and in the same namespace."""
    if incoming.uid == pod_with_spreading.uid:
        return True
    if not incoming.node_name and not incoming.nominated_node_name:
        return False
    return incoming.namespace == pod_with_spreading.namespace


def has_constraint_with_node_taints_policy_honor(constraints: Sequence[Constraint]) -> bool:
    """``hasConstraintWithNodeTaintsPolicyHonor``: any constraint with ``nodeTaintsPolicy: Honor``."""
    return any(c.honor_taints for c in constraints)


def node_labels_match_spread_constraints(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    """``nodeLabelsMatchSpreadConstraints``: the node has every constraint's topology key (true
    for no constraints)."""
    return all(c.topology_key in labels for c in constraints)


def pod_labels_match_spread_constraints(constraints: Sequence[Constraint], labels: Mapping[str, str]) -> bool:
    """``podLabelsMatchSpreadConstraints``: some constraint's selector matches ``labels``."""
    return any(c.selector.matcher()(labels) for c in constraints)


def _topology_key_labels_changed(
    old: Mapping[str, str], new: Mapping[str, str], constraints: Sequence[Constraint]
) -> bool:
    """``checkTopologyKeyLabelsChanged`` (an absent label reads as ``""``, as in Go)."""
    return any(old.get(c.topology_key, "") != new.get(c.topology_key, "") for c in constraints)


def _node_labels(node: objects.Node) -> Mapping[str, str]:
    return (node.metadata.labels if node.metadata is not None else None) or _NO_LABELS


def _node_taints(node: objects.Node) -> list[objects.Taint]:
    return (node.spec.taints if node.spec is not None else None) or []


class Hints(SpreadConstraints):
    """The plugin's two hint functions, reading its constraints (own or default)."""

    def is_schedulable_after_pod_change(self, pod: PodInfo, old: object, new: object) -> QueueingHint:
        """``isSchedulableAfterPodChange``: ``Skip`` when the other pod is not involved
        (unscheduled, or another namespace); for an update, ``Queue`` when the parked pod itself
        got other tolerations and a constraint honors taints, else when the labels changed so
        that some constraint's selector matches differently; for an Add or a Delete, ``Queue``
        when some constraint's selector matches the pod's labels."""
        original, modified = objects_as(old, new, PodInfo)
        if (modified is not None and not involved_in_topology_spreading(modified, pod)) or (
            original is not None and not involved_in_topology_spreading(original, pod)
        ):
            return SKIP
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        if modified is not None and original is not None:
            if (
                pod.uid == modified.uid
                and tuple(modified.tolerations or ()) != tuple(original.tolerations or ())
                and has_constraint_with_node_taints_policy_honor(constraints)
            ):
                return QUEUE
            if dict(modified.labels) == dict(original.labels):
                return SKIP
            for c in constraints:
                match = c.selector.matcher()
                if match(original.labels) != match(modified.labels):
                    return QUEUE
            return SKIP
        changed = modified if modified is not None else original
        if changed is None:
            raise TypeError("no pod in the event")
        return QUEUE if pod_labels_match_spread_constraints(constraints, changed.labels) else SKIP

    def is_schedulable_after_node_change(self, pod: PodInfo, old: object, new: object) -> QueueingHint:
        """``isSchedulableAfterNodeChange``: ``Queue`` when an update makes the node gain or lose
        every constraint's topology key, or, the node having them all, changes a topology key's
        value or its taints; when an added or a deleted node has every topology key. ``Skip``
        otherwise."""
        original, modified = objects_as(old, new, objects.Node)
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        original_matching = original is not None and node_labels_match_spread_constraints(
            _node_labels(original), constraints
        )
        modified_matching = modified is not None and node_labels_match_spread_constraints(
            _node_labels(modified), constraints
        )
        if original is not None and modified is not None:
            if original_matching != modified_matching:
                return QUEUE
            if modified_matching and (
                _topology_key_labels_changed(_node_labels(original), _node_labels(modified), constraints)
                or _node_taints(original) != _node_taints(modified)
            ):
                return QUEUE
            return SKIP
        if modified is not None:
            return QUEUE if modified_matching else SKIP
        return QUEUE if original_matching else SKIP


__all__ = [
    "Hints",
    "has_constraint_with_node_taints_policy_honor",
    "involved_in_topology_spreading",
    "node_labels_match_spread_constraints",
    "pod_labels_match_spread_constraints",
]

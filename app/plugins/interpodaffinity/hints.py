"""InterPodAffinity's queueing hints (kube-scheduler v1.36.3
pkg/scheduler/framework/plugins/interpodaffinity/plugin.go: ``isSchedulableAfterPodChange``,
``isSchedulableAfterNodeChange``).

A hint receives the parked pod and the event's old and new objects: the cache's
:class:`~app.framework.types.PodInfo` records for a pod event, node objects for a node event
(``None`` for the side an Add or a Delete has not). The terms are the required (anti-)affinity
terms as ``fwk.GetAffinityTerms`` builds them, matched as ``AffinityTerm.Matches(pod, nil)``
(:func:`~app.plugins.interpodaffinity.common.existing_term_matches` with no namespace labels: a
``namespaceSelector`` other than ``{}`` selects only what it selects in an unlabelled
namespace). A term that fails to parse raises ``ValueError`` (the queue counts it as ``Queue``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.framework import objects
from app.framework.events import QUEUE, SKIP, QueueingHint, objects_as
from app.framework.types import PodInfo
from app.plugins.interpodaffinity.common import existing_term_matches, required_terms, terms_error

_NO_LABELS: Mapping[str, str] = {}


def _terms(pa: objects.PodAffinity | None) -> list[objects.PodAffinityTerm]:
    """``fwk.GetAffinityTerms(pod, terms)``: the required terms; raises ``ValueError`` when one
    does not parse."""
    terms = required_terms(pa)
    error = terms_error(terms)
    if error is not None:
        raise ValueError(error)
    return terms


def _affinity_terms(pod: PodInfo) -> list[objects.PodAffinityTerm]:
    return _terms(pod.affinity.pod_affinity if pod.affinity is not None else None)


def _anti_affinity_terms(pod: PodInfo) -> list[objects.PodAffinityTerm]:
    return _terms(pod.affinity.pod_anti_affinity if pod.affinity is not None else None)


def _matches_all(terms: Sequence[objects.PodAffinityTerm], owner: PodInfo, pod: PodInfo) -> bool:
    """``podMatchesAllAffinityTerms`` for ``owner``'s terms: false for no terms."""
    if not terms:
        return False
    return all(existing_term_matches(t, owner.namespace, pod, _NO_LABELS) for t in terms)


def _unscheduled(pod: PodInfo) -> bool:
    return not pod.node_name and not pod.nominated_node_name


def is_schedulable_after_pod_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPodChange``: ``Queue`` for the parked pod's own label update; ``Skip``
    when the other pod is unscheduled (neither bound nor nominated); for an update, ``Queue`` when
    the pod came to match all the affinity terms or stopped matching all the anti-affinity terms;
    for an Add, when it matches all the affinity terms; for a Delete, when it matched all the
    anti-affinity terms, or the parked pod matches all of the deleted pod's anti-affinity terms."""
    original, modified = objects_as(old, new, PodInfo)
    if modified is not None and original is not None and pod.uid == modified.uid:
        return QUEUE
    if (modified is not None and _unscheduled(modified)) or (original is not None and _unscheduled(original)):
        return SKIP
    terms = _affinity_terms(pod)
    anti_terms = _anti_affinity_terms(pod)
    if modified is not None and original is not None:
        if not _matches_all(terms, pod, original) and _matches_all(terms, pod, modified):
            return QUEUE
        if _matches_all(anti_terms, pod, original) and not _matches_all(anti_terms, pod, modified):
            return QUEUE
        return SKIP
    if modified is not None:
        return QUEUE if _matches_all(terms, pod, modified) else SKIP
    if original is None:
        raise TypeError("no pod in the event")
    if _matches_all(anti_terms, pod, original):
        return QUEUE
    return QUEUE if _matches_all(_anti_affinity_terms(original), original, pod) else SKIP


def _node_labels(node: objects.Node) -> Mapping[str, str]:
    return (node.metadata.labels if node.metadata is not None else None) or _NO_LABELS


def is_schedulable_after_node_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterNodeChange``: ``Queue`` when, for an affinity term's topology key, a
    node is added with the key, or updated to get it or to change its value; or, for an
    anti-affinity term, a node is added (any node), or updated to lose the key or change its
    value. ``Skip`` otherwise."""
    original, modified = objects_as(old, new, objects.Node)
    if modified is None:
        raise TypeError("no new node")
    new_labels = _node_labels(modified)
    old_labels = _node_labels(original) if original is not None else None
    for term in _affinity_terms(pod):
        key = term.topology_key or ""
        if old_labels is None:
            if key in new_labels:
                return QUEUE
            continue
        if key in new_labels and (key not in old_labels or old_labels[key] != new_labels[key]):
            return QUEUE
    for term in _anti_affinity_terms(pod):
        if old_labels is None:
            return QUEUE
        key = term.topology_key or ""
        if key in old_labels and (key not in new_labels or old_labels[key] != new_labels[key]):
            return QUEUE
    return SKIP


__all__ = ["is_schedulable_after_node_change", "is_schedulable_after_pod_change"]

"""DynamicResources' ``EventsToRegister`` and queueing hints, as v1.36.3's
(pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go:
``isSchedulableAfterClaimChange``, ``isSchedulableAfterPodChange``).

With ``SchedulerQueueingHints`` (GA): Node ``Add|UpdateNodeLabel|UpdateNodeAllocatable`` (no hint),
ResourceClaim ``Add|Update`` (the claim hint), Pod ``UpdatePodGeneratedResourceClaim`` (the pod
hint), DeviceClass ``Add|Update`` and ResourceSlice ``Add|Update`` (no hint: always queue).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.framework.dra import DRALister
from app.framework.events import (
    DEVICE_CLASS,
    NODE,
    POD,
    QUEUE,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    SKIP,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    objects_as,
)
from app.framework.types import PodInfo
from app.plugins.dynamicresources.claims import ClaimError, allocation, claim_uid, foreach_pod_resource_claim


def is_schedulable_after_claim_change(dra: DRALister, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterClaimChange``: Skip when the pod's claims are still unusable; Queue
    when a claim was deallocated (devices freed, whoever used it); Skip for another pod's claim;
    Queue when the pod's claim was created or its status changed; Skip otherwise. Raises
    ``TypeError`` for an object that is not a claim (Queue)."""
    original, modified = objects_as(old, new, Mapping)
    modified_uid = claim_uid(modified) if modified is not None else None
    uses_claim = False

    def seen(_: str, claim: Mapping[str, Any]) -> None:
        nonlocal uses_claim
        if claim_uid(claim) == modified_uid:
            uses_claim = True

    try:
        foreach_pod_resource_claim(dra, pod, seen)
    except ClaimError:
        return SKIP
    if modified is None:  # a delete (not registered: upstream never calls it with one)
        return SKIP
    if original is not None and allocation(original) is not None and allocation(modified) is None:
        return QUEUE
    if not uses_claim:
        return SKIP
    if original is None:
        return QUEUE
    if (original.get("status") or {}) == (modified.get("status") or {}):
        return SKIP
    return QUEUE


def is_schedulable_after_pod_change(dra: DRALister, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """``isSchedulableAfterPodChange``: Queue when the pod itself changed and all its claims now
    exist, else Skip."""
    _, modified = objects_as(old, new, PodInfo)
    if modified is None or modified.uid != pod.uid:
        return SKIP
    try:
        foreach_pod_resource_claim(dra, modified)
    except ClaimError:
        return SKIP
    return QUEUE


def events(dra: DRALister) -> tuple[ClusterEventWithHint, ...]:
    """The registrations of the module doc, the hints bound to ``dra``."""
    return (
        ClusterEventWithHint(
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE)
        ),
        ClusterEventWithHint(
            ClusterEvent(RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE),
            lambda pod, old, new: is_schedulable_after_claim_change(dra, pod, old, new),
        ),
        ClusterEventWithHint(
            ClusterEvent(POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
            lambda pod, old, new: is_schedulable_after_pod_change(dra, pod, old, new),
        ),
        ClusterEventWithHint(ClusterEvent(DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)),
        ClusterEventWithHint(ClusterEvent(RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)),
    )


__all__ = ["events", "is_schedulable_after_claim_change", "is_schedulable_after_pod_change"]

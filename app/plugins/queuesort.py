"""PrioritySort: the scheduling queue's default order.

Ports kube-scheduler v1.30's plugin (pkg/scheduler/framework/plugins/queuesort/priority_sort.go):
``Less(a, b)`` is true when ``a``'s priority (``corev1helpers.PodPriority``: ``spec.priority``,
0 when unset) is higher, or the priorities are equal and ``a`` entered the queue earlier
(``QueuedPodInfo.Timestamp``; equal timestamps: false, as Go's ``Time.Before``).
"""

from __future__ import annotations

from app.framework.handle import Handle
from app.framework.registry import PluginEntry
from app.framework.types import QueuedPodInfo

NAME = "PrioritySort"


class PrioritySort:
    """QueueSort (see the module doc). Takes no args; stateless."""

    name = NAME

    def __init__(self, args: None = None, handle: Handle | None = None) -> None:
        pass

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Whether ``a`` is tried before ``b``: higher priority first, then the earlier
        ``timestamp`` (seconds on the queue's clock)."""
        p1, p2 = a.pod.priority, b.pod.priority
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)


PLUGIN = PluginEntry(
    name=NAME,
    factory=PrioritySort,
    args=None,
    summary="queueSort: kube-scheduler's PrioritySort (higher spec.priority first, then the earlier arrival)",
)

"""PrioritySort, ported from kube-scheduler v1.30's
pkg/scheduler/framework/plugins/queuesort/priority_sort_test.go (``TestLess``), plus a seeded check
that ``less`` is a strict weak order giving the upstream queue order.
"""

from __future__ import annotations

import functools
import random

import msgspec
import pytest

from app.framework import PodInfo, QueuedPodInfo, QueueSortPlugin, objects
from app.plugins.queuesort import PLUGIN, PrioritySort

LOW_PRIORITY, HIGH_PRIORITY = 10, 100
T1 = 1_700_000_000.0
T2 = T1 + 1.0


def queued(priority: int | None, timestamp: float = 0.0, name: str = "p") -> QueuedPodInfo:
    spec = {} if priority is None else {"priority": priority}
    pod = PodInfo(msgspec.convert({"metadata": {"name": name}, "spec": spec}, objects.Pod))
    return QueuedPodInfo(pod, timestamp)


CASES = [
    ("p1.priority less than p2.priority", queued(LOW_PRIORITY), queued(HIGH_PRIORITY), False),
    ("p1.priority greater than p2.priority", queued(HIGH_PRIORITY), queued(LOW_PRIORITY), True),
    (
        "equal priority. p1 is added to schedulingQ earlier than p2",
        queued(HIGH_PRIORITY, T1),
        queued(HIGH_PRIORITY, T2),
        True,
    ),
    (
        "equal priority. p2 is added to schedulingQ earlier than p1",
        queued(HIGH_PRIORITY, T2),
        queued(HIGH_PRIORITY, T1),
        False,
    ),
]


@pytest.mark.parametrize(("p1", "p2", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_less(p1: QueuedPodInfo, p2: QueuedPodInfo, expected: bool) -> None:
    assert PrioritySort().less(p1, p2) is expected


def test_unset_priority_is_zero_and_ties_are_not_less() -> None:
    sort = PrioritySort()
    assert sort.less(queued(None, T2), queued(-1, T1))
    assert not sort.less(queued(5, T1), queued(5, T1))


def test_sorting_with_less_gives_priority_then_arrival_order() -> None:
    rng = random.Random(7)
    sort = PrioritySort()
    pods = [queued(rng.choice([None, -5, 0, 10, 1000]), float(rng.randint(0, 20)), f"p{i}") for i in range(200)]

    def cmp(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
        return -1 if sort.less(a, b) else (1 if sort.less(b, a) else 0)

    ordered = sorted(pods, key=functools.cmp_to_key(cmp))
    assert [(q.pod.priority, q.timestamp) for q in ordered] == sorted(
        ((q.pod.priority, q.timestamp) for q in pods), key=lambda k: (-k[0], k[1])
    )
    for a in pods[:40]:
        assert not sort.less(a, a)
        for b in pods[:40]:
            assert not (sort.less(a, b) and sort.less(b, a))


def test_registered_as_queue_sort_plugin() -> None:
    plugin = PLUGIN.factory(None, None)  # type: ignore[arg-type]
    assert isinstance(plugin, QueueSortPlugin)
    assert PLUGIN.name == "PrioritySort" and PLUGIN.args is None

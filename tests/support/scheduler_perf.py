"""Objects of kube-scheduler's scheduler_perf workloads (test/integration/scheduler_perf/config:
``node-default.yaml``, ``pod-low-priority.yaml``, ``pod-high-priority.yaml``), as the test API
server stores them: shared by the end-to-end preemption test and ``bench/bench_scheduler.py``."""

from __future__ import annotations

from typing import Any

from tests.support.apiserver import node, pod


def default_node(name: str) -> dict[str, Any]:
    """``node-default.yaml``: 4 cpu, 32Gi, 110 pods."""
    return node(name, cpu="4", memory="32Gi", pods="110")


def priority_pod(name: str, priority: int, cpu: str, scheduler: str, namespace: str) -> dict[str, Any]:
    """``pod-low-priority.yaml`` (``priority`` 0: no priority, ``terminationGracePeriodSeconds``
    0) or ``pod-high-priority.yaml``: one container with port 80, ``cpu`` and 500Mi requested, for
    ``scheduler``."""
    doc = pod(name, namespace, cpu=cpu, memory="500Mi")
    doc["spec"]["schedulerName"] = scheduler
    doc["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    if priority:
        doc["spec"]["priority"] = priority
    else:
        doc["spec"]["terminationGracePeriodSeconds"] = 0
    return doc


__all__ = ["default_node", "priority_pod"]

"""The standalone scheduler (``python -m app schedule``, kube-scheduler's default plugins) against
the test API server on scheduler_perf's PreemptionBasic
(test/integration/scheduler_perf/config/performance-config.yaml: nodes of 4 cpu, 32Gi and 110
pods; low-priority pods of 900m and 500Mi, three a node, ``terminationGracePeriodSeconds: 0``;
then one high-priority pod of 3 cpu a node, priority 10): every preemptor is nominated once,
bound to the node it was nominated to, and no pod is bound into room another one holds. At its
full size: 100 nodes, 300 low-priority pods, 100 preemptors (``E2E_PREEMPTION=NODES`` scales it;
``bench/bench_scheduler.py`` measures its pace). Then an InterPodAffinity ``namespaceSelector``
term matches by the namespaces' labels."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.test_scheduler import Scheduler, bound, wait_for
from tests.support.apiserver import FakeAPIServer, node, pod, running
from tests.support.scheduler_perf import default_node, priority_pod

NODES = int(os.environ.get("E2E_PREEMPTION", "100"))


@pytest.fixture
def api() -> Iterator[FakeAPIServer]:
    with running(lambda _: None) as server:
        yield server


NAME = "preempt-scheduler"


def write_config(tmp: Path, api: FakeAPIServer) -> Path:
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(api.kubeconfig())
    doc = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "server": {"host": "127.0.0.1"},
        "cluster": {"kubeconfig": str(kubeconfig)},
        "scheduling": {"leaderElect": False},
        "profiles": [
            {
                "name": "perf",
                "schedulerName": NAME,
                # a short bind deadline: a start waits one out before binding (its warm-up)
                "pluginConfig": [{"name": "DefaultBinder", "args": {"timeoutSeconds": 1}}],
            }
        ],
    }
    path = tmp / "preempt.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def workload(name: str, priority: int, cpu: str, namespace: str = "perf") -> dict[str, Any]:
    """pod-low-priority.yaml / pod-high-priority.yaml for this scheduler."""
    return priority_pod(name, priority, cpu, NAME, namespace)


def record_binds(api: FakeAPIServer) -> list[tuple[float, str, str]]:
    """``(time, pod, node)`` of every Binding the API server accepts, in order."""
    binds: list[tuple[float, str, str]] = []
    lock = threading.Lock()
    accept = api.bind

    def timed(namespace: str, name: str, body: dict[str, Any]) -> Any:
        answer = accept(namespace, name, body)
        if answer[0] == 201:
            with lock:
                binds.append((time.monotonic(), name, (body.get("target") or {}).get("name", "")))
        return answer

    api.bind = timed  # type: ignore[method-assign]
    return binds


def test_preemption_basic_every_preemptor_nominated_once_and_bound_where_nominated(
    api: FakeAPIServer, tmp_path: Path
) -> None:
    binds = record_binds(api)
    for i in range(NODES):
        api.put("nodes", default_node(f"node-{i:04d}"))
    for i in range(3 * NODES):
        api.put("pods", workload(f"low-{i}", 0, "900m"))
    scheduler = Scheduler(write_config(tmp_path, api))
    try:
        wait_for(lambda: len(bound(api)) == 3 * NODES, seconds=60, what="the low-priority pods bound")
        patches_before = len(api.status_patches)
        for i in range(NODES):
            api.put("pods", workload(f"high-{i}", 10, "3000m"))
        highs = {f"high-{i}" for i in range(NODES)}
        placed = wait_for(lambda: highs <= set(bound(api)) and bound(api), seconds=120, what="every preemptor bound")
        nominations: dict[str, list[str]] = {}
        for key, patch in api.status_patches[patches_before:]:
            nominated = (patch.get("status") or {}).get("nominatedNodeName")
            name = key.split("/", 1)[1]
            if nominated and name in highs:
                nominations.setdefault(name, []).append(nominated)
        # nominated once each, to the node it was bound to
        assert {name: len(nodes) for name, nodes in nominations.items()} == dict.fromkeys(highs, 1)
        assert all(placed[name] == nominations[name][0] for name in highs)
        # one preemptor a node: nobody took the room held for another
        assert sorted(placed[name] for name in highs) == sorted(f"node-{i:04d}" for i in range(NODES))
        # two victims a node (900m each: 4 - 0.9 leaves the 3 cpu), and no node over-committed
        assert len(api.deletions) == 2 * NODES
        with api.lock:
            survivors = [p for p in api.objects["pods"].values() if p["spec"].get("nodeName")]
        per_node: dict[str, int] = {}
        for p in survivors:
            cpu = p["spec"]["containers"][0]["resources"]["requests"]["cpu"]
            per_node[p["spec"]["nodeName"]] = per_node.get(p["spec"]["nodeName"], 0) + int(cpu.removesuffix("m"))
        assert max(per_node.values()) <= 4000 and len(per_node) == NODES
        # no pod was bound after the preemptors came but the preemptors themselves
        assert {name for _, name, _ in binds[3 * NODES :]} == highs
    finally:
        scheduler.stop()


def test_a_namespace_selector_term_matches_by_namespace_labels(api: FakeAPIServer, tmp_path: Path) -> None:
    """Required pod affinity to the ``app=db`` pods of the namespaces labelled ``tier=data``: the
    pod lands on the node running ``data/db``, not on the one running ``scratch/db`` (a namespace
    without the label), and a term selecting no namespace's labels leaves it pending."""
    api.put("namespaces", _namespace("data", tier="data"))
    api.put("namespaces", _namespace("scratch", tier="scratch"))
    api.put("namespaces", _namespace("apps"))
    for name in ("n1", "n2", "n3"):
        api.put("nodes", node(name))
    for namespace, host in (("data", "n2"), ("scratch", "n3")):
        db = pod("db", namespace, host)
        db["metadata"]["labels"] = {"app": "db"}
        api.put("pods", db)

    def client(name: str, tier: str) -> dict[str, Any]:
        doc = workload(name, 0, "100m", namespace="apps")
        term = {
            "labelSelector": {"matchLabels": {"app": "db"}},
            "namespaceSelector": {"matchLabels": {"tier": tier}},
            "topologyKey": "kubernetes.io/hostname",
        }
        doc["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        return doc

    api.put("pods", client("near-data", "data"))
    api.put("pods", client("near-nothing", "archive"))
    scheduler = Scheduler(write_config(tmp_path, api))
    try:
        placed = wait_for(lambda: "near-data" in bound(api) and bound(api), seconds=30, what="near-data bound")
        assert placed["near-data"] == "n2"
        time.sleep(1.0)
        assert "near-nothing" not in bound(api)
        # a namespace labelled afterwards is seen once the pending pod is tried again
        api.put("namespaces", _namespace("archive", tier="archive"))
        archived = pod("db", "archive", "n1")
        archived["metadata"]["labels"] = {"app": "db"}
        api.put("pods", archived)
        # the namespace's labels must reach the scheduler's watch before the event that retries the
        # pod: no namespace event moves a parked pod (as upstream), so a retry that came first
        # would park it again until the 5-minute flush
        time.sleep(1.0)
        # v1.36.3's InterPodAffinity hint skips that added pod (a namespaceSelector term is judged
        # without namespace labels: podMatchesAllAffinityTerms, Matches(pod, nil)); a node added
        # with the term's topology key is an event it queues
        api.put("nodes", node("n4"))
        placed = wait_for(lambda: "near-nothing" in bound(api) and bound(api), seconds=30, what="near-nothing bound")
        assert placed["near-nothing"] == "n1"
    finally:
        scheduler.stop()


def _namespace(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "uid": f"uid-ns-{name}", "labels": {"kubernetes.io/metadata.name": name, **labels}},
        "status": {"phase": "Active"},
    }

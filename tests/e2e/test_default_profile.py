"""kube-scheduler's default plugins in the standalone scheduler, end to end with the real
``schedule`` process and the test API server: required pod anti-affinity on the hostname never
shares a node, a zone spread constraint with ``maxSkew: 1`` holds, a gated pod waits for its gates
and is bound soon after they are removed."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from tests.cluster.test_pdbs import pdb
from tests.e2e.test_cycle import metric, write_config
from tests.e2e.test_scheduler import Scheduler, api, bound, wait_for
from tests.support.apiserver import FakeAPIServer, node, pod

__all__ = ["api"]  # the test API server fixture, shared with test_scheduler

PROFILE = {"name": "default", "schedulerName": "default-plugins"}


def zoned(name: str, zone: str) -> dict[str, Any]:
    doc = node(name, cpu="32", memory="64Gi", pods="110")
    doc["metadata"]["labels"] = {
        "kubernetes.io/hostname": name,
        "topology.kubernetes.io/zone": zone,
    }
    return doc


def pending(name: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    doc = pod(name, cpu="10m", memory="16Mi")
    doc["metadata"]["labels"] = labels
    doc["spec"]["schedulerName"] = "default-plugins"
    doc["spec"].update(spec)
    return doc


def test_required_anti_affinity_on_the_hostname_never_shares_a_node(api: FakeAPIServer, tmp_path: Path) -> None:
    for i in range(8):
        api.put("nodes", zoned(f"n{i}", f"z{i % 2}"))
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    for i in range(10):  # 10 replicas, 8 nodes: 8 bound on 8 distinct nodes, 2 left pending
        api.put("pods", pending(f"web-{i}", {"app": "web"}, affinity=anti))
    scheduler = Scheduler(write_config(tmp_path, api, [PROFILE]))
    try:
        placed = wait_for(lambda: len(bound(api)) == 8 and bound(api), seconds=30, what="8 replicas bound")
        assert len(set(placed.values())) == 8  # never two on one node
        time.sleep(1.0)
        assert len(bound(api)) == 8  # the other two stay pending
        stuck = next(n for n in (f"web-{i}" for i in range(10)) if n not in placed)
        explained = httpx.get(f"{scheduler.url}/explain/default/{stuck}").json()
        reasons = {v.get("reason") for a in explained["attempts"] if a["verb"] == "filter" for v in a["nodes"].values()}
        assert reasons == {"node(s) didn't match pod anti-affinity rules"}
    finally:
        scheduler.stop()


def test_a_zone_spread_with_max_skew_one_holds(api: FakeAPIServer, tmp_path: Path) -> None:
    for i in range(6):
        api.put("nodes", zoned(f"n{i}", f"z{i % 3}"))
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "spread"}},
        }
    ]
    for i in range(30):
        api.put("pods", pending(f"s-{i}", {"app": "spread"}, topologySpreadConstraints=spread))
    scheduler = Scheduler(write_config(tmp_path, api, [PROFILE]))
    try:
        placed = wait_for(lambda: len(bound(api)) == 30 and bound(api), seconds=60, what="30 pods bound")
        per_zone = Counter(f"z{int(n[1:]) % 3}" for n in placed.values())
        assert max(per_zone.values()) - min(per_zone.values()) <= 1, per_zone
    finally:
        scheduler.stop()


def test_a_gated_pod_waits_for_its_gates_then_is_bound(api: FakeAPIServer, tmp_path: Path) -> None:
    api.put("nodes", zoned("n0", "z0"))
    gated = api.put("pods", pending("gated", {}, schedulingGates=[{"name": "example.com/quota"}]))
    api.put("pods", pending("free", {}))
    scheduler = Scheduler(write_config(tmp_path, api, [PROFILE]))
    try:
        wait_for(lambda: "free" in bound(api), seconds=30, what="the ungated pod bound")
        time.sleep(1.0)
        assert "gated" not in bound(api)
        with api.lock:
            conditions = api.objects["pods"]["default/gated"]["status"].get("conditions", [])
        assert {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}.items() <= next(
            c for c in conditions if c["type"] == "PodScheduled"
        ).items()
        ungated = dict(gated)
        ungated["spec"] = {**gated["spec"], "schedulingGates": []}
        api.put("pods", ungated)
        removed = time.monotonic()
        wait_for(lambda: "gated" in bound(api), seconds=10, what="the pod bound once its gate is gone")
        assert time.monotonic() - removed < 2.0
    finally:
        scheduler.stop()


def full_nodes(api: FakeAPIServer, *running: tuple[str, str, int, dict[str, str]]) -> None:
    """Two 2-cpu nodes, each filled by one running pod ``(name, node, priority, labels)``, and a
    pending priority-1000 pod ``urgent`` that needs a whole node."""
    for i in range(2):
        api.put("nodes", node(f"n{i}", cpu="2", memory="4Gi", pods="110"))
    for name, where, priority, labels in running:
        doc = pod(name, node_name=where, cpu="2", memory="16Mi", phase="Running", priority=priority)
        doc["metadata"]["labels"] = labels
        doc["status"]["startTime"] = "2026-01-01T00:00:00Z"
        api.put("pods", doc)
    urgent = pending("urgent", {}, priority=1000)
    urgent["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    api.put("pods", urgent)


def test_a_higher_priority_pod_preempts_the_cheapest_victims_then_is_bound(api: FakeAPIServer, tmp_path: Path) -> None:
    full_nodes(api, ("low-a", "n0", 10, {}), ("low-b", "n1", 5, {}))
    scheduler = Scheduler(write_config(tmp_path, api, [PROFILE]))
    try:
        wait_for(lambda: "urgent" in bound(api), seconds=30, what="the preemptor bound")
        assert api.deletions == ["default/low-b"]  # the lower-priority victim of the two
        assert bound(api)["urgent"] == "n1"
        nominations = [
            p for key, p in api.status_patches if key == "default/urgent" and "nominatedNodeName" in p["status"]
        ]
        assert nominations[0]["status"]["nominatedNodeName"] == "n1"
        assert "low-a" in bound(api)
        # the victim was marked before its deletion, as kube-scheduler's prepareCandidate marks it
        marked = [p for key, p in api.status_patches if key == "default/low-b"]
        assert marked and marked[0]["status"]["conditions"][0] | {"lastTransitionTime": None} == {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": "default-plugins: preempting to accommodate a higher priority pod",
            "lastTransitionTime": None,
        }
        # and it gets kube-scheduler's Preempted Event, naming the preemptor's UID and the node
        urgent_uid = api.objects["pods"]["default/urgent"]["metadata"]["uid"]

        def preempted() -> list[dict[str, Any]]:
            events = list(api.objects["events"].values())
            return [e for e in events if e.get("reason") == "Preempted"]

        wait_for(lambda: preempted(), seconds=10, what="the Preempted Event")
        event = preempted()[0]
        assert (event["type"], event["action"], event["regarding"]["name"]) == ("Normal", "Preempting", "low-b")
        assert event["note"] == f"Preempted by pod {urgent_uid} on node n1"
    finally:
        scheduler.stop()


def test_preemption_spares_the_pods_a_disruption_budget_protects(api: FakeAPIServer, tmp_path: Path) -> None:
    api.put("poddisruptionbudgets", pdb("guarded", "default", {"app": "guarded"}, 0))
    full_nodes(api, ("guarded", "n0", 5, {"app": "guarded"}), ("plain", "n1", 50, {}))
    scheduler = Scheduler(write_config(tmp_path, api, [PROFILE]))
    try:
        wait_for(lambda: "urgent" in bound(api), seconds=30, what="the preemptor bound")
        # without the budget the priority-5 pod would go; with it, the one that violates none
        assert api.deletions == ["default/plain"] and bound(api)["urgent"] == "n1"
    finally:
        scheduler.stop()


def test_a_parked_pod_comes_back_on_the_events_its_rejecting_plugins_registered(
    api: FakeAPIServer, tmp_path: Path
) -> None:
    """Queueing hints (EventsToRegister): a pod InterPodAffinity rejected (no pod it needs yet) is
    tried again as soon as such a pod is assigned, not after the 5-minute flush; a pod NodeAffinity
    rejected is not tried again when pods come and go, only when a node changes."""
    for i in range(3):
        api.put("nodes", zoned(f"n{i}", "z0"))
    for i in range(2):
        api.put("pods", pod(f"busy-{i}", node_name="n0", cpu="10m", memory="16Mi", phase="Running"))
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    api.put("pods", pending("web", {"app": "web"}, affinity=affinity))
    api.put("pods", pending("picky", {}, nodeSelector={"disk": "ssd"}))
    scheduler = Scheduler(write_config(tmp_path, api, [PROFILE]))
    try:

        def unschedulable() -> float:
            try:
                name = "scheduler_schedule_attempts_total"
                return metric(scheduler.url, name, profile="default", result="unschedulable")
            except httpx.TransportError:
                return -1.0  # not serving yet

        wait_for(lambda: unschedulable() == 2, seconds=30, what="both pods tried once")
        time.sleep(1.5)  # past the first backoff
        db = pod("db-0", node_name="n2", cpu="10m", memory="16Mi", phase="Running")
        db["metadata"]["labels"] = {"app": "db"}
        api.put("pods", db)  # a pod web needs, assigned to n2
        api.delete("pods", "default/busy-0")  # a pod deleted: nothing NodeAffinity waits for
        placed = wait_for(lambda: "web" in bound(api) and bound(api), seconds=5, what="web bound next to db")
        assert placed["web"] == "n2"
        time.sleep(1.5)
        assert unschedulable() == 2 and "picky" not in bound(api)  # picky was not tried again
        ssd = zoned("n1", "z0")
        ssd["metadata"]["labels"]["disk"] = "ssd"
        api.put("nodes", ssd)  # a node label changed: NodeAffinity's event
        wait_for(lambda: bound(api).get("picky") == "n1", seconds=5, what="picky bound on the ssd node")
    finally:
        scheduler.stop()


def test_a_nominated_pod_whose_preemption_finds_no_candidate_loses_its_nomination(
    api: FakeAPIServer, tmp_path: Path
) -> None:
    """``Preempt`` answers ``NewPostFilterResultWithNominatedNode("")`` when no node is a candidate
    (only higher-priority pods run), and ``handleSchedulingFailure``'s ``updatePod`` clears the
    pod's stale ``status.nominatedNodeName``; nothing is deleted."""
    full_nodes(api, ("vip-a", "n0", 5000, {}), ("vip-b", "n1", 5000, {}))
    urgent = api.pod("default", "urgent")
    assert urgent is not None
    urgent["status"]["nominatedNodeName"] = "n0"  # nominated by an earlier preemption
    api.put("pods", urgent)
    scheduler = Scheduler(write_config(tmp_path, api, [PROFILE]))
    try:

        def cleared() -> bool:
            with api.lock:
                status = api.objects["pods"]["default/urgent"]["status"]
            return not status.get("nominatedNodeName")

        wait_for(cleared, seconds=30, what="the stale nomination cleared")
        writes = [p["status"] for key, p in api.status_patches if key == "default/urgent"]
        assert {"nominatedNodeName": None} in writes
        assert api.deletions == [] and "urgent" not in bound(api)
    finally:
        scheduler.stop()

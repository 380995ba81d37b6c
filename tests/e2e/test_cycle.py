"""kube-scheduler's cycle order, end to end with the real ``schedule`` process and the test API
server: every pod of a backlog is scheduled and bound once (an assumed pod is never scheduled
again), a gang whose last member fails Reserve binds none, and a profile that both schedules and
serves HTTP bind, driven from both sides at once, never binds a pod twice nor over-commits a pool."""

from __future__ import annotations

import asyncio
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.e2e.test_scheduler import Scheduler, api, bound, wait_for
from tests.support.apiserver import FakeAPIServer, node, pod
from tests.support.bodies import go_marshal

IP = "ipam.example.com/ip"
__all__ = ["api"]  # the test API server fixture, shared with test_scheduler


def write_config(tmp: Path, api: FakeAPIServer, profiles: list[dict[str, Any]], **server: Any) -> Path:
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(api.kubeconfig())
    # a short bind deadline: a start without leader election waits one out before binding
    # (DefaultBinder's, 80 % of httpTimeout by default: 4 s a test)
    quick = {"name": "DefaultBinder", "args": {"timeoutSeconds": 1}}
    profiles = [
        {**p, "pluginConfig": [*p.get("pluginConfig", []), quick]}
        if p.get("schedulerName") and not any(c["name"] == "DefaultBinder" for c in p.get("pluginConfig", []))
        else p
        for p in profiles
    ]
    doc = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "server": {"host": "127.0.0.1", "port": 8888, **server},
        "cluster": {"kubeconfig": str(kubeconfig)},
        "scheduling": {"leaderElect": False},
        "profiles": profiles,
    }
    path = tmp / "cycle.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def pending(name: str, scheduler: str, ips: int = 0, group: str = "") -> dict[str, Any]:
    doc = pod(name, cpu="10m", memory="16Mi")
    doc["spec"]["schedulerName"] = scheduler
    if ips:
        doc["spec"]["containers"][0]["resources"]["requests"][IP] = str(ips)
    if group:
        doc["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": group}
        doc["metadata"]["annotations"] = {"scheduling.x-k8s.io/min-member": "4"}
    return doc


def leading(url: str) -> bool:
    """Ready and past its warm-up: binds are admitted."""
    try:
        answer = httpx.get(f"{url}/readyz")
    except httpx.HTTPError:
        return False
    return answer.status_code == 200 and answer.json().get("role") == "leader"


def metric(url: str, name: str, **labels: str) -> float:
    text = httpx.get(f"{url}/metrics").text
    selector = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    match = re.search(rf"^{name}\{{{re.escape(selector)}\}} (\S+)$", text, re.M)
    return float(match.group(1)) if match else 0.0


def bindings_per_pod(api: FakeAPIServer) -> Counter[str]:
    """Pod name -> Bindings the API server received for it."""
    with api.lock:
        return Counter(b["metadata"]["name"] for b in api.bindings)


def test_a_backlog_is_scheduled_once_per_pod(api: FakeAPIServer, tmp_path: Path) -> None:
    """300 pods queued before ``schedule`` starts: each scheduled once and bound once; no cycle
    ever schedules a pod whose Binding is in flight ("is being bound" never appears)."""
    for i in range(40):
        api.put("nodes", node(f"n{i}", cpu="32", memory="64Gi", pods="110"))
    for i in range(300):
        api.put("pods", pending(f"p{i}", "backlog-scheduler"))
    api.binding_delay = 0.02  # Bindings stay in flight while the next cycles run
    profile = {
        "name": "backlog",
        "schedulerName": "backlog-scheduler",
        "extender": {"verbs": ["filter", "prioritize"]},
        "plugins": {
            "filter": [{"name": "NodeResourcesFit"}],
            "score": [{"name": "NodeResourcesBalancedAllocation"}],
            "bind": [{"name": "DefaultBinder"}],
        },
        "pluginConfig": [{"name": "DefaultBinder", "args": {"timeoutSeconds": 4}}],
    }
    scheduler = Scheduler(write_config(tmp_path, api, [profile]))
    try:
        wait_for(lambda: len(bound(api)) == 300, seconds=120, what="300 pods bound")
        # the attempt is counted once its binding task has finished, a moment after the API server stored it
        scheduled = wait_for(
            lambda: (
                metric(scheduler.url, "scheduler_schedule_attempts_total", profile="backlog", result="scheduled") >= 300
                and metric(scheduler.url, "scheduler_schedule_attempts_total", profile="backlog", result="scheduled")
            ),
            what="300 attempts counted",
        )
        assert scheduled == 300
        assert set(bindings_per_pod(api).values()) == {1}  # one Binding per pod: never sent twice
    finally:
        scheduler.stop()
    log = scheduler.log.read_text()
    assert "is being bound" not in log and "already bound" not in log


def test_a_gang_whose_last_member_fails_reserve_binds_none(api: FakeAPIServer, tmp_path: Path) -> None:
    """The scheduling profile does not filter on the pool; the pool's Reserve (cluster-wide, from
    the second profile) refuses the fourth member on a node with 3 slots: Coscheduling's Unreserve
    rejects the three waiting at Permit, their reservations are undone, nothing is bound."""
    only = node("only", cpu="32", memory="64Gi", pods="110")
    only["metadata"]["annotations"] = {"ipam.example.com/pool-size": "3"}
    api.put("nodes", only)
    for i in range(4):
        api.put("pods", pending(f"g{i}", "gang-scheduler", ips=1, group="g"))
    profiles = [
        {
            "name": "gang",
            "schedulerName": "gang-scheduler",
            "extender": {"verbs": ["filter"], "httpTimeout": "5s"},
            "plugins": {
                "filter": [{"name": "NodeResourcesFit"}, {"name": "Coscheduling"}],
                "bind": [{"name": "DefaultBinder"}],
            },
            "pluginConfig": [
                {"name": "NodeResourcesFit", "args": {"ignoredResources": [IP]}},
                {
                    "name": "Coscheduling",
                    "args": {
                        "usePodGroupCRD": False,
                        "permitWaitingTimeSeconds": 2,
                        "deniedPGExpirationTimeSeconds": 60,
                    },
                },
                {"name": "DefaultBinder", "args": {"timeoutSeconds": 1}},
            ],
        },
        {
            "name": "pool",
            "extender": {"verbs": ["filter"]},
            "plugins": {"filter": [{"name": "NodeResourcePool"}]},
            "pluginConfig": [
                {
                    "name": "NodeResourcePool",
                    "args": {
                        "pool": "underlay-ip",
                        "capacityAnnotation": "ipam.example.com/pool-size",
                        "consumers": {"resource": IP},
                    },
                }
            ],
        },
    ]
    scheduler = Scheduler(write_config(tmp_path, api, profiles))
    try:
        refused = wait_for(
            # a FitError of the one node, as upstream makes a Reserve rejection
            lambda: "0/1 nodes are available: 1 pool underlay-ip exhausted: 3/3 in use." in scheduler.log.read_text(),
            seconds=30,
            what="the fourth member refused at Reserve",
        )
        assert refused
        rejected = wait_for(lambda: scheduler.log.read_text().count("rejection in Unreserve") >= 3, what="rejections")
        assert rejected
        attempts = [httpx.get(f"{scheduler.url}/explain/default/g{i}").json()["attempts"] for i in range(4)]
        errors = [a["outcome"].get("error", "") for member in attempts for a in member if a["verb"] == "bind"]
        assert sum("rejection in Unreserve" in e for e in errors) >= 3, errors
        assert bound(api) == {} and api.bindings == []  # no member bound, no Binding sent
    finally:
        scheduler.stop()


@pytest.mark.slow
def test_http_binds_and_the_scheduler_together_never_bind_twice_nor_overcommit(
    api: FakeAPIServer, tmp_path: Path
) -> None:
    """One profile schedules its pods and serves kube-scheduler's bind verb; 300 HTTP binds to
    random nodes race the scheduler's own cycles for the same 150 pods on 20 nodes of 5 slots."""
    names = [f"n{i}" for i in range(20)]
    for name in names:
        doc = node(name, cpu="32", memory="64Gi", pods="110")
        doc["metadata"]["annotations"] = {"ipam.example.com/pool-size": "5"}
        api.put("nodes", doc)
    pods = [api.put("pods", pending(f"p{i}", "both-scheduler", ips=1)) for i in range(150)]
    api.binding_delay = 0.01
    profile = {
        "name": "both",
        "schedulerName": "both-scheduler",
        "extender": {"verbs": ["filter", "bind"], "nodeCacheCapable": True},
        "plugins": {
            "filter": [{"name": "NodeResourcePool"}],
            "bind": [{"name": "DefaultBinder"}],
        },
        "pluginConfig": [
            {
                "name": "NodeResourcePool",
                "args": {
                    "pool": "underlay-ip",
                    "capacityAnnotation": "ipam.example.com/pool-size",
                    "consumers": {"resource": IP},
                },
            },
            {"name": "DefaultBinder", "args": {"timeoutSeconds": 2}},
            {"name": "NodeResourcesFit", "args": {"ignoredResources": [IP]}},  # the pool counts them
        ],
    }
    scheduler = Scheduler(write_config(tmp_path, api, [profile], insecureBind=True))
    rng = random.Random(7)
    try:
        wait_for(lambda: leading(scheduler.url), what="binds admitted")

        async def bind_all() -> list[str]:
            bodies = []
            for _ in range(2):
                for p in pods:
                    meta = p["metadata"]
                    body = {"PodName": meta["name"], "PodNamespace": meta["namespace"], "PodUID": meta["uid"]}
                    bodies.append(go_marshal({**body, "Node": rng.choice(names)}))
            rng.shuffle(bodies)
            async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=64)) as client:
                answers = await asyncio.gather(*(client.post(f"{scheduler.url}/both/bind", content=b) for b in bodies))
            return [a.json()["Error"] for a in answers]

        errors = asyncio.run(bind_all())
        assert len(errors) == 300
        assert "" in errors  # some HTTP binds won the race, the scheduler bound the others
        wait_for(lambda: len(bound(api)) == 100, seconds=60, what="every slot taken")
        placed = bound(api)
        per_node = Counter(placed.values())
        assert max(per_node.values()) <= 5 and len(placed) == 100  # 20 nodes x 5 slots, never more
        with api.lock:
            for p in api.objects["pods"].values():
                if p["spec"].get("nodeName"):
                    assert p["spec"]["nodeName"] in names
        # no pod was ever sent to two nodes: while one side's Binding is in flight the other side's
        # Reserve refuses the pod ("being bound"), and a bound pod is never bound elsewhere
        with api.lock:
            targets: dict[str, set[str]] = {}
            for b in api.bindings:
                targets.setdefault(b["metadata"]["name"], set()).add(b["target"]["name"])
        assert all(len(t) == 1 for t in targets.values()), {k: v for k, v in targets.items() if len(v) > 1}
    finally:
        scheduler.stop()

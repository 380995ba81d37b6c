"""The standalone scheduler (``python -m app schedule``) against the test API server: the shipped
examples schedule their pods, the ip-scheduler never puts more than 10 on a node, pods that do not
fit get PodScheduled=False with kube-scheduler's message and FailedScheduling events and are bound
as soon as a pod is deleted, and two replicas elect one leader."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import REPO, free_port
from tests.support.apiserver import FakeAPIServer, node, pod, pod_group


class Scheduler:
    """``python -m app schedule`` as a child process."""

    def __init__(self, config: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = config.parent / f"schedule-{self.port}.log"
        cmd = [sys.executable, "-m", "app", "schedule", "--config", str(config), "--port", str(self.port)]
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=self.log.open("wb"), stderr=subprocess.STDOUT)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def config(tmp: Path, api: FakeAPIServer, example: str, **scheduling: Any) -> Path:
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(api.kubeconfig())
    doc = yaml.safe_load((REPO / "examples" / example).read_text())
    doc["cluster"] = {"kubeconfig": str(kubeconfig)}
    # quick leader election and retries for the tests (the defaults are kube-scheduler's: 15s/10s/2s)
    doc["scheduling"] = {"leaseDuration": "3s", "renewDeadline": "2s", "retryPeriod": "500ms", **scheduling}
    # a short bind timeout: a new leader waits one bind deadline before binding (its warm-up)
    doc["profiles"][0]["pluginConfig"] = [
        *[c for c in doc["profiles"][0].get("pluginConfig", []) if c["name"] != "DefaultBinder"],
        {"name": "DefaultBinder", "args": {"timeoutSeconds": 1}},
    ]
    path = tmp / example
    path.write_text(yaml.safe_dump(doc))
    return path


def pending(name: str, scheduler: str, cpu: str = "100m") -> dict[str, Any]:
    doc = pod(name, cpu=cpu)
    doc["spec"]["schedulerName"] = scheduler
    return doc


def wait_for(check: Callable[[], Any], seconds: float = 20.0, what: str = "") -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def bound(api: FakeAPIServer) -> dict[str, str]:
    with api.lock:
        return {
            p["metadata"]["name"]: p["spec"]["nodeName"]
            for p in api.objects["pods"].values()
            if p["spec"].get("nodeName")
        }


def events(api: FakeAPIServer, reason: str) -> list[dict[str, Any]]:
    with api.lock:
        return [e for e in api.objects["events"].values() if e["reason"] == reason]


@pytest.fixture
def api() -> Iterator[FakeAPIServer]:
    server = FakeAPIServer()
    server.start()
    yield server
    server.stop()


def test_chaos_scheduler_binds_its_pods_and_only_its_pods(api: FakeAPIServer, tmp_path: Path) -> None:
    for i in range(12):
        api.put("nodes", node(f"n{i}"))
    control_plane = node("control-plane")
    control_plane["spec"] = {"taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]}
    cordoned = node("cordoned")
    cordoned["spec"] = {"unschedulable": True}
    api.put("nodes", control_plane)
    api.put("nodes", cordoned)
    for i in range(8):
        api.put("pods", pending(f"chaos-{i}", "chaos-scheduler"))
    api.put("pods", pending("someone-elses", "default-scheduler"))
    pinned = pending("pinned", "chaos-scheduler")  # only the control plane carries this hostname
    pinned["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "control-plane"}
    api.put("pods", pinned)
    scheduler = Scheduler(config(tmp_path, api, "chaos-scheduler.yaml"))
    try:
        placed = wait_for(lambda: len(bound(api)) >= 8 and bound(api), what="8 chaos pods bound")
        assert "pinned" not in placed
        assert set(placed) == {f"chaos-{i}" for i in range(8)}  # never the default scheduler's pod
        assert not {"control-plane", "cordoned"} & set(placed.values())  # taints and cordons hold
        # decided by the node constraints alone, whatever the coins say (CoinFlip never runs)
        failed = wait_for(lambda: [e for e in events(api, "FailedScheduling") if e["regarding"]["name"] == "pinned"])
        assert failed[0]["note"] == (
            "0/14 nodes are available: 1 node(s) had untolerated taint(s), "
            "1 node(s) were unschedulable, 12 node(s) didn't match Pod's node affinity/selector. "
            "no new claims to deallocate, "
            "preemption: 0/14 nodes are available: 14 Preemption is not helpful for scheduling."
        )  # v1.36.3: TaintToleration names no taint; FitError.Error() adds no period after PostFilter's;
        # DynamicResources' PostFilter, before DefaultPreemption, for a pod without claims
        assert {b["metadata"]["uid"] for b in api.bindings} == {f"uid-default-chaos-{i}" for i in range(8)}
        scheduled = wait_for(lambda: len(events(api, "Scheduled")) >= 8 and events(api, "Scheduled"), what="events")
        assert {e["reportingController"] for e in scheduled} == {"chaos-scheduler"}
        assert scheduled[0]["note"].startswith("Successfully assigned default/chaos-")
        metrics = httpx.get(f"{scheduler.url}/metrics").text
        assert 'scheduler_schedule_attempts_total{profile="chaos",result="scheduled"} 8.0' in metrics
        assert 'scheduler_pending_pods{queue="active"} 0.0' in metrics
        explained = httpx.get(f"{scheduler.url}/explain/default/chaos-0").json()
        assert [a["verb"] for a in explained["attempts"]][-1] == "bind"
    finally:
        scheduler.stop()


def test_ip_scheduler_keeps_ten_per_node_and_binds_when_a_slot_frees(api: FakeAPIServer, tmp_path: Path) -> None:
    for i in range(2):
        api.put("nodes", node(f"n{i}"))
    for i in range(23):
        api.put("pods", pending(f"ip-{i:02d}", "ip-scheduler"))
    scheduler = Scheduler(config(tmp_path, api, "ip-scheduler.yaml"))
    try:
        wait_for(lambda: len(bound(api)) == 20, what="20 pods bound")
        time.sleep(0.5)  # the three left over stay pending
        placed = bound(api)
        assert len(placed) == 20 and sorted(placed.values()).count("n0") == 10
        left = sorted({f"ip-{i:02d}" for i in range(23)} - set(placed))
        message = (  # DefaultPreemption finds no lower-priority pod to evict
            "0/2 nodes are available: 2 pool underlay-ip exhausted: 10/10 in use. no new claims to deallocate, "
            "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
        )  # v1.36.3's FitError.Error(): no period added after the PostFilter message
        with api.lock:
            conditions = {
                name: next(
                    c
                    for c in api.objects["pods"][f"default/{name}"]["status"]["conditions"]
                    if c["type"] == "PodScheduled"
                )
                for name in left
            }
        assert all(
            c["status"] == "False" and c["reason"] == "Unschedulable" and c["message"] == message
            for c in conditions.values()
        )

        # the event writer posts asynchronously: wait for one event per pod left over, not for the first
        def failed_for() -> set[str]:
            return {e["regarding"]["name"] for e in events(api, "FailedScheduling")}

        wait_for(lambda: failed_for() >= set(left), what="a FailedScheduling per pod left over")
        failed = events(api, "FailedScheduling")
        assert {e["regarding"]["name"] for e in failed} == set(left) and failed[0]["note"] == message
        freed_at = time.monotonic()
        api.delete("pods", f"default/{next(iter(placed))}")  # a slot frees
        wait_for(lambda: len(bound(api)) == 20 and set(bound(api)) & set(left), seconds=10, what="a parked pod bound")
        assert time.monotonic() - freed_at < 5  # moved by the event, not the 5-minute flush
    finally:
        scheduler.stop()


def test_two_replicas_elect_one_leader_and_the_other_takes_over(api: FakeAPIServer, tmp_path: Path) -> None:
    for i in range(4):
        api.put("nodes", node(f"n{i}"))
    path = config(tmp_path, api, "chaos-scheduler.yaml")
    first = Scheduler(path)
    wait_for(lambda: api.lease_writes, what="a Lease")
    second = Scheduler(path)
    try:
        time.sleep(2.0)
        holders = {holder for _, holder in api.lease_writes}
        assert len(holders) == 1  # the second replica never wrote itself as the holder
        wait_for(lambda: readyz(second).get("role") == "standby", what="the second replica a standby")
        assert readyz(first)["role"] == "leader"
        first.stop(signal.SIGKILL)  # the leader dies without releasing the Lease
        wait_for(lambda: len({h for _, h in api.lease_writes}) == 2, seconds=15, what="a takeover")
        for i in range(5):
            api.put("pods", pending(f"after-{i}", "chaos-scheduler"))
        wait_for(lambda: len(bound(api)) >= 4, seconds=20, what="pods bound by the new leader")
        names = [b["metadata"]["name"] for b in api.bindings]
        assert len(names) == len(set(names))  # no pod bound twice
    finally:
        first.stop()
        second.stop()


def readyz(replica: Scheduler) -> dict[str, Any]:
    """The replica's ``/readyz`` body (``{}`` while it does not answer)."""
    try:
        return dict(httpx.get(f"{replica.url}/readyz", timeout=2).json())
    except (httpx.HTTPError, ValueError):
        return {}


def leader_metrics(replica: Scheduler) -> list[str]:
    """The replica's ``scheduler_extender_is_leader`` and ``..._takeovers_total`` samples."""
    text = httpx.get(f"{replica.url}/metrics", timeout=5).text
    wanted = ("scheduler_extender_is_leader{", "scheduler_extender_takeovers_total{")
    return [line for line in text.splitlines() if line.startswith(wanted)]


def test_sigterm_hands_the_lease_over_and_the_standby_binds_at_once(tmp_path: Path) -> None:
    """Two replicas of the ip-scheduler with kube-scheduler's leader election timing (lease 15 s,
    retry period 2 s) and idle watches (no bookmark, as kube-apiserver's may stay): only the Lease's
    holder says leader (``/readyz``, metrics), the other standby; SIGTERM of the leader ends it
    within ``server.timeouts.shutdown`` with status 0 and releases the Lease as client-go's
    ``ReleaseOnCancel`` does, and the standby binds a new pod within 3 s, not a lease duration later."""
    api = FakeAPIServer(bookmark_interval=3600.0)
    api.start()
    for i in range(2):
        api.put("nodes", node(f"n{i}"))
    lease_name = "kube-system/ip-scheduler"
    path = config(tmp_path, api, "ip-scheduler.yaml", leaseDuration="15s", renewDeadline="10s", retryPeriod="2s")
    doc = yaml.safe_load(path.read_text())
    doc["server"]["timeouts"] = {"shutdown": "3s"}
    path.write_text(yaml.safe_dump(doc))
    first = Scheduler(path)
    second: Scheduler | None = None
    try:
        wait_for(lambda: readyz(first).get("role") == "leader", what="the first replica leading")
        second = Scheduler(path)
        wait_for(lambda: readyz(second).get("status") == "ready", what="the second replica ready")  # type: ignore[arg-type]
        time.sleep(2.5)  # a retry period: the standby has read the Lease at least once more
        holder = api.objects["leases"][lease_name]["spec"]["holderIdentity"]
        assert readyz(first)["role"] == "leader" and readyz(first)["leases"][lease_name]["holder"] == holder
        assert readyz(second)["role"] == "standby"
        assert readyz(second)["leases"] == {lease_name: {"holder": holder, "role": "standby"}}
        assert leader_metrics(first) == [
            f'scheduler_extender_is_leader{{lease="{lease_name}"}} 1.0',
            f'scheduler_extender_takeovers_total{{lease="{lease_name}"}} 1.0',
        ]
        assert leader_metrics(second) == [
            f'scheduler_extender_is_leader{{lease="{lease_name}"}} 0.0',
            f'scheduler_extender_takeovers_total{{lease="{lease_name}"}} 0.0',
        ]
        for i in range(4):
            api.put("pods", pending(f"before-{i}", "ip-scheduler"))
        wait_for(lambda: len(bound(api)) == 4, what="the leader binding")
        time.sleep(0.5)  # every watch idle again
        writes = len(api.lease_writes)
        stopped = time.monotonic()
        first.proc.send_signal(signal.SIGTERM)
        for i in range(3):
            api.put("pods", pending(f"after-{i}", "ip-scheduler"))
        wait_for(lambda: {f"after-{i}" for i in range(3)} <= set(bound(api)), seconds=15, what="the standby binding")
        took = time.monotonic() - stopped
        assert took < 3.0, f"the standby bound the new pods {took:.1f}s after the leader's SIGTERM"
        status = first.proc.wait(timeout=10)
        exited = time.monotonic() - stopped
        assert status == 0 and exited < 3 + 1, (status, exited, first.log.read_text())
        # released as client-go does: holder cleared, leaseDurationSeconds 1, then taken by the standby
        released = api.lease_specs[writes:]
        assert released[0]["holderIdentity"] == "" and released[0]["leaseDurationSeconds"] == 1
        assert released[0]["renewTime"] == released[0]["acquireTime"]
        assert released[1]["holderIdentity"] not in ("", holder) and released[1]["leaseTransitions"] == 1
        assert f"Lease {lease_name}: released by {holder}" in first.log.read_text()
        names = [b["metadata"]["name"] for b in api.bindings]
        assert len(names) == len(set(names)) == 7  # no pod bound twice
        # the stopped leader bound none of the pods created after its SIGTERM: the standby did, after
        # its acquisition (the Lease write after the release)
        taken = writes + 1 + api.lease_writes[writes:].index(("ip-scheduler", released[1]["holderIdentity"]))
        after = [n for n, w in zip(names, api.lease_writes_before_binding, strict=True) if w < taken]
        assert set(after) == {f"before-{i}" for i in range(4)}, after
        assert readyz(second)["role"] == "leader"
        assert leader_metrics(second) == [
            f'scheduler_extender_is_leader{{lease="{lease_name}"}} 1.0',
            f'scheduler_extender_takeovers_total{{lease="{lease_name}"}} 1.0',
        ]
    finally:
        first.stop()
        if second is not None:
            second.stop()
        api.stop()


def test_schedule_refuses_a_configuration_without_scheduler_names(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "app", "schedule", "--config", str(REPO / "examples" / "cluster.yaml")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "KUBECONFIG": str(tmp_path / "none")},
        timeout=60,
    )
    assert out.returncode == 1 and "no profile sets schedulerName" in out.stderr


def test_a_gang_arriving_one_member_at_a_time_is_bound_whole(api: FakeAPIServer, tmp_path: Path) -> None:
    """Coscheduling in the standalone scheduler: members wait (PreFilter answers an error while the
    group gathers: backoff, not the unschedulable pool), a new member activates its siblings, Permit
    holds the bound ones until minMember are placed; a group that cannot complete binds nothing."""
    for i in range(3):
        api.put("nodes", node(f"n{i}"))
    api.put("podgroups", pod_group("train", "default", 4))
    api.put("podgroups", pod_group("never", "default", 3))

    def member(name: str, group: str) -> dict[str, Any]:
        doc = pending(name, "gang-scheduler")
        doc["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": group}
        return doc

    def edit(doc: dict[str, Any]) -> None:
        profile = doc["profiles"][0]
        profile["schedulerName"] = "gang-scheduler"
        profile["plugins"] = {
            "filter": [{"name": "NodeResourcesFit"}, {"name": "Coscheduling"}],
            "score": [{"name": "NodeResourcesFit"}],
            "bind": [{"name": "DefaultBinder"}],
        }
        profile["extender"] = {"httpTimeout": "10s"}
        profile["pluginConfig"] = [
            {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 6, "scheduleTimeoutSeconds": 60}},
            {"name": "DefaultBinder", "args": {"timeoutSeconds": 1}},
        ]

    path = config(tmp_path, api, "chaos-scheduler.yaml")
    doc = yaml.safe_load(path.read_text())
    edit(doc)
    path.write_text(yaml.safe_dump(doc))
    scheduler = Scheduler(path)
    try:
        api.put("pods", member("never-0", "never"))  # 1 of minMember 3: never completes
        for i in range(3):
            time.sleep(0.5)
            api.put("pods", member(f"train-{i}", "train"))
        time.sleep(1.5)
        assert not [n for n in bound(api) if n.startswith("train-")]  # 3 of 4: nothing bound yet
        api.put("pods", member("train-3", "train"))
        gang = {f"train-{i}" for i in range(4)}
        wait_for(lambda: {n for n in bound(api) if n.startswith("train-")} == gang, seconds=30, what="the gang")
        time.sleep(1.0)
        assert "never-0" not in bound(api)
    finally:
        scheduler.stop()

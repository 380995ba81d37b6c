"""The standalone scheduler (``python -m app schedule``, ``examples/ip-scheduler.yaml``) against the
real API server: SIGTERM ends it promptly with status 0 and releases its Lease; a second replica
takes the Lease over when the first stops and binds; with only the RBAC that
``python -m app render --target standalone`` writes (its ServiceAccount's token) it schedules and
is never refused."""

from __future__ import annotations

import base64
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import REPO, free_port
from tests.realcluster.extender import pod
from tests.realcluster.support import Cluster, Obj, render, wait_for

SCHEDULER = "ip-scheduler"
LEASE = f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{SCHEDULER}"
SHUTDOWN = 3
EXAMPLE = REPO / "examples" / "ip-scheduler.yaml"


class Schedule:
    """``python -m app schedule`` as a child process (its log beside its configuration)."""

    def __init__(self, config: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = config.parent / f"schedule-{self.port}.log"
        cmd = [sys.executable, "-m", "app", "schedule", "--config", str(config), "--port", str(self.port)]
        self._out = self.log.open("wb")
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=self._out, stderr=subprocess.STDOUT)

    def readyz(self) -> dict[str, Any]:
        try:
            return dict(httpx.get(f"{self.url}/readyz", timeout=2).json())
        except (httpx.HTTPError, ValueError):
            return {}

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._out.close()


def config(tmp: Path, kubeconfig: Path, **scheduling: str) -> Path:
    """``examples/ip-scheduler.yaml`` with ``kubeconfig`` and a short shutdown timeout."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["cluster"] = {"kubeconfig": str(kubeconfig)}
    doc["server"]["timeouts"] = {"shutdown": f"{SHUTDOWN}s"}
    if scheduling:
        doc["scheduling"] = scheduling
    path = tmp / f"ip-scheduler-{kubeconfig.name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def lease(cluster: Cluster) -> Obj:
    r = cluster.api.get(LEASE)
    return r.json()["spec"] if r.status_code == 200 else {}


@pytest.fixture
def namespace(cluster: Cluster, big_nodes: list[str], request: pytest.FixtureRequest) -> Iterator[str]:
    ns = cluster.namespace(f"tier-{request.node.name.split('[')[0][5:40].replace('_', '-').strip('-')}")
    yield ns
    cluster.delete_pods(ns)
    cluster.request("DELETE", LEASE, ok=(200, 404))


def ip_pods(cluster: Cluster, ns: str, prefix: str, n: int) -> set[str]:
    names = [f"{prefix}-{i}" for i in range(n)]
    cluster.create(f"/api/v1/namespaces/{ns}/pods", [pod(name, cpu="100m", scheduler=SCHEDULER) for name in names])
    return set(names)


def test_sigterm_exits_zero_promptly_and_releases_the_lease(cluster: Cluster, namespace: str, tmp_path: Path) -> None:
    replica = Schedule(config(tmp_path, cluster.kubeconfig))
    try:
        wait_for(lambda: replica.readyz().get("role") == "leader", seconds=60, what="the replica leading")
        holder = lease(cluster)["holderIdentity"]
        assert holder
        names = ip_pods(cluster, namespace, "ip", 5)
        wait_for(lambda: set(cluster.bound(namespace)) == names, seconds=60, what="5 pods bound")
        time.sleep(1.0)  # the watches idle again, as kube-apiserver's stay between events
        started = time.monotonic()
        replica.proc.send_signal(signal.SIGTERM)
        status = replica.proc.wait(timeout=SHUTDOWN + 15)
        took = time.monotonic() - started
    finally:
        replica.stop()
    assert status == 0, replica.text()[-3000:]
    assert took < SHUTDOWN + 1, f"{took:.1f}s to exit after SIGTERM"
    released = lease(cluster)
    # client-go's ReleaseOnCancel: the holder cleared, leaseDurationSeconds 1
    assert released.get("holderIdentity", "") == "" and released["leaseDurationSeconds"] == 1, released
    assert f"released by {holder}" in replica.text()
    assert "Traceback" not in replica.text()


def test_the_second_replica_takes_the_lease_over_and_binds(cluster: Cluster, namespace: str, tmp_path: Path) -> None:
    # kube-scheduler's timing: a takeover a lease duration (15 s) late would show
    path = config(tmp_path, cluster.kubeconfig, leaseDuration="15s", renewDeadline="10s", retryPeriod="2s")
    first = Schedule(path)
    second: Schedule | None = None
    try:
        wait_for(lambda: first.readyz().get("role") == "leader", seconds=60, what="the first replica leading")
        second = Schedule(path)
        wait_for(lambda: second.readyz().get("role") == "standby", seconds=60, what="the second replica standing by")
        holder = lease(cluster)["holderIdentity"]
        before = ip_pods(cluster, namespace, "before", 4)
        wait_for(lambda: set(cluster.bound(namespace)) == before, seconds=60, what="the leader binding")
        assert second.readyz().get("role") == "standby"
        stopped = time.monotonic()
        first.proc.send_signal(signal.SIGTERM)
        assert first.proc.wait(timeout=SHUTDOWN + 15) == 0, first.text()[-3000:]
        after = ip_pods(cluster, namespace, "after", 3)
        wait_for(lambda: before | after == set(cluster.bound(namespace)), seconds=30, what="the standby binding")
        took = time.monotonic() - stopped
        taken = lease(cluster)
        assert taken["holderIdentity"] not in ("", holder) and taken["leaseTransitions"] >= 1, taken
        assert second.readyz().get("role") == "leader"
        assert took < 10, f"the standby bound {took:.1f}s after the leader's SIGTERM (a lease duration is 15 s)"
        assert "Traceback" not in first.text() + second.text()
    finally:
        first.stop()
        if second is not None:
            second.stop()


def token_kubeconfig(cluster: Cluster, tmp: Path, namespace: str, account: str) -> Path:
    """A kubeconfig of the admin's server and CA with a token of ``namespace/account``."""
    token = cluster.kubectl("-n", namespace, "create", "token", account, "--duration", "1h").stdout.strip()
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    server = admin["clusters"][0]["cluster"]
    ca = (
        server.get("certificate-authority-data")
        or base64.b64encode(Path(server["certificate-authority"]).read_bytes()).decode()
    )
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server["server"], "certificate-authority-data": ca}}],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": account}}],
        "current-context": "c",
    }
    path = tmp / f"{account}.kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_with_only_the_rendered_rbac_it_schedules_and_is_never_refused(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    rendered = render(EXAMPLE, "standalone", tmp_path / "rendered")
    account = yaml.safe_load((rendered / "scheduler" / "serviceaccount.yaml").read_text())
    assert account["kind"] == "ServiceAccount"
    rbac = [d for d in yaml.safe_load_all((rendered / "scheduler" / "rbac.yaml").read_text()) if d]
    assert {d["kind"] for d in rbac} == {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
    cluster.apply([account, *rbac])
    kubeconfig = token_kubeconfig(cluster, tmp_path, account["metadata"]["namespace"], account["metadata"]["name"])
    # the token is the ServiceAccount's, and it is not the admin
    who = cluster.kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}", kubeconfig=kubeconfig)
    assert who.stdout == f"system:serviceaccount:kube-system:{SCHEDULER}"
    assert (
        cluster.kubectl("auth", "can-i", "create", "nodes", kubeconfig=kubeconfig, check=False).stdout.strip() == "no"
    )
    replica = Schedule(config(tmp_path, kubeconfig))
    try:
        wait_for(lambda: replica.readyz().get("role") == "leader", seconds=60, what="the replica leading")
        names = ip_pods(cluster, namespace, "rbac", 12)
        wait_for(lambda: set(cluster.bound(namespace)) == names, seconds=60, what="12 pods bound")
        # its events reach the API (events.k8s.io create): one Scheduled event per pod
        wait_for(
            lambda: (
                len(
                    [
                        e
                        for e in cluster.get(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")["items"]
                        if e["reason"] == "Scheduled"
                    ]
                )
                >= 12
            ),
            seconds=30,
            what="12 Scheduled events",
        )
        replica.proc.send_signal(signal.SIGTERM)
        assert replica.proc.wait(timeout=SHUTDOWN + 15) == 0
    finally:
        replica.stop()
    log = replica.text()
    refused = [line for line in log.splitlines() if "403" in line or "forbidden" in line.lower()]
    assert refused == [], "\n".join(refused[:10])
    assert "Traceback" not in log

"""The service as kube-scheduler's extender on the real cluster: ``python -m app serve`` over mutual
TLS (the certificates of ``python -m app certs``), and kube-scheduler's configuration as
``python -m app render --target kubeadm`` writes it for that service configuration, with only the
kubeconfig, leader election, a profile name and the client's QPS changed for the test."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.conftest import REPO, Server, cluster_config, free_port, mutual_tls
from tests.realcluster.support import FAKE, Cluster, KubeScheduler, Obj, render, wait_for

#: the kube-scheduler profile of the extender scenarios: pods name it in spec.schedulerName (a
#: user's cluster keeps its own default-scheduler)
SCHEDULER = "realcluster-extender"
#: DefaultBinder's deadline in the tier's service, seconds (kube-scheduler's httpTimeout: 5 s more)
BIND_TIMEOUT = 25
#: the lab's release (kube-scheduler must not be newer than the API server)
RENDER_ARGS = ("--kubernetes-version", "v1.36.3")


def certs(pki: Path) -> None:
    subprocess.run([sys.executable, "-m", "app", "certs", "--out", str(pki)], cwd=REPO, check=True, capture_output=True)


def client_context(pki: Path) -> Any:
    import ssl

    return ssl.create_default_context(cafile=str(pki / "ca.crt"))


class Extended:
    """The service (``server``) and kube-scheduler calling it (``kube``)."""

    def __init__(self, cluster: Cluster, tmp: Path, bind: bool = True) -> None:
        """``bind``: the service binds (``bindVerb``); else kube-scheduler binds itself."""
        self.pki = tmp / "pki"
        certs(self.pki)
        port = free_port()

        def edit(doc: Obj) -> None:
            mutual_tls(self.pki)(doc)
            doc["server"]["port"] = port
            for profile in doc["profiles"]:
                if not bind:
                    profile["extender"]["verbs"] = [v for v in profile["extender"]["verbs"] if v != "bind"]
                # room for a slow API server: the example's 4 s bind deadline (httpTimeout 5 s)
                # fails binds on a loaded 2-core machine (seen at load 12: 292 binds of a
                # 1,500-pod backlog past 4 s, kube-scheduler retrying them elsewhere), which is
                # timing, not what the tier asserts
                profile["extender"]["httpTimeout"] = f"{BIND_TIMEOUT + 5}s"
                for pc in profile.get("pluginConfig", []):
                    if pc["name"] == "DefaultBinder":
                        pc["args"] = {**(pc.get("args") or {}), "timeoutSeconds": BIND_TIMEOUT}

        config = cluster_config(tmp, cluster.kubeconfig.read_text(), edit=edit)
        rendered = render(config, "kubeadm", tmp / "rendered", *RENDER_ARGS)
        ksc = yaml.safe_load((rendered / "kube-scheduler-config.yaml").read_text())
        (extender,) = ksc["extenders"]
        assert extender["urlPrefix"] == f"https://127.0.0.1:{port}/default" and extender["enableHTTPS"] is True
        assert extender["httpTimeout"] == f"{BIND_TIMEOUT + 5}s"
        assert ("bindVerb" in extender) is bind
        ksc["clientConnection"] = {"kubeconfig": "@KUBECONFIG@", "qps": 500, "burst": 1000}
        ksc["leaderElection"] = {"leaderElect": False}
        ksc["profiles"] = [{"schedulerName": SCHEDULER}]
        self.kube_config = yaml.safe_dump(ksc)
        self.server = Server(config, verify=client_context(self.pki), port=port)
        self.kube: KubeScheduler | None = None
        try:
            self.kube = cluster.scheduler(self.kube_config)
            self.started = time.monotonic()  # kube-scheduler healthy: it schedules from now
        except BaseException:
            self.server.stop()
            raise

    def requests(self) -> dict[tuple[str, str], float]:
        """(verb, code) -> requests answered, from the service's metrics."""
        text = httpx.get(f"{self.server.url}/metrics", verify=client_context(self.pki), timeout=10).text
        counts: dict[tuple[str, str], float] = {}
        pattern = r"^scheduler_extender_requests_total\{([^}]*)\} (\S+)$"
        for labels, value in re.findall(pattern, text, re.MULTILINE):
            found = dict(re.findall(r'(\w+)="([^"]*)"', labels))
            key = (found["verb"], found["code"])
            counts[key] = counts.get(key, 0.0) + float(value)
        return counts

    def alpn(self) -> str | None:
        """The protocol the service selects for a client offering what Go's transport offers
        (``h2``, ``http/1.1``) with kube-scheduler's certificate."""
        context = client_context(self.pki)
        context.load_cert_chain(str(self.pki / "scheduler.crt"), str(self.pki / "scheduler.key"))
        context.set_alpn_protocols(["h2", "http/1.1"])
        with (
            socket.create_connection(("127.0.0.1", self.server.port), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            return tls.selected_alpn_protocol()

    def server_log(self) -> str:
        return self.server.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.kube is not None:
            self.kube.stop()
        self.server.stop()


def pod(name: str, cpu: str = "10m", memory: str = "16Mi", scheduler: str = SCHEDULER, **spec: Any) -> Obj:
    """A pod for ``scheduler`` (grace period 0: nothing waits for a kubelet that is not there), only
    for the tier's nodes (on a user's cluster, never one of its real nodes)."""
    spec["nodeSelector"] = {FAKE: "true", **spec.get("nodeSelector", {})}
    container = {
        "name": "c",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"schedulerName": scheduler, "terminationGracePeriodSeconds": 0, "containers": [container], **spec},
    }


def wait_bound(
    cluster: Cluster, namespace: str, n: int, stall: float = 90.0, limit: float = 900.0
) -> tuple[int, float]:
    """Wait until ``n`` pods of ``namespace`` are bound, or none was bound for ``stall`` seconds,
    or ``limit`` passed; (pods bound, seconds from the call to the last one bound)."""
    started = last_change = time.monotonic()
    count = last = 0
    while True:
        count = len(cluster.bound(namespace))
        now = time.monotonic()
        if count != last:
            last, last_change = count, now
        if count >= n or now - last_change > stall or now - started > limit:
            return count, last_change - started
        time.sleep(1.0)


__all__ = ["SCHEDULER", "Extended", "pod", "wait_bound", "wait_for"]

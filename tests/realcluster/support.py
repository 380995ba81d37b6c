"""The real-control-plane tier's cluster: the lab of ``../shared/lab`` (``cluster.sh``: etcd and
kube-apiserver v1.36.3 on loopback, RBAC enforced, no kubelet, no controller-manager) started on
free ports in a directory of its own, or a cluster of the user's (``KUBECONFIG`` and
``KUBE_SCHEDULER``, a kube-scheduler binary of the cluster's release).

:class:`Cluster` is what the tests use: the admin kubeconfig, ``kubectl``, an HTTP client with the
admin's credentials for what must be fast (hundreds of nodes, thousands of pods), ``nodes(n)``,
``scheduler(config)`` (a kube-scheduler process and its log) and clean-up of a namespace's pods.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.conftest import REPO

Obj = dict[str, Any]
#: the label of every node the tier creates (a user's cluster: delete them with
#: ``kubectl delete nodes -l realcluster.scheduler-extender.dev/fake``)
FAKE = "realcluster.scheduler-extender.dev/fake"
#: klog's error lines (``E1128 13:09:04.123456 ...``) and what the extender client logs on failures
KLOG_ERROR = re.compile(r"^E\d{4} ", re.MULTILINE)
SUSPECT = re.compile(r"GOAWAY|ENHANCE_YOUR_CALM|failed to run extender|extender.*error", re.IGNORECASE)


def wait_for(check: Callable[[], Any], seconds: float = 30.0, what: str = "", every: float = 0.2) -> Any:
    """``check()``'s first truthy value within ``seconds``, else an AssertionError naming ``what``."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:.0f}s waiting for {what}")
        time.sleep(every)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_port_run(n: int) -> int:
    """The first of ``n`` consecutive loopback ports that were free a moment ago (etcd's three)."""
    for _ in range(200):
        first = random.randrange(20000, 60000 - n)
        try:
            for port in range(first, first + n):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
    raise RuntimeError(f"no {n} consecutive free ports")


#: error lines kube-scheduler v1.36.3 logs on every start, whatever its configuration
BENIGN = re.compile(r"options\.go:\d+\] The manifest file is empty, ignoring\.$")


def stop_process(proc: subprocess.Popen[bytes], seconds: float = 15) -> None:
    """SIGTERM, then SIGKILL when ``proc`` is still running ``seconds`` later; reaped either way."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def render(config: Path, target: str, out: Path, *args: str) -> Path:
    """``python -m app render --config CONFIG --target TARGET [ARGS] --out OUT``; ``out``."""
    command = [sys.executable, "-m", "app", "render", "--config", str(config), "--target", target, *args]
    done = subprocess.run([*command, "--out", str(out)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out


def error_lines(log: str) -> list[str]:
    """kube-scheduler's klog error lines and lines about the extender failing or GOAWAY."""
    return [
        line
        for line in log.splitlines()
        if (KLOG_ERROR.match(line) or SUSPECT.search(line)) and not BENIGN.search(line)
    ]


class KubeScheduler:
    """A kube-scheduler process with its configuration and log in ``workdir``."""

    def __init__(self, binary: str, kubeconfig: Path, config: str, workdir: Path, verbosity: int = 2) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.config = workdir / f"kube-scheduler-{self.port}.yaml"
        self.config.write_text(config.replace("@KUBECONFIG@", str(kubeconfig)))
        self.log = workdir / f"kube-scheduler-{self.port}.log"
        cmd = [
            binary,
            "--config",
            str(self.config),
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            str(self.port),
            "--authentication-kubeconfig",
            str(kubeconfig),
            "--authorization-kubeconfig",
            str(kubeconfig),
            "--v",
            str(verbosity),
        ]
        self._out = self.log.open("wb")
        self.proc = subprocess.Popen(cmd, stdout=self._out, stderr=subprocess.STDOUT, start_new_session=True)
        with httpx.Client(verify=False, timeout=1) as probe:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"kube-scheduler exited with {self.proc.returncode}:\n{self.text()[-3000:]}")
                try:
                    if probe.get(f"https://127.0.0.1:{self.port}/healthz").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"kube-scheduler not healthy within 60 s:\n{self.text()[-3000:]}")

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def errors(self, since: int = 0) -> list[str]:
        """:func:`error_lines` of the log from offset ``since`` (a :meth:`size` taken earlier)."""
        return error_lines(self.text()[since:])

    def size(self) -> int:
        return len(self.text())

    def stop(self) -> None:
        stop_process(self.proc)
        self._out.close()


def _admin_client(kubeconfig: Path) -> httpx.Client:
    """An httpx client with the kubeconfig's server and credentials (client certificate, token or
    an exec plugin's token, as the official client's loader resolves them)."""
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    conf = k8s_client.Configuration()
    k8s_config.load_kube_config(config_file=str(kubeconfig), client_configuration=conf)
    headers = {}
    token = (conf.api_key or {}).get("authorization") or (conf.api_key or {}).get("BearerToken")
    if token:
        headers["Authorization"] = token if token.lower().startswith("bearer ") else f"Bearer {token}"
    context = ssl.create_default_context(cafile=conf.ssl_ca_cert or None)
    if not conf.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if conf.cert_file:
        context.load_cert_chain(conf.cert_file, conf.key_file)
    limits = httpx.Limits(max_connections=32, max_keepalive_connections=32)
    return httpx.Client(base_url=conf.host, headers=headers, verify=context, timeout=60, limits=limits)


class Cluster:
    """What the tests use of a cluster (see the module doc). ``workdir``: logs and generated files."""

    def __init__(self, kubeconfig: Path, kubectl: str, kube_scheduler: str, workdir: Path, lab: bool) -> None:
        self.kubeconfig = kubeconfig
        self.kubectl_bin = kubectl
        self.kube_scheduler_bin = kube_scheduler
        self.workdir = workdir
        self.lab = lab
        self.api = _admin_client(kubeconfig)
        self.schedulers: list[KubeScheduler] = []

    # -- kubectl and raw API calls

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, kubeconfig: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(kubeconfig or self.kubeconfig)}
        out = subprocess.run(
            [self.kubectl_bin, *args], input=input, env=env, capture_output=True, text=True, timeout=300
        )
        if check and out.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({out.returncode}): {out.stderr}")
        return out

    def apply(self, docs: str | Iterable[Obj], kubeconfig: Path | None = None) -> None:
        """``kubectl apply`` of YAML text or documents (``--validate=false``: the lab's OpenAPI v2
        answers 503; the API server still validates every object)."""
        text = docs if isinstance(docs, str) else yaml.safe_dump_all(list(docs))
        self.kubectl("apply", "--validate=false", "-f", "-", input=text, kubeconfig=kubeconfig)

    def request(self, method: str, path: str, ok: tuple[int, ...] = (200, 201), **kwargs: Any) -> Any:
        """One API call, its JSON answer; an idempotent one (GET, DELETE) is sent again once when the
        API server closed the keep-alive connection it went on before answering (a race every
        HTTP/1.1 client meets; client-go retries such a request too)."""
        try:
            r = self.api.request(method, path, **kwargs)
        except httpx.RemoteProtocolError:
            if method not in ("GET", "DELETE"):
                raise
            r = self.api.request(method, path, **kwargs)
        if r.status_code not in ok:
            raise AssertionError(f"{method} {path}: {r.status_code} {r.text[:500]}")
        return r.json() if r.content else None

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params)

    # -- namespaces, nodes, pods

    def namespace(self, name: str) -> str:
        """Create ``name`` (if absent) with its ``default`` ServiceAccount (no controller-manager
        makes it in the lab, and admission refuses pods without it)."""
        self.request("POST", "/api/v1/namespaces", ok=(201, 409), json={"metadata": {"name": name}})
        self.request(
            "POST",
            f"/api/v1/namespaces/{name}/serviceaccounts",
            ok=(201, 409),
            json={"metadata": {"name": "default"}},
        )
        return name

    def nodes(
        self, n: int, prefix: str = "lab-node", labels: dict[str, str] | None = None, **capacity: str
    ) -> list[str]:
        """``n`` Ready nodes ``<prefix>-1..n`` (cpu 4, memory 16Gi, pods 110 unless ``capacity``
        says otherwise), created through the API by a few threads: the node, its status, and the
        ``not-ready`` taint admission gives a new node removed. Existing ones are left as they are."""
        names = [f"{prefix}-{i}" for i in range(1, n + 1)]
        alloc = {"cpu": "4", "memory": "16Gi", "pods": "110", **capacity}

        def make(name: str) -> None:
            meta = {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", FAKE: "true", **(labels or {})},
            }
            r = self.api.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": meta})
            if r.status_code == 409:
                return
            assert r.status_code == 201, r.text
            status = {
                "capacity": alloc,
                "allocatable": alloc,
                "conditions": [{"type": "Ready", "status": "True", "reason": "LabFake", "message": "no kubelet"}],
            }
            merge = {"Content-Type": "application/merge-patch+json"}
            r = self.api.patch(f"/api/v1/nodes/{name}/status", json={"status": status}, headers=merge)
            assert r.status_code == 200, r.text
            r = self.api.patch(f"/api/v1/nodes/{name}", json={"spec": {"taints": None}}, headers=merge)
            assert r.status_code == 200, r.text

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(make, names))
        return names

    def create(self, path: str, docs: list[Obj], workers: int = 8) -> None:
        """POST every document to ``path`` by ``workers`` threads; every answer must be a 201."""

        def post(doc: Obj) -> None:
            for attempt in range(5):
                r = self.api.post(path, json=doc)
                if r.status_code == 201:
                    return
                if r.status_code not in (429, 500, 503, 504) or attempt == 4:
                    raise AssertionError(f"POST {path}: {r.status_code} {r.text[:300]}")
                time.sleep(0.5 * (attempt + 1))

        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(post, docs))

    def pods(self, namespace: str, **params: Any) -> list[Obj]:
        """Every pod of ``namespace`` (one list, paged by the API server when large)."""
        items: list[Obj] = []
        token = ""
        while True:
            page = self.get(
                f"/api/v1/namespaces/{namespace}/pods", limit=5000, **({"continue": token} if token else {}), **params
            )
            items += page["items"]
            token = page["metadata"].get("continue", "")
            if not token:
                return items

    def bound(self, namespace: str) -> dict[str, str]:
        """pod name -> node name of every bound pod of ``namespace``."""
        return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in self.pods(namespace) if p["spec"].get("nodeName")}

    def delete_pods(self, namespace: str) -> None:
        """Delete every pod of ``namespace`` at once (grace period 0: no kubelet confirms a
        graceful deletion in the lab)."""
        self.request("DELETE", f"/api/v1/namespaces/{namespace}/pods", params={"gracePeriodSeconds": 0}, ok=(200,))
        wait_for(lambda: not self.pods(namespace), seconds=120, what=f"the pods of {namespace} deleted")

    # -- kube-scheduler

    def scheduler(self, config: str, verbosity: int = 2) -> KubeScheduler:
        """Start kube-scheduler with the KubeSchedulerConfiguration ``config`` (YAML text;
        ``@KUBECONFIG@`` in it becomes the admin kubeconfig), healthy when returned."""
        ks = KubeScheduler(self.kube_scheduler_bin, self.kubeconfig, config, self.workdir / "kube-scheduler", verbosity)
        self.schedulers.append(ks)
        return ks

    def close(self) -> None:
        for ks in self.schedulers:
            ks.stop()
        self.api.close()


class Lab:
    """``cluster.sh`` on free ports with its own ``LAB_HOME``."""

    def __init__(self, lab_dir: Path, home: Path) -> None:
        self.script = lab_dir / "cluster.sh"
        self.home = home
        api_port = free_port()
        self.env = {
            **os.environ,
            "LAB_HOME": str(home),
            "LAB_API_PORT": str(api_port),
            "LAB_ETCD_PORT": str(free_port_run(3)),
            "LAB_SCHED_PORT": str(free_port()),
        }

    def run(self, *args: str, timeout: float = 240, check: bool = True) -> str:
        out = subprocess.run([str(self.script), *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and out.returncode != 0:
            raise RuntimeError(f"cluster.sh {' '.join(args)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
        return out.stdout

    def up(self) -> Path:
        for line in self.run("up").splitlines():
            if line.startswith("KUBECONFIG="):
                return Path(line.split("=", 1)[1])
        raise RuntimeError("cluster.sh up printed no KUBECONFIG")

    def binary(self, name: str) -> str:
        return str(self.home / "bin" / name)

    def down(self, check: bool = True) -> None:
        self.run("down", "--wipe", check=check)


def etcd_available() -> bool:
    return bool(os.environ.get("LAB_ETCD") or shutil.which("etcd") or Path("/usr/bin/etcd").exists())

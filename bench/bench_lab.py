"""kube-scheduler's pace through the service against the real control plane of ``../shared/lab``:
kube-apiserver and kube-scheduler v1.36.3 (``cluster.sh``), the service as ``python -m app render``
deploys ``examples/cluster.yaml`` (cache mode, mutual TLS, HTTP/2 offered, its Lease followed),
a backlog of pending pods created before kube-scheduler starts.

Variants (``BENCH_VARIANTS``, alternated for ``BENCH_ROUNDS`` rounds), each on a fresh service
and a fresh kube-scheduler (the same nodes, the previous variant's pods deleted):

- ``extender``: the service binds (``bindVerb``), as rendered;
- ``self``: kube-scheduler binds itself (no ``bindVerb``; the service without its binder, the
  same mutual TLS).

Printed per variant: pods/s from the first pod seen bound to the last (a watch on the pods), the
service's mean answer time per verb (its ``/metrics``, over the same mutual TLS), the service's
CPU per pod, and the error lines (``E....``) of kube-scheduler's log. Sizes: ``BENCH_NODES``
(200), ``BENCH_PODS`` (1,500). ``BENCH_PROFILE=DIR``: py-spy records the service (as
:mod:`bench.support`). The lab's ports and state come from its own variables (``LAB_HOME``,
``LAB_API_PORT``, ...); ``LAB_DIR`` says where ``cluster.sh`` is. Run: ``python bench/bench_lab.py``
(``bench/bench_extender_cycle.py`` runs it when the lab is present).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from app.deploy.certs import issue  # noqa: E402
from bench.bench_bind import cpu_seconds  # noqa: E402
from bench.support import profiler, without_bind  # noqa: E402
from tests.conftest import Server  # noqa: E402

NODES = int(os.environ.get("BENCH_NODES", "200"))
PODS = int(os.environ.get("BENCH_PODS", "1500"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "1"))
#: kube-scheduler's client QPS and burst (``clientConnection``; its default of 50/100 caps the
#: Bindings it sends itself at about 50/s): ``BENCH_SCHED_QPS`` (1000, burst twice that; 0: the default)
SCHED_QPS = float(os.environ.get("BENCH_SCHED_QPS", "1000"))
NAMESPACE = "bench-lab"
VARIANTS = {
    "extender": "the service binds (bindVerb), mutual TLS, HTTP/2",
    "self": "kube-scheduler binds itself; the service without bind, mutual TLS, HTTP/2",
}


def lab_dir() -> Path | None:
    """``$LAB_DIR`` or ``../shared/lab`` beside the repository, when it holds ``cluster.sh``."""
    where = Path(os.environ.get("LAB_DIR") or REPO.parent / "shared" / "lab")
    return where if (where / "cluster.sh").is_file() else None


class Lab:
    """The lab's control plane: ``cluster.sh up`` (kept running if it already is), an API client
    with the admin kubeconfig's client certificate."""

    def __init__(self, where: Path, tmp: Path) -> None:
        self.sh = where / "cluster.sh"
        out = subprocess.run([str(self.sh), "up"], check=True, capture_output=True, text=True).stdout
        self.kubeconfig = Path(re.findall(r"KUBECONFIG=(\S+)", out)[-1])
        doc = yaml.safe_load(self.kubeconfig.read_text())
        user, cluster = doc["users"][0]["user"], doc["clusters"][0]["cluster"]
        self.server = cluster["server"]
        files = {}
        for key, name in (
            ("certificate-authority-data", "ca"),
            ("client-certificate-data", "crt"),
            ("client-key-data", "key"),
        ):
            path = tmp / f"lab-admin.{name}"
            data = cluster.get(key) if name == "ca" else user.get(key)
            path.write_bytes(base64.b64decode(data))
            files[name] = path
        self.tls = ssl.create_default_context(cafile=str(files["ca"]))
        self.tls.load_cert_chain(str(files["crt"]), str(files["key"]))
        home = Path(os.environ.get("LAB_HOME", Path.home() / ".cache" / "scheduler-lab"))
        self.scheduler_log = home / "run" / "logs" / "scheduler.log"
        self.scheduler_pid = home / "run" / "scheduler.pid"
        self.version = self.get("/version")["gitVersion"]

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.server, verify=self.tls, timeout=60)

    def get(self, path: str) -> Any:
        with self.client() as c:
            r = c.get(path)
            r.raise_for_status()
            return r.json()

    def run(self, *args: str) -> str:
        return subprocess.run([str(self.sh), *args], check=True, capture_output=True, text=True).stdout

    def stop_scheduler(self) -> None:
        """Stop the lab's kube-scheduler (its pid file's process), if running."""
        if self.scheduler_pid.exists():
            pid = int(self.scheduler_pid.read_text())
            try:
                os.kill(pid, 15)
                for _ in range(100):
                    os.kill(pid, 0)
                    time.sleep(0.1)
            except ProcessLookupError:
                pass
            self.scheduler_pid.unlink(missing_ok=True)


async def _many(lab: Lab, calls: list[tuple[str, str, Any, str | None]], width: int = 32) -> None:
    """Send ``(method, path, json, content_type)`` calls, ``width`` at a time; any answer of 400
    or more but 404/409 fails."""
    limits = httpx.Limits(max_connections=width, max_keepalive_connections=width)
    async with httpx.AsyncClient(base_url=lab.server, verify=lab.tls, timeout=60, limits=limits) as c:
        sem = asyncio.Semaphore(width)

        async def one(method: str, path: str, body: Any, ctype: str | None) -> None:
            async with sem:
                headers = {"Content-Type": ctype} if ctype else {}
                r = await c.request(method, path, content=json.dumps(body).encode(), headers=headers)
                if r.status_code >= 400 and r.status_code not in (404, 409):
                    raise RuntimeError(f"{method} {path}: {r.status_code} {r.text[:300]}")

        await asyncio.gather(*(one(*call) for call in calls))


def ensure_nodes(lab: Lab, count: int) -> None:
    """``bench-node-1..count`` Ready, untainted (cpu 4, memory 16Gi, 110 pods), as ``cluster.sh
    nodes`` makes them, through the API directly (3 calls a node, 32 in flight); other nodes of
    the benchmark beyond ``count`` are deleted."""
    have = {n["metadata"]["name"] for n in lab.get("/api/v1/nodes?labelSelector=bench-lab%3Dtrue")["items"]}
    want = {f"bench-node-{i}" for i in range(1, count + 1)}
    calls: list[tuple[str, str, Any, str | None]] = [("DELETE", f"/api/v1/nodes/{n}", {}, None) for n in have - want]
    status = {
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "LabFake", "message": "no kubelet"}],
        }
    }
    merge = "application/merge-patch+json"
    new = sorted(want - have)
    for name in new:
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "bench-lab": "true"}
        calls.append(
            (
                "POST",
                "/api/v1/nodes",
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}},
                None,
            )
        )
    asyncio.run(_many(lab, calls))
    # the admission plugin taints a new node not-ready: mark it Ready, then clear its taints
    asyncio.run(_many(lab, [("PATCH", f"/api/v1/nodes/{n}/status", status, merge) for n in new]))
    asyncio.run(_many(lab, [("PATCH", f"/api/v1/nodes/{n}", {"spec": {"taints": None}}, merge) for n in new]))


def reset_pods(lab: Lab) -> None:
    """Delete the benchmark's pods (force: no kubelet) and wait until none is left."""
    with lab.client() as c:
        if c.get(f"/api/v1/namespaces/{NAMESPACE}").status_code == 404:
            c.post("/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}}).raise_for_status()
        c.delete(f"/api/v1/namespaces/{NAMESPACE}/pods", params={"gracePeriodSeconds": "0"})
        for _ in range(600):
            if not c.get(f"/api/v1/namespaces/{NAMESPACE}/pods", params={"limit": "1"}).json()["items"]:
                return
            time.sleep(0.2)
    raise RuntimeError("the benchmark's pods were not deleted")


def create_pods(lab: Lab, first: int, count: int) -> None:
    """``count`` pending pods (100m cpu, 128Mi each) for the default scheduler."""
    calls: list[tuple[str, str, Any, str | None]] = []
    for i in range(first, first + count):
        container = {
            "name": "c",
            "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
        }
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p-{i}", "namespace": NAMESPACE},
            "spec": {"containers": [container]},
        }
        calls.append(("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", pod, None))
    asyncio.run(_many(lab, calls))


class BoundWatch:
    """A watch on the benchmark's pods from ``resource_version``: when each was first seen bound."""

    def __init__(self, lab: Lab, resource_version: str) -> None:
        self.bound: dict[str, float] = {}
        self.stopped = False
        self._lab, self._rv = lab, resource_version
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        params = {"watch": "true", "resourceVersion": self._rv, "allowWatchBookmarks": "false", "timeoutSeconds": "600"}
        with self._lab.client() as c:
            while not self.stopped:
                with c.stream("GET", f"/api/v1/namespaces/{NAMESPACE}/pods", params=params, timeout=None) as r:
                    for line in r.iter_lines():
                        if self.stopped:
                            return
                        if not line:
                            continue
                        event = json.loads(line)
                        obj = event["object"]
                        if event["type"] == "ERROR":
                            raise RuntimeError(f"watch failed: {obj}")
                        params["resourceVersion"] = obj["metadata"]["resourceVersion"]
                        name = obj["metadata"]["name"]
                        if obj["spec"].get("nodeName") and name not in self.bound:
                            self.bound[name] = time.perf_counter()


def service_config(tmp: Path, rendered: Path, pki: Path, kubeconfig: Path, port: int, bind: bool) -> Path:
    """The rendered service configuration with this machine's files: the PKI of ``python -m app
    certs``, the lab's admin kubeconfig, ``port``; no metrics listener (``/metrics`` on the verb
    port serves the same figures)."""
    doc = yaml.safe_load((rendered / "scheduler-extender-config.yaml").read_text())
    tls = doc["server"]["tls"]
    tls.update(certFile=str(pki / "server.crt"), keyFile=str(pki / "server.key"), clientCAFile=str(pki / "ca.crt"))
    tls["scheduler"] = {k: str(pki / Path(v).name) for k, v in tls["scheduler"].items()}
    doc["server"]["port"] = port
    doc["server"]["metrics"]["enabled"] = False
    doc["cluster"]["kubeconfig"] = str(kubeconfig)
    if os.environ.get("BENCH_API_WORKERS"):  # an experiment: the API executor's threads and connections
        doc["cluster"]["apiWorkers"] = int(os.environ["BENCH_API_WORKERS"])
    if not bind:
        without_bind(doc)
    out = tmp / f"service-{'bind' if bind else 'nobind'}.yaml"
    out.write_text(yaml.safe_dump(doc))
    return out


def scheduler_config(tmp: Path, rendered: Path, pki: Path, port: int, bind: bool) -> Path:
    """The rendered KubeSchedulerConfiguration: ``@KUBECONFIG@`` (``cluster.sh`` puts the lab's
    admin kubeconfig there), the extender at ``port`` with this machine's PKI; ``bind`` false
    drops ``bindVerb``."""
    doc = yaml.safe_load((rendered / "kube-scheduler-config.yaml").read_text())
    doc["clientConnection"]["kubeconfig"] = "@KUBECONFIG@"
    if SCHED_QPS > 0:
        doc["clientConnection"].update(qps=SCHED_QPS, burst=int(2 * SCHED_QPS))
    for ext in doc["extenders"]:
        ext["urlPrefix"] = re.sub(r"//[^/]+", f"//127.0.0.1:{port}", ext["urlPrefix"], count=1)
        ext["tlsConfig"] = {k: str(pki / Path(v).name) for k, v in ext["tlsConfig"].items()}
        if not bind:
            ext.pop("bindVerb", None)
    out = tmp / f"kube-scheduler-{'bind' if bind else 'nobind'}.yaml"
    out.write_text(yaml.safe_dump(doc))
    return out


def verb_means(metrics: str) -> dict[str, tuple[float, int]]:
    """Mean seconds and count per verb of the request duration histogram in ``metrics``."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for line in metrics.splitlines():
        m = re.match(r"(\w+request_duration_seconds)_(sum|count)\{([^}]*)\} (\S+)", line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3)))
        verb = labels.get("verb") or labels.get("endpoint") or "?"
        if m.group(2) == "sum":
            sums[verb] = sums.get(verb, 0.0) + float(m.group(4))
        else:
            counts[verb] = counts.get(verb, 0) + int(float(m.group(4)))
    return {v: (sums.get(v, 0.0) / counts[v] if counts[v] else 0.0, counts[v]) for v in counts}


def api_latency(lab: Lab) -> dict[str, tuple[float, float]]:
    """kube-apiserver's own request duration (sum, count) per ``VERB resource/subresource`` of
    the requests it served (its ``/metrics``)."""
    with lab.client() as c:
        text = c.get("/metrics").text
    out: dict[str, tuple[float, float]] = {}
    for line in text.splitlines():
        m = re.match(r"apiserver_request_duration_seconds_(sum|count)\{([^}]*)\} (\S+)", line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        key = f"{labels.get('verb')} {labels.get('resource')}/{labels.get('subresource', '')}".rstrip("/")
        s, n = out.get(key, (0.0, 0.0))
        out[key] = (s + float(m.group(3)), n) if m.group(1) == "sum" else (s, n + float(m.group(3)))
    return out


def api_delta(
    before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]
) -> dict[str, tuple[float, int]]:
    """Mean seconds and count per request kind between two :func:`api_latency` readings."""
    out = {}
    for key, (s, n) in after.items():
        s0, n0 = before.get(key, (0.0, 0.0))
        if n - n0 >= 1:
            out[key] = ((s - s0) / (n - n0), int(n - n0))
    return out


def run_variant(lab: Lab, tmp: Path, rendered: Path, pki: Path, name: str, first: int) -> dict[str, Any]:
    """One variant: a fresh service (as deployed: running before the pods come), pods
    ``p-<first>`` onwards created pending, then kube-scheduler."""
    bind = name == "extender"
    lab.stop_scheduler()
    reset_pods(lab)
    client_tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    client_tls.load_cert_chain(str(pki / "scheduler.crt"), str(pki / "scheduler.key"))
    from tests.conftest import free_port

    port = free_port()
    server = Server(
        service_config(tmp, rendered, pki, lab.kubeconfig, port, bind), verify=client_tls, port=port, wait_ready=False
    )
    stop = profiler(server.proc.pid, f"lab-{name}-{first}")
    try:
        with lab.client() as c:
            rv = c.get(f"/api/v1/namespaces/{NAMESPACE}/pods", params={"limit": "1"}).json()["metadata"][
                "resourceVersion"
            ]
        watch = BoundWatch(lab, rv)
        create_pods(lab, first, PODS)
        cpu = cpu_seconds(server.proc.pid)
        api_before = api_latency(lab)
        started = time.perf_counter()
        lab.run("scheduler", str(scheduler_config(tmp, rendered, pki, port, bind)))
        last_progress, seen = time.perf_counter(), 0
        while len(watch.bound) < PODS and time.perf_counter() - last_progress < 30:
            time.sleep(0.2)
            if len(watch.bound) != seen:
                seen, last_progress = len(watch.bound), time.perf_counter()
        cpu = cpu_seconds(server.proc.pid) - cpu
        watch.stopped = True
        api = api_delta(api_before, api_latency(lab))
        with httpx.Client(verify=client_tls, timeout=10) as c:
            metrics = c.get(f"{server.url}/metrics").text
    finally:
        stop()
        lab.stop_scheduler()
        server.stop()
    times = sorted(watch.bound.values())
    log = lab.scheduler_log.read_text(errors="replace") if lab.scheduler_log.exists() else ""
    # cluster.sh writes the log afresh at each start: this run's alone
    errors = [line for line in log.splitlines() if re.match(r"E\d{4} ", line) and "manifest file is empty" not in line]
    return {
        "bound": len(times),
        "rate": (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0,
        # to the 90th percentile: a few pods retried with backoff (a GOAWAY) do not stretch it
        "rate90": (len(times) * 9 // 10 - 1) / (times[len(times) * 9 // 10 - 1] - times[0]) if len(times) > 10 else 0.0,
        "goaway": sum("GOAWAY" in line for line in errors),
        "first_after": times[0] - started if times else 0.0,
        "verbs": verb_means(metrics),
        "cpu": cpu,
        "api": api,
        "errors": errors,
        "service_log": server.log,
    }


def report(name: str, r: dict[str, Any]) -> None:
    print(
        f"{VARIANTS[name]}: {r['bound']} of {PODS} bound, {r['rate']:.1f} pods/s first to last bound "
        f"({r['rate90']:.1f} to the 90th percentile; first bound {r['first_after']:.1f} s after kube-scheduler's start)"
    )
    verbs = "  ".join(f"{v} {mean * 1000:.2f} ms ({n})" for v, (mean, n) in sorted(r["verbs"].items()))
    print(f"  the service's mean answer per verb: {verbs}")
    print(
        f"  the service's CPU per pod {r['cpu'] / max(r['bound'], 1) * 1000:.2f} ms; "
        f"kube-scheduler's error lines: {len(r['errors'])} "
        f"({r['goaway']} of them the service's HTTP/2 GOAWAY)"
    )
    for line in r["errors"][:3]:
        print("   ", line[:300])
    calls = sorted(r["api"].items(), key=lambda kv: -kv[1][1])
    print(
        "  kube-apiserver's requests: "
        + ", ".join(f"{k} {n} ({mean * 1000:.1f} ms)" for k, (mean, n) in calls if n >= 20)
    )
    full = r["service_log"].read_text(errors="replace")
    pool_full = full.count("Connection pool is full")
    if pool_full:
        print(f"  the service logged 'Connection pool is full' {pool_full} times")


def main() -> None:
    where = lab_dir()
    if where is None:
        raise SystemExit("no lab: set LAB_DIR or put cluster.sh in ../shared/lab")
    tmp = Path(tempfile.mkdtemp(prefix="bench-lab-"))
    lab = Lab(where, tmp)
    pki = tmp / "pki"
    issue(pki)
    rendered = tmp / "render"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "app",
            "render",
            "--config",
            str(REPO / "examples" / "cluster.yaml"),
            "--out",
            str(rendered),
        ],
        check=True,
        capture_output=True,
        cwd=REPO,
    )
    commit = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True, text=True
    ).stdout.strip()
    print(
        f"the service at {commit or '?'} ({REPO}), against the lab's kube-apiserver {lab.version} at {lab.server} "
        f"and kube-scheduler {lab.version} "
        f"({where}); {NODES} nodes, {PODS} pending pods per variant; the service as `render` deploys "
        "examples/cluster.yaml (cache mode, mutual TLS, HTTP/2)"
    )
    ensure_nodes(lab, NODES)
    variants = os.environ.get("BENCH_VARIANTS", ",".join(VARIANTS)).split(",")
    results: dict[str, list[float]] = {v: [] for v in variants}
    results90: dict[str, list[float]] = {v: [] for v in variants}
    first = 0
    for _ in range(ROUNDS):
        for name in variants:
            r = run_variant(lab, tmp, rendered, pki, name, first)
            report(name, r)
            results[name].append(r["rate"])
            results90[name].append(r["rate90"])
            first += PODS
    if "extender" in results and "self" in results:
        med = {v: sorted(rs)[len(rs) // 2] for v, rs in results.items()}
        med90 = {v: sorted(rs)[len(rs) // 2] for v, rs in results90.items()}
        print(
            f"the service binding / kube-scheduler binding: {med['extender'] / med['self']:.2f}x pods/s first to last "
            f"({med90['extender'] / med90['self']:.2f}x to the 90th percentile; medians of {ROUNDS} round(s))"
        )
    reset_pods(lab)


if __name__ == "__main__":
    main()

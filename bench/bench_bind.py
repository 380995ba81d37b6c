"""Binds per second and bind latency: 1,000 pending pods bound as fast as :data:`CLIENTS`
concurrent clients send them (kube-scheduler's binding goroutines), through the real server
(examples/cluster.yaml, DefaultBinder) and the test API server of ``tests/support`` (200 nodes, its
own process, loopback). The check-and-reserve is serialised under the cache's lock; the Binding
calls are sent from the event loop (``app/kube/aio.py``) over at most ``cluster.apiWorkers`` (16)
keep-alive connections. Twice: over plain HTTP (the tests' ``insecureBind``), then over mutual TLS
with kube-scheduler's client certificate as ``examples/cluster.yaml`` deploys (certificates of
``python -m app certs``), each with the server's own mean bind time and the service's CPU per bind
(the watch's confirmation of each bound pod included); then the official client binding the next
1,000 pods directly against the same API server on 16 threads, as a Python scheduler without this
service would. Run: ``make bench`` (or ``python bench/bench_bind.py``).
"""

from __future__ import annotations

import asyncio
import os
import ssl
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from app.deploy.certs import issue  # noqa: E402
from bench.bench_http import pct  # noqa: E402
from bench.official import official_binder  # noqa: E402
from tests.conftest import Server, cluster_config, mutual_tls  # noqa: E402
from tests.support.bodies import go_marshal  # noqa: E402

PODS = 1000


#: Concurrent bind requests in flight from the benchmark's client (kube-scheduler's binding
#: goroutines): one keep-alive connection each. A pure-Python client cannot open 1,000 connections
#: at once without becoming the bottleneck itself (httpx measured 39 binds/s here, the server
#: answering each in 1.7 s on average), so the 1,000 pods are bound through this many at a time.
CLIENTS = 64


def bind_all(port: int, bodies: list[bytes], tls: ssl.SSLContext | None = None) -> tuple[list[float], list[str], float]:
    """Every body POSTed to ``/bind`` over :data:`CLIENTS` keep-alive connections, one request in
    flight on each (kube-scheduler's binding goroutines); latencies, ``Error`` s, wall time.

    The client is a few lines of asyncio on one thread: kube-scheduler's Go client costs next to
    nothing per request, and 64 Python threads would take CPU from the service and the API server
    on a small machine."""
    return asyncio.run(_bind_all(port, bodies, tls))


async def _bind_all(port: int, bodies: list[bytes], tls: ssl.SSLContext | None) -> tuple[list[float], list[str], float]:
    todo = list(enumerate(bodies))
    latencies = [0.0] * len(bodies)
    errors = [""] * len(bodies)

    async def connection() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=tls)
        try:
            while todo:
                i, body = todo.pop()
                started = time.perf_counter()
                writer.write(
                    b"POST /bind HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
                answer = orjson.loads(await reader.readexactly(length))
                latencies[i] = time.perf_counter() - started
                errors[i] = str(answer["Error"])
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(CLIENTS)))
    return latencies, errors, time.perf_counter() - started


API_SERVER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from tests.support.apiserver import FakeAPIServer, node, pod
api = FakeAPIServer().start()
for i in range(200):
    api.put("nodes", node(f"node-{i:03d}", cpu="64", memory="256Gi", pods="110"))
for i in range(int(sys.argv[2])):
    api.put("pods", pod(f"p-{i}", "bench"))
open(sys.argv[3], "w").write(api.kubeconfig())
print("ready", flush=True)
while True:
    time.sleep(3600)
"""


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds process ``pid`` has used (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_side(metrics: str) -> float:
    """Mean seconds per bind as the server measured it (``scheduler_extender_request_duration_seconds``)."""
    values = {}
    for line in metrics.splitlines():
        for part in ("sum", "count"):
            if line.startswith(f"scheduler_extender_request_duration_seconds_{part}{{") and 'verb="bind"' in line:
                values[part] = float(line.rsplit(" ", 1)[1])
    return values.get("sum", 0.0) / max(values.get("count", 0.0), 1.0)


def confirmed(url: str, count: int, verify: ssl.SSLContext | None = None, timeout: float = 30.0) -> None:
    """Wait until the watch has confirmed ``count`` assumed pods, so the CPU figure includes the
    cache's share of each bind (the pod's MODIFIED event). Raises ``TimeoutError`` after
    ``timeout`` seconds: a figure without that share would be reported as if it had it."""
    deadline = time.monotonic() + timeout
    seen = 0.0
    while time.monotonic() < deadline:
        for line in httpx.get(f"{url}/metrics", verify=verify or True).text.splitlines():
            if line.startswith('scheduler_extender_assumed_pods_total{outcome="confirmed"}'):
                seen = float(line.rsplit(" ", 1)[1])
        if seen >= count:
            return
        time.sleep(0.05)
    raise TimeoutError(f"the watch confirmed {seen:.0f} of {count} bound pods within {timeout:g}s")


def direct(kubeconfig: Path, first: int) -> float:
    """Binds per second of the official client alone against the same API server: pods
    ``p-<first>`` onwards, on 16 threads, as a Python scheduler without this service would."""
    official = official_binder(kubeconfig)

    def bind(i: int) -> None:
        official("bench", f"p-{i}", f"uid-bench-p-{i}", f"node-{i % 200:03d}")

    started = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(bind, range(first, first + PODS)))
    return PODS / (time.perf_counter() - started)


def through_service(tmp: Path, kubeconfig: Path, first: int, pki: Path | None) -> None:
    """Bind pods ``p-<first>`` onwards through the real server (over mutual TLS with ``pki``) and
    print the figures."""
    client_tls = None
    if pki is not None:
        client_tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        client_tls.load_cert_chain(str(pki / "scheduler.crt"), str(pki / "scheduler.key"))
    config = cluster_config(tmp, kubeconfig.read_text(), edit=mutual_tls(pki) if pki is not None else None)
    server = Server(config, verify=client_tls)
    try:
        bodies = [
            go_marshal(
                {
                    "PodName": f"p-{i}",
                    "PodNamespace": "bench",
                    "PodUID": f"uid-bench-p-{i}",
                    "Node": f"node-{i % 200:03d}",
                }
            )
            for i in range(first, first + PODS)
        ]
        cpu_before = cpu_seconds(server.proc.pid)
        latencies, errors, wall = bind_all(server.port, bodies, client_tls)
        confirmed(server.url, PODS - sum(1 for e in errors if e), client_tls)
        cpu = cpu_seconds(server.proc.pid) - cpu_before
        served = server_side(httpx.get(f"{server.url}/metrics", verify=client_tls or True).text)
    finally:
        server.stop()
    failed = [e for e in errors if e]
    how = "mutual TLS (kube-scheduler's client certificate)" if pki is not None else "plain HTTP (insecureBind)"
    print(f"through the service, {how}: {PODS} binds, {CLIENTS} in flight at a time ({len(failed)} failed)")
    print(
        f"  binds/s {PODS / wall:8.1f}   latency p50 {pct(latencies, 0.5):8.1f} ms   "
        f"p99 {pct(latencies, 0.99):8.1f} ms   wall {wall:6.2f} s"
    )
    print(
        f"  server side (request_duration, body read to answer): mean {served * 1000:8.1f} ms; "
        f"the service's CPU per bind {cpu / PODS * 1000:5.2f} ms"
    )
    if failed:
        print("  first failure:", failed[0])


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-bind-"))
    kubeconfig = tmp / "api-kubeconfig"
    # the test API server in a process of its own: it must not share this client's interpreter lock
    proc = subprocess.Popen(
        [sys.executable, "-c", API_SERVER, str(REPO), str(3 * PODS), str(kubeconfig)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        pki = tmp / "pki"
        issue(pki)
        print("200 nodes, the test API server in its own process on loopback")
        through_service(tmp, kubeconfig, 0, None)
        through_service(tmp, kubeconfig, PODS, pki)
        print(
            f"the official client alone, 16 threads, the next {PODS} pods: {direct(kubeconfig, 2 * PODS):8.1f} binds/s"
        )
    finally:
        proc.kill()


if __name__ == "__main__":
    main()

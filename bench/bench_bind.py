"""Binds per second and bind latency: 1,000 pending pods bound as fast as :data:`CLIENTS`
concurrent clients send them (kube-scheduler's binding goroutines), through the real server
(examples/cluster.yaml, DefaultBinder) and the test API server of ``tests/support`` (200 nodes, its
own process, loopback). The check-and-reserve is serialised under the cache's lock; the Binding
calls run concurrently on ``cluster.apiWorkers`` threads (16) with a connection pool of that size.
Also prints the server's own mean bind time and the official client's rate against the same API
server with no extender in between (the ceiling). Run: ``make bench`` (or
``python bench/bench_bind.py``).
"""

from __future__ import annotations

import http.client
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_http import pct  # noqa: E402
from tests.conftest import Server, cluster_config  # noqa: E402
from tests.support.bodies import go_marshal  # noqa: E402

PODS = 1000


#: Concurrent bind requests in flight from the benchmark's client (kube-scheduler's binding
#: goroutines): one keep-alive connection each. A pure-Python client cannot open 1,000 connections
#: at once without becoming the bottleneck itself (httpx measured 39 binds/s here, the server
#: answering each in 1.7 s on average), so the 1,000 pods are bound through this many at a time.
CLIENTS = 64


def bind_all(port: int, bodies: list[bytes]) -> tuple[list[float], list[str], float]:
    """Every body POSTed to ``/bind`` by :data:`CLIENTS` threads; latencies, ``Error`` s, wall time."""
    local = threading.local()

    def one(body: bytes) -> tuple[float, str]:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        started = time.perf_counter()
        conn.request("POST", "/bind", body=body, headers={"Content-Type": "application/json"})
        answer = orjson.loads(conn.getresponse().read())
        return time.perf_counter() - started, str(answer["Error"])

    started = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as pool:
        results = list(pool.map(one, bodies))
    return [t for t, _ in results], [e for _, e in results], time.perf_counter() - started


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


def server_side(metrics: str) -> float:
    """Mean seconds per bind as the server measured it (``scheduler_extender_request_duration_seconds``)."""
    values = {}
    for line in metrics.splitlines():
        for part in ("sum", "count"):
            if line.startswith(f"scheduler_extender_request_duration_seconds_{part}{{") and 'verb="bind"' in line:
                values[part] = float(line.rsplit(" ", 1)[1])
    return values.get("sum", 0.0) / max(values.get("count", 0.0), 1.0)


def direct(kubeconfig: Path) -> float:
    """Binds per second of the official client alone against the same API server (the ceiling):
    pods ``p-1000`` onwards, on 16 threads, as the extender's binder calls it."""
    from app.kube.client import KubeClient, load_client

    client = KubeClient(load_client(str(kubeconfig), None, 16).api_client)

    def bind(i: int) -> None:
        client.create_binding("bench", f"p-{i}", f"uid-bench-p-{i}", f"node-{i % 200:03d}", 30)

    started = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(bind, range(PODS, 2 * PODS)))
    return PODS / (time.perf_counter() - started)


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-bind-"))
    kubeconfig = tmp / "api-kubeconfig"
    # the test API server in a process of its own: it must not share this client's interpreter lock
    proc = subprocess.Popen(
        [sys.executable, "-c", API_SERVER, str(REPO), str(2 * PODS), str(kubeconfig)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        server = Server(cluster_config(tmp, kubeconfig.read_text()))
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
                for i in range(PODS)
            ]
            latencies, errors, wall = bind_all(server.port, bodies)
            served = server_side(httpx.get(f"{server.url}/metrics").text)
        finally:
            server.stop()
        failed = [e for e in errors if e]
        print(
            f"{PODS} binds, {CLIENTS} in flight at a time, 200 nodes, test API server in its own process "
            f"on loopback ({len(failed)} failed)"
        )
        print(
            f"binds/s {PODS / wall:8.1f}   latency p50 {pct(latencies, 0.5):8.1f} ms   "
            f"p99 {pct(latencies, 0.99):8.1f} ms   wall {wall:6.2f} s"
        )
        print(f"server side (request_duration, body read to answer): mean {served * 1000:8.1f} ms")
        print(f"the official client alone, 16 threads, the next {PODS} pods: {direct(kubeconfig):8.1f} binds/s")
        if failed:
            print("first failure:", failed[0])
    finally:
        proc.kill()


if __name__ == "__main__":
    main()

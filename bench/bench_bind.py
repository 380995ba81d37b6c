"""Binds per second and bind latency: 1,000 pending pods bound at once, as kube-scheduler's binding
goroutines send them, through the real server (examples/cluster.yaml, DefaultBinder) and the test
API server of ``tests/support`` (200 nodes, loopback). The check-and-reserve is serialised under
the cache's lock; the Binding calls run concurrently on ``cluster.apiWorkers`` threads (16) with a
connection pool of that size. Run: ``make bench`` (or ``python bench/bench_bind.py``).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_http import pct  # noqa: E402
from tests.conftest import Server, cluster_config  # noqa: E402
from tests.support.bodies import go_marshal  # noqa: E402

PODS = 1000


async def bind_all(url: str, bodies: list[bytes]) -> tuple[list[float], list[str], float]:
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=len(bodies))) as client:

        async def one(body: bytes) -> tuple[float, str]:
            started = time.perf_counter()
            r = await client.post(f"{url}/bind", content=body)
            return time.perf_counter() - started, str(r.json()["Error"])

        started = time.perf_counter()
        results = await asyncio.gather(*(one(b) for b in bodies))
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


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-bind-"))
    kubeconfig = tmp / "api-kubeconfig"
    # the test API server in a process of its own: it must not share this client's interpreter lock
    proc = subprocess.Popen(
        [sys.executable, "-c", API_SERVER, str(REPO), str(PODS), str(kubeconfig)], stdout=subprocess.PIPE, text=True
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
            latencies, errors, wall = asyncio.run(bind_all(server.url, bodies))
        finally:
            server.stop()
        failed = [e for e in errors if e]
        print(f"{PODS} binds at once, 200 nodes, test API server in its own process on loopback ({len(failed)} failed)")
        print(
            f"binds/s {PODS / wall:8.1f}   latency p50 {pct(latencies, 0.5):8.1f} ms   "
            f"p99 {pct(latencies, 0.99):8.1f} ms   wall {wall:6.2f} s"
        )
        if failed:
            print("first failure:", failed[0])
    finally:
        proc.kill()


if __name__ == "__main__":
    main()

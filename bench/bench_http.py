"""Latency and throughput of the verbs through the real server, against the transport floor.

Prints, for filter and prioritize at 100 and 500 full nodes (nodeCacheCapable: false) and for
cache-mode bodies of 500 and 5000 names: p50, p99 and requests/s with one keep-alive Python
client on loopback (sequential requests, as kube-scheduler's filter calls are per pod); the same
for a no-op server that reads the body and answers a canned body of the filter answer's size;
and a bare ``orjson.loads`` of each body. Run: ``make bench``.
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.bodies import fixture_bytes, nocache_body  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(cmd: list[str], port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"could not start {cmd}")


def measure(port: int, path: str, body: bytes, n: int) -> tuple[list[float], int, int]:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
    times: list[float] = []
    size = status = 0
    for i in range(n + 3):
        started = time.perf_counter()
        conn.request("POST", path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        elapsed = time.perf_counter() - started
        status, size = resp.status, len(data)
        if i >= 3:  # warm-up
            times.append(elapsed)
    conn.close()
    return times, status, size


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


def row(label: str, times: list[float], extra: str = "") -> None:
    total = sum(times)
    rate = len(times) / total
    print(f"{label:<44} p50 {pct(times, 0.5):8.2f} ms  p99 {pct(times, 0.99):8.2f} ms  {rate:8.1f} req/s  {extra}")


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def main() -> None:
    n = int(os.environ.get("BENCH_N", "200"))
    bodies = {
        "100 nodes (Nodes)": nocache_body(100),
        "500 nodes (Nodes)": nocache_body(500),
        "500 names (NodeNames)": fixture_bytes("extenderargs_cache_n500.json"),
        "5000 names (NodeNames)": fixture_bytes("extenderargs_cache_n5000.json"),
    }
    port = free_port()
    server = start([sys.executable, "-m", "app", "serve", "--port", str(port)], port)
    chaos_port = free_port()
    chaos = start(
        [
            sys.executable,
            "-m",
            "app",
            "serve",
            "--config",
            str(REPO / "examples" / "chaos.yaml"),
            "--port",
            str(chaos_port),
        ],
        chaos_port,
    )
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpu(s), {n} sequential requests per row after 3 warm-up")
    print("service: embedded default profile (Nodes bodies), examples/chaos.yaml (NodeNames bodies)\n")
    try:
        filter_sizes = {}
        for label, body in bodies.items():
            target = port if "Nodes)" in label else chaos_port
            count = n if len(body) < 2_000_000 else max(n // 2, 20)
            for verb in ("filter", "prioritize"):
                times, status, size = measure(target, f"/{verb}" if target == port else f"/chaos/{verb}", body, count)
                assert status == 200, (label, verb, status)
                if verb == "filter":
                    filter_sizes[label] = size
                row(f"{verb:<10} {label}", times, f"({len(body) / 1e6:.2f} MB in, {size / 1e6:.2f} MB out)")
        print()
        for label, body in bodies.items():
            if "Nodes)" not in label:
                continue
            noop_port = free_port()
            noop = start(
                [sys.executable, str(REPO / "bench" / "noop_server.py"), str(noop_port), str(filter_sizes[label])],
                noop_port,
            )
            try:
                times, _, size = measure(noop_port, "/noop", body, n)
                row(f"no-op      {label}", times, f"(transport floor, {size / 1e6:.2f} MB out)")
            finally:
                noop.terminate()
        print()
        for label, body in bodies.items():
            row(f"orjson.loads {label}", timed(lambda b=body: orjson.loads(b), min(n, 100)))  # type: ignore[misc]
    finally:
        server.terminate()
        chaos.terminate()


if __name__ == "__main__":
    main()

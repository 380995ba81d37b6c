"""Peak memory of one large request, and /healthz while it is being answered.

For each body, a fresh ``python -m app serve`` process: its idle resident memory (VmRSS) is read
once it answers, one request is sent, and its peak resident memory (VmHWM) is read afterwards.
Meanwhile a second connection polls ``/healthz`` and the slowest answer is printed: verb work runs
off the event loop, so it should stay in milliseconds. The bound to meet (issue 11): peak minus
idle at most 4 times the body. Run: ``make bench`` (or ``python bench/bench_memory.py``).

Bodies: the 73 MB full-node filter body (5000 nodes, the 100-node fixture's nodes renamed), and two
64 MiB NodeNames bodies: 100,000 names of about 670 bytes (admitted), and 6.1 million names of 8 bytes
(refused by ``server.limits.maxNodes`` before they are built).
"""

from __future__ import annotations

import http.client
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_http import free_port, start  # noqa: E402
from tests.support.bodies import nocache_body  # noqa: E402

MIB = 1024 * 1024


def status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def names_body(count: int, size: int) -> bytes:
    """A NodeNames body of ``count`` names of ``size`` characters (at least 8)."""
    head = b'{"Pod":{"metadata":{"name":"p","namespace":"n","uid":"u"}},"Nodes":null,"NodeNames":['
    names = [b'"n' + str(i).zfill(size - 1).encode() + b'"' for i in range(count)]
    return head + b",".join(names) + b"]}"


def poll_healthz(port: int, stop: threading.Event, worst: list[float]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while not stop.is_set():
        started = time.perf_counter()
        conn.request("GET", "/healthz")
        conn.getresponse().read()
        worst[0] = max(worst[0], time.perf_counter() - started)
        time.sleep(0.01)
    conn.close()


def one(label: str, config: str | None, path: str, body: bytes) -> None:
    port = free_port()
    cmd = [sys.executable, "-m", "app", "serve", "--port", str(port)]
    if config:
        cmd += ["--config", str(REPO / config)]
    proc = start(cmd, port)
    try:
        time.sleep(1.0)
        idle = status_kb(proc.pid, "VmRSS") * 1024
        stop, worst = threading.Event(), [0.0]
        poller = threading.Thread(target=poll_healthz, args=(port, stop, worst))
        poller.start()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        started = time.perf_counter()
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        out = resp.read()
        elapsed = time.perf_counter() - started
        stop.set()
        poller.join()
        peak = status_kb(proc.pid, "VmHWM") * 1024
        grew = peak - idle
        print(
            f"{label:<46} HTTP {resp.status} in {elapsed:6.2f} s  body {len(body) / MIB:6.1f} MiB  "
            f"idle {idle / MIB:6.1f} MiB  peak {peak / MIB:7.1f} MiB  (+{grew / len(body):.2f}x body)  "
            f"answer {len(out) / MIB:6.1f} MiB  slowest /healthz {worst[0] * 1000:6.1f} ms"
        )
    finally:
        proc.terminate()
        proc.wait()


def main() -> None:
    print("peak resident memory of one request (fresh server each), bound: idle + 4 x body\n")
    one("filter, 5000 full nodes (default profile)", None, "/filter", nocache_body(5000))
    one("prioritize, 5000 full nodes (default profile)", None, "/prioritize", nocache_body(5000))
    one("filter, 100k names of 670 B (chaos.yaml)", "examples/chaos.yaml", "/chaos/filter", names_body(100_000, 670))
    one("filter, 6.1M names of 8 B (chaos.yaml)", "examples/chaos.yaml", "/chaos/filter", names_body(6_100_000, 8))


if __name__ == "__main__":
    main()

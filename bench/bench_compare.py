"""Before/after on a noisy machine: this checkout's server and another checkout's, interleaved.

``python bench/bench_compare.py OTHER_CHECKOUT [ROUNDS]`` starts ``python -m app serve`` (the
embedded default) from this checkout and from ``OTHER_CHECKOUT`` (e.g. ``git worktree add
/tmp/before <commit>``), both with this checkout's virtualenv, then measures filter and prioritize
at 100, 300 and 500 full nodes on each in turn, ROUNDS times (5), 60 sequential requests per body and
round, and prints p50/p99 over all rounds. Interleaving spreads the machine's drift over both.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_http import free_port, measure, pct  # noqa: E402
from tests.support.bodies import nocache_body  # noqa: E402


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("usage: python bench/bench_compare.py OTHER_CHECKOUT [ROUNDS]")
    other = Path(sys.argv[1]).resolve()
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    servers: dict[str, tuple[int, subprocess.Popen[bytes]]] = {}
    for label, cwd in (("this", REPO), ("other", other)):
        port = free_port()
        cmd = [sys.executable, "-m", "app", "serve", "--port", str(port)]
        servers[label] = (port, subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        time.sleep(5)
        bodies = {n: nocache_body(n) for n in (100, 300, 500)}
        results: dict[tuple[str, int, str], list[float]] = {}
        for _ in range(rounds):
            for label, (port, _) in servers.items():
                for n, body in bodies.items():
                    for verb in ("filter", "prioritize"):
                        times, status, _ = measure(port, f"/{verb}", body, 60)
                        assert status == 200, (label, verb, status)
                        results.setdefault((verb, n, label), []).extend(times)
        print(f"this checkout vs {other}, {rounds} interleaved rounds of 60 requests per body")
        for (verb, n, label), times in sorted(results.items()):
            p50, p99 = pct(times, 0.5), pct(times, 0.99)
            print(f"{verb:<10} {n:>3} full nodes  {label:<5}  p50 {p50:7.2f} ms  p99 {p99:7.2f} ms")
    finally:
        for _, proc in servers.values():
            proc.terminate()


if __name__ == "__main__":
    main()

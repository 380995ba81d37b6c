"""What decision records cost: filter and prioritize at 500 nodes with ``/explain``'s records kept
(the default) and with ``diagnostics.decisions.enabled: false``, two real servers measured in
interleaved rounds (the machine's drift falls on both). Full nodes (``nodeCacheCapable: false``,
the embedded default profile) and 500 NodeNames (the chaos profile of examples/two-profiles.yaml).
Run: ``make bench`` (or ``python bench/bench_decisions.py [ROUNDS]``)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_http import free_port, measure, pct  # noqa: E402
from tests.support.bodies import fixture_bytes, nocache_body  # noqa: E402


def config(tmp: Path, records: bool) -> Path:
    doc = yaml.safe_load((REPO / "examples" / "two-profiles.yaml").read_text())
    doc["server"]["maxRequestBytes"] = 64 * 1024 * 1024
    doc["diagnostics"] = {"decisions": {"enabled": records}}
    path = tmp / f"records-{'on' if records else 'off'}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    bodies = {
        "500 full nodes": ("/space", nocache_body(500)),
        "500 names": ("/chaos", fixture_bytes("extenderargs_cache_n500.json")),
    }
    with tempfile.TemporaryDirectory() as tmp:
        servers = {}
        for records in (True, False):
            port = free_port()
            cmd = [
                sys.executable,
                "-m",
                "app",
                "serve",
                "--port",
                str(port),
                "--config",
                str(config(Path(tmp), records)),
            ]
            proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            servers["on" if records else "off"] = (port, proc)
        try:
            time.sleep(5)
            results: dict[tuple[str, str, str], list[float]] = {}
            for _ in range(rounds):
                for label, (port, _) in servers.items():
                    for what, (prefix, body) in bodies.items():
                        for verb in ("filter", "prioritize"):
                            times, status, _ = measure(port, f"{prefix}/{verb}", body, 60)
                            assert status == 200, (label, verb, status)
                            results.setdefault((what, verb, label), []).extend(times)
            print(f"decision records on (default) vs off, {rounds} interleaved rounds of 60 requests")
            for what in bodies:
                for verb in ("filter", "prioritize"):
                    on, off = pct(results[(what, verb, "on")], 0.5), pct(results[(what, verb, "off")], 0.5)
                    cost = 100 * (on - off) / off
                    print(f"{verb:<10} {what:<15} p50 records on {on:6.2f} ms  off {off:6.2f} ms  cost {cost:+5.1f} %")
        finally:
            for _, proc in servers.values():
                proc.terminate()


if __name__ == "__main__":
    main()

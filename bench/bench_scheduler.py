"""The standalone scheduler's pace: ``python -m app schedule`` (every kube-scheduler default plugin
enabled, leader election on a Lease nobody holds) against the test API server of ``tests/support``
in its own process, with a backlog of pods created before the scheduler starts.

Scenarios (``BENCH_SCENARIOS``, default all): ``plain`` (200 nodes, 1,500 pods requesting cpu and
memory), ``mix`` (200 nodes, 1,500 pods: 20 % with required anti-affinity on the hostname within
groups of 5, 20 % with a zone topology spread constraint, 20 % with required node affinity, the
rest plain), ``plain-5000`` (5,000 nodes, 1,500 plain pods). For each: pods bound per second from
the first Binding to the last, the first Binding's delay after the scheduler process started,
p50/p99 of a scheduling attempt (the scheduler's own histogram, bucket upper bounds), and the API
server's own ceiling (the official client binding as many other pods directly, 16 threads).
``claims`` (200 nodes in 3 zones, 200 pods of one StatefulSet-like set, first without claims, then
each with its own WaitForFirstConsumer claim that the test provisioner binds at once): pods bound per
second of both and their ratio.

``preemption`` is scheduler_perf's PreemptionBasic (test/integration/scheduler_perf/config/
performance-config.yaml, its ``pod-low-priority.yaml`` and ``pod-high-priority.yaml``) scaled to
100 nodes (4 cpu, 32 GiB, 110 pods each, as ``node-default.yaml``): 300 low-priority pods (900m
cpu, 500 MiB, ``terminationGracePeriodSeconds: 0``) are bound first, then 100 pods of priority 10
requesting 3 cpu are created at once; each must preempt two low-priority pods. It reports the
preemptors bound per second (from their creation to the last Binding), their created-to-bound
p50/p99, how many nominations they got (``status.nominatedNodeName`` written; kube-scheduler: one
each) and the unschedulable attempts (``scheduler_schedule_attempts_total``).
``BENCH_PREEMPTION=NODES,LOW,HIGH`` scales it. Run: ``make bench`` (or
``python bench/bench_scheduler.py``; ``BENCH_SCENARIOS=preemption`` for one).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.official import official_binder  # noqa: E402
from tests.conftest import free_port  # noqa: E402

PODS = 1500

# The tail both API-server scripts share: the time of each successful bind of a ``bench`` pod is
# recorded, the kubeconfig written, ``ready`` printed, then it waits for ``pods`` binds.
TIMED_BINDS = """
times = []
bind = api.bind
def timed(namespace, name, body):
    answer = bind(namespace, name, body)
    if namespace == "bench" and answer[0] == 201:
        times.append(time.time())
    return answer
api.bind = timed
open(kubeconfig, "w").write(api.kubeconfig())
print("ready", flush=True)
while len(times) < pods:
    time.sleep(0.05)
"""

API_SERVER = (
    """
import sys, time, threading
sys.path.insert(0, sys.argv[1])
from tests.support.apiserver import FakeAPIServer, node, pod
nodes, pods, scenario, kubeconfig = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
api = FakeAPIServer().start()
for i in range(nodes):
    doc = node(f"node-{i:04d}", cpu="64", memory="256Gi", pods="110")
    doc["metadata"]["labels"] = {
        "kubernetes.io/hostname": f"node-{i:04d}",
        "topology.kubernetes.io/zone": f"zone-{i % 3}",
        "pool": "a" if i % 2 else "b",
    }
    api.put("nodes", doc)
for i in range(pods):
    doc = pod(f"p-{i}", "bench", cpu="100m", memory="128Mi")
    doc["spec"]["schedulerName"] = "bench-scheduler"
    labels = {"app": f"g{i // 5}"}
    kind = i % 5 if scenario == "mix" else 4
    if kind == 0:
        term = {"labelSelector": {"matchLabels": {"app": f"g{i // 5}"}}, "topologyKey": "kubernetes.io/hostname"}
        doc["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    elif kind == 1:
        labels = {"spread": "yes"}
        doc["spec"]["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"spread": "yes"}},
        }]
    elif kind == 2:
        req = {"key": "pool", "operator": "In", "values": ["a"]}
        doc["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [req]}]}}}
    doc["metadata"]["labels"] = labels
    api.put("pods", doc)
for i in range(pods):  # for the ceiling: bound directly, never seen by the scheduler
    api.put("pods", pod(f"d-{i}", "direct", cpu="100m", memory="128Mi"))
"""
    + TIMED_BINDS
    + """print(f"{times[0]} {times[-1]}", flush=True)
sys.stdin.readline()
"""
)


PREEMPTION_SERVER = """
import sys, time, threading, json
sys.path.insert(0, sys.argv[1])
from tests.support.apiserver import FakeAPIServer
from tests.support.scheduler_perf import default_node, priority_pod
nodes, low, high, kubeconfig = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
api = FakeAPIServer().start()
for i in range(nodes):
    api.put("nodes", default_node(f"node-{i:04d}"))
def workload(name, priority, cpu):
    return priority_pod(name, priority, cpu, "bench-scheduler", "bench")
for i in range(low):
    api.put("pods", workload(f"low-{i}", 0, "900m"))
created, bound_at, bound_to = {}, {}, {}
bind = api.bind
def timed(namespace, name, body):
    answer = bind(namespace, name, body)
    if answer[0] == 201:
        bound_at[name] = time.time()
        bound_to[name] = (body.get("target") or {}).get("name", "")
    return answer
api.bind = timed
open(kubeconfig, "w").write(api.kubeconfig())
print("ready", flush=True)
while sum(1 for n in bound_at if n.startswith("low-")) < low:
    time.sleep(0.02)
lows_done = time.time()
for i in range(high):
    name = f"high-{i}"
    created[name] = time.time()
    api.put("pods", workload(name, 10, "3000m"))
deadline = time.time() + 600
while sum(1 for n in bound_at if n.startswith("high-")) < high and time.time() < deadline:
    time.sleep(0.02)
nominations = {}
for key, patch in list(api.status_patches):
    name = key.split("/", 1)[1]
    nnn = (patch.get("status") or {}).get("nominatedNodeName")
    if name.startswith("high-") and nnn:
        nominations.setdefault(name, []).append(nnn)
print(json.dumps({"lows_done": lows_done, "created": created, "bound_at": bound_at, "bound_to": bound_to,
                  "nominations": nominations, "deletions": len(api.deletions)}), flush=True)
sys.stdin.readline()
"""


def direct(kubeconfig: Path, nodes: int) -> float:
    """Binds per second of the official client alone against the same API server (the ceiling)."""
    bind = official_binder(kubeconfig)

    def one(i: int) -> None:
        bind("direct", f"d-{i}", f"uid-direct-d-{i}", f"node-{i % nodes:04d}")

    started = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(PODS)))
    return PODS / (time.perf_counter() - started)


def attempt_quantiles(metrics: str) -> tuple[float, float]:
    """p50 and p99 of ``scheduler_scheduling_attempt_duration_seconds{result="scheduled"}``, as the
    upper bounds of the histogram buckets they fall in (seconds)."""
    buckets: list[tuple[float, float]] = []
    for line in metrics.splitlines():
        if line.startswith("scheduler_scheduling_attempt_duration_seconds_bucket{") and 'result="scheduled"' in line:
            le = line.split('le="', 1)[1].split('"', 1)[0]
            buckets.append((float("inf") if le == "+Inf" else float(le), float(line.rsplit(" ", 1)[1])))
    buckets.sort()
    total = buckets[-1][1] if buckets else 0.0

    def q(p: float) -> float:
        return next((le for le, count in buckets if count >= p * total), float("nan"))

    return q(0.5), q(0.99)


def start_api(script: str, *args: object) -> tuple[subprocess.Popen[str], Path]:
    """The test API server of ``script`` in its own process, once it printed ``ready``, and the
    kubeconfig it wrote (its last argument)."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-scheduler-"))
    kubeconfig = tmp / "kubeconfig"
    command = [sys.executable, "-c", script, str(REPO), *map(str, args), str(kubeconfig)]
    api = subprocess.Popen(command, stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    assert api.stdout is not None and api.stdout.readline().strip() == "ready"
    return api, kubeconfig


def start_scheduler(kubeconfig: Path) -> tuple[subprocess.Popen[bytes], int]:
    """``python -m app schedule`` with one profile of kube-scheduler's defaults for
    ``bench-scheduler`` against the API server of ``kubeconfig``, and its port."""
    config = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "server": {"host": "127.0.0.1", "logLevel": "warning"},
        "cluster": {"kubeconfig": str(kubeconfig)},
        "diagnostics": {"decisions": {"enabled": False}},
        "profiles": [{"name": "bench", "schedulerName": "bench-scheduler"}],
    }
    path = kubeconfig.parent / "schedule.yaml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "app", "schedule", "--config", str(path), "--port", str(port)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=(kubeconfig.parent / "schedule.log").open("wb"),
    )
    return scheduler, port


def run(scenario: str, nodes: int) -> None:
    api, kubeconfig = start_api(API_SERVER, nodes, PODS, scenario)
    assert api.stdout is not None
    try:
        started = time.time()
        scheduler, port = start_scheduler(kubeconfig)
        try:
            first, last = (float(t) for t in api.stdout.readline().split())
            metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
        finally:
            scheduler.terminate()
            scheduler.wait(timeout=30)
        p50, p99 = attempt_quantiles(metrics)
        ceiling = direct(kubeconfig, nodes)
        rate = (PODS - 1) / max(last - first, 1e-9)
        print(
            f"{scenario:<11} {nodes:>5} nodes {PODS} pods   bound {rate:7.1f} pods/s ({rate / ceiling:5.0%} of the "
            f"ceiling {ceiling:6.1f})   first bind {first - started:5.2f} s after start   attempt p50 <= "
            f"{p50 * 1000:6.1f} ms  p99 <= {p99 * 1000:6.1f} ms"
        )
        api.stdin.write("\n")  # type: ignore[union-attr]
        api.stdin.flush()  # type: ignore[union-attr]
    finally:
        api.kill()


def attempts(metrics: str, result: str) -> int:
    """``scheduler_schedule_attempts_total{result=...}`` summed over the profiles."""
    total = 0.0
    for line in metrics.splitlines():
        if line.startswith("scheduler_schedule_attempts_total{") and f'result="{result}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def quantile(values: list[float], p: float) -> float:
    """The ``p`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(p * len(ordered) + 0.5) - 1))] if ordered else float("nan")


def run_preemption() -> None:
    """The ``preemption`` scenario (see the module doc)."""
    import json

    nodes, low, high = (int(x) for x in os.environ.get("BENCH_PREEMPTION", "100,300,100").split(","))
    api, kubeconfig = start_api(PREEMPTION_SERVER, nodes, low, high)
    assert api.stdout is not None
    try:
        scheduler, port = start_scheduler(kubeconfig)
        try:
            result = json.loads(api.stdout.readline())
            metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
        finally:
            scheduler.terminate()
            scheduler.wait(timeout=30)
        created, bound_at = result["created"], result["bound_at"]
        preemptors = [name for name in created if name in bound_at]
        first = min(created.values())
        last = max((bound_at[n] for n in preemptors), default=first)
        rate = len(preemptors) / max(last - first, 1e-9)
        latencies = [bound_at[n] - created[n] for n in preemptors]
        counts = [len(result["nominations"].get(n, [])) for n in created]
        print(
            f"preemption  {nodes:>5} nodes {low}+{high} pods   preemptors bound {len(preemptors)}/{high} at "
            f"{rate:6.1f} pods/s   created-to-bound p50 {quantile(latencies, 0.5) * 1000:7.0f} ms  p99 "
            f"{quantile(latencies, 0.99) * 1000:7.0f} ms   nominations {sum(counts)} (max {max(counts, default=0)} "
            f"per pod)   victims deleted {result['deletions']}   unschedulable attempts "
            f"{attempts(metrics, 'unschedulable')}"
        )
        api.stdin.write("\n")  # type: ignore[union-attr]
        api.stdin.flush()  # type: ignore[union-attr]
    finally:
        api.kill()


SCENARIOS = {
    "plain": ("plain", 200),
    "mix": ("mix", 200),
    "plain-5000": ("plain", 5000),
    "preemption": ("preemption", 100),
}


def main() -> None:
    chosen = os.environ.get("BENCH_SCENARIOS", ",".join([*SCENARIOS, *CLAIM_SCENARIOS])).split(",")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpu(s); every default plugin enabled")
    for name in chosen:
        if name in CLAIM_SCENARIOS:
            run_claims(name)
            continue
        scenario, nodes = SCENARIOS[name]
        if scenario == "preemption":
            run_preemption()
        else:
            run(scenario, nodes)


# --- Claims: a StatefulSet-like set of pods with WaitForFirstConsumer PersistentVolumeClaims ----------

CLAIM_PODS = 200

API_SERVER_CLAIMS = (
    """
import sys, time
sys.path.insert(0, sys.argv[1])
from tests.support.apiserver import FakeAPIServer, claim, claim_volume, node, pod, storage_class
from tests.support.provisioner import Provisioner
nodes, pods, with_claims, kubeconfig = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5]
api = FakeAPIServer().start()
for i in range(nodes):
    doc = node(f"node-{i:04d}", cpu="64", memory="256Gi", pods="110")
    doc["metadata"]["labels"] = {
        "kubernetes.io/hostname": f"node-{i:04d}",
        "topology.kubernetes.io/zone": f"zone-{i % 3}",
    }
    api.put("nodes", doc)
api.put("storageclasses", storage_class("standard"))
for i in range(pods):
    doc = pod(f"web-{i}", "bench", cpu="100m", memory="128Mi")
    doc["spec"]["schedulerName"] = "bench-scheduler"
    doc["metadata"]["labels"] = {"app": "web"}
    if with_claims:
        api.put("persistentvolumeclaims", claim(f"data-web-{i}", "bench"))
        doc["spec"]["volumes"] = [claim_volume("data", f"data-web-{i}")]
    api.put("pods", doc)
provisioner = Provisioner(api).start()
"""
    + TIMED_BINDS
    + """print(f"{times[0]} {times[-1]} {len(provisioner.provisioned)}", flush=True)
sys.stdin.readline()
"""
)


def bind_rate(with_claims: bool, nodes: int) -> tuple[float, float, int]:
    """One ``schedule`` run over ``CLAIM_PODS`` pods of one StatefulSet-like set on ``nodes`` nodes,
    each with its own ``WaitForFirstConsumer`` claim when ``with_claims`` (the test provisioner of
    ``tests/support/provisioner.py`` creating and binding a volume as soon as VolumeBinding's PreBind
    writes ``volume.kubernetes.io/selected-node``). Returns (pods bound per second from the first
    Binding to the last, the first Binding's delay after the scheduler process started in seconds,
    claims provisioned)."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-claims-"))
    kubeconfig = tmp / "kubeconfig"
    api = subprocess.Popen(
        [
            sys.executable,
            "-c",
            API_SERVER_CLAIMS,
            str(REPO),
            str(nodes),
            str(CLAIM_PODS),
            str(int(with_claims)),
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stdin=subprocess.PIPE,
        text=True,
    )
    try:
        assert api.stdout is not None and api.stdout.readline().strip() == "ready"
        config = {
            "apiVersion": "config.scheduler-extender.dev/v1alpha1",
            "kind": "ExtenderConfiguration",
            "server": {"host": "127.0.0.1", "logLevel": "warning"},
            "cluster": {"kubeconfig": str(kubeconfig)},
            "diagnostics": {"decisions": {"enabled": False}},
            "profiles": [{"name": "bench", "schedulerName": "bench-scheduler"}],
        }
        path = tmp / "schedule.yaml"
        path.write_text(yaml.safe_dump(config))
        started = time.time()
        scheduler = subprocess.Popen(
            [sys.executable, "-m", "app", "schedule", "--config", str(path), "--port", str(free_port())],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=(tmp / "schedule.log").open("wb"),
        )
        try:
            first, last, provisioned = api.stdout.readline().split()
        finally:
            scheduler.terminate()
            scheduler.wait(timeout=30)
        api.stdin.write("\n")  # type: ignore[union-attr]
        api.stdin.flush()  # type: ignore[union-attr]
    finally:
        api.kill()
    return (CLAIM_PODS - 1) / max(float(last) - float(first), 1e-9), float(first) - started, int(provisioned)


def run_claims(name: str) -> None:
    """The ``claims`` scenario: the same set of pods without claims, then with a claim each."""
    nodes = CLAIM_SCENARIOS[name]
    plain, plain_first, _ = bind_rate(False, nodes)
    claims, claims_first, provisioned = bind_rate(True, nodes)
    print(
        f"{name:<11} {nodes:>5} nodes {CLAIM_PODS} pods   without claims {plain:7.1f} pods/s (first bind "
        f"{plain_first:5.2f} s)   with a WaitForFirstConsumer claim each {claims:7.1f} pods/s (first bind "
        f"{claims_first:5.2f} s, {provisioned} claims provisioned)   ratio {claims / plain:5.0%}"
    )


CLAIM_SCENARIOS = {"claims": 200}


if __name__ == "__main__":
    main()

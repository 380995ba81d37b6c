"""kube-scheduler's own benchmark shape (test/integration/scheduler_perf, v1.36.3) on the real
control plane of ``../shared/lab``, kube-scheduler v1.36.3 and the standalone scheduler side by
side in one run: the same nodes, then for each scheduler in turn, in a namespace of its own,
``BENCH_INIT`` pods bound first, then ``BENCH_MEASURED`` pods created while it runs by 8 threads
(scheduler_perf's ``createPods``), each pod's created-to-bound time read from a watch.

Workload ``BENCH_WORKLOAD``: ``basic`` (SchedulingBasic: misc/performance-config.yaml,
``node-default.yaml`` nodes of 4 cpu, 32Gi and 110 pods, ``pod-default.yaml`` pods of 100m and
500Mi) or ``spread`` (TopologySpreading: nodes in 3 zones, each pod with a zone
``DoNotSchedule`` constraint of maxSkew 5 on its own label). Sizes: ``BENCH_NODES`` (100),
``BENCH_INIT`` (the node count), ``BENCH_MEASURED`` (1,000).

Printed per scheduler: measured pods per second (first creation to last bind), created-to-bound
p50 and p99, and, for the project, its process's CPU seconds per measured pod; then the ratios
(project / kube-scheduler). Run: ``python bench/bench_perf_lab.py`` (``LAB_DIR``: where
``cluster.sh`` is; default ``../shared/lab``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.conftest import free_port  # noqa: E402
from tests.realcluster.support import Cluster, Lab, _admin_client, wait_for  # noqa: E402

NODES = int(os.environ.get("BENCH_NODES", "100"))
INIT = int(os.environ.get("BENCH_INIT", str(NODES)))
MEASURED = int(os.environ.get("BENCH_MEASURED", "1000"))
WORKLOAD = os.environ.get("BENCH_WORKLOAD", "basic")
ZONES = ("zone-a", "zone-b", "zone-c")
KUBE, OURS = "perf-kube", "perf-project"

KUBE_CONFIG = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: "@KUBECONFIG@", qps: 5000, burst: 5000}}
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: {KUBE}
"""


def pod(name: str, scheduler: str) -> dict[str, Any]:
    """``pod-default.yaml`` (with ``spread``: a zone constraint on its own label)."""
    resources = {"cpu": "100m", "memory": "500Mi"}
    container = {
        "name": "pause",
        "image": "registry.k8s.io/pause:3.10.2",
        "ports": [{"containerPort": 80}],
        "resources": {"limits": resources, "requests": resources},
    }
    doc: dict[str, Any] = {
        "metadata": {"name": name, "labels": {"app": "perf"}},
        "spec": {"schedulerName": scheduler, "containers": [container]},
    }
    if WORKLOAD == "spread":
        doc["spec"]["topologySpreadConstraints"] = [
            {
                "maxSkew": 5,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "perf"}},
            }
        ]
    return doc


class Binds:
    """A watch on a namespace's pods: the first time each one is seen bound (monotonic seconds)."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self.bound: dict[str, float] = {}
        self._client = _admin_client(cluster.kubeconfig)
        self._path = f"/api/v1/namespaces/{namespace}/pods"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._watch()
        except Exception:  # the lab going down under a watch still open
            if not self._stop.is_set():
                raise

    def _watch(self) -> None:
        version = self._client.get(self._path, params={"limit": 1}).json()["metadata"]["resourceVersion"]
        params = {"watch": "1", "resourceVersion": version, "allowWatchBookmarks": "false"}
        while not self._stop.is_set():
            with self._client.stream("GET", self._path, params={**params, "timeoutSeconds": "60"}, timeout=None) as r:
                for line in r.iter_lines():
                    if self._stop.is_set():
                        return
                    event = json.loads(line)
                    obj = event.get("object", {})
                    name = obj.get("metadata", {}).get("name", "")
                    if obj.get("spec", {}).get("nodeName") and name not in self.bound:
                        self.bound[name] = time.monotonic()
                    meta = obj.get("metadata", {})
                    params["resourceVersion"] = meta.get("resourceVersion", params["resourceVersion"])

    def stop(self) -> None:
        self._stop.set()
        self._client.close()


class Project:
    """``python -m app schedule`` with kube-scheduler's default profile named :data:`OURS`."""

    def __init__(self, cluster: Cluster, tmp: Path) -> None:
        doc = {
            "apiVersion": "config.scheduler-extender.dev/v1alpha1",
            "kind": "ExtenderConfiguration",
            "server": {"host": "127.0.0.1"},
            "cluster": {"kubeconfig": str(cluster.kubeconfig)},
            "scheduling": {"leaderElect": False},
            "profiles": [{"name": "perf", "schedulerName": OURS}],
        }
        path = tmp / "perf.yaml"
        path.write_text(yaml.safe_dump(doc))
        self.port = free_port()
        self._out = (tmp / "schedule.log").open("wb")
        cmd = [sys.executable, "-m", "app", "schedule", "--config", str(path), "--port", str(self.port)]
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=self._out, stderr=subprocess.STDOUT)

    def cpu(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._out.close()


def run(cluster: Cluster, scheduler: str, namespace: str, cpu: Any = None) -> dict[str, float]:
    """Init pods bound, then the measured ones created while ``scheduler`` runs."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    cluster.create(path, [pod(f"init-{i}", scheduler) for i in range(INIT)])
    wait_for(lambda: len(cluster.bound(namespace)) == INIT, seconds=600, what=f"{scheduler}: init pods bound")
    binds = Binds(cluster, namespace)
    time.sleep(1)
    created: dict[str, float] = {}
    lock = threading.Lock()
    api = cluster.api

    def post(i: int) -> None:
        doc = pod(f"m-{i}", scheduler)
        before = time.monotonic()
        r = api.post(path, json=doc)
        assert r.status_code == 201, r.text
        with lock:
            created[doc["metadata"]["name"]] = before

    cpu_before = cpu() if cpu else 0.0
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(post, range(MEASURED)))
    wait_for(
        lambda: sum(1 for n in created if n in binds.bound) == MEASURED,
        seconds=3600,
        what=f"{scheduler}: measured pods bound",
    )
    binds.stop()
    cpu_used = (cpu() - cpu_before) if cpu else 0.0
    latencies = sorted(binds.bound[n] - created[n] for n in created)
    span = max(binds.bound[n] for n in created) - min(created.values())
    return {
        "pods_per_second": MEASURED / span,
        "p50": statistics.median(latencies),
        "p99": latencies[int(len(latencies) * 0.99) - 1],
        "cpu_ms_per_pod": 1000 * cpu_used / MEASURED if cpu else 0.0,
    }


def main() -> None:
    lab_dir = Path(os.environ.get("LAB_DIR") or REPO.parent / "shared" / "lab")
    home = Path.home() / ".cache" / "scheduler-extender-bench" / f"run-{os.getpid()}"
    tmp = Path(tempfile.mkdtemp(prefix="bench-perf-"))
    lab = Lab(lab_dir, home)
    kubeconfig = lab.up()
    cluster = Cluster(kubeconfig, lab.binary("kubectl"), lab.binary("kube-scheduler"), tmp, lab=True)
    try:
        for z, zone in enumerate(ZONES):
            count = NODES // len(ZONES) + (1 if z < NODES % len(ZONES) else 0)
            cluster.nodes(count, prefix=f"perf-{zone}", labels={"topology.kubernetes.io/zone": zone}, memory="32Gi")
        kube_ns, our_ns = cluster.namespace("perf-kube"), cluster.namespace("perf-project")
        ks = cluster.scheduler(KUBE_CONFIG)
        try:
            kube = run(cluster, KUBE, kube_ns)
        finally:
            ks.stop()
        cluster.delete_pods(kube_ns)
        project = Project(cluster, tmp)
        try:
            time.sleep(3)
            ours = run(cluster, OURS, our_ns, project.cpu)
        finally:
            project.stop()
        print(f"\n{WORKLOAD}: {NODES} nodes, {INIT} init pods, {MEASURED} measured pods created by 8 threads")
        print("kube-apiserver and kube-scheduler v1.36.3 of ../shared/lab, this machine")
        for name, r in (("kube-scheduler v1.36.3", kube), ("project (schedule)", ours)):
            print(
                f"  {name:24} {r['pods_per_second']:7.1f} pods/s  p50 {r['p50']:.3f} s  p99 {r['p99']:.3f} s"
                + (f"  {r['cpu_ms_per_pod']:.1f} ms CPU/pod" if r["cpu_ms_per_pod"] else "")
            )
        print(
            f"  ratio (project / kube-scheduler): pods/s {ours['pods_per_second'] / kube['pods_per_second']:.2f}x, "
            f"p50 {ours['p50'] / kube['p50']:.2f}x"
        )
    finally:
        cluster.close()
        lab.down(check=False)


if __name__ == "__main__":
    main()

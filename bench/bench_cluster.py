"""Cache mode with cluster state: sync time, resident memory and verb latency through the server.

Starts the test API server (tests/support/apiserver.py) in this process with ``BENCH_NODES``
nodes (default 5000, named as in the shared 5000-name fixture) and ``BENCH_PODS`` bound pods
(default 150,000: 30 per node, two containers each, labels, owner references and a few
annotations), then the real server process on examples/cluster.yaml (the default profile's
plugins, ``nodeCacheCapable: true``) pointed at it. Prints the time to sync, the server's resident
memory (VmRSS, VmHWM) after the sync, and filter/prioritize p50/p99 for 200, 500 and 5000 node
names (``BENCH_NAMES``).
Then the same cluster through examples/stateful.yaml (all four stateful policies: NodeResourcesFit,
NodeResourcesBalancedAllocation, NodeResourcePool, Coscheduling; plus PreemptionRules) with the
fixture pod that requests an underlay IP (so the pool filters and scores), and the
filter-then-prioritize round kube-scheduler makes per pod (prioritize with filter's survivors).
``BENCH_CONFIGS`` picks ``default``, ``stateful`` or both (default). Run: ``make bench`` (or
``python bench/bench_cluster.py``).
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_http import measure, row  # noqa: E402
from tests.conftest import Server, cluster_config  # noqa: E402
from tests.support.apiserver import FakeAPIServer, pod  # noqa: E402
from tests.support.bodies import cluster_nodes, fixture, go_marshal  # noqa: E402


def populate(api: FakeAPIServer, nodes: int, pods: int) -> None:
    names = fixture("extenderargs_cache_n5000.json")["NodeNames"][:nodes]
    for node in cluster_nodes(names):
        api.objects["nodes"][node["metadata"]["name"]] = {"apiVersion": "v1", "kind": "Node", **node}
    for i in range(pods):
        namespace = f"team-{i % 40}"
        doc = pod(f"app-{i // 30}-{i}", namespace, names[i % len(names)], cpu="250m", memory="512Mi")
        doc["spec"]["containers"].append(
            {"name": "istio-proxy", "image": "istio/proxyv2:1.22", "resources": {"requests": {"cpu": "100m"}}}
        )
        doc["metadata"]["labels"] = {"app": f"app-{i % 500}", "pod-template-hash": f"{i % 997:x}", "team": namespace}
        doc["metadata"]["annotations"] = {"prometheus.io/scrape": "true", "sidecar.istio.io/status": "{...}"}
        doc["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"app-{i % 500}-x", "uid": f"rs-{i % 500}"}
        ]
        doc["metadata"]["resourceVersion"] = str(api.rv)
        doc["status"]["phase"] = "Running"
        api.objects["pods"][f"{namespace}/{doc['metadata']['name']}"] = doc


#: The NodeNames counts measured (``BENCH_NAMES``, comma-separated; default 200, 500 and 5000).
NAMES = [int(n) for n in os.environ.get("BENCH_NAMES", "200,500,5000").split(",")]


def names_body(names: int) -> bytes:
    """The shared fixture's cache-mode body (kube-scheduler's ``ExtenderArgs`` with ``NodeNames``)
    with its first ``names`` node names."""
    doc = fixture("extenderargs_cache_n5000.json")
    doc["NodeNames"] = doc["NodeNames"][:names]
    return go_marshal(doc)


def extres_body(names: int) -> bytes:
    """The cache-mode body of the pod requesting ``ipam.example.com/ip`` with ``names`` node names."""
    doc = fixture("extenderargs_cache_n100_extres.json")
    doc["NodeNames"] = fixture("extenderargs_cache_n5000.json")["NodeNames"][:names]
    return go_marshal(doc)


def measure_round(port: int, body: bytes, n: int) -> tuple[list[float], int]:
    """filter, then prioritize with the names that passed, as one scheduling round; seconds."""
    conn = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"Content-Type": "application/json"}
    doc = json.loads(body)
    times: list[float] = []
    passed = 0
    for i in range(n + 3):
        started = time.perf_counter()
        conn.request("POST", "/filter", body=body, headers=headers)
        result = json.loads(conn.getresponse().read())
        doc["NodeNames"] = result["NodeNames"]
        conn.request("POST", "/prioritize", body=json.dumps(doc).encode(), headers=headers)
        conn.getresponse().read()
        if i >= 3:
            times.append(time.perf_counter() - started)
        passed = len(result["NodeNames"] or [])
    conn.close()
    return times, passed


def rss(pid: int) -> tuple[int, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) // 1024, int(fields["VmHWM"].split()[0]) // 1024


def main() -> None:
    nodes = int(os.environ.get("BENCH_NODES", "5000"))
    pods = int(os.environ.get("BENCH_PODS", "150000"))
    n = int(os.environ.get("BENCH_N", "100"))
    configs = os.environ.get("BENCH_CONFIGS", "default,stateful").split(",")
    api = FakeAPIServer(bookmark_interval=30)
    populate(api, nodes, pods)
    api.start()
    try:
        for config in configs:
            print(f"--- {config} ({'examples/cluster.yaml' if config == 'default' else 'examples/stateful.yaml'})")
            run(api, config, nodes, pods, n)
    finally:
        api.stop()


def run(api: FakeAPIServer, config: str, nodes: int, pods: int, n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        example = "cluster.yaml" if config == "default" else "stateful.yaml"  # as shipped
        server = Server(cluster_config(Path(tmp), api.kubeconfig(), example), wait_ready=False)
        try:
            while httpx.get(f"{server.url}/readyz").status_code != 200:
                time.sleep(0.2)
            synced = time.monotonic() - started
            time.sleep(1)
            now, peak = rss(server.proc.pid)
            print(f"cluster state: {nodes} nodes, {pods} pods; start + sync {synced:.1f} s")
            print(f"server resident memory after sync: {now} MB (peak {peak} MB)")
            for count in NAMES:
                body = names_body(count) if config == "default" else extres_body(count)
                # stateful.yaml's two extenders: every pod ("default"), and the underlay-IP pool
                for prefix in ("", "/pool") if config == "stateful" else ("",):
                    for verb in ("filter", "prioritize"):
                        times, status, size = measure(server.port, f"{prefix}/{verb}", body, n)
                        row(
                            f"{prefix.strip('/') or ''}{' ' if prefix else ''}{verb} {count} names (cache)",
                            times,
                            f"HTTP {status}, {size} B",
                        )
                times, passed = measure_round(server.port, body, n)
                row(f"filter+prioritize {count} names", times, f"{passed} passed filter")
            now, peak = rss(server.proc.pid)
            print(f"server resident memory after the requests: {now} MB (peak {peak} MB)")
        finally:
            server.stop()


if __name__ == "__main__":
    main()

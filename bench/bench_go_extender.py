"""Names-only filter and prioritize against a Go extender: what each verb costs kube-scheduler.

Cache mode (``nodeCacheCapable: true``): kube-scheduler sends the pod and the candidate node
names. One client, ``kubesched verbs`` (Go's ``net/http`` and ``encoding/json``, as
``HTTPExtender.send``: :mod:`bench.gotool`), times each verb over one keep-alive connection (plain
HTTP), one pod at a time: filter, then prioritize with filter's survivors and the very pod bytes
filter got; each round's pod is one of its own (the body's pod with a UID of the round's), as
each pod kube-scheduler schedules is. Against:

- the service on ``examples/cluster.yaml`` without bind (AnnotationNodeAffinity,
  NodeResourcesAllocatable; cache mode), its cluster state listed from the test API server of
  ``tests/support`` (this process; the fixture's nodes);
- a Go extender (``kubesched extender``: ``net/http``, the request decoded into the official
  types' shapes, the same nodes in memory, a label filter, a resource fit and a resource score),
  as kubernetes' test extender answers names-only requests.

Bodies: ``tests/fixtures/extenderargs_cache_n500.json`` (the recorded pod, 200 and 500 node
names; ``BENCH_NAMES``; above 500, ``extenderargs_cache_n5000.json``'s pod and names). ``BENCH_N``
rounds per row (500) after 20 of warm-up; ``BENCH_PROFILE=DIR``: py-spy records the service during
each row into ``DIR/names-<count>.txt`` (``BENCH_PROFILE_ARGS``). Run: ``make bench``
(or ``python bench/bench_go_extender.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_http import pct  # noqa: E402
from bench.gotool import kubesched  # noqa: E402
from bench.support import profiler, without_bind  # noqa: E402
from tests.conftest import Server, cluster_config  # noqa: E402
from tests.support.apiserver import FakeAPIServer  # noqa: E402
from tests.support.bodies import cluster_nodes, fixture, go_marshal  # noqa: E402

N = int(os.environ.get("BENCH_N", "500"))
NAMES = [int(n) for n in os.environ.get("BENCH_NAMES", "200,500").split(",")]


def verbs(binary: Path, url: str, body: Path) -> dict[str, Any]:
    """``kubesched verbs`` against ``url``: per-round filter, prioritize and round seconds."""
    cmd = [str(binary), "verbs", "-url", url, "-body", str(body), "-n", str(N)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return dict(json.loads(out.split("R ", 1)[1]))


def main() -> None:
    binary = kubesched()
    tmp = Path(tempfile.mkdtemp(prefix="bench-go-extender-"))
    source = "extenderargs_cache_n500.json" if max(NAMES) <= 500 else "extenderargs_cache_n5000.json"
    names = fixture(source)["NodeNames"]
    nodes = cluster_nodes(names)
    (tmp / "nodes.json").write_bytes(go_marshal(nodes))
    api = FakeAPIServer().start()
    for node in nodes:
        api.put("nodes", {"apiVersion": "v1", "kind": "Node", **node})
    server = Server(cluster_config(tmp, api.kubeconfig(), edit=without_bind))
    cmd = [str(binary), "extender", "-nodes", str(tmp / "nodes.json")]
    go = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert go.stdout is not None
        go_url = "http://127.0.0.1:" + go.stdout.readline().split()[1]
        print(f"one Go client (net/http, keep-alive, plain HTTP), {N} rounds per row after 20 of warm-up")
        for count in NAMES:
            doc = fixture(source)
            doc["NodeNames"] = names[:count]
            body = tmp / f"filter-{count}.json"
            body.write_bytes(go_marshal(doc))
            mean: dict[str, dict[str, float]] = {}
            for label, url in (("the service", server.url), ("a Go extender", go_url)):
                spy = profiler(server.proc.pid, f"names-{count}") if label == "the service" else None
                try:
                    r = verbs(binary, url, body)
                finally:
                    if spy is not None:
                        spy()
                mean[label] = {k: sum(r[k]) / len(r[k]) for k in ("filter", "prioritize", "round")}
                m = mean[label]
                print(
                    f"{count} names, {label:<14} filter p50 {pct(r['filter'], 0.5):5.3f} ms mean "
                    f"{m['filter'] * 1000:5.3f}   prioritize ({r['passed']}) p50 {pct(r['prioritize'], 0.5):5.3f} "
                    f"mean {m['prioritize'] * 1000:5.3f}   round p50 {pct(r['round'], 0.5):5.3f} "
                    f"p99 {pct(r['round'], 0.99):5.3f} mean {m['round'] * 1000:5.3f} ms"
                )
            ratio = {k: mean["a Go extender"][k] / mean["the service"][k] for k in ("filter", "prioritize", "round")}
            print(
                f"{count} names, the service's pace / a Go extender's (mean time ratio, above 1: faster): filter "
                f"{ratio['filter']:.2f}x, prioritize {ratio['prioritize']:.2f}x, round {ratio['round']:.2f}x"
            )
    finally:
        go.kill()
        server.stop()
        api.stop()


if __name__ == "__main__":
    main()

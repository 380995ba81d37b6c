"""The stateful policies in-process, without HTTP: decode a NodeNames body and answer it with the
handlers, as the server's verb code does, over a cluster state seeded (no API server) with
``BENCH_NODES`` nodes (5000) and ``BENCH_PODS`` pods (150,000) as ``bench_cluster.py`` builds them,
through ``examples/stateful.yaml``'s two profiles. Prints p50 and the minimum per profile, verb and
number of names; ``BENCH_PROFILE=default:filter`` adds a cProfile of that case at 5000 names.
Run: ``python bench/bench_plugins.py`` (not part of ``make bench``: it repeats ``bench_cluster``
without the transport, to see the plugins' own cost).
"""

from __future__ import annotations

import cProfile
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

import msgspec

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from app.bootstrap import build_service  # noqa: E402
from app.extender import codec  # noqa: E402
from app.framework import objects  # noqa: E402
from bench.bench_cluster import extres_body, populate  # noqa: E402
from tests.support.apiserver import FakeAPIServer  # noqa: E402


def main() -> None:
    nodes, pods = int(os.environ.get("BENCH_NODES", "5000")), int(os.environ.get("BENCH_PODS", "150000"))
    api = FakeAPIServer()
    populate(api, nodes, pods)
    service = build_service(str(REPO / "examples" / "stateful.yaml"))
    assert service.cluster is not None
    service.cluster.cache.seed(
        [msgspec.convert(n, objects.Node) for n in api.objects["nodes"].values()],
        [msgspec.convert(p, objects.Pod) for p in api.objects["pods"].values()],
    )
    if service.cluster.podgroups is not None:
        service.cluster.podgroups.missing("not used by the benchmark")

    def run(count: int, verb: str, profile: str, n: int = 30, profiler: cProfile.Profile | None = None) -> str:
        body = extres_body(count)
        framework = service.frameworks[profile]
        times = []
        for _ in range(n):
            if profiler is not None:
                profiler.enable()
            started = time.perf_counter()
            args = codec.decode_extender_args(body, keep_raw=verb == "filter")
            getattr(service, verb)(framework, args)
            times.append(time.perf_counter() - started)
            if profiler is not None:
                profiler.disable()
        return f"p50 {1000 * statistics.median(times):6.2f} ms  min {1000 * min(times):6.2f} ms"

    print(f"in-process, {nodes} nodes and {pods} pods, examples/stateful.yaml")
    for count in (500, nodes):
        for profile in ("default", "pool"):
            for verb in ("filter", "prioritize"):
                print(f"{profile:<8} {verb:<10} {count:>5} names  {run(count, verb, profile)}")
    if os.environ.get("BENCH_PROFILE"):
        profile, verb = os.environ["BENCH_PROFILE"].split(":")
        profiler = cProfile.Profile()
        run(nodes, verb, profile, profiler=profiler)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()

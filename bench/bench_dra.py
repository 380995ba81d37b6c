"""The structured allocator's speed (app/plugins/dynamicresources/structured, v1.36.3's
incubating allocator): 100 nodes with one ResourceSlice of 8 GPUs each (driver gpu.example.com,
attributes model and numa, capacity memory), a DeviceClass selecting the driver by CEL.

Scenarios, each as the DynamicResources plugin would call it (one allocator per scheduling cycle,
``allocate`` once per node in Filter):

- ``1 GPU``: one claim of one GPU whose request selects ``model == "h100"``;
- ``matchAttribute``: one claim of two requests (one GPU each) with a ``matchAttribute``
  constraint on ``numa`` (two GPUs per NUMA node), with ``gpu-0`` already allocated on every node,
  so the search tries ``gpu-1`` against every other GPU and backtracks before it takes
  ``gpu-2`` and ``gpu-3``.

Prints node allocations per second (one ``allocate`` call) and pods per second (a cycle: a new
allocator and ``allocate`` on all 100 nodes). Run: ``python bench/bench_dra.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from app.plugins.dynamicresources.structured import (  # noqa: E402
    AllocatedState,
    Features,
    new_allocator,
    new_cel_cache,
)

DRIVER = "gpu.example.com"
NODES = 100
GPUS = 8


def _node(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}}}


def _slice(i: int) -> dict[str, Any]:
    devices = [
        {
            "name": f"gpu-{g}",
            "attributes": {"model": {"string": "h100"}, "numa": {"int": g // 2}},
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for g in range(GPUS)
    ]
    return {
        "metadata": {"name": f"node-{i}-gpus"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": f"node-{i}", "generation": 1, "resourceSliceCount": 1},
            "nodeName": f"node-{i}",
            "devices": devices,
        },
    }


DRIVER_SELECTOR = {"cel": {"expression": f'device.driver == "{DRIVER}"'}}
CLASSES = {"gpu": {"metadata": {"name": "gpu"}, "spec": {"selectors": [DRIVER_SELECTOR]}}}
ONE_GPU = {
    "metadata": {"name": "one-gpu", "namespace": "default"},
    "spec": {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "exactly": {
                        "deviceClassName": "gpu",
                        "selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "h100"'}}],
                    },
                }
            ]
        }
    },
}
PAIR = {
    "metadata": {"name": "pair", "namespace": "default"},
    "spec": {
        "devices": {
            "requests": [
                {"name": "a", "exactly": {"deviceClassName": "gpu"}},
                {"name": "b", "exactly": {"deviceClassName": "gpu"}},
            ],
            "constraints": [{"matchAttribute": f"{DRIVER}/numa"}],
        }
    },
}


def run(name: str, claim: dict[str, Any], allocated: set[tuple[str, str, str]], seconds: float = 3.0) -> None:
    nodes = [_node(i) for i in range(NODES)]
    slices = [_slice(i) for i in range(NODES)]
    cache = new_cel_cache()
    state = AllocatedState(allocated_devices=allocated)
    pods, node_calls, start = 0, 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        allocator = new_allocator(Features(), state, CLASSES, slices, cache)
        for node in nodes:
            result = allocator.allocate(node, [claim])
            assert result is not None
            node_calls += 1
        pods += 1
    elapsed = time.perf_counter() - start
    print(
        f"{name:16} {node_calls / elapsed:10,.0f} node allocations/s  {pods / elapsed:8,.1f} pods/s "
        f"(100 nodes x {GPUS} devices each)"
    )


def main() -> None:
    run("1 GPU", ONE_GPU, set())
    taken = {(DRIVER, f"node-{i}", "gpu-0") for i in range(NODES)}
    run("matchAttribute", PAIR, taken)


if __name__ == "__main__":
    main()

"""Write examples/cluster-state-n10.json: a cluster for `replay --cluster-state`.

The 10 nodes of tests/fixtures/extenderargs_nocache_n10.json (the shared recording; managedFields
dropped) and pods that make every stateful policy say something: node -13 nearly full of cpu, node -14's underlay-IP
pool (16 slots) full, node -16 with 15 of 16 taken, node -19 a half-used pool, and a pod group
`train` of 4 with minMember 4 of which 2 exist. Deterministic: run it again and the file is the
same (a test checks). Usage: python examples/make_cluster_state.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "tests" / "fixtures" / "extenderargs_nocache_n10.json"
OUT = HERE / "cluster-state-n10.json"
IP = "ipam.example.com/ip"


def _pod(
    name: str, node: str, cpu: str, memory: str, ips: int = 0, namespace: str = "apps", **meta: Any
) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": cpu, "memory": memory}
    if ips:
        requests[IP] = str(ips)
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "app",
                "image": "registry.example.com/app:1",
                "resources": {"requests": requests, "limits": dict(requests)},
            }
        ]
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}", **meta},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def build() -> dict[str, Any]:
    nodes = json.loads(FIXTURE.read_text())["Nodes"]["items"]
    items: list[dict[str, Any]] = []
    for node in nodes:
        node = dict(node, apiVersion="v1", kind="Node")
        node["metadata"] = {k: v for k, v in node["metadata"].items() if k != "managedFields"}
        items.append(node)
    name = [n["metadata"]["name"] for n in nodes]
    items.append(_pod("big-batch", name[3], "7800m", "8Gi"))
    items += [_pod(f"ip-user-{i}", name[4], "50m", "64Mi", ips=1) for i in range(16)]
    items += [_pod(f"ip-user-b{i}", name[6], "50m", "64Mi", ips=1) for i in range(15)]
    items += [_pod(f"ip-user-c{i}", name[9], "50m", "64Mi", ips=1) for i in range(8)]
    items += [
        _pod(f"train-{i}", "", "1", "1Gi", namespace="ml", labels={"scheduling.x-k8s.io/pod-group": "train"})
        for i in range(2)
    ]
    items.append(
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "train", "namespace": "ml"},
            "spec": {"minMember": 4},
        }
    )
    return {"apiVersion": "v1", "kind": "List", "items": items}


if __name__ == "__main__":
    OUT.write_text(json.dumps(build(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")

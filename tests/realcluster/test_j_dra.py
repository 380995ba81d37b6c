"""Dynamic Resource Allocation on the real v1.36.3 control plane: the same cases under
kube-scheduler v1.36.3 (the control) and under the project's standalone scheduler, one after the
other on the same ResourceSlices, compared. No driver, no kubelet and no resourceclaim
controller run in the lab: the test publishes the slices (3 nodes ``tier-dra-{1,2,3}`` with 2
devices each, models a100 + a100, a100 + v100, h100 + h100; and on tier-dra-1 one shared memory
device of 40Gi that allows multiple allocations) and creates the claims, by name
(``resourceClaimName``).

Cases, each on fresh claims (the previous case's claims are released: finalizer removed, deleted):

- ``exhaust``: 8 pods of one single-device claim each for the 6 devices: 6 bound, each where its
  claim's devices are, no device twice, 2 pending with the same FailedScheduling message;
- ``h100``: a claim of 2 devices selecting ``model == "h100"``: bound to tier-dra-3;
- ``shared``: the two pods of one claim: on its devices' node, both in ``reservedFor``;
- ``fpga``: a claim of a class no slice serves: pending, the same message;
- ``constraint``: 3 pods, each with a claim of two requests that must ``matchAttribute`` the
  model: bound to tier-dra-1 and tier-dra-3 (tier-dra-2's models differ), the third pending with
  the same message;
- ``capacity``: 5 pods each consuming 10Gi of the 40Gi shared device (consumable capacity): 4
  bound on tier-dra-1, each claim with its share, the fifth pending with the same message;
- ``invalid``: a selector that fails at run time (``device.attributes["gpu.example.com"].healthy``:
  no such attribute; one that does not compile is refused by the API server at create): pending,
  the same FailedScheduling message.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import REPO, free_port
from tests.realcluster.support import Cluster, Obj, stop_process, wait_for

GPU = "gpu.example.com"
FPGA = "fpga.example.com"
MEM = "mem.example.com"
NODES = {"tier-dra-1": ("a100", "a100"), "tier-dra-2": ("a100", "v100"), "tier-dra-3": ("h100", "h100")}
RESOURCE = "/apis/resource.k8s.io/v1"
MERGE = {"Content-Type": "application/merge-patch+json"}
KUBE = "dra-kube-scheduler"
OURS = "dra-project"

KUBE_SCHEDULER_CONFIG = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: "@KUBECONFIG@", qps: 200, burst: 400}}
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: {KUBE}
"""


def device_class(name: str, driver: str) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def resource_slice(node: str, models: tuple[str, ...]) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu"},
        "spec": {
            "driver": GPU,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": m}}} for i, m in enumerate(models)],
        },
    }


def memory_slice(node: str) -> Obj:
    """One device of 40Gi that many claims may share, each consuming what it requests."""
    device = {"name": "mem-0", "allowMultipleAllocations": True, "capacity": {"memory": {"value": "40Gi"}}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-mem"},
        "spec": {
            "driver": MEM,
            "nodeName": node,
            "pool": {"name": f"{node}-mem", "generation": 1, "resourceSliceCount": 1},
            "devices": [device],
        },
    }


def constrained_claim(name: str) -> Obj:
    """Two GPUs of one model: two requests and a ``matchAttribute`` constraint."""
    requests = [{"name": r, "exactly": {"deviceClassName": GPU}} for r in ("first", "second")]
    constraint = {"requests": ["first", "second"], "matchAttribute": f"{GPU}/model"}
    return {"metadata": {"name": name}, "spec": {"devices": {"requests": requests, "constraints": [constraint]}}}


def memory_claim(name: str) -> Obj:
    exactly = {"deviceClassName": MEM, "capacity": {"requests": {"memory": "10Gi"}}}
    return {"metadata": {"name": name}, "spec": {"devices": {"requests": [{"name": "mem", "exactly": exactly}]}}}


def claim(name: str, device_class_name: str = GPU, count: int = 1, selector: str = "") -> Obj:
    exactly: Obj = {"deviceClassName": device_class_name, "allocationMode": "ExactCount", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {"metadata": {"name": name}, "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def pod(name: str, scheduler: str, *claims: str) -> Obj:
    container = {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "10m"}, "claims": [{"name": c} for c in claims]},
    }
    return {
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler,
            "containers": [container],
            "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims],
        },
    }


class Schedule:
    """``python -m app schedule`` with kube-scheduler's default profile named :data:`OURS`."""

    def __init__(self, cluster: Cluster, tmp: Path) -> None:
        doc = {
            "apiVersion": "config.scheduler-extender.dev/v1alpha1",
            "kind": "ExtenderConfiguration",
            "server": {"host": "127.0.0.1"},
            "cluster": {"kubeconfig": str(cluster.kubeconfig)},
            "scheduling": {"leaseDuration": "5s", "renewDeadline": "3s", "retryPeriod": "1s"},
            "profiles": [{"name": "dra", "schedulerName": OURS}],
        }
        path = tmp / "dra.yaml"
        path.write_text(yaml.safe_dump(doc))
        self.port = free_port()
        self.log = tmp / f"schedule-{self.port}.log"
        self._out = self.log.open("wb")
        cmd = [sys.executable, "-m", "app", "schedule", "--config", str(path), "--port", str(self.port)]
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=self._out, stderr=subprocess.STDOUT)

    def ready(self) -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}/readyz", timeout=2).json().get("role") == "leader"
        except (httpx.HTTPError, ValueError):
            return False

    def stop(self) -> None:
        stop_process(self.proc)
        self._out.close()


@pytest.fixture(scope="module")
def devices(cluster: Cluster) -> Iterator[None]:
    cluster.nodes(3, prefix="tier-dra")
    for name, driver in ((GPU, GPU), (FPGA, FPGA), (MEM, MEM)):
        cluster.request("POST", f"{RESOURCE}/deviceclasses", ok=(201, 409), json=device_class(name, driver))
    for node, models in NODES.items():
        cluster.request("POST", f"{RESOURCE}/resourceslices", ok=(201, 409), json=resource_slice(node, models))
    cluster.request("POST", f"{RESOURCE}/resourceslices", ok=(201, 409), json=memory_slice("tier-dra-1"))
    yield
    for node in NODES:
        cluster.request("DELETE", f"{RESOURCE}/resourceslices/{node}-gpu", ok=(200, 404))
    cluster.request("DELETE", f"{RESOURCE}/resourceslices/tier-dra-1-mem", ok=(200, 404))


def release(cluster: Cluster, ns: str) -> None:
    """Delete the pods, then the claims (their finalizer removed first: no controller does)."""
    cluster.delete_pods(ns)
    for c in cluster.get(f"{RESOURCE}/namespaces/{ns}/resourceclaims")["items"]:
        path = f"{RESOURCE}/namespaces/{ns}/resourceclaims/{c['metadata']['name']}"
        cluster.request("PATCH", path, headers=MERGE, json={"metadata": {"finalizers": None}})
        cluster.request("DELETE", path, ok=(200, 404))
    wait_for(lambda: not cluster.get(f"{RESOURCE}/namespaces/{ns}/resourceclaims")["items"], what="claims gone")


def failed_notes(cluster: Cluster, ns: str) -> dict[str, str]:
    """pod -> the note of its latest FailedScheduling event."""
    events = cluster.get(f"/apis/events.k8s.io/v1/namespaces/{ns}/events")["items"]
    notes: dict[str, tuple[str, str]] = {}
    for e in events:
        if e.get("reason") == "FailedScheduling":
            stamp = e.get("eventTime") or e["metadata"].get("creationTimestamp") or ""
            name = e["regarding"]["name"]
            if name not in notes or stamp >= notes[name][0]:
                notes[name] = (stamp, e.get("note") or "")
    return {name: note for name, (_, note) in notes.items()}


def claims_of(cluster: Cluster, ns: str) -> dict[str, Obj]:
    return {c["metadata"]["name"]: c for c in cluster.get(f"{RESOURCE}/namespaces/{ns}/resourceclaims")["items"]}


def devices_of(c: Obj) -> list[tuple[str, str, str]]:
    allocation = (c.get("status") or {}).get("allocation") or {}
    return sorted((r["driver"], r["pool"], r["device"]) for r in allocation.get("devices", {}).get("results", []))


def run_cases(cluster: Cluster, ns: str, scheduler: str) -> dict[str, Any]:
    """The cases of the module doc under ``scheduler`` in ``ns``: what each ended with."""
    out: dict[str, Any] = {}
    create = cluster.request

    # exhaust
    for i in range(8):
        create("POST", f"{RESOURCE}/namespaces/{ns}/resourceclaims", json=claim(f"gpu-{i}"))
    cluster.create(f"/api/v1/namespaces/{ns}/pods", [pod(f"p{i}", scheduler, f"gpu-{i}") for i in range(8)])
    wait_for(lambda: len(cluster.bound(ns)) == 6, seconds=60, what=f"{scheduler}: 6 pods bound")
    wait_for(lambda: len(failed_notes(cluster, ns)) >= 2, seconds=60, what=f"{scheduler}: 2 FailedScheduling")
    bound, claims = cluster.bound(ns), claims_of(cluster, ns)
    used = [d for i in range(8) for d in devices_of(claims[f"gpu-{i}"])]
    out["exhaust"] = {
        "bound": len(bound),
        "where_allocated": all({d[1] for d in devices_of(claims[f"gpu-{p[1:]}"])} == {n} for p, n in bound.items()),
        "reserved": all([r["name"] for r in claims[f"gpu-{p[1:]}"]["status"]["reservedFor"]] == [p] for p in bound),
        "distinct": len(used) == len(set(used)) == 6,
        "notes": sorted(set(n for p, n in failed_notes(cluster, ns).items() if p not in bound)),
    }
    release(cluster, ns)

    # h100
    create(
        "POST",
        f"{RESOURCE}/namespaces/{ns}/resourceclaims",
        json=claim("h100", GPU, 2, f'device.attributes["{GPU}"].model == "h100"'),
    )
    create("POST", f"/api/v1/namespaces/{ns}/pods", json=pod("trainer", scheduler, "h100"))
    out["h100"] = {"bound": wait_for(lambda: cluster.bound(ns), seconds=60, what="the h100 pod bound")}
    out["h100"]["devices"] = devices_of(claims_of(cluster, ns)["h100"])
    release(cluster, ns)

    # shared
    create("POST", f"{RESOURCE}/namespaces/{ns}/resourceclaims", json=claim("shared"))
    cluster.create(f"/api/v1/namespaces/{ns}/pods", [pod(n, scheduler, "shared") for n in ("a", "b")])
    bound = wait_for(lambda: len(cluster.bound(ns)) == 2 and cluster.bound(ns), seconds=60, what="shared bound")
    shared = claims_of(cluster, ns)["shared"]
    out["shared"] = {
        "same_node": bound["a"] == bound["b"] == devices_of(shared)[0][1],
        "reserved": sorted(r["name"] for r in shared["status"]["reservedFor"]),
    }
    release(cluster, ns)

    # constraint
    for i in range(3):
        create("POST", f"{RESOURCE}/namespaces/{ns}/resourceclaims", json=constrained_claim(f"pair-{i}"))
    cluster.create(f"/api/v1/namespaces/{ns}/pods", [pod(f"pair-user-{i}", scheduler, f"pair-{i}") for i in range(3)])
    wait_for(lambda: len(cluster.bound(ns)) == 2, seconds=60, what=f"{scheduler}: 2 pairs bound")
    wait_for(lambda: "pair-user-" in str(failed_notes(cluster, ns)), seconds=60, what=f"{scheduler}: a pair refused")
    bound, claims = cluster.bound(ns), claims_of(cluster, ns)
    out["constraint"] = {
        "nodes": sorted(bound.values()),
        "pairs": sorted(len({d[1] for d in devices_of(c)}) == 1 and len(devices_of(c)) == 2 for c in claims.values()),
        "notes": sorted(
            set(n for p, n in failed_notes(cluster, ns).items() if p.startswith("pair-") and p not in bound)
        ),
    }
    release(cluster, ns)

    # capacity
    for i in range(5):
        create("POST", f"{RESOURCE}/namespaces/{ns}/resourceclaims", json=memory_claim(f"mem-{i}"))
    cluster.create(f"/api/v1/namespaces/{ns}/pods", [pod(f"mem-user-{i}", scheduler, f"mem-{i}") for i in range(5)])
    wait_for(lambda: len(cluster.bound(ns)) == 4, seconds=60, what=f"{scheduler}: 4 shares bound")
    wait_for(lambda: "mem-user-" in str(failed_notes(cluster, ns)), seconds=60, what=f"{scheduler}: a share refused")
    bound, claims = cluster.bound(ns), claims_of(cluster, ns)
    results = [
        r
        for c in claims.values()
        for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
    ]
    out["capacity"] = {
        "nodes": sorted(set(bound.values())),
        "shares": len({r.get("shareID") for r in results if r.get("shareID")}),
        "consumed": sorted({str(r.get("consumedCapacity")) for r in results}),
        "notes": sorted(
            set(n for p, n in failed_notes(cluster, ns).items() if p.startswith("mem-") and p not in bound)
        ),
    }
    release(cluster, ns)

    # fpga and invalid
    create("POST", f"{RESOURCE}/namespaces/{ns}/resourceclaims", json=claim("fpga", FPGA))
    create(
        "POST",
        f"{RESOURCE}/namespaces/{ns}/resourceclaims",
        json=claim("broken", GPU, 1, f'device.attributes["{GPU}"].healthy'),
    )
    cluster.create(
        f"/api/v1/namespaces/{ns}/pods", [pod("fpga-user", scheduler, "fpga"), pod("broken-user", scheduler, "broken")]
    )
    users = {"fpga-user", "broken-user"}
    notes = wait_for(
        lambda: users <= set(failed_notes(cluster, ns)) and failed_notes(cluster, ns), seconds=60, what="notes"
    )
    out["fpga"] = {"bound": cluster.bound(ns), "note": notes["fpga-user"]}
    out["invalid"] = {"note": notes["broken-user"]}
    release(cluster, ns)
    return out


def test_dra_as_kube_scheduler_does(cluster: Cluster, devices: None, tmp_path: Path) -> None:
    kube_ns, our_ns = cluster.namespace("tier-dra-kube"), cluster.namespace("tier-dra-ours")
    kube = cluster.scheduler(KUBE_SCHEDULER_CONFIG)
    try:
        control = run_cases(cluster, kube_ns, KUBE)
    finally:
        kube.stop()
    ours = Schedule(cluster, tmp_path)
    try:
        wait_for(ours.ready, seconds=60, what="the project's scheduler leading")
        project = run_cases(cluster, our_ns, OURS)
    finally:
        ours.stop()
    print("\nkube-scheduler:", control, "\nproject:", project)
    for result in (control, project):
        assert result["exhaust"]["bound"] == 6 and result["exhaust"]["distinct"], result
        assert result["exhaust"]["where_allocated"] and result["exhaust"]["reserved"], result
        assert result["h100"]["bound"] == {"trainer": "tier-dra-3"}, result
        assert result["shared"] == {"same_node": True, "reserved": ["a", "b"]}, result
        assert result["fpga"]["bound"] == {}, result
        assert result["constraint"]["nodes"] == ["tier-dra-1", "tier-dra-3"], result
        assert result["constraint"]["pairs"] == [False, True, True], result  # the refused pair has none
        assert result["capacity"]["nodes"] == ["tier-dra-1"] and result["capacity"]["shares"] == 4, result
    assert project["exhaust"]["notes"] == control["exhaust"]["notes"]
    assert project["constraint"]["notes"] == control["constraint"]["notes"]
    assert project["capacity"]["notes"] == control["capacity"]["notes"]
    assert project["capacity"]["consumed"] == control["capacity"]["consumed"]
    assert project["h100"]["devices"] == control["h100"]["devices"]
    assert project["fpga"]["note"] == control["fpga"]["note"]
    assert project["invalid"]["note"].replace(our_ns, kube_ns) == control["invalid"]["note"]

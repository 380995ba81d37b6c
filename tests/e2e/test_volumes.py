"""Volumes in the standalone scheduler (project issue 29, acceptance item 2): ``python -m app
schedule`` against the test API server, with the test's provisioner and PV controller
(:mod:`tests.support.provisioner`):

- a ``WaitForFirstConsumer`` claim gets ``volume.kubernetes.io/selected-node`` for the node the pod
  is then bound to, and the Binding is created only once the claim is bound;
- a pod whose claim is bound to a volume of zone ``b`` is bound in zone ``b``;
- a pod whose claim does not exist waits with upstream's reason and is bound once the claim (and a
  volume for it) appear;
- a second pod using a ``ReadWriteOncePod`` claim waits while the first holds it;
- a node at its CSI attach limit (its CSINode's ``allocatable.count``) is not chosen.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.test_scheduler import Scheduler, bound, events, wait_for
from tests.support.apiserver import (
    FakeAPIServer,
    claim,
    claim_volume,
    csi_node,
    node,
    pod,
    storage_class,
    volume,
)
from tests.support.provisioner import Provisioner

SCHEDULER = "volume-scheduler"


def config(tmp: Path, api: FakeAPIServer, bind_timeout: int = 30) -> Path:
    """A standalone profile (kube-scheduler's default plugins) named ``volume-scheduler``."""
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(api.kubeconfig())
    doc = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "server": {"host": "127.0.0.1"},
        "cluster": {"kubeconfig": str(kubeconfig)},
        "profiles": [
            {
                "name": "volumes",
                "schedulerName": SCHEDULER,
                "pluginConfig": [
                    {"name": "DefaultBinder", "args": {"timeoutSeconds": 1}},
                    {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": bind_timeout}},
                ],
            }
        ],
    }
    path = tmp / "volumes.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def using(name: str, *claims: str, cpu: str = "100m") -> dict[str, Any]:
    """A pending pod of the volume scheduler with a volume per claim."""
    doc = pod(name, cpu=cpu)
    doc["spec"]["schedulerName"] = SCHEDULER
    doc["spec"]["volumes"] = [claim_volume(f"v{i}", c) for i, c in enumerate(claims)]
    return doc


def zoned(name: str, zone: str) -> dict[str, Any]:
    return node(name, **{"topology.kubernetes.io/zone": zone})


@pytest.fixture
def api() -> Iterator[FakeAPIServer]:
    server = FakeAPIServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def provisioner(api: FakeAPIServer) -> Iterator[Provisioner]:
    controller = Provisioner(api).start()
    yield controller
    controller.stop()


def claim_doc(api: FakeAPIServer, name: str) -> dict[str, Any]:
    with api.lock:
        return copy.deepcopy(api.objects["persistentvolumeclaims"][f"default/{name}"])


def failed_note(api: FakeAPIServer, pod_name: str) -> Callable[[], str]:
    def note() -> str:
        found = [e for e in events(api, "FailedScheduling") if e["regarding"]["name"] == pod_name]
        return str(found[-1]["note"]) if found else ""

    return note


def test_a_wait_for_first_consumer_claim_is_provisioned_for_the_node_the_pod_is_bound_to(
    api: FakeAPIServer, tmp_path: Path
) -> None:
    for i, zone in enumerate("abc"):
        api.put("nodes", zoned(f"n{i}", zone))
    api.put("storageclasses", storage_class("standard"))
    for i in range(3):
        api.put("persistentvolumeclaims", claim(f"data-web-{i}"))
        api.put("pods", using(f"web-{i}", f"data-web-{i}"))
    # the Binding must find every claim of its pod bound already
    claims_at_binding: dict[str, list[str]] = {}
    nominated_at_binding: dict[str, str] = {}
    bind = api.bind

    def checked(namespace: str, name: str, body: dict[str, Any]) -> tuple[int, Any]:
        claimed = [v["persistentVolumeClaim"]["claimName"] for v in api.pod(namespace, name)["spec"]["volumes"]]  # type: ignore[index]
        claims_at_binding[name] = [claim_doc(api, c)["spec"].get("volumeName", "") for c in claimed]
        nominated_at_binding[name] = api.pod(namespace, name)["status"].get("nominatedNodeName", "")  # type: ignore[index]
        return bind(namespace, name, body)

    api.bind = checked  # type: ignore[method-assign]
    controller = Provisioner(api, delay=0.5).start()
    scheduler = Scheduler(config(tmp_path, api))
    try:
        placed = wait_for(lambda: len(bound(api)) == 3 and bound(api), seconds=30, what="3 pods bound")
        for i in range(3):
            selected = claim_doc(api, f"data-web-{i}")["metadata"]["annotations"]["volume.kubernetes.io/selected-node"]
            assert selected == placed[f"web-{i}"]
            assert all(claims_at_binding[f"web-{i}"]), "the Binding came before the claim was bound"
            # NominatedNodeNameForExpectation (v1.36.3): PreBind had work, so the node was told first
            assert nominated_at_binding[f"web-{i}"] == placed[f"web-{i}"]
            pv = claim_doc(api, f"data-web-{i}")["spec"]["volumeName"]
            zone = api.objects["persistentvolumes"][pv]["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
            assert zone[0]["matchExpressions"][0]["values"] == [
                api.objects["nodes"][selected]["metadata"]["labels"]["topology.kubernetes.io/zone"]
            ]
        patched = [p for kind, _, p in api.volume_patches if kind == "persistentvolumeclaims"]
        assert len(patched) == 3 and all(p["metadata"].get("resourceVersion") for p in patched)
    finally:
        scheduler.stop()
        controller.stop()


def test_a_pod_whose_volume_is_in_zone_b_is_bound_in_zone_b(
    api: FakeAPIServer, provisioner: Provisioner, tmp_path: Path
) -> None:
    for i, zone in enumerate("aabbcc"):
        api.put("nodes", zoned(f"n{i}", zone))
    api.put("storageclasses", storage_class("standard"))
    ref = {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "data", "uid": "uid-pvc-default-data"}
    api.put("persistentvolumes", volume("pv-b", zone="b", claim_ref=ref, labels={"topology.kubernetes.io/zone": "b"}))
    api.put("persistentvolumeclaims", claim("data", volume_name="pv-b"))
    for i in range(4):
        api.put("pods", using(f"reader-{i}", "data"))
    scheduler = Scheduler(config(tmp_path, api))
    try:
        placed = wait_for(lambda: len(bound(api)) == 4 and bound(api), seconds=30, what="4 pods bound")
        assert set(placed.values()) <= {"n2", "n3"}
        # the claim is bound: VolumeBinding's PreBind pre-flight says Skip, so no nominatedNodeName
        assert all(not api.pod("default", f"reader-{i}")["status"].get("nominatedNodeName") for i in range(4))  # type: ignore[index]
    finally:
        scheduler.stop()


def test_a_pod_whose_claim_is_missing_waits_with_upstreams_reason_then_is_bound(
    api: FakeAPIServer, provisioner: Provisioner, tmp_path: Path
) -> None:
    for i in range(3):
        api.put("nodes", node(f"n{i}"))
    api.put("storageclasses", storage_class("manual", mode="Immediate", provisioner="kubernetes.io/no-provisioner"))
    api.put("pods", using("lonely", "late"))
    scheduler = Scheduler(config(tmp_path, api))
    try:
        note = wait_for(failed_note(api, "lonely"), seconds=30, what="FailedScheduling")
        # v1.36.3's FitError.Error() appends the PostFilter message as it is (v1.30 added a period);
        # DynamicResources' PostFilter runs first and errs on the state its PreFilter never wrote
        # (VolumeBinding's PreFilter rejected first): "not found", the attempt's PostFilter message.
        # kube-scheduler v1.36.3 writes exactly this (the lab, issue 36)
        assert note == '0/3 nodes are available: persistentvolumeclaim "late" not found. not found'
        time.sleep(0.5)
        assert "lonely" not in bound(api)
        api.put("persistentvolumes", volume("pv-late", storage_class_name="manual"))
        api.put("persistentvolumeclaims", claim("late", storage_class_name="manual"))
        wait_for(lambda: "lonely" in bound(api), seconds=30, what="the pod bound once its claim is")
        assert claim_doc(api, "late")["spec"]["volumeName"] == "pv-late"
    finally:
        scheduler.stop()


def test_a_second_read_write_once_pod_user_waits(api: FakeAPIServer, provisioner: Provisioner, tmp_path: Path) -> None:
    for i in range(3):
        api.put("nodes", node(f"n{i}"))
    api.put("storageclasses", storage_class("standard"))
    api.put("persistentvolumeclaims", claim("solo", access_modes=("ReadWriteOncePod",)))
    api.put("pods", using("first", "solo"))
    scheduler = Scheduler(config(tmp_path, api))
    try:
        wait_for(lambda: "first" in bound(api), seconds=30, what="the first user bound")
        api.put("pods", using("second", "solo"))
        note = wait_for(failed_note(api, "second"), seconds=30, what="the second user refused")
        assert note.startswith(
            "0/3 nodes are available: 3 node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod "
            "access mode already in-use by another pod."
        )
        assert "second" not in bound(api)
        api.delete("pods", "default/first")
        wait_for(lambda: "second" in bound(api), seconds=30, what="the second user bound once the first left")
    finally:
        scheduler.stop()


def test_a_node_at_its_csi_attach_limit_is_not_chosen(
    api: FakeAPIServer, provisioner: Provisioner, tmp_path: Path
) -> None:
    for i in range(2):
        api.put("nodes", node(f"n{i}"))
        api.put("csinodes", csi_node(f"n{i}", count=1))
    api.put("storageclasses", storage_class("standard"))
    for i in range(3):
        api.put("persistentvolumeclaims", claim(f"d{i}"))
    api.put("pods", using("p0", "d0"))
    scheduler = Scheduler(config(tmp_path, api))
    try:
        first = wait_for(lambda: bound(api).get("p0"), seconds=30, what="p0 bound")
        api.put("pods", using("p1", "d1"))
        second = wait_for(lambda: bound(api).get("p1"), seconds=30, what="p1 bound")
        assert second != first  # the first node is at its limit of one volume
        api.put("pods", using("p2", "d2"))
        note = wait_for(failed_note(api, "p2"), seconds=30, what="p2 refused")
        assert note.startswith("0/2 nodes are available: 2 node(s) exceed max volume count.")
        assert "p2" not in bound(api)
    finally:
        scheduler.stop()

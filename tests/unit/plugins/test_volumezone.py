"""VolumeZone, ported from kube-scheduler v1.36.3's
pkg/scheduler/framework/plugins/volumezone/volume_zone_test.go (``TestSingleZone``,
``TestMultiZone``, ``TestWithBinding``: the listers' objects, each row's pod and node, and the
PreFilter and Filter statuses; Filter is also run without PreFilter's state, upstream's fallback).

Adapted: upstream's fake StorageClass lister words its NotFound ``storageclasses.storage.k8s.io
"Class_0" not found``; the informer lister kube-scheduler runs says ``storageclass.storage.k8s.io``,
as the cluster state here does.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.framework import SKIP, SUCCESS, Code, CycleState, Handle, Status
from app.plugins.volumes.volume_zone import ERR_REASON_CONFLICT, PLUGIN, VolumeZone, label_zones_to_set
from tests.unit.plugins.storage import node_doc, node_info, pod_info, storage_cluster

Obj = dict[str, Any]
BETA_ZONE, BETA_REGION = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_CONFLICT,))


def pv(name: str, **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": labels}}


def pvc(name: str, volume: str = "", class_name: str | None = None) -> Obj:
    spec: Obj = {"volumeName": volume} if volume else {}
    if class_name is not None:
        spec["storageClassName"] = class_name
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


def pod_with_volume(claim: str | None) -> Obj:
    """``createPodWithVolume("pod_1", claim)`` (``None``: a pod without volume)."""
    volumes = [] if claim is None else [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]
    return {"metadata": {"name": "pod_1", "namespace": "default"}, "spec": {"volumes": volumes}}


SINGLE_PVS = [
    pv("Vol_1", **{BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", **{BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", **{BETA_REGION: "us-west1"}),
    pv("Vol_Stable_1", **{ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", **{REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_Stable_3", **{ZONE: "us-west1-a", REGION: "us-west1-a"}),
]
SINGLE_PVCS = [
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_2", "Vol_2"),
    pvc("PVC_3", "Vol_3"),
    pvc("PVC_4", "Vol_not_exist"),
    pvc("PVC_Stable_1", "Vol_Stable_1"),
    pvc("PVC_Stable_2", "Vol_Stable_2"),
    pvc("PVC_Stable_3", "Vol_Stable_3"),
]
# TestSingleZone: (name, claim, node labels, PreFilter status, Filter status)
SINGLE_ZONE: list[tuple[str, str | None, dict[str, str], Status, Status]] = [
    ("pod without volume", None, {BETA_ZONE: "us-west1-a"}, SKIP, SUCCESS),
    ("node without labels", "PVC_1", {}, SUCCESS, SUCCESS),
    ("beta zone label matched", "PVC_1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, SUCCESS, SUCCESS),
    ("beta region label matched", "PVC_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}, SUCCESS, SUCCESS),
    (
        "beta region label doesn't match",
        "PVC_2",
        {BETA_REGION: "no_us-west1", "uselessLabel": "none"},
        SUCCESS,
        CONFLICT,
    ),
    ("beta zone label doesn't match", "PVC_1", {BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"}, SUCCESS, CONFLICT),
    ("zone label matched", "PVC_Stable_1", {ZONE: "us-west1-a", "uselessLabel": "none"}, SUCCESS, SUCCESS),
    ("region label matched", "PVC_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}, SUCCESS, SUCCESS),
    ("region label doesn't match", "PVC_Stable_2", {REGION: "no_us-west1", "uselessLabel": "none"}, SUCCESS, CONFLICT),
    ("zone label doesn't match", "PVC_Stable_1", {ZONE: "no_us-west1-a", "uselessLabel": "none"}, SUCCESS, CONFLICT),
    ("pv with zone and region, node with only zone", "PVC_Stable_3", {ZONE: "us-west1-a"}, SUCCESS, CONFLICT),
    ("pv with zone,node with beta zone", "PVC_Stable_1", {BETA_ZONE: "us-west1-a"}, SUCCESS, CONFLICT),
    ("pv with beta label,node with ga label, matched", "PVC_1", {ZONE: "us-west1-a"}, SUCCESS, SUCCESS),
    ("pv with beta label,node with ga label, don't match", "PVC_1", {ZONE: "us-west1-b"}, SUCCESS, CONFLICT),
]

MULTI_PVS = [
    pv("Vol_1", **{BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", **{BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", **{BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", **{ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", **{ZONE: "us-west1-c__us-west1-a"}),
]
MULTI_PVCS = [
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_2", "Vol_2"),
    pvc("PVC_3", "Vol_3"),
    pvc("PVC_4", "Vol_not_exist"),
    pvc("PVC_Stable_1", "Vol_Stable_1"),
    pvc("PVC_Stable_2", "Vol_Stable_2"),
]
MULTI_ZONE: list[tuple[str, str | None, dict[str, str], Status, Status]] = [
    ("node without labels", "PVC_3", {}, SUCCESS, SUCCESS),
    ("beta zone label matched", "PVC_3", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, SUCCESS, SUCCESS),
    ("beta zone label doesn't match", "PVC_1", {BETA_ZONE: "us-west1-b", "uselessLabel": "none"}, SUCCESS, CONFLICT),
    ("zone label matched", "PVC_Stable_2", {ZONE: "us-west1-a", "uselessLabel": "none"}, SUCCESS, SUCCESS),
    ("zone label doesn't match", "PVC_Stable_1", {ZONE: "us-west1-b", "uselessLabel": "none"}, SUCCESS, CONFLICT),
]

WITH_BINDING_CLASSES = [
    {"metadata": {"name": "Class_Immediate"}},  # no volumeBindingMode (as the test's object)
    {"metadata": {"name": "Class_Wait"}, "volumeBindingMode": "WaitForFirstConsumer"},
]
WITH_BINDING_PVCS = [
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_NoSC", class_name="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", class_name="Class_Wait"),
    pvc("PVC_ImmediateSC", class_name="Class_Immediate"),
]


def _unresolvable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))


WITH_BINDING: list[tuple[str, str | None, dict[str, str], Status, Status]] = [
    ("label zone failure domain matched", "PVC_1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, SUCCESS, SUCCESS),
    (
        "unbound volume empty storage class",
        "PVC_EmptySC",
        {BETA_ZONE: "us-west1-a", "uselessLabel": "none"},
        _unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),
        _unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),
    ),
    (
        "unbound volume no storage class",
        "PVC_NoSC",
        {BETA_ZONE: "us-west1-a", "uselessLabel": "none"},
        _unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
        _unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
    ),
    (
        "unbound volume immediate binding mode",
        "PVC_ImmediateSC",
        {BETA_ZONE: "us-west1-a", "uselessLabel": "none"},
        _unresolvable('VolumeBindingMode not set for StorageClass "Class_Immediate"'),
        _unresolvable('VolumeBindingMode not set for StorageClass "Class_Immediate"'),
    ),
    (
        "unbound volume wait binding mode",
        "PVC_WaitSC",
        {BETA_ZONE: "us-west1-a", "uselessLabel": "none"},
        SKIP,
        SUCCESS,
    ),
]


def _run(
    pvs: list[Obj],
    pvcs: list[Obj],
    classes: list[Obj],
    claim: str | None,
    labels: dict[str, str],
    want_pre: Status,
    want: Status,
) -> None:
    cluster = storage_cluster([], [], persistentvolumes=pvs, persistentvolumeclaims=pvcs, storageclasses=classes)
    plugin = VolumeZone(None, Handle("p", cluster=cluster))
    pod, node, state = pod_info(pod_with_volume(claim)), node_info(node_doc("host1", **labels)), CycleState()
    assert plugin.pre_filter(state, pod, [node]) == (None, want_pre)
    assert plugin.filter(state, pod, node) == want
    assert plugin.filter(CycleState(), pod, node) == want  # without PreFilter: the fallback


@pytest.mark.parametrize(("name", "claim", "labels", "pre", "want"), SINGLE_ZONE, ids=[c[0] for c in SINGLE_ZONE])
def test_single_zone(name: str, claim: str | None, labels: dict[str, str], pre: Status, want: Status) -> None:
    _run(SINGLE_PVS, SINGLE_PVCS, [], claim, labels, pre, want)


@pytest.mark.parametrize(("name", "claim", "labels", "pre", "want"), MULTI_ZONE, ids=[c[0] for c in MULTI_ZONE])
def test_multi_zone(name: str, claim: str | None, labels: dict[str, str], pre: Status, want: Status) -> None:
    _run(MULTI_PVS, MULTI_PVCS, [], claim, labels, pre, want)


@pytest.mark.parametrize(("name", "claim", "labels", "pre", "want"), WITH_BINDING, ids=[c[0] for c in WITH_BINDING])
def test_with_binding(name: str, claim: str | None, labels: dict[str, str], pre: Status, want: Status) -> None:
    _run([pv("Vol_1", **{BETA_ZONE: "us-west1-a"})], WITH_BINDING_PVCS, WITH_BINDING_CLASSES, claim, labels, pre, want)


def test_a_missing_claim_or_volume_is_the_listers_not_found() -> None:
    _run(
        SINGLE_PVS,
        SINGLE_PVCS,
        [],
        "PVC_4",
        {ZONE: "a"},
        _unresolvable('persistentvolume "Vol_not_exist" not found'),
        _unresolvable('persistentvolume "Vol_not_exist" not found'),
    )
    _run(
        SINGLE_PVS,
        SINGLE_PVCS,
        [],
        "nope",
        {ZONE: "a"},
        _unresolvable('persistentvolumeclaim "nope" not found'),
        _unresolvable('persistentvolumeclaim "nope" not found'),
    )


def test_label_zones_to_set() -> None:
    """``volumehelpers.LabelZonesToSet``: ``__``-separated, trimmed; an empty zone is an error
    (the label is then ignored)."""
    assert label_zones_to_set("a__b") == {"a", "b"}
    assert label_zones_to_set(" a ") == {"a"}
    assert label_zones_to_set("a____b") is None
    _run([pv("V", **{ZONE: "a____b"})], [pvc("C", "V")], [], "C", {ZONE: "x"}, SKIP, SUCCESS)


def test_registration() -> None:
    assert PLUGIN.needs(None, 5.0).volumes  # type: ignore[misc]

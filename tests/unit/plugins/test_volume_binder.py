"""VolumeBinding's binder, ported from kube-scheduler v1.36.3's
pkg/scheduler/framework/plugins/volumebinding/binder_test.go: the table tests'
inputs and expected results (``TestFindPodVolumesWithoutProvisioning``,
``TestFindPodVolumesWithProvisioning``, ``TestFindPodVolumesWithCSIMigration``,
``TestAssumePodVolumes``, ``TestRevertAssumedPodVolumes``, ``TestBindAPIUpdate``,
``TestCheckBindings``, ``TestCheckBindingsWithCSIMigration``, ``TestBindPodVolumes``,
``TestFindAssumeVolumes``, ``TestCapacity``), not the Go harness: the fake clientset and its
volume reactor are the :class:`~tests.support.cluster.MemoryCluster`'s watched storage objects
and its ``update_volume`` (the API's ``resourceVersion`` precondition; an "API update" of the
test stores the object with the next version, as the reactor does).

Adapted: v1.30 and v1.36.3 always check capacity (``CSIStorageCapacity`` GA), so the ``without
CSIStorageCapacity`` variants are gone; ``TestBindPodVolumes``' 5-second delays are 0.2 s with a
1 s ``bindTimeout``.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import msgspec
import pytest

from app.framework import PodInfo
from app.framework.volumes import CSIDriver, PersistentVolume, PersistentVolumeClaim
from app.plugins.volumes.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    BinderError,
    BindingInfo,
    DynamicProvision,
    PodVolumes,
    VolumeBinder,
    node_has_access,
)
from tests.support.cluster import MemoryCluster
from tests.unit.plugins.storage import (
    BINDER_CLASSES,
    IMMEDIATE_CLASS,
    NODE_LABEL_KEY,
    NODE_LABEL_VALUE,
    PROVISIONER,
    PVC_BOUND,
    PVC_PREBOUND,
    PVC_SELECTED_NODE,
    PVC_UNBOUND,
    TOPO_MISMATCH_CLASS,
    WAIT_CLASS,
    WAIT_CLASS_WITH_PROVISIONER,
    make_pod,
    make_test_pv,
    make_test_pvc,
    node_doc,
    node_info,
    pod_info,
    storage_cluster,
    with_annotations,
    with_version,
)

Obj = dict[str, Any]

# -- binder_test.go's objects ---------------------------------------------------------------------

unbound_pvc = make_test_pvc("unbound-pvc", "1G", "", PVC_UNBOUND, "", "1", WAIT_CLASS)
unbound_pvc2 = make_test_pvc("unbound-pvc2", "5G", "", PVC_UNBOUND, "", "1", WAIT_CLASS)
prebound_pvc = make_test_pvc("prebound-pvc", "1G", "", PVC_PREBOUND, "pv-node1a", "1", WAIT_CLASS)
prebound_pvc_node1a = make_test_pvc("unbound-pvc", "1G", "", PVC_PREBOUND, "pv-node1a", "1", WAIT_CLASS)
bound_pvc = make_test_pvc("bound-pvc", "1G", "", PVC_BOUND, "pv-bound", "1", WAIT_CLASS)
bound_pvc_node1a = make_test_pvc("unbound-pvc", "1G", "", PVC_BOUND, "pv-node1a", "1", WAIT_CLASS)
immediate_unbound_pvc = make_test_pvc("immediate-unbound-pvc", "1G", "", PVC_UNBOUND, "", "1", IMMEDIATE_CLASS)
immediate_bound_pvc = make_test_pvc(
    "immediate-bound-pvc", "1G", "", PVC_BOUND, "pv-bound-immediate", "1", IMMEDIATE_CLASS
)
provisioned_pvc = make_test_pvc("provisioned-pvc", "1Gi", "", PVC_UNBOUND, "", "1", WAIT_CLASS_WITH_PROVISIONER)
provisioned_pvc2 = make_test_pvc("provisioned-pvc2", "1Gi", "", PVC_UNBOUND, "", "1", WAIT_CLASS_WITH_PROVISIONER)
provisioned_pvc_higher_version = make_test_pvc(
    "provisioned-pvc2", "1Gi", "", PVC_UNBOUND, "", "2", WAIT_CLASS_WITH_PROVISIONER
)
provisioned_pvc_bound = make_test_pvc(
    "provisioned-pvc", "1Gi", "", PVC_BOUND, "pv-bound", "1", WAIT_CLASS_WITH_PROVISIONER
)
no_provisioner_pvc = make_test_pvc("no-provisioner-pvc", "1Gi", "", PVC_UNBOUND, "", "1", WAIT_CLASS)
topo_mismatch_pvc = make_test_pvc("topo-mismatch-pvc", "1Gi", "", PVC_UNBOUND, "", "1", TOPO_MISMATCH_CLASS)
selected_node_pvc = make_test_pvc(
    "provisioned-pvc", "1Gi", NODE_LABEL_VALUE, PVC_SELECTED_NODE, "", "1", WAIT_CLASS_WITH_PROVISIONER
)
bound_migration_pvc = make_test_pvc("pvc-migration-bound", "1G", "", PVC_BOUND, "pv-migration-bound", "1", WAIT_CLASS)
prov_migration_pvc_bound = make_test_pvc(
    "pvc-migration-provisioned", "1Gi", "", PVC_BOUND, "pv-migration-bound", "1", WAIT_CLASS_WITH_PROVISIONER
)

pv_node1a = make_test_pv("pv-node1a", "node1", "5G", "1", None, WAIT_CLASS)
pv_node1b = make_test_pv("pv-node1b", "node1", "10G", "1", None, WAIT_CLASS)
pv_node1c = make_test_pv("pv-node1b", "node1", "5G", "1", None, WAIT_CLASS)
pv_node2 = make_test_pv("pv-node2", "node2", "1G", "1", None, WAIT_CLASS)
pv_bound = make_test_pv("pv-bound", "node1", "1G", "1", bound_pvc, WAIT_CLASS)
pv_node1a_bound = make_test_pv("pv-node1a", "node1", "5G", "1", unbound_pvc, WAIT_CLASS)
pv_node1b_bound = make_test_pv("pv-node1b", "node1", "10G", "1", unbound_pvc2, WAIT_CLASS)
pv_node1b_bound_higher_version = make_test_pv("pv-node1b", "node1", "10G", "2", unbound_pvc2, WAIT_CLASS)
pv_bound_immediate = make_test_pv("pv-bound-immediate", "node1", "1G", "1", immediate_bound_pvc, IMMEDIATE_CLASS)
pv_bound_immediate_node2 = make_test_pv("pv-bound-immediate", "node2", "1G", "1", immediate_bound_pvc, IMMEDIATE_CLASS)

ZONE1_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": "us-east-1",
    "failure-domain.beta.kubernetes.io/region": "us-east-1a",
}


def make_test_pv_for_csi_migration(labels: dict[str, str], pvc: Obj, migration_enabled: bool = True) -> Obj:
    """``makeTestPVForCSIMigration``: a GCE PD volume (migrated), else an RBD one (never migrated),
    its node affinity left to the translation."""
    pv = make_test_pv("pv-migration-bound", "node1", "1G", "1", pvc, WAIT_CLASS)
    del pv["spec"]["nodeAffinity"]
    pv["metadata"]["labels"] = labels
    if migration_enabled:
        pv["spec"]["gcePersistentDisk"] = {"pdName": "test-disk", "fsType": "ext4", "partition": 0, "readOnly": False}
    else:
        pv["spec"]["rbd"] = {"image": "test-disk"}
    return pv


migration_pv_bound = make_test_pv_for_csi_migration(ZONE1_LABELS, bound_migration_pvc)
migration_pv_bound_to_unbound = make_test_pv_for_csi_migration(ZONE1_LABELS, unbound_pvc)
nonmigration_pv_bound_to_unbound = make_test_pv_for_csi_migration(ZONE1_LABELS, unbound_pvc, False)


def generic_ephemeral_pvc(owned: bool) -> Obj:
    """``makeGenericEphemeralPVC("test-volume", owned)``."""
    pvc = make_test_pvc("test-pod-test-volume", "1G", "", PVC_BOUND, "pv-bound", "1", IMMEDIATE_CLASS)
    if owned:
        pvc["metadata"]["ownerReferences"] = [{"name": "test-pod", "uid": "uid-test-pod", "controller": True}]
    return pvc


conflicting_generic_pvc = generic_ephemeral_pvc(False)
correct_generic_pvc = generic_ephemeral_pvc(True)
pv_bound_generic = make_test_pv("pv-bound", "node1", "1G", "1", correct_generic_pvc, WAIT_CLASS)

NODE1 = node_doc("node1", nodeKey="node1")
NODE2 = node_doc("node2", nodeKey="node2")
NODE1_NO_LABELS = node_doc("node1")
NODE1_ZONE1 = node_doc("node1", **{"topology.gke.io/zone": "us-east-1"})
NODE1_ZONE2 = node_doc("node1", **{"topology.gke.io/zone": "us-east-2"})


def csi_node(name: str, migrated: str) -> Obj:
    """``makeCSINode``."""
    return {"metadata": {"name": name, "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": migrated}}}


CSI_NODE1_MIGRATED = csi_node("node1", "kubernetes.io/gce-pd")
CSI_NODE1_NOT_MIGRATED = csi_node("node1", "")


def csi_driver(name: str, storage_capacity: bool) -> Obj:
    return {"metadata": {"name": name}, "spec": {"storageCapacity": storage_capacity}}


def ephemeral_pod(volume: str) -> Obj:
    """``makePod("test-pod")...withGenericEphemeralVolume(volume)``."""
    doc = make_pod()
    doc["spec"]["volumes"] = [{"name": volume, "ephemeral": {"volumeClaimTemplate": {}}}]
    return doc


def pvc_obj(doc: Obj) -> PersistentVolumeClaim:
    return msgspec.convert(doc, PersistentVolumeClaim)


def pv_obj(doc: Obj) -> PersistentVolume:
    return msgspec.convert(doc, PersistentVolume)


def binding(pvc: Obj, pv: Obj) -> BindingInfo:
    """``makeBinding``."""
    return BindingInfo(pvc_obj(pvc), pv_obj(pv))


class Env:
    """``newTestBinder`` with its StorageClasses, and the objects a case starts with."""

    def __init__(
        self,
        pvs: list[Obj] = (),  # type: ignore[assignment]
        pvcs: list[Obj] = (),  # type: ignore[assignment]
        nodes: list[Obj] = (),  # type: ignore[assignment]
        csi_nodes: list[Obj] = (),  # type: ignore[assignment]
        drivers: list[Obj] = (),  # type: ignore[assignment]
        capacities: list[Obj] = (),  # type: ignore[assignment]
        pods: list[Obj] = (),  # type: ignore[assignment]
        bind_timeout: float = 10.0,
    ) -> None:
        self.cluster: MemoryCluster = storage_cluster(
            nodes,
            pods,
            persistentvolumes=list(pvs),
            persistentvolumeclaims=list(pvcs),
            storageclasses=BINDER_CLASSES,
            csinodes=list(csi_nodes),
            csidrivers=list(drivers),
            csistoragecapacities=list(capacities),
        )
        assert self.cluster.volumes is not None
        self.volumes = self.cluster.volumes
        self.binder = VolumeBinder(self.volumes, bind_timeout)

    def api_update(self, kind: str, doc: Obj) -> None:
        """An update through the API: stored with the next ``resourceVersion`` (the reactor's)."""
        key = doc["metadata"]["name"]
        current = (
            self.volumes.claim(doc["metadata"]["namespace"], key)
            if kind == "persistentvolumeclaims"
            else self.volumes.volume(key)
        )
        version = int(current.meta.resource_version or "0") + 1 if current is not None else 1
        obj = msgspec.convert(
            with_version(doc, str(version)),
            PersistentVolumeClaim if kind == "persistentvolumeclaims" else PersistentVolume,
        )
        self.volumes.apply(kind, "MODIFIED", obj)

    def delete(self, kind: str, doc: Obj) -> None:
        obj = msgspec.convert(doc, PersistentVolumeClaim if kind == "persistentvolumeclaims" else PersistentVolume)
        self.volumes.apply(kind, "DELETED", obj)

    def assume(self, bindings: list[BindingInfo] | None, claims: list[PersistentVolumeClaim] | None) -> None:
        """``assumeVolumes``."""
        for b in bindings or ():
            self.binder.pv_cache.assume(b.pv.name, b.pv, self.volumes.volume(b.pv.name))
        for c in claims or ():
            self.binder.pvc_cache.assume(c.key(), c, self.volumes.claim(c.namespace, c.name))


def find_pod_volumes(binder: VolumeBinder, pod: PodInfo, node: Obj) -> tuple[PodVolumes, list[str]]:
    """upstream's ``findPodVolumes``: claims, immediate ones refused, then ``FindPodVolumes``."""
    claims = binder.get_pod_volume_claims(pod)
    if claims.unbound_claims_immediate:
        raise BinderError("pod has unbound immediate PersistentVolumeClaims")
    return binder.find_pod_volumes(pod, claims, node_info(node))


def pod_volumes(bindings: list[BindingInfo] | None, claims: list[PersistentVolumeClaim] | None) -> PodVolumes:
    """``PodVolumes`` of static bindings and claims to provision (``DynamicProvision`` without a
    node capacity, as the tests' ``podVolumes`` have them)."""
    return PodVolumes(bindings, None if claims is None else [DynamicProvision(c) for c in claims])


def names(volumes: PodVolumes | None) -> tuple[list[tuple[str, str]] | None, list[str] | None]:
    if volumes is None:
        return None, None
    static = None if volumes.static_bindings is None else [(b.pvc.name, b.pv.name) for b in volumes.static_bindings]
    dynamic = None if volumes.dynamic_provisions is None else [c.pvc.name for c in volumes.dynamic_provisions]
    return static, dynamic


# -- TestFindPodVolumesWithoutProvisioning ---------------------------------------------------------

# (name, pvs, pod claims, cache claims or None, pod or None, expected bindings, reasons, should fail)
WITHOUT_PROVISIONING: list[
    tuple[str, list[Obj], list[Obj], list[Obj] | None, Obj | None, list[tuple[str, str]] | None, list[str], bool]
] = [
    ("no-volumes", [], [], None, make_pod(), None, [], False),
    ("no-pvcs", [], [], None, make_pod(volumes=[{"name": "e", "emptyDir": {}}]), None, [], False),
    ("pvc-not-found", [], [bound_pvc], [], None, None, [], True),
    ("bound-pvc", [pv_bound], [bound_pvc], None, None, None, [], False),
    ("bound-pvc,pv-not-exists", [], [bound_pvc], None, None, None, [ERR_REASON_PV_NOT_EXIST], False),
    ("prebound-pvc", [pv_node1a_bound], [prebound_pvc], None, None, None, [], True),
    (
        "unbound-pvc,pv-same-node",
        [pv_node2, pv_node1a, pv_node1b],
        [unbound_pvc],
        None,
        None,
        [("unbound-pvc", "pv-node1a")],
        [],
        False,
    ),
    ("unbound-pvc,pv-different-node", [pv_node2], [unbound_pvc], None, None, None, [ERR_REASON_BIND_CONFLICT], False),
    (
        "two-unbound-pvcs",
        [pv_node1a, pv_node1b],
        [unbound_pvc, unbound_pvc2],
        None,
        None,
        [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")],
        [],
        False,
    ),
    (
        "two-unbound-pvcs,order-by-size",
        [pv_node1a, pv_node1b],
        [unbound_pvc2, unbound_pvc],
        None,
        None,
        [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")],
        [],
        False,
    ),
    (
        "two-unbound-pvcs,partial-match",
        [pv_node1a],
        [unbound_pvc, unbound_pvc2],
        None,
        None,
        [("unbound-pvc", "pv-node1a")],
        [ERR_REASON_BIND_CONFLICT],
        False,
    ),
    (
        "one-bound,one-unbound",
        [pv_bound, pv_node1a],
        [unbound_pvc, bound_pvc],
        None,
        None,
        [("unbound-pvc", "pv-node1a")],
        [],
        False,
    ),
    (
        "one-bound,one-unbound,no-match",
        [pv_bound, pv_node2],
        [unbound_pvc, bound_pvc],
        None,
        None,
        None,
        [ERR_REASON_BIND_CONFLICT],
        False,
    ),
    ("one-prebound,one-unbound", [pv_node1a, pv_node1b], [unbound_pvc, prebound_pvc], None, None, None, [], True),
    ("immediate-bound-pvc", [pv_bound_immediate], [immediate_bound_pvc], None, None, None, [], False),
    (
        "immediate-bound-pvc-wrong-node",
        [pv_bound_immediate_node2],
        [immediate_bound_pvc],
        None,
        None,
        None,
        [ERR_REASON_NODE_CONFLICT],
        False,
    ),
    ("immediate-unbound-pvc", [], [immediate_unbound_pvc], None, None, None, [], True),
    (
        "immediate-unbound-pvc,delayed-mode-bound",
        [pv_bound],
        [immediate_unbound_pvc, bound_pvc],
        None,
        None,
        None,
        [],
        True,
    ),
    (
        "immediate-unbound-pvc,delayed-mode-unbound",
        [],
        [immediate_unbound_pvc, unbound_pvc],
        None,
        None,
        None,
        [],
        True,
    ),
    ("generic-ephemeral,no-pvc", [], [], None, ephemeral_pod("no-such-pvc"), None, [], True),
    (
        "generic-ephemeral,with-pvc",
        [pv_bound_generic],
        [],
        [correct_generic_pvc],
        ephemeral_pod("test-volume"),
        None,
        [],
        False,
    ),
    (
        "generic-ephemeral,wrong-pvc",
        [pv_bound_generic],
        [],
        [conflicting_generic_pvc],
        ephemeral_pod("test-volume"),
        None,
        [],
        True,
    ),
]

DRIVERS = {
    "no CSIDriver": None,
    "CSIDriver with capacity tracking": csi_driver(PROVISIONER, True),
    "CSIDriver without capacity tracking": csi_driver(PROVISIONER, False),
}


@pytest.mark.parametrize("driver", DRIVERS.values(), ids=list(DRIVERS))
@pytest.mark.parametrize(
    ("name", "pvs", "pod_pvcs", "cache_pvcs", "pod", "expected", "reasons", "should_fail"),
    WITHOUT_PROVISIONING,
    ids=[c[0] for c in WITHOUT_PROVISIONING],
)
def test_find_pod_volumes_without_provisioning(
    name: str,
    pvs: list[Obj],
    pod_pvcs: list[Obj],
    cache_pvcs: list[Obj] | None,
    pod: Obj | None,
    expected: list[tuple[str, str]] | None,
    reasons: list[str],
    should_fail: bool,
    driver: Obj | None,
) -> None:
    env = Env(pvs=pvs, pvcs=pod_pvcs if cache_pvcs is None else cache_pvcs, drivers=[driver] if driver else [])
    info = pod_info(pod if pod is not None else make_pod(*pod_pvcs))
    try:
        volumes, got = find_pod_volumes(env.binder, info, NODE1)
    except BinderError:
        assert should_fail
        return
    assert not should_fail, "returned success but expected error"
    assert sorted(got) == sorted(reasons)
    assert names(volumes) == (expected, None)


# -- TestFindPodVolumesWithProvisioning -------------------------------------------------------------

# (name, pvs, pod claims, expected bindings, expected provisions, reasons, should fail, needs capacity)
WITH_PROVISIONING: list[
    tuple[str, list[Obj], list[Obj], list[tuple[str, str]] | None, list[str] | None, list[str], bool, bool]
] = [
    ("one-provisioned", [], [provisioned_pvc], None, ["provisioned-pvc"], [], False, True),
    (
        "two-unbound-pvcs,one-matched,one-provisioned",
        [pv_node1a],
        [unbound_pvc, provisioned_pvc],
        [("unbound-pvc", "pv-node1a")],
        ["provisioned-pvc"],
        [],
        False,
        True,
    ),
    ("one-bound,one-provisioned", [pv_bound], [bound_pvc, provisioned_pvc], None, ["provisioned-pvc"], [], False, True),
    (
        "one-binding,one-selected-node",
        [pv_bound],
        [bound_pvc, selected_node_pvc],
        None,
        ["provisioned-pvc"],
        [],
        False,
        True,
    ),
    ("immediate-unbound-pvc", [], [immediate_unbound_pvc], None, None, [], True, False),
    (
        "one-immediate-bound,one-provisioned",
        [pv_bound_immediate],
        [immediate_bound_pvc, provisioned_pvc],
        None,
        ["provisioned-pvc"],
        [],
        False,
        True,
    ),
    ("invalid-provisioner", [], [no_provisioner_pvc], None, None, [ERR_REASON_BIND_CONFLICT], False, False),
    ("volume-topology-unsatisfied", [], [topo_mismatch_pvc], None, None, [ERR_REASON_BIND_CONFLICT], False, False),
]


@pytest.mark.parametrize("driver_name", list(DRIVERS))
@pytest.mark.parametrize(
    ("name", "pvs", "pod_pvcs", "bindings", "provisions", "reasons", "should_fail", "needs_capacity"),
    WITH_PROVISIONING,
    ids=[c[0] for c in WITH_PROVISIONING],
)
def test_find_pod_volumes_with_provisioning(
    name: str,
    pvs: list[Obj],
    pod_pvcs: list[Obj],
    bindings: list[tuple[str, str]] | None,
    provisions: list[str] | None,
    reasons: list[str],
    should_fail: bool,
    needs_capacity: bool,
    driver_name: str,
) -> None:
    driver = DRIVERS[driver_name]
    env = Env(pvs=pvs, pvcs=pod_pvcs, drivers=[driver] if driver else [])
    try:
        volumes, got = find_pod_volumes(env.binder, pod_info(make_pod(*pod_pvcs)), NODE1)
    except BinderError:
        assert should_fail
        return
    assert not should_fail
    if needs_capacity and driver is not None and driver["spec"]["storageCapacity"]:
        reasons, provisions = [*reasons, ERR_REASON_NOT_ENOUGH_SPACE], None  # no CSIStorageCapacity: blocked
    assert sorted(got) == sorted(reasons)
    assert names(volumes) == (bindings, provisions)


# -- TestFindPodVolumesWithCSIMigration ------------------------------------------------------------

MIGRATION_FIND = [
    # (name, pvs, pod claims, node, csi nodes, reasons)
    ("pvc-bound", [migration_pv_bound], [bound_migration_pvc], NODE1_ZONE1, [CSI_NODE1_MIGRATED], []),
    (
        "pvc-bound,csinode-not-migrated",
        [migration_pv_bound],
        [bound_migration_pvc],
        NODE1_ZONE1,
        [CSI_NODE1_NOT_MIGRATED],
        [],
    ),
    ("pvc-bound,missing-csinode", [migration_pv_bound], [bound_migration_pvc], NODE1_ZONE1, [], []),
    (
        "pvc-bound,node-different-zone",
        [migration_pv_bound],
        [bound_migration_pvc],
        NODE1_ZONE2,
        [CSI_NODE1_MIGRATED],
        [ERR_REASON_NODE_CONFLICT],
    ),
]


@pytest.mark.parametrize(
    ("name", "pvs", "pvcs", "node", "csi_nodes", "reasons"), MIGRATION_FIND, ids=[c[0] for c in MIGRATION_FIND]
)
def test_find_pod_volumes_with_csi_migration(
    name: str, pvs: list[Obj], pvcs: list[Obj], node: Obj, csi_nodes: list[Obj], reasons: list[str]
) -> None:
    env = Env(pvs=pvs, pvcs=pvcs, nodes=[node], csi_nodes=csi_nodes)
    _, got = find_pod_volumes(env.binder, pod_info(make_pod(*pvcs)), node)
    assert got == reasons


# -- TestAssumePodVolumes / TestRevertAssumedPodVolumes ----------------------------------------------

ASSUME = [
    # (name, pod claims, pvs, bindings, provisioned, should fail, all bound, expected bindings, expected provisionings)
    ("all-bound", [bound_pvc], [pv_bound], [], [], False, True, None, None),
    (
        "one-binding",
        [unbound_pvc],
        [pv_node1a],
        [(unbound_pvc, pv_node1a)],
        [],
        False,
        False,
        [(unbound_pvc, pv_node1a_bound)],
        [],
    ),
    (
        "two-bindings",
        [unbound_pvc, unbound_pvc2],
        [pv_node1a, pv_node1b],
        [(unbound_pvc, pv_node1a), (unbound_pvc2, pv_node1b)],
        [],
        False,
        False,
        [(unbound_pvc, pv_node1a_bound), (unbound_pvc2, pv_node1b_bound)],
        [],
    ),
    (
        "pv-already-bound",
        [unbound_pvc],
        [pv_node1a_bound],
        [(unbound_pvc, pv_node1a_bound)],
        [],
        False,
        False,
        [(unbound_pvc, pv_node1a_bound)],
        [],
    ),
    (
        "tmpupdate-failed",
        [unbound_pvc],
        [pv_node1a],
        [(unbound_pvc, pv_node1a), (unbound_pvc2, pv_node1b)],
        [],
        True,
        False,
        None,
        None,
    ),
    (
        "one-binding, one-pvc-provisioned",
        [unbound_pvc, provisioned_pvc],
        [pv_node1a],
        [(unbound_pvc, pv_node1a)],
        [provisioned_pvc],
        False,
        False,
        [(unbound_pvc, pv_node1a_bound)],
        [selected_node_pvc],
    ),
    (
        "one-binding, one-provision-tmpupdate-failed",
        [unbound_pvc, provisioned_pvc_higher_version],
        [pv_node1a],
        [(unbound_pvc, pv_node1a)],
        [provisioned_pvc2],
        True,
        False,
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    (
        "name",
        "pod_pvcs",
        "pvs",
        "bindings",
        "provisioned",
        "should_fail",
        "all_bound",
        "want_bindings",
        "want_provisions",
    ),
    ASSUME,
    ids=[c[0] for c in ASSUME],
)
def test_assume_pod_volumes(
    name: str,
    pod_pvcs: list[Obj],
    pvs: list[Obj],
    bindings: list[tuple[Obj, Obj]],
    provisioned: list[Obj],
    should_fail: bool,
    all_bound: bool,
    want_bindings: list[tuple[Obj, Obj]] | None,
    want_provisions: list[Obj] | None,
) -> None:
    env = Env(pvs=pvs, pvcs=pod_pvcs)
    volumes = pod_volumes([binding(c, v) for c, v in bindings], [pvc_obj(p) for p in provisioned])
    pod = pod_info(make_pod(*pod_pvcs))
    try:
        got = env.binder.assume_pod_volumes(pod, "node1", volumes)
    except BinderError:
        assert should_fail
        # validateCacheRestored: nothing stays assumed
        assert env.binder.pv_cache.assumed_keys() == [] and env.binder.pvc_cache.assumed_keys() == []
        return
    assert not should_fail
    assert got is all_bound
    if want_bindings is None:
        return
    for (claim, pv), b in zip(want_bindings, volumes.static_bindings or [], strict=True):
        cached = env.binder.get_pv(pv["metadata"]["name"])  # validateAssume
        assert cached is not None and cached.specs.claim_ref is not None
        assert (cached.specs.claim_ref.name, cached.specs.claim_ref.namespace) == (claim["metadata"]["name"], "testns")
        assert b.pv.specs.claim_ref == pv_obj(pv).specs.claim_ref
        assert (b.pv.meta.annotations or {}).get("pv.kubernetes.io/bound-by-controller") == "yes"
    assert [c.pvc.name for c in volumes.dynamic_provisions or []] == [
        p["metadata"]["name"] for p in want_provisions or []
    ]
    for claim in volumes.dynamic_provisions or []:
        cached_claim = env.binder.get_pvc("testns", claim.pvc.name)
        assert cached_claim is not None
        assert (cached_claim.meta.annotations or {})["volume.kubernetes.io/selected-node"] == NODE_LABEL_VALUE


def test_revert_assumed_pod_volumes() -> None:
    env = Env(pvs=[pv_node1a], pvcs=[unbound_pvc, provisioned_pvc])
    volumes = pod_volumes([binding(unbound_pvc, pv_node1a)], [pvc_obj(provisioned_pvc)])
    pod = pod_info(make_pod(unbound_pvc, provisioned_pvc))
    assert env.binder.assume_pod_volumes(pod, "node1", volumes) is False
    assert env.binder.get_pv("pv-node1a").specs.claim_ref is not None  # type: ignore[union-attr]
    env.binder.revert_assumed_pod_volumes(volumes)
    assert env.binder.get_pv("pv-node1a") is env.volumes.volume("pv-node1a")  # validateCacheRestored
    restored = env.binder.get_pvc("testns", "provisioned-pvc")
    assert "volume.kubernetes.io/selected-node" not in (restored.meta.annotations or {})  # type: ignore[union-attr]


# -- TestBindAPIUpdate ------------------------------------------------------------------------------

BIND_API_UPDATE: list[dict[str, Any]] = [
    {"name": "nothing-to-bind-nil", "should_fail": True},
    {"name": "nothing-to-bind-bindings-nil", "provisioned": [], "should_fail": True},
    {"name": "nothing-to-bind-provisionings-nil", "bindings": [], "should_fail": True},
    {"name": "nothing-to-bind-empty", "bindings": [], "provisioned": []},
    {
        "name": "one-binding",
        "bindings": [(unbound_pvc, pv_node1a_bound)],
        "cached_pvs": [pv_node1a],
        "expected_pvs": [pv_node1a_bound],
        "provisioned": [],
    },
    {
        "name": "two-bindings",
        "bindings": [(unbound_pvc, pv_node1a_bound), (unbound_pvc2, pv_node1b_bound)],
        "cached_pvs": [pv_node1a, pv_node1b],
        "expected_pvs": [pv_node1a_bound, pv_node1b_bound],
        "provisioned": [],
    },
    {
        "name": "api-already-updated",
        "bindings": [(unbound_pvc, pv_node1a_bound)],
        "cached_pvs": [pv_node1a_bound],
        "expected_pvs": [pv_node1a_bound],
        "provisioned": [],
    },
    {
        "name": "api-update-failed",
        "bindings": [(unbound_pvc, pv_node1a_bound), (unbound_pvc2, pv_node1b_bound)],
        "cached_pvs": [pv_node1a, pv_node1b],
        "api_pvs": [pv_node1a, pv_node1b_bound_higher_version],
        "expected_pvs": [pv_node1a_bound, pv_node1b],
        "expected_api_pvs": [pv_node1a_bound, pv_node1b_bound_higher_version],
        "provisioned": [],
        "should_fail": True,
    },
    {
        "name": "one-provisioned-pvc",
        "bindings": [],
        "provisioned": [with_annotations(provisioned_pvc, **{"volume.kubernetes.io/selected-node": NODE_LABEL_VALUE})],
        "cached_pvcs": [provisioned_pvc],
        "expected_pvcs": [
            with_annotations(provisioned_pvc, **{"volume.kubernetes.io/selected-node": NODE_LABEL_VALUE})
        ],
    },
    {
        "name": "provision-api-update-failed",
        "bindings": [],
        "provisioned": [
            with_annotations(provisioned_pvc, **{"volume.kubernetes.io/selected-node": NODE_LABEL_VALUE}),
            with_annotations(provisioned_pvc2, **{"volume.kubernetes.io/selected-node": NODE_LABEL_VALUE}),
        ],
        "cached_pvcs": [provisioned_pvc, provisioned_pvc2],
        "api_pvcs": [provisioned_pvc, provisioned_pvc_higher_version],
        "expected_pvcs": [
            with_annotations(provisioned_pvc, **{"volume.kubernetes.io/selected-node": NODE_LABEL_VALUE}),
            provisioned_pvc2,
        ],
        "should_fail": True,
    },
    {
        "name": "binding-succeed, provision-api-update-failed",
        "bindings": [(unbound_pvc, pv_node1a_bound)],
        "cached_pvs": [pv_node1a],
        "expected_pvs": [pv_node1a_bound],
        "provisioned": [
            with_annotations(provisioned_pvc, **{"volume.kubernetes.io/selected-node": NODE_LABEL_VALUE}),
            with_annotations(provisioned_pvc2, **{"volume.kubernetes.io/selected-node": NODE_LABEL_VALUE}),
        ],
        "cached_pvcs": [provisioned_pvc, provisioned_pvc2],
        "api_pvcs": [provisioned_pvc, provisioned_pvc_higher_version],
        "expected_pvcs": [
            with_annotations(provisioned_pvc, **{"volume.kubernetes.io/selected-node": NODE_LABEL_VALUE}),
            provisioned_pvc2,
        ],
        "should_fail": True,
    },
]


@pytest.mark.parametrize("case", BIND_API_UPDATE, ids=[c["name"] for c in BIND_API_UPDATE])
def test_bind_api_update(case: dict[str, Any]) -> None:
    env = Env(pvs=case.get("cached_pvs", []), pvcs=case.get("cached_pvcs", []))
    # the API's objects when they differ from the watched ones (the assume cache's)
    api_pvs, api_pvcs = case.get("api_pvs"), case.get("api_pvcs")
    bindings = None if "bindings" not in case else [binding(c, v) for c, v in case["bindings"]]
    provisioned = None if "provisioned" not in case else [pvc_obj(p) for p in case["provisioned"]]
    env.assume(bindings, provisioned)
    if api_pvs is not None:  # the API moved on: the write's precondition fails for those
        for doc in api_pvs:
            if doc["metadata"]["resourceVersion"] != "1":
                env.volumes.apply("persistentvolumes", "MODIFIED", pv_obj(doc))
    if api_pvcs is not None:
        for doc in api_pvcs:
            if doc["metadata"]["resourceVersion"] != "1":
                env.volumes.apply("persistentvolumeclaims", "MODIFIED", pvc_obj(doc))
    volumes = pod_volumes(bindings, provisioned)
    try:
        asyncio.run(env.binder.bind_api_update(pod_info(make_pod()), volumes, env.cluster))
    except BinderError:
        assert case.get("should_fail")
    else:
        assert not case.get("should_fail")
    # validateBind / validateProvision: the API's objects (the writes' outcome) and the cached ones
    for doc in case.get("expected_api_pvs") or case.get("expected_pvs") or []:
        stored = env.volumes.volume(doc["metadata"]["name"])
        assert stored is not None and stored.specs.claim_ref == pv_obj(doc).specs.claim_ref
    # the watched objects are the API's here: where the API moved on, the cache shows its object
    for doc in case.get("expected_api_pvs") or case.get("expected_pvs") or []:
        cached = env.binder.get_pv(doc["metadata"]["name"])
        assert cached is not None and cached.specs.claim_ref == pv_obj(doc).specs.claim_ref
    for doc in case.get("expected_pvcs") or []:
        cached_pvc = env.binder.get_pvc("testns", doc["metadata"]["name"])
        assert cached_pvc is not None
        want = (doc["metadata"].get("annotations") or {}).get("volume.kubernetes.io/selected-node")
        assert (cached_pvc.meta.annotations or {}).get("volume.kubernetes.io/selected-node") == want


# -- TestCheckBindings -------------------------------------------------------------------------------


def remove_claim_uid(pv: Obj) -> Obj:
    """``pvRemoveClaimUID``."""
    out = copy.deepcopy(pv)
    out["spec"]["claimRef"]["uid"] = ""
    return out


def set_selected_node(pvc: Obj, node: str) -> Obj:
    return with_annotations(pvc, **{"volume.kubernetes.io/selected-node": node})


def empty_annotations(pvc: Obj) -> Obj:
    out = copy.deepcopy(pvc)
    out["metadata"]["annotations"] = {}
    return out


def add_provision_ann(pvc: Obj) -> Obj:
    return set_selected_node(pvc, NODE_LABEL_VALUE)


CHECK_BINDINGS: list[dict[str, Any]] = [
    {"name": "nothing-to-bind-nil", "should_fail": True},
    {"name": "nothing-to-bind-bindings-nil", "provisioned": [], "should_fail": True},
    {"name": "nothing-to-bind-provisionings-nil", "bindings": [], "should_fail": True},
    {"name": "nothing-to-bind", "bindings": [], "provisioned": [], "bound": True},
    {
        "name": "binding-bound",
        "bindings": [(unbound_pvc, pv_node1a_bound)],
        "provisioned": [],
        "pvs": [pv_node1a_bound],
        "pvcs": [bound_pvc_node1a],
        "bound": True,
    },
    {
        "name": "binding-prebound",
        "bindings": [(unbound_pvc, pv_node1a_bound)],
        "provisioned": [],
        "pvs": [pv_node1a_bound],
        "pvcs": [prebound_pvc_node1a],
    },
    {
        "name": "binding-unbound",
        "bindings": [(unbound_pvc, pv_node1a_bound)],
        "provisioned": [],
        "pvs": [pv_node1a_bound],
        "pvcs": [unbound_pvc],
    },
    {
        "name": "binding-pvc-not-exists",
        "bindings": [(unbound_pvc, pv_node1a_bound)],
        "provisioned": [],
        "pvs": [pv_node1a_bound],
        "should_fail": True,
    },
    {
        "name": "binding-pv-not-exists",
        "bindings": [(unbound_pvc, pv_node1a_bound)],
        "provisioned": [],
        "pvs": [pv_node1a_bound],
        "pvcs": [bound_pvc_node1a],
        "delete_pvs": True,
        "should_fail": True,
    },
    {
        "name": "binding-claimref-nil",
        "bindings": [(unbound_pvc, pv_node1a_bound)],
        "provisioned": [],
        "pvs": [pv_node1a],
        "pvcs": [bound_pvc_node1a],
        "api_pvs": [pv_node1a],
        "api_pvcs": [bound_pvc_node1a],
        "should_fail": True,
    },
    {
        "name": "binding-claimref-uid-empty",
        "bindings": [(unbound_pvc, pv_node1a_bound)],
        "provisioned": [],
        "pvs": [pv_node1a_bound],
        "pvcs": [bound_pvc_node1a],
        "api_pvs": [remove_claim_uid(pv_node1a_bound)],
        "api_pvcs": [bound_pvc_node1a],
        "should_fail": True,
    },
    {
        "name": "binding-one-bound,one-unbound",
        "bindings": [(unbound_pvc, pv_node1a_bound), (unbound_pvc2, pv_node1b_bound)],
        "provisioned": [],
        "pvs": [pv_node1a_bound, pv_node1b_bound],
        "pvcs": [bound_pvc_node1a, unbound_pvc2],
    },
    {
        "name": "provisioning-pvc-bound",
        "bindings": [],
        "provisioned": [add_provision_ann(provisioned_pvc)],
        "pvs": [pv_bound],
        "pvcs": [provisioned_pvc_bound],
        "api_pvcs": [add_provision_ann(provisioned_pvc_bound)],
        "bound": True,
    },
    {
        "name": "provisioning-pvc-unbound",
        "bindings": [],
        "provisioned": [add_provision_ann(provisioned_pvc)],
        "pvcs": [add_provision_ann(provisioned_pvc)],
    },
    {
        "name": "provisioning-pvc-not-exists",
        "bindings": [],
        "provisioned": [add_provision_ann(provisioned_pvc)],
        "pvcs": [provisioned_pvc],
        "delete_pvcs": True,
        "should_fail": True,
    },
    {
        "name": "provisioning-pvc-annotations-nil",
        "bindings": [],
        "provisioned": [add_provision_ann(provisioned_pvc)],
        "pvcs": [provisioned_pvc],
        "api_pvcs": [provisioned_pvc],
        "should_fail": True,
    },
    {
        "name": "provisioning-pvc-selected-node-dropped",
        "bindings": [],
        "provisioned": [add_provision_ann(provisioned_pvc)],
        "pvcs": [provisioned_pvc],
        "api_pvcs": [empty_annotations(provisioned_pvc)],
        "should_fail": True,
    },
    {
        "name": "provisioning-pvc-selected-node-wrong-node",
        "bindings": [],
        "provisioned": [add_provision_ann(provisioned_pvc)],
        "pvcs": [provisioned_pvc],
        "api_pvcs": [set_selected_node(provisioned_pvc, "wrong-node")],
        "should_fail": True,
    },
    {
        "name": "binding-bound-provisioning-unbound",
        "bindings": [(unbound_pvc, pv_node1a_bound)],
        "provisioned": [add_provision_ann(provisioned_pvc)],
        "pvs": [pv_node1a_bound],
        "pvcs": [bound_pvc_node1a, add_provision_ann(provisioned_pvc)],
    },
    {
        "name": "tolerate-provisioning-pvc-bound-pv-not-found",
        "bindings": [],
        "provisioned": [add_provision_ann(provisioned_pvc)],
        "pvs": [pv_node1a],
        "pvcs": [provisioned_pvc],
        "api_pvcs": [add_provision_ann(provisioned_pvc_bound)],
        "delete_pvs": True,
    },
]


def _check(env: Env, pod: Obj, case: dict[str, Any]) -> None:
    bindings = None if "bindings" not in case else [binding(c, v) for c, v in case["bindings"]]
    provisioned = None if "provisioned" not in case else [pvc_obj(p) for p in case["provisioned"]]
    env.assume(bindings, provisioned)
    if case.get("delete_pvs"):
        for doc in case.get("pvs", []):
            env.delete("persistentvolumes", doc)
    else:
        for doc in case.get("api_pvs", []):
            env.api_update("persistentvolumes", doc)
    if case.get("delete_pvcs"):
        for doc in case.get("pvcs", []):
            env.delete("persistentvolumeclaims", doc)
    else:
        for doc in case.get("api_pvcs", []):
            env.api_update("persistentvolumeclaims", doc)
    try:
        got = env.binder.check_bindings(pod_info(pod), "node1", pod_volumes(bindings, provisioned), env.cluster)
    except BinderError:
        assert case.get("should_fail"), "returned an error"
        return
    assert not case.get("should_fail"), "returned success but expected error"
    assert got is bool(case.get("bound"))


@pytest.mark.parametrize("case", CHECK_BINDINGS, ids=[c["name"] for c in CHECK_BINDINGS])
def test_check_bindings(case: dict[str, Any]) -> None:
    pod = make_pod()
    env = Env(pvs=case.get("pvs", []), pvcs=case.get("pvcs", []), nodes=[NODE1], pods=[pod])
    _check(env, pod, case)


CHECK_MIGRATION: list[dict[str, Any]] = [
    {
        "name": "provisioning-pvc-bound",
        "bindings": [],
        "provisioned": [add_provision_ann(prov_migration_pvc_bound)],
        "pvs": [migration_pv_bound],
        "pvcs": [prov_migration_pvc_bound],
        "nodes": [NODE1_ZONE1],
        "csi_nodes": [CSI_NODE1_MIGRATED],
        "api_pvcs": [add_provision_ann(prov_migration_pvc_bound)],
        "bound": True,
    },
    {
        "name": "binding-node-pv-same-zone",
        "bindings": [(unbound_pvc, migration_pv_bound_to_unbound)],
        "provisioned": [],
        "pvs": [migration_pv_bound_to_unbound],
        "pvcs": [unbound_pvc],
        "nodes": [NODE1_ZONE1],
        "csi_nodes": [CSI_NODE1_MIGRATED],
    },
    {
        "name": "binding-without-csinode",
        "bindings": [(unbound_pvc, migration_pv_bound_to_unbound)],
        "provisioned": [],
        "pvs": [migration_pv_bound_to_unbound],
        "pvcs": [unbound_pvc],
        "nodes": [NODE1_ZONE1],
        "csi_nodes": [],
    },
    {
        "name": "binding-non-migrated-plugin",
        "bindings": [(unbound_pvc, migration_pv_bound_to_unbound)],
        "provisioned": [],
        "pvs": [migration_pv_bound_to_unbound],
        "pvcs": [unbound_pvc],
        "nodes": [NODE1_ZONE1],
        "csi_nodes": [CSI_NODE1_NOT_MIGRATED],
    },
    {
        "name": "binding-node-pv-in-different-zones",
        "bindings": [(unbound_pvc, migration_pv_bound_to_unbound)],
        "provisioned": [],
        "pvs": [migration_pv_bound_to_unbound],
        "pvcs": [unbound_pvc],
        "nodes": [NODE1_ZONE2],
        "csi_nodes": [CSI_NODE1_MIGRATED],
        "should_fail": True,
    },
    {
        "name": "binding-node-pv-different-zones-migration-off",
        "bindings": [(unbound_pvc, nonmigration_pv_bound_to_unbound)],
        "provisioned": [],
        "pvs": [nonmigration_pv_bound_to_unbound],
        "pvcs": [unbound_pvc],
        "nodes": [NODE1_ZONE2],
        "csi_nodes": [CSI_NODE1_MIGRATED],
    },
]


@pytest.mark.parametrize("case", CHECK_MIGRATION, ids=[c["name"] for c in CHECK_MIGRATION])
def test_check_bindings_with_csi_migration(case: dict[str, Any]) -> None:
    pod = make_pod()
    env = Env(pvs=case["pvs"], pvcs=case["pvcs"], nodes=case["nodes"], csi_nodes=case["csi_nodes"], pods=[pod])
    _check(env, pod, case)


# -- TestBindPodVolumes -------------------------------------------------------------------------------

DELAY = 0.2


async def _later(action: Any) -> None:
    await asyncio.sleep(DELAY)
    action()


def _bind_pvc(env: Env, pvc: Obj, pv_name: str) -> None:
    """The PV controller binding a claim: ``volumeName`` and ``bind-completed``."""
    current = env.volumes.claim("testns", pvc["metadata"]["name"])
    assert current is not None
    doc = msgspec.to_builtins(current)
    doc["spec"]["volumeName"] = pv_name
    doc["metadata"]["annotations"] = {
        **(doc["metadata"].get("annotations") or {}),
        "pv.kubernetes.io/bind-completed": "yes",
    }
    env.api_update("persistentvolumeclaims", doc)


def _provision(env: Env, pvc: Obj) -> None:
    """``binding-dynamic-pv-succeeds-after-time``'s provisioner: a bound volume, then the claim."""
    current = env.volumes.claim("testns", pvc["metadata"]["name"])
    assert current is not None
    dynamic = make_test_pv("dynamic-pv", "node1", "1G", "1", msgspec.to_builtins(current), WAIT_CLASS)
    env.volumes.apply("persistentvolumes", "ADDED", pv_obj(dynamic))
    _bind_pvc(env, pvc, "dynamic-pv")


BIND_POD_VOLUMES: list[dict[str, Any]] = [
    {"name": "nothing-to-bind-nil", "bindings_nil": True, "should_fail": True},
    {"name": "nothing-to-bind-empty"},
    {
        "name": "already-bound",
        "binding": (unbound_pvc, pv_node1a_bound),
        "pvs": [pv_node1a_bound],
        "pvcs": [bound_pvc_node1a],
    },
    {
        "name": "binding-static-pv-succeeds-after-time",
        "pvs": [pv_node1a],
        "pvcs": [unbound_pvc],
        "binding": (unbound_pvc, pv_node1a_bound),
        "delay": lambda env: _bind_pvc(env, unbound_pvc, "pv-node1a"),
    },
    {
        "name": "binding-dynamic-pv-succeeds-after-time",
        "claim": set_selected_node(provisioned_pvc, "node1"),
        "pvcs": [provisioned_pvc],
        "delay": lambda env: _provision(env, provisioned_pvc),
    },
    {
        "name": "bound-by-pv-controller-before-bind",
        "pvs": [pv_node1a],
        "pvcs": [unbound_pvc],
        "binding": (unbound_pvc, pv_node1a_bound),
        "api_pv": pv_node1a_bound,
        "api_pvc": bound_pvc_node1a,
        "should_fail": True,
    },
    {
        "name": "pod-deleted-after-time",
        "binding": (unbound_pvc, pv_node1a_bound),
        "pvs": [pv_node1a],
        "pvcs": [unbound_pvc],
        "delay": "delete-pod",
        "should_fail": True,
    },
    {
        "name": "binding-times-out",
        "binding": (unbound_pvc, pv_node1a_bound),
        "pvs": [pv_node1a],
        "pvcs": [unbound_pvc],
        "should_fail": True,
    },
    {
        "name": "binding-fails",
        "binding": (unbound_pvc2, pv_node1b_bound),
        "pvs": [pv_node1b],
        "pvcs": [unbound_pvc2],
        "should_fail": True,
    },
    {
        "name": "check-fails",
        "binding": (unbound_pvc, pv_node1a_bound),
        "pvs": [pv_node1a],
        "pvcs": [unbound_pvc],
        "delay": lambda env: env.delete("persistentvolumeclaims", unbound_pvc),
        "should_fail": True,
    },
    {
        "name": "node-affinity-fails",
        "binding": (unbound_pvc, pv_node1a_bound),
        "pvs": [pv_node1a_bound],
        "pvcs": [bound_pvc_node1a],
        "nodes": [NODE1_NO_LABELS],
        "should_fail": True,
    },
    {
        "name": "node-affinity-fails-dynamic-provisioning",
        "pvs": [pv_node1a, pv_node2],
        "pvcs": [selected_node_pvc],
        "claim": selected_node_pvc,
        "nodes": [NODE1, NODE2],
        "delay": lambda env: _bind_pvc(env, selected_node_pvc, "pv-node2"),
        "should_fail": True,
    },
]


@pytest.mark.parametrize("case", BIND_POD_VOLUMES, ids=[c["name"] for c in BIND_POD_VOLUMES])
def test_bind_pod_volumes(case: dict[str, Any]) -> None:
    pod = make_pod()
    env = Env(
        pvs=case.get("pvs", []),
        pvcs=case.get("pvcs", []),
        nodes=case.get("nodes", [NODE1]),
        pods=[pod],
        bind_timeout=1.0,
    )
    bindings: list[BindingInfo] | None = []
    claims: list[PersistentVolumeClaim] | None = []
    if case.get("bindings_nil"):
        bindings = None
    else:
        if "binding" in case:
            bindings = [binding(*case["binding"])]
        if "claim" in case:
            claims = [pvc_obj(case["claim"])]
        env.assume(bindings, claims)
    if "api_pv" in case:
        env.api_update("persistentvolumes", case["api_pv"])
    if "api_pvc" in case:
        env.api_update("persistentvolumeclaims", case["api_pvc"])
    info = pod_info(pod)

    async def run() -> None:
        delay = case.get("delay")
        task = None
        if delay == "delete-pod":
            task = asyncio.create_task(_later(lambda: env.cluster.cache.delete_pod(env.cluster.cache.pod(info.uid))))  # type: ignore[arg-type]
        elif delay is not None:
            task = asyncio.create_task(_later(lambda: delay(env)))
        try:
            await env.binder.bind_pod_volumes(info, "node1", pod_volumes(bindings, claims), env.cluster)
        finally:
            if task is not None:
                await task

    try:
        asyncio.run(run())
    except BinderError:
        assert case.get("should_fail"), "returned an error"
    else:
        assert not case.get("should_fail"), "returned success but expected error"


def test_a_claims_binding_that_never_comes_times_out_with_upstreams_error() -> None:
    """``BindPodVolumes``: ``binding volumes: context deadline exceeded`` once ``bindTimeout`` is
    over (``wait.PollUntilContextTimeout``)."""
    pod = make_pod()
    env = Env(pvs=[pv_node1a], pvcs=[unbound_pvc], nodes=[NODE1], pods=[pod], bind_timeout=0.3)
    bindings = [binding(unbound_pvc, pv_node1a_bound)]
    env.assume(bindings, [])
    with pytest.raises(BinderError, match=r"^binding volumes: context deadline exceeded$"):
        asyncio.run(env.binder.bind_pod_volumes(pod_info(pod), "node1", pod_volumes(bindings, []), env.cluster))
    assert [w.kind for w in env.cluster.volume_writes] == ["persistentvolumes"]
    assert env.cluster.volume_writes[0].claim_ref is not None and env.cluster.volume_writes[0].resource_version == "1"


# -- TestFindAssumeVolumes ---------------------------------------------------------------------------


def test_find_assume_volumes() -> None:
    env = Env(pvs=[pv_node2, pv_node1a, pv_node1c], pvcs=[unbound_pvc])
    pod = pod_info(make_pod(unbound_pvc))
    volumes, reasons = find_pod_volumes(env.binder, pod, NODE1)
    assert reasons == []
    expected = names(volumes)
    assert env.binder.assume_pod_volumes(pod, "node1", volumes) is False
    chosen = expected[0][0][1]  # type: ignore[index]
    assert env.binder.get_pv(chosen).specs.claim_ref.name == "unbound-pvc"  # type: ignore[union-attr]
    for _ in range(50):  # the same volume, whatever the order of the two equal ones
        again, reasons = find_pod_volumes(env.binder, pod, NODE1)
        assert reasons == [] and names(again) == expected


# -- TestCapacity -------------------------------------------------------------------------------------


def make_capacity(name: str, class_name: str, node: Obj | None, capacity: str, maximum: str) -> Obj:
    """``makeCapacity``: an empty ``nodeTopology`` (every node) unless ``node`` is given."""
    topology: Obj = {}
    if node is not None:
        topology["matchLabels"] = {NODE_LABEL_KEY: node["metadata"]["labels"][NODE_LABEL_KEY]}
    doc: Obj = {
        "metadata": {"name": name, "namespace": "testns"},
        "storageClassName": class_name,
        "nodeTopology": topology,
    }
    if capacity:
        doc["capacity"] = capacity
    if maximum:
        doc["maximumVolumeSize"] = maximum
    return doc


# (name, capacities, reasons); v1.36.3's expectedProvisions also name the capacity found (its
# NodeCapacity): the test asserts it is one that holds the claim on the node (none when opted out)
CAPACITY = [
    ("network-attached", [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, None, "1Gi", "")], []),
    ("local-storage", [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, NODE1, "1Gi", "")], []),
    (
        "multiple",
        [
            make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, None, "1Gi", ""),
            make_capacity("net2", WAIT_CLASS_WITH_PROVISIONER, NODE2, "1Gi", ""),
            make_capacity("net3", WAIT_CLASS_WITH_PROVISIONER, NODE1, "1Gi", ""),
        ],
        [],
    ),
    ("no-storage", [], [ERR_REASON_NOT_ENOUGH_SPACE]),
    (
        "wrong-node",
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, NODE2, "1Gi", "")],
        [ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    ("wrong-storage-class", [make_capacity("net", WAIT_CLASS, NODE1, "1Gi", "")], [ERR_REASON_NOT_ENOUGH_SPACE]),
    (
        "insufficient-storage",
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, NODE1, "1Mi", "")],
        [ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    (
        "insufficient-volume-size",
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, NODE1, "1Gi", "1Mi")],
        [ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    (
        "zero-storage",
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, NODE1, "0Mi", "")],
        [ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    (
        "zero-volume-size",
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, NODE1, "", "0Mi")],
        [ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    ("nil-storage", [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, NODE1, "", "")], [ERR_REASON_NOT_ENOUGH_SPACE]),
]


@pytest.mark.parametrize(
    "opt_in", [True, False], ids=["CSIDriver.StorageCapacity=true", "CSIDriver.StorageCapacity=false"]
)
@pytest.mark.parametrize(("name", "capacities", "reasons"), CAPACITY, ids=[c[0] for c in CAPACITY])
def test_capacity(name: str, capacities: list[Obj], reasons: list[str], opt_in: bool) -> None:
    env = Env(pvcs=[provisioned_pvc], drivers=[csi_driver(PROVISIONER, opt_in)], capacities=capacities)
    volumes, got = find_pod_volumes(env.binder, pod_info(make_pod(provisioned_pvc)), NODE1)
    expected = reasons if opt_in else []
    assert got == expected
    assert names(volumes) == (None, None if got else ["provisioned-pvc"])
    for provision in volumes.dynamic_provisions or ():
        if not opt_in:
            assert provision.node_capacity is None
        else:
            found = provision.node_capacity
            assert found is not None and found.name in {c["metadata"]["name"] for c in capacities}
            assert node_has_access(NODE1["metadata"]["labels"], found) and found.name != "net2"


def test_the_driver_of_a_capacity_check_is_read_from_the_watched_csidrivers() -> None:
    """The store's CSIDriver view: ``spec.storageCapacity`` as the API gives it."""
    env = Env(drivers=[csi_driver(PROVISIONER, True)])
    driver = env.volumes.csi_driver(PROVISIONER)
    assert isinstance(driver, CSIDriver) and driver.spec is not None and driver.spec.storage_capacity is True


def test_check_bindings_waits_until_the_watch_shows_the_write() -> None:
    """``checkBindings``: the written volume's ``resourceVersion`` is newer than the watched one
    (``CompareResourceVersion > 0``): not bound yet, whatever the claim says."""
    pod = make_pod()
    env = Env(pvs=[pv_node1a_bound], pvcs=[bound_pvc_node1a], nodes=[NODE1], pods=[pod])
    written = binding(unbound_pvc, with_version(pv_node1a_bound, "2"))
    volumes = pod_volumes([written], [])
    assert env.binder.check_bindings(pod_info(pod), "node1", volumes, env.cluster) is False
    env.api_update("persistentvolumes", pv_node1a_bound)  # the watch brings version 2
    assert env.binder.check_bindings(pod_info(pod), "node1", volumes, env.cluster) is True


def test_volumes_bound_to_other_claims_are_left_out_once_per_pod() -> None:
    """``GetPodVolumeClaims`` keeps, of the class's volumes, the free ones and those whose
    ``claimRef`` names one of the pod's claims (FindMatchingVolume skips the others on every node),
    and the decision is the one of the whole list: the volume pre-bound to the claim."""
    pod = make_pod(unbound_pvc)
    env = Env(pvs=[pv_node1b_bound, pv_node1a_bound, pv_node2], pvcs=[unbound_pvc], nodes=[NODE1], pods=[pod])
    claims = env.binder.get_pod_volume_claims(pod_info(pod))
    assert sorted(pv.name for pv in claims.unbound_volumes_delay_binding[WAIT_CLASS]) == ["pv-node1a", "pv-node2"]
    volumes, reasons = env.binder.find_pod_volumes(pod_info(pod), claims, node_info(NODE1))
    assert names(volumes) == ([("unbound-pvc", "pv-node1a")], None) and reasons == []

"""The volume plugins' and SchedulingGates' queueing hints (kube-scheduler v1.36.3), with their
upstream hint tables as data, case names kept:

- volumebinding/volume_binding_test.go: ``TestIsSchedulableAfterCSINodeChange``,
  ``TestIsSchedulableAfterPersistentVolumeClaimChange``, ``TestIsSchedulableAfterStorageClassChange``,
  ``TestIsSchedulableAfterCSIStorageCapacityChange``, ``TestIsSchedulableAfterCSIDriverChange``;
- volumezone/volume_zone_test.go: ``TestIsSchedulableAfterPersistentVolumeClaimAdded``,
  ``TestIsSchedulableAfterStorageClassAdded``, ``TestIsSchedulableAfterPersistentVolumeChange``;
- volumerestrictions/volume_restrictions_test.go: ``Test_isSchedulableAfterPodDeleted``,
  ``Test_isSchedulableAfterPersistentVolumeClaimChange``;
- nodevolumelimits/csi_test.go: ``TestCSILimitsQHint``, ``TestCSILimitsAddedPVCQHint``,
  ``TestCSILimitsDeletedVolumeAttachmentQHint``, ``TestCSILimitsAfterCSINodeUpdatedQHint``;
- schedulinggates/scheduling_gates_test.go: ``Test_isSchedulableAfterPodChange``.

Each row is ``(name, pod, old, new, want, err)``: ``err`` means upstream returns an error (the
hint raises here; the queue counts both as ``Queue``). None of these plugins has a
``TestEventsToRegister`` upstream; the registrations are checked against ``EventsToRegister``'s
source, and a parked pod is moved through the real :class:`SchedulingQueue`.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from app.framework import PodInfo, objects
from app.framework.events import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    QUEUE,
    SKIP,
    STORAGE_CLASS,
    VOLUME_ATTACHMENT,
    ActionType,
    ClusterEvent,
    ObservedEvent,
)
from app.framework.volumes import (
    MIGRATED_PLUGINS_ANNOTATION,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)
from app.plugins import schedulinggates
from app.plugins.volumes import csi_hints, volume_binding, volume_restrictions, volume_zone
from app.plugins.volumes.node_volume_limits import EBSLimits
from app.scheduler.queue import BACKOFF, UNSCHEDULABLE, SchedulingQueue

#: upstream's ``new(struct{})`` / ``"not-a-pvc"``: an object of the wrong type
WRONG = object()


def make_pod(
    name: str = "",
    namespace: str = "default",
    volumes: list[dict[str, Any]] | None = None,
    node_name: str = "",
    uid: str = "",
    gates: list[str] | None = None,
) -> PodInfo:
    doc: dict[str, Any] = {
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "spec": {"volumes": volumes or [], "nodeName": node_name},
    }
    if gates is not None:
        doc["spec"]["schedulingGates"] = [{"name": g} for g in gates]
    return PodInfo(msgspec.convert(doc, objects.Pod))


def pvc_volume(claim: str, name: str = "") -> dict[str, Any]:
    """``withPVCVolume(claim, name)``; ``st.PodWrapper.PVC(claim)`` names the volume as the claim."""
    return {"name": name, "persistentVolumeClaim": {"claimName": claim}}


def st_pvc(claim: str) -> dict[str, Any]:
    return pvc_volume(claim, claim)


def ephemeral(name: str) -> dict[str, Any]:
    return {"name": name, "ephemeral": {}}


def csi(driver: str) -> dict[str, Any]:
    return {"csi": {"driver": driver}}


def pvc(name: str, namespace: str = "default", **spec: Any) -> PersistentVolumeClaim:
    return msgspec.convert({"metadata": {"name": name, "namespace": namespace}, "spec": spec}, PersistentVolumeClaim)


def pv(name: str, labels: dict[str, str] | None = None) -> PersistentVolume:
    return msgspec.convert({"metadata": {"name": name, "labels": labels or {}}}, PersistentVolume)


def sc(name: str, **fields: Any) -> StorageClass:
    return msgspec.convert({"metadata": {"name": name}, **fields}, StorageClass)


def csi_node(annotations: dict[str, str] | None = None, drivers: list[dict[str, Any]] | None = None) -> CSINode:
    doc: dict[str, Any] = {"metadata": {"name": "csinode-a", "annotations": annotations or {}}}
    if drivers is not None:
        doc["spec"] = {"drivers": drivers}
    return msgspec.convert(doc, CSINode)


def capacity(**fields: Any) -> CSIStorageCapacity:
    return msgspec.convert({"metadata": {"name": "cap-a"}, **fields}, CSIStorageCapacity)


def driver(name: str, storage_capacity: bool | None) -> CSIDriver:
    spec = {} if storage_capacity is None else {"storageCapacity": storage_capacity}
    return msgspec.convert({"metadata": {"name": name}, "spec": spec}, CSIDriver)


def attachment(attacher: str, pv_name: str | None = None) -> VolumeAttachment:
    source = {"persistentVolumeName": pv_name} if pv_name else {}
    spec = {"attacher": attacher, "nodeName": "fake-node", "source": source}
    return msgspec.convert({"metadata": {"name": "volumeattachment1"}, "spec": spec}, VolumeAttachment)


def judge(fn: Any, pod: Any, old: object, new: object) -> tuple[int, bool]:
    """``(hint, errored)`` as the queue reads a hint: an exception is ``Queue`` with an error."""
    try:
        return int(fn(pod, old, new)), False
    except Exception:
        return int(QUEUE), True


def check(fn: Any, pod: Any, old: object, new: object, want: int, err: bool) -> None:
    hint, errored = judge(fn, pod, old, new)
    assert (hint, errored) == (int(want), err)


def ids(rows: list[tuple[Any, ...]]) -> list[str]:
    return [r[0] for r in rows]


# -- VolumeBinding ------------------------------------------------------------------------------------

_MIGRATED = MIGRATED_PLUGINS_ANNOTATION
CSI_NODE_ROWS = [
    ("unexpected objects are passed", make_pod("pod-a"), WRONG, WRONG, QUEUE, True),
    ("CSINode is newly created", make_pod("pod-a"), None, csi_node(), QUEUE, False),
    (
        "CSINode's migrated-plugins annotations is added",
        make_pod("pod-a"),
        csi_node({_MIGRATED: "test1"}),
        csi_node({_MIGRATED: "test1, test2"}),
        QUEUE,
        False,
    ),
    (
        "CSINode's migrated-plugins annotation is updated",
        make_pod("pod-a"),
        csi_node({_MIGRATED: "test1"}),
        csi_node({_MIGRATED: "test2"}),
        QUEUE,
        False,
    ),
    (
        "CSINode is updated but migrated-plugins annotation gets unchanged",
        make_pod("pod-a"),
        csi_node({_MIGRATED: "test1"}),
        csi_node({_MIGRATED: "test1"}),
        SKIP,
        False,
    ),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want", "err"), CSI_NODE_ROWS, ids=ids(CSI_NODE_ROWS))
def test_volume_binding_csi_node_change(
    name: str, pod: PodInfo, old: object, new: object, want: int, err: bool
) -> None:
    check(volume_binding.is_schedulable_after_csi_node_change, pod, old, new, want, err)


PVC_ROWS = [
    (
        "pod has no pvc or ephemeral volumes",
        make_pod("pod-a", volumes=[{"emptyDir": {}}]),
        pvc("pvc-b", storageClassName="sc-a"),
        pvc("pvc-b", storageClassName="sc-a"),
        SKIP,
        False,
    ),
    (
        "pvc with the same name as the one used by the pod in a different namespace is modified",
        make_pod("pod-a", namespace="ns-a", volumes=[pvc_volume("pvc-a"), pvc_volume("pvc-b")]),
        None,
        pvc("pvc-b", storageClassName=""),
        SKIP,
        False,
    ),
    (
        "pod has no pvc that is being modified",
        make_pod("pod-a", volumes=[pvc_volume("pvc-a"), pvc_volume("pvc-c")]),
        pvc("pvc-b"),
        pvc("pvc-b"),
        SKIP,
        False,
    ),
    (
        "pod has no generic ephemeral volume that is being modified",
        make_pod("pod-a", volumes=[ephemeral("ephemeral-a"), ephemeral("ephemeral-c")]),
        pvc("pod-a-ephemeral-b"),
        pvc("pod-a-ephemeral-b"),
        SKIP,
        False,
    ),
    (
        "pod has the pvc that is being modified",
        make_pod("pod-a", volumes=[pvc_volume("pvc-a"), pvc_volume("pvc-b")]),
        pvc("pvc-b"),
        pvc("pvc-b"),
        QUEUE,
        False,
    ),
    (
        "pod has the generic ephemeral volume that is being modified",
        make_pod("pod-a", volumes=[ephemeral("ephemeral-a"), ephemeral("ephemeral-b")]),
        pvc("pod-a-ephemeral-b"),
        pvc("pod-a-ephemeral-b"),
        QUEUE,
        False,
    ),
    ("type conversion error", None, WRONG, WRONG, QUEUE, True),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want", "err"), PVC_ROWS, ids=ids(PVC_ROWS))
def test_volume_binding_pvc_change(name: str, pod: PodInfo, old: object, new: object, want: int, err: bool) -> None:
    check(volume_binding.is_schedulable_after_persistent_volume_claim_change, pod, old, new, want, err)


_HOSTNAME_TOPOLOGY = [{"matchLabelExpressions": [{"key": "kubernetes.io/hostname", "values": ["node-a"]}]}]
SC_ROWS = [
    ("When a new StorageClass is created, it returns Queue", make_pod("pod-a"), None, sc("sc-a"), QUEUE, False),
    (
        "When the AllowedTopologies are changed, it returns Queue",
        make_pod("pod-a"),
        sc("sc-a"),
        sc("sc-a", allowedTopologies=_HOSTNAME_TOPOLOGY),
        QUEUE,
        False,
    ),
    (
        "When there are no changes to the StorageClass, it returns QueueSkip",
        make_pod("pod-a"),
        sc("sc-a"),
        sc("sc-a"),
        SKIP,
        False,
    ),
    ("type conversion error", None, WRONG, WRONG, QUEUE, True),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want", "err"), SC_ROWS, ids=ids(SC_ROWS))
def test_volume_binding_storage_class_change(
    name: str, pod: PodInfo, old: object, new: object, want: int, err: bool
) -> None:
    check(volume_binding.is_schedulable_after_storage_class_change, pod, old, new, want, err)


def test_volume_binding_storage_class_empty_topologies_equal_none() -> None:
    """``apiequality.Semantic.DeepEqual``: an empty ``allowedTopologies`` equals an unset one."""
    hint = volume_binding.is_schedulable_after_storage_class_change
    assert hint(make_pod("p"), sc("sc-a"), sc("sc-a", allowedTopologies=[])) == SKIP


_P = make_pod("pod-a")
CAP_ROWS = [
    ("When a new CSIStorageCapacity is created, it returns Queue", _P, None, capacity(), QUEUE, False),
    (
        "When the volume limit is increase(Capacity set), it returns Queue",
        _P,
        capacity(),
        capacity(capacity=100),
        QUEUE,
        False,
    ),
    (
        "When the volume limit is increase(MaximumVolumeSize set), it returns Queue",
        _P,
        capacity(),
        capacity(maximumVolumeSize=100),
        QUEUE,
        False,
    ),
    (
        "When the volume limit is increase(Capacity increase), it returns Queue",
        _P,
        capacity(capacity=50),
        capacity(capacity=100),
        QUEUE,
        False,
    ),
    (
        "When the volume limit is increase(MaximumVolumeSize unset), it returns Queue",
        _P,
        capacity(capacity=100, maximumVolumeSize=50),
        capacity(capacity=100),
        QUEUE,
        False,
    ),
    (
        "When the volume limit is increase(MaximumVolumeSize increase), it returns Queue",
        _P,
        capacity(capacity=100, maximumVolumeSize=50),
        capacity(capacity=100, maximumVolumeSize=60),
        QUEUE,
        False,
    ),
    (
        "When there are no changes to the CSIStorageCapacity, it returns QueueSkip",
        _P,
        capacity(capacity=100, maximumVolumeSize=50),
        capacity(capacity=100, maximumVolumeSize=50),
        SKIP,
        False,
    ),
    (
        "When the volume limit is equal(Capacity), it returns QueueSkip",
        _P,
        capacity(capacity=100),
        capacity(capacity=100),
        SKIP,
        False,
    ),
    (
        "When the volume limit is equal(MaximumVolumeSize unset), it returns QueueSkip",
        _P,
        capacity(capacity=100, maximumVolumeSize=50),
        capacity(capacity=50),
        SKIP,
        False,
    ),
    (
        "When the volume limit is decrease(Capacity), it returns QueueSkip",
        _P,
        capacity(capacity=100),
        capacity(capacity=90),
        SKIP,
        False,
    ),
    (
        "When the volume limit is decrease(MaximumVolumeSize), it returns QueueSkip",
        _P,
        capacity(maximumVolumeSize=100),
        capacity(maximumVolumeSize=90),
        SKIP,
        False,
    ),
    ("type conversion error", None, WRONG, WRONG, QUEUE, True),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want", "err"), CAP_ROWS, ids=ids(CAP_ROWS))
def test_volume_binding_csi_storage_capacity_change(
    name: str, pod: PodInfo, old: object, new: object, want: int, err: bool
) -> None:
    check(volume_binding.is_schedulable_after_csi_storage_capacity_change, pod, old, new, want, err)


_CSI1 = make_pod("pod-a", volumes=[csi("test1")])
DRIVER_ROWS = [
    ("pod has no CSIDriver", make_pod("pod-a"), driver("test1", None), driver("test1", True), SKIP, False),
    ("unexpected objects are passed", make_pod("pod-a"), WRONG, WRONG, QUEUE, True),
    (
        "driver name in pod and csidriver name are different",
        _CSI1,
        driver("test2", True),
        driver("test2", False),
        SKIP,
        False,
    ),
    ("original StorageCapacity is nil", _CSI1, driver("test1", None), driver("test1", None), SKIP, False),
    ("original StorageCapacity is false", _CSI1, driver("test1", False), driver("test1", False), SKIP, False),
    ("modified StorageCapacity is nil", _CSI1, driver("test1", True), driver("test1", None), QUEUE, False),
    ("modified StorageCapacity is true", _CSI1, driver("test1", True), driver("test1", True), SKIP, False),
    ("modified StorageCapacity is false", _CSI1, driver("test1", True), driver("test1", False), QUEUE, False),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want", "err"), DRIVER_ROWS, ids=ids(DRIVER_ROWS))
def test_volume_binding_csi_driver_change(
    name: str, pod: PodInfo, old: object, new: object, want: int, err: bool
) -> None:
    check(volume_binding.is_schedulable_after_csi_driver_change, pod, old, new, want, err)


# -- VolumeZone ---------------------------------------------------------------------------------------


def zone_pod(claim: str = "PVC_1") -> PodInfo:
    """``createPodWithVolume("pod_1", claim)``."""
    return make_pod("pod_1", volumes=[st_pvc(claim)])


ZONE_PVC_ROWS = [
    ("error-wrong-new-object", zone_pod(), None, "not-a-pvc", QUEUE, True),
    (
        "pvc-was-added-but-pod-refers-no-pvc",
        make_pod("pod_1"),
        None,
        pvc("PVC_1", volumeName="Vol_1"),
        SKIP,
        False,
    ),
    (
        "pvc-was-added-and-pod-was-bound-to-different-pvc",
        zone_pod("PVC_2"),
        None,
        pvc("PVC_1", volumeName="Vol_1"),
        SKIP,
        False,
    ),
    (
        "pvc-was-added-and-pod-was-bound-to-pvc-but-different-ns",
        zone_pod(),
        None,
        pvc("PVC_1", namespace="ns1", volumeName="Vol_1"),
        SKIP,
        False,
    ),
    ("pvc-was-added-and-pod-was-bound-to-the-pvc", zone_pod(), None, pvc("PVC_1", volumeName="Vol_1"), QUEUE, False),
    (
        "pvc-was-updated-and-pod-was-bound-to-the-pvc",
        zone_pod(),
        pvc("PVC_1", volumeName=""),
        pvc("PVC_1", volumeName="Vol_1"),
        QUEUE,
        False,
    ),
    (
        "pvc-was-updated-but-pod-refers-no-pvc",
        make_pod("pod_1"),
        pvc("PVC_1", volumeName=""),
        pvc("PVC_1", volumeName="Vol_1"),
        SKIP,
        False,
    ),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want", "err"), ZONE_PVC_ROWS, ids=ids(ZONE_PVC_ROWS))
def test_volume_zone_pvc_change(name: str, pod: PodInfo, old: object, new: object, want: int, err: bool) -> None:
    check(volume_zone.is_schedulable_after_persistent_volume_claim_change, pod, old, new, want, err)


ZONE_SC_ROWS = [
    ("error-wrong-new-object", zone_pod(), None, "not-a-storageclass", QUEUE, True),
    ("sc-doesn't-have-volume-binding-mode", zone_pod(), None, sc("SC_1"), SKIP, False),
    (
        "new-sc-is-wait-for-first-consumer-mode",
        zone_pod(),
        None,
        sc("SC_1", volumeBindingMode="WaitForFirstConsumer"),
        QUEUE,
        False,
    ),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want", "err"), ZONE_SC_ROWS, ids=ids(ZONE_SC_ROWS))
def test_volume_zone_storage_class_added(
    name: str, pod: PodInfo, old: object, new: object, want: int, err: bool
) -> None:
    check(volume_zone.is_schedulable_after_storage_class_added, pod, old, new, want, err)


_BETA_ZONE, _ZONE = "failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone"
ZONE_PV_ROWS = [
    ("error-wrong-new-object", zone_pod(), None, "not-a-pv", QUEUE, True),
    ("error-wrong-old-object", zone_pod(), "not-a-pv", pv("Vol_1"), QUEUE, True),
    ("new-pv-was-added", zone_pod(), None, pv("Vol_1", {_BETA_ZONE: "us-west1-b"}), QUEUE, False),
    (
        "pv-was-updated-and-changed-topology",
        zone_pod(),
        pv("Vol_1", {_BETA_ZONE: "us-west1-a"}),
        pv("Vol_1", {_BETA_ZONE: "us-west1-b"}),
        QUEUE,
        False,
    ),
    (
        "pv-was-updated-and-added-topology-label",
        zone_pod(),
        pv("Vol_1", {_BETA_ZONE: "us-west1-a"}),
        pv("Vol_1", {_BETA_ZONE: "us-west1-a", _ZONE: "zone"}),
        QUEUE,
        False,
    ),
    (
        "pv-was-updated-but-no-topology-is-changed",
        zone_pod(),
        pv("Vol_1", {_BETA_ZONE: "us-west1-a", _ZONE: "zone"}),
        pv("Vol_1", {_BETA_ZONE: "us-west1-a", _ZONE: "zone"}),
        SKIP,
        False,
    ),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want", "err"), ZONE_PV_ROWS, ids=ids(ZONE_PV_ROWS))
def test_volume_zone_pv_change(name: str, pod: PodInfo, old: object, new: object, want: int, err: bool) -> None:
    check(volume_zone.is_schedulable_after_persistent_volume_change, pod, old, new, want, err)


# -- VolumeRestrictions -------------------------------------------------------------------------------

_GCE, _GCE2 = {"gcePersistentDisk": {"pdName": "foo"}}, {"gcePersistentDisk": {"pdName": "bar"}}
_AWS, _AWS2 = {"awsElasticBlockStore": {"volumeID": "foo"}}, {"awsElasticBlockStore": {"volumeID": "bar"}}
_RBD = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
_RBD2 = {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
_ISCSI = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "lun": 0}}
_ISCSI2 = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01", "lun": 0}}


def st_pod(*volumes: dict[str, Any], name: str = "") -> PodInfo:
    """``st.MakePod().Volume(...)``: no namespace."""
    return make_pod(name, namespace="", volumes=list(volumes))


RESTRICTIONS_POD_ROWS = [
    ("queue-new-object-gcedisk-conflict", st_pod(_GCE), st_pod(_GCE), None, QUEUE, False),
    ("skip-new-object-gcedisk-no-conflict", st_pod(_GCE), st_pod(_GCE2), None, SKIP, False),
    ("queue-new-object-awsdisk-conflict", st_pod(_AWS), st_pod(_AWS), None, QUEUE, False),
    ("skip-new-object-awsdisk-no-conflict", st_pod(_AWS), st_pod(_AWS2), None, SKIP, False),
    ("queue-new-object-rbddisk-conflict", st_pod(_RBD), st_pod(_RBD), None, QUEUE, False),
    ("skip-new-object-rbddisk-no-conflict", st_pod(_RBD), st_pod(_RBD2), None, SKIP, False),
    ("queue-new-object-iscsidisk-conflict", st_pod(_ISCSI), st_pod(_ISCSI), None, QUEUE, False),
    ("skip-new-object-iscsidisk-no-conflict", st_pod(_ISCSI), st_pod(_ISCSI2), None, SKIP, False),
    (
        "queue-has-same-claim",
        st_pod(st_pvc("claim-rwop"), name="pod1"),
        st_pod(st_pvc("claim-rwop"), name="pod2"),
        None,
        QUEUE,
        False,
    ),
    (
        "skip-no-same-claim",
        st_pod(st_pvc("claim-1-rwop"), name="pod1"),
        st_pod(st_pvc("claim-2-rwop"), name="pod2"),
        None,
        SKIP,
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want", "err"), RESTRICTIONS_POD_ROWS, ids=ids(RESTRICTIONS_POD_ROWS)
)
def test_volume_restrictions_pod_deleted(
    name: str, pod: PodInfo, old: object, new: object, want: int, err: bool
) -> None:
    check(volume_restrictions.is_schedulable_after_pod_deleted, pod, old, new, want, err)


def test_volume_restrictions_pod_deleted_in_another_namespace_skips() -> None:
    """The namespace test that opens ``isSchedulableAfterPodDeleted`` (no upstream row)."""
    deleted = make_pod("other", namespace="elsewhere", volumes=[_GCE])
    assert volume_restrictions.is_schedulable_after_pod_deleted(make_pod("p", volumes=[_GCE]), deleted, None) == SKIP


_RWX = {"accessModes": ["ReadWriteMany"]}
_ONE = make_pod("pod-with-one-pvc", volumes=[st_pvc("claim-with-rwx-1")], node_name="node-1")
_TWO = make_pod(
    "pod-with-two-pvcs", volumes=[st_pvc("claim-with-rwx-1"), st_pvc("claim-with-rwx-2")], node_name="node-1"
)
_SYSTEM = make_pod("pod-with-one-pvc", namespace="kube-system", volumes=[st_pvc("claim-with-rwx-1")])
_PVC1, _PVC2 = pvc("claim-with-rwx-1", **_RWX), pvc("claim-with-rwx-2", **_RWX)
RESTRICTIONS_PVC_ROWS = [
    ("queue-new-object-pvc-belong-pod", _TWO, None, _PVC1, QUEUE, False),
    ("skip-new-object-unused", _ONE, None, _PVC2, SKIP, False),
    ("skip-nil-old-object", _ONE, None, _PVC2, SKIP, False),
    ("skip-new-object-not-belong-pod", _ONE, None, _PVC2, SKIP, False),
    ("skip-new-object-namespace-not-equal-pod", _SYSTEM, None, _PVC1, SKIP, False),
]


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want", "err"), RESTRICTIONS_PVC_ROWS, ids=ids(RESTRICTIONS_PVC_ROWS)
)
def test_volume_restrictions_pvc_added(name: str, pod: PodInfo, old: object, new: object, want: int, err: bool) -> None:
    check(volume_restrictions.is_schedulable_after_persistent_volume_claim_added, pod, old, new, want, err)


def test_volume_zone_and_restrictions_do_not_read_ephemeral_claims() -> None:
    """Both read ``persistentVolumeClaim`` volumes only (``getPersistentVolumeClaimNameFromPod``,
    the loop of ``isSchedulableAfterPersistentVolumeClaimAdded``), VolumeBinding and
    NodeVolumeLimits also generic ephemeral ones (no upstream row)."""
    target = make_pod("pod1", volumes=[ephemeral("scratch")])
    claim = pvc("pod1-scratch")
    assert volume_zone.is_schedulable_after_persistent_volume_claim_change(target, None, claim) == SKIP
    assert volume_restrictions.is_schedulable_after_persistent_volume_claim_added(target, None, claim) == SKIP
    assert volume_binding.is_schedulable_after_persistent_volume_claim_change(target, None, claim) == QUEUE
    assert csi_hints.is_schedulable_after_pvc_added(target, None, claim) == QUEUE


# -- NodeVolumeLimits (csi.go) ------------------------------------------------------------------------

_EBS_POD = st_pod(st_pvc("csi-ebs.csi.aws.com-2"))
_NODE = "node-for-max-pd-test-1"
CSI_POD_ROWS = [
    (
        "return a Queue when a deleted pod has a PVC",
        _EBS_POD,
        make_pod(namespace="", volumes=[st_pvc("placeholder")], node_name=_NODE),
        None,
        QUEUE,
        False,
    ),
    (
        "return a Queue when a deleted pod has a inline migratable volume",
        _EBS_POD,
        make_pod(namespace="", volumes=[{"awsElasticBlockStore": {}}], node_name=_NODE),
        None,
        QUEUE,
        False,
    ),
    (
        "return a QueueSkip when a deleted pod doesn't have any volume",
        _EBS_POD,
        make_pod(namespace="", node_name=_NODE),
        None,
        SKIP,
        False,
    ),
    (
        "return a QueueSkip when a deleted pod is not scheduled.",
        _EBS_POD,
        make_pod(namespace="", volumes=[st_pvc("csi-ebs.csi.aws.com-0")]),
        None,
        SKIP,
        False,
    ),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want", "err"), CSI_POD_ROWS, ids=ids(CSI_POD_ROWS))
def test_csi_limits_pod_deleted(name: str, pod: PodInfo, old: object, new: object, want: int, err: bool) -> None:
    check(csi_hints.is_schedulable_after_pod_deleted, pod, old, new, want, err)


CSI_PVC_ROWS = [
    (
        "a pod isn't in the same namespace as an added PVC",
        make_pod(namespace="ns1"),
        None,
        pvc("", namespace="ns2"),
        SKIP,
        False,
    ),
    (
        "a pod is in the same namespace as an added PVC",
        make_pod(namespace="ns1", volumes=[pvc_volume("pvc1")]),
        None,
        pvc("pvc1", namespace="ns1"),
        QUEUE,
        False,
    ),
    (
        "a pod has an ephemeral volume related to an added PVC",
        make_pod("pod1", namespace="ns1", volumes=[ephemeral("ephemeral")]),
        None,
        pvc("pod1-ephemeral", namespace="ns1"),
        QUEUE,
        False,
    ),
    (
        "a pod doesn't have the same PVC as an added PVC",
        make_pod(namespace="ns1", volumes=[pvc_volume("pvc1")]),
        None,
        pvc("pvc2", namespace="ns1"),
        SKIP,
        False,
    ),
    ("a pod doesn't have any PVC attached", make_pod(namespace="ns1"), None, pvc("pvc2", namespace="ns1"), SKIP, False),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want", "err"), CSI_PVC_ROWS, ids=ids(CSI_PVC_ROWS))
def test_csi_limits_pvc_added(name: str, pod: PodInfo, old: object, new: object, want: int, err: bool) -> None:
    check(csi_hints.is_schedulable_after_pvc_added, pod, old, new, want, err)


_INLINE_EBS, _INLINE_GCE = {"awsElasticBlockStore": {"volumeID": "test"}}, {"gcePersistentDisk": {"pdName": "test"}}
CSI_VA_ROWS = [
    (
        "a pod has PVC when VolumeAttachment is deleting",
        make_pod(namespace="ns1", volumes=[pvc_volume("pvc1")]),
        attachment("test.storage.gke.io", "pv1"),
        None,
        QUEUE,
        False,
    ),
    (
        "a pod has an Inline Migratable volume (AWSEBSDriver) when VolumeAttachment (AWSEBSDriver) is deleting (match)",
        make_pod(namespace="ns1", volumes=[_INLINE_EBS]),
        attachment("ebs.csi.aws.com"),
        None,
        QUEUE,
        False,
    ),
    (
        "a pod has an Inline Migratable volume (GCEPDDriver) when VolumeAttachment (AWSEBSDriver) "
        "is deleting (no match)",
        make_pod(namespace="ns1", volumes=[_INLINE_GCE]),
        attachment("ebs.csi.aws.com"),
        None,
        SKIP,
        False,
    ),
    (
        "a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when VolumeAttachment (AWSEBSDriver) is deleting",
        make_pod(namespace="ns1", volumes=[_INLINE_EBS, pvc_volume("pvc1")]),
        attachment("ebs.csi.aws.com"),
        None,
        QUEUE,
        False,
    ),
    (
        "a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when VolumeAttachment (AWSEBSDriver)  "
        "is deleting",
        make_pod(namespace="ns1", volumes=[_INLINE_EBS, pvc_volume("pvc1")]),
        attachment("test.storage.gke.io", "pv1"),
        None,
        QUEUE,
        False,
    ),
    (
        "a pod has no PVC when VolumeAttachment is deleting",
        make_pod(namespace="ns1"),
        attachment("test.storage.gke.io", "pv1"),
        None,
        SKIP,
        False,
    ),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want", "err"), CSI_VA_ROWS, ids=ids(CSI_VA_ROWS))
def test_csi_limits_volume_attachment_deleted(
    name: str, pod: PodInfo, old: object, new: object, want: int, err: bool
) -> None:
    check(csi_hints.is_schedulable_after_volume_attachment_deleted, pod, old, new, want, err)


def _ebs_driver(count: int) -> list[dict[str, Any]]:
    return [{"name": "ebs.csi.aws.com", "nodeID": "test-node", "allocatable": {"count": count}}]


_TEST_POD = make_pod("test-pod", namespace="ns1", volumes=[st_pvc("csi-ebs.csi.aws.com-0")])
CSI_NODE_UPDATE_ROWS = [
    (
        "limit raised, queue",
        _TEST_POD,
        csi_node(drivers=_ebs_driver(1)),
        csi_node(drivers=_ebs_driver(2)),
        QUEUE,
        False,
    ),
    (
        "limit decreased, skip queueing",
        _TEST_POD,
        csi_node(drivers=_ebs_driver(2)),
        csi_node(drivers=_ebs_driver(1)),
        SKIP,
        False,
    ),
    (
        "limit unchanged, skip queueing",
        _TEST_POD,
        csi_node(drivers=_ebs_driver(1)),
        csi_node(drivers=_ebs_driver(1)),
        SKIP,
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want", "err"), CSI_NODE_UPDATE_ROWS, ids=ids(CSI_NODE_UPDATE_ROWS)
)
def test_csi_limits_csi_node_updated(name: str, pod: PodInfo, old: object, new: object, want: int, err: bool) -> None:
    check(csi_hints.is_schedulable_after_csi_node_updated, pod, old, new, want, err)


# -- SchedulingGates ----------------------------------------------------------------------------------

GATES_ROWS = [
    ("backoff-wrong-old-object", make_pod(), "not-a-pod", None, QUEUE, True),
    ("backoff-wrong-new-object", make_pod(), None, "not-a-pod", QUEUE, True),
    (
        "skip-queue-on-other-pod-updated",
        make_pod("p", gates=["foo", "bar"], uid="uid0"),
        make_pod("p1", gates=["foo", "bar"], uid="uid1"),
        make_pod("p1", gates=["foo"], uid="uid1"),
        SKIP,
        False,
    ),
    (
        "queue-on-the-unsched-pod-updated",
        make_pod("p", gates=["foo"], uid="uid-p"),
        make_pod("p", gates=["foo"], uid="uid-p"),
        make_pod("p", gates=[], uid="uid-p"),
        QUEUE,
        False,
    ),
]


@pytest.mark.parametrize(("name", "pod", "old", "new", "want", "err"), GATES_ROWS, ids=ids(GATES_ROWS))
def test_scheduling_gates_eliminated(name: str, pod: PodInfo, old: object, new: object, want: int, err: bool) -> None:
    check(schedulinggates.is_schedulable_after_update_pod_scheduling_gates_eliminated, pod, old, new, want, err)


# -- the registrations (each plugin's EventsToRegister, v1.36.3 source) --------------------------------

A, U = ActionType.ADD, ActionType.UPDATE


def _registered(events: Any) -> list[tuple[ClusterEvent, str]]:
    return [(e.event, e.hint.__name__ if e.hint is not None else "") for e in events]


def test_events_to_register_as_v1_36() -> None:
    """The events and hints each plugin registers, in upstream's order; Node without
    UpdateNodeTaint (queueing hints on: no preCheck) and CSIDriver Update only."""
    assert _registered(volume_binding.EVENTS) == [
        (ClusterEvent(STORAGE_CLASS, A | U), "is_schedulable_after_storage_class_change"),
        (ClusterEvent(PERSISTENT_VOLUME_CLAIM, A | U), "is_schedulable_after_persistent_volume_claim_change"),
        (ClusterEvent(PERSISTENT_VOLUME, A | U), ""),
        (ClusterEvent(NODE, A | ActionType.UPDATE_NODE_LABEL), ""),
        (ClusterEvent(CSI_NODE, A | U), "is_schedulable_after_csi_node_change"),
        (ClusterEvent(CSI_DRIVER, U), "is_schedulable_after_csi_driver_change"),
        (ClusterEvent(CSI_STORAGE_CAPACITY, A | U), "is_schedulable_after_csi_storage_capacity_change"),
    ]
    assert _registered(volume_zone.EVENTS) == [
        (ClusterEvent(STORAGE_CLASS, A), "is_schedulable_after_storage_class_added"),
        (ClusterEvent(NODE, A | ActionType.UPDATE_NODE_LABEL), ""),
        (ClusterEvent(PERSISTENT_VOLUME_CLAIM, A | U), "is_schedulable_after_persistent_volume_claim_change"),
        (ClusterEvent(PERSISTENT_VOLUME, A | U), "is_schedulable_after_persistent_volume_change"),
    ]
    assert _registered(volume_restrictions.EVENTS) == [
        (ClusterEvent(POD, ActionType.DELETE), "is_schedulable_after_pod_deleted"),
        (ClusterEvent(NODE, A), ""),
        (ClusterEvent(PERSISTENT_VOLUME_CLAIM, A), "is_schedulable_after_persistent_volume_claim_added"),
    ]
    assert _registered(csi_hints.EVENTS) == [
        (ClusterEvent(CSI_NODE, A), ""),
        (ClusterEvent(CSI_NODE, U), "is_schedulable_after_csi_node_updated"),
        (ClusterEvent(POD, ActionType.DELETE), "is_schedulable_after_pod_deleted"),
        (ClusterEvent(PERSISTENT_VOLUME_CLAIM, A), "is_schedulable_after_pvc_added"),
        (ClusterEvent(VOLUME_ATTACHMENT, ActionType.DELETE), "is_schedulable_after_volume_attachment_deleted"),
    ]
    assert _registered(schedulinggates.SchedulingGates().events_to_register()) == [
        (
            ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
            "is_schedulable_after_update_pod_scheduling_gates_eliminated",
        ),
    ]
    # the in-tree limits (gone from v1.36.3) keep v1.30's events, without hints
    in_tree = EBSLimits.events_to_register(None)  # type: ignore[arg-type]
    assert _registered(in_tree) == [(ClusterEvent(NODE, A), ""), (ClusterEvent(POD, ActionType.DELETE), "")]


def test_a_relist_event_without_objects_queues() -> None:
    """A relist records Add, Update and Delete without objects (app/cluster/volumes.py): every
    hint of these registrations then raises, which the queue counts as ``Queue``."""
    target = make_pod("p", volumes=[pvc_volume("data"), csi("d")])
    for events in (volume_binding.EVENTS, volume_zone.EVENTS, volume_restrictions.EVENTS, csi_hints.EVENTS):
        for registration in events:
            if registration.hint is not None:
                assert judge(registration.hint, target, None, None)[0] == QUEUE, registration


# -- through the scheduling queue ---------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_pod_parked_by_volume_binding_moves_on_its_claim_only() -> None:
    """A pod VolumeBinding rejected (its claim missing) stays parked on another claim's Add and on
    an unrelated CSIDriver update, and moves on its own claim's Add."""
    registered = {"VolumeBinding": volume_binding.EVENTS, "VolumeRestrictions": volume_restrictions.EVENTS}
    interest = [r.event for events in registered.values() for r in events]
    q = SchedulingQueue(clock=Clock(), registered=lambda p: registered.get(p, ()), interest=interest)
    target = make_pod("p", volumes=[pvc_volume("data")], uid="p")
    q.sync([target])
    assert q.pop() is target
    q.failed("p", unschedulable=True, plugins=["VolumeBinding"])
    assert q.get("p").where == UNSCHEDULABLE  # type: ignore[union-attr]
    add = ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD)
    other_driver = ObservedEvent(ClusterEvent(CSI_DRIVER, U), driver("d", True), driver("d", False))
    assert q.move_on([ObservedEvent(add, None, pvc("other")), other_driver]) == 0
    assert q.move_on([ObservedEvent(add, None, pvc("data", namespace="elsewhere"))]) == 0
    assert q.move_on([ObservedEvent(add, None, pvc("data"))]) == 1
    assert q.get("p").where == BACKOFF  # type: ignore[union-attr]

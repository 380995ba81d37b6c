"""NodeVolumeLimits and the in-tree limits. ``csi_test.go`` of kube-scheduler v1.36.3's
pkg/scheduler/framework/plugins/nodevolumelimits (``TestCSILimits``: the fake listers' claims,
volumes, class, CSINode and VolumeAttachments, each row's pods, limit source and statuses;
``TestVolumeLimitScalingGate``); ``non_csi_test.go`` of v1.30 for the in-tree limits v1.36.3 no
longer has (``TestEphemeralLimits``, ``TestAzureDiskLimits``, ``TestEBSLimits``,
``TestGCEPDLimits``, ``TestGetMaxVols``).

Adapted: upstream's fake PVC lister words its NotFound ``persistentvolumeclaims "x" not found``;
kube-scheduler's informer lister (and this cluster state) says ``persistentvolumeclaim``. The
``ephemeralEnabled: false`` row runs as the others (upstream does not read the field).
"""

from __future__ import annotations

from typing import Any

import pytest

from app.framework import SKIP, SUCCESS, Code, CycleState, Handle, NodeInfo, Status, features
from app.framework.types import NodeUsage
from app.plugins.volumes.node_volume_limits import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    KUBE_MAX_PD_VOLS,
    CSILimits,
    NonCSILimits,
    max_volumes_from_env,
    node_volume_limits,
)
from tests.unit.plugins.storage import pod_info, storage_cluster

Obj = dict[str, Any]
EBS_CSI, GCE_CSI = "ebs.csi.aws.com", "pd.csi.storage.gke.io"
AWS_EBS, HOSTPATH = "kubernetes.io/aws-ebs", "kubernetes.io/hostpath"
SC_NAME = "csi-sc"
NODE_NAME = "node-for-max-pd-test-1"
EXCEEDED = Status(Code.UNSCHEDULABLE, (ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,))


def make_pod(*claims: str, name: str = "", namespace: str = "", uid: str = "", volumes: list[Obj] | None = None) -> Obj:
    """``st.MakePod().PVC(claim)...`` (no namespace, as upstream's)."""
    vols = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "spec": {"volumes": [*vols, *(volumes or [])]},
    }


def csi_pvs(prefix: str, drivers: list[str]) -> list[Obj]:
    """``getFakeCSIPVLister``: four volumes per driver, EBS in-tree or hostPath or CSI."""
    out = []
    for driver in drivers:
        for j in range(4):
            handle = f"{prefix}-{driver}-{j}"
            if driver == AWS_EBS:
                spec: Obj = {"awsElasticBlockStore": {"volumeID": handle}}
            elif driver == HOSTPATH:
                spec = {}  # hostPath: no source the plugins read
            else:
                spec = {"csi": {"driver": driver, "volumeHandle": handle}}
            out.append({"metadata": {"name": handle}, "spec": spec})
    return out


def csi_pvcs(prefix: str, drivers: list[str]) -> list[Obj]:
    """``getFakeCSIPVCLister``: a bound claim per volume, then ``-4`` (unbound, class ``csi-sc``),
    ``-5`` (no class), ``-6`` (a missing volume, class ``csi-sc``)."""
    out: list[Obj] = []
    for driver in drivers:
        for j in range(4):
            name = f"{prefix}-{driver}-{j}"
            out.append({"metadata": {"name": name, "namespace": ""}, "spec": {"volumeName": name}})
    out.append({"metadata": {"name": f"{prefix}-4", "namespace": ""}, "spec": {"storageClassName": SC_NAME}})
    out.append({"metadata": {"name": f"{prefix}-5", "namespace": ""}, "spec": {}})
    out.append(
        {
            "metadata": {"name": f"{prefix}-6", "namespace": ""},
            "spec": {"storageClassName": SC_NAME, "volumeName": "missing-in-action"},
        }
    )
    return out


def node_with_limits(source: str, pods: list[Obj], limit: int, drivers: list[str]) -> tuple[NodeInfo, Obj | None]:
    """``getNodeWithPodAndVolumeLimits``: the node (no allocatable limit) with ``pods``, and its
    CSINode: the drivers with ``allocatable.count`` (``csinode``), without (``csinode-with-no-limit``),
    none (``no-csi-driver``) or no CSINode (v1.36.3 sets no migrated-plugins annotation)."""
    import msgspec

    from app.framework import objects

    node = msgspec.convert({"metadata": {"name": NODE_NAME}, "status": {"allocatable": {}}}, objects.Node)
    info = NodeInfo(NODE_NAME, node, NodeUsage(pods=tuple(pod_info(p) for p in pods)))
    if source not in ("csinode", "csinode-with-no-limit", "no-csi-driver"):
        return info, None
    drivers_doc = []
    if source != "no-csi-driver":
        for driver in drivers:
            entry: Obj = {"name": driver, "nodeID": NODE_NAME}
            if source == "csinode":
                entry["allocatable"] = {"count": limit}
            drivers_doc.append(entry)
    csi_node = {"metadata": {"name": NODE_NAME}, "spec": {"drivers": drivers_doc}}
    return info, csi_node


def volume_attachments(count: int, drivers: list[str]) -> list[Obj]:
    """``buildFakeClientWithVALister``: ``count`` VolumeAttachments per driver on the test node,
    ``va-<driver>-<j>`` of volume ``csi-<driver>-<j>``."""
    return [
        {
            "metadata": {"name": f"va-{driver}-{j}"},
            "spec": {
                "nodeName": NODE_NAME,
                "attacher": driver,
                "source": {"persistentVolumeName": f"csi-{driver}-{j}"},
            },
        }
        for driver in drivers
        for j in range(count)
    ]


running_pod = make_pod("csi-ebs.csi.aws.com-3")
pending_volume_pod = make_pod("csi-4")
unbound_pvc_pod2 = make_pod("csi-4")
missing_pv_pod = make_pod("csi-6")
no_sc_pvc_pod = make_pod("csi-5")
gce_two_vol_pod = make_pod("csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2")
in_tree_one_vol_pod = make_pod("csi-kubernetes.io/aws-ebs-0")
in_tree_two_vol_pod = make_pod("csi-kubernetes.io/aws-ebs-1", "csi-kubernetes.io/aws-ebs-2")
csi_ebs_one_vol_pod = make_pod("csi-ebs.csi.aws.com-0")
csi_ebs_two_vol_pod = make_pod("csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2")
in_tree_non_migratable_one_vol_pod = make_pod("csi-kubernetes.io/hostpath-0")
ephemeral_volume_pod = make_pod(name="abc", namespace="test", uid="12345", volumes=[{"name": "xyz", "ephemeral": {}}])
ephemeral_claim: Obj = {
    "metadata": {
        "name": "abc-xyz",
        "namespace": "test",
        "ownerReferences": [{"kind": "Pod", "name": "abc", "uid": "12345", "controller": True}],
    },
    "spec": {"storageClassName": SC_NAME},
}
conflicting_claim: Obj = {"metadata": {"name": "abc-xyz", "namespace": "test"}, "spec": {"storageClassName": SC_NAME}}
ephemeral_two_volume_pod = make_pod(
    name="abc",
    namespace="test",
    uid="12345II",
    volumes=[{"name": "x", "ephemeral": {}}, {"name": "y", "ephemeral": {}}],
)
ephemeral_claim_x: Obj = {
    "metadata": {
        "name": "abc-x",
        "namespace": "test",
        "ownerReferences": [{"kind": "Pod", "name": "abc", "uid": "12345II", "controller": True}],
    },
    "spec": {"storageClassName": SC_NAME},
}
ephemeral_claim_y: Obj = {
    "metadata": {
        "name": "abc-y",
        "namespace": "test",
        "ownerReferences": [{"kind": "Pod", "name": "abc", "uid": "12345II", "controller": True}],
    },
    "spec": {"storageClassName": SC_NAME},
}
in_tree_inline_vol_pod = make_pod(volumes=[{"name": "i", "awsElasticBlockStore": {"volumeID": "aws-inline1"}}])
in_tree_inline_same_csi_id_pod = make_pod(
    volumes=[{"name": "i", "awsElasticBlockStore": {"volumeID": "csi-ebs.csi.aws.com-1"}}]
)
only_configmap_and_secret_pod = make_pod(volumes=[{"name": "c", "configMap": {}}, {"name": "s", "secret": {}}])
pvc_pod_with_configmap_and_secret = make_pod(
    "csi-ebs.csi.aws.com-0", volumes=[{"name": "c", "configMap": {}}, {"name": "s", "secret": {}}]
)
ephemeral_pod_with_configmap_and_secret = make_pod(
    name="abc",
    namespace="test",
    volumes=[{"name": "c", "configMap": {}}, {"name": "s", "secret": {}}, {"name": "xyz", "ephemeral": {}}],
)
inline_migratable_pod_with_configmap_and_secret = make_pod(
    volumes=[
        {"name": "c", "configMap": {}},
        {"name": "s", "secret": {}},
        {"name": "i", "awsElasticBlockStore": {"volumeID": "aws-inline1"}},
    ]
)
ephemeral_missing = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found',)
)

# TestCSILimits: (test, new pod, existing pods, extra claims, max, drivers, limit source, Filter, PreFilter);
# the VolumeAttachment rows are in CSI_LIMITS_VA (their vaCount)
CSI_LIMITS: list[tuple[str, Obj, list[Obj], list[Obj], int, list[str], str, Status, Status]] = [
    (
        "fits when node volume limit >= new pods CSI volume",
        csi_ebs_one_vol_pod,
        [running_pod, csi_ebs_two_vol_pod],
        [],
        4,
        [EBS_CSI],
        "csinode",
        SUCCESS,
        SUCCESS,
    ),
    (
        "doesn't when node volume limit <= pods CSI volume",
        csi_ebs_one_vol_pod,
        [running_pod, csi_ebs_two_vol_pod],
        [],
        2,
        [EBS_CSI],
        "csinode",
        EXCEEDED,
        SUCCESS,
    ),
    (
        "should when driver does not support volume limits",
        csi_ebs_one_vol_pod,
        [running_pod, csi_ebs_two_vol_pod],
        [],
        2,
        [EBS_CSI],
        "csinode-with-no-limit",
        SUCCESS,
        SUCCESS,
    ),
    (
        "count pending PVCs towards volume limit <= pods CSI volume",
        csi_ebs_one_vol_pod,
        [pending_volume_pod, csi_ebs_two_vol_pod],
        [],
        2,
        [EBS_CSI],
        "csinode",
        EXCEEDED,
        SUCCESS,
    ),
    (
        "count multiple pending pvcs towards volume limit >= pods CSI volume",
        csi_ebs_one_vol_pod,
        [pending_volume_pod, unbound_pvc_pod2, csi_ebs_two_vol_pod],
        [],
        4,
        [EBS_CSI],
        "csinode",
        SUCCESS,
        SUCCESS,
    ),
    (
        "should count PVCs with invalid PV name but valid SC",
        csi_ebs_one_vol_pod,
        [missing_pv_pod, csi_ebs_two_vol_pod],
        [],
        2,
        [EBS_CSI],
        "csinode",
        EXCEEDED,
        SUCCESS,
    ),
    (
        "don't count pvcs with missing SC towards volume limit",
        csi_ebs_one_vol_pod,
        [running_pod, no_sc_pvc_pod],
        [],
        2,
        [EBS_CSI],
        "csinode",
        SUCCESS,
        SUCCESS,
    ),
    (
        "count pvcs with the same type towards volume limit",
        csi_ebs_one_vol_pod,
        [gce_two_vol_pod, csi_ebs_two_vol_pod],
        [],
        2,
        [EBS_CSI, GCE_CSI],
        "csinode",
        EXCEEDED,
        SUCCESS,
    ),
    (
        "don't count pvcs with different type towards volume limit",
        gce_two_vol_pod,
        [csi_ebs_two_vol_pod, running_pod],
        [],
        2,
        [EBS_CSI, GCE_CSI],
        "csinode",
        SUCCESS,
        SUCCESS,
    ),
    (
        "should count in-tree volumes if migration is enabled",
        in_tree_one_vol_pod,
        [in_tree_two_vol_pod],
        [],
        2,
        [AWS_EBS, EBS_CSI],
        "csinode",
        EXCEEDED,
        SUCCESS,
    ),
    ("nil csi node", in_tree_inline_vol_pod, [in_tree_two_vol_pod], [], 0, [AWS_EBS, EBS_CSI], "", SUCCESS, SUCCESS),
    (
        "should count unbound in-tree volumes if migration is enabled",
        pending_volume_pod,
        [in_tree_two_vol_pod],
        [],
        2,
        [AWS_EBS, EBS_CSI],
        "csinode",
        EXCEEDED,
        SUCCESS,
    ),
    (
        "should not limit pod if volume used does not report limits",
        in_tree_one_vol_pod,
        [in_tree_two_vol_pod],
        [],
        2,
        [AWS_EBS, EBS_CSI],
        "csinode-with-no-limit",
        SUCCESS,
        SUCCESS,
    ),
    (
        "should not count non-migratable in-tree volumes",
        in_tree_non_migratable_one_vol_pod,
        [csi_ebs_two_vol_pod],
        [],
        2,
        [HOSTPATH, EBS_CSI],
        "csinode",
        SUCCESS,
        SUCCESS,
    ),
    (
        "should count in-tree inline volumes if migration is enabled",
        in_tree_inline_vol_pod,
        [in_tree_two_vol_pod],
        [],
        2,
        [AWS_EBS, EBS_CSI],
        "csinode",
        EXCEEDED,
        SUCCESS,
    ),
    (
        "should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)",
        in_tree_one_vol_pod,
        [csi_ebs_two_vol_pod],
        [],
        2,
        [AWS_EBS, EBS_CSI],
        "csinode",
        EXCEEDED,
        SUCCESS,
    ),
    (
        "should count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",
        in_tree_inline_vol_pod,
        [csi_ebs_two_vol_pod, in_tree_one_vol_pod],
        [],
        3,
        [AWS_EBS, EBS_CSI],
        "csinode",
        EXCEEDED,
        SUCCESS,
    ),
    (
        "should not count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",
        in_tree_inline_same_csi_id_pod,
        [csi_ebs_two_vol_pod, in_tree_one_vol_pod],
        [],
        3,
        [AWS_EBS, EBS_CSI],
        "csinode",
        SUCCESS,
        SUCCESS,
    ),
    (
        "should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)",
        csi_ebs_one_vol_pod,
        [in_tree_two_vol_pod],
        [],
        2,
        [AWS_EBS, EBS_CSI],
        "csinode",
        EXCEEDED,
        SUCCESS,
    ),
    (
        "ephemeral volume missing",
        ephemeral_volume_pod,
        [],
        [],
        0,
        [EBS_CSI],
        "csinode-with-no-limit",
        ephemeral_missing,
        SUCCESS,
    ),
    (
        "ephemeral volume not owned",
        ephemeral_volume_pod,
        [],
        [conflicting_claim],
        0,
        [EBS_CSI],
        "csinode-with-no-limit",
        Status.error("PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"),
        SUCCESS,
    ),
    (
        "ephemeral volume unbound",
        ephemeral_volume_pod,
        [],
        [ephemeral_claim],
        0,
        [EBS_CSI],
        "csinode-with-no-limit",
        SUCCESS,
        SUCCESS,
    ),
    (
        "ephemeral doesn't when node volume limit <= pods CSI volume",
        ephemeral_volume_pod,
        [running_pod, csi_ebs_two_vol_pod],
        [ephemeral_claim],
        2,
        [EBS_CSI],
        "csinode",
        EXCEEDED,
        SUCCESS,
    ),
    (
        "ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
        csi_ebs_one_vol_pod,
        [running_pod, ephemeral_two_volume_pod],
        [ephemeral_claim_x, ephemeral_claim_y],
        2,
        [EBS_CSI],
        "csinode",
        EXCEEDED,
        SUCCESS,
    ),
    (
        "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume, "
        "ephemeral disabled",
        csi_ebs_one_vol_pod,
        [running_pod, ephemeral_volume_pod, csi_ebs_two_vol_pod],
        [ephemeral_claim],
        3,
        [EBS_CSI],
        "csinode",
        EXCEEDED,
        SUCCESS,
    ),
    (
        "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume",
        csi_ebs_one_vol_pod,
        [running_pod, ephemeral_volume_pod, csi_ebs_two_vol_pod],
        [ephemeral_claim],
        3,
        [EBS_CSI],
        "csinode",
        EXCEEDED,
        SUCCESS,
    ),
    (
        "persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume",
        csi_ebs_one_vol_pod,
        [running_pod, ephemeral_volume_pod, csi_ebs_two_vol_pod],
        [ephemeral_claim],
        5,
        [EBS_CSI],
        "csinode",
        SUCCESS,
        SUCCESS,
    ),
    (
        "skip Filter when the pod only uses secrets and configmaps",
        only_configmap_and_secret_pod,
        [],
        [],
        2,
        [EBS_CSI],
        "csinode",
        SUCCESS,
        SKIP,
    ),
    (
        "don't skip Filter when the pod has pvcs",
        pvc_pod_with_configmap_and_secret,
        [],
        [],
        2,
        [EBS_CSI],
        "csinode",
        SUCCESS,
        SUCCESS,
    ),
    (
        "don't skip Filter when the pod has ephemeral volumes",
        ephemeral_pod_with_configmap_and_secret,
        [],
        [],
        0,
        [EBS_CSI],
        "csinode-with-no-limit",
        ephemeral_missing,
        SUCCESS,
    ),
    (
        "don't skip Filter when the pod has inline migratable volumes",
        inline_migratable_pod_with_configmap_and_secret,
        [in_tree_two_vol_pod],
        [],
        2,
        [AWS_EBS, EBS_CSI],
        "csinode",
        EXCEEDED,
        SUCCESS,
    ),
]


@pytest.mark.parametrize(
    ("test", "new_pod", "existing", "extra", "max_vols", "drivers", "source", "want", "want_pre"),
    CSI_LIMITS,
    ids=[c[0] for c in CSI_LIMITS],
)
def test_csi_limits(
    test: str,
    new_pod: Obj,
    existing: list[Obj],
    extra: list[Obj],
    max_vols: int,
    drivers: list[str],
    source: str,
    want: Status,
    want_pre: Status,
) -> None:
    _check_csi_limits(new_pod, existing, extra, max_vols, drivers, source, want, want_pre, 0)


# TestCSILimits' rows with a vaCount: (test, new pod, existing pods, max, drivers, limit source, vaCount, Filter)
CSI_LIMITS_VA: list[tuple[str, Obj, list[Obj], int, list[str], str, int, Status]] = [
    (
        "should count VolumeAttachments towards volume limit when no pods exist",
        csi_ebs_one_vol_pod,
        [],
        2,
        [EBS_CSI],
        "csinode",
        2,
        EXCEEDED,
    ),
    (
        "should schedule pod when VolumeAttachments count does not exceed limit",
        csi_ebs_one_vol_pod,
        [],
        2,
        [EBS_CSI],
        "csinode",
        1,
        SUCCESS,
    ),
]


@pytest.mark.parametrize(
    ("test", "new_pod", "existing", "max_vols", "drivers", "source", "va_count", "want"),
    CSI_LIMITS_VA,
    ids=[c[0] for c in CSI_LIMITS_VA],
)
def test_csi_limits_volume_attachments(
    test: str,
    new_pod: Obj,
    existing: list[Obj],
    max_vols: int,
    drivers: list[str],
    source: str,
    va_count: int,
    want: Status,
) -> None:
    _check_csi_limits(new_pod, existing, [], max_vols, drivers, source, want, SUCCESS, va_count)


def _check_csi_limits(
    new_pod: Obj,
    existing: list[Obj],
    extra: list[Obj],
    max_vols: int,
    drivers: list[str],
    source: str,
    want: Status,
    want_pre: Status,
    va_count: int,
    csi_drivers: list[Obj] = (),  # type: ignore[assignment]
    volume_limit_scaling: bool = False,
) -> None:
    node, csi_node = node_with_limits(source, existing, max_vols, drivers)
    cluster = storage_cluster(
        [],
        [],
        persistentvolumes=csi_pvs("csi", drivers),
        persistentvolumeclaims=[*csi_pvcs("csi", drivers), *extra],
        storageclasses=[{"metadata": {"name": SC_NAME}, "provisioner": drivers[0]}],
        csinodes=[csi_node] if csi_node is not None else [],
        volumeattachments=volume_attachments(va_count, drivers),
        csidrivers=list(csi_drivers),
    )
    plugin = CSILimits(None, Handle("p", cluster=cluster), volume_limit_scaling=volume_limit_scaling)
    pod = pod_info(new_pod)
    assert plugin.pre_filter(CycleState(), pod, [node]) == (None, want_pre)
    if want_pre.code is not Code.SKIP:
        assert plugin.filter(CycleState(), pod, node) == want


NOT_INSTALLED = Status(Code.UNSCHEDULABLE, (f"{EBS_CSI} CSI driver is not installed on the node",))

# TestVolumeLimitScalingGate: (name, gate, limit source, limit, CSIDriver present,
# preventPodSchedulingIfMissing, Filter)
VOLUME_LIMIT_SCALING: list[tuple[str, bool, str, int, bool, bool, Status]] = [
    (
        "gate enabled - allow scheduling when CSIDriver exists but PreventPodSchedulingIfMissing is not set",
        True,
        "no-csi-driver",
        0,
        True,
        False,
        SUCCESS,
    ),
    (
        "gate enabled - fail when driver not installed and PreventPodSchedulingIfMissing is true",
        True,
        "no-csi-driver",
        0,
        True,
        True,
        NOT_INSTALLED,
    ),
    (
        "gate disabled - skip driver presence check (regardless of CSIDriver presence)",
        False,
        "no-csi-driver",
        0,
        True,
        True,
        SUCCESS,
    ),
    ("gate enabled - driver installed within limit", True, "csinode", 2, True, True, SUCCESS),
    ("gate enabled - allow scheduling when CSIDriver object missing", True, "no-csi-driver", 0, False, False, SUCCESS),
]


@pytest.mark.parametrize(
    ("name", "gate", "source", "limit", "present", "prevent", "want"),
    VOLUME_LIMIT_SCALING,
    ids=[c[0] for c in VOLUME_LIMIT_SCALING],
)
def test_volume_limit_scaling_gate(
    name: str, gate: bool, source: str, limit: int, present: bool, prevent: bool, want: Status
) -> None:
    """``TestVolumeLimitScalingGate`` (the gate is alpha and off in v1.36: the plugin is built with
    it as upstream's test sets ``enableVolumeLimitScaling``)."""
    driver: Obj = {"metadata": {"name": EBS_CSI}, "spec": {"preventPodSchedulingIfMissing": True} if prevent else {}}
    new_pod = make_pod("csi-ebs.csi.aws.com-0")
    csi_drivers = [driver] if present else []
    _check_csi_limits(new_pod, [], [], limit, [EBS_CSI], source, want, SUCCESS, 0, csi_drivers, gate)


def test_volume_limit_scaling_is_off_by_default_and_follows_the_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate's v1.36 default (alpha, off): a plugin built without the flag does not check; with
    ``featureGates: {VolumeLimitScaling: true}`` in effect it does."""
    cluster = storage_cluster([], [])
    assert CSILimits(None, Handle("p", cluster=cluster)).volume_limit_scaling is False
    monkeypatch.setattr(features, "_current", features.FeatureGates({"VolumeLimitScaling": True}))
    assert CSILimits(None, Handle("p", cluster=cluster)).volume_limit_scaling is True


def test_node_volume_limits_read_only_the_csinode() -> None:
    """``getVolumeLimits`` (v1.36.3): the CSINode drivers' counts under the driver names; none
    without a CSINode (the node's ``attachable-volumes-csi-*`` allocatable is not read)."""
    import msgspec

    from app.framework.volumes import CSINode

    csi_node = msgspec.convert(
        {
            "metadata": {"name": "n"},
            "spec": {"drivers": [{"name": EBS_CSI, "allocatable": {"count": 3}}, {"name": "x"}]},
        },
        CSINode,
    )
    assert node_volume_limits(csi_node) == {EBS_CSI: 3}
    assert node_volume_limits(None) == {}


# -- non_csi_test.go ------------------------------------------------------------------------------

FILTER_NAME = {"EBSLimits": "EBS", "GCEPDLimits": "GCE", "AzureDiskLimits": "AzureDisk"}
LIMIT_KEY = {
    "EBSLimits": "attachable-volumes-aws-ebs",
    "GCEPDLimits": "attachable-volumes-gce-pd",
    "AzureDiskLimits": "attachable-volumes-azure-disk",
}


def ebs(volume_id: str) -> Obj:
    return {"name": volume_id, "awsElasticBlockStore": {"volumeID": volume_id}}


one_vol_pod = make_pod(volumes=[ebs("ovp")])
two_vol_pod = make_pod(volumes=[ebs("tvp1"), ebs("tvp2")])
split_vols_pod = make_pod(volumes=[{"name": "h", "hostPath": {}}, ebs("svp")])
non_applicable_pod = make_pod(volumes=[{"name": "h", "hostPath": {}}])
deleted_pvc_pod = make_pod("deletedPVC")
two_deleted_pvc_pod = make_pod("deletedPVC", "anotherDeletedPVC")
deleted_pv_pod = make_pod("pvcWithDeletedPV")
deleted_pv_pod2 = make_pod("pvcWithDeletedPV")
another_deleted_pv_pod = make_pod("anotherPVCWithDeletedPV")
empty_pod = make_pod()
unbound_pvc_pod = make_pod("unboundPVC")
unbound_pvc_pod_2 = make_pod("unboundPVC")
another_unbound_pvc_pod = make_pod("anotherUnboundPVC")
unbound_pvc_with_invalid_sc_pod = make_pod("unboundPVCWithInvalidSCPod")
unbound_pvc_with_default_sc_pod = make_pod("unboundPVCWithDefaultSCPod")


def one_pvc_pod(filter_name: str) -> Obj:
    return make_pod(f"some{filter_name}Vol")


def split_pvc_pod(filter_name: str) -> Obj:
    return make_pod(f"someNon{filter_name}Vol", f"some{filter_name}Vol")


def fake_pvcs(filter_name: str) -> list[Obj]:
    """``getFakePVCLister``."""

    def c(name: str, volume: str = "", class_name: str = filter_name) -> Obj:
        return {
            "metadata": {"name": name, "namespace": ""},
            "spec": {"volumeName": volume, "storageClassName": class_name},
        }

    return [
        c(f"some{filter_name}Vol", f"some{filter_name}Vol"),
        c(f"someNon{filter_name}Vol", f"someNon{filter_name}Vol"),
        c("pvcWithDeletedPV", "pvcWithDeletedPV"),
        c("anotherPVCWithDeletedPV", "anotherPVCWithDeletedPV"),
        c("unboundPVC"),
        c("anotherUnboundPVC"),
        c("unboundPVCWithDefaultSCPod", class_name="standard-sc"),
        c("unboundPVCWithInvalidSCPod", class_name="invalid-sc"),
    ]


def fake_pvs(filter_name: str) -> list[Obj]:
    """``getFakePVLister``: the ``some<filter>Vol`` volume is an EBS volume (for every filter)."""
    return [
        {
            "metadata": {"name": f"some{filter_name}Vol"},
            "spec": {"awsElasticBlockStore": {"volumeID": f"{filter_name.lower()}Vol"}},
        },
        {"metadata": {"name": f"someNon{filter_name}Vol"}, "spec": {}},
    ]


def _non_csi(
    plugin_name: str, driver: str, new_pod: Obj, existing: list[Obj], max_vols: int, extra: list[Obj] = ()
) -> Status:  # type: ignore[assignment]
    """``getNodeWithPodAndVolumeLimits("node", ...)``: the limit in the node's allocatable, no CSINode."""
    import msgspec

    from app.framework import objects

    filter_name = FILTER_NAME[plugin_name]
    node = msgspec.convert(
        {"metadata": {"name": NODE_NAME}, "status": {"allocatable": {LIMIT_KEY[plugin_name]: str(max_vols)}}},
        objects.Node,
    )
    info = NodeInfo(NODE_NAME, node, NodeUsage(pods=tuple(pod_info(p) for p in existing)))
    cluster = storage_cluster(
        [],
        [],
        persistentvolumes=fake_pvs(filter_name),
        persistentvolumeclaims=[*fake_pvcs(filter_name), *extra],
        storageclasses=[{"metadata": {"name": filter_name}, "provisioner": driver}],
    )
    plugin = NonCSILimits(plugin_name, Handle("p", cluster=cluster))
    return plugin.filter(CycleState(), pod_info(new_pod), info)


# (test, new pod, existing pods, max, Filter) per plugin


def same_rows(f: str) -> list[tuple[str, Obj, list[Obj], int, Status]]:
    """``TestAzureDiskLimits`` and ``TestGCEPDLimits`` (the same rows): the pods hold EBS volumes
    and the fake volumes are EBS volumes, so nothing counts and every row fits."""
    return [
        (f"fits when node capacity >= new pod's {f} volumes", one_vol_pod, [two_vol_pod, one_vol_pod], 4, SUCCESS),
        (f"fit when node capacity < new pod's {f} volumes", two_vol_pod, [one_vol_pod], 2, SUCCESS),
        (f"new pod's count ignores non-{f} volumes", split_vols_pod, [two_vol_pod], 3, SUCCESS),
        (
            f"existing pods' counts ignore non-{f} volumes",
            two_vol_pod,
            [split_vols_pod, non_applicable_pod, empty_pod],
            3,
            SUCCESS,
        ),
        (
            f"new pod's count considers PVCs backed by {f} volumes",
            one_pvc_pod(f),
            [split_vols_pod, non_applicable_pod, empty_pod],
            3,
            SUCCESS,
        ),
        (
            f"new pod's count ignores PVCs not backed by {f} volumes",
            split_pvc_pod(f),
            [split_vols_pod, one_vol_pod],
            3,
            SUCCESS,
        ),
        (
            f"existing pods' counts considers PVCs backed by {f} volumes",
            two_vol_pod,
            [one_vol_pod, one_pvc_pod(f)],
            3,
            SUCCESS,
        ),
        (
            f"already-mounted {f} volumes are always ok to allow",
            two_vol_pod,
            [one_vol_pod, two_vol_pod, one_pvc_pod(f)],
            4,
            SUCCESS,
        ),
        (
            f"the same {f} volumes are not counted multiple times",
            split_vols_pod,
            [one_vol_pod, one_vol_pod, one_pvc_pod(f)],
            3,
            SUCCESS,
        ),
        (
            "pod with missing PVC is counted towards the PV limit",
            one_pvc_pod(f),
            [one_vol_pod, deleted_pvc_pod],
            2,
            SUCCESS,
        ),
        (
            "pod with missing PVC is counted towards the PV limit (3)",
            one_pvc_pod(f),
            [one_vol_pod, deleted_pvc_pod],
            3,
            SUCCESS,
        ),
        (
            "pod with missing two PVCs is counted towards the PV limit twice",
            one_pvc_pod(f),
            [one_vol_pod, two_deleted_pvc_pod],
            3,
            SUCCESS,
        ),
        (
            "pod with missing PV is counted towards the PV limit",
            one_pvc_pod(f),
            [one_vol_pod, deleted_pv_pod],
            2,
            SUCCESS,
        ),
        (
            "pod with missing PV is counted towards the PV limit (3)",
            one_pvc_pod(f),
            [one_vol_pod, deleted_pv_pod],
            3,
            SUCCESS,
        ),
        (
            "two pods missing the same PV are counted towards the PV limit only once",
            deleted_pv_pod2,
            [one_vol_pod, deleted_pv_pod],
            2,
            SUCCESS,
        ),
        (
            "two pods missing different PVs are counted towards the PV limit twice",
            another_deleted_pv_pod,
            [one_vol_pod, deleted_pv_pod],
            2,
            SUCCESS,
        ),
        (
            "pod with unbound PVC is counted towards the PV limit",
            one_pvc_pod(f),
            [one_vol_pod, unbound_pvc_pod],
            2,
            SUCCESS,
        ),
        (
            "pod with unbound PVC is counted towards the PV limit (3)",
            one_pvc_pod(f),
            [one_vol_pod, unbound_pvc_pod],
            3,
            SUCCESS,
        ),
        (
            "the same unbound PVC in multiple pods is counted towards the PV limit only once",
            unbound_pvc_pod_2,
            [one_vol_pod, unbound_pvc_pod],
            2,
            SUCCESS,
        ),
        (
            "two different unbound PVCs are counted towards the PV limit as two volumes",
            another_unbound_pvc_pod,
            [one_vol_pod, unbound_pvc_pod],
            2,
            SUCCESS,
        ),
    ]


AZURE = same_rows("AzureDisk")
GCE_ROWS = same_rows("GCE")
EBS = [
    ("fits when node capacity >= new pod's EBS volumes", one_vol_pod, [two_vol_pod, one_vol_pod], 4, SUCCESS),
    ("doesn't fit when node capacity < new pod's EBS volumes", two_vol_pod, [one_vol_pod], 2, EXCEEDED),
    ("new pod's count ignores non-EBS volumes", split_vols_pod, [two_vol_pod], 3, SUCCESS),
    (
        "existing pods' counts ignore non-EBS volumes",
        two_vol_pod,
        [split_vols_pod, non_applicable_pod, empty_pod],
        3,
        SUCCESS,
    ),
    (
        "new pod's count considers PVCs backed by EBS volumes",
        one_pvc_pod("EBS"),
        [split_vols_pod, non_applicable_pod, empty_pod],
        3,
        SUCCESS,
    ),
    (
        "new pod's count ignores PVCs not backed by EBS volumes",
        split_pvc_pod("EBS"),
        [split_vols_pod, one_vol_pod],
        3,
        SUCCESS,
    ),
    (
        "existing pods' counts considers PVCs backed by EBS volumes",
        two_vol_pod,
        [one_vol_pod, one_pvc_pod("EBS")],
        3,
        EXCEEDED,
    ),
    (
        "already-mounted EBS volumes are always ok to allow",
        two_vol_pod,
        [one_vol_pod, two_vol_pod, one_pvc_pod("EBS")],
        4,
        SUCCESS,
    ),
    (
        "the same EBS volumes are not counted multiple times",
        split_vols_pod,
        [one_vol_pod, one_vol_pod, one_pvc_pod("EBS")],
        3,
        SUCCESS,
    ),
    (
        "missing PVC is not counted towards the PV limit",
        one_pvc_pod("EBS"),
        [one_vol_pod, deleted_pvc_pod],
        1,
        EXCEEDED,
    ),
    (
        "missing PVC is not counted towards the PV limit (2)",
        one_pvc_pod("EBS"),
        [one_vol_pod, deleted_pvc_pod],
        2,
        SUCCESS,
    ),
    (
        "two missing PVCs are not counted towards the PV limit twice",
        one_pvc_pod("EBS"),
        [one_vol_pod, two_deleted_pvc_pod],
        2,
        SUCCESS,
    ),
    (
        "unbound PVC with invalid SC is not counted towards the PV limit",
        unbound_pvc_with_invalid_sc_pod,
        [one_vol_pod],
        1,
        SUCCESS,
    ),
    (
        "unbound PVC from different provisioner is not counted towards the PV limit",
        unbound_pvc_with_default_sc_pod,
        [one_vol_pod],
        1,
        SUCCESS,
    ),
    (
        "pod with missing PV is counted towards the PV limit",
        one_pvc_pod("EBS"),
        [one_vol_pod, deleted_pv_pod],
        2,
        EXCEEDED,
    ),
    (
        "pod with missing PV is counted towards the PV limit (3)",
        one_pvc_pod("EBS"),
        [one_vol_pod, deleted_pv_pod],
        3,
        SUCCESS,
    ),
    (
        "two pods missing the same PV are counted towards the PV limit only once",
        deleted_pv_pod2,
        [one_vol_pod, deleted_pv_pod],
        2,
        SUCCESS,
    ),
    (
        "two pods missing different PVs are counted towards the PV limit twice",
        another_deleted_pv_pod,
        [one_vol_pod, deleted_pv_pod],
        2,
        EXCEEDED,
    ),
    (
        "pod with unbound PVC is counted towards the PV limit",
        one_pvc_pod("EBS"),
        [one_vol_pod, unbound_pvc_pod],
        2,
        EXCEEDED,
    ),
    (
        "pod with unbound PVC is counted towards the PV limit (3)",
        one_pvc_pod("EBS"),
        [one_vol_pod, unbound_pvc_pod],
        3,
        SUCCESS,
    ),
    (
        "the same unbound PVC in multiple pods is counted towards the PV limit only once",
        unbound_pvc_pod_2,
        [one_vol_pod, unbound_pvc_pod],
        2,
        SUCCESS,
    ),
    (
        "two different unbound PVCs are counted towards the PV limit as two volumes",
        another_unbound_pvc_pod,
        [one_vol_pod, unbound_pvc_pod],
        2,
        EXCEEDED,
    ),
]


@pytest.mark.parametrize(("test", "new_pod", "existing", "max_vols", "want"), AZURE, ids=[c[0] for c in AZURE])
def test_azure_disk_limits(test: str, new_pod: Obj, existing: list[Obj], max_vols: int, want: Status) -> None:
    assert _non_csi("AzureDiskLimits", "", new_pod, existing, max_vols) == want


@pytest.mark.parametrize(("test", "new_pod", "existing", "max_vols", "want"), EBS, ids=[c[0] for c in EBS])
def test_ebs_limits(test: str, new_pod: Obj, existing: list[Obj], max_vols: int, want: Status) -> None:
    assert _non_csi("EBSLimits", AWS_EBS, new_pod, existing, max_vols) == want


@pytest.mark.parametrize(("test", "new_pod", "existing", "max_vols", "want"), GCE_ROWS, ids=[c[0] for c in GCE_ROWS])
def test_gce_pd_limits(test: str, new_pod: Obj, existing: list[Obj], max_vols: int, want: Status) -> None:
    assert _non_csi("GCEPDLimits", "", new_pod, existing, max_vols) == want


EPHEMERAL_CLAIM: Obj = {
    "metadata": {
        "name": "abc-xyz",
        "namespace": "test",
        "ownerReferences": [{"kind": "Pod", "name": "abc", "uid": "12345", "controller": True}],
    },
    "spec": {"volumeName": "missing", "storageClassName": "GCE"},
}
CONFLICTING: Obj = {
    "metadata": {"name": "abc-xyz", "namespace": "test"},
    "spec": {"volumeName": "missing", "storageClassName": "GCE"},
}
EPHEMERAL = [
    ("volume missing", [], 0, Status.error('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found')),
    (
        "volume not owned",
        [CONFLICTING],
        0,
        Status.error("PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"),
    ),
    ("volume unbound, allowed", [EPHEMERAL_CLAIM], 1, SUCCESS),
    ("volume unbound, exceeds limit", [EPHEMERAL_CLAIM], 0, EXCEEDED),
]


@pytest.mark.parametrize(("test", "extra", "max_vols", "want"), EPHEMERAL, ids=[c[0] for c in EPHEMERAL])
def test_ephemeral_limits(test: str, extra: list[Obj], max_vols: int, want: Status) -> None:
    assert _non_csi("GCEPDLimits", "kubernetes.io/gce-pd", ephemeral_volume_pod, [], max_vols, extra) == want


@pytest.mark.parametrize(("raw", "expected"), [("invalid", -1), ("-2", -1), ("40", 40)])
def test_get_max_vols(raw: str, expected: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``TestGetMaxVols``: ``KUBE_MAX_PD_VOLS``."""
    monkeypatch.setenv(KUBE_MAX_PD_VOLS, raw)
    assert max_volumes_from_env() == expected


def test_in_tree_limits_defer_to_csi_where_a_csinode_exists() -> None:
    """``IsMigrated``: with a CSINode (any annotation), v1.30 counts EBS, GCE PD and Azure Disk in
    NodeVolumeLimits, so the in-tree count admits the pod."""
    import msgspec

    from app.framework import objects

    node = msgspec.convert(
        {"metadata": {"name": NODE_NAME}, "status": {"allocatable": {"attachable-volumes-aws-ebs": "0"}}}, objects.Node
    )
    info = NodeInfo(NODE_NAME, node, NodeUsage())
    for csi_nodes, want in (([], EXCEEDED), ([{"metadata": {"name": NODE_NAME}}], SUCCESS)):
        cluster = storage_cluster([], [], csinodes=csi_nodes)
        plugin = NonCSILimits("EBSLimits", Handle("p", cluster=cluster))
        assert plugin.filter(CycleState(), pod_info(one_vol_pod), info) == want
    assert NonCSILimits("EBSLimits", Handle("p", cluster=storage_cluster())).pre_filter(
        CycleState(), pod_info(empty_pod), []
    ) == (None, SKIP)


def test_default_in_tree_limits_follow_the_instance_type(monkeypatch: pytest.MonkeyPatch) -> None:
    """``getMaxEBSVolume``: 25 on Nitro instance types (``^[cmr]5.*|t3|z1d``), else 39;
    ``KUBE_MAX_PD_VOLS`` overrides both."""
    import msgspec

    from app.framework import objects

    monkeypatch.delenv(KUBE_MAX_PD_VOLS, raising=False)
    pods = [make_pod(volumes=[ebs(f"v{i}")]) for i in range(25)]
    cluster = storage_cluster()
    plugin = NonCSILimits("EBSLimits", Handle("p", cluster=cluster))
    for instance, want in (("m5.large", EXCEEDED), ("m4.large", SUCCESS), ("t3.micro", EXCEEDED)):
        node = msgspec.convert(
            {"metadata": {"name": "n", "labels": {"node.kubernetes.io/instance-type": instance}}}, objects.Node
        )
        info = NodeInfo("n", node, NodeUsage(pods=tuple(pod_info(p) for p in pods)))
        assert plugin.filter(CycleState(), pod_info(one_vol_pod), info) == want, instance
    monkeypatch.setenv(KUBE_MAX_PD_VOLS, "40")
    node = msgspec.convert(
        {"metadata": {"name": "n", "labels": {"node.kubernetes.io/instance-type": "m5.large"}}}, objects.Node
    )
    assert (
        plugin.filter(
            CycleState(), pod_info(one_vol_pod), NodeInfo("n", node, NodeUsage(pods=tuple(pod_info(p) for p in pods)))
        )
        == SUCCESS
    )

"""NodeVolumeLimits and the in-tree EBSLimits, GCEPDLimits, AzureDiskLimits: a node never gets more
volumes of a driver than it can attach.

NodeVolumeLimits ports kube-scheduler v1.36.3's pkg/scheduler/framework/plugins/nodevolumelimits
(``csi.go``, ``utils.go``); the in-tree three port v1.30's ``non_csi.go`` (gone from v1.36.3).

**NodeVolumeLimits** (``CSILimits``):

- **PreFilter**: ``Skip`` unless the pod has a claim (``persistentVolumeClaim``, ``ephemeral``)
  or an inline in-tree volume CSI migration knows (``IsInlineMigratable``).
- **Filter**: the pod's attachable volumes, each as ``driver/handle`` under its CSI driver: a
  claim's bound volume's CSI source, an in-tree volume translated to CSI where the node migrated
  it (:mod:`app.plugins.volumes.translation`), an unbound claim as its class's provisioner with a
  placeholder handle, a migrated inline in-tree volume. A missing claim is
  ``UnschedulableAndUnresolvable`` ``looking up PVC ns/x: persistentvolumeclaim "x" not found``.
  The node's limits are its CSINode's drivers' ``allocatable.count`` (``getVolumeLimits``; the
  node's ``attachable-volumes-*`` allocatable is no longer read); without any the node fits. The
  volumes the node's pods use, and the node's VolumeAttachments of CSI volumes
  (``getNodeVolumeAttachmentInfo``), are counted once each; ``Unschedulable`` ``node(s) exceed
  max volume count`` when a driver's count would pass its limit. With the ``VolumeLimitScaling``
  gate (alpha, off) a driver whose CSIDriver sets ``preventPodSchedulingIfMissing`` and is not on
  the node's CSINode is ``Unschedulable`` ``<driver> CSI driver is not installed on the node``.

**EBSLimits, GCEPDLimits, AzureDiskLimits** (v1.30's ``nonCSILimits``; not in v1.36.3 nor in the
default profile): the same count for their in-tree volume type (``awsElasticBlockStore``,
``gcePersistentDisk``, ``azureDisk``, and claims bound to such volumes or of a class with their
in-tree provisioner), against ``KUBE_MAX_PD_VOLS``, else the node's ``attachable-volumes-*``
allocatable, else 39 EBS (25 on Nitro), 16 GCE PD, 16 Azure Disk; skipped on a node with a CSINode.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from app.framework import features, objects, signers
from app.framework.errors import SchedulerExtenderError
from app.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint, with_hints
from app.framework.handle import Handle
from app.framework.interfaces import SignFragment
from app.framework.registry import PluginEntry
from app.framework.status import SKIP, SUCCESS, Code, Status
from app.framework.types import NO_NODE, CycleState, NodeInfo, PodInfo, PreFilterResult
from app.framework.volumes import CSINode, PersistentVolume, PersistentVolumeClaim, claim_class
from app.plugins.volumes.csi_hints import EVENTS as CSI_EVENTS
from app.plugins.volumes.helpers import claim_not_found, needs_volumes, volume_claim, volume_cluster, volume_is_for_pod
from app.plugins.volumes.translation import (
    AWS_EBS,
    AZURE_DISK,
    GCE_PD,
    TranslationError,
    csi_name_from_in_tree_name,
    in_tree_plugin_name,
    is_csi_migration_on,
    is_inline_migratable,
    is_migratable_in_tree_plugin_by_name,
    is_pv_migratable,
    translate_in_tree_inline_volume_to_csi,
    translate_in_tree_pv_to_csi,
)

CSI_NAME = "NodeVolumeLimits"
EBS_NAME, GCE_PD_NAME, AZURE_DISK_NAME = "EBSLimits", "GCEPDLimits", "AzureDiskLimits"
#: ``ErrReasonMaxVolumeCountExceeded``
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
#: ``v1.ResourceAttachableVolumesPrefix`` (the in-tree limits' allocatable)
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
#: ``KubeMaxPDVols``: the environment variable overriding the in-tree limits
KUBE_MAX_PD_VOLS = "KUBE_MAX_PD_VOLS"
DEFAULT_MAX_EBS_VOLUMES, DEFAULT_MAX_EBS_NITRO_VOLUMES = 39, 25
DEFAULT_MAX_GCE_PD_VOLUMES = DEFAULT_MAX_AZURE_DISK_VOLUMES = 16
#: ``volumeutil.EBSNitroLimitRegex``
EBS_NITRO_INSTANCE_TYPES = re.compile(r"^[cmr]5.*|t3|z1d")
LABEL_INSTANCE_TYPE, LABEL_INSTANCE_TYPE_STABLE = "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type"

_MAX_COUNT = Status(Code.UNSCHEDULABLE, (ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,))
#: the alpha gate of ``checkCSIDriverOnNode`` (off in v1.36)
VOLUME_LIMIT_SCALING = "VolumeLimitScaling"
_NON_CSI_EVENTS = (ClusterEvent(NODE, ActionType.ADD), ClusterEvent(POD, ActionType.DELETE))


class LimitsError(SchedulerExtenderError):
    """Counting a pod's volumes failed; ``unresolvable``: a claim of the pod is missing."""

    def __init__(self, message: str, unresolvable: bool = False) -> None:
        super().__init__(message)
        self.unresolvable = unresolvable


def volume_limits(node: NodeInfo) -> dict[str, int]:
    """``volumeLimits``: the node's ``attachable-volumes-*`` allocatable."""
    return {k: v for k, v in node.allocatable.items() if k.startswith(ATTACHABLE_VOLUMES_PREFIX)}


def node_volume_limits(csi_node: CSINode | None) -> dict[str, int]:
    """``getVolumeLimits``: each CSINode driver's ``allocatable.count`` under the driver's name
    (none without a CSINode)."""
    limits: dict[str, int] = {}
    if csi_node is not None and csi_node.spec is not None:
        for driver in csi_node.spec.drivers or ():
            if driver.allocatable is not None and driver.allocatable.count is not None:
                limits[driver.name or ""] = driver.allocatable.count
    return limits


def _wants_csi_filter(pod: PodInfo) -> bool:
    return any(
        v.persistent_volume_claim is not None or v.ephemeral is not None or is_inline_migratable(v) for v in pod.volumes
    )


class CSILimits:
    """``CSILimits``: PreFilter + Filter (see the module doc). Takes no args."""

    name = CSI_NAME

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (nodevolumelimits/csi.go, v1.36.3): the pod's volume sources."""
        return [(signers.VOLUMES, signers.volumes(pod))], SUCCESS

    def __init__(
        self, args: None = None, handle: Handle | None = None, volume_limit_scaling: bool | None = None
    ) -> None:
        _, self.volumes = volume_cluster(handle, CSI_NAME)
        #: ``randomVolumeIDPrefix``: the placeholder handles of unbound claims never match a real one
        self.random_prefix = secrets.token_hex(16)
        #: ``enableVolumeLimitScaling`` (the gate in effect unless given)
        self.volume_limit_scaling = (
            features.current().enabled(VOLUME_LIMIT_SCALING) if volume_limit_scaling is None else volume_limit_scaling
        )

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """``PreFilter``: ``Skip`` for a pod without claims or migratable inline volumes (no
        PreFilterResult)."""
        return None, SUCCESS if _wants_csi_filter(pod) else SKIP

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``Filter`` (module doc)."""
        if not pod.volumes:
            return SUCCESS
        if node.node is None:
            return Status.error(NO_NODE)
        csi_node = self.volumes.csi_node(node.name)
        new: dict[str, str] = {}
        try:
            self.attachable_volumes(pod, csi_node, True, new)
        except LimitsError as exc:
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if exc.unresolvable else Code.ERROR
            return Status(code, (str(exc),))
        if not new:
            return SUCCESS
        if self.volume_limit_scaling:
            for driver in new.values():
                if not self.csi_driver_on_node(driver, csi_node):
                    return Status(Code.UNSCHEDULABLE, (f"{driver} CSI driver is not installed on the node",))
        limits = node_volume_limits(csi_node)
        if not limits:
            return SUCCESS
        attached: dict[str, str] = {}
        try:
            for existing in node.pods:
                self.attachable_volumes(existing, csi_node, False, attached)
        except LimitsError as exc:
            return Status.error(str(exc))
        attached_count: dict[str, int] = {}
        for unique, driver in attached.items():
            new.pop(unique, None)  # a volume used by several pods counts once
            attached_count[driver] = attached_count.get(driver, 0) + 1
        for unique, driver in self.node_volume_attachments(node.name).items():
            if unique not in attached:  # a volume of a pod on the node counts once
                attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in new.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return _MAX_COUNT
        return SUCCESS

    def csi_driver_on_node(self, driver: str, csi_node: CSINode | None) -> bool:
        """``checkCSIDriverOnNode`` (``VolumeLimitScaling``): ``False`` only for a CSIDriver that
        sets ``preventPodSchedulingIfMissing`` and is not among the CSINode's drivers."""
        csi_driver = self.volumes.csi_driver(driver)
        if csi_driver is None or csi_driver.spec is None or not csi_driver.spec.prevent_pod_scheduling_if_missing:
            return True
        if csi_node is None or csi_node.spec is None:
            return False
        return any(d.name == driver for d in csi_node.spec.drivers or ())

    def node_volume_attachments(self, node_name: str) -> dict[str, str]:
        """``getNodeVolumeAttachmentInfo``: ``driver/handle -> driver`` of the node's
        VolumeAttachments that have an attacher and a PersistentVolume with a CSI source."""
        out: dict[str, str] = {}
        for va in self.volumes.volume_attachments(node_name):
            spec = va.spec
            if spec is None or (spec.node_name or "") != node_name or not spec.attacher:
                continue
            pv_name = spec.source.persistent_volume_name if spec.source is not None else None
            if pv_name is None:
                continue
            pv = self.volumes.volume(pv_name)
            if pv is None or pv.specs.csi is None:
                continue
            out[f"{spec.attacher}/{pv.specs.csi.volume_handle or ''}"] = spec.attacher
        return out

    def attachable_volumes(self, pod: PodInfo, csi_node: CSINode | None, new_pod: bool, result: dict[str, str]) -> None:
        """``filterAttachableVolumes``: add ``driver/handle -> driver`` of each of the pod's
        attachable volumes to ``result``. Raises :class:`LimitsError`."""
        for volume in pod.volumes:
            claim = volume_claim(pod, volume)
            if claim is None:
                self._inline(volume, csi_node, result)
                continue
            name, ephemeral = claim
            if not name:
                raise LimitsError("PersistentVolumeClaim had no name")
            pvc = self.volumes.claim(pod.namespace, name)
            if pvc is None:
                if new_pod:
                    message = f"looking up PVC {pod.namespace}/{name}: {claim_not_found(name)}"
                    raise LimitsError(message, unresolvable=True)
                continue  # an existing pod's claim that cannot be read is not counted
            if ephemeral:
                error = volume_is_for_pod(pod, pvc)
                if error:
                    raise LimitsError(error)
            driver, handle = self.csi_driver_info(csi_node, pvc)
            if not driver or not handle:
                continue
            result[f"{driver}/{handle}"] = driver

    def _inline(self, volume: objects.Volume, csi_node: CSINode | None, result: dict[str, str]) -> None:
        """``checkAttachableInlineVolume``: a migratable inline in-tree volume on a node that
        migrated its plugin."""
        if not is_inline_migratable(volume):
            return
        try:
            plugin = in_tree_plugin_name(volume=volume)
        except TranslationError as exc:
            raise LimitsError(f"looking up provisioner name for volume {volume.name}: {exc}") from None
        if not is_csi_migration_on(csi_node, plugin):
            return
        try:
            translated = translate_in_tree_inline_volume_to_csi(volume)
        except TranslationError as exc:
            raise LimitsError(f"converting volume({volume.name}) from inline to csi: {exc}") from None
        driver = csi_name_from_in_tree_name(plugin)
        csi = translated.specs.csi
        if csi is None:
            return
        result[f"{driver}/{csi.volume_handle or ''}"] = driver

    def csi_driver_info(self, csi_node: CSINode | None, pvc: PersistentVolumeClaim) -> tuple[str, str]:
        """``getCSIDriverInfo``: the claim's CSI driver and volume handle (``("", "")`` when it
        does not count)."""
        pv_name = pvc.specs.volume_name or ""
        if not pv_name:
            return self.csi_driver_info_from_class(csi_node, pvc)
        pv = self.volumes.volume(pv_name)
        if pv is None:
            return self.csi_driver_info_from_class(csi_node, pvc)
        csi = pv.specs.csi
        if csi is None:
            translated = _translated(pv, csi_node)
            if translated is None or translated.specs.csi is None:
                return "", ""
            csi = translated.specs.csi
        return csi.driver or "", csi.volume_handle or ""

    def csi_driver_info_from_class(self, csi_node: CSINode | None, pvc: PersistentVolumeClaim) -> tuple[str, str]:
        """``getCSIDriverInfoFromSC``: an unbound claim counts as its class's provisioner (the
        CSI driver of a migrated in-tree provisioner) with a placeholder handle."""
        class_name = claim_class(pvc)
        if not class_name:
            return "", ""
        sc = self.volumes.storage_class(class_name)
        if sc is None:
            return "", ""
        handle = f"{self.random_prefix}-{pvc.namespace}/{pvc.name}"
        provisioner = sc.provisioner or ""
        if is_migratable_in_tree_plugin_by_name(provisioner):
            if not is_csi_migration_on(csi_node, provisioner):
                return "", ""
            return csi_name_from_in_tree_name(provisioner), handle
        return provisioner, handle

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister`` (v1.36.3 csi.go; :mod:`app.plugins.volumes.csi_hints`): CSINode
        Add (no hint) and Update, Pod Delete, PersistentVolumeClaim Add, VolumeAttachment Delete,
        each with its hint."""
        return CSI_EVENTS


def _translated(pv: PersistentVolume, csi_node: CSINode | None) -> PersistentVolume | None:
    """A non-CSI volume translated to CSI when its plugin migrated on the node, else ``None``."""
    if not is_pv_migratable(pv):
        return None
    try:
        plugin = in_tree_plugin_name(pv)
    except TranslationError:
        return None
    if not is_csi_migration_on(csi_node, plugin):
        return None
    try:
        return translate_in_tree_pv_to_csi(pv)
    except TranslationError:
        return None


# -- the in-tree limits (non_csi.go) ------------------------------------------------------------------


@dataclass(frozen=True)
class VolumeFilter:
    """``VolumeFilter``: the in-tree plugin, its limit key, how a pod volume and a
    PersistentVolume name their disk, and the default limit of a node (by its labels)."""

    plugin: str
    limit_key: str
    inline: Callable[[objects.Volume], str | None]
    persistent: Callable[[PersistentVolume], str | None]
    default_limit: Callable[[Mapping[str, str]], int]


def _instance_type(labels: Mapping[str, str]) -> str:
    return labels.get(LABEL_INSTANCE_TYPE) or labels.get(LABEL_INSTANCE_TYPE_STABLE) or ""


def _ebs_limit(labels: Mapping[str, str]) -> int:
    """``getMaxEBSVolume``: 25 on a Nitro instance type, else 39."""
    nitro = EBS_NITRO_INSTANCE_TYPES.search(_instance_type(labels)) is not None
    return DEFAULT_MAX_EBS_NITRO_VOLUMES if nitro else DEFAULT_MAX_EBS_VOLUMES


def _ebs_id(source: objects.AWSElasticBlockStoreVolumeSource | None) -> str | None:
    return (source.volume_id or "") if source is not None else None


def _pd_id(source: objects.GCEPersistentDiskVolumeSource | None) -> str | None:
    return (source.pd_name or "") if source is not None else None


def _azure_id(source: objects.AzureDiskVolumeSource | None) -> str | None:
    return (source.disk_name or "") if source is not None else None


FILTERS = {
    EBS_NAME: VolumeFilter(
        AWS_EBS,
        "attachable-volumes-aws-ebs",
        lambda v: _ebs_id(v.aws_elastic_block_store),
        lambda pv: _ebs_id(pv.specs.aws_elastic_block_store),
        _ebs_limit,
    ),
    GCE_PD_NAME: VolumeFilter(
        GCE_PD,
        "attachable-volumes-gce-pd",
        lambda v: _pd_id(v.gce_persistent_disk),
        lambda pv: _pd_id(pv.specs.gce_persistent_disk),
        lambda labels: DEFAULT_MAX_GCE_PD_VOLUMES,
    ),
    AZURE_DISK_NAME: VolumeFilter(
        AZURE_DISK,
        "attachable-volumes-azure-disk",
        lambda v: _azure_id(v.azure_disk),
        lambda pv: _azure_id(pv.specs.azure_disk),
        lambda labels: DEFAULT_MAX_AZURE_DISK_VOLUMES,
    ),
}


def max_volumes_from_env() -> int:
    """``getMaxVolLimitFromEnv``: ``KUBE_MAX_PD_VOLS`` when it is a positive integer, else -1."""
    raw = os.environ.get(KUBE_MAX_PD_VOLS, "")
    try:
        value = int(raw)
    except ValueError:
        return -1
    return value if value > 0 else -1


class NonCSILimits:
    """``nonCSILimits`` of one in-tree volume type (``name``: EBSLimits, GCEPDLimits or
    AzureDiskLimits): PreFilter + Filter (see the module doc)."""

    def __init__(self, name: str, handle: Handle | None = None) -> None:
        self.name = name
        self.volume_filter = FILTERS[name]
        _, self.volumes = volume_cluster(handle, name)
        self.random_prefix = secrets.token_hex(16)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """``PreFilter``: ``Skip`` unless the pod has a volume of this type or a claim (no
        PreFilterResult)."""
        for volume in pod.volumes:
            if self.volume_filter.inline(volume) is not None:
                return None, SUCCESS
            if volume.persistent_volume_claim is not None or volume.ephemeral is not None:
                return None, SUCCESS
        return None, SKIP

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``Filter`` (module doc)."""
        if not pod.volumes:
            return SUCCESS
        new: set[str] = set()
        try:
            self.filter_volumes(pod, True, new)
        except LimitsError as exc:
            return Status.error(str(exc))
        if not new:
            return SUCCESS
        if node.node is None:
            return Status.error("node not found")
        csi_node = self.volumes.csi_node(node.name)
        if is_csi_migration_on(csi_node, self.volume_filter.plugin):
            return SUCCESS  # NodeVolumeLimits counts them
        existing: set[str] = set()
        try:
            for other in node.pods:
                self.filter_volumes(other, False, existing)
        except LimitsError as exc:
            return Status.error(str(exc))
        new -= existing
        limit = max_volumes_from_env()
        if limit <= 0:
            limit = self.volume_filter.default_limit(node.labels)
        limit = volume_limits(node).get(self.volume_filter.limit_key, limit)
        return _MAX_COUNT if len(existing) + len(new) > limit else SUCCESS

    def filter_volumes(self, pod: PodInfo, new_pod: bool, result: set[str]) -> None:
        """``filterVolumes``: the ids of the pod's volumes of this type, directly or through a
        claim (an unbound claim of a class with this plugin's provisioner, or whose volume is
        missing, counts under a placeholder id). Raises :class:`LimitsError`."""
        for volume in pod.volumes:
            disk = self.volume_filter.inline(volume)
            if disk is not None:
                result.add(disk)
                continue
            claim = volume_claim(pod, volume)
            if claim is None:
                continue
            name, ephemeral = claim
            if not name:
                raise LimitsError("PersistentVolumeClaim had no name")
            placeholder = f"{self.random_prefix}-{pod.namespace}/{name}"
            pvc = self.volumes.claim(pod.namespace, name)
            if pvc is None:
                if new_pod:
                    raise LimitsError(f"looking up PVC {pod.namespace}/{name}: {claim_not_found(name)}")
                continue
            if ephemeral:
                error = volume_is_for_pod(pod, pvc)
                if error:
                    raise LimitsError(error)
            pv_name = pvc.specs.volume_name or ""
            if not pv_name:
                if self._match_provisioner(pvc):
                    result.add(placeholder)
                continue
            pv = self.volumes.volume(pv_name)
            if pv is None:
                if self._match_provisioner(pvc):
                    result.add(placeholder)
                continue
            disk = self.volume_filter.persistent(pv)
            if disk is not None:
                result.add(disk)

    def _match_provisioner(self, pvc: PersistentVolumeClaim) -> bool:
        """``matchProvisioner``: the claim's ``spec.storageClassName`` (not the beta annotation)
        names a class with this plugin's in-tree provisioner."""
        name = pvc.specs.storage_class_name
        if name is None:
            return False
        sc = self.volumes.storage_class(name)
        return sc is not None and sc.provisioner == self.volume_filter.plugin

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister`` as v1.30's ``nonCSILimits`` (the in-tree limits are gone from
        v1.36.3, which has no hints for them): Node Add, Pod Delete, without hints."""
        return with_hints(_NON_CSI_EVENTS)


class EBSLimits(NonCSILimits):
    """``EBSLimits``: AWS EBS volumes (the in-tree count)."""

    def __init__(self, args: None = None, handle: Handle | None = None) -> None:
        super().__init__(EBS_NAME, handle)


class GCEPDLimits(NonCSILimits):
    """``GCEPDLimits``: GCE persistent disks (the in-tree count)."""

    def __init__(self, args: None = None, handle: Handle | None = None) -> None:
        super().__init__(GCE_PD_NAME, handle)


class AzureDiskLimits(NonCSILimits):
    """``AzureDiskLimits``: Azure disks (the in-tree count)."""

    def __init__(self, args: None = None, handle: Handle | None = None) -> None:
        super().__init__(AZURE_DISK_NAME, handle)


PLUGIN = PluginEntry(
    name=CSI_NAME,
    factory=CSILimits,
    args=None,
    needs_cluster=True,
    needs=needs_volumes,
    summary="filter: kube-scheduler's NodeVolumeLimits (a node's CSI attach limits, in-tree volumes migrated)",
)
EBS_PLUGIN = PluginEntry(
    name=EBS_NAME,
    factory=EBSLimits,
    args=None,
    needs_cluster=True,
    needs=needs_volumes,
    summary="filter: kube-scheduler's EBSLimits (AWS EBS attach limit where CSI migration is off)",
)
GCE_PD_PLUGIN = PluginEntry(
    name=GCE_PD_NAME,
    factory=GCEPDLimits,
    args=None,
    needs_cluster=True,
    needs=needs_volumes,
    summary="filter: kube-scheduler's GCEPDLimits (GCE PD attach limit where CSI migration is off)",
)
AZURE_DISK_PLUGIN = PluginEntry(
    name=AZURE_DISK_NAME,
    factory=AzureDiskLimits,
    args=None,
    needs_cluster=True,
    needs=needs_volumes,
    summary="filter: kube-scheduler's AzureDiskLimits (Azure Disk attach limit where CSI migration is off)",
)

__all__ = [
    "AZURE_DISK_PLUGIN",
    "CSI_NAME",
    "EBS_PLUGIN",
    "ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED",
    "FILTERS",
    "GCE_PD_PLUGIN",
    "PLUGIN",
    "AzureDiskLimits",
    "CSILimits",
    "EBSLimits",
    "GCEPDLimits",
    "LimitsError",
    "NonCSILimits",
    "max_volumes_from_env",
    "node_volume_limits",
    "volume_limits",
]

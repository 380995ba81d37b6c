"""The storage objects kube-scheduler's volume plugins read, and what a plugin may ask of the
cluster state about them (``k8s.io/api`` core/v1 and storage/v1, v1.30).

Slim msgspec views, as :mod:`app.framework.objects` does for nodes and pods: only the fields the
volume plugins read (pkg/scheduler/framework/plugins/volumebinding, volumezone,
volumerestrictions, nodevolumelimits) are declared; the decoder skips the rest. The cluster state
keeps PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes, CSIDrivers and
CSIStorageCapacities in these shapes (``app.cluster.volumes``) for the plugins that declare
``ClusterNeeds.volumes`` (and ``csi_storage_capacities``), and serves them through a
:class:`VolumeLister`, kube-scheduler's informer listers. Annotations are cut to the keys the
plugins read (:data:`CLAIM_ANNOTATIONS`, :data:`VOLUME_ANNOTATIONS`, :data:`CSI_NODE_ANNOTATIONS`).

PreBind's writes (the claim's ``volume.kubernetes.io/selected-node``, a volume's ``claimRef``) go
through :meth:`~app.framework.handle.ClusterHandle.update_volume` as a :class:`VolumeWrite`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import msgspec

from app.framework import objects

#: ``volume.AnnSelectedNode``: the node the scheduler chose for a claim to provision
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
#: ``volume.AnnBindCompleted``: the PV controller finished binding the claim
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
#: ``volume.AnnBoundByController``: the binding was made by a controller (not pre-bound)
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
#: ``v1.BetaStorageClassAnnotation``: read before ``spec.storageClassName``
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
#: ``v1.MigratedPluginsAnnotationKey``: the in-tree plugins a CSINode's node migrated to CSI
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
#: ``volume.NotSupportedProvisioner``: a StorageClass that cannot provision
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"

#: the annotation keys kept of a claim, a volume and a CSINode
CLAIM_ANNOTATIONS = frozenset({ANN_SELECTED_NODE, ANN_BIND_COMPLETED, BETA_STORAGE_CLASS_ANNOTATION})
VOLUME_ANNOTATIONS = frozenset({ANN_BOUND_BY_CONTROLLER, BETA_STORAGE_CLASS_ANNOTATION})
CSI_NODE_ANNOTATIONS = frozenset({MIGRATED_PLUGINS_ANNOTATION})

READ_WRITE_ONCE, READ_ONLY_MANY = "ReadWriteOnce", "ReadOnlyMany"
READ_WRITE_MANY, READ_WRITE_ONCE_POD = "ReadWriteMany", "ReadWriteOncePod"
#: ``v1.VolumeAvailable`` and ``v1.ClaimLost``
VOLUME_AVAILABLE, CLAIM_LOST = "Available", "Lost"
#: ``storagev1.VolumeBindingWaitForFirstConsumer``
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
#: ``v1.PersistentVolumeFilesystem``: the volume mode when none is set
FILESYSTEM = "Filesystem"


class ObjectReference(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.ObjectReference``: a volume's ``spec.claimRef``."""

    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None
    api_version: str | None = None
    resource_version: str | None = None


class VolumeNodeAffinity(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.VolumeNodeAffinity``: the nodes a volume can be used from."""

    required: objects.NodeSelector | None = None


class CSIPersistentVolumeSource(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.CSIPersistentVolumeSource``: the CSI driver and the volume's handle."""

    driver: str | None = None
    volume_handle: str | None = None
    read_only: bool | None = None
    fs_type: str | None = None


class PersistentVolumeSpec(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.PersistentVolumeSpec``: capacity, access modes, the claim it is bound to, class, mode,
    node affinity, VolumeAttributesClass, and the sources CSI migration translates or the plugins
    count."""

    capacity: dict[str, objects.QuantityValue] | None = None
    access_modes: list[str] | None = None
    claim_ref: ObjectReference | None = None
    storage_class_name: str | None = None
    volume_mode: str | None = None
    node_affinity: VolumeNodeAffinity | None = None
    csi: CSIPersistentVolumeSource | None = None
    gce_persistent_disk: objects.GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: objects.AWSElasticBlockStoreVolumeSource | None = None
    azure_disk: objects.AzureDiskVolumeSource | None = None
    azure_file: objects.Present | None = None
    cinder: objects.CinderVolumeSource | None = None
    rbd: objects.RBDVolumeSource | None = None
    iscsi: objects.ISCSIVolumeSource | None = None
    portworx_volume: objects.PortworxVolumeSource | None = None
    vsphere_volume: objects.Present | None = None
    volume_attributes_class_name: str | None = None


class StorageObject(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """The ``metadata`` every storage object view has, and its accessors."""

    metadata: objects.ObjectMeta | None = None

    @property
    def meta(self) -> objects.ObjectMeta:
        """``metadata`` (empty when absent)."""
        return self.metadata or objects.EMPTY_META

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.meta.name or ""

    @property
    def namespace(self) -> str:
        """``metadata.namespace`` (``""`` for a cluster-scoped object)."""
        return self.meta.namespace or ""


class PersistentVolumeStatus(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.PersistentVolumeStatus``: the phase."""

    phase: str | None = None


_NO_PV_SPEC = PersistentVolumeSpec()


class PersistentVolume(StorageObject, frozen=True, gc=False):
    """A ``v1.PersistentVolume`` (cluster-scoped)."""

    spec: PersistentVolumeSpec | None = None
    status: PersistentVolumeStatus | None = None

    @property
    def specs(self) -> PersistentVolumeSpec:
        """``spec`` (empty when absent)."""
        return self.spec or _NO_PV_SPEC


class PersistentVolumeClaimSpec(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.PersistentVolumeClaimSpec``: access modes, the storage request, the volume selector,
    class, the volume it is bound to, the volume mode and the VolumeAttributesClass."""

    access_modes: list[str] | None = None
    resources: objects.ResourceRequirements | None = None
    selector: objects.LabelSelector | None = None
    storage_class_name: str | None = None
    volume_name: str | None = None
    volume_mode: str | None = None
    volume_attributes_class_name: str | None = None


class PersistentVolumeClaimStatus(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.PersistentVolumeClaimStatus``: the phase (``Lost``: its volume is gone)."""

    phase: str | None = None


_NO_PVC_SPEC = PersistentVolumeClaimSpec()


class PersistentVolumeClaim(StorageObject, frozen=True, gc=False):
    """A ``v1.PersistentVolumeClaim``."""

    spec: PersistentVolumeClaimSpec | None = None
    status: PersistentVolumeClaimStatus | None = None

    @property
    def specs(self) -> PersistentVolumeClaimSpec:
        """``spec`` (empty when absent)."""
        return self.spec or _NO_PVC_SPEC

    def key(self) -> str:
        """``namespace/name`` (``getPVCName``)."""
        return f"{self.namespace}/{self.name}"


class TopologySelectorLabelRequirement(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.TopologySelectorLabelRequirement``: a label and the values it may take."""

    key: str | None = None
    values: list[str] | None = None


class TopologySelectorTerm(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.TopologySelectorTerm``: its requirements are ANDed."""

    match_label_expressions: list[TopologySelectorLabelRequirement] | None = None


class StorageClass(StorageObject, frozen=True, gc=False):
    """A ``storage.k8s.io/v1`` StorageClass: provisioner, binding mode, allowed topologies."""

    provisioner: str | None = None
    volume_binding_mode: str | None = None
    allowed_topologies: list[TopologySelectorTerm] | None = None


class VolumeNodeResources(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``storagev1.VolumeNodeResources``: how many volumes of a driver the node can attach."""

    count: int | None = None


class CSINodeDriver(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``storagev1.CSINodeDriver``."""

    name: str | None = None
    node_id: str | None = msgspec.field(default=None, name="nodeID")
    topology_keys: list[str] | None = None
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``storagev1.CSINodeSpec``: the node's CSI drivers."""

    drivers: list[CSINodeDriver] | None = None


class CSINode(StorageObject, frozen=True, gc=False):
    """A ``storage.k8s.io/v1`` CSINode (named as its node)."""

    spec: CSINodeSpec | None = None

    @property
    def annotations(self) -> Mapping[str, str]:
        """``metadata.annotations`` (cut to :data:`CSI_NODE_ANNOTATIONS` in the cluster state)."""
        return self.meta.annotations or {}


class CSIDriverSpec(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``storagev1.CSIDriverSpec``: whether the driver publishes storage capacity, and whether a
    pod must not be scheduled where the driver is missing (``VolumeLimitScaling``, alpha)."""

    storage_capacity: bool | None = None
    prevent_pod_scheduling_if_missing: bool | None = None


class CSIDriver(StorageObject, frozen=True, gc=False):
    """A ``storage.k8s.io/v1`` CSIDriver."""

    spec: CSIDriverSpec | None = None


class CSIStorageCapacity(StorageObject, frozen=True, gc=False):
    """A ``storage.k8s.io/v1`` CSIStorageCapacity: the capacity a class has for the nodes its
    ``nodeTopology`` selects."""

    node_topology: objects.LabelSelector | None = None
    storage_class_name: str | None = None
    capacity: objects.QuantityValue | None = None
    maximum_volume_size: objects.QuantityValue | None = None


class VolumeAttachmentSource(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``storagev1.VolumeAttachmentSource`` cut to the volume's name."""

    persistent_volume_name: str | None = None


class VolumeAttachmentSpec(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``storagev1.VolumeAttachmentSpec``: the attacher (a CSI driver's name), the node and the
    volume."""

    attacher: str | None = None
    node_name: str | None = None
    source: VolumeAttachmentSource | None = None


class VolumeAttachment(StorageObject, frozen=True, gc=False):
    """A ``storage.k8s.io/v1`` VolumeAttachment (v1.36.3's NodeVolumeLimits counts a node's, and
    its queueing hint ``isSchedulableAfterVolumeAttachmentDeleted`` judges a deleted one)."""

    spec: VolumeAttachmentSpec | None = None


def claim_class(pvc: PersistentVolumeClaim) -> str:
    """``GetPersistentVolumeClaimClass`` (k8s.io/component-helpers/storage/volume): the beta
    annotation first, then ``spec.storageClassName``; ``""`` when the claim names no class."""
    annotations = pvc.meta.annotations or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return pvc.specs.storage_class_name or ""


def volume_class(pv: PersistentVolume) -> str:
    """``GetPersistentVolumeClass`` (k8s.io/component-helpers/storage/volume): the beta annotation
    first, then ``spec.storageClassName``."""
    annotations = pv.meta.annotations or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return pv.specs.storage_class_name or ""


class VolumeLister(Protocol):
    """The watched storage objects, as kube-scheduler's informer listers serve them (the API's
    latest version of each; a plugin that assumes changes keeps them itself, as the assume
    cache of pkg/scheduler/framework/plugins/volumebinding does). Thread-safe; each call reads
    one consistent moment. Empty until the first list of each kind."""

    def claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        """The PersistentVolumeClaim ``namespace/name``, or ``None``."""
        ...

    def volume(self, name: str) -> PersistentVolume | None:
        """The PersistentVolume ``name``, or ``None``."""
        ...

    def volumes_of_class(self, class_name: str) -> Sequence[PersistentVolume]:
        """The PersistentVolumes whose class (the beta annotation first, then
        ``spec.storageClassName``) is ``class_name``, in name order."""
        ...

    def storage_class(self, name: str) -> StorageClass | None:
        """The StorageClass ``name``, or ``None``."""
        ...

    def csi_node(self, name: str) -> CSINode | None:
        """The CSINode of node ``name``, or ``None``."""
        ...

    def csi_driver(self, name: str) -> CSIDriver | None:
        """The CSIDriver ``name``, or ``None``."""
        ...

    def storage_capacities(self) -> Sequence[CSIStorageCapacity]:
        """Every CSIStorageCapacity (none unless watched: ``ClusterNeeds.csi_storage_capacities``)."""
        ...

    def volume_attachments(self, node_name: str) -> Sequence[VolumeAttachment]:
        """The VolumeAttachments of node ``node_name`` (``spec.nodeName``), in name order."""
        ...

    @property
    def generation(self) -> int:
        """A number that grows whenever a watched storage object changes."""
        ...

    async def changed(self, generation: int, timeout: float) -> int:
        """Wait (on the event loop) until :attr:`generation` is past ``generation`` or ``timeout``
        seconds pass; returns the generation then."""
        ...


#: the kinds a :class:`VolumeWrite` updates
CLAIMS, VOLUMES = "persistentvolumeclaims", "persistentvolumes"


@dataclass(frozen=True)
class VolumeWrite:
    """One write of VolumeBinding's PreBind (``bindAPIUpdate``): ``kind`` :data:`CLAIMS` (a claim to
    provision: ``annotations`` merged into its own, the ``selected-node``) or :data:`VOLUMES` (a
    volume matched to a claim: ``claim_ref`` set, ``annotations`` merged: ``bound-by-controller``);
    ``resource_version`` is the version the decision was made on, sent as the write's precondition
    (kube-apiserver answers ``409 Conflict`` when the object changed since)."""

    kind: str
    name: str
    namespace: str = ""
    resource_version: str = ""
    annotations: Mapping[str, str] = field(default_factory=dict)
    claim_ref: ObjectReference | None = None


@dataclass(frozen=True)
class VolumeWriteResult:
    """The outcome of a :class:`VolumeWrite`: the object's ``resourceVersion`` after it, or the
    ``error`` the API server answered (its ``Status`` message)."""

    resource_version: str = ""
    error: str = ""


__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_SELECTED_NODE",
    "BETA_STORAGE_CLASS_ANNOTATION",
    "CLAIMS",
    "CLAIM_ANNOTATIONS",
    "CLAIM_LOST",
    "CSI_NODE_ANNOTATIONS",
    "FILESYSTEM",
    "MIGRATED_PLUGINS_ANNOTATION",
    "NOT_SUPPORTED_PROVISIONER",
    "READ_ONLY_MANY",
    "READ_WRITE_MANY",
    "READ_WRITE_ONCE",
    "READ_WRITE_ONCE_POD",
    "VOLUMES",
    "VOLUME_ANNOTATIONS",
    "VOLUME_AVAILABLE",
    "WAIT_FOR_FIRST_CONSUMER",
    "CSIDriver",
    "CSIDriverSpec",
    "CSINode",
    "CSINodeDriver",
    "CSINodeSpec",
    "CSIPersistentVolumeSource",
    "CSIStorageCapacity",
    "ObjectReference",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "PersistentVolumeClaimSpec",
    "PersistentVolumeClaimStatus",
    "PersistentVolumeSpec",
    "PersistentVolumeStatus",
    "StorageClass",
    "StorageObject",
    "TopologySelectorLabelRequirement",
    "TopologySelectorTerm",
    "VolumeAttachment",
    "VolumeAttachmentSource",
    "VolumeAttachmentSpec",
    "VolumeLister",
    "VolumeNodeAffinity",
    "VolumeNodeResources",
    "VolumeWrite",
    "VolumeWriteResult",
    "claim_class",
    "volume_class",
]

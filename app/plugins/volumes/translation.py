"""CSI migration of in-tree volumes as kube-scheduler v1.36.3 applies it: ``k8s.io/csi-translation-lib``
(``translate.go`` and ``plugins/``: ``in_tree_volume.go``, ``aws_ebs.go``, ``gce_pd.go``,
``azure_disk.go``, ``openstack_cinder.go``, ``portworx.go``) and the migration checks of
pkg/scheduler/framework/plugins/nodevolumelimits/utils.go (``isCSIMigrationOn``) and
volumebinding/binder.go (``isCSIMigrationOnForPlugin``, ``isPluginMigratedToCSIOnNode``).

csi-translation-lib knows eight in-tree plugins (:data:`IN_TREE`). v1.36.3's scheduler treats five
as migrated (:data:`MIGRATION_ON`): AWS EBS, GCE PD, Azure Disk, Cinder and, since
``CSIMigrationPortworx`` went GA, Portworx; vSphere, Azure File and RBD never are. Only those five
translate here (the others are recognised, as ``IsPVMigratable`` and ``IsInlineMigratable``
recognise them, and their translation raises :class:`TranslationError`: no v1.36.3 code path
reaches it). A translated volume is a new :class:`~app.framework.volumes.PersistentVolume` with
``spec.csi`` (driver, handle) and, for EBS, GCE PD and Cinder, its zone node affinity rewritten to
the driver's topology key (``translateTopologyFromInTreeToCSI``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import msgspec

from app.framework import objects
from app.framework.errors import SchedulerExtenderError
from app.framework.volumes import (
    MIGRATED_PLUGINS_ANNOTATION,
    READ_ONLY_MANY,
    READ_WRITE_MANY,
    READ_WRITE_ONCE,
    CSINode,
    CSIPersistentVolumeSource,
    PersistentVolume,
    PersistentVolumeSpec,
    VolumeNodeAffinity,
)

AWS_EBS, AWS_EBS_DRIVER = "kubernetes.io/aws-ebs", "ebs.csi.aws.com"
GCE_PD, GCE_PD_DRIVER = "kubernetes.io/gce-pd", "pd.csi.storage.gke.io"
AZURE_DISK, AZURE_DISK_DRIVER = "kubernetes.io/azure-disk", "disk.csi.azure.com"
CINDER, CINDER_DRIVER = "kubernetes.io/cinder", "cinder.csi.openstack.org"
AZURE_FILE, AZURE_FILE_DRIVER = "kubernetes.io/azure-file", "file.csi.azure.com"
VSPHERE, VSPHERE_DRIVER = "kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com"
PORTWORX, PORTWORX_DRIVER = "kubernetes.io/portworx-volume", "pxd.portworx.com"
RBD, RBD_DRIVER = "kubernetes.io/rbd", "rbd.csi.ceph.com"

#: the CSI topology keys of the zonal drivers
AWS_EBS_TOPOLOGY_KEY = "topology.ebs.csi.aws.com/zone"
GCE_PD_TOPOLOGY_KEY = "topology.gke.io/zone"
CINDER_TOPOLOGY_KEY = "topology.cinder.csi.openstack.org/zone"

LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
LABEL_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
#: ``labelMultiZoneDelimiter`` (``volumehelpers.LabelMultiZoneDelimiter``)
MULTI_ZONE_DELIMITER = "__"
UNSPECIFIED = "UNSPECIFIED"


class TranslationError(SchedulerExtenderError, ValueError):
    """csi-translation-lib could not translate a volume (its error text)."""


@dataclass(frozen=True)
class InTreePlugin:
    """One ``plugins.InTreePlugin``: its in-tree name, the CSI driver that supersedes it, and the
    source field (of a pod volume and of a PersistentVolume's spec) it supports (``CanSupport``,
    ``CanSupportInline``)."""

    name: str
    driver: str
    source: str


#: csi-translation-lib's ``inTreePlugins``
IN_TREE: tuple[InTreePlugin, ...] = (
    InTreePlugin(GCE_PD, GCE_PD_DRIVER, "gce_persistent_disk"),
    InTreePlugin(AWS_EBS, AWS_EBS_DRIVER, "aws_elastic_block_store"),
    InTreePlugin(CINDER, CINDER_DRIVER, "cinder"),
    InTreePlugin(AZURE_DISK, AZURE_DISK_DRIVER, "azure_disk"),
    InTreePlugin(AZURE_FILE, AZURE_FILE_DRIVER, "azure_file"),
    InTreePlugin(VSPHERE, VSPHERE_DRIVER, "vsphere_volume"),
    InTreePlugin(PORTWORX, PORTWORX_DRIVER, "portworx_volume"),
    InTreePlugin(RBD, RBD_DRIVER, "rbd"),
)
_BY_NAME = {p.name: p for p in IN_TREE}


def _supporting_pv(pv: PersistentVolume | None) -> InTreePlugin | None:
    spec = pv.spec if pv is not None else None
    if spec is None:
        return None
    return next((p for p in IN_TREE if getattr(spec, p.source) is not None), None)


def _supporting_inline(volume: objects.Volume | None) -> InTreePlugin | None:
    if volume is None:
        return None
    return next((p for p in IN_TREE if getattr(volume, p.source) is not None), None)


def is_pv_migratable(pv: PersistentVolume | None) -> bool:
    """``IsPVMigratable``: whether an in-tree plugin supports ``pv``'s source."""
    return _supporting_pv(pv) is not None


def is_inline_migratable(volume: objects.Volume | None) -> bool:
    """``IsInlineMigratable``: whether an in-tree plugin supports the pod volume's source."""
    return _supporting_inline(volume) is not None


def is_migratable_in_tree_plugin_by_name(name: str) -> bool:
    """``IsMigratableIntreePluginByName``."""
    return name in _BY_NAME


def in_tree_plugin_name(pv: PersistentVolume | None = None, volume: objects.Volume | None = None) -> str:
    """``GetInTreePluginNameFromSpec``: the in-tree plugin of ``pv`` (else of ``volume``). Raises
    :class:`TranslationError` when none supports it."""
    if pv is not None:
        plugin = _supporting_pv(pv)
        if plugin is None:
            raise TranslationError(f"could not find in-tree plugin name from persistent volume {pv.name}")
        return plugin.name
    if volume is not None:
        found = _supporting_inline(volume)
        if found is None:
            raise TranslationError(f"could not find in-tree plugin name from volume {volume.name}")
        return found.name
    raise TranslationError("both persistent volume and volume are nil")


def csi_name_from_in_tree_name(name: str) -> str:
    """``GetCSINameFromInTreeName``. Raises :class:`TranslationError` for an unknown plugin."""
    plugin = _BY_NAME.get(name)
    if plugin is None:
        raise TranslationError(f"could not find CSI Driver name for plugin {name}")
    return plugin.driver


def migrated_plugins(csi_node: CSINode | None) -> frozenset[str]:
    """The plugins in the CSINode's ``storage.alpha.kubernetes.io/migrated-plugins`` annotation
    (comma-separated, as ``strings.Split``)."""
    if csi_node is None:
        return frozenset()
    value = csi_node.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
    return frozenset(value.split(",")) if value else frozenset()


#: the plugins v1.36.3's scheduler treats as migrated to CSI (utils.go ``isCSIMigrationOn``,
#: binder.go ``isCSIMigrationOnForPlugin``)
MIGRATION_ON = frozenset({AWS_EBS, GCE_PD, AZURE_DISK, CINDER, PORTWORX})


def is_csi_migration_on(csi_node: CSINode | None, plugin: str) -> bool:
    """nodevolumelimits' ``isCSIMigrationOn``: for AWS EBS, Portworx, GCE PD, Azure Disk and
    Cinder, whether the node has a CSINode at all (its annotation is not read); ``False`` for every
    other plugin."""
    return csi_node is not None and bool(plugin) and plugin in MIGRATION_ON


def is_csi_migration_on_for_plugin(plugin: str) -> bool:
    """volumebinding's ``isCSIMigrationOnForPlugin``."""
    return plugin in MIGRATION_ON


def is_plugin_migrated_to_csi_on_node(plugin: str, csi_node: CSINode | None) -> bool:
    """volumebinding's ``isPluginMigratedToCSIOnNode``: ``plugin`` is in the CSINode's
    migrated-plugins annotation."""
    return plugin in migrated_plugins(csi_node)


# -- topology (in_tree_volume.go) -------------------------------------------------------------------


def _terms(pv: PersistentVolume) -> list[objects.NodeSelectorTerm]:
    affinity = pv.specs.node_affinity
    required = affinity.required if affinity is not None else None
    return list(required.node_selector_terms or ()) if required is not None else []


def topology_key_exists(key: str, affinity: VolumeNodeAffinity | None) -> bool:
    """``TopologyKeyExist``."""
    required = affinity.required if affinity is not None else None
    for term in (required.node_selector_terms or ()) if required is not None else ():
        if any(r.key == key for r in term.match_expressions or ()):
            return True
    return False


def topology_labels(pv: PersistentVolume) -> tuple[str, str]:
    """``getTopologyLabel``: the zone and region labels the volume uses (GA or beta, node
    affinity first, then labels; GA when neither)."""
    affinity = pv.specs.node_affinity
    labels = pv.meta.labels or {}
    if topology_key_exists(LABEL_TOPOLOGY_ZONE, affinity):
        return LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION
    if topology_key_exists(LABEL_BETA_ZONE, affinity):
        return LABEL_BETA_ZONE, LABEL_BETA_REGION
    if LABEL_TOPOLOGY_ZONE in labels:
        return LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION
    if LABEL_BETA_ZONE in labels:
        return LABEL_BETA_ZONE, LABEL_BETA_REGION
    return LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION


def topology_values(pv: PersistentVolume, key: str) -> list[str]:
    """``getTopologyValues``: the distinct values of ``key``'s requirements, sorted."""
    values = {v for term in _terms(pv) for r in term.match_expressions or () if r.key == key for v in r.values or ()}
    return sorted(values)


def _with_terms(pv: PersistentVolume, terms: Sequence[objects.NodeSelectorTerm]) -> PersistentVolume:
    affinity = VolumeNodeAffinity(required=objects.NodeSelector(node_selector_terms=list(terms)))
    return msgspec.structs.replace(pv, spec=msgspec.structs.replace(pv.specs, node_affinity=affinity))


def replace_topology(pv: PersistentVolume, old_key: str, new_key: str) -> PersistentVolume:
    """``replaceTopology``: every requirement on ``old_key`` renamed ``new_key``."""
    terms = _terms(pv)
    if not terms:
        return pv
    renamed = [
        msgspec.structs.replace(
            term,
            match_expressions=[
                msgspec.structs.replace(r, key=new_key) if r.key == old_key else r for r in term.match_expressions
            ]
            if term.match_expressions is not None
            else None,
        )
        for term in terms
    ]
    return _with_terms(pv, renamed)


def add_topology(pv: PersistentVolume, key: str, zones: Sequence[str]) -> PersistentVolume:
    """``addTopology``: ``key In zones`` (trimmed, distinct, sorted) appended to every term (one
    term when there is none); ``pv`` unchanged when no zone is left (upstream's error, ignored by
    its caller)."""
    kept = sorted({z.strip() for z in zones if z.strip()})
    if not kept:
        return pv
    terms = _terms(pv) or [objects.NodeSelectorTerm()]
    requirement = objects.NodeSelectorRequirement(key=key, operator="In", values=kept)
    return _with_terms(
        pv, [msgspec.structs.replace(t, match_expressions=[*(t.match_expressions or ()), requirement]) for t in terms]
    )


def translate_topology_from_in_tree_to_csi(pv: PersistentVolume, csi_key: str) -> PersistentVolume:
    """``translateTopologyFromInTreeToCSI``: the zone requirements (or, without any, the zone label)
    moved to ``csi_key``; a beta region requirement renamed to the GA region label."""
    zone_label, region_label = topology_labels(pv)
    if topology_values(pv, zone_label):
        pv = replace_topology(pv, zone_label, csi_key)
    else:
        label = (pv.meta.labels or {}).get(zone_label)
        if label is not None:
            pv = add_topology(pv, csi_key, label.split(MULTI_ZONE_DELIMITER))
    if region_label == LABEL_BETA_REGION and topology_values(pv, region_label):
        pv = replace_topology(pv, region_label, LABEL_TOPOLOGY_REGION)
    return pv


# -- the four translations ----------------------------------------------------------------------------

_AWS_VOLUME = re.compile(r"^vol-[^/]*$")


def ebs_volume_id(kubernetes_id: str) -> str:
    """``KubernetesVolumeIDToEBSVolumeID``: ``aws://<zone>/<id>``, ``aws:///<id>`` or a bare id
    -> the id. Raises :class:`TranslationError` for another form."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    try:
        url = urlsplit(kubernetes_id)
    except ValueError as exc:
        raise TranslationError(f"Invalid disk name ({kubernetes_id}): {exc}") from None
    aws_id = url.path.strip("/")
    if not _AWS_VOLUME.match(aws_id):
        raise TranslationError(f"Invalid format for AWS volume ({kubernetes_id})")
    return aws_id


def gce_region_from_zones(zones: Sequence[str]) -> str:
    """``getRegionFromZones`` of gce_pd.go: the one region of ``{locale}-{region}-{zone}`` zones.
    Raises :class:`TranslationError`."""
    if not zones:
        raise TranslationError("no zones specified")
    regions = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(f"zone in unexpected format, expected: {{locale}}-{{region}}-{{zone}}, got: {zone}")
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        raise TranslationError(f"multiple or no regions gotten from zones, got: {sorted(regions)}")
    return regions.pop()


def _backward_compatible_access_modes(modes: Sequence[str] | None) -> list[str] | None:
    """gce_pd.go ``backwardCompatibleAccessModes``."""
    if modes is None:
        return None
    seen = {READ_WRITE_ONCE if m == READ_WRITE_MANY else m for m in modes}
    if READ_WRITE_ONCE in seen:
        return [READ_WRITE_ONCE]
    if READ_ONLY_MANY in seen:
        return [READ_ONLY_MANY]
    return [READ_WRITE_ONCE]


def _gce_volume_id(pv: PersistentVolume, pd_name: str) -> str:
    labels = pv.meta.labels or {}
    zones_label = labels.get(LABEL_BETA_ZONE, "") or labels.get(LABEL_TOPOLOGY_ZONE, "")
    zones = zones_label.split(MULTI_ZONE_DELIMITER)
    if len(zones) == 1 and zones[0]:
        return f"projects/{UNSPECIFIED}/zones/{zones[0]}/disks/{pd_name}"
    if len(zones) > 1:
        try:
            region = gce_region_from_zones(zones)
        except TranslationError as exc:
            raise TranslationError(f"failed to get region from zones: {exc}") from None
        return f"projects/{UNSPECIFIED}/regions/{region}/disks/{pd_name}"
    return f"projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{pd_name}"


def _ebs_handle(volume_id: str | None) -> str:
    """The CSI volume handle of an EBS volume id (:func:`ebs_volume_id`), with
    ``awsElasticBlockStoreCSITranslator``'s wording on error."""
    try:
        return ebs_volume_id(volume_id or "")
    except TranslationError as exc:
        raise TranslationError(f"failed to translate Kubernetes ID to EBS Volume ID {exc}") from None


def translate_in_tree_pv_to_csi(pv: PersistentVolume) -> PersistentVolume:
    """``TranslateInTreePVToCSI``: ``pv`` with its in-tree source replaced by ``spec.csi`` (and its
    topology translated). Raises :class:`TranslationError` when no plugin (of the five v1.36.3
    migrates) supports it or its id is malformed."""
    spec = pv.specs
    access_modes = spec.access_modes
    if spec.aws_elastic_block_store is not None:
        ebs = spec.aws_elastic_block_store
        handle = _ebs_handle(ebs.volume_id)
        csi = CSIPersistentVolumeSource(AWS_EBS_DRIVER, handle, ebs.read_only, ebs.fs_type)
        pv = translate_topology_from_in_tree_to_csi(pv, AWS_EBS_TOPOLOGY_KEY)
    elif spec.gce_persistent_disk is not None:
        pd = spec.gce_persistent_disk
        handle = _gce_volume_id(pv, pd.pd_name or "")
        csi = CSIPersistentVolumeSource(GCE_PD_DRIVER, handle, pd.read_only, pd.fs_type)
        pv = translate_topology_from_in_tree_to_csi(pv, GCE_PD_TOPOLOGY_KEY)
        access_modes = _backward_compatible_access_modes(access_modes)
    elif spec.azure_disk is not None:
        disk = spec.azure_disk
        csi = CSIPersistentVolumeSource(AZURE_DISK_DRIVER, disk.disk_uri or "", disk.read_only, disk.fs_type)
    elif spec.cinder is not None:
        cinder = spec.cinder
        csi = CSIPersistentVolumeSource(CINDER_DRIVER, cinder.volume_id or "", cinder.read_only, cinder.fs_type)
        pv = translate_topology_from_in_tree_to_csi(pv, CINDER_TOPOLOGY_KEY)
    elif spec.portworx_volume is not None:
        portworx = spec.portworx_volume  # portworx.go: readOnly is not carried over
        csi = CSIPersistentVolumeSource(PORTWORX_DRIVER, portworx.volume_id or "", None, portworx.fs_type)
    else:
        raise TranslationError(f"could not find in-tree plugin translation logic for {pv.name!r}")
    translated: PersistentVolumeSpec = msgspec.structs.replace(
        pv.specs,
        csi=csi,
        access_modes=access_modes,
        aws_elastic_block_store=None,
        gce_persistent_disk=None,
        azure_disk=None,
        cinder=None,
        portworx_volume=None,
    )
    return msgspec.structs.replace(pv, spec=translated)


def translate_in_tree_inline_volume_to_csi(volume: objects.Volume) -> PersistentVolume:
    """``TranslateInTreeInlineVolumeToCSI``: a PersistentVolume with the inline volume's source as
    ``spec.csi`` (``volumeMode: Filesystem``). Raises :class:`TranslationError`."""
    if volume.aws_elastic_block_store is not None:
        ebs = volume.aws_elastic_block_store
        handle = _ebs_handle(ebs.volume_id)
        csi, name = CSIPersistentVolumeSource(AWS_EBS_DRIVER, handle, ebs.read_only, ebs.fs_type), handle
    elif volume.gce_persistent_disk is not None:
        pd = volume.gce_persistent_disk
        handle = f"projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{pd.pd_name or ''}"
        csi, name = CSIPersistentVolumeSource(GCE_PD_DRIVER, handle, pd.read_only, pd.fs_type), pd.pd_name or ""
    elif volume.azure_disk is not None:
        disk = volume.azure_disk
        csi = CSIPersistentVolumeSource(AZURE_DISK_DRIVER, disk.disk_uri or "", disk.read_only, disk.fs_type)
        name = disk.disk_name or ""
    elif volume.cinder is not None:
        cinder = volume.cinder
        csi = CSIPersistentVolumeSource(CINDER_DRIVER, cinder.volume_id or "", cinder.read_only, cinder.fs_type)
        name = cinder.volume_id or ""
    elif volume.portworx_volume is not None:
        portworx = volume.portworx_volume
        csi = CSIPersistentVolumeSource(PORTWORX_DRIVER, portworx.volume_id or "", None, portworx.fs_type)
        name = portworx.volume_id or ""
        modes = [READ_ONLY_MANY if portworx.read_only else READ_WRITE_ONCE]
        meta = objects.ObjectMeta(name=f"{csi.driver}-{name}")
        spec = PersistentVolumeSpec(csi=csi, access_modes=modes, volume_mode="Filesystem")
        return PersistentVolume(metadata=meta, spec=spec)
    else:
        raise TranslationError(f"could not find in-tree plugin translation logic for {volume.name!r}")
    meta = objects.ObjectMeta(name=f"{csi.driver}-{name}")
    return PersistentVolume(metadata=meta, spec=PersistentVolumeSpec(csi=csi, volume_mode="Filesystem"))


__all__ = [
    "AWS_EBS",
    "AZURE_DISK",
    "CINDER",
    "GCE_PD",
    "IN_TREE",
    "MIGRATION_ON",
    "PORTWORX",
    "InTreePlugin",
    "TranslationError",
    "csi_name_from_in_tree_name",
    "in_tree_plugin_name",
    "is_csi_migration_on",
    "is_csi_migration_on_for_plugin",
    "is_inline_migratable",
    "is_migratable_in_tree_plugin_by_name",
    "is_plugin_migrated_to_csi_on_node",
    "is_pv_migratable",
    "translate_in_tree_inline_volume_to_csi",
    "translate_in_tree_pv_to_csi",
    "translate_topology_from_in_tree_to_csi",
]

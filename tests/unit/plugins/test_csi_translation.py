"""CSI migration's translation of in-tree volumes, as k8s.io/csi-translation-lib of v1.36.3 does it
(``plugins/in_tree_volume.go`` ``translateTopologyFromInTreeToCSI``, ``plugins/aws_ebs.go``
``KubernetesVolumeIDToEBSVolumeID``, ``plugins/gce_pd.go`` volume handles, ``plugins/portworx.go``,
``translate.go``), and the migration checks of v1.36.3's nodevolumelimits/utils.go and
volumebinding/binder.go."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from app.framework import objects
from app.framework.volumes import CSINode, PersistentVolume
from app.plugins.volumes.translation import (
    TranslationError,
    ebs_volume_id,
    in_tree_plugin_name,
    is_csi_migration_on,
    is_csi_migration_on_for_plugin,
    is_inline_migratable,
    is_plugin_migrated_to_csi_on_node,
    is_pv_migratable,
    translate_in_tree_inline_volume_to_csi,
    translate_in_tree_pv_to_csi,
)

Obj = dict[str, Any]
GA_ZONE, BETA_ZONE = "topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"
GA_REGION, BETA_REGION = "topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region"


def pv(
    source: Obj, labels: dict[str, str] | None = None, affinity: list[list[tuple[str, list[str]]]] | None = None
) -> PersistentVolume:
    spec: Obj = dict(source)
    if affinity is not None:
        terms = [
            {"matchExpressions": [{"key": k, "operator": "In", "values": v} for k, v in term]} for term in affinity
        ]
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": terms}}
    return msgspec.convert({"metadata": {"name": "pv", "labels": labels or {}}, "spec": spec}, PersistentVolume)


def terms(translated: PersistentVolume) -> list[list[tuple[str, list[str]]]]:
    affinity = translated.specs.node_affinity
    assert affinity is not None and affinity.required is not None
    return [
        [(r.key or "", list(r.values or ())) for r in t.match_expressions or ()]
        for t in affinity.required.node_selector_terms or ()
    ]


EBS = {"awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-0123", "fsType": "ext4"}}
PD = {"gcePersistentDisk": {"pdName": "disk", "fsType": "ext4"}}


def test_ebs_zone_requirement_moves_to_the_driver_key() -> None:
    translated = translate_in_tree_pv_to_csi(pv(EBS, affinity=[[(GA_ZONE, ["us-east-1a"]), ("other", ["x"])]]))
    assert translated.specs.csi is not None
    assert (translated.specs.csi.driver, translated.specs.csi.volume_handle) == ("ebs.csi.aws.com", "vol-0123")
    assert translated.specs.aws_elastic_block_store is None
    assert terms(translated) == [[("topology.ebs.csi.aws.com/zone", ["us-east-1a"]), ("other", ["x"])]]


def test_a_zone_label_becomes_a_requirement_in_every_term() -> None:
    """Without a zone requirement, the label's zones (``__``-separated, sorted) are added to every
    term, or to one new term."""
    translated = translate_in_tree_pv_to_csi(pv(EBS, labels={BETA_ZONE: "us-b__us-a"}))
    assert terms(translated) == [[("topology.ebs.csi.aws.com/zone", ["us-a", "us-b"])]]
    with_terms = translate_in_tree_pv_to_csi(pv(PD, labels={GA_ZONE: "z"}, affinity=[[("a", ["1"])], [("b", ["2"])]]))
    assert terms(with_terms) == [
        [("a", ["1"]), ("topology.gke.io/zone", ["z"])],
        [("b", ["2"]), ("topology.gke.io/zone", ["z"])],
    ]


def test_a_beta_region_requirement_becomes_the_ga_one() -> None:
    translated = translate_in_tree_pv_to_csi(
        pv(PD, affinity=[[(BETA_ZONE, ["us-east1-b"]), (BETA_REGION, ["us-east1"])]])
    )
    assert terms(translated) == [[("topology.gke.io/zone", ["us-east1-b"]), (GA_REGION, ["us-east1"])]]


@pytest.mark.parametrize(
    ("labels", "handle"),
    [
        ({}, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk"),
        ({GA_ZONE: "us-east1-b"}, "projects/UNSPECIFIED/zones/us-east1-b/disks/disk"),
        ({BETA_ZONE: "us-east1-b__us-east1-c"}, "projects/UNSPECIFIED/regions/us-east1/disks/disk"),
    ],
)
def test_gce_pd_volume_handles(labels: dict[str, str], handle: str) -> None:
    translated = translate_in_tree_pv_to_csi(pv(PD, labels=labels))
    assert translated.specs.csi is not None and translated.specs.csi.volume_handle == handle


def test_a_regional_disk_in_zones_of_two_regions_does_not_translate() -> None:
    with pytest.raises(TranslationError, match="failed to get region from zones"):
        translate_in_tree_pv_to_csi(pv(PD, labels={BETA_ZONE: "us-east1-b__europe-west1-c"}))


@pytest.mark.parametrize(
    ("given", "want"),
    [("vol-1", "vol-1"), ("aws://us-east-1a/vol-1", "vol-1"), ("aws:///vol-1", "vol-1"), ("anything", "anything")],
)
def test_ebs_volume_ids(given: str, want: str) -> None:
    assert ebs_volume_id(given) == want


def test_a_malformed_aws_url_is_refused() -> None:
    with pytest.raises(TranslationError, match="Invalid format for AWS volume"):
        ebs_volume_id("aws://zone/not-a-volume")


def test_inline_volumes_translate_without_topology() -> None:
    volume = msgspec.convert({"name": "v", "gcePersistentDisk": {"pdName": "d"}}, objects.Volume)
    translated = translate_in_tree_inline_volume_to_csi(volume)
    assert translated.specs.csi is not None
    assert (translated.specs.csi.driver, translated.specs.csi.volume_handle) == (
        "pd.csi.storage.gke.io",
        "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d",
    )


def test_which_plugins_migrate() -> None:
    csi_node = msgspec.convert(
        {
            "metadata": {
                "name": "n",
                "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/gce-pd"},
            }
        },
        CSINode,
    )
    bare = msgspec.convert({"metadata": {"name": "n"}}, CSINode)
    # nodevolumelimits (v1.36.3): EBS, Portworx, GCE PD, Azure Disk, Cinder whenever a CSINode
    # exists; RBD, vSphere, Azure File never
    assert is_csi_migration_on(bare, "kubernetes.io/aws-ebs") and not is_csi_migration_on(None, "kubernetes.io/aws-ebs")
    assert is_csi_migration_on(bare, "kubernetes.io/portworx-volume")
    assert not is_csi_migration_on(csi_node, "kubernetes.io/rbd")
    assert not is_csi_migration_on(csi_node, "kubernetes.io/vsphere-volume")
    # volumebinding's isCSIMigrationOnForPlugin (v1.36.3): Portworx is migrated too
    assert is_csi_migration_on_for_plugin("kubernetes.io/portworx-volume")
    assert not is_csi_migration_on_for_plugin("kubernetes.io/rbd")
    # volumebinding: the CSINode must list the plugin
    assert is_plugin_migrated_to_csi_on_node("kubernetes.io/gce-pd", csi_node)
    assert not is_plugin_migrated_to_csi_on_node("kubernetes.io/gce-pd", bare)
    assert is_pv_migratable(pv({"rbd": {"image": "i"}})) and not is_pv_migratable(pv({"csi": {"driver": "d"}}))
    assert is_inline_migratable(msgspec.convert({"vsphereVolume": {"volumePath": "p"}}, objects.Volume))
    assert in_tree_plugin_name(pv({"azureDisk": {"diskName": "d"}})) == "kubernetes.io/azure-disk"
    with pytest.raises(TranslationError):
        in_tree_plugin_name(pv({}))


def test_portworx_translates_as_portworx_go() -> None:
    """portworx.go: a PersistentVolume's source becomes ``pxd.portworx.com`` with the volume id as
    handle (``readOnly`` not carried); an inline volume also gets its name and access mode (read-only:
    ``ReadOnlyMany``) and ``volumeMode: Filesystem``."""
    translated = translate_in_tree_pv_to_csi(
        pv({"portworxVolume": {"volumeID": "vol-1", "fsType": "ext4", "readOnly": True}, "accessModes": ["RWO"]})
    )
    csi = translated.specs.csi
    assert csi is not None and (csi.driver, csi.volume_handle, csi.fs_type, csi.read_only) == (
        "pxd.portworx.com",
        "vol-1",
        "ext4",
        None,
    )
    assert translated.specs.portworx_volume is None and translated.specs.access_modes == ["RWO"]
    volume = msgspec.convert({"name": "p", "portworxVolume": {"volumeID": "vol-2", "readOnly": True}}, objects.Volume)
    inline = translate_in_tree_inline_volume_to_csi(volume)
    assert inline.name == "pxd.portworx.com-vol-2" and inline.specs.access_modes == ["ReadOnlyMany"]
    assert inline.specs.volume_mode == "Filesystem" and inline.specs.csi is not None
    writable = msgspec.convert({"name": "p", "portworxVolume": {"volumeID": "vol-3"}}, objects.Volume)
    assert translate_in_tree_inline_volume_to_csi(writable).specs.access_modes == ["ReadWriteOnce"]

"""Slim views of the Kubernetes objects plugins read, decoded with msgspec.

Only the fields a policy can use are declared; everything else in a 15 KB node object is skipped
by the decoder without being materialised. Attribute names are snake_case and map to the
Kubernetes camelCase JSON keys (``rename="camel"``). Every field accepts ``null`` (Go leaves the
zero value), so the views decode whatever kube-scheduler's ``json.Marshal`` produced, before and
after Kubernetes 1.34 (``creationTimestamp: null`` or absent).
"""

from __future__ import annotations

import msgspec

#: A ``v1.ResourceList`` value: Go's Quantity decodes from a JSON string or number.
QuantityValue = str | int | float


class OwnerReference(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``metav1.OwnerReference``: who owns a pod (a ReplicaSet, Job, ...)."""

    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    uid: str | None = None
    controller: bool | None = None


class ObjectMeta(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``metav1.ObjectMeta``: the identity, labels and annotations of an object."""

    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None


class Taint(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.Taint``."""

    key: str | None = None
    value: str | None = None
    effect: str | None = None


class NodeSpec(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """The parts of ``v1.NodeSpec`` policies read."""

    unschedulable: bool | None = None
    taints: list[Taint] | None = None


class ContainerImage(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.ContainerImage``: the names of an image on a node and its size in bytes."""

    names: list[str] | None = None
    size_bytes: int | None = None


class NodeStatus(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """The parts of ``v1.NodeStatus`` policies read: quantities as strings, the images present, the
    features the kubelet declares (``declaredFeatures``)."""

    allocatable: dict[str, QuantityValue] | None = None
    capacity: dict[str, QuantityValue] | None = None
    images: list[ContainerImage] | None = None
    declared_features: list[str] | None = None


class Node(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """A ``v1.Node`` reduced to metadata, spec.taints/unschedulable and
    status.allocatable/capacity/images (the cluster state's nodes)."""

    metadata: ObjectMeta | None = None
    spec: NodeSpec | None = None
    status: NodeStatus | None = None


class RequestNodeStatus(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """:class:`NodeStatus` without ``images``: decoding a node's 40 or so image entries costs more
    than the rest of it (about 4.6 us a node), and kube-scheduler already scores ImageLocality
    itself before it calls an extender."""

    allocatable: dict[str, QuantityValue] | None = None
    capacity: dict[str, QuantityValue] | None = None


class RequestNode(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """The view of a node sent in full in a request body (``Nodes.items``): :class:`Node` without
    ``status.images`` (:class:`RequestNodeStatus`); ``NodeInfo.images`` is then empty."""

    metadata: ObjectMeta | None = None
    spec: NodeSpec | None = None
    status: RequestNodeStatus | None = None


class ResourceRequirements(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.ResourceRequirements``."""

    requests: dict[str, QuantityValue] | None = None
    limits: dict[str, QuantityValue] | None = None


class ContainerPort(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.ContainerPort``: what NodePorts reads (``hostPort``, ``protocol``, ``hostIP``)."""

    container_port: int | None = None
    host_port: int | None = None
    protocol: str | None = None
    host_ip: str | None = msgspec.field(default=None, name="hostIP")


class ContainerRestartRule(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.ContainerRestartRule``: its ``action`` (NodeDeclaredFeatures reads
    ``RestartAllContainers``)."""

    action: str | None = None


class Container(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """A container or init container: its name, image, resources, ports, (init containers)
    restart policy and restart rules."""

    name: str | None = None
    image: str | None = None
    resources: ResourceRequirements | None = None
    ports: list[ContainerPort] | None = None
    restart_policy: str | None = None
    restart_policy_rules: list[ContainerRestartRule] | None = None


class Toleration(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.Toleration``."""

    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class LabelSelectorRequirement(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``metav1.LabelSelectorRequirement``: ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``."""

    key: str | None = None
    operator: str | None = None
    values: list[str] | None = None


class LabelSelector(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``metav1.LabelSelector`` (:mod:`app.framework.labels` matches it)."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class NodeSelectorRequirement(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.NodeSelectorRequirement``: ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``."""

    key: str | None = None
    operator: str | None = None
    values: list[str] | None = None


class NodeSelectorTerm(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.NodeSelectorTerm``: its requirements are ANDed."""

    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelector(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.NodeSelector``: its terms are ORed."""

    node_selector_terms: list[NodeSelectorTerm] | None = None


class PreferredSchedulingTerm(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.PreferredSchedulingTerm``."""

    weight: int | None = None
    preference: NodeSelectorTerm | None = None


class NodeAffinity(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.NodeAffinity``."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = None


class PodAffinityTerm(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.PodAffinityTerm``."""

    label_selector: LabelSelector | None = None
    namespaces: list[str] | None = None
    topology_key: str | None = None
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] | None = None
    mismatch_label_keys: list[str] | None = None


class WeightedPodAffinityTerm(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.WeightedPodAffinityTerm``."""

    weight: int | None = None
    pod_affinity_term: PodAffinityTerm | None = None


class PodAffinity(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.PodAffinity`` and ``v1.PodAntiAffinity`` (the same shape)."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = None
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = None


class Affinity(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.Affinity``."""

    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.TopologySpreadConstraint``."""

    max_skew: int | None = None
    topology_key: str | None = None
    when_unsatisfiable: str | None = None
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] | None = None


class PodSchedulingGate(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.PodSchedulingGate``."""

    name: str | None = None


class PersistentVolumeClaimVolumeSource(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.PersistentVolumeClaimVolumeSource``: the claim a pod volume uses."""

    claim_name: str | None = None
    read_only: bool | None = None


class Present(msgspec.Struct, frozen=True, gc=False):
    """A volume source whose presence alone is read (``ephemeral``, ``azureFile``,
    ``vsphereVolume``): its fields are skipped by the decoder."""


class CSIVolumeSource(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.CSIVolumeSource`` (an inline CSI volume) cut to its driver, which VolumeBinding's
    queueing hint reads (``isSchedulableAfterCSIDriverChange``)."""

    driver: str | None = None


class GCEPersistentDiskVolumeSource(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.GCEPersistentDiskVolumeSource``."""

    pd_name: str | None = None
    fs_type: str | None = None
    partition: int | None = None
    read_only: bool | None = None


class AWSElasticBlockStoreVolumeSource(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.AWSElasticBlockStoreVolumeSource``."""

    volume_id: str | None = msgspec.field(default=None, name="volumeID")
    fs_type: str | None = None
    partition: int | None = None
    read_only: bool | None = None


class AzureDiskVolumeSource(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.AzureDiskVolumeSource``."""

    disk_name: str | None = None
    disk_uri: str | None = msgspec.field(default=None, name="diskURI")
    caching_mode: str | None = None
    fs_type: str | None = None
    read_only: bool | None = None
    kind: str | None = None


class CinderVolumeSource(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.CinderVolumeSource`` (and ``CinderPersistentVolumeSource``)."""

    volume_id: str | None = msgspec.field(default=None, name="volumeID")
    fs_type: str | None = None
    read_only: bool | None = None


class RBDVolumeSource(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.RBDVolumeSource`` (and ``RBDPersistentVolumeSource``): monitors, pool, image."""

    monitors: list[str] | None = None
    pool: str | None = None
    image: str | None = None
    read_only: bool | None = None


class ISCSIVolumeSource(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.ISCSIVolumeSource`` (and ``ISCSIPersistentVolumeSource``)."""

    target_portal: str | None = None
    iqn: str | None = None
    lun: int | None = None
    read_only: bool | None = None


class PortworxVolumeSource(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.PortworxVolumeSource``."""

    volume_id: str | None = msgspec.field(default=None, name="volumeID")
    fs_type: str | None = None
    read_only: bool | None = None


class Volume(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """A ``v1.Volume`` cut to the sources the volume plugins read: a claim (``persistentVolumeClaim``,
    or ``ephemeral``, whose claim is named ``<pod>-<volume>``) and the in-tree disks whose
    conflicts and attach limits kube-scheduler checks or translates to CSI, and an inline ``csi``
    volume's driver."""

    name: str | None = None
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: Present | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    azure_disk: AzureDiskVolumeSource | None = None
    azure_file: Present | None = None
    cinder: CinderVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None
    portworx_volume: PortworxVolumeSource | None = None
    vsphere_volume: Present | None = None
    csi: CSIVolumeSource | None = None

    def relevant(self) -> bool:
        """Whether a volume plugin reads this volume (else a pod record does not keep it)."""
        return any(
            source is not None
            for source in (
                self.persistent_volume_claim,
                self.ephemeral,
                self.gce_persistent_disk,
                self.aws_elastic_block_store,
                self.azure_disk,
                self.azure_file,
                self.cinder,
                self.rbd,
                self.iscsi,
                self.portworx_volume,
                self.vsphere_volume,
                self.csi,
            )
        )


class PodResourceClaim(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.PodResourceClaim``: a claim of ``spec.resourceClaims`` by name or by template."""

    name: str | None = None
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodResourceClaimStatus(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.PodResourceClaimStatus``: the claim generated for a template's entry."""

    name: str | None = None
    resource_claim_name: str | None = None


class PodSpec(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """The parts of ``v1.PodSpec`` policies read."""

    node_name: str | None = None
    scheduler_name: str | None = None
    priority: int | None = None
    priority_class_name: str | None = None
    node_selector: dict[str, str] | None = None
    tolerations: list[Toleration] | None = None
    containers: list[Container] | None = None
    init_containers: list[Container] | None = None
    overhead: dict[str, QuantityValue] | None = None
    #: pod-level resources (``spec.resources``, PodLevelResources)
    resources: ResourceRequirements | None = None
    affinity: Affinity | None = None
    topology_spread_constraints: list[TopologySpreadConstraint] | None = None
    scheduling_gates: list[PodSchedulingGate] | None = None
    #: ``PreemptLowerPriority`` (default) or ``Never``
    preemption_policy: str | None = None
    #: ``spec.volumes`` (the sources of :class:`Volume`; the others are skipped)
    volumes: list[Volume] | None = None
    host_network: bool | None = None
    #: ``false``: the pod runs in a user namespace
    host_users: bool | None = None
    #: ``spec.resourceClaims`` (DynamicResources)
    resource_claims: list[PodResourceClaim] | None = None


class PodCondition(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.PodCondition``: its type, status and reason (preemption reads ``DisruptionTarget``)."""

    type: str | None = None
    status: str | None = None
    reason: str | None = None


class ContainerStatus(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.ContainerStatus``: what a container was given by an in-place resize
    (``allocatedResources``) and what it runs with (``resources``)."""

    name: str | None = None
    allocated_resources: dict[str, QuantityValue] | None = None
    resources: ResourceRequirements | None = None


class PodStatus(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """``v1.PodStatus`` phase, nominated node, start time, conditions, and the resources of an
    in-place resize (the containers' and init containers' statuses, the pod-level
    ``allocatedResources`` and ``resources``)."""

    phase: str | None = None
    nominated_node_name: str | None = None
    start_time: str | None = None
    conditions: list[PodCondition] | None = None
    container_statuses: list[ContainerStatus] | None = None
    init_container_statuses: list[ContainerStatus] | None = None
    allocated_resources: dict[str, QuantityValue] | None = None
    resources: ResourceRequirements | None = None
    #: ``status.resourceClaimStatuses``: the claims generated from templates
    resource_claim_statuses: list[PodResourceClaimStatus] | None = None


class Pod(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """A ``v1.Pod`` reduced to what scheduling policies read."""

    metadata: ObjectMeta | None = None
    spec: PodSpec | None = None
    status: PodStatus | None = None


EMPTY_META = ObjectMeta()
EMPTY_POD_SPEC = PodSpec()
EMPTY_NODE_SPEC = NodeSpec()
EMPTY_NODE_STATUS = NodeStatus()

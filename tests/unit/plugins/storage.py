"""Storage objects for the volume plugins' tests, as upstream's test builders make them
(pkg/scheduler/framework/plugins/volumebinding/binder_test.go ``makeTestPVC``, ``makeTestPV``;
test_utils.go ``makePVC``, ``makePV``; ``st.MakePod``), as Kubernetes JSON documents, and a
:class:`~tests.support.cluster.MemoryCluster` holding them."""

from __future__ import annotations

import copy
from typing import Any

import msgspec

from app.framework import ClusterNeeds, NodeInfo, PodInfo, objects
from tests.support.cluster import MemoryCluster

Obj = dict[str, Any]

# binder_test.go's classes, nodes and topology
NODE_LABEL_KEY, NODE_LABEL_VALUE = "nodeKey", "node1"
PROVISIONER = "test-provisioner"
WAIT_CLASS, IMMEDIATE_CLASS = "waitClass", "immediateClass"
WAIT_CLASS_WITH_PROVISIONER, TOPO_MISMATCH_CLASS = "waitClassWithProvisioner", "topoMismatchClass"
PVC_UNBOUND, PVC_PREBOUND, PVC_BOUND, PVC_SELECTED_NODE = range(4)


def storage_class(name: str, mode: str | None, provisioner: str = "", topology: list[str] | None = None) -> Obj:
    doc: Obj = {"metadata": {"name": name}, "provisioner": provisioner}
    if mode is not None:
        doc["volumeBindingMode"] = mode
    if topology is not None:
        doc["allowedTopologies"] = [{"matchLabelExpressions": [{"key": NODE_LABEL_KEY, "values": topology}]}]
    return doc


#: ``newTestBinder``'s StorageClasses
BINDER_CLASSES = [
    storage_class(
        WAIT_CLASS_WITH_PROVISIONER, "WaitForFirstConsumer", PROVISIONER, [NODE_LABEL_VALUE, "reference-value"]
    ),
    storage_class(IMMEDIATE_CLASS, "Immediate"),
    storage_class(WAIT_CLASS, "WaitForFirstConsumer", "kubernetes.io/no-provisioner"),
    storage_class(TOPO_MISMATCH_CLASS, "WaitForFirstConsumer", PROVISIONER, ["reference-value"]),
]


def make_test_pvc(
    name: str, size: str, node: str, state: int, pv_name: str, version: str, class_name: str | None
) -> Obj:
    """``makeTestPVC``: namespace ``testns``, UID ``pvc-uid``, ``volumeMode: Filesystem``."""
    doc: Obj = {
        "metadata": {"name": name, "namespace": "testns", "uid": "pvc-uid", "resourceVersion": version},
        "spec": {"resources": {"requests": {"storage": size}}, "volumeMode": "Filesystem"},
    }
    if class_name is not None:
        doc["spec"]["storageClassName"] = class_name
    annotations: dict[str, str] = {}
    if state == PVC_SELECTED_NODE:
        annotations["volume.kubernetes.io/selected-node"] = node
    elif state in (PVC_BOUND, PVC_PREBOUND):
        if state == PVC_BOUND:
            annotations["pv.kubernetes.io/bind-completed"] = "yes"
        doc["spec"]["volumeName"] = pv_name
    if annotations:
        doc["metadata"]["annotations"] = annotations
    return doc


def make_test_pv(name: str, node: str, capacity: str, version: str, bound_to: Obj | None, class_name: str) -> Obj:
    """``makeTestPV``: ``Available``, node affinity ``nodeKey In [node]``, bound to ``bound_to``
    (``claimRef`` and ``bound-by-controller``)."""
    doc: Obj = {
        "metadata": {"name": name, "resourceVersion": version},
        "spec": {"capacity": {"storage": capacity}, "storageClassName": class_name, "volumeMode": "Filesystem"},
        "status": {"phase": "Available"},
    }
    if node:
        requirement = {"key": NODE_LABEL_KEY, "operator": "In", "values": [node]}
        doc["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [requirement]}]}}
    if bound_to is not None:
        meta = bound_to["metadata"]
        doc["spec"]["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "resourceVersion": meta["resourceVersion"],
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
        }
        doc["metadata"]["annotations"] = {"pv.kubernetes.io/bound-by-controller": "yes"}
    return doc


def with_annotations(doc: Obj, **annotations: str) -> Obj:
    out = copy.deepcopy(doc)
    out["metadata"].setdefault("annotations", {}).update(annotations)
    return out


def with_version(doc: Obj, version: str) -> Obj:
    out = copy.deepcopy(doc)
    out["metadata"]["resourceVersion"] = version
    return out


def make_pod(*claims: Obj, name: str = "test-pod", namespace: str = "testns", **spec: Any) -> Obj:
    """``makePod("test-pod").withNamespace("testns").withNodeName("node1").withPVCSVolume(...)``
    (not bound here: the cluster state would count it on the node)."""
    volumes = [
        {"name": f"vol{i}", "persistentVolumeClaim": {"claimName": c["metadata"]["name"]}} for i, c in enumerate(claims)
    ]
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"volumes": volumes, **spec},
    }


def pod_info(doc: Obj) -> PodInfo:
    return PodInfo(msgspec.convert(doc, objects.Pod))


def node_doc(name: str, **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}


def node_info(doc: Obj) -> NodeInfo:
    return NodeInfo(doc["metadata"]["name"], msgspec.convert(doc, objects.Node))


def storage_cluster(
    nodes: list[Obj] = (),  # type: ignore[assignment]
    pods: list[Obj] = (),  # type: ignore[assignment]
    **storage: list[Obj],
) -> MemoryCluster:
    """A cluster with the storage kinds watched (``volumes`` and ``csi_storage_capacities``), the
    nodes and pods seeded, and each storage kind (``persistentvolumeclaims=[...]``, ...) loaded."""
    cluster = MemoryCluster()
    cluster.register("storage", ClusterNeeds(volumes=True, csi_storage_capacities=True))
    cluster.seed(list(nodes), list(pods))
    for kind in (
        "persistentvolumeclaims",
        "persistentvolumes",
        "storageclasses",
        "csinodes",
        "csidrivers",
        "csistoragecapacities",
        "volumeattachments",
    ):
        cluster.seed_storage(kind, storage.get(kind, []))
    return cluster


__all__ = [
    "BINDER_CLASSES",
    "IMMEDIATE_CLASS",
    "NODE_LABEL_KEY",
    "NODE_LABEL_VALUE",
    "PROVISIONER",
    "PVC_BOUND",
    "PVC_PREBOUND",
    "PVC_SELECTED_NODE",
    "PVC_UNBOUND",
    "TOPO_MISMATCH_CLASS",
    "WAIT_CLASS",
    "WAIT_CLASS_WITH_PROVISIONER",
    "make_pod",
    "make_test_pv",
    "make_test_pvc",
    "node_doc",
    "node_info",
    "pod_info",
    "storage_class",
    "storage_cluster",
    "with_annotations",
    "with_version",
]

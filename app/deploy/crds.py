"""The CustomResourceDefinitions ``render`` ships: the PodGroup CRD of
kubernetes-sigs/scheduler-plugins, when a profile's plugins read PodGroups.
"""

from __future__ import annotations

from typing import Any

from app.cluster import podgroups
from app.config import Configuration
from app.deploy.objects import dump, header
from app.framework.build import enabled_plugins, plugin_args
from app.framework.registry import Registry

#: The PodGroup CRD (``scheduling.x-k8s.io/v1alpha1``) as kubernetes-sigs/scheduler-plugins
#: ships it (``config/crd/bases/scheduling.x-k8s.io_podgroups.yaml``), descriptions shortened:
#: Coscheduling reads each group's ``minMember`` and ``scheduleTimeoutSeconds``.
PODGROUP_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {
        "annotations": {"api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/scheduler-plugins/pull/50"},
        "name": f"{podgroups.PLURAL}.{podgroups.GROUP}",
    },
    "spec": {
        "group": podgroups.GROUP,
        "names": {
            "kind": "PodGroup",
            "listKind": "PodGroupList",
            "plural": podgroups.PLURAL,
            "shortNames": ["pg", "pgs"],
            "singular": "podgroup",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "additionalPrinterColumns": [
                    {"jsonPath": ".status.phase", "name": "Phase", "type": "string"},
                    {"jsonPath": ".spec.minMember", "name": "MinMember", "type": "integer"},
                    {"jsonPath": ".status.running", "name": "Running", "type": "integer"},
                    {"jsonPath": ".status.succeeded", "name": "Succeeded", "type": "integer"},
                    {"jsonPath": ".status.failed", "name": "Failed", "type": "integer"},
                    {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
                ],
                "name": podgroups.VERSION,
                "schema": {
                    "openAPIV3Schema": {
                        "description": "PodGroup is a collection of Pod; used for batch workload.",
                        "properties": {
                            "apiVersion": {"type": "string"},
                            "kind": {"type": "string"},
                            "metadata": {"type": "object"},
                            "spec": {
                                "description": "Specification of the desired behavior of the pod group.",
                                "properties": {
                                    "minMember": {
                                        "description": "The pods that must be scheduled together (at least 1).",
                                        "format": "int32",
                                        "minimum": 1,
                                        "type": "integer",
                                    },
                                    "minResources": {
                                        "additionalProperties": {
                                            "anyOf": [{"type": "integer"}, {"type": "string"}],
                                            "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|"
                                            r"[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
                                            "x-kubernetes-int-or-string": True,
                                        },
                                        "description": "The resources the group needs to start.",
                                        "type": "object",
                                    },
                                    "scheduleTimeoutSeconds": {
                                        "description": "How long the members may wait for the group.",
                                        "format": "int32",
                                        "type": "integer",
                                    },
                                },
                                "type": "object",
                            },
                            "status": {
                                "description": "The observed state of the pod group.",
                                "properties": {
                                    "failed": {"format": "int32", "type": "integer"},
                                    "occupiedBy": {"type": "string"},
                                    "phase": {"type": "string"},
                                    "running": {"format": "int32", "type": "integer"},
                                    "scheduleStartTime": {"format": "date-time", "type": "string"},
                                    "succeeded": {"format": "int32", "type": "integer"},
                                },
                                "type": "object",
                            },
                        },
                        "type": "object",
                    }
                },
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
            }
        ],
    },
}


def uses_podgroups(config: Configuration, registry: Registry) -> bool:
    """Does a profile enable a plugin that declares it reads PodGroups (``ClusterNeeds.pod_groups``:
    Coscheduling unless ``usePodGroupCRD: false``)? Then the manifests carry :data:`PODGROUP_CRD`."""
    for profile in config.profiles:
        timeout = profile.extender.http_timeout_seconds
        for name in enabled_plugins(profile, registry):
            entry = registry.get(name)
            if entry is None or entry.needs is None:
                continue
            if entry.needs(plugin_args(profile, entry), timeout).pod_groups:
                return True
    return False


def podgroup_crd_file(where: str, source: str) -> str:
    return header(
        f"{where}: the PodGroup CRD ({podgroups.GROUP}/{podgroups.VERSION}, as kubernetes-sigs/scheduler-plugins "
        "ships it) for Coscheduling's pod groups: kubectl apply -f it once per cluster, unless installed already "
        "(no kustomization lists it: deleting it deletes every PodGroup).",
        source,
    ) + dump(PODGROUP_CRD)

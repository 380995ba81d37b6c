"""The pod signers plugins share (v1.36.3 staging/src/k8s.io/kube-scheduler/framework/signers.go):
the fragment names and the functions that turn a part of the pod into a comparable value, for
opportunistic batching's signatures (:mod:`app.framework.runtime.batch`).

Values are JSON-serializable and canonical (sorted where upstream sorts), so two pods that
upstream signs alike are signed alike here. ``VOLUMES`` covers the volume sources a pod record
keeps (claims, ephemeral claims and the in-tree disks: :meth:`~app.framework.objects.Volume.relevant`);
upstream also includes the other non-ConfigMap, non-Secret sources (``emptyDir``, ``hostPath``...),
which no scheduling plugin reads.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from app.framework.interfaces import SignFragment
from app.framework.objects import NodeSelectorTerm
from app.framework.types import PodInfo

DYNAMIC_RESOURCES = "v1.Pod.Spec.DynamicResources"
IMAGE_NAMES = "v1.Pod.Spec.CanonicalImageNames()"
LABELS = "v1.Pod.Labels"
NODE_NAME = "v1.Pod.Spec.NodeName"
NODE_AFFINITY = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR = "v1.Pod.Spec.Affinity.NodeSelector"
HOST_PORTS = "v1.Pod.Spec.HostPorts()"
RESOURCES = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
TOLERATIONS = "v1.Pod.Spec.Tolerations"
VOLUMES = "v1.Pod.Spec.Volumes.NonSyntheticSources()"
FEATURES = "v1.Pod.Spec.RequiredFeatures()"


_NO_TERM = NodeSelectorTerm()


def host_ports(pod: PodInfo) -> list[int]:
    """``HostPortsSigner``: the distinct host ports (above 0) of the containers and init
    containers, sorted."""
    return sorted({port for _, _, port in pod.host_ports})


def tolerations(pod: PodInfo) -> list[Any]:
    """``TolerationsSigner``: the tolerations sorted by key, then value."""
    tols = sorted(pod.tolerations, key=lambda t: (t.key or "", t.value or ""))
    return [msgspec.to_builtins(t) for t in tols]


def _requirements(reqs: Any) -> list[str]:
    out = []
    for req in reqs or ():
        data = msgspec.to_builtins(req)
        if data.get("values"):
            data["values"] = sorted(data["values"])
        out.append(json.dumps(data, sort_keys=True, separators=(",", ":")))
    return sorted(out)


def _term(term: Any) -> dict[str, list[str]]:
    return {
        "MatchExpressions": _requirements(term.match_expressions),
        "MatchFields": _requirements(term.match_fields),
    }


def node_affinity(pod: PodInfo) -> Any:
    """``NodeAffinitySigner``: the required terms and the preferred terms (with their weights),
    each canonical and sorted; ``None`` without a node affinity."""
    affinity = pod.affinity.node_affinity if pod.affinity is not None else None
    if affinity is None:
        return None
    preferred = sorted(
        json.dumps({"Weight": t.weight or 0, "Preference": _term(t.preference or _NO_TERM)}, sort_keys=True)
        for t in affinity.preferred_during_scheduling_ignored_during_execution or ()
    )
    required_selector = affinity.required_during_scheduling_ignored_during_execution
    required = (
        sorted(
            json.dumps(_term(t), sort_keys=True) for t in (required_selector.node_selector_terms or ()) if t is not None
        )
        if required_selector is not None
        else []
    )
    return {"Required": required, "Preferred": preferred}


def node_affinity_fragments(pod: PodInfo) -> list[SignFragment]:
    """NodeAffinity's fragments: :func:`node_affinity` and ``spec.nodeSelector``."""
    return [(NODE_AFFINITY, node_affinity(pod)), (NODE_SELECTOR, dict(pod.node_selector))]


def volumes(pod: PodInfo) -> list[str]:
    """``VolumesSigner``: the volume sources (not their names), sorted (see the module doc)."""
    out = []
    for volume in pod.volumes:
        data = msgspec.to_builtins(volume)
        data.pop("name", None)
        out.append(json.dumps(data, sort_keys=True, separators=(",", ":")))
    return sorted(out)


def resources(pod: PodInfo) -> dict[str, int]:
    """``computePodResourceRequest``'s requests (cpu in millicores, memory in bytes)."""
    return dict(sorted(pod.requests.items()))


__all__ = [
    "DYNAMIC_RESOURCES",
    "FEATURES",
    "HOST_PORTS",
    "IMAGE_NAMES",
    "LABELS",
    "NODE_AFFINITY",
    "NODE_NAME",
    "NODE_SELECTOR",
    "RESOURCES",
    "TOLERATIONS",
    "VOLUMES",
    "host_ports",
    "node_affinity",
    "node_affinity_fragments",
    "resources",
    "tolerations",
    "volumes",
]

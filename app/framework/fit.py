"""Whether a pod's requests fit on a node, as kube-scheduler's NodeResourcesFit decides.

Mirrors ``fitsRequest`` in pkg/scheduler/framework/plugins/noderesources/fit.go: the node must
have room for one more pod (``allocatable.pods``), and for every resource the pod requests
(cpu in millicores, memory and ephemeral-storage in bytes, extended resources and hugepages as
counts/bytes) the request must not exceed ``allocatable - requested``. A zero request is never
checked; an extended resource the node does not offer has allocatable 0.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.framework.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from app.framework.types import NodeInfo


def insufficient_resources(
    node: NodeInfo,
    requests: Mapping[str, int],
    ignored: frozenset[str] = frozenset(),
) -> list[str]:
    """The reasons ``requests`` do not fit on ``node`` (empty when they fit), in upstream's
    wording: ``Too many pods``, ``Insufficient cpu``, ``Insufficient <resource>``.

    ``ignored`` names resources not to check (``NodeResourcesFitArgs.ignoredResources``, or the
    extended resources an extender manages with ``ignoredByScheduler``). ``node.usage`` must hold
    the pods already on the node. Raises :class:`~app.framework.resources.QuantityError` for a
    malformed node quantity.
    """
    reasons: list[str] = []
    allocatable = node.allocatable
    requested = node.requested
    if node.usage.pod_count + 1 > allocatable.get(PODS, 0):
        reasons.append("Too many pods")
    for name in (CPU, MEMORY, EPHEMERAL_STORAGE):
        want = requests.get(name, 0)
        if want > 0 and want > allocatable.get(name, 0) - requested.get(name, 0):
            reasons.append(f"Insufficient {name}")
    for name, want in requests.items():
        if want == 0 or name in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS) or name in ignored:
            continue
        if want > allocatable.get(name, 0) - requested.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


__all__ = ["insufficient_resources"]

"""Whether a pod's requests fit on a node, as kube-scheduler's NodeResourcesFit decides.

Mirrors ``fitsRequest`` in pkg/scheduler/framework/plugins/noderesources/fit.go: the node must
have room for one more pod (``allocatable.pods``); when the pod requests anything, then for every
resource it requests (cpu in millicores, memory and ephemeral-storage in bytes, extended
resources and hugepages as counts/bytes) the request must not exceed ``allocatable - requested``.
A zero request is never checked; a resource the node does not offer has allocatable 0.
``ignoredResources``/``ignoredResourceGroups`` apply to extended resources only, as upstream.
A shortage is *unresolvable* when the request exceeds the node's whole allocatable (evicting
every pod would not help: ``InsufficientResource.Unresolvable``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.framework.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, is_extended_resource_name
from app.framework.types import NodeInfo

#: the resources Filter always checks (``ignoredResources`` never applies to them)
NATIVE = frozenset((CPU, MEMORY, EPHEMERAL_STORAGE, PODS))


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """One shortage (``noderesources.InsufficientResource``): the resource, upstream's reason
    (``Insufficient cpu``), the pod's request, what the node has in use and its allocatable (the
    resource's units), and whether evicting pods could ever make room."""

    resource: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool


def insufficient(
    node: NodeInfo,
    requests: Mapping[str, int],
    ignored: frozenset[str] = frozenset(),
    ignored_groups: frozenset[str] = frozenset(),
) -> list[InsufficientResource]:
    """The shortages of ``requests`` on ``node`` (empty when the pod fits), in upstream's order:
    pods, cpu, memory, ephemeral-storage, then the other resources.

    ``ignored`` names extended resources not to check, ``ignored_groups`` their domains (the part
    before ``/``): ``NodeResourcesFitArgs.ignoredResources``/``ignoredResourceGroups``, or the
    resources an extender manages with ``ignoredByScheduler``. ``node.usage`` must hold the pods
    already on the node. Raises :class:`~app.framework.types.ObjectDecodeError` for a malformed
    node quantity.
    """
    out: list[InsufficientResource] = []
    allocatable = node.allocatable
    requested = node.requested
    pods = node.usage.pod_count
    allowed = allocatable.get(PODS, 0)
    if pods + 1 > allowed:
        out.append(InsufficientResource(PODS, "Too many pods", 1, pods, allowed, False))
    if not any(requests.values()):
        return out
    for name in (CPU, MEMORY, EPHEMERAL_STORAGE):
        want = requests.get(name, 0)
        have, used = allocatable.get(name, 0), requested.get(name, 0)
        if want > 0 and want > have - used:
            out.append(InsufficientResource(name, f"Insufficient {name}", want, used, have, want > have))
    skip_some = bool(ignored or ignored_groups)
    for name, want in requests.items():
        if want == 0 or name in NATIVE:
            continue
        if skip_some and is_ignored(name, ignored, ignored_groups):
            continue
        have, used = allocatable.get(name, 0), requested.get(name, 0)
        if want > have - used:
            out.append(InsufficientResource(name, f"Insufficient {name}", want, used, have, want > have))
    return out


def is_ignored(name: str, ignored: frozenset[str], groups: frozenset[str]) -> bool:
    """Whether Filter skips resource ``name``: an extended resource named in ``ignored`` or
    whose domain (before ``/``) is in ``groups``."""
    return is_extended_resource_name(name) and (name in ignored or name.split("/", 1)[0] in groups)


__all__ = ["NATIVE", "InsufficientResource", "insufficient", "is_ignored"]

"""Whether a pod's requests fit on a node, as kube-scheduler's NodeResourcesFit decides.

Mirrors ``fitsRequest`` in pkg/scheduler/framework/plugins/noderesources/fit.go (v1.36.3): the node must
have room for one more pod (``allocatable.pods``); when the pod requests anything, then for every
resource it requests (cpu in millicores, memory and ephemeral-storage in bytes, extended
resources and hugepages as counts/bytes) the request must not exceed ``allocatable - requested``.
A zero request is never checked; a resource the node does not offer has allocatable 0.
``ignoredResources``/``ignoredResourceGroups`` apply to extended resources only, as upstream.
A shortage is *unresolvable* when the request exceeds the node's whole allocatable (evicting
every pod would not help: ``InsufficientResource.Unresolvable``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


#: ``shortages``'s native combinations, by bit (pods 1, cpu 2, memory 4, ephemeral-storage 8)
_NATIVE_SHORT: tuple[tuple[str, ...], ...] = tuple(
    tuple(name for bit, name in ((1, PODS), (2, CPU), (4, MEMORY), (8, EPHEMERAL_STORAGE)) if bits & bit)
    for bits in range(16)
)


#: a node the pod fits: no shortage, nothing unresolvable
FITS: tuple[tuple[str, ...], bool] = ((), False)


def shortages(
    nodes: Sequence[NodeInfo],
    requests: Mapping[str, int],
    ignored: frozenset[str] = frozenset(),
    ignored_groups: frozenset[str] = frozenset(),
) -> list[tuple[tuple[str, ...], bool] | None]:
    """``fitsRequest`` for each of ``nodes``: the resources ``requests`` fall short of, in
    upstream's order (``pods``, ``cpu``, ``memory``, ``ephemeral-storage``, then the others in
    the requests' order), and whether one of them is unresolvable (a request beyond the node's
    whole allocatable: ``InsufficientResource.Unresolvable``); :data:`FITS` when the pod fits;
    ``None`` for a node whose object is unknown.

    ``ignored`` names extended resources not to check, ``ignored_groups`` their domains (the part
    before ``/``): ``NodeResourcesFitArgs.ignoredResources``/``ignoredResourceGroups``, or the
    resources an extender manages with ``ignoredByScheduler``. Each node's usage must hold the
    pods already on it. One loop over the nodes' :class:`~app.framework.types.NodeResources`
    (computed once per node version); extended resources read the node's maps. Raises
    :class:`~app.framework.types.ObjectDecodeError` for a malformed node quantity.
    """
    cpu, memory, storage = requests.get(CPU, 0), requests.get(MEMORY, 0), requests.get(EPHEMERAL_STORAGE, 0)
    anything = any(requests.values())  # fitsRequest checks resources only for a pod requesting any
    skip_some = bool(ignored or ignored_groups)
    scalars = [
        (name, want)
        for name, want in requests.items()
        if want and name not in NATIVE and not (skip_some and is_ignored(name, ignored, ignored_groups))
    ]
    out: list[tuple[tuple[str, ...], bool] | None] = []
    append = out.append
    for node in nodes:
        r = node.resources
        if r is None:
            append(None)
            continue
        short = 1 if r.pod_count >= r.allowed_pod_number else 0
        beyond = False
        if anything:
            if cpu and cpu > r.milli_cpu - r.requested_milli_cpu:
                short |= 2
                beyond = cpu > r.milli_cpu
            if memory and memory > r.memory - r.requested_memory:
                short |= 4
                beyond = beyond or memory > r.memory
            if storage and storage > r.ephemeral_storage - r.requested_ephemeral_storage:
                short |= 8
                beyond = beyond or storage > r.ephemeral_storage
        names = _NATIVE_SHORT[short]
        if scalars:
            allocatable, used = node.allocatable, node.requested
            extra = tuple(name for name, want in scalars if want > allocatable.get(name, 0) - used.get(name, 0))
            if extra:
                names = names + extra
                beyond = beyond or any(want > allocatable.get(name, 0) for name, want in scalars if name in extra)
        append((names, beyond) if names else FITS)
    return out


def insufficient(
    node: NodeInfo,
    requests: Mapping[str, int],
    ignored: frozenset[str] = frozenset(),
    ignored_groups: frozenset[str] = frozenset(),
) -> list[InsufficientResource]:
    """The shortages of ``requests`` on ``node`` (:func:`shortages`) with their amounts
    (``[]InsufficientResource``; empty when the pod fits or the node object is unknown)."""
    found = shortages((node,), requests, ignored, ignored_groups)[0]
    if not found or not found[0]:
        return []
    names = found[0]
    allocatable, requested = node.allocatable, node.requested
    out = []
    for name in names:
        if name == PODS:
            pods, allowed = node.usage.pod_count, allocatable.get(PODS, 0)
            out.append(InsufficientResource(PODS, "Too many pods", 1, pods, allowed, False))
            continue
        want, have, used = requests.get(name, 0), allocatable.get(name, 0), requested.get(name, 0)
        out.append(InsufficientResource(name, f"Insufficient {name}", want, used, have, want > have))
    return out


def is_ignored(name: str, ignored: frozenset[str], groups: frozenset[str]) -> bool:
    """Whether Filter skips resource ``name``: an extended resource named in ``ignored`` or
    whose domain (before ``/``) is in ``groups``."""
    return is_extended_resource_name(name) and (name in ignored or name.split("/", 1)[0] in groups)


__all__ = ["FITS", "NATIVE", "InsufficientResource", "insufficient", "is_ignored", "shortages"]

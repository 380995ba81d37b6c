"""The framework's per-request data: PodInfo, NodeInfo, CycleState, NodeScore, Victims.

Names and meanings follow kube-scheduler's ``pkg/scheduler/framework/types.go`` and
``cycle_state.go``. Views are read-only; derived values (requests, allocatable) are computed on
first use and cached, so a plugin that never reads them costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.framework import objects
from app.framework.resources import pod_requests, resource_list

_EMPTY: Mapping[str, str] = {}


class PodInfo:
    """A pod as plugins see it.

    Built from the request's ``Pod`` (or a victim pod) decoded into :class:`objects.Pod`; a victim
    known only by UID (cache-mode preemption) has ``pod=None`` and only :attr:`uid`.
    """

    __slots__ = ("_requests", "pod", "uid_only")

    def __init__(self, pod: objects.Pod | None, uid_only: str = "") -> None:
        self.pod = pod
        self.uid_only = uid_only
        self._requests: dict[str, int] | None = None

    @property
    def meta(self) -> objects.ObjectMeta:
        """The pod's metadata (empty when only the UID is known)."""
        return (self.pod.metadata if self.pod is not None else None) or objects.EMPTY_META

    @property
    def spec(self) -> objects.PodSpec:
        """The pod's spec (empty when only the UID is known)."""
        return (self.pod.spec if self.pod is not None else None) or objects.EMPTY_POD_SPEC

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.meta.name or ""

    @property
    def namespace(self) -> str:
        """``metadata.namespace``."""
        return self.meta.namespace or ""

    @property
    def uid(self) -> str:
        """``metadata.uid`` (or the UID a cache-mode victim was named by)."""
        return self.meta.uid or self.uid_only

    @property
    def labels(self) -> Mapping[str, str]:
        """``metadata.labels`` (empty mapping when absent)."""
        return self.meta.labels or _EMPTY

    @property
    def annotations(self) -> Mapping[str, str]:
        """``metadata.annotations`` (empty mapping when absent)."""
        return self.meta.annotations or _EMPTY

    @property
    def priority(self) -> int:
        """``spec.priority`` (0 when unset, as kube-scheduler's ``corev1helpers.PodPriority``)."""
        return self.spec.priority or 0

    @property
    def scheduler_name(self) -> str:
        """``spec.schedulerName``."""
        return self.spec.scheduler_name or ""

    @property
    def requests(self) -> Mapping[str, int]:
        """Effective requests: cpu in millicores, memory in bytes, others as integers.

        Follows :func:`app.framework.resources.pod_requests`. Raises
        :class:`app.framework.resources.QuantityError` for a malformed quantity.
        """
        if self._requests is None:
            spec = self.spec
            self._requests = pod_requests(
                [(_container_requests(c), False) for c in spec.containers or ()],
                [(_container_requests(c), c.restart_policy == "Always") for c in spec.init_containers or ()],
                resource_list(spec.overhead),
            )
        return self._requests

    def key(self) -> str:
        """``namespace/name``, for logs and tables."""
        return f"{self.namespace}/{self.name}"


def _container_requests(container: objects.Container) -> dict[str, int]:
    resources = container.resources
    return resource_list(resources.requests if resources is not None else None)


class ObjectDecodeError(ValueError):
    """A Kubernetes object in the request could not be decoded (the client's mistake: HTTP 400).

    Raised lazily, when a plugin first reads a node; the runtime lets it through instead of
    treating it as the plugin's error.
    """


NodeLoader = Callable[[Any], objects.Node]


class NodeInfo:
    """A node as plugins see it: its name and, when known, the decoded node object.

    Built either from a name and an optional decoded :class:`objects.Node`, or (non-cache
    requests) from the node's raw JSON bytes and a loader: the node is then decoded the first
    time a plugin reads :attr:`name` or :attr:`node`, so a profile whose plugins never read a
    node never pays for decoding it. The loader raises :class:`ObjectDecodeError`.

    In ``nodeCacheCapable: true`` requests only the name is known unless the service holds cluster
    state; plugins that need the object must check :attr:`node` and return an ``ERROR`` status
    when it is ``None`` (the runtime then applies the plugin's failure policy).
    """

    __slots__ = ("_allocatable", "_loader", "_name", "_node", "_raw")

    def __init__(self, name: str = "", node: objects.Node | None = None) -> None:
        self._name = name
        self._node = node
        self._raw: Any = None
        self._loader: NodeLoader | None = None
        self._allocatable: dict[str, int] | None = None

    @classmethod
    def lazy(cls, raw: Any, loader: NodeLoader) -> NodeInfo:
        """A NodeInfo decoded on first use from ``raw`` (the node's JSON bytes) by ``loader``."""
        info = cls()
        info._raw = raw
        info._loader = loader
        return info

    def _load(self) -> objects.Node | None:
        if self._node is None and self._loader is not None:
            node = self._loader(self._raw)
            meta = node.metadata
            if meta is None or not meta.name:
                raise ObjectDecodeError("a node in Nodes.items has no metadata.name")
            self._node, self._name, self._loader = node, meta.name, None
        return self._node

    @property
    def name(self) -> str:
        """``metadata.name`` (decodes a lazy node)."""
        if not self._name and self._loader is not None:
            self._load()
        return self._name

    @property
    def node(self) -> objects.Node | None:
        """The decoded node object, or ``None`` when only the name is known."""
        return self._node if self._loader is None else self._load()

    @property
    def labels(self) -> Mapping[str, str]:
        """``metadata.labels`` (empty when absent or unknown)."""
        node = self.node
        meta = node.metadata if node is not None else None
        return (meta.labels if meta is not None else None) or _EMPTY

    @property
    def annotations(self) -> Mapping[str, str]:
        """``metadata.annotations`` (empty when absent or unknown)."""
        node = self.node
        meta = node.metadata if node is not None else None
        return (meta.annotations if meta is not None else None) or _EMPTY

    @property
    def taints(self) -> tuple[objects.Taint, ...]:
        """``spec.taints``."""
        node = self.node
        spec = node.spec if node is not None else None
        return tuple(spec.taints or ()) if spec is not None else ()

    @property
    def unschedulable(self) -> bool:
        """``spec.unschedulable`` (cordoned)."""
        node = self.node
        spec = node.spec if node is not None else None
        return bool(spec.unschedulable) if spec is not None else False

    @property
    def allocatable(self) -> Mapping[str, int]:
        """``status.allocatable`` in kube-scheduler units (cpu millicores, memory bytes, counts).

        Raises :class:`app.framework.resources.QuantityError` for a malformed quantity.
        """
        if self._allocatable is None:
            node = self.node
            status = node.status if node is not None else None
            self._allocatable = resource_list(status.allocatable if status is not None else None)
        return self._allocatable


class CycleState:
    """Per-request scratch space shared by the plugins of one scheduling call.

    Mirrors kube-scheduler's ``CycleState``: PreFilter writes what Filter reads for every node,
    PreScore what Score reads. Keys are strings, by convention ``"<PluginName>/<what>"``.
    """

    __slots__ = ("_data",)

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}

    def read(self, key: str) -> Any:
        """Return the value stored under ``key``; raises ``KeyError`` if nothing was written."""
        return self._data[key]

    def write(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``."""
        self._data[key] = value

    def delete(self, key: str) -> None:
        """Forget ``key`` (no error when absent)."""
        self._data.pop(key, None)

    def __contains__(self, key: str) -> bool:
        return key in self._data


@dataclass(slots=True)
class NodeScore:
    """A node's score from one Score plugin: 0..100 after NormalizeScore (``framework.NodeScore``)."""

    name: str
    score: int


@dataclass(slots=True)
class Victims:
    """The pods kube-scheduler proposes to evict on one node, most important first.

    ``pods`` keep kube-scheduler's order (the first one is the highest-priority victim);
    ``num_pdb_violations`` is how many of them a PodDisruptionBudget protects.
    """

    pods: list[PodInfo] = field(default_factory=list)
    num_pdb_violations: int = 0


@dataclass(frozen=True, slots=True)
class PodRef:
    """The pod of a bind request: namespace, name and the UID to bind with as a precondition."""

    namespace: str
    name: str
    uid: str

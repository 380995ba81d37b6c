"""The Services, ReplicationControllers, ReplicaSets and StatefulSets PodTopologySpread's default
constraints read, watched like nodes and pods, and the selector they give a pod.

kube-scheduler v1.30's PodTopologySpread applies its default constraints (``defaultingType:
System`` or a non-empty ``List``) to a pod without ``topologySpreadConstraints`` with the selector
``helper.DefaultSelector`` (pkg/scheduler/framework/plugins/helper/spread.go) deduces from
informers of these four kinds (podtopologyspread/plugin.go ``setListers``). :func:`default_selector`
ports it:

- the **Services** of the pod's namespace whose ``spec.selector`` (a label map; ``nil``: it selects
  nothing and is skipped, ``GetPodServices``) matches the pod's labels: their maps merged into one
  label set (``labels.Merge``);
- the pod's **controller** (its first ``ownerReferences`` entry with ``controller: true``,
  ``metav1.GetControllerOfNoCopy``), looked up by name in the pod's namespace when its
  ``apiVersion``/``kind`` is exactly ``v1`` ReplicationController or ``apps/v1``
  ReplicaSet/StatefulSet (``schema.ParseGroupVersion``, so ``/v1`` is ``v1`` too). A
  ReplicationController's ``spec.selector`` map is merged into the label set (overwriting a key
  a Service gave); a ReplicaSet's or StatefulSet's ``spec.selector`` (a ``LabelSelector``)
  contributes its requirements (``LabelSelectorAsSelector(...).Requirements()`` added to the
  set's selector with ``Selector.Add``: ANDed with it), unless it is ``nil`` (``Nothing``: no
  requirement) or invalid (skipped). The controller is found by its owner reference (since
  v1.22, kubernetes#102236): its selector need not match the pod.

Each kind has one compact store (:class:`SelectorStore`): per namespace, object name -> only its
selector, in the form :func:`default_selector` merges (:data:`Labels`, a flat tuple ``(key1,
value1, ...)``; a ReplicaSet's or StatefulSet's with ``matchExpressions`` a
:class:`ControllerSelector`); an object whose selector contributes nothing (``nil``, empty,
invalid) is not kept (a Deployment's ReplicaSet: about 330 bytes). Lookups are by namespace,
never over the whole cluster. Until its first list (or when it fails) a store holds nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from sys import intern
from typing import Any

import msgspec

from app.cluster.reflector import StoreHealth
from app.framework import objects
from app.framework.types import PodInfo
from app.framework.validation import selector_error

SERVICES = "services"
REPLICATION_CONTROLLERS = "replicationcontrollers"
REPLICA_SETS = "replicasets"
STATEFUL_SETS = "statefulsets"
#: the kinds watched for the default selector, in upstream's order
KINDS = (SERVICES, REPLICATION_CONTROLLERS, REPLICA_SETS, STATEFUL_SETS)

#: ``(group, version, kind)`` of the controllers ``DefaultSelector`` looks up (``rcKind``,
#: ``rsKind``, ``ssKind``), by the store kind that holds them
_CONTROLLERS = {
    ("", "v1", "ReplicationController"): REPLICATION_CONTROLLERS,
    ("apps", "v1", "ReplicaSet"): REPLICA_SETS,
    ("apps", "v1", "StatefulSet"): STATEFUL_SETS,
}

#: a label map (``v1.ServiceSpec.Selector``, ``v1.ReplicationControllerSpec.Selector``, a
#: ``matchLabels``) as one flat tuple ``(key1, value1, key2, value2, ...)`` (the smallest record)
Labels = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ControllerSelector:
    """A ReplicaSet's or StatefulSet's valid ``spec.selector`` with ``matchExpressions``:
    ``labels`` (its ``matchLabels``, :data:`Labels`) and ``expressions``, the requirements
    ``LabelSelectorAsSelector`` makes of it (without expressions the selector is kept as its
    :data:`Labels` alone)."""

    labels: Labels
    expressions: tuple[objects.LabelSelectorRequirement, ...] = ()


#: what a ReplicaSet or StatefulSet adds to the default selector
Requirements = Labels | ControllerSelector


# -- decoding -------------------------------------------------------------------------------------


class _Meta(msgspec.Struct, rename="camel"):
    """What is read of ``metadata``: the identity, and the version the reflector resumes from."""

    name: str | None = None
    namespace: str | None = None
    resource_version: str | None = None


_NO_META = _Meta()


class _MapSpec(msgspec.Struct):
    selector: dict[str, str] | None = None


class _MapObject(msgspec.Struct):
    """A Service or ReplicationController cut to its name and ``spec.selector`` map."""

    metadata: _Meta | None = None
    spec: _MapSpec | None = None


class _SelectorSpec(msgspec.Struct):
    selector: objects.LabelSelector | None = None


class _SelectorObject(msgspec.Struct):
    """A ReplicaSet or StatefulSet cut to its name and ``spec.selector``."""

    metadata: _Meta | None = None
    spec: _SelectorSpec | None = None


def flat_labels(selector: Mapping[str, str] | None) -> Labels | None:
    """A label map as :data:`Labels` (strings interned); ``None`` when ``nil`` or empty (it adds
    nothing)."""
    if not selector:
        return None
    return tuple(intern(s) for pair in selector.items() for s in pair)


def pairs(labels: Labels) -> Iterator[tuple[str, str]]:
    """The ``(key, value)`` pairs of :data:`Labels`."""
    it = iter(labels)
    return zip(it, it, strict=True)


def controller_selector(selector: objects.LabelSelector | None) -> Requirements | None:
    """What a ReplicaSet's or StatefulSet's ``spec.selector`` adds to the default selector:
    ``None`` when it is ``nil`` (``LabelSelectorAsSelector`` gives ``Nothing``, whose
    ``Requirements()`` is not ok), empty (``Everything``: no requirement) or invalid (an error,
    :func:`app.framework.validation.selector_error`: skipped)."""
    if selector is None or selector_error(selector) is not None:
        return None
    labels = selector.match_labels or {}
    expressions = selector.match_expressions or []
    if not labels and not expressions:
        return None
    flat = flat_labels(labels) or ()
    if not expressions:
        return flat
    return ControllerSelector(flat, tuple(expressions))


def _map_record(item: _MapObject) -> tuple[str, str, Labels | None]:
    meta = item.metadata or _NO_META
    return intern(meta.namespace or ""), meta.name or "", flat_labels(item.spec.selector if item.spec else None)


def _selector_record(item: _SelectorObject) -> tuple[str, str, Requirements | None]:
    meta = item.metadata or _NO_META
    selector = controller_selector(item.spec.selector if item.spec else None)
    return intern(meta.namespace or ""), meta.name or "", selector


# -- stores ---------------------------------------------------------------------------------------


class SelectorStore(StoreHealth):
    """One kind's objects: ``namespace -> name -> selector`` (:data:`Labels` for Services and
    ReplicationControllers, :data:`Requirements` for ReplicaSets and StatefulSets); objects
    whose selector adds nothing are left out. The reflector's
    :class:`~app.cluster.reflector.Store`; written by its thread, read by any (a ``get`` is one
    dictionary lookup; :meth:`in_namespace` returns a tuple published on each change).

    ``kind`` is one of :data:`KINDS`."""

    def __init__(self, kind: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}")
        self.kind = kind
        maps = kind in (SERVICES, REPLICATION_CONTROLLERS)
        self.object_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(_MapObject if maps else _SelectorObject)
        self._record = _map_record if maps else _selector_record
        #: Services are scanned per namespace: keep each namespace's selectors as a tuple too
        self._listed = kind == SERVICES
        self._lock = threading.Lock()
        self._by_ns: dict[str, dict[str, Any]] = {}
        self._values: dict[str, tuple[Any, ...]] = {}
        self.synced = False
        self.last_error = ""

    # -- reads ------------------------------------------------------------------------------------

    def get(self, namespace: str, name: str) -> Any:
        """The selector of ``namespace/name``, or ``None`` (unknown, or it adds nothing)."""
        names = self._by_ns.get(namespace)
        return names.get(name) if names is not None else None

    def in_namespace(self, namespace: str) -> tuple[Any, ...]:
        """Every kept selector of ``namespace`` (Services only; a snapshot)."""
        return self._values.get(namespace, ())

    def __len__(self) -> int:
        return sum(len(names) for names in self._by_ns.values())

    def load(self, documents: Iterable[Mapping[str, Any]]) -> None:
        """Replace the contents with API objects given as documents (tests, :class:`MemoryCluster`),
        as a completed list does."""
        decoder_type = self.object_decoder.type
        self.replace([self.prepare(msgspec.convert(d, decoder_type)) for d in documents])
        self.mark_synced(self.kind)

    # -- the reflector's store --------------------------------------------------------------------

    def prepare(self, obj: Any) -> Any:
        return self._record(obj)

    def replace(self, items: list[Any]) -> None:
        by_ns: dict[str, dict[str, Any]] = {}
        for namespace, name, value in items:
            if value is not None:
                by_ns.setdefault(namespace, {})[name] = value
        with self._lock:
            self._by_ns = by_ns
            if self._listed:
                self._values = {ns: tuple(names.values()) for ns, names in by_ns.items()}

    def apply(self, event: str, obj: Any) -> None:
        namespace, name, value = self._record(obj)
        with self._lock:
            names = self._by_ns.get(namespace)
            if event == "DELETED" or value is None:
                if names is None or names.pop(name, None) is None:
                    return
                if not names:
                    del self._by_ns[namespace]
            else:
                if names is None:
                    names = self._by_ns[namespace] = {}
                elif names.get(name) == value:
                    return  # a status update: the selector did not change
                names[name] = value
            if self._listed:
                if names:
                    self._values[namespace] = tuple(names.values())
                else:
                    self._values.pop(namespace, None)

    def missing(self, error: str) -> None:
        with self._lock:
            self.synced, self.last_error = False, error
            self._by_ns, self._values = {}, {}


# -- DefaultSelector ------------------------------------------------------------------------------


def controller_of(pod: PodInfo) -> objects.OwnerReference | None:
    """``metav1.GetControllerOfNoCopy``: the pod's first owner reference with ``controller: true``."""
    for ref in pod.owner_references:
        if ref.controller:
            return ref
    return None


def parse_group_version(api_version: str) -> tuple[str, str] | None:
    """``schema.ParseGroupVersion``: ``""`` and ``"/"`` -> ``("", "")``, ``"v1"`` -> ``("",
    "v1")``, ``"g/v"`` -> ``("g", "v")``; ``None`` (an error) with more than one ``/``."""
    if api_version in ("", "/"):
        return "", ""
    slashes = api_version.count("/")
    if slashes == 0:
        return "", api_version
    if slashes == 1:
        group, version = api_version.split("/")
        return group, version
    return None


def default_selector(
    pod: PodInfo,
    services: Iterable[Labels],
    replication_controller: Labels | None = None,
    workload: Requirements | None = None,
) -> objects.LabelSelector:
    """``helper.DefaultSelector`` from what it found (see the module doc): ``services`` are the
    Service selectors of the pod's namespace (each tested against the pod's labels here);
    ``replication_controller`` the selector of the pod's controller when it is a
    ReplicationController, ``workload`` when it is a ReplicaSet or StatefulSet (``None``: no such
    controller, not found, or it adds nothing).

    The result is one ``metav1.LabelSelector``: the label set as ``matchLabels``, a controller
    requirement whose key the set already holds with another value as a ``matchExpressions``
    ``In`` (so the two are ANDed, as ``Selector.Add`` does). An empty selector (nothing selects
    the pod) means no default constraint (``buildDefaultConstraints``: ``selector.Empty()``)."""
    pod_labels = pod.labels
    labels: dict[str, str] = {}
    for selector in services:
        for key, value in pairs(selector):
            if pod_labels.get(key) != value:
                break
        else:
            labels.update(pairs(selector))
    if replication_controller is not None:
        labels.update(pairs(replication_controller))
    expressions: list[objects.LabelSelectorRequirement] = []
    if workload is not None:
        flat = workload.labels if isinstance(workload, ControllerSelector) else workload
        for key, value in pairs(flat):
            have = labels.get(key)
            if have is None:
                labels[key] = value
            elif have != value:  # ANDed with the set's own requirement on the key
                expressions.append(objects.LabelSelectorRequirement(key=key, operator="In", values=[value]))
        if isinstance(workload, ControllerSelector):
            expressions.extend(workload.expressions)
    return objects.LabelSelector(match_labels=labels or None, match_expressions=expressions or None)


class SpreadSelectors:
    """The four stores (:class:`SelectorStore`, one per kind of :data:`KINDS`) and
    :meth:`default_selector` over them."""

    def __init__(self) -> None:
        self.stores = {kind: SelectorStore(kind) for kind in KINDS}

    def default_selector(self, pod: PodInfo) -> objects.LabelSelector:
        """``helper.DefaultSelector(pod, ...)`` over the watched objects (:func:`default_selector`):
        the Services of the pod's namespace and its controller, looked up by name."""
        namespace = pod.namespace
        services = self.stores[SERVICES].in_namespace(namespace)
        rc: Labels | None = None
        workload: Requirements | None = None
        owner = controller_of(pod)
        if owner is not None:
            gv = parse_group_version(owner.api_version or "")
            kind = _CONTROLLERS.get((*gv, owner.kind or "")) if gv is not None else None
            if kind == REPLICATION_CONTROLLERS:
                rc = self.stores[kind].get(namespace, owner.name or "")
            elif kind is not None:
                workload = self.stores[kind].get(namespace, owner.name or "")
        if not services and rc is None and workload is None:
            return _EMPTY
        return default_selector(pod, services, rc, workload)


_EMPTY = objects.LabelSelector()


__all__ = [
    "KINDS",
    "REPLICATION_CONTROLLERS",
    "REPLICA_SETS",
    "SERVICES",
    "STATEFUL_SETS",
    "ControllerSelector",
    "Labels",
    "Requirements",
    "SelectorStore",
    "SpreadSelectors",
    "controller_of",
    "controller_selector",
    "default_selector",
    "flat_labels",
    "pairs",
    "parse_group_version",
]

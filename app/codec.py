"""The request path's decoder and encoder: bytes in, framework inputs; framework results, bytes out.

Why not the pydantic models: a non-cache request carries hundreds of ~15 KB node objects (the
500-node body is 7.3 MB) and materialising them costs more than a Go extender's whole answer
(DESIGN.md section 5). This module decodes with msgspec:

- the top level into ``Pod`` + ``Nodes.items`` as raw byte slices (``msgspec.Raw``), one pass;
- each node's raw bytes into a slim :class:`app.framework.objects.Node` (unknown fields are
  skipped, not built);
- filter survivors are echoed as the very bytes kube-scheduler sent.

Go compatibility (PROTOCOL.md 1.1): bodies produced by kube-scheduler use the exact Go key names
and take the fast path. Any other body (keys in another letter case, unknown or repeated keys)
takes the general path: parsed with orjson, keys folded as Go's decoder would
(:mod:`app.gojson`) at every level of the structs read, then converted. Survivors are then echoed
re-encoded (equal as JSON values, not byte-identical). The pydantic models in
:mod:`app.extender` stay the documented contract; ``tests/unit/test_codec.py`` proves both paths
agree with them on every shared fixture.

Every decode error raises :class:`DecodeError` with a message a person can act on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

import msgspec
import msgspec.inspect as mi
import orjson
import pydantic

from app.extender import models
from app.framework import objects
from app.framework.status import Code, Status
from app.framework.types import NodeInfo, ObjectDecodeError, PodInfo, PodRef, Victims
from app.gojson import fold_index, match_field

T = TypeVar("T", bound=msgspec.Struct)


class DecodeError(ObjectDecodeError):
    """The body is not a well-formed request of the verb's type (HTTP 400)."""


# -- Go key folding for msgspec structs -----------------------------------------------------------


@cache
def _struct_fields(
    struct: type[msgspec.Struct],
) -> tuple[tuple[str, ...], dict[str, str], dict[str, mi.Type]]:
    info = mi.type_info(struct)
    assert isinstance(info, mi.StructType)
    names = tuple(f.encode_name for f in info.fields)
    return names, fold_index(names), {f.encode_name: f.type for f in info.fields}


def _fold(value: Any, t: mi.Type) -> Any:
    if isinstance(t, mi.UnionType):
        for sub in t.types:
            if not isinstance(sub, mi.NoneType):
                value = _fold(value, sub)
        return value
    if isinstance(t, mi.StructType) and isinstance(value, dict):
        names, index, types = _struct_fields(t.cls)
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = match_field(key, names, index)
            if name is not None:
                out[name] = _fold(item, types[name])
        return out
    if isinstance(t, mi.ListType) and isinstance(value, list):
        return [_fold(item, t.item_type) for item in value]
    if isinstance(t, mi.DictType) and isinstance(value, dict):
        return {key: _fold(item, t.value_type) for key, item in value.items()}
    return value


def convert_folded(value: Any, struct: type[T], where: str) -> T:
    """Convert a parsed JSON object to ``struct`` with Go's case-insensitive key matching.

    Raises :class:`DecodeError` prefixed with ``where`` (e.g. ``"Pod"``) on a type mismatch.
    """
    try:
        return msgspec.convert(_fold(value, mi.type_info(struct)), struct)
    except msgspec.ValidationError as exc:
        raise DecodeError(f"{where}: {exc}") from exc


# -- ExtenderArgs (filter, prioritize) ------------------------------------------------------------


class _RawNodeList(msgspec.Struct, forbid_unknown_fields=True):
    metadata: msgspec.Raw = msgspec.Raw(b"{}")
    items: list[msgspec.Raw] | None = None


class _RawArgs(msgspec.Struct, rename="pascal", forbid_unknown_fields=True):
    # exactly the keys json.Marshal(ExtenderArgs) writes; anything else takes the general path
    pod: msgspec.Raw
    nodes: _RawNodeList | None
    node_names: list[str] | None


class _ViewNodeList(msgspec.Struct, forbid_unknown_fields=True):
    metadata: msgspec.Raw = msgspec.Raw(b"{}")
    items: list[objects.Node] | None = None


class _ViewArgs(msgspec.Struct, rename="pascal", forbid_unknown_fields=True):
    pod: msgspec.Raw
    nodes: _ViewNodeList | None
    node_names: list[str] | None


_RAW_ARGS = msgspec.json.Decoder(_RawArgs)
_VIEW_ARGS = msgspec.json.Decoder(_ViewArgs)
_POD = msgspec.json.Decoder(objects.Pod | None)
_NODE = msgspec.json.Decoder(objects.Node)
_EMPTY_OBJECT = b"{}"
_NULL = b"null"


class ExtenderArgsView:
    """A decoded ``ExtenderArgs``.

    ``nodes`` are the candidate nodes in request order (for a ``NodeNames`` request, name-only
    NodeInfos built on first use: the cluster state usually resolves ``names`` instead).
    ``node_raws`` (non-cache mode) holds each node's JSON bytes for echoing, and ``list_meta`` the
    ``Nodes.metadata`` bytes; ``node_names`` is true when the request carried ``NodeNames`` (cache
    mode), which the answer then carries too; ``names`` is that list when ``Nodes`` was null.
    """

    __slots__ = ("_nodes", "list_meta", "names", "node_names", "node_raws", "pod")

    def __init__(
        self,
        pod: PodInfo,
        nodes: list[NodeInfo] | None,
        node_raws: list[bytes | msgspec.Raw] | None,
        list_meta: bytes | msgspec.Raw,
        node_names: bool,
        names: list[str] | None = None,
    ) -> None:
        self.pod = pod
        self._nodes = nodes
        self.node_raws = node_raws
        self.list_meta = list_meta
        self.node_names = node_names
        self.names = names

    @property
    def nodes(self) -> list[NodeInfo]:
        """The candidate nodes, in request order."""
        if self._nodes is None:
            self._nodes = [NodeInfo(n) for n in self.names or ()]
        return self._nodes

    def node_name_list(self) -> list[str]:
        """The candidate nodes' names, in request order."""
        if self.names is not None:
            return self.names
        return [n.name for n in self.nodes]


def decode_extender_args(body: bytes, keep_raw: bool = True) -> ExtenderArgsView:
    """Decode a filter/prioritize body; raises :class:`DecodeError`.

    ``keep_raw=True`` (filter) keeps each node's bytes for the echo and decodes a node only when a
    plugin first reads it; ``keep_raw=False`` (prioritize) decodes every node in the same pass.
    ``Pod`` must be an object; at least one of ``Nodes`` and ``NodeNames`` must be non-null (when
    both are, as in kube-scheduler's test fixtures, they must list the same nodes).
    """
    try:
        raw = (_RAW_ARGS if keep_raw else _VIEW_ARGS).decode(body)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return _decode_extender_args_general(body)
    try:
        pod_view = _POD.decode(raw.pod)
    except msgspec.ValidationError as exc:
        raise DecodeError(f"Pod: {exc}") from exc
    if pod_view is None:
        raise DecodeError("Pod is null: ExtenderArgs must carry the pod being scheduled")
    nodes: list[NodeInfo] | None = None
    raws: list[bytes | msgspec.Raw] | None = None
    meta: bytes | msgspec.Raw = _EMPTY_OBJECT
    if raw.nodes is not None:
        if bytes(raw.nodes.metadata) != _NULL:
            meta = raw.nodes.metadata
        if isinstance(raw, _RawArgs):
            items = raw.nodes.items or []
            raws = list(items)
            nodes = [NodeInfo.lazy((i, item), _load_node) for i, item in enumerate(items)]
        else:
            nodes = []
            for view in raw.nodes.items or []:
                name = view.metadata.name if view.metadata is not None else None
                if not name:  # not what json.Marshal(v1.Node) writes: decode the Go way
                    return _decode_extender_args_general(body)
                nodes.append(NodeInfo(name, view))
    return _assemble(PodInfo(pod_view), nodes, raws, meta, raw.node_names)


def _load_node(indexed: tuple[int, msgspec.Raw]) -> objects.Node:
    """Decode one node of ``Nodes.items`` (the lazy loader of :class:`NodeInfo`)."""
    i, item = indexed
    try:
        view = _NODE.decode(item)
    except msgspec.ValidationError as exc:
        raise DecodeError(f"Nodes.items[{i}]: {exc}") from exc
    if view.metadata is None or not view.metadata.name:
        # not what json.Marshal(v1.Node) writes: fold keys, as Go's decoder would
        view = convert_folded(orjson.loads(bytes(item)), objects.Node, f"Nodes.items[{i}]")
        if view.metadata is None or not view.metadata.name:
            raise DecodeError(f"Nodes.items[{i}] has no metadata.name")
    return view


def _decode_extender_args_general(body: bytes) -> ExtenderArgsView:
    doc = _parse_object(body, "ExtenderArgs")
    try:
        args = models.ExtenderArgs.model_validate(doc)
    except pydantic.ValidationError as exc:
        raise DecodeError(format_validation_error(exc, "ExtenderArgs")) from exc
    if args.pod is None:
        raise DecodeError("Pod is null: ExtenderArgs must carry the pod being scheduled")
    pod = PodInfo(convert_folded(args.pod, objects.Pod, "Pod"))
    nodes: list[NodeInfo] | None = None
    raws: list[bytes | msgspec.Raw] | None = None
    meta: bytes | msgspec.Raw = _EMPTY_OBJECT
    if args.nodes is not None:
        meta = orjson.dumps(args.nodes.metadata or {})
        raws, nodes = [], []
        for i, item in enumerate(args.nodes.items or []):
            view = convert_folded(item, objects.Node, f"Nodes.items[{i}]")
            name = view.metadata.name if view.metadata is not None else None
            if not name:
                raise DecodeError(f"Nodes.items[{i}] has no metadata.name")
            raws.append(orjson.dumps(item))
            nodes.append(NodeInfo(name, view))
    return _assemble(pod, nodes, raws, meta, args.node_names)


def _assemble(
    pod: PodInfo,
    nodes: list[NodeInfo] | None,
    raws: list[bytes | msgspec.Raw] | None,
    meta: bytes | msgspec.Raw,
    names: list[str] | None,
) -> ExtenderArgsView:
    if nodes is None and names is None:
        raise DecodeError(
            "Nodes and NodeNames are both null: kube-scheduler sends Nodes (nodeCacheCapable: false) "
            "or NodeNames (nodeCacheCapable: true)"
        )
    if nodes is None:
        assert names is not None
        return ExtenderArgsView(pod, None, None, meta, True, names)
    if names is not None and names != [n.name for n in nodes]:
        raise DecodeError("NodeNames and Nodes.items name different nodes; send one of them")
    return ExtenderArgsView(pod, nodes, raws, meta, names is not None)


def _parse_object(body: bytes, kind: str) -> dict[str, Any]:
    if not body.strip():
        raise DecodeError(f"empty request body: expected a JSON object ({kind})")
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"request body is not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise DecodeError(f"request body must be a JSON object ({kind}), not {_json_type(doc)}")
    return doc


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(type(value), "a number")


def format_validation_error(exc: pydantic.ValidationError, kind: str) -> str:
    """One line per pydantic error, as ``Field.path: message``."""
    parts = []
    for err in exc.errors(include_url=False):
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
        parts.append(f"{path or kind}: {err['msg']}")
    return "; ".join(parts)


def encode_filter_result(args: ExtenderArgsView, statuses: Sequence[Status]) -> bytes:
    """``ExtenderFilterResult`` for a decided filter: survivors echoed in their received form
    (``Nodes`` with the original node bytes, and/or ``NodeNames``), every rejected node in
    ``FailedNodes`` (``Unschedulable``) or ``FailedAndUnresolvableNodes`` with its reason."""
    passed: list[int] = []
    failed: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    names = args.node_name_list()
    for i, status in enumerate(statuses):
        code = status.code
        if code is Code.SUCCESS:
            passed.append(i)
        elif code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            unresolvable[names[i]] = status.message
        else:
            failed[names[i]] = status.message
    out = [b'{"Nodes":']
    if args.node_raws is not None:
        raws = args.node_raws
        out += [
            b'{"metadata":',
            bytes(args.list_meta),
            b',"items":[',
            b",".join([raws[i] for i in passed]),
            b"]}",
        ]
    else:
        out.append(_NULL)
    out.append(b',"NodeNames":')
    out.append(orjson.dumps([names[i] for i in passed]) if args.node_names else _NULL)
    out += [
        b',"FailedNodes":',
        orjson.dumps(failed),
        b',"FailedAndUnresolvableNodes":',
        orjson.dumps(unresolvable),
        b',"Error":""}',
    ]
    return b"".join(out)


def encode_filter_error(message: str) -> bytes:
    """``ExtenderFilterResult`` carrying only ``Error`` (kube-scheduler treats it as a failed call)."""
    return orjson.dumps(
        {
            "Nodes": None,
            "NodeNames": None,
            "FailedNodes": None,
            "FailedAndUnresolvableNodes": None,
            "Error": message,
        }
    )


def encode_host_priority_list(names: Sequence[str], scores: Sequence[int]) -> bytes:
    """``HostPriorityList``: a bare array, one ``{"Host","Score"}`` per node in request order."""
    return orjson.dumps([{"Host": n, "Score": s} for n, s in zip(names, scores, strict=True)])


def encode_error_object(message: str, **fields: Any) -> bytes:
    """An error answer for verbs whose result type has no ``Error`` field (prioritize, preempt).

    kube-scheduler never reads the body of a non-200 answer; ``Error`` is for people and logs.
    """
    return orjson.dumps({**fields, "Error": message})


# -- ExtenderPreemptionArgs (preempt) --------------------------------------------------------------


@dataclass
class PreemptionArgsView:
    """A decoded ``ExtenderPreemptionArgs``: the preemptor and node -> proposed victims."""

    pod: PodInfo
    candidates: dict[str, Victims]


def decode_preemption_args(body: bytes) -> PreemptionArgsView:
    """Decode a preempt body (either victims map; full pods preferred when both are set).

    Raises :class:`DecodeError`.
    """
    doc = _parse_object(body, "ExtenderPreemptionArgs")
    try:
        args = models.ExtenderPreemptionArgs.model_validate(doc)
    except pydantic.ValidationError as exc:
        raise DecodeError(format_validation_error(exc, "ExtenderPreemptionArgs")) from exc
    if args.pod is None:
        raise DecodeError("Pod is null: ExtenderPreemptionArgs must carry the preemptor pod")
    pod = PodInfo(convert_folded(args.pod, objects.Pod, "Pod"))
    candidates: dict[str, Victims] = {}
    if args.node_name_to_victims is not None:
        for node, victims in args.node_name_to_victims.items():
            pods = [
                PodInfo(convert_folded(p, objects.Pod, f"NodeNameToVictims[{node}].Pods[{j}]"))
                for j, p in enumerate((victims.pods if victims else None) or [])
            ]
            for j, p in enumerate(pods):
                if not p.uid:
                    raise DecodeError(f"NodeNameToVictims[{node}].Pods[{j}] has no metadata.uid")
            candidates[node] = Victims(pods, victims.num_pdb_violations if victims else 0)
    elif args.node_name_to_meta_victims is not None:
        for node, meta in args.node_name_to_meta_victims.items():
            uid_pods = []
            for j, meta_pod in enumerate((meta.pods if meta else None) or []):
                if not meta_pod.uid:
                    raise DecodeError(f"NodeNameToMetaVictims[{node}].Pods[{j}].UID is empty")
                uid_pods.append(PodInfo(None, meta_pod.uid))
            candidates[node] = Victims(uid_pods, meta.num_pdb_violations if meta else 0)
    return PreemptionArgsView(pod, candidates)


def encode_preemption_result(candidates: dict[str, Victims]) -> bytes:
    """``ExtenderPreemptionResult``: always ``NodeNameToMetaVictims`` (UIDs), never a null value."""
    return orjson.dumps(
        {
            "NodeNameToMetaVictims": {
                node: {"Pods": [{"UID": p.uid} for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
                for node, v in candidates.items()
            }
        }
    )


# -- ExtenderBindingArgs (bind) --------------------------------------------------------------------


def decode_binding_args(body: bytes) -> tuple[PodRef, str]:
    """Decode a bind body into the pod reference and the node; raises :class:`DecodeError` when a
    field is missing (binding without the UID could bind a recreated pod of the same name)."""
    doc = _parse_object(body, "ExtenderBindingArgs")
    try:
        args = models.ExtenderBindingArgs.model_validate(doc)
    except pydantic.ValidationError as exc:
        raise DecodeError(format_validation_error(exc, "ExtenderBindingArgs")) from exc
    missing = [
        key
        for key, value in (
            ("PodName", args.pod_name),
            ("PodNamespace", args.pod_namespace),
            ("PodUID", args.pod_uid),
            ("Node", args.node),
        )
        if not value
    ]
    if missing:
        raise DecodeError(f"ExtenderBindingArgs: {', '.join(missing)} must be set")
    return PodRef(args.pod_namespace, args.pod_name, args.pod_uid), args.node


def encode_binding_result(error: str = "") -> bytes:
    """``ExtenderBindingResult``: ``{"Error": ""}`` on success."""
    return orjson.dumps({"Error": error})

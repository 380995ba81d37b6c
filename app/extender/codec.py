"""The wire codec: request bytes in, framework inputs; framework results, answer bytes out.

Why not the pydantic models: a non-cache request carries hundreds of ~15 KB node objects (the
500-node body is 7.3 MB) and materialising them costs more than a Go extender's whole answer
(``bench/bench_memory.py``). This module decodes with msgspec:

- the top level into ``Pod`` + ``Nodes.items`` as raw byte slices (``msgspec.Raw``), one pass;
- each node's raw bytes into a slim :class:`app.framework.objects.Node` (unknown fields are
  skipped in C, never built), and every quantity plugins read (a node's allocatable, the pod's
  and the victims' requests) parsed, before any plugin or decision record sees the request: a
  node, pod or quantity that does not decode is the request's 400, never a plugin's failure;
- filter survivors are echoed as the very bytes kube-scheduler sent, and the answer is handed to
  the HTTP layer as a list of byte chunks (:data:`Chunks`), never joined into one large copy.

Go compatibility (Go's ``encoding/json``, which kube-scheduler uses): bodies produced by
kube-scheduler use the exact Go key names and take the fast path. Any other body (keys in another
letter case, unknown or repeated keys) takes the general path, :func:`go_decode`: each struct level
is decoded as ``dict[str, Raw]`` (zero-copy), its keys folded as Go's decoder would
(:mod:`app.extender.gojson`), and only the fields of the target type are descended into. Work is
linear in the body; nothing the service does not read is ever built as Python objects. The pydantic
models in :mod:`app.extender.models` stay the documented contract; ``tests/unit/test_codec.py``
proves both paths agree with them on every shared fixture.

Bounds (:class:`Limits`, from ``server.limits``): every count the service materialises is capped
(nodes per request, victims per node and per request), an oversized body of tiny values is
refused before it is decoded (:func:`check_body`), bytes that are not UTF-8 are refused, and
nesting is bounded by the decoders (a value the service reads has a fixed shape; a value it skips
is skipped by msgspec in C, which refuses nesting past CPython's recursion limit). Every refusal
raises :class:`DecodeError` with a message naming the field and the limit (HTTP 400).
"""

from __future__ import annotations

import codecs
import itertools
import operator
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Generic, TypeVar, cast

import msgspec
import orjson

from app.extender.gojson import fold_index, match_field
from app.framework import objects
from app.framework.status import SUCCESS, Code, Status
from app.framework.types import NodeInfo, ObjectDecodeError, PodInfo, PodRef, Victims


class DecodeError(ObjectDecodeError):
    """The body is not a well-formed request of the verb's type, or exceeds a limit (HTTP 400)."""


# -- limits ---------------------------------------------------------------------------------------

#: Bodies at least this large are checked for floods of tiny values before decoding (bytes).
#: A smaller body builds at most ~80 bytes of objects per value, so under 170 MB in the worst
#: case, inside the pod's memory limit; larger bodies pay a scan (~0.4 ms per MB).
DENSE_CHECK_BYTES = 4 << 20
#: The fewest bytes per comma a large body may average once its commas outnumber ``maxNodes``:
#: kube-scheduler's bodies average 40+ (a 15 KB node has ~350 commas; a node name or a victim's
#: ``{"UID":"…"}`` is 40+ bytes). Keeps the per-value objects built at most ~2.5x the body.
MIN_BYTES_PER_VALUE = 24


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps on what one request may make the service build (``server.limits``).

    Defaults are orders of magnitude above what kube-scheduler sends: it sends at most the
    cluster's nodes (the largest supported clusters have 5,000 to 65,000), a node holds at most
    ``maxPods`` pods (110 by default), and preemption proposes at most
    ``max(100, 10 % of nodes)`` candidate nodes (``minCandidateNodesAbsolute``/``Percentage``).

    - ``max_nodes``: entries of ``Nodes.items``, ``NodeNames``, or the preemption victims map;
    - ``max_victims_per_node``: victims proposed on one node;
    - ``max_victims``: victims in one preempt request, all nodes together.
    """

    max_nodes: int = 100_000
    max_victims_per_node: int = 10_000
    max_victims: int = 200_000


DEFAULT_LIMITS = Limits()


class Body(bytearray):
    """A request body as the HTTP layer read it, with ``commas`` counted chunk by chunk while it
    arrived when it is :data:`DENSE_CHECK_BYTES` or larger (so :func:`check_body` need not scan
    it again on the verb's critical path); ``None`` when not counted."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.commas: int | None = None


def check_body(body: bytes | bytearray, limits: Limits) -> None:
    """Refuse, before any decoding, a body that is not UTF-8 or that floods tiny values.

    A JSON value in an array or object is followed by a comma, so ``commas + 1`` bounds how many
    the decoder could build; once that exceeds ``limits.max_nodes`` in a body of at least
    :data:`DENSE_CHECK_BYTES`, the body must average :data:`MIN_BYTES_PER_VALUE` bytes per comma.
    Go's ``json.Marshal`` writes valid UTF-8 only (it replaces invalid bytes with U+FFFD), so
    invalid UTF-8 anywhere, including in fields the service echoes without reading, is refused:
    it would otherwise be echoed back in a filter answer.

    Raises :class:`DecodeError`.
    """
    size = len(body)
    if size >= DENSE_CHECK_BYTES:
        counted = body.commas if isinstance(body, Body) else None
        commas = counted if counted is not None else body.count(b",")
        if commas > limits.max_nodes and commas * MIN_BYTES_PER_VALUE > size:
            raise DecodeError(
                f"request body holds up to {commas + 1} JSON values in {size} bytes (under "
                f"{MIN_BYTES_PER_VALUE} bytes each): more than server.limits.maxNodes ({limits.max_nodes}) "
                "allows; kube-scheduler sends whole node objects, names or victims"
            )
    if not body.isascii():
        _check_utf8(body)


def _check_utf8(body: bytes | bytearray) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    view = memoryview(body)
    step = 1 << 20
    for start in range(0, len(view), step):
        try:
            decoder.decode(view[start : start + step], final=start + step >= len(view))
        except UnicodeDecodeError as exc:
            raise DecodeError(f"request body is not valid UTF-8 (byte offset {start + exc.start})") from None


def _nesting_error() -> DecodeError:
    return DecodeError(
        "request body nests JSON values deeper than the decoder allows (about 900 levels; "
        "kube-scheduler's objects nest under 30)"
    )


def _where(exc: msgspec.ValidationError, where: str) -> DecodeError:
    """A msgspec validation error, its ``$`` path rooted at ``where`` (e.g. ``Nodes.items[3]``)."""
    text = str(exc)
    if "`$" in text:
        text = text.replace("`$", f"`{where}", 1)
        return DecodeError(text)
    return DecodeError(f"{where}: {text}")


@cache
def _decoder(t: Any) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(t)


def decode_as(data: bytes | bytearray | msgspec.Raw, t: Any, where: str) -> Any:
    """``data`` decoded as type ``t`` with exact keys (msgspec); raises :class:`DecodeError`
    prefixed with ``where`` for a type mismatch, malformed JSON or excessive nesting."""
    try:
        return _decoder(t).decode(data)
    except msgspec.ValidationError as exc:
        raise _where(exc, where) from None
    except msgspec.DecodeError as exc:
        raise DecodeError(f"{where}: not valid JSON: {exc}") from None
    except RecursionError:
        raise _nesting_error() from None


# -- Go's decoder: key folding at every struct level ------------------------------------------------

_RAW_OBJECT = dict[str, msgspec.Raw] | None
_RAW_ARRAY = list[msgspec.Raw] | None


@dataclass(frozen=True, slots=True)
class _Field:
    attr: str  # the Python attribute
    plan: _Plan


@dataclass(frozen=True, slots=True)
class _Plan:
    """How :func:`go_decode` descends into one type: ``kind`` is ``struct`` (fold keys, descend
    into ``fields``), ``list``/``dict`` of a struct (descend into each ``item``), ``raw`` (keep the
    bytes) or ``leaf`` (decode ``leaf`` in one msgspec call: its keys are data, not fields)."""

    kind: str
    optional: bool = False
    cls: Any = None
    names: tuple[str, ...] = ()
    index: dict[str, str] | None = None
    fields: dict[str, _Field] | None = None
    item: _Plan | None = None
    leaf: Any = None


def _has_struct(t: Any) -> bool:
    if isinstance(t, type) and issubclass(t, msgspec.Struct):
        return True
    return any(_has_struct(a) for a in typing.get_args(t))


@cache
def plan_for(t: Any) -> _Plan:
    """The descent plan of type ``t``, computed once per type (Go's field cache, in effect)."""
    optional = False
    args = typing.get_args(t)
    if typing.get_origin(t) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            t, optional = rest[0], True
    if t is msgspec.Raw:
        return _Plan("raw", optional)
    if isinstance(t, type) and issubclass(t, msgspec.Struct):
        fields = msgspec.structs.fields(t)
        names = tuple(f.encode_name for f in fields)
        return _Plan(
            "struct",
            optional,
            cls=t,
            names=names,
            index=fold_index(names),
            fields={f.encode_name: _Field(f.name, plan_for(f.type)) for f in fields},
        )
    origin = typing.get_origin(t)
    if origin is list and _has_struct(t):
        return _Plan("list", optional, item=plan_for(typing.get_args(t)[0]))
    if origin is dict and _has_struct(t):
        return _Plan("dict", optional, item=plan_for(typing.get_args(t)[1]))
    return _Plan("leaf", optional, leaf=(t | None) if optional else t)


def go_decode(data: bytes | bytearray | msgspec.Raw, t: Any, where: str) -> Any:
    """Decode ``data`` as type ``t`` (a msgspec Struct, possibly nested) the way Go's
    ``encoding/json`` fills a struct: keys matched case-insensitively (exact match preferred, the
    last of several matching keys wins), unknown keys ignored, ``null`` leaving the zero value.

    Linear in the bytes: each struct level is one ``dict[str, Raw]`` decode (zero-copy), and only
    the target type's fields are descended into. Raises :class:`DecodeError` naming the field.
    """
    return _go(data, plan_for(t), where)


def _go(data: Any, plan: _Plan, where: str) -> Any:
    kind = plan.kind
    if kind == "leaf":
        return decode_as(data, plan.leaf, where)
    if kind == "raw":
        return data
    if kind == "struct":
        obj = decode_as(data, _RAW_OBJECT, where)
        if obj is None:
            return None if plan.optional else plan.cls()
        return _fill(obj, plan, where)
    assert plan.item is not None
    if kind == "list":
        items = decode_as(data, _RAW_ARRAY, where)
        if items is None:
            return None
        return [_go(item, plan.item, f"{where}[{i}]") for i, item in enumerate(items)]
    entries = decode_as(data, _RAW_OBJECT, where)
    if entries is None:
        return None
    return {key: _go(value, plan.item, f"{where}[{key}]") for key, value in entries.items()}


def _fill(obj: dict[str, msgspec.Raw], plan: _Plan, where: str) -> Any:
    """The struct of ``plan`` from an object's raw values, its keys folded as Go's decoder would."""
    assert plan.fields is not None and plan.index is not None
    kwargs: dict[str, Any] = {}
    for key, value in obj.items():
        name = match_field(key, plan.names, plan.index)
        if name is not None:
            f = plan.fields[name]
            kwargs[f.attr] = _go(value, f.plan, f"{where}.{name}")
    return plan.cls(**kwargs)


def top_object(body: bytes | bytearray, kind: str) -> dict[str, msgspec.Raw]:
    """The body's top-level JSON object as ``key -> raw value`` (zero-copy); raises
    :class:`DecodeError` for an empty body, malformed JSON or a value that is not an object."""
    if not body.strip():
        raise DecodeError(f"empty request body: expected a JSON object ({kind})")
    try:
        doc: dict[str, msgspec.Raw] = _decoder(dict[str, msgspec.Raw]).decode(body)
    except msgspec.ValidationError as exc:
        raise DecodeError(f"request body must be a JSON object ({kind}): {exc}") from None
    except msgspec.DecodeError as exc:
        raise DecodeError(f"request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise _nesting_error() from None
    return doc


def _cap(count: int, limit: int, what: str, setting: str) -> None:
    if count > limit:
        raise DecodeError(f"{what} has {count} entries, more than server.limits.{setting} ({limit})")


# -- ExtenderArgs (filter, prioritize) ------------------------------------------------------------


_Item = TypeVar("_Item")


class _NodeList(msgspec.Struct, Generic[_Item], forbid_unknown_fields=True):
    metadata: msgspec.Raw = msgspec.Raw(b"{}")
    items: list[_Item] | None = None


class _Args(msgspec.Struct, Generic[_Item], rename="pascal", forbid_unknown_fields=True):
    """Exactly the keys ``json.Marshal(ExtenderArgs)`` writes (anything else takes the general
    path), the nodes as ``_Item``: raw bytes (filter: echoed as received), :class:`objects.RequestNode`
    (prioritize), or :class:`objects.Node` (a profile whose plugins read ``status.images``)."""

    pod: msgspec.Raw
    nodes: _NodeList[_Item] | None
    #: ``list[str] | None``, decoded through the service's :class:`RequestMemo` (the same bytes as a recent request's:
    #: that request's list, whose strings' hashes are computed already)
    node_names: msgspec.Raw


class _GoNodeList(msgspec.Struct):
    metadata: msgspec.Raw | None = None
    items: list[msgspec.Raw] | None = None


class _GoArgs(msgspec.Struct, rename="pascal"):
    """``ExtenderArgs`` for :func:`go_decode`: the pod and the nodes stay raw."""

    pod: msgspec.Raw | None = None
    nodes: _GoNodeList | None = None
    node_names: list[str] | None = None


_RAW_ARGS = msgspec.json.Decoder(_Args[msgspec.Raw])
_VIEW_ARGS = msgspec.json.Decoder(_Args[objects.RequestNode])
_IMAGES_ARGS = msgspec.json.Decoder(_Args[objects.Node])
_EMPTY_OBJECT = b"{}"
_NULL = b"null"


class ExtenderArgsView:
    """A decoded ``ExtenderArgs``.

    ``nodes`` are the candidate nodes in request order (for a ``NodeNames`` request, name-only
    NodeInfos built on first use: the cluster state usually resolves ``names`` instead).
    ``node_raws`` (non-cache mode) holds each node's JSON bytes for echoing, and ``list_meta`` the
    ``Nodes.metadata`` bytes; ``node_names`` is true when the request carried ``NodeNames`` (cache
    mode), which the answer then carries too; ``names`` is that list when ``Nodes`` was null;
    ``memo``: the :class:`RequestMemo` it was decoded with (``None``: none).
    """

    __slots__ = ("_nodes", "list_meta", "memo", "names", "node_names", "node_raws", "pod")

    def __init__(
        self,
        pod: PodInfo,
        nodes: list[NodeInfo] | None,
        node_raws: list[msgspec.Raw] | None,
        list_meta: bytes | msgspec.Raw,
        node_names: bool,
        names: list[str] | None = None,
        memo: RequestMemo | None = None,
    ) -> None:
        self.pod = pod
        self.memo = memo
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
        """Every candidate's name in request order (``NodeNames`` as sent, or the decoded nodes'
        names): strings of their own, so a decision record keeping them (the bound method is
        :class:`~app.observe.decisions.Decision`'s deferred ``names``) does not keep the request
        body alive."""
        if self.names is not None:
            return self.names
        return [n.name for n in self.nodes]

    def node_name(self, i: int) -> str:
        """The name of candidate ``i``."""
        if self.names is not None:
            return self.names[i]
        return self.nodes[i].name

    def __len__(self) -> int:
        return len(self.names) if self.names is not None else len(self.nodes)


def decode_extender_args(
    body: bytes | bytearray,
    limits: Limits = DEFAULT_LIMITS,
    *,
    keep_raw: bool = True,
    images: bool = False,
    memo: RequestMemo | None = None,
) -> ExtenderArgsView:
    """Decode a filter/prioritize body; raises :class:`DecodeError`.

    ``keep_raw=True`` (filter) keeps each node's bytes for the echo and decodes each node from them
    (:func:`_request_nodes`); ``keep_raw=False`` (prioritize) decodes every node in the same pass.
    ``images``: nodes keep ``status.images`` (:class:`objects.Node`), for a profile whose plugins
    read it (:attr:`~app.framework.handle.ClusterNeeds.images`: ImageLocality); else they are
    decoded without it (:class:`objects.RequestNode`: a node's 40-odd image entries cost more than
    the rest of it, and kube-scheduler scores ImageLocality itself before it calls an extender).
    ``Pod`` must be an object; at least one of ``Nodes`` and ``NodeNames`` must be non-null (when
    both are, as in kube-scheduler's test fixtures, they must list the same nodes). At most
    ``limits.max_nodes`` nodes or names. ``memo``: the service's :class:`RequestMemo` (a
    ``NodeNames`` list and a pod sent again are not decoded again); ``None``: nothing kept.
    """
    check_body(body, limits)
    try:
        raw = (_RAW_ARGS if keep_raw else _IMAGES_ARGS if images else _VIEW_ARGS).decode(body)
        names = memo.names.get(raw.node_names) if memo is not None else _NAMES.decode(raw.node_names)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return _decode_extender_args_general(body, limits, images)
    except RecursionError:
        raise _nesting_error() from None
    pod = memo.pod.get(raw.pod) if memo is not None else _decode_pod(raw.pod)
    nodes: list[NodeInfo] | None = None
    raws: list[msgspec.Raw] | None = None
    meta: bytes | msgspec.Raw = _EMPTY_OBJECT
    if raw.nodes is not None:
        if bytes(raw.nodes.metadata) != _NULL:
            meta = raw.nodes.metadata
        if keep_raw:
            raws, nodes = _request_nodes(cast("list[msgspec.Raw] | None", raw.nodes.items), limits, images)
        else:
            views = cast("list[objects.Node | objects.RequestNode]", raw.nodes.items or [])
            _cap(len(views), limits.max_nodes, "Nodes.items", "maxNodes")
            nodes = []
            for view in views:
                name = view.metadata.name if view.metadata is not None else None
                if not name:  # not what json.Marshal(v1.Node) writes: decode the Go way
                    return _decode_extender_args_general(body, limits, images)
                nodes.append(NodeInfo(name, cast(objects.Node, view)))  # without status.images unless images
    return _assemble(pod, nodes, raws, meta, names, limits, memo)


_NAMES = msgspec.json.Decoder(list[str] | None)


class _NameList:
    """One ``NodeNames`` list kept by :class:`_NameLists`: its bytes, the decoded list, and what
    the answers derive from it: its JSON (filter's answer when every node passed, built on first
    use) and the last ``HostPriorityList`` of these names with its scores (prioritize's: the
    in-tree scores of a node change with the node, not with the pod)."""

    __slots__ = ("_json", "answer", "data", "names")

    def __init__(self, data: bytes, names: list[str]) -> None:
        self.data = data
        self.names = names
        self._json: bytes | None = None
        #: the scores and the bytes of :func:`encode_host_priority_list`'s last answer for the
        #: names (replaced whole)
        self.answer: tuple[list[int], bytes] | None = None

    def json(self) -> bytes:
        """``orjson.dumps(names)``."""
        out = self._json
        if out is None:
            out = self._json = orjson.dumps(self.names)
        return out


class _NameLists:
    """The ``NodeNames`` of the last few requests (at least :data:`NAME_LIST_MIN` names), by
    their bytes: kube-scheduler sends every pod's filter the same candidate names, and prioritize
    the names that passed (often all of them), so such a list is decoded once and its strings
    (whose hashes Python keeps) are looked up in the cluster state again without hashing them;
    the answers' encodings derived from it are kept with it (:class:`_NameList`). The lists are
    read-only to their users (the decision records keep them), as a decoded request's are."""

    __slots__ = ("kept",)

    def __init__(self) -> None:
        self.kept: tuple[_NameList, ...] = ()  # replaced whole: a thread reads one tuple

    def get(self, raw: msgspec.Raw) -> list[str] | None:
        """The list of ``raw`` (``null``: ``None``); raises msgspec's errors for anything else."""
        data = bytes(raw)
        kept = self.kept
        for entry in kept:
            if entry.data == data:
                return entry.names
        names: list[str] | None = _NAMES.decode(data)
        if names is not None and len(names) >= NAME_LIST_MIN:
            self.kept = (_NameList(data, names), *kept[: NAME_LISTS - 1])
        return names

    def entry(self, names: Sequence[str]) -> _NameList | None:
        """The kept list that is ``names`` itself, or ``None``."""
        for entry in self.kept:
            if entry.names is names:
                return entry
        return None


def kept_json(names: Sequence[str] | None, memo: RequestMemo | None) -> bytes | None:
    """``orjson.dumps(names)`` when ``names`` is a ``NodeNames`` list ``memo`` keeps (a recent
    request's, decoded from the same bytes: :class:`_NameLists`), else ``None``."""
    kept = memo.names.entry(names) if names is not None and memo is not None else None
    return kept.json() if kept is not None else None


#: Lists of fewer names are not kept by :class:`_NameLists` (decoding them costs microseconds).
NAME_LIST_MIN = 64
#: How many recent ``NodeNames`` lists :class:`_NameLists` keeps.
NAME_LISTS = 4


class _LastPod:
    """The pod of the last filter or prioritize body, by its bytes: kube-scheduler sends
    prioritize the very bytes of the pod it sent filter just before (and the same again when it
    retries the pod), so that pod is decoded, its requests parsed and checked once. A
    :class:`PodInfo` is read-only to its users (plugins, decisions, the requeuer) and its lazily
    derived values are computed before it is kept, so two requests may share it."""

    __slots__ = ("kept",)

    def __init__(self) -> None:
        self.kept: tuple[bytes, PodInfo] | None = None  # replaced whole: a thread reads one pair

    def get(self, raw: msgspec.Raw) -> PodInfo:
        """The pod of ``raw`` (decoded, or the last one when the bytes are the same); raises
        :class:`DecodeError` for a null or malformed pod."""
        data = bytes(raw)
        kept = self.kept
        if kept is not None and kept[0] == data:
            return kept[1]
        info = _decode_pod(raw)
        self.kept = (data, info)
        return info


def _decode_pod(raw: msgspec.Raw) -> PodInfo:
    """The checked :class:`PodInfo` of an ``ExtenderArgs.Pod``; raises :class:`DecodeError` for a
    null or malformed pod."""
    pod_view = decode_as(raw, objects.Pod | None, "Pod")
    if pod_view is None:
        raise DecodeError("Pod is null: ExtenderArgs must carry the pod being scheduled")
    info = PodInfo(pod_view)
    _checked(info, "Pod")
    return info


class RequestMemo:
    """What one service's codec keeps between requests, by their bytes: the ``NodeNames`` lists
    of recent bodies (:class:`_NameLists`, with the answers derived from them) and the pod of the
    last filter or prioritize body (:class:`_LastPod`). One per
    :class:`~app.api.service.ExtenderService`, passed to :func:`decode_extender_args`; nothing is
    kept at module level, so two services (two tests, a replay beside a server) share nothing."""

    __slots__ = ("names", "pod")

    def __init__(self) -> None:
        self.names = _NameLists()
        self.pod = _LastPod()


def _request_nodes(
    items: list[msgspec.Raw] | None, limits: Limits, images: bool = False
) -> tuple[list[msgspec.Raw], list[NodeInfo]]:
    """``Nodes.items`` (at most ``limits.max_nodes``) and a NodeInfo per item, each decoded now
    (with ``status.images`` when ``images``): a node that does not decode is the request's fault,
    refused before any plugin or decision record reads it (:class:`DecodeError`)."""
    raws = items or []
    _cap(len(raws), limits.max_nodes, "Nodes.items", "maxNodes")
    nodes = []
    for i, item in enumerate(raws):
        node = _load_node(i, item, images)
        nodes.append(NodeInfo(node.metadata.name or "" if node.metadata is not None else "", node))
    return raws, nodes


def _load_node(i: int, item: msgspec.Raw, images: bool = False) -> objects.Node:
    """Decode node ``i`` of ``Nodes.items`` as :class:`objects.Node` with ``images``, else as
    :class:`objects.RequestNode` (no ``status.images``), which plugins read as a Node."""
    where = f"Nodes.items[{i}]"
    kind: type[objects.Node | objects.RequestNode] = objects.Node if images else objects.RequestNode
    view = decode_as(item, kind, where)
    if view.metadata is None or not view.metadata.name:
        # not what json.Marshal(v1.Node) writes: fold keys, as Go's decoder would
        view = go_decode(item, kind, where)
        if view.metadata is None or not view.metadata.name:
            raise DecodeError(f"{where} has no metadata.name")
    return cast(objects.Node, view)  # the same fields, status.images excepted unless images


def _decode_extender_args_general(
    body: bytes | bytearray, limits: Limits = DEFAULT_LIMITS, images: bool = False
) -> ExtenderArgsView:
    args: _GoArgs = _go_top(body, _GoArgs, "ExtenderArgs")
    if args.pod is None or bytes(args.pod) == _NULL:
        raise DecodeError("Pod is null: ExtenderArgs must carry the pod being scheduled")
    pod = go_decode(args.pod, objects.Pod, "Pod")
    nodes: list[NodeInfo] | None = None
    raws: list[msgspec.Raw] | None = None
    meta: bytes | msgspec.Raw = _EMPTY_OBJECT
    if args.nodes is not None:
        if args.nodes.metadata is not None and bytes(args.nodes.metadata) != _NULL:
            meta = args.nodes.metadata
        raws, nodes = _request_nodes(args.nodes.items, limits, images)
    return _assemble(PodInfo(pod), nodes, raws, meta, args.node_names, limits)


def _go_top(body: bytes | bytearray, t: Any, kind: str) -> Any:
    """The whole body decoded the Go way as the struct ``t``: :func:`top_object` (one pass, with
    its messages for an empty or non-object body), then its keys folded."""
    return _fill(top_object(body, kind), plan_for(t), kind)


def _assemble(
    pod: PodInfo,
    nodes: list[NodeInfo] | None,
    raws: list[msgspec.Raw] | None,
    meta: bytes | msgspec.Raw,
    names: list[str] | None,
    limits: Limits,
    memo: RequestMemo | None = None,
) -> ExtenderArgsView:
    _checked(pod, "Pod")
    if nodes is None and names is None:
        raise DecodeError(
            "Nodes and NodeNames are both null: kube-scheduler sends Nodes (nodeCacheCapable: false) "
            "or NodeNames (nodeCacheCapable: true)"
        )
    if names is not None:
        _cap(len(names), limits.max_nodes, "NodeNames", "maxNodes")
    if nodes is None:
        assert names is not None
        return ExtenderArgsView(pod, None, None, meta, True, names, memo)
    if names is not None and names != [n.name for n in nodes]:
        raise DecodeError("NodeNames and Nodes.items name different nodes; send one of them")
    for i, node in enumerate(nodes):
        _checked(node, f"Nodes.items[{i}]")
    return ExtenderArgsView(pod, nodes, raws, meta, names is not None, memo=memo)


def _checked(obj: NodeInfo | PodInfo, where: str) -> None:
    """Parse now every quantity a plugin may read of ``obj`` (a node's ``status.allocatable``; a
    pod's container, init container, pod-level and overhead requests), so a malformed one is the
    request's 400 (:class:`DecodeError` naming ``where``) rather than a plugin's failure later."""
    try:
        if isinstance(obj, NodeInfo):
            obj.allocatable  # noqa: B018 - parsed now, kept on the NodeInfo
        else:
            obj.requests  # noqa: B018
            obj.non_zero_requests  # noqa: B018
    except ObjectDecodeError as exc:
        raise DecodeError(f"{where}: {exc}") from None


#: An answer body as chunks, in order: the HTTP layer sends them without joining them into one
#: copy (a filter answer echoes megabytes of node bytes).
Chunks = list[bytes | msgspec.Raw]


def encode_filter_result(args: ExtenderArgsView, statuses: Sequence[Status]) -> Chunks:
    """``ExtenderFilterResult`` for a decided filter, as chunks: survivors echoed in their received
    form (``Nodes`` with the original node bytes, and/or ``NodeNames``), every rejected node in
    ``FailedNodes`` (``Unschedulable``) or ``FailedAndUnresolvableNodes`` with its reason (a
    surviving node is echoed as its received bytes, not encoded again). When every
    node passed (the runtime's one ``SUCCESS`` for each), the survivors are the request's nodes
    as they are: no per-node loop."""
    if all_passed(statuses):
        return _all_passed(args)
    passed: list[int] = []
    failed: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    messages: dict[int, str] = {}  # plugins share one status among many nodes: join its reasons once
    name = args.names.__getitem__ if args.names is not None else args.node_name
    for i, status in enumerate(statuses):
        code = status.code
        if code is Code.SUCCESS:
            passed.append(i)
            continue
        message = messages.get(id(status))
        if message is None:
            message = messages[id(status)] = status.message
        if code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            unresolvable[name(i)] = message
        else:
            failed[name(i)] = message
    out: Chunks = [b'{"Nodes":']
    if args.node_raws is not None:
        raws = args.node_raws
        out += [b'{"metadata":', args.list_meta, b',"items":[']
        for j, i in enumerate(passed):
            if j:
                out.append(b",")
            out.append(raws[i])
        out.append(b"]}")
    else:
        out.append(_NULL)
    out.append(b',"NodeNames":')
    out.append(orjson.dumps([name(i) for i in passed]) if args.node_names else _NULL)
    out += [
        b',"FailedNodes":',
        orjson.dumps(failed),
        b',"FailedAndUnresolvableNodes":',
        orjson.dumps(unresolvable),
        b',"Error":""}',
    ]
    return out


def all_passed(statuses: Sequence[Status]) -> bool:
    """Whether every verdict is the runtime's ``SUCCESS`` (an identity count, in C)."""
    return bool(statuses) and sum(map(operator.is_, statuses, itertools.repeat(SUCCESS))) == len(statuses)


def _all_passed(args: ExtenderArgsView) -> Chunks:
    """:func:`encode_filter_result` of a filter every node passed."""
    out: Chunks = [b'{"Nodes":']
    if args.node_raws is not None:
        out += [b'{"metadata":', args.list_meta, b',"items":[']
        for j, raw in enumerate(args.node_raws):
            if j:
                out.append(b",")
            out.append(raw)
        out.append(b"]}")
    else:
        out.append(_NULL)
    out.append(b',"NodeNames":')
    if not args.node_names:
        out.append(_NULL)
    else:
        names = args.node_name_list()
        kept = args.memo.names.entry(names) if args.memo is not None else None
        out.append(kept.json() if kept is not None else orjson.dumps(names))
    out.append(b',"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""}')
    return out


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


def encode_host_priority_list(names: Sequence[str], scores: Sequence[int], memo: RequestMemo | None = None) -> bytes:
    """``HostPriorityList``: a bare array, one ``{"Host","Score"}`` per node in request order
    (the last answer for the same kept names and scores reused from ``memo``). Raises
    ``ValueError`` when the two lengths differ."""
    if len(names) != len(scores):
        raise ValueError(f"{len(names)} names but {len(scores)} scores")
    kept = memo.names.entry(names) if memo is not None else None
    if kept is None:
        return _ENCODER.encode(list(map(_HostPriority, names, scores)))
    last = kept.answer
    if last is not None and last[0] == scores:  # the scores of the names' last answer
        return last[1]
    out = _ENCODER.encode(list(map(_HostPriority, names, scores)))
    kept.answer = (list(scores), out)
    return out


class _HostPriority(msgspec.Struct):
    """One ``HostPriority`` as msgspec encodes it (faster than a dict per node)."""

    Host: str
    Score: int


_ENCODER = msgspec.json.Encoder()


def encode_error_object(message: str, **fields: Any) -> bytes:
    """An error answer for verbs whose result type has no ``Error`` field (prioritize, preempt).

    kube-scheduler never reads the body of a non-200 answer; ``Error`` is for people and logs.
    """
    return orjson.dumps({**fields, "Error": message})


# -- ExtenderPreemptionArgs (preempt) --------------------------------------------------------------


#: Go's ``int64`` (``NumPDBViolations``): a larger number is a decode error in Go, and here.
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class _MetaPod(msgspec.Struct, forbid_unknown_fields=True):
    uid: str | None = msgspec.field(default=None, name="UID")


class _MetaVictims(msgspec.Struct, forbid_unknown_fields=True):
    pods: list[_MetaPod] | None = msgspec.field(default=None, name="Pods")
    num_pdb_violations: Int64 | None = msgspec.field(default=None, name="NumPDBViolations")


class _RawVictims(msgspec.Struct, forbid_unknown_fields=True):
    pods: list[msgspec.Raw] | None = msgspec.field(default=None, name="Pods")
    num_pdb_violations: Int64 | None = msgspec.field(default=None, name="NumPDBViolations")


class _GoPreemptionArgs(msgspec.Struct, rename="pascal"):
    """``ExtenderPreemptionArgs`` for :func:`go_decode`: pods stay raw until counted."""

    pod: msgspec.Raw | None = None
    node_name_to_victims: dict[str, _RawVictims | None] | None = None
    node_name_to_meta_victims: dict[str, _MetaVictims | None] | None = None


class _PreemptionArgs(msgspec.Struct, rename="pascal", forbid_unknown_fields=True):
    # exactly the keys json.Marshal(ExtenderPreemptionArgs) writes; anything else takes go_decode
    pod: msgspec.Raw
    node_name_to_victims: dict[str, _RawVictims | None] | None
    node_name_to_meta_victims: dict[str, _MetaVictims | None] | None


_PREEMPTION_ARGS = msgspec.json.Decoder(_PreemptionArgs)


@dataclass
class PreemptionArgsView:
    """A decoded ``ExtenderPreemptionArgs``: the preemptor and node -> proposed victims."""

    pod: PodInfo
    candidates: dict[str, Victims]
    #: true when the request named victims by UID only (``NodeNameToMetaVictims``, cache mode)
    meta: bool = False


def decode_preemption_args(body: bytes | bytearray, limits: Limits = DEFAULT_LIMITS) -> PreemptionArgsView:
    """Decode a preempt body (either victims map; full pods preferred when both are set).

    At most ``limits.max_nodes`` candidate nodes, ``max_victims_per_node`` victims on a node and
    ``max_victims`` in all, counted before any victim pod is decoded. Raises :class:`DecodeError`.
    """
    check_body(body, limits)
    args: _PreemptionArgs | _GoPreemptionArgs
    try:
        args = _PREEMPTION_ARGS.decode(body)
    except (msgspec.ValidationError, msgspec.DecodeError):
        args = _go_top(body, _GoPreemptionArgs, "ExtenderPreemptionArgs")
    except RecursionError:
        raise _nesting_error() from None
    if args.pod is None or bytes(args.pod) == _NULL:
        raise DecodeError("Pod is null: ExtenderPreemptionArgs must carry the preemptor pod")
    pod = PodInfo(_pod(args.pod, "Pod"))
    _checked(pod, "Pod")
    candidates: dict[str, Victims] = {}
    victims_map: dict[str, Any] | None = args.node_name_to_victims
    key = "NodeNameToVictims"
    if victims_map is None:
        victims_map, key = args.node_name_to_meta_victims, "NodeNameToMetaVictims"
    if victims_map is None:
        return PreemptionArgsView(pod, candidates)
    _cap(len(victims_map), limits.max_nodes, key, "maxNodes")
    total = 0
    for node, victims in victims_map.items():
        pods = (victims.pods if victims is not None else None) or []
        _cap(len(pods), limits.max_victims_per_node, f"{key}[{node}].Pods", "maxVictimsPerNode")
        total += len(pods)
        _cap(total, limits.max_victims, f"{key} (all nodes)", "maxVictims")
        infos: list[PodInfo] = []
        for j, p in enumerate(pods):
            where = f"{key}[{node}].Pods[{j}]"
            if isinstance(p, _MetaPod):
                if not p.uid:
                    raise DecodeError(f"{where}.UID is empty")
                infos.append(PodInfo(None, p.uid))
            else:
                info = PodInfo(_pod(p, where))
                if not info.uid:
                    raise DecodeError(f"{where} has no metadata.uid")
                _checked(info, where)
                infos.append(info)
        violations = (victims.num_pdb_violations if victims is not None else None) or 0
        candidates[node] = Victims(infos, violations)
    return PreemptionArgsView(pod, candidates, key == "NodeNameToMetaVictims")


def _pod(raw: msgspec.Raw, where: str) -> objects.Pod:
    """A pod object: the exact-key decode, or Go's folding when it carries no metadata under the
    exact key (a body in another letter case)."""
    pod: objects.Pod | None = decode_as(raw, objects.Pod | None, where)
    if pod is None or pod.metadata is None:
        pod = go_decode(raw, objects.Pod, where)
    return pod


# -- ExtenderBindingArgs (bind) --------------------------------------------------------------------


class _BindingArgs(msgspec.Struct, rename="pascal"):
    pod_name: str | None = None
    pod_namespace: str | None = None
    pod_uid: str | None = msgspec.field(default=None, name="PodUID")
    node: str | None = None


def decode_binding_args(body: bytes | bytearray, limits: Limits = DEFAULT_LIMITS) -> tuple[PodRef, str]:
    """Decode a bind body into the pod reference and the node; raises :class:`DecodeError` when a
    field is missing (binding without the UID could bind a recreated pod of the same name)."""
    check_body(body, limits)
    args: _BindingArgs = _go_top(body, _BindingArgs, "ExtenderBindingArgs")
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
    assert args.pod_namespace and args.pod_name and args.pod_uid and args.node
    return PodRef(args.pod_namespace, args.pod_name, args.pod_uid), args.node


def encode_binding_result(error: str = "") -> bytes:
    """``ExtenderBindingResult``: ``{"Error": ""}`` on success."""
    return orjson.dumps({"Error": error})


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


def join(chunks: bytes | Chunks) -> bytes:
    """An answer as one ``bytes`` (tests, ``replay``); the HTTP layer streams the chunks."""
    return chunks if isinstance(chunks, bytes) else b"".join(chunks)


def encode_error(verb: str, message: str) -> bytes:
    """The verb's own result type carrying ``message`` in ``Error``: ``ExtenderFilterResult`` and
    ``ExtenderBindingResult`` have the field; prioritize's and preempt's answers carry it only for
    people and logs (kube-scheduler never reads the body of a non-200)."""
    if verb == "filter":
        return encode_filter_error(message)
    if verb == "bind":
        return encode_binding_result(message)
    if verb == "preempt":
        return encode_error_object(message, NodeNameToMetaVictims=None)
    return encode_error_object(message)

"""Pydantic models mirroring ``k8s.io/kube-scheduler/extender/v1/types.go``.

The Go structs carry no json tags, so the JSON keys are the Go field names (``Pod``, ``Nodes``,
``NodeNames``, ``FailedNodes``, ...). Attributes here are snake_case with aliases equal to those
names. Dumping with ``by_alias=True`` emits every key, with ``null`` for unset pointers, as Go's
``json.Marshal`` does (no ``omitempty`` upstream). Validation accepts what Go's decoder accepts:
keys in any letter case (:mod:`app.extender.gojson`), unknown keys, and ``null`` for non-pointer fields.

Nested Kubernetes objects (``v1.Pod``, ``v1.Node``) are kept as plain JSON objects: the service
reads only the few fields its plugins need (see :mod:`app.extender.codec`). These models are the documented
contract (OpenAPI, ``schemas/``); the request path decodes with :mod:`app.extender.codec`, and a test
proves both agree on every shared fixture.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, RootModel, model_validator

from app.extender.gojson import fold_index, fold_keys

#: ``MinExtenderPriority`` in types.go: the lowest score an extender should return.
MIN_EXTENDER_PRIORITY = 0
#: ``MaxExtenderPriority`` in types.go: the highest score an extender should return.


class GoStruct(BaseModel):
    """Base for models of Go structs: case-insensitive keys, unknown keys ignored, null = zero value.

    Subclasses list the fields that are Go value types (``string``, ``int64``) in ``_go_values``;
    ``null`` for those leaves the field's default, as Go's decoder does.
    """

    model_config = ConfigDict(populate_by_name=True, extra="ignore", serialize_by_alias=True)

    _go_values: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _go_decode(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        aliases = [f.alias or name for name, f in cls.model_fields.items()]
        folded = fold_keys(data, aliases, fold_index(aliases))
        for key in cls._go_values:
            if key in folded and folded[key] is None:
                del folded[key]
        return folded


class NodeList(GoStruct):
    """``v1.NodeList`` as kube-scheduler sends it: ``{"metadata":{},"items":[<v1.Node>...]}``."""

    metadata: dict[str, Any] | None = Field(default_factory=dict, alias="metadata")
    items: list[dict[str, Any]] | None = Field(default=None, alias="items")


class ExtenderArgs(GoStruct):
    """Request body of ``filter`` and ``prioritize``.

    kube-scheduler sets exactly one of ``Nodes`` (``nodeCacheCapable: false``, full node objects)
    and ``NodeNames`` (``nodeCacheCapable: true``); the other is ``null``.
    """

    pod: dict[str, Any] | None = Field(default=None, alias="Pod", description="the v1.Pod being scheduled")
    nodes: NodeList | None = Field(default=None, alias="Nodes")
    node_names: list[str] | None = Field(default=None, alias="NodeNames")


FailedNodesMap = dict[str, str]


class ExtenderFilterResult(GoStruct):
    """Response of ``filter``. kube-scheduler reads ``Error`` first, then ``NodeNames`` (cache mode,
    when non-null) or ``Nodes``; the maps only explain rejections (``HTTPExtender.Filter``,
    pkg/scheduler/extender.go)."""

    _go_values: ClassVar[frozenset[str]] = frozenset({"Error"})

    nodes: NodeList | None = Field(default=None, alias="Nodes")
    node_names: list[str] | None = Field(default=None, alias="NodeNames")
    failed_nodes: FailedNodesMap | None = Field(default=None, alias="FailedNodes")
    failed_and_unresolvable_nodes: FailedNodesMap | None = Field(default=None, alias="FailedAndUnresolvableNodes")
    error: str = Field(default="", alias="Error")


class HostPriority(GoStruct):
    """One entry of the ``prioritize`` response: ``Score`` is an integer in 0..MaxExtenderPriority."""

    _go_values: ClassVar[frozenset[str]] = frozenset({"Host", "Score"})

    host: str = Field(default="", alias="Host")
    score: int = Field(default=0, alias="Score", strict=True)


class HostPriorityList(RootModel[list[HostPriority] | None]):
    """Response of ``prioritize``: a bare JSON array (``null`` decodes to no scores)."""


class MetaPod(GoStruct):
    """A victim named by UID only."""

    _go_values: ClassVar[frozenset[str]] = frozenset({"UID"})

    uid: str = Field(default="", alias="UID")


class MetaVictims(GoStruct):
    """Victims on one node, by UID (cache mode, and always in the preempt response)."""

    _go_values: ClassVar[frozenset[str]] = frozenset({"NumPDBViolations"})

    pods: list[MetaPod] | None = Field(default=None, alias="Pods")
    num_pdb_violations: int = Field(default=0, alias="NumPDBViolations", strict=True)


class Victims(GoStruct):
    """Victims on one node as full pod objects (non-cache mode requests)."""

    _go_values: ClassVar[frozenset[str]] = frozenset({"NumPDBViolations"})

    pods: list[dict[str, Any]] | None = Field(default=None, alias="Pods")
    num_pdb_violations: int = Field(default=0, alias="NumPDBViolations", strict=True)


class ExtenderPreemptionArgs(GoStruct):
    """Request body of ``preempt``: exactly one of the two maps is set, the other is ``null``."""

    pod: dict[str, Any] | None = Field(default=None, alias="Pod")
    node_name_to_victims: dict[str, Victims | None] | None = Field(default=None, alias="NodeNameToVictims")
    node_name_to_meta_victims: dict[str, MetaVictims | None] | None = Field(default=None, alias="NodeNameToMetaVictims")


class ExtenderPreemptionResult(GoStruct):
    """Response of ``preempt``: always UIDs (``NodeNameToMetaVictims``), in both cache modes.

    ``Error`` is not a Go field (kube-scheduler ignores it as an unknown key); this service adds it
    to non-200 answers so a person sees why.
    """

    node_name_to_meta_victims: dict[str, MetaVictims] | None = Field(default=None, alias="NodeNameToMetaVictims")


class ExtenderBindingArgs(GoStruct):
    """Request body of ``bind``: the pod (with its UID) and the node kube-scheduler chose."""

    _go_values: ClassVar[frozenset[str]] = frozenset({"PodName", "PodNamespace", "PodUID", "Node"})

    pod_name: str = Field(default="", alias="PodName")
    pod_namespace: str = Field(default="", alias="PodNamespace")
    pod_uid: str = Field(default="", alias="PodUID")
    node: str = Field(default="", alias="Node")


class ExtenderBindingResult(GoStruct):
    """Response of ``bind``: empty ``Error`` means the pod was bound."""

    _go_values: ClassVar[frozenset[str]] = frozenset({"Error"})

    error: str = Field(default="", alias="Error")

"""NodeAffinity: ``spec.nodeSelector`` and required node affinity filter nodes; preferred node
affinity scores them; the ``addedAffinity`` arg applies to every pod of the profile.

Ports kube-scheduler v1.36.3's plugin (pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go)
with the matching of k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go
(``GetRequiredNodeAffinity``, ``LazyErrorNodeSelector``, ``NodeSelector``,
``PreferredSchedulingTerms``), the requirement checks of k8s.io/apimachinery/pkg/labels/selector.go
(``NewRequirement``) and pkg/util/validation (``IsQualifiedName``, ``IsValidLabelValue``), and
``ValidateNodeAffinityArgs`` (pkg/scheduler/apis/config/validation/validation_pluginargs.go).

- PreFilter: ``Skip`` when the pod has no required node affinity, no ``nodeSelector`` and the
  profile no added required affinity. When every required term pins ``metadata.name`` with
  ``matchFields`` ``In``, the union over terms of the intersection within a term is the
  ``PreFilterResult`` (the only nodes worth evaluating); an empty one is
  ``UnschedulableAndUnresolvable`` ``pod affinity terms conflict``.
- Filter: the added required affinity first (``node(s) didn't match scheduler-enforced node
  affinity``), then ``nodeSelector`` AND the pod's required terms (``node(s) didn't match Pod's
  node affinity/selector``); both ``UnschedulableAndUnresolvable``. A term with an invalid
  requirement matches no node (upstream ignores parse errors in Filter).
- PreScore: the pod's preferred terms (an invalid one is an ``ERROR``, as upstream); ``Skip`` when
  the pod has none (``nil``) and the profile adds none.
- Score: the sum of the weights of the matching preferred terms, the pod's and the added ones;
  NormalizeScore: ``DefaultNormalizeScore(MaxNodeScore, false)``.

Reads only the pod and the node object (no cluster state). A node known only by name (no object)
is an ``ERROR`` (:data:`~app.framework.types.NO_NODE`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import field_validator

from app.framework import SignFragment, objects, signers
from app.framework.args import PluginArgs
from app.framework.events import (
    NODE,
    QUEUE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    objects_as,
)
from app.framework.events import SKIP as QUEUE_SKIP
from app.framework.handle import Handle
from app.framework.registry import PluginEntry
from app.framework.scores import MAX_NODE_SCORE, default_normalize_score
from app.framework.status import SKIP, SUCCESS, Code, Status
from app.framework.types import NO_NODE, CycleState, NodeInfo, NodeScore, PodInfo, PreFilterResult
from app.framework.validation import aggregate, is_qualified_name, is_valid_label_value

NAME = "NodeAffinity"
#: CycleState keys of PreFilter's and PreScore's results
PRE_FILTER_KEY = f"{NAME}/pre-filter"
PRE_SCORE_KEY = f"{NAME}/pre-score"

#: ``ErrReasonPod``
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
#: ``errReasonEnforced``
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
#: ``errReasonConflict``
ERR_REASON_CONFLICT = "pod affinity terms conflict"
#: ``metav1.ObjectNameField``
OBJECT_NAME_FIELD = "metadata.name"

_POD = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_POD,), reason_code="NodeAffinityMismatch")
_ENFORCED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_ENFORCED,), reason_code="EnforcedAffinityMismatch")
_CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_CONFLICT,), reason_code="AffinityTermsConflict")
_NO_NODE_STATUS = Status.error(NO_NODE)

# -- operators and Gt/Lt values (label keys and values: app.framework.validation) -------------------

_INT64_TEXT = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_FIELD_OPERATORS = ("In", "NotIn")


def parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``, ``None`` where Go returns an error."""
    if not _INT64_TEXT.fullmatch(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def _quote(value: object) -> str:
    """Go's ``%q``/``%v`` of a field error's value, near enough (strings quoted, lists as ``[a b]``)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[]string{" + ", ".join(_quote(v) for v in value) + "}" if value else "[]string(nil)"
    return str(value)


def _invalid(path: str, value: object, detail: str) -> str:
    """``field.Invalid(path, value, detail).Error()``."""
    return f"{path}: Invalid value: {_quote(value)}: {detail}"


def _not_supported(path: str, value: str, valid: Sequence[str]) -> str:
    """``field.NotSupported(path, value, valid).Error()``."""
    return f"{path}: Unsupported value: {_quote(value)}: supported values: " + ", ".join(_quote(v) for v in valid)


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# -- compiled selectors -----------------------------------------------------------------------------

#: a label requirement: (key, operator, values, int64 value for Gt/Lt)
_LabelReq = tuple[str, str, frozenset[str], int]
#: a field requirement: (key, equal?, value)
_FieldReq = tuple[str, bool, str]


@dataclass(frozen=True, slots=True)
class Term:
    """A parsed ``v1.NodeSelectorTerm`` (``nodeSelectorTerm``): its label requirements (ANDed),
    its field requirements (ANDed; ``None`` when the term has no ``matchFields``) and the parse
    errors (a term with errors matches nothing).

    Matching differs from :mod:`app.framework.labels` where that module is lenient, so this module
    has its own matcher: label keys and values are validated (``NewRequirement``: an invalid one makes
    its term match nothing), ``Gt``/``Lt`` integers are int64, and ``matchFields`` on a key other than
    ``metadata.name`` compares against ``""`` (upstream's ``fields.Set`` holds only
    ``metadata.name``), and is ignored for a node with an empty name.
    """

    labels: tuple[_LabelReq, ...]
    fields: tuple[_FieldReq, ...] | None
    errors: tuple[str, ...] = ()

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        """``nodeSelectorTerm.match`` (parse errors: no match)."""
        if self.errors:
            return False
        for key, op, values, number in self.labels:
            have = labels.get(key)
            if op == "In":
                if have is None or have not in values:
                    return False
            elif op == "NotIn":
                if have is not None and have in values:
                    return False
            elif op == "Exists":
                if have is None:
                    return False
            elif op == "DoesNotExist":
                if have is not None:
                    return False
            else:  # Gt, Lt
                value = parse_int64(have) if have is not None else None
                if value is None or not (value > number if op == "Gt" else value < number):
                    return False
        if self.fields is not None and name:  # fields.Set{"metadata.name": name}; empty for no name
            for key, equal, want in self.fields:
                have_field = name if key == OBJECT_NAME_FIELD else ""
                if (have_field == want) != equal:
                    return False
        return True


def parse_term(term: objects.NodeSelectorTerm, path: str) -> Term:
    """``newNodeSelectorTerm``: compile ``term``, collecting ``NewRequirement``'s and the field
    selector's errors with their field paths (``path`` is the term's own)."""
    errors: list[str] = []
    label_reqs: list[_LabelReq] = []
    for i, req in enumerate(term.match_expressions or ()):
        p = f"{_child(path, 'matchExpressions')}[{i}]"
        key, op, values = req.key or "", req.operator or "", list(req.values or ())
        if op not in _SELECTOR_OPERATORS:
            errors.append(_not_supported(_child(p, "operator"), op, _SELECTOR_OPERATORS))
            continue
        errs: list[str] = []
        if key_errs := is_qualified_name(key):
            errs.append(_invalid(_child(p, "key"), key, "; ".join(key_errs)))
        values_path = _child(p, "values")
        number = 0
        if op in ("In", "NotIn"):
            if not values:
                errs.append(_invalid(values_path, values, "for 'in', 'notin' operators, values set can't be empty"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(_invalid(values_path, values, "values set must be empty for exists and does not exist"))
        else:
            if len(values) != 1:
                errs.append(_invalid(values_path, values, "for 'Gt', 'Lt' operators, exactly one value is required"))
            for j, v in enumerate(values):
                parsed = parse_int64(v)
                if parsed is None:
                    errs.append(
                        _invalid(f"{values_path}[{j}]", v, "for 'Gt', 'Lt' operators, the value must be an integer")
                    )
                else:
                    number = parsed
        for j, v in enumerate(values):
            if value_errs := is_valid_label_value(v):
                errs.append(_invalid(f"{values_path}[{j}][{key}]", v, "; ".join(value_errs)))
        if errs:
            errors.extend(errs)
        else:
            label_reqs.append((key, op, frozenset(values), number))
    field_reqs: list[_FieldReq] | None = None
    if term.match_fields:
        field_reqs = []
        for i, req in enumerate(term.match_fields):
            p = f"{_child(path, 'matchFields')}[{i}]"
            op, values = req.operator or "", list(req.values or ())
            if op not in _FIELD_OPERATORS:
                errors.append(_not_supported(_child(p, "operator"), op, _FIELD_OPERATORS))
            elif len(values) != 1:
                errors.append(_invalid(_child(p, "values"), values, "must have one element"))
            else:
                field_reqs.append((req.key or "", op == "In", values[0]))
    return Term(tuple(label_reqs), tuple(field_reqs) if field_reqs is not None else None, tuple(errors))


def _is_empty(term: objects.NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


def parse_node_selector(selector: objects.NodeSelector, path: str = "") -> tuple[Term, ...]:
    """``NewLazyErrorNodeSelector``: the non-empty terms, compiled (an empty term matches nothing
    and is dropped; a term with errors is kept and matches nothing)."""
    terms_path = _child(path, "nodeSelectorTerms")
    return tuple(
        parse_term(t, f"{terms_path}[{i}]")
        for i, t in enumerate(selector.node_selector_terms or ())
        if not _is_empty(t)
    )


def selector_errors(terms: Sequence[Term]) -> list[str]:
    """Every parse error of ``terms`` (``NewNodeSelector`` refuses a selector with any)."""
    return [e for t in terms for e in t.errors]


def terms_match(terms: Sequence[Term], name: str, labels: Mapping[str, str]) -> bool:
    """``LazyErrorNodeSelector.Match``: any term matches (no term: no node)."""
    return any(t.matches(name, labels) for t in terms)


@dataclass(frozen=True, slots=True)
class PreferredTerms:
    """``nodeaffinity.PreferredSchedulingTerms``: ``(term, weight)`` pairs; terms of weight 0 or
    without requirements were dropped."""

    terms: tuple[tuple[Term, int], ...]

    def score(self, name: str, labels: Mapping[str, str]) -> int:
        """The sum of the weights of the terms the node matches."""
        return sum(weight for term, weight in self.terms if term.matches(name, labels))


def parse_preferred(terms: Sequence[objects.PreferredSchedulingTerm], path: str = "") -> PreferredTerms:
    """``NewPreferredSchedulingTerms``; raises ``ValueError`` with every parse error (one error
    as is, several as ``[e1, e2]``, as ``errors.NewAggregate``)."""
    parsed: list[tuple[Term, int]] = []
    errors: list[str] = []
    for i, t in enumerate(terms):
        preference = t.preference or objects.NodeSelectorTerm()
        if not t.weight or _is_empty(preference):
            continue
        term = parse_term(preference, f"{path}[{i}]")
        if term.errors:
            errors.extend(term.errors)
        else:
            parsed.append((term, t.weight))
    if errors:
        raise ValueError(aggregate(errors))
    return PreferredTerms(tuple(parsed))


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """``nodeaffinity.RequiredNodeAffinity``: ``spec.nodeSelector`` (``None`` when empty) AND the
    required node affinity's terms (``None`` when the pod has none)."""

    node_selector: Mapping[str, str] | None
    terms: tuple[Term, ...] | None

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        """``RequiredNodeAffinity.Match`` (parse errors ignored, as Filter does)."""
        if self.node_selector is not None:
            for key, value in self.node_selector.items():
                if labels.get(key) != value:
                    return False
        if self.terms is not None:
            return terms_match(self.terms, name, labels)
        return True


def _required_selector(pod: PodInfo) -> objects.NodeSelector | None:
    affinity = pod.affinity
    node_affinity = affinity.node_affinity if affinity is not None else None
    return node_affinity.required_during_scheduling_ignored_during_execution if node_affinity is not None else None


def required_node_affinity(pod: PodInfo) -> RequiredNodeAffinity:
    """``GetRequiredNodeAffinity(pod)``."""
    required = _required_selector(pod)
    return RequiredNodeAffinity(
        dict(pod.node_selector) if pod.node_selector else None,
        parse_node_selector(required) if required is not None else None,
    )


def pinned_node_names(required: objects.NodeSelector) -> frozenset[str] | None:
    """The node names PreFilter returns (``PreFilterResult.NodeNames``), or ``None`` for all nodes:
    every term must have ``matchFields`` ``metadata.name`` ``In`` requirements; their values are
    intersected within a term and united over the terms (an empty result is a conflict)."""
    names: set[str] | None = None
    for term in required.node_selector_terms or ():
        term_names: set[str] | None = None
        for req in term.match_fields or ():
            if req.key == OBJECT_NAME_FIELD and req.operator == "In":
                values = set(req.values or ())
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None  # this term does not pin node names: every node is eligible
        names = term_names if names is None else names | term_names
    return frozenset(names) if names is not None else None


def preferred_terms(pod: PodInfo) -> PreferredTerms | None:
    """``getPodPreferredNodeAffinity``: the pod's parsed preferred terms, ``None`` when the list
    is unset (an empty list is not ``None``). Raises ``ValueError`` for an invalid term."""
    affinity = pod.affinity
    node_affinity = affinity.node_affinity if affinity is not None else None
    terms = node_affinity.preferred_during_scheduling_ignored_during_execution if node_affinity is not None else None
    return parse_preferred(terms) if terms is not None else None


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    required: RequiredNodeAffinity


# -- args -------------------------------------------------------------------------------------------


_T = TypeVar("_T")


def _fields(doc: Any, path: str, allowed: Sequence[str]) -> Mapping[str, Any]:
    """``doc`` as an object with only ``allowed`` keys (kube-scheduler decodes its config strictly)."""
    if not isinstance(doc, Mapping):
        raise ValueError(f"{path}: expected an object, got {type(doc).__name__}")
    unknown = sorted(str(k) for k in doc if k not in allowed)
    if unknown:
        raise ValueError(f"{path}: unknown field(s) {', '.join(unknown)}")
    return doc


def _optional(doc: Mapping[str, Any], key: str, path: str, kind: type[_T]) -> _T | None:
    value = doc.get(key)
    if value is not None and (not isinstance(value, kind) or (isinstance(value, bool) and kind is int)):
        raise ValueError(f"{_child(path, key)}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def _list(doc: Mapping[str, Any], key: str, path: str, item: Callable[[Any, str], _T]) -> list[_T] | None:
    values = _optional(doc, key, path, list)
    return None if values is None else [item(v, f"{_child(path, key)}[{i}]") for i, v in enumerate(values)]


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{path}: expected str, got {type(value).__name__}")
    return value


def _requirement(doc: Any, path: str) -> objects.NodeSelectorRequirement:
    d = _fields(doc, path, ("key", "operator", "values"))
    return objects.NodeSelectorRequirement(
        key=_optional(d, "key", path, str),
        operator=_optional(d, "operator", path, str),
        values=_list(d, "values", path, _string),
    )


def _term(doc: Any, path: str) -> objects.NodeSelectorTerm:
    d = _fields(doc, path, ("matchExpressions", "matchFields"))
    return objects.NodeSelectorTerm(
        match_expressions=_list(d, "matchExpressions", path, _requirement),
        match_fields=_list(d, "matchFields", path, _requirement),
    )


def _preferred(doc: Any, path: str) -> objects.PreferredSchedulingTerm:
    d = _fields(doc, path, ("weight", "preference"))
    preference = d.get("preference")
    return objects.PreferredSchedulingTerm(
        weight=_optional(d, "weight", path, int),
        preference=_term(preference, _child(path, "preference")) if preference is not None else None,
    )


def decode_node_affinity(doc: Any, path: str = "addedAffinity") -> objects.NodeAffinity:
    """A ``v1.NodeAffinity`` from its camelCase JSON form, strictly (unknown fields and wrong
    types are errors). Raises ``ValueError`` naming the field."""
    d = _fields(
        doc, path, ("requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution")
    )
    required_path = _child(path, "requiredDuringSchedulingIgnoredDuringExecution")
    required_doc = d.get("requiredDuringSchedulingIgnoredDuringExecution")
    required = None
    if required_doc is not None:
        r = _fields(required_doc, required_path, ("nodeSelectorTerms",))
        required = objects.NodeSelector(node_selector_terms=_list(r, "nodeSelectorTerms", required_path, _term))
    return objects.NodeAffinity(
        required_during_scheduling_ignored_during_execution=required,
        preferred_during_scheduling_ignored_during_execution=_list(
            d, "preferredDuringSchedulingIgnoredDuringExecution", path, _preferred
        ),
    )


def parse_added_affinity(doc: Mapping[str, Any]) -> objects.NodeAffinity:
    """Decode ``addedAffinity`` (a ``v1.NodeAffinity`` in camelCase JSON) and validate it as
    ``ValidateNodeAffinityArgs`` does (its required terms as ``NewNodeSelector``, its preferred
    terms as ``NewPreferredSchedulingTerms``). Raises ``ValueError`` naming the fields."""
    affinity = decode_node_affinity(doc)
    errors: list[str] = []
    required = affinity.required_during_scheduling_ignored_during_execution
    if required is not None:
        errors.extend(
            selector_errors(
                parse_node_selector(required, "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution")
            )
        )
    preferred = affinity.preferred_during_scheduling_ignored_during_execution
    if preferred:
        try:
            parse_preferred(preferred, "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution")
        except ValueError as exc:
            errors.append(str(exc))
    if errors:
        raise ValueError(aggregate(errors))
    return affinity


class NodeAffinityArgs(PluginArgs):
    """``NodeAffinityArgs``: ``addedAffinity``, a ``v1.NodeAffinity`` (camelCase JSON) applied to
    every pod of the profile on top of its own (default: none). Its required terms must be valid
    selectors, as must its preferred terms of non-zero weight (``ValidateNodeAffinityArgs``)."""

    added_affinity: dict[str, Any] | None = None

    @field_validator("added_affinity")
    @classmethod
    def _valid(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            parse_added_affinity(value)
        return value


# -- the plugin -------------------------------------------------------------------------------------


#: the cluster events that may make a pod this plugin rejected schedulable
#: v1.36.3 ``EventsToRegister``: Node Add|UpdateNodeLabel (no UpdateNodeTaint without preCheck)
_NODE_EVENT = ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)


def _name_labels(node: objects.Node) -> tuple[str, Mapping[str, str]]:
    meta = node.metadata or objects.EMPTY_META
    return meta.name or "", meta.labels or {}


class NodeAffinity:
    """PreFilter, Filter, PreScore, Score and NormalizeScore (see the module doc)."""

    name = NAME

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (node_affinity.go, v1.36.3): the node affinity and ``spec.nodeSelector``."""
        return signers.node_affinity_fragments(pod), SUCCESS

    def __init__(self, args: NodeAffinityArgs | None = None, handle: Handle | None = None) -> None:
        added = parse_added_affinity(args.added_affinity) if args is not None and args.added_affinity else None
        required = added.required_during_scheduling_ignored_during_execution if added is not None else None
        #: ``addedNodeSelector`` (``None``: no added required affinity)
        self.added_required: tuple[Term, ...] | None = parse_node_selector(required) if required is not None else None
        preferred = added.preferred_during_scheduling_ignored_during_execution if added is not None else None
        #: ``addedPrefSchedTerms`` (``None`` when there are none)
        self.added_preferred: PreferredTerms | None = parse_preferred(preferred) if preferred else None

    # -- filter -----------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """``Skip`` when there is nothing to check; else the parsed requirements in the cycle
        state and, when the terms pin ``metadata.name``, those node names as the
        ``PreFilterResult`` (``pod affinity terms conflict`` when they exclude every node)."""
        required = _required_selector(pod)
        spec_selector = pod.pod.spec.node_selector if pod.pod is not None and pod.pod.spec is not None else None
        has_selector = spec_selector is not None if pod.pod is not None else bool(pod.node_selector)
        if required is None and self.added_required is None and not has_selector:
            return None, SKIP
        state.write(PRE_FILTER_KEY, _PreFilterState(required_node_affinity(pod)))
        names = pinned_node_names(required) if required is not None and required.node_selector_terms else None
        if names is None:
            return None, SUCCESS
        if not names:
            return None, _CONFLICT
        return PreFilterResult(names), SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``SUCCESS`` or an ``UnschedulableAndUnresolvable`` rejection (see the module doc);
        ``ERROR`` for a node without its object."""
        if node.node is None:
            return _NO_NODE_STATUS
        found: _PreFilterState | None = state.get(PRE_FILTER_KEY)
        if found is None:  # PreFilter did not run: compute here, as upstream's fallback
            found = _PreFilterState(required_node_affinity(pod))
        name, labels = node.name, node.labels
        if self.added_required is not None and not terms_match(self.added_required, name, labels):
            return _ENFORCED
        if not found.required.matches(name, labels):
            return _POD
        return SUCCESS

    # -- score ------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """The pod's preferred terms for Score; ``Skip`` when neither the pod nor the profile has
        any; ``ERROR`` for an invalid term."""
        try:
            preferred = preferred_terms(pod)
        except ValueError as exc:
            return Status.error(str(exc))
        if preferred is None and self.added_preferred is None:
            return SKIP
        state.write(PRE_SCORE_KEY, preferred)
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        """The raw score: the weights of the matching preferred terms, added ones included.
        ``Error`` for a node without its object, and for an invalid term when PreScore did not
        run."""
        if node.node is None:
            return 0, _NO_NODE_STATUS
        name, labels = node.name, node.labels
        count = self.added_preferred.score(name, labels) if self.added_preferred is not None else 0
        if PRE_SCORE_KEY in state:
            preferred: PreferredTerms | None = state.read(PRE_SCORE_KEY)
        else:  # fallback when PreScore is disabled, as upstream
            try:
                preferred = preferred_terms(pod)
            except ValueError as exc:
                return 0, Status.error(str(exc))
        if preferred is not None:
            count += preferred.score(name, labels)
        return count, SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        """``DefaultNormalizeScore(MaxNodeScore, false, scores)``."""
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    def is_schedulable_after_node_change(self, pod: PodInfo, old: object, new: object) -> QueueingHint:
        """``isSchedulableAfterNodeChange`` (v1.36.3 node_affinity.go): ``Skip`` for a node the
        scheduler-enforced affinity or the pod's required affinity does not match, or that
        matched already; ``Queue`` for a matching node added, or one that matches only now."""
        original, modified = objects_as(old, new, objects.Node)
        if modified is None:
            raise TypeError("no new node")
        name, labels = _name_labels(modified)
        if self.added_required is not None and not terms_match(self.added_required, name, labels):
            return QUEUE_SKIP
        required = required_node_affinity(pod)
        if not required.matches(name, labels):
            return QUEUE_SKIP
        if original is None:
            return QUEUE
        return QUEUE_SKIP if required.matches(*_name_labels(original)) else QUEUE

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister`` (v1.36.3): Node Add|UpdateNodeLabel judged by
        :meth:`is_schedulable_after_node_change`."""
        return (ClusterEventWithHint(_NODE_EVENT, self.is_schedulable_after_node_change),)


PLUGIN = PluginEntry(
    name=NAME,
    factory=NodeAffinity,
    args=NodeAffinityArgs,
    needs_cluster=False,
    summary="filter + score: kube-scheduler's NodeAffinity (nodeSelector, node affinity, addedAffinity)",
)

"""PodTopologySpread: spread a pod's replicas evenly over topology domains (zones, hosts, ...).

Ports kube-scheduler v1.30's plugin, pkg/scheduler/framework/plugins/podtopologyspread/
(``common.go``, ``filtering.go``, ``scoring.go``, ``plugin.go``), with its args from
pkg/scheduler/apis/config (``types_pluginargs.go``: ``PodTopologySpreadArgs``; ``v1/defaults.go``:
``defaultingType`` defaults to ``System``; ``validation/validation_pluginargs.go``:
``ValidatePodTopologySpreadArgs``), with the feature gates of v1.30 (MinDomains GA,
NodeInclusionPolicy and MatchLabelKeys on).

- **PreFilter** (``calPreFilterState``): the pod's ``DoNotSchedule`` constraints (or the default
  ones, see below); for each, over every node of the cluster (``state.snapshot.list()``, else the
  nodes given) that has all the constraints' topology keys and passes the constraint's node
  inclusion policies (``nodeAffinityPolicy`` Honor by default: the pod's nodeSelector and required
  node affinity; ``nodeTaintsPolicy`` Ignore by default, Honor: no untolerated
  NoSchedule/NoExecute taint), the number of pods in the pod's namespace, not being deleted,
  matching the constraint's selector (``labelSelector`` plus the pod's values of
  ``matchLabelKeys``), per topology value. ``Skip`` when the pod has no such constraint.
- **AddPod/RemovePod** (PreFilter extensions): a pod added to or removed from a node (the pods
  nominated to it, a preemption's dry run) changes its domain's count and the critical paths
  (``updateWithPod``).
- **Filter**: a node without one of the topology keys is ``UnschedulableAndUnresolvable``
  "node(s) didn't match pod topology spread constraints (missing required label)"; a node where
  ``matching pods in its domain + (1 if the pod matches its own selector) - global minimum >
  maxSkew`` is ``Unschedulable`` "node(s) didn't match pod topology spread constraints". The global
  minimum is the first of the constraint's two critical paths (``criticalPaths``), 0 when there
  are fewer domains than ``minDomains`` (1 when unset).
- **PreScore/Score/NormalizeScore** (``ScheduleAnyway`` constraints): a node's raw score is
  ``sum(count * log(domains + 2) + maxSkew - 1)`` over the constraints, rounded half away from
  zero; NormalizeScore maps it to ``100 * (max + min - score) / max`` so that fewer matching pods
  score higher; nodes missing a topology key are ignored (score 0).

Default constraints: when the pod has no ``topologySpreadConstraints``, ``defaultConstraints``
(``defaultingType: List``) or upstream's ``systemDefaultConstraints`` (``System``: hostname
maxSkew 3, zone maxSkew 5, both ``ScheduleAnyway``) apply, with the label selector of the
Services, ReplicationControllers, ReplicaSets and StatefulSets selecting the pod
(``helper.DefaultSelector``). The plugin takes that selector from a ``default_selector`` callable:
given explicitly, else its handle's cluster state's
(:meth:`~app.framework.handle.ClusterHandle.default_selector`, which watches those four kinds
when the plugin's registration declares ``ClusterNeeds.spread_selectors``: whenever the
defaulting applies, as upstream's ``New`` starts their informers only then); without one no
default constraint applies, which is what upstream does for a pod nothing selects.

Upstream keys its counts by topology key; API validation (and args validation) allows only one
constraint per ``(topologyKey, whenUnsatisfiable)``, so keying by constraint index, as here (and
as upstream does since v1.31), gives the same results.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field, model_validator

from app.framework import objects
from app.framework.args import PluginArgs
from app.framework.events import NODE, POD, ActionType, ClusterEvent
from app.framework.handle import ClusterNeeds, Handle
from app.framework.interfaces import PreFilterStateExtensions
from app.framework.registry import PluginEntry
from app.framework.scores import MAX_NODE_SCORE
from app.framework.status import SKIP, SUCCESS, Status
from app.framework.taints import find_matching_untolerated_taint
from app.framework.types import NO_NODE, CycleState, NodeInfo, NodeScore, PodInfo, PreFilterResult
from app.framework.validation import is_qualified_name, selector_error
from app.plugins import nodeaffinity

NAME = "PodTopologySpread"
_PRE_FILTER = f"{NAME}/pre-filter"
_PRE_SCORE = f"{NAME}/pre-score"

#: ``ErrReasonConstraintsNotMatch`` (plugin.go)
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
#: ``ErrReasonNodeLabelNotMatch`` (plugin.go)
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

#: ``v1.LabelHostname`` and ``v1.LabelTopologyZone``
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
#: ``v1.UnsatisfiableConstraintAction`` values
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
#: ``config.PodTopologySpreadConstraintsDefaulting`` values
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
#: ``v1.NodeInclusionPolicy`` values
HONOR = "Honor"
IGNORE = "Ignore"

_MAX_INT32 = 2**31 - 1

_LABEL_MISSING = Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH, code="NodeLabelNotMatch")
_SKEWED = Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH, code="ConstraintsNotMatch")
_NO_NODE = Status.error(NO_NODE)


# -- args -----------------------------------------------------------------------------------------


class DefaultConstraint(PluginArgs):
    """One of ``defaultConstraints``: a ``v1.TopologySpreadConstraint`` without ``labelSelector``
    (upstream forbids it: the selector is deduced for each pod). ``maxSkew`` > 0,
    ``topologyKey`` a label key, ``whenUnsatisfiable`` ``DoNotSchedule`` or ``ScheduleAnyway``;
    ``minDomains``, ``nodeAffinityPolicy``, ``nodeTaintsPolicy`` and ``matchLabelKeys`` are taken
    as given (unset: 1, Honor, Ignore, none)."""

    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: dict[str, Any] | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] | None = None

    def to_object(self) -> objects.TopologySpreadConstraint:
        """The constraint as the decoded object view the plugin compiles."""
        return objects.TopologySpreadConstraint(
            max_skew=self.max_skew,
            topology_key=self.topology_key,
            when_unsatisfiable=self.when_unsatisfiable,
            min_domains=self.min_domains,
            node_affinity_policy=self.node_affinity_policy,
            node_taints_policy=self.node_taints_policy,
            match_label_keys=self.match_label_keys,
        )


class PodTopologySpreadArgs(PluginArgs):
    """``PodTopologySpreadArgs``: ``defaultConstraints`` (applied to pods without constraints of
    their own) and ``defaultingType``: ``System`` (the default: upstream's built-in hostname/zone
    ``ScheduleAnyway`` constraints; ``defaultConstraints`` must then be empty) or ``List`` (the
    given ``defaultConstraints``, possibly none). Validation follows
    ``ValidatePodTopologySpreadArgs`` and reports every problem with upstream's field paths."""

    default_constraints: list[DefaultConstraint] = Field(default_factory=list)
    defaulting_type: str = SYSTEM_DEFAULTING

    @model_validator(mode="after")
    def _validate(self) -> PodTopologySpreadArgs:
        errors: list[str] = []
        dt = self.defaulting_type
        if dt not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            errors.append(f'defaultingType: Unsupported value: "{dt}": supported values: "System", "List"')
        elif dt == SYSTEM_DEFAULTING and self.default_constraints:
            errors.append('defaultingType: Invalid value: "System": when .defaultConstraints are not empty')
        for i, c in enumerate(self.default_constraints):
            p = f"defaultConstraints[{i}]"
            if c.max_skew <= 0:
                errors.append(f"{p}.maxSkew: Invalid value: {c.max_skew}: not in valid range (0, inf)")
            if not c.topology_key:
                errors.append(f"{p}.topologyKey: Required value: can not be empty")
            else:
                errors.extend(
                    f'{p}.topologyKey: Invalid value: "{c.topology_key}": {m}'
                    for m in is_qualified_name(c.topology_key)  # metav1validation.ValidateLabelName
                )
            if not c.when_unsatisfiable:
                errors.append(f"{p}.whenUnsatisfiable: Required value: can not be empty")
            elif c.when_unsatisfiable not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
                errors.append(
                    f'{p}.whenUnsatisfiable: Unsupported value: "{c.when_unsatisfiable}": '
                    'supported values: "DoNotSchedule", "ScheduleAnyway"'
                )
            if c.label_selector is not None:
                errors.append(
                    f"{p}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
                )
            for other in self.default_constraints[:i]:
                if (other.topology_key, other.when_unsatisfiable) == (c.topology_key, c.when_unsatisfiable):
                    errors.append(
                        f'defaultConstraints[{i}]: Duplicate value: "{{{c.topology_key}, {c.when_unsatisfiable}}}"'
                    )
                    break
        if errors:
            raise ValueError("; ".join(errors))
        return self


#: upstream's ``systemDefaultConstraints`` (plugin.go), in its order
SYSTEM_DEFAULT_CONSTRAINTS: tuple[objects.TopologySpreadConstraint, ...] = (
    objects.TopologySpreadConstraint(topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY, max_skew=3),
    objects.TopologySpreadConstraint(topology_key=LABEL_TOPOLOGY_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY, max_skew=5),
)


# -- selectors ------------------------------------------------------------------------------------

LabelMatcher = Callable[[Mapping[str, str]], bool]

_IN, _NOT_IN, _EXISTS, _DOES_NOT_EXIST = 0, 1, 2, 3
_OPERATORS = {"In": _IN, "NotIn": _NOT_IN, "Exists": _EXISTS, "DoesNotExist": _DOES_NOT_EXIST}
Requirement = tuple[str, int, frozenset[str]]


class SelectorError(ValueError):
    """A ``metav1.LabelSelector`` that ``LabelSelectorAsSelector`` refuses."""


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled ``labels.Selector``: ``requirements`` ANDed, or ``nothing`` (a ``nil``
    ``labelSelector``: matches no pod). ``empty`` (no requirement, ``Selector.Empty``) matches
    every pod, yet ``countPodsMatchSelector`` counts no pod for it, as upstream."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """``labels.Selector.Empty()``: no requirement (``Nothing`` is not empty)."""
        return not self.nothing and not self.requirements

    def matcher(self) -> LabelMatcher:
        """A function ``labels -> bool`` for this selector (``labels.Selector.Matches``)."""
        if self.nothing:
            return _match_nothing
        reqs = self.requirements
        if not reqs:
            return _match_everything
        if all(op == _IN and len(values) == 1 for _, op, values in reqs):
            pairs = tuple((key, next(iter(values))) for key, _, values in reqs)
            if len(pairs) == 1:
                ((k, v),) = pairs

                def match_one(labels: Mapping[str, str]) -> bool:
                    return labels.get(k) == v

                return match_one

            def match_equal(labels: Mapping[str, str]) -> bool:
                get = labels.get
                for key, value in pairs:  # noqa: SIM110 - a loop is faster than all() here
                    if get(key) != value:
                        return False
                return True

            return match_equal

        def match_any(labels: Mapping[str, str]) -> bool:
            get = labels.get
            for key, op, values in reqs:
                have = get(key)
                if op == _IN:
                    if have is None or have not in values:
                        return False
                elif op == _NOT_IN:
                    if have is not None and have in values:
                        return False
                elif op == _EXISTS:
                    if have is None:
                        return False
                elif have is not None:
                    return False
            return True

        return match_any

    def with_labels(self, extra: Mapping[str, str]) -> Selector:
        """``mergeLabelSetWithSelector``: ``extra`` as equality requirements plus this selector's
        (``Nothing`` stays ``Nothing``)."""
        if self.nothing:
            return self
        added = tuple((k, _IN, frozenset((v,))) for k, v in extra.items())
        return Selector(added + self.requirements)


NOTHING = Selector(nothing=True)


def _match_nothing(labels: Mapping[str, str]) -> bool:
    return False


def _match_everything(labels: Mapping[str, str]) -> bool:
    return True


def compile_selector(selector: objects.LabelSelector | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``: ``None`` -> :data:`NOTHING`; no requirement ->
    everything; ``matchLabels`` as equalities, then ``matchExpressions``. Raises
    :class:`SelectorError` with upstream's message
    (:func:`app.framework.validation.selector_error`) for a selector it refuses."""
    if selector is None:
        return NOTHING
    error = selector_error(selector)
    if error is not None:
        raise SelectorError(error)
    reqs: list[Requirement] = [(key, _IN, frozenset((value,))) for key, value in (selector.match_labels or {}).items()]
    reqs.extend(
        (expr.key or "", _OPERATORS[expr.operator or ""], frozenset(expr.values or ()))
        for expr in selector.match_expressions or ()
    )
    return Selector(tuple(reqs))


# -- constraints ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Constraint:
    """``topologySpreadConstraint`` (common.go): a constraint with its selector compiled and its
    defaults applied (``minDomains`` 1, ``nodeAffinityPolicy`` Honor, ``nodeTaintsPolicy`` Ignore)."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int
    honor_affinity: bool
    honor_taints: bool


def filter_constraints(
    constraints: Sequence[objects.TopologySpreadConstraint], pod_labels: Mapping[str, str], action: str
) -> list[Constraint]:
    """``filterTopologySpreadConstraints``: the constraints whose ``whenUnsatisfiable`` is
    ``action``, with the pod's values of ``matchLabelKeys`` added to the selector. Raises
    :class:`SelectorError` for a selector upstream refuses."""
    out: list[Constraint] = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = compile_selector(c.label_selector)
        if c.match_label_keys:
            extra = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
            if extra:
                selector = selector.with_labels(extra)
        out.append(
            Constraint(
                max_skew=c.max_skew or 0,
                topology_key=c.topology_key or "",
                selector=selector,
                min_domains=1 if c.min_domains is None else c.min_domains,
                honor_affinity=(c.node_affinity_policy or HONOR) == HONOR,
                honor_taints=(c.node_taints_policy or IGNORE) == HONOR,
            )
        )
    return out


def has_untolerated_schedule_taint(taints: Sequence[objects.Taint], tolerations: Sequence[objects.Toleration]) -> bool:
    """Whether a ``NoSchedule`` or ``NoExecute`` taint of the node is tolerated by none of
    ``tolerations`` (``FindMatchingUntoleratedTaint`` with ``DoNotScheduleTaintsFilterFunc``)."""
    return find_matching_untolerated_taint(taints, tolerations) is not None


def required_node_affinity(pod: PodInfo) -> Callable[[NodeInfo, Mapping[str, str]], bool] | None:
    """``nodeaffinity.GetRequiredNodeAffinity(pod).Match``
    (:func:`app.plugins.nodeaffinity.required_node_affinity`, compiled once per pod): the pod's
    ``nodeSelector`` (every label equal) and its required node affinity terms (one must match;
    a term with parse errors matches nothing); ``None`` when the pod has neither (every node
    matches)."""
    required = nodeaffinity.required_node_affinity(pod)
    if required.node_selector is None and required.terms is None:
        return None

    def match(node: NodeInfo, labels: Mapping[str, str]) -> bool:
        return required.matches(node.name, labels)

    return match


def count_matching(pods: Sequence[PodInfo], selector: Selector, match: LabelMatcher, namespace: str) -> int:
    """``countPodsMatchSelector``: pods of ``namespace`` not being deleted whose labels match
    (0 for an empty selector)."""
    if selector.empty:
        return 0
    count = 0
    for p in pods:
        if p.namespace == namespace and not p.deleting and match(p.labels):
            count += 1
    return count


def go_round(value: float) -> int:
    """Go's ``math.Round``: half away from zero."""
    whole = math.trunc(value)
    if abs(value - whole) >= 0.5:
        whole += 1 if value > 0 else -1
    return int(whole)


def topology_normalizing_weight(size: int) -> float:
    """``topologyNormalizingWeight``: ``log(size + 2)``."""
    return math.log(size + 2)


# -- cycle state ----------------------------------------------------------------------------------


class CriticalPaths:
    """``criticalPaths``: the two domains of a hard constraint with the fewest matching pods
    (``values[i]`` with ``counts[i]``); ``counts[0]`` is the global minimum. As upstream, only two
    are tracked: after an update the minimum can be a domain's old count (upstream's
    approximation, kept as is)."""

    __slots__ = ("counts", "values")

    def __init__(self) -> None:
        self.values = ["", ""]
        self.counts = [_MAX_INT32, _MAX_INT32]

    def update(self, value: str, count: int) -> None:
        """``criticalPaths.update``: record ``value``'s new ``count``."""
        values, counts = self.values, self.counts
        i = 0 if value == values[0] else 1 if value == values[1] else -1
        if i >= 0:
            counts[i] = count
            if counts[0] > counts[1]:
                values.reverse()
                counts.reverse()
        elif count < counts[0]:
            values[1], counts[1] = values[0], counts[0]
            values[0], counts[0] = value, count
        elif count < counts[1]:
            values[1], counts[1] = value, count

    @property
    def minimum(self) -> int:
        """The tracked global minimum (``paths[0].MatchNum``)."""
        return self.counts[0]

    def clone(self) -> CriticalPaths:
        """A copy."""
        copy = CriticalPaths()
        copy.values, copy.counts = list(self.values), list(self.counts)
        return copy


class PreFilterState:
    """What Filter reads (``preFilterState``): the hard constraints and, per constraint, the
    matching pods per topology value of its key (``TpPairToMatchNum``), its critical paths
    (``TpKeyToCriticalPaths``: the global minimum) and its number of domains
    (``TpKeyToDomainsNum``). :meth:`update_with_pod` keeps it true when a pod is added to or
    removed from a node (the PreFilter extensions); :meth:`clone` copies what that changes."""

    __slots__ = ("affinity", "constraints", "counts", "domains", "matchers", "namespace", "paths", "tolerations")

    def __init__(
        self,
        pod: PodInfo,
        constraints: Sequence[Constraint],
        counts: list[dict[str, int]],
    ) -> None:
        self.constraints = tuple(constraints)
        self.counts = counts
        self.domains = tuple(len(c) for c in counts)
        self.paths = []
        for domain_counts in counts:
            paths = CriticalPaths()
            for value, count in domain_counts.items():
                paths.update(value, count)
            self.paths.append(paths)
        self.matchers = tuple(c.selector.matcher() for c in constraints)
        self.namespace = pod.namespace
        self.affinity = required_node_affinity(pod)
        self.tolerations = pod.tolerations

    def min_match(self, i: int) -> int:
        """``minMatchNum`` of constraint ``i``: its tracked global minimum, 0 when it has fewer
        domains than ``minDomains``."""
        if self.domains[i] < self.constraints[i].min_domains:
            return 0
        return self.paths[i].minimum

    def clone(self) -> PreFilterState:
        """A copy whose counts and critical paths can change on their own."""
        copy = PreFilterState.__new__(PreFilterState)
        copy.constraints, copy.domains, copy.matchers = self.constraints, self.domains, self.matchers
        copy.namespace, copy.affinity, copy.tolerations = self.namespace, self.affinity, self.tolerations
        copy.counts = [dict(c) for c in self.counts]
        copy.paths = [p.clone() for p in self.paths]
        return copy

    def update_with_pod(self, other: PodInfo, node: NodeInfo, delta: int) -> None:
        """``updateWithPod``: count (``delta`` 1) or uncount (-1) ``other`` on ``node`` for each
        constraint whose selector matches it and whose inclusion policies the node passes, when
        ``other`` is in the incoming pod's namespace and the node has every topology key."""
        if other.namespace != self.namespace or node.node is None:
            return
        labels = node.labels
        if not all(c.topology_key in labels for c in self.constraints):
            return
        memo: list[bool | None] = [None, None]
        for i, c in enumerate(self.constraints):
            if not self.matchers[i](other.labels):
                continue
            if not _included(c, node, labels, self.affinity, self.tolerations, memo):
                continue
            value = labels[c.topology_key]
            count = self.counts[i].get(value, 0) + delta
            self.counts[i][value] = count
            self.paths[i].update(value, count)


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """What Score and NormalizeScore read (``preScoreState``): the soft constraints, the nodes
    ignored for missing a topology key, per constraint the matching pods per topology value
    (hostname constraints are counted at Score) and the normalizing weight."""

    constraints: tuple[Constraint, ...]
    matchers: tuple[LabelMatcher, ...]
    ignored: frozenset[str]
    counts: tuple[dict[str, int], ...]
    weights: tuple[float, ...]
    namespace: str


DefaultSelector = Callable[[PodInfo], "objects.LabelSelector | None"]


#: the cluster events that may make a pod this plugin rejected schedulable
_EVENTS = (
    ClusterEvent(POD, ActionType.ALL),
    ClusterEvent(NODE, ActionType.ADD | ActionType.DELETE | ActionType.UPDATE),
)


class PodTopologySpread(PreFilterStateExtensions):
    """PreFilter (with its extensions ``AddPod``/``RemovePod``) + Filter (``DoNotSchedule``),
    PreScore + Score + NormalizeScore (``ScheduleAnyway``); see the module doc.

    ``default_selector(pod)``: the selector of the Services/controllers selecting ``pod``
    (``helper.DefaultSelector``) for the default constraints; when not given, that of
    ``handle.cluster`` (:meth:`~app.framework.handle.ClusterHandle.default_selector`). Without
    either, or when it returns ``None`` or an empty selector, no default constraint applies.
    """

    name = NAME
    pre_filter_key = _PRE_FILTER

    def __init__(
        self,
        args: PodTopologySpreadArgs | None = None,
        handle: Handle | None = None,
        *,
        default_selector: DefaultSelector | None = None,
    ) -> None:
        args = args if args is not None else PodTopologySpreadArgs()
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        if self.system_defaulted:
            self.default_constraints: tuple[objects.TopologySpreadConstraint, ...] = SYSTEM_DEFAULT_CONSTRAINTS
        else:
            self.default_constraints = tuple(c.to_object() for c in args.default_constraints)
        if default_selector is None and handle is not None and handle.cluster is not None:
            default_selector = handle.cluster.default_selector
        self.default_selector = default_selector

    # -- constraints ------------------------------------------------------------------------------

    def constraints(self, pod: PodInfo, action: str) -> list[Constraint]:
        """The pod's constraints for ``action``, or the default ones when it has none
        (``buildDefaultConstraints``). Raises :class:`SelectorError`."""
        if pod.topology_spread_constraints:
            return filter_constraints(pod.topology_spread_constraints, pod.labels, action)
        defaults = filter_constraints(self.default_constraints, pod.labels, action)
        if not defaults or self.default_selector is None:
            return []
        given = self.default_selector(pod)
        try:
            selector = compile_selector(given) if given is not None else NOTHING
        except SelectorError:
            return []
        if selector.nothing or selector.empty:
            return []
        return [
            Constraint(c.max_skew, c.topology_key, selector, c.min_domains, c.honor_affinity, c.honor_taints)
            for c in defaults
        ]

    # -- filter -----------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Count the matching pods per topology domain of each ``DoNotSchedule`` constraint over
        every node of the cluster; ``Skip`` without such constraints."""
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError as exc:
            return None, Status.error(f"obtaining pod's hard topology spread constraints: {exc}")
        if not constraints:
            return None, SKIP
        snapshot = state.snapshot
        all_nodes = snapshot.list() if snapshot is not None else nodes
        state.write(_PRE_FILTER, PreFilterState(pod, constraints, _count_domains(pod, constraints, all_nodes)))
        return None, SUCCESS

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status]:
        """For each node: ``SUCCESS``; ``UnschedulableAndUnresolvable`` when it lacks a topology
        label; ``Unschedulable`` when ``matching pods in its domain + selfMatch - global minimum
        > maxSkew``; ``Error`` for an unknown node object, and when PreFilter did not run."""
        s: PreFilterState | None = state.get(_PRE_FILTER)
        if s is None:
            return [Status.error(f'reading "{_PRE_FILTER}" from cycleState: not found')] * len(nodes)
        pod_labels = pod.labels
        # a node passes a constraint when counts.get(value, 0) <= maxSkew + minimum - selfMatch
        checks = [
            (c.topology_key, c.max_skew + s.min_match(i) - (1 if s.matchers[i](pod_labels) else 0), s.counts[i])
            for i, c in enumerate(s.constraints)
        ]
        out: list[Status] = []
        append = out.append
        for node in nodes:
            if node.node is None:
                append(_NO_NODE)
                continue
            labels = node.labels
            verdict = SUCCESS
            for key, limit, counts in checks:
                value = labels.get(key)
                if value is None:
                    verdict = _LABEL_MISSING
                    break
                if counts.get(value, 0) > limit:
                    verdict = _SKEWED
                    break
            append(verdict)
        return out

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """:meth:`filter_nodes` for one node."""
        return self.filter_nodes(state, pod, (node,))[0]

    # -- score ------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        """``initPreScoreState`` over ``nodes`` (the filtered nodes) and the counts over every node
        of the cluster; ``Skip`` without ``ScheduleAnyway`` constraints or without nodes."""
        snapshot = state.snapshot
        all_nodes = snapshot.list() if snapshot is not None else nodes
        if not all_nodes:
            return SKIP
        try:
            constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        except SelectorError as exc:
            return Status.error(f"calculating preScoreState: obtaining pod's soft topology spread constraints: {exc}")
        if not constraints:
            return SKIP
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        keys = [c.topology_key for c in constraints]
        counts: list[dict[str, int]] = [{} for _ in constraints]
        ignored: set[str] = set()
        for node in nodes:
            labels = node.labels
            if require_all and not all(k in labels for k in keys):
                ignored.add(node.name)
                continue
            for i, key in enumerate(keys):
                if key == LABEL_HOSTNAME:
                    continue  # per-node counts are computed at Score
                counts[i].setdefault(labels.get(key, ""), 0)
        weights = tuple(
            topology_normalizing_weight(len(nodes) - len(ignored) if key == LABEL_HOSTNAME else len(counts[i]))
            for i, key in enumerate(keys)
        )

        matchers = tuple(c.selector.matcher() for c in constraints)
        affinity = required_node_affinity(pod)
        namespace = pod.namespace
        tolerations = pod.tolerations
        for node in all_nodes:
            if node.node is None:
                continue
            labels = node.labels
            if require_all and not all(k in labels for k in keys):
                continue
            memo: list[bool | None] = [None, None]
            for i, c in enumerate(constraints):
                domain_counts = counts[i]
                value = labels.get(c.topology_key, "")
                if value not in domain_counts:
                    continue
                if not _included(c, node, labels, affinity, tolerations, memo):
                    continue
                domain_counts[value] += count_matching(node.pods, c.selector, matchers[i], namespace)
        state.write(
            _PRE_SCORE,
            PreScoreState(tuple(constraints), matchers, frozenset(ignored), tuple(counts), weights, namespace),
        )
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        """The raw score: ``sum(count * weight + maxSkew - 1)`` over the constraints whose key the
        node has, rounded half away from zero; 0 for an ignored node. ``Error`` when PreScore did
        not run."""
        s: PreScoreState | None = state.get(_PRE_SCORE)
        if s is None:
            return 0, Status.error(f'reading "{_PRE_SCORE}" from cycleState: not found')
        if node.name in s.ignored:
            return 0, SUCCESS
        labels = node.labels
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                count = count_matching(node.pods, c.selector, s.matchers[i], s.namespace)
            else:
                count = s.counts[i].get(value, 0)
            total += count * s.weights[i] + (c.max_skew - 1)
        return go_round(total), SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        """``100 * (max + min - score) // max`` for the scored nodes (100 each when the highest is
        0), 0 for the ignored ones."""
        s: PreScoreState | None = state.get(_PRE_SCORE)
        if s is None:
            return SUCCESS
        ignored = s.ignored
        counted = [ns.score for ns in scores if ns.name not in ignored]
        lowest = min(counted, default=0)
        highest = max(0, max(counted, default=0))
        for ns in scores:
            if ns.name in ignored:
                ns.score = 0
            elif highest == 0:
                ns.score = MAX_NODE_SCORE
            else:
                ns.score = MAX_NODE_SCORE * (highest + lowest - ns.score) // highest
        return SUCCESS

    def events_to_register(self) -> Sequence[ClusterEvent]:
        """``EventsToRegister`` (v1.30, queueing hints off): Pod All, Node Add|Delete|Update."""
        return _EVENTS


def _included(
    c: Constraint,
    node: NodeInfo,
    labels: Mapping[str, str],
    affinity: Callable[[NodeInfo, Mapping[str, str]], bool] | None,
    tolerations: Sequence[objects.Toleration],
    memo: list[bool | None],
) -> bool:
    """Whether ``node`` counts for ``c`` by its inclusion policies (``matchNodeInclusionPolicies``,
    podtopologyspread/common.go): with ``nodeAffinityPolicy: Honor``, the pod's required node
    affinity (``affinity(node, labels)``, ``None`` when it has none); with ``nodeTaintsPolicy:
    Honor``, no untolerated NoSchedule/NoExecute taint. ``memo`` holds the node's two answers
    (``[affinity, taints]``, ``None`` until computed): each is computed once per node, whatever
    the number of constraints."""
    if c.honor_affinity and affinity is not None:
        if memo[0] is None:
            memo[0] = affinity(node, labels)
        if not memo[0]:
            return False
    if c.honor_taints:
        if memo[1] is None:
            memo[1] = not has_untolerated_schedule_taint(node.taints, tolerations)
        if not memo[1]:
            return False
    return True


def _count_domains(pod: PodInfo, constraints: Sequence[Constraint], nodes: Sequence[NodeInfo]) -> list[dict[str, int]]:
    """The PreFilter pass (``calPreFilterState``): per constraint, matching pods per topology
    value over ``nodes`` that have every topology key and pass the constraint's inclusion
    policies. One pass over the nodes; a selector shared by several constraints is counted once
    per node."""
    keys = [c.topology_key for c in constraints]
    counts: list[dict[str, int]] = [{} for _ in constraints]
    selectors: list[Selector] = []
    slot: list[int] = []
    for c in constraints:
        if c.selector in selectors:
            slot.append(selectors.index(c.selector))
        else:
            slot.append(len(selectors))
            selectors.append(c.selector)
    matchers = [s.matcher() for s in selectors]
    affinity = required_node_affinity(pod)
    namespace = pod.namespace
    tolerations = pod.tolerations
    indexed = list(enumerate(constraints))
    for node in nodes:
        if node.node is None:
            continue  # upstream: "Node not found", skipped
        labels = node.labels
        if not all(k in labels for k in keys):
            continue
        memo: list[bool | None] = [None, None]
        per_selector: list[int | None] = [None] * len(selectors)
        for i, c in indexed:
            if not _included(c, node, labels, affinity, tolerations, memo):
                continue
            j = slot[i]
            count = per_selector[j]
            if count is None:
                count = per_selector[j] = count_matching(node.pods, selectors[j], matchers[j], namespace)
            domain_counts = counts[i]
            value = labels[c.topology_key]
            domain_counts[value] = domain_counts.get(value, 0) + count
    return counts


def defaulting_applies(args: PodTopologySpreadArgs | None) -> bool:
    """Whether pods without constraints get default ones: ``defaultingType: System`` (the
    default), or ``List`` with ``defaultConstraints`` (upstream's ``New`` sets the Service and
    controller listers exactly when ``len(pl.defaultConstraints) != 0``)."""
    if args is None:
        return True
    return args.defaulting_type == SYSTEM_DEFAULTING or bool(args.default_constraints)


def _needs(args: PodTopologySpreadArgs | None, http_timeout: float) -> ClusterNeeds:
    """Watch what ``helper.DefaultSelector`` reads when the default constraints apply."""
    return ClusterNeeds(spread_selectors=defaulting_applies(args))


PLUGIN = PluginEntry(
    name=NAME,
    factory=PodTopologySpread,
    args=PodTopologySpreadArgs,
    needs_cluster=True,
    needs=_needs,
    summary="filter+score: kube-scheduler's PodTopologySpread (even spread of pods over topology domains)",
)

"""What PodTopologySpread's Filter and Score share (podtopologyspread/common.go): the compiled
constraints (``topologySpreadConstraint``: the selector compiled, ``minDomains``,
``nodeAffinityPolicy`` and ``nodeTaintsPolicy`` defaulted), the pod's constraints for an action
or the default ones (``buildDefaultConstraints``), the node inclusion policies
(``matchNodeInclusionPolicies``) and the counting of matching pods (``countPodsMatchSelector``).

Default constraints apply to a pod without ``topologySpreadConstraints``, with the label selector
of the Services, ReplicationControllers, ReplicaSets and StatefulSets selecting the pod
(``helper.DefaultSelector``), taken from a ``default_selector`` callable; without one, or when it
selects nothing, no default constraint applies, which is what upstream does for a pod nothing
selects.

Upstream keys its counts by topology key; API validation (and args validation) allows only one
constraint per ``(topologyKey, whenUnsatisfiable)``, so keying by constraint index, as here (and
as upstream does since v1.31), gives the same results.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from app.framework import objects
from app.framework.errors import SchedulerExtenderError
from app.framework.taints import find_matching_untolerated_taint
from app.framework.types import NodeInfo, PodInfo
from app.framework.validation import selector_error
from app.plugins import nodeaffinity

NAME = "PodTopologySpread"

#: ``v1.LabelHostname`` and ``v1.LabelTopologyZone``
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
#: ``v1.UnsatisfiableConstraintAction`` values
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
#: ``v1.NodeInclusionPolicy`` values
HONOR = "Honor"
IGNORE = "Ignore"


# -- selectors ------------------------------------------------------------------------------------

LabelMatcher = Callable[[Mapping[str, str]], bool]

_IN, _NOT_IN, _EXISTS, _DOES_NOT_EXIST = 0, 1, 2, 3
_OPERATORS = {"In": _IN, "NotIn": _NOT_IN, "Exists": _EXISTS, "DoesNotExist": _DOES_NOT_EXIST}
Requirement = tuple[str, int, frozenset[str]]


class SelectorError(SchedulerExtenderError, ValueError):
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


def match_node_inclusion_policies(
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


#: ``helper.DefaultSelector``: the selector of the Services and controllers selecting a pod
DefaultSelector = Callable[[PodInfo], "objects.LabelSelector | None"]


class SpreadConstraints:
    """The constraints a pod is judged by (``getConstraints``): its own, else the plugin's
    ``default_constraints`` (``system_defaulted``: upstream's system defaults, ``defaultingType:
    System``) with the selector ``default_selector(pod)`` gives. The base of the plugin's
    filtering and scoring halves."""

    def __init__(
        self,
        default_constraints: tuple[objects.TopologySpreadConstraint, ...],
        system_defaulted: bool,
        default_selector: DefaultSelector | None,
    ) -> None:
        self.default_constraints = default_constraints
        self.system_defaulted = system_defaulted
        self.default_selector = default_selector

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


__all__ = [
    "DO_NOT_SCHEDULE",
    "HONOR",
    "IGNORE",
    "LABEL_HOSTNAME",
    "LABEL_TOPOLOGY_ZONE",
    "NAME",
    "NOTHING",
    "SCHEDULE_ANYWAY",
    "Constraint",
    "DefaultSelector",
    "LabelMatcher",
    "Requirement",
    "Selector",
    "SelectorError",
    "SpreadConstraints",
    "compile_selector",
    "count_matching",
    "filter_constraints",
    "has_untolerated_schedule_taint",
    "match_node_inclusion_policies",
    "required_node_affinity",
]

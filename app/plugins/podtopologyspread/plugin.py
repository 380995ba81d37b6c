"""The PodTopologySpread plugin (podtopologyspread/plugin.go): its args (pkg/scheduler/apis/config
``types_pluginargs.go``: ``PodTopologySpreadArgs``; ``v1/defaults.go``: ``defaultingType``
defaults to ``System``; ``validation/validation_pluginargs.go``:
``ValidatePodTopologySpreadArgs``), upstream's system default constraints, the plugin class
(its Filter half in :mod:`~app.plugins.podtopologyspread.filtering`, its Score half in
:mod:`~app.plugins.podtopologyspread.scoring`) and its registration.

Default constraints: when the pod has no ``topologySpreadConstraints``, ``defaultConstraints``
(``defaultingType: List``) or upstream's ``systemDefaultConstraints`` (``System``: hostname
maxSkew 3, zone maxSkew 5, both ``ScheduleAnyway``) apply, with the label selector of the
Services, ReplicationControllers, ReplicaSets and StatefulSets selecting the pod
(``helper.DefaultSelector``). The plugin takes that selector from a ``default_selector`` callable:
given explicitly, else its handle's cluster state's
(:meth:`~app.framework.handle.ClusterHandle.default_selector`, which watches those four kinds
when the plugin's registration declares ``ClusterNeeds.spread_selectors``: whenever the
defaulting applies, as upstream's ``New`` starts their informers only then).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field, model_validator

from app.framework import SUCCESS, Code, PodInfo, SignFragment, Status, objects
from app.framework.args import PluginArgs
from app.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
from app.framework.handle import ClusterNeeds, Handle
from app.framework.registry import PluginEntry
from app.framework.validation import is_qualified_name
from app.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
    NAME,
    SCHEDULE_ANYWAY,
    DefaultSelector,
)
from app.plugins.podtopologyspread.filtering import Filtering
from app.plugins.podtopologyspread.hints import Hints
from app.plugins.podtopologyspread.scoring import Scoring

#: ``config.PodTopologySpreadConstraintsDefaulting`` values
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"


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


#: the cluster events that may make a pod this plugin rejected schedulable (v1.36.3
#: ``EventsToRegister``, queueing hints on: UpdatePodToleration included)
_POD_EVENT = ClusterEvent(
    POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.UPDATE_POD_TOLERATIONS | ActionType.DELETE
)
_NODE_EVENT = ClusterEvent(
    NODE, ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
)


class PodTopologySpread(Filtering, Scoring, Hints):
    """PreFilter (with its extensions ``AddPod``/``RemovePod``) + Filter (``DoNotSchedule``,
    :class:`Filtering`), PreScore + Score + NormalizeScore (``ScheduleAnyway``, :class:`Scoring`);
    see the package doc.

    ``default_selector(pod)``: the selector of the Services/controllers selecting ``pod``
    (``helper.DefaultSelector``) for the default constraints; when not given, that of
    ``handle.cluster`` (:meth:`~app.framework.handle.ClusterHandle.default_selector`). Without
    either, or when it returns ``None`` or an empty selector, no default constraint applies.
    """

    name = NAME

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (podtopologyspread/plugin.go, v1.36.3): unsignable with constraints of its
        own or default ones (``defaultingType: System`` included); else nothing."""
        if pod.topology_spread_constraints:
            return [], Status(Code.UNSCHEDULABLE, ("pods with topology constraints are not signable",))
        if self.default_constraints:
            return [], Status(Code.UNSCHEDULABLE, ("pods with default topology constraints are not signable",))
        return [], SUCCESS

    def __init__(
        self,
        args: PodTopologySpreadArgs | None = None,
        handle: Handle | None = None,
        *,
        default_selector: DefaultSelector | None = None,
    ) -> None:
        args = args if args is not None else PodTopologySpreadArgs()
        system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        if system_defaulted:
            defaults = SYSTEM_DEFAULT_CONSTRAINTS
        else:
            defaults = tuple(c.to_object() for c in args.default_constraints)
        if default_selector is None and handle is not None and handle.cluster is not None:
            default_selector = handle.cluster.default_selector
        super().__init__(defaults, system_defaulted, default_selector)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister`` (podtopologyspread/plugin.go, v1.36.3, queueing hints on): Pod
        Add|UpdatePodLabel|UpdatePodToleration|Delete with ``isSchedulableAfterPodChange``, Node
        Add|Delete|UpdateNodeLabel|UpdateNodeTaint with ``isSchedulableAfterNodeChange``
        (:class:`~app.plugins.podtopologyspread.hints.Hints`)."""
        return (
            ClusterEventWithHint(_POD_EVENT, self.is_schedulable_after_pod_change),
            ClusterEventWithHint(_NODE_EVENT, self.is_schedulable_after_node_change),
        )


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


__all__ = [
    "LIST_DEFAULTING",
    "PLUGIN",
    "SYSTEM_DEFAULTING",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "DefaultConstraint",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
    "defaulting_applies",
]

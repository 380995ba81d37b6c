"""PodTopologySpread: spread a pod's replicas evenly over topology domains (zones, hosts, ...).

Ports kube-scheduler v1.30's plugin, pkg/scheduler/framework/plugins/podtopologyspread/, file
for file, with the feature gates of v1.30 (MinDomains GA, NodeInclusionPolicy and MatchLabelKeys
on):

- :mod:`~app.plugins.podtopologyspread.common` (``common.go``): the compiled constraints, the
  default ones, the node inclusion policies, the counting of matching pods;
- :mod:`~app.plugins.podtopologyspread.filtering` (``filtering.go``): PreFilter (its AddPod and
  RemovePod extensions) and Filter, for the ``DoNotSchedule`` constraints;
- :mod:`~app.plugins.podtopologyspread.scoring` (``scoring.go``): PreScore, Score and
  NormalizeScore, for the ``ScheduleAnyway`` constraints;
- :mod:`~app.plugins.podtopologyspread.plugin` (``plugin.go``): the args and their validation,
  the system default constraints, the plugin class, its events and its registration
  (:data:`PLUGIN`);
- :mod:`~app.plugins.podtopologyspread.hints` (``plugin.go``, v1.36.3): the queueing hints.

The names of each module are importable from this package.
"""

from app.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    HONOR,
    IGNORE,
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
    NAME,
    NOTHING,
    SCHEDULE_ANYWAY,
    Constraint,
    DefaultSelector,
    LabelMatcher,
    Requirement,
    Selector,
    SelectorError,
    SpreadConstraints,
    compile_selector,
    count_matching,
    filter_constraints,
    has_untolerated_schedule_taint,
    match_node_inclusion_policies,
    required_node_affinity,
)
from app.plugins.podtopologyspread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    CriticalPaths,
    Filtering,
    PreFilterState,
)
from app.plugins.podtopologyspread.hints import (
    Hints,
    has_constraint_with_node_taints_policy_honor,
    involved_in_topology_spreading,
    node_labels_match_spread_constraints,
    pod_labels_match_spread_constraints,
)
from app.plugins.podtopologyspread.plugin import (
    LIST_DEFAULTING,
    PLUGIN,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULTING,
    DefaultConstraint,
    PodTopologySpread,
    PodTopologySpreadArgs,
    defaulting_applies,
)
from app.plugins.podtopologyspread.scoring import PreScoreState, Scoring, go_round, topology_normalizing_weight

__all__ = [
    "DO_NOT_SCHEDULE",
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "HONOR",
    "IGNORE",
    "LABEL_HOSTNAME",
    "LABEL_TOPOLOGY_ZONE",
    "LIST_DEFAULTING",
    "NAME",
    "NOTHING",
    "PLUGIN",
    "SCHEDULE_ANYWAY",
    "SYSTEM_DEFAULTING",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "Constraint",
    "CriticalPaths",
    "DefaultConstraint",
    "DefaultSelector",
    "Filtering",
    "Hints",
    "LabelMatcher",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
    "PreFilterState",
    "PreScoreState",
    "Requirement",
    "Scoring",
    "Selector",
    "SelectorError",
    "SpreadConstraints",
    "compile_selector",
    "count_matching",
    "defaulting_applies",
    "filter_constraints",
    "go_round",
    "has_constraint_with_node_taints_policy_honor",
    "has_untolerated_schedule_taint",
    "involved_in_topology_spreading",
    "match_node_inclusion_policies",
    "node_labels_match_spread_constraints",
    "pod_labels_match_spread_constraints",
    "required_node_affinity",
    "topology_normalizing_weight",
]

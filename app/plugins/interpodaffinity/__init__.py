"""InterPodAffinity: required and preferred pod affinity and anti-affinity, as kube-scheduler v1.30.

Ports kube-scheduler's plugin, pkg/scheduler/framework/plugins/interpodaffinity/, file for file:

- :mod:`~app.plugins.interpodaffinity.filtering` (``filtering.go``): PreFilter (the counts per
  topology pair, over every node of the cluster), its AddPod and RemovePod extensions, Filter;
- :mod:`~app.plugins.interpodaffinity.scoring` (``scoring.go``): PreScore, Score and
  NormalizeScore (the preferred terms' weights per topology pair);
- :mod:`~app.plugins.interpodaffinity.plugin` (``plugin.go``): the args and their validation, the
  plugin class, its events and its registration (:data:`PLUGIN`);
- :mod:`~app.plugins.interpodaffinity.hints` (``plugin.go``, v1.36.3): the queueing hints;
- :mod:`~app.plugins.interpodaffinity.common`: what both halves share, the pod's affinity terms
  (``AffinityTerm`` of pkg/scheduler/framework/types.go) and their namespaces.

The names of each module are importable from this package.
"""

from app.plugins.interpodaffinity.common import (
    NAME,
    NO_NODE_STATUS,
    IncomingTerm,
    NamespaceLookup,
    cluster_nodes,
    existing_term_matches,
    namespace_lookup,
    pod_parse_error,
    preferred_terms,
    required_terms,
    terms_error,
)
from app.plugins.interpodaffinity.filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    Filtering,
    Pair,
    PreFilterState,
)
from app.plugins.interpodaffinity.hints import is_schedulable_after_node_change, is_schedulable_after_pod_change
from app.plugins.interpodaffinity.plugin import (
    MAX_HARD_POD_AFFINITY_WEIGHT,
    MIN_HARD_POD_AFFINITY_WEIGHT,
    PLUGIN,
    InterPodAffinity,
    InterPodAffinityArgs,
)
from app.plugins.interpodaffinity.scoring import Scoring

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "MAX_HARD_POD_AFFINITY_WEIGHT",
    "MIN_HARD_POD_AFFINITY_WEIGHT",
    "NAME",
    "NO_NODE_STATUS",
    "PLUGIN",
    "Filtering",
    "IncomingTerm",
    "InterPodAffinity",
    "InterPodAffinityArgs",
    "NamespaceLookup",
    "Pair",
    "PreFilterState",
    "Scoring",
    "cluster_nodes",
    "existing_term_matches",
    "is_schedulable_after_node_change",
    "is_schedulable_after_pod_change",
    "namespace_lookup",
    "pod_parse_error",
    "preferred_terms",
    "required_terms",
    "terms_error",
]

"""The RBAC rules ``render`` grants."""

from __future__ import annotations

from typing import Any

from app.cluster.runtime import CACHE_RBAC, EVENTS_RBAC, REQUEUE_RBAC, needs_rbac
from app.config import Configuration
from app.deploy.objects import EXTENDER_USER, binding, cluster_role, meta
from app.framework.build import effective_points, plugin_args
from app.framework.registry import PolicyRule, Registry


def policy_rules(config: Configuration, registry: Registry, scheduling: bool = False) -> list[PolicyRule]:
    """The rules of :func:`extender_rules`, unmerged; ``scheduling``: of the standalone scheduler
    (whose profiles with ``schedulerName`` bind, whatever verbs they serve)."""
    if config.cluster is None:
        return []
    rules = list(CACHE_RBAC)
    if config.cluster.requeue_rejected_pods:
        rules.append(REQUEUE_RBAC)
    if config.diagnostics.events.enabled:
        rules.append(EVENTS_RBAC)
    for profile in config.profiles:
        points = effective_points(profile, registry)
        binds = "bind" in profile.extender.verbs or (scheduling and profile.scheduler_name)
        binders = set() if binds else {ref.name for ref in points["bind"]}  # they never run here
        names = {ref.name for refs in points.values() for ref in refs} - binders
        for name in sorted(names):
            entry = registry.get(name)
            if entry is None:
                continue
            rules += entry.rbac
            if entry.needs is not None:  # what the cache watches for it (a spread's selectors)
                needs = entry.needs(plugin_args(profile, entry), profile.extender.http_timeout_seconds)
                rules += needs_rbac(needs)
    return rules


def merge_rules(rules: list[PolicyRule]) -> list[dict[str, Any]]:
    """``rules`` as ClusterRole rules, one per group and resource, verbs merged in a stable order."""
    merged: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        for g in rule.api_groups:
            for r in rule.resources:
                merged.setdefault((g, r), set()).update(rule.verbs)
    order = ("get", "list", "watch", "create", "update", "patch", "delete")
    return [
        {
            "apiGroups": [g],
            "resources": [r],
            "verbs": sorted(v, key=lambda x: (order.index(x) if x in order else 99, x)),
        }
        for (g, r), v in sorted(merged.items())
    ]


def extender_rules(config: Configuration, registry: Registry) -> list[dict[str, Any]]:
    """RBAC rules the service needs: none without ``cluster:``; else list/watch of nodes and pods
    (the cache), ``pods`` patch (re-queue assistance, when on), ``events.k8s.io`` events create
    and patch (pod events, when on), plus each enabled plugin's declared
    :class:`~app.framework.registry.PolicyRule` (``DefaultBinder``: ``pods/binding`` create and
    ``pods`` get) and the list/watch of what the cache watches for its ``needs``
    (:func:`~app.cluster.runtime.needs_rbac`: PodTopologySpread's default constraints read
    Services, ReplicationControllers, ReplicaSets and StatefulSets), merged by group and resource."""
    return merge_rules(policy_rules(config, registry))


def static_pod_rbac(config: Configuration, registry: Registry) -> list[dict[str, Any]]:
    """ClusterRole ``scheduler-extender`` and its binding to :data:`EXTENDER_USER` (empty without
    ``cluster:``); with ``cluster.leaderElection``, a Role to ``get`` the one Lease it follows (a
    follower only reads it) and its RoleBinding. (The metrics listener's ``system:auth-delegator``
    binding is in ``scheduler-extender-metrics.yaml``: :func:`metrics_objects`.)"""
    rules = extender_rules(config, registry)
    if not rules:
        return []
    user = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": EXTENDER_USER}
    out = [
        cluster_role("scheduler-extender", rules),
        binding("ClusterRoleBinding", "scheduler-extender", "ClusterRole", "scheduler-extender", user),
    ]
    election = config.cluster.leader_election if config.cluster is not None else None
    if election is not None:
        ns = election.lease_namespace
        out += [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": meta("scheduler-extender-lease", ns),
                "rules": [
                    {
                        "apiGroups": ["coordination.k8s.io"],
                        "resources": ["leases"],
                        "resourceNames": [election.lease_name],
                        "verbs": ["get"],
                    }
                ],
            },
            binding("RoleBinding", "scheduler-extender-lease", "Role", "scheduler-extender-lease", user, ns),
        ]
    return out


#: What the standalone scheduler needs beyond the extender's rules (kube-scheduler's own verbs):
#: bind, write PodScheduled, post events, and elect a leader on its Lease.
SCHEDULER_RBAC = (
    PolicyRule(("",), ("pods",), ("get", "list", "watch")),
    PolicyRule(("",), ("pods/binding",), ("create",)),
    PolicyRule(("",), ("pods/status",), ("patch",)),
    PolicyRule(("events.k8s.io",), ("events",), ("create", "patch")),
    PolicyRule(("coordination.k8s.io",), ("leases",), ("get", "create", "update")),
)

"""The RBAC ``render`` grants: exactly the API calls the deployed process makes with its
configuration, each rule with the reason it is there (a comment above it in the rendered file),
following kube-scheduler's own roles (``system:kube-scheduler`` and ``system:volume-scheduler``,
plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go, v1.30): Lease ``get``/``update``
limited by ``resourceNames`` to the one Lease, in a Role of its namespace, and ``create`` (which
``resourceNames`` cannot limit) there only; ``pods/status`` ``patch``; ``pods`` ``patch`` only for
re-queue assistance, and only where kube-scheduler calls the extender's ``filter`` verb.

Plugins have no API client (they import only :mod:`app.framework`): every call is the runtime's,
on their behalf, so the rules follow from the configuration, table by table:

- :data:`SERVICE_GRANTS`: what the service itself does in a mode (the cluster state's list and
  watch of nodes and pods, re-queue assistance, pod events, the standalone scheduler's pod
  conditions);
- :data:`NEEDS_GRANTS`: what the cluster state lists and watches for a plugin's declared
  :class:`~app.framework.handle.ClusterNeeds` (PodGroups, PodDisruptionBudgets, the objects that
  select pods, volumes, CSIStorageCapacities, the DRA objects), for every plugin a profile enables;
- each plugin's declared ``rbac`` (:class:`~app.framework.registry.PolicyRule`: ``DefaultBinder``'s
  Bindings, ``DefaultPreemption``'s deletions), for a plugin that runs where the target deploys it
  (:func:`running_points`), less its rules on a kind :data:`NEEDS_GRANTS` reads (those reads are
  the cluster state's, granted by the need);
- :func:`lease_grants`: the Leases, per namespace (a Role each).

The metrics listener's TokenReviews and SubjectAccessReviews are the built-in
``system:auth-delegator``'s, bound in the metrics files (:mod:`app.deploy.metrics`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from app.cluster.podgroups import GROUP as PODGROUPS_GROUP
from app.cluster.podgroups import PLURAL as PODGROUPS
from app.config import Configuration
from app.deploy.objects import binding, meta
from app.framework.build import effective_points, plugin_args
from app.framework.handle import ClusterNeeds
from app.framework.profile import Profile
from app.framework.registry import PolicyRule, Registry

#: The order verbs are written in (kube-scheduler's bootstrap roles' order: reads, then writes).
VERB_ORDER = ("get", "list", "watch", "create", "update", "patch", "delete")
READ = ("get", "list", "watch")
LIST_WATCH = ("list", "watch")


@dataclass(frozen=True)
class Grant:
    """One RBAC rule ``render`` grants and why (the comment written above it).

    ``api_groups`` (``""``: the core group), ``resources`` (``pods/status`` for a subresource),
    ``verbs``, ``resource_names`` (empty: every object). ``namespace``: ``None`` for a
    cluster-wide rule (the ClusterRole), else the namespace of the Role that holds it."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    why: str
    resource_names: tuple[str, ...] = ()
    namespace: str | None = None


def _grant(rule: PolicyRule, why: str) -> Grant:
    return Grant(rule.api_groups, rule.resources, rule.verbs, why)


@dataclass(frozen=True)
class Mode:
    """What the deployed process runs. ``schedule``: ``python -m app schedule`` (the standalone
    scheduler schedules the pods of its profiles' ``schedulerName``); else ``serve``.
    ``served``: kube-scheduler calls the extender's verbs (the control-plane and second-scheduler
    targets; not the standalone Deployment, whose verb listener stays on the pod's loopback)."""

    schedule: bool
    served: bool


#: ``serve`` beside kube-scheduler (the static pods, the second scheduler's sidecar).
EXTENDER = Mode(schedule=False, served=True)
#: ``schedule``: the standalone scheduler.
STANDALONE = Mode(schedule=True, served=False)

#: The extension points a verb of the extender runs (``serve``): Filter with PreFilter, Score with
#: PreScore and NormalizeScore, the preemption plugins, the binding cycle.
VERB_POINTS = {
    "filter": ("filter",),
    "prioritize": ("score",),
    "preempt": ("preemption",),
    "bind": ("reserve", "permit", "bind"),
}


def running_points(profile: Profile, mode: Mode) -> frozenset[str] | None:
    """The extension points of ``profile`` that run in ``mode`` (``None``: every point): a profile
    with ``schedulerName`` runs all of them in the standalone scheduler; a profile served to
    kube-scheduler runs the points of its verbs (:data:`VERB_POINTS`); otherwise none."""
    if mode.schedule and profile.scheduler_name:
        return None
    if not mode.served:
        return frozenset()
    return frozenset(point for verb in profile.extender.verbs for point in VERB_POINTS[verb])


def _serves_filter(config: Configuration, mode: Mode) -> bool:
    return mode.served and any("filter" in p.extender.verbs for p in config.profiles)


#: What the service itself does, by feature: ``(applies(config, mode), rules, why)``. The calls
#: are :class:`~app.kube.client.KubeClient`'s (its paths name group and resource).
SERVICE_GRANTS: tuple[tuple[Callable[[Configuration, Mode], bool], tuple[PolicyRule, ...], str], ...] = (
    (
        lambda config, mode: config.cluster is not None,
        (PolicyRule(("",), ("nodes",), LIST_WATCH), PolicyRule(("",), ("pods",), LIST_WATCH)),
        "the cluster state: list and watch nodes and pods (cluster:)",
    ),
    (
        lambda config, mode: (
            config.cluster is not None and config.cluster.requeue_rejected_pods and _serves_filter(config, mode)
        ),
        (PolicyRule(("",), ("pods",), ("patch",)),),
        "re-queue assistance (cluster.requeueRejectedPods): annotate the pods the filter verb rejected on every "
        "node, so that kube-scheduler retries them when room is freed",
    ),
    (
        lambda config, mode: config.cluster is not None and config.diagnostics.events.enabled,
        (PolicyRule(("events.k8s.io",), ("events",), ("create", "patch")),),
        "pod events and their series (diagnostics.events)",
    ),
    (
        lambda config, mode: mode.schedule and any(p.scheduler_name for p in config.profiles),
        (PolicyRule(("",), ("pods/status",), ("patch",)),),
        "the standalone scheduler: a pod's PodScheduled condition and status.nominatedNodeName",
    ),
)

#: What the cluster state lists and watches for a declared need (:class:`ClusterNeeds` field),
#: with upstream's verbs where kube-scheduler's roles grant more for the same kinds (volumes:
#: ``system:volume-scheduler``, whose PreBind updates claims and volumes).
NEEDS_GRANTS: tuple[tuple[str, tuple[PolicyRule, ...], str], ...] = (
    ("pod_groups", (PolicyRule((PODGROUPS_GROUP,), (PODGROUPS,), LIST_WATCH),), "PodGroups"),
    (
        "pod_disruption_budgets",
        (PolicyRule(("policy",), ("poddisruptionbudgets",), LIST_WATCH),),
        "PodDisruptionBudgets",
    ),
    (
        "spread_selectors",
        (
            PolicyRule(("",), ("services", "replicationcontrollers"), LIST_WATCH),
            PolicyRule(("apps",), ("replicasets", "statefulsets"), LIST_WATCH),
        ),
        "the objects that select pods (default topology spread constraints)",
    ),
    (
        "volumes",
        (
            PolicyRule(("",), ("persistentvolumes", "persistentvolumeclaims"), (*READ, "update", "patch")),
            PolicyRule(("storage.k8s.io",), ("storageclasses", "csinodes", "csidrivers", "volumeattachments"), READ),
        ),
        "volumes (PersistentVolumes and their claims, StorageClasses, CSINodes, CSIDrivers, VolumeAttachments)",
    ),
    (
        "dynamic_resources",
        (
            PolicyRule(("resource.k8s.io",), ("resourceclaims", "resourceclaims/status"), (*READ, "update", "patch")),
            PolicyRule(("resource.k8s.io",), ("resourceslices", "deviceclasses"), READ),
        ),
        "Dynamic Resource Allocation (ResourceClaims and their status, ResourceSlices, DeviceClasses; "
        "system:kube-scheduler's verbs of v1.36)",
    ),
    (
        "namespaces",
        (PolicyRule(("",), ("namespaces",), LIST_WATCH),),
        "namespaces (their labels: InterPodAffinity's namespaceSelector)",
    ),
    (
        "csi_storage_capacities",
        (PolicyRule(("storage.k8s.io",), ("csistoragecapacities",), READ),),
        "CSIStorageCapacities",
    ),
)

#: The kinds :data:`NEEDS_GRANTS` reads: a plugin's own rules on them are not granted.
WATCHED_KINDS = frozenset(
    (g, r) for _, rules, _ in NEEDS_GRANTS for rule in rules for g in rule.api_groups for r in rule.resources
)


def needs_grants(needs: ClusterNeeds, plugin: str) -> list[Grant]:
    """The rules of what the cluster state reads for ``plugin``'s ``needs`` (:data:`NEEDS_GRANTS`)."""
    return [
        _grant(rule, f"{plugin}: {what} ({field}), read by the cluster state")
        for field, rules, what in NEEDS_GRANTS
        if getattr(needs, field)
        for rule in rules
    ]


def _plugin_grants(config: Configuration, registry: Registry, mode: Mode) -> list[Grant]:
    out: list[Grant] = []
    for profile in config.profiles:
        running = running_points(profile, mode)
        points = effective_points(profile, registry)
        runs = {ref.name for point, refs in points.items() if running is None or point in running for ref in refs}
        enabled = {ref.name for refs in points.values() for ref in refs}
        for name in sorted(enabled):
            entry = registry.get(name)
            if entry is None:
                continue
            if entry.needs is not None:
                needs = entry.needs(plugin_args(profile, entry), profile.extender.http_timeout_seconds)
                out += needs_grants(needs, name)
            if name in runs:
                for rule in entry.rbac:
                    kinds = [(g, r) for g in rule.api_groups for r in rule.resources]
                    if not any(kind in WATCHED_KINDS for kind in kinds):
                        out.append(_grant(rule, f"{name} (profile {profile.name})"))
    return out


def cluster_grants(config: Configuration, registry: Registry, mode: Mode) -> list[Grant]:
    """The cluster-wide rules of ``config`` deployed in ``mode`` (none without ``cluster:``)."""
    if config.cluster is None:
        return []
    service = [_grant(rule, why) for applies, rules, why in SERVICE_GRANTS if applies(config, mode) for rule in rules]
    return service + _plugin_grants(config, registry, mode)


def lease_grants(config: Configuration, mode: Mode) -> list[Grant]:
    """The Lease rules of ``config`` deployed in ``mode``, each with its namespace: a follower of
    kube-scheduler's Lease (``cluster.leaderElection``, ``serve``) reads that one Lease; a
    standalone scheduler electing a leader (``scheduling.leaderElect``) reads and updates the Lease
    of each ``schedulerName`` and may create Leases in their namespace (``create`` cannot be
    limited by name), as ``system:kube-scheduler`` does for kube-scheduler's."""
    out: list[Grant] = []
    lease = (("coordination.k8s.io",), ("leases",))
    election = config.cluster.leader_election if config.cluster is not None else None
    if election is not None and not mode.schedule:
        why = "follow kube-scheduler's Lease: bind only while this node's kube-scheduler leads (cluster.leaderElection)"
        out.append(Grant(*lease, ("get",), why, (election.lease_name,), election.lease_namespace))
    names = tuple(dict.fromkeys(p.scheduler_name for p in config.profiles if p.scheduler_name))
    scheduling = config.scheduling
    if mode.schedule and names and scheduling.leader_elect and config.cluster is not None:
        ns = scheduling.lease_namespace
        why = "elect a leader among the replicas (scheduling.leaderElect)"
        out.append(Grant(*lease, ("create",), f"{why}: create the Lease when it does not exist yet", (), ns))
        out.append(Grant(*lease, ("get", "update"), f"{why}: the Lease of each schedulerName", names, ns))
    return out


def merge(grants: Iterable[Grant]) -> list[tuple[dict[str, Any], list[str]]]:
    """``grants`` as RBAC rules with their reasons (``"<verbs>: <why>"``): one rule per API group,
    resource and names, the verbs merged in :data:`VERB_ORDER` and the reasons kept in first-seen
    order; rules sorted by group, resource, names."""
    merged: dict[tuple[str, str, tuple[str, ...]], tuple[set[str], dict[str, None]]] = {}
    for g in grants:
        for group in g.api_groups:
            for resource in g.resources:
                verbs, whys = merged.setdefault((group, resource, g.resource_names), (set(), {}))
                verbs.update(g.verbs)
                whys.setdefault(f"{', '.join(_ordered(g.verbs))}: {g.why}")
    out = []
    for (group, resource, names), (verbs, whys) in sorted(merged.items()):
        rule: dict[str, Any] = {"apiGroups": [group], "resources": [resource]}
        if names:
            rule["resourceNames"] = list(names)
        rule["verbs"] = _ordered(verbs)
        out.append((rule, list(whys)))
    return out


def _ordered(verbs: Iterable[str]) -> list[str]:
    return sorted(set(verbs), key=lambda v: (VERB_ORDER.index(v) if v in VERB_ORDER else 99, v))


class Rules(list[dict[str, Any]]):
    """A role's ``rules`` with each rule's reasons (``whys``, parallel to the rules), which
    :func:`~app.deploy.objects.dump` writes as a comment above each rule."""

    def __init__(self, merged: list[tuple[dict[str, Any], list[str]]]) -> None:
        super().__init__(rule for rule, _ in merged)
        self.whys = [whys for _, whys in merged]


def role(kind: str, name: str, grants: Iterable[Grant], namespace: str | None = None) -> dict[str, Any]:
    """A ``ClusterRole`` (``namespace`` ``None``) or ``Role`` named ``name`` with ``grants``
    merged (:func:`merge`), their reasons as comments."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta(name, namespace),
        "rules": Rules(merge(grants)),
    }


def roles(
    config: Configuration,
    registry: Registry,
    mode: Mode,
    name: str,
    subject: dict[str, Any],
    *,
    beyond: Iterable[tuple[str, str, str]] = (),
    leases: bool = True,
) -> list[dict[str, Any]]:
    """The ClusterRole ``name`` and its ClusterRoleBinding to ``subject`` (when there are cluster
    rules), and per Lease namespace a Role ``name-leases`` and its RoleBinding (when there are
    Lease rules; ``leases=False``: none, the subject holds them already). ``beyond``: ``(group,
    resource, verb)`` the subject holds already (another role bound to it), left out of the
    ClusterRole."""
    held = set(beyond)
    grants = [
        Grant(g.api_groups, g.resources, tuple(v for v in g.verbs if not _held(held, g, v)), g.why)
        for g in cluster_grants(config, registry, mode)
    ]
    grants = [g for g in grants if g.verbs]
    out: list[dict[str, Any]] = []
    if grants:
        out += [role("ClusterRole", name, grants), binding("ClusterRoleBinding", name, "ClusterRole", name, subject)]
    by_ns: dict[str, list[Grant]] = {}
    for g in lease_grants(config, mode) if leases else []:
        by_ns.setdefault(g.namespace or "", []).append(g)
    for ns, grants_in_ns in sorted(by_ns.items()):
        out += [
            role("Role", f"{name}-leases", grants_in_ns, ns),
            binding("RoleBinding", f"{name}-leases", "Role", f"{name}-leases", subject, ns),
        ]
    return out


def _held(held: set[tuple[str, str, str]], grant: Grant, verb: str) -> bool:
    return all((g, r, verb) in held for g in grant.api_groups for r in grant.resources)


#: kube-scheduler's own rules as the API server bootstraps them (``system:kube-scheduler`` and
#: ``system:volume-scheduler``, v1.30 default feature gates:
#: plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/cluster-roles.yaml, with the
#: VolumeAttachments v1.32 added: kubernetes#127757), less the Lease
#: rules (named ``kube-scheduler``): ``(group, resource, verb)``. What the second scheduler's
#: kube-scheduler holds already, so its sidecar's ClusterRole leaves it out.
UPSTREAM_SCHEDULER_RULES: frozenset[tuple[str, str, str]] = frozenset(
    (g, r, v)
    for groups, resources, verbs in (
        (("", "events.k8s.io"), ("events",), ("create", "patch", "update")),
        (("",), ("nodes",), READ),
        (("",), ("pods",), ("delete", *READ)),
        (("",), ("bindings", "pods/binding"), ("create",)),
        (("",), ("pods/status",), ("patch", "update")),
        (("",), ("replicationcontrollers", "services"), READ),
        (("apps", "extensions"), ("replicasets",), READ),
        (("apps",), ("statefulsets",), READ),
        (("policy",), ("poddisruptionbudgets",), READ),
        (("",), ("persistentvolumeclaims", "persistentvolumes"), (*READ, "patch", "update")),
        (("authentication.k8s.io",), ("tokenreviews",), ("create",)),
        (("authorization.k8s.io",), ("subjectaccessreviews",), ("create",)),
        (
            ("storage.k8s.io",),
            ("csinodes", "csidrivers", "csistoragecapacities", "storageclasses", "volumeattachments"),
            READ,
        ),
        (("",), ("namespaces",), READ),
    )
    for g in groups
    for r in resources
    for v in verbs
)


# -- the shadow scheduler (render --target shadow): reads only -------------------------------------

#: ``python -m app shadow``: no verb served to kube-scheduler, nothing scheduled
SHADOW = Mode(schedule=False, served=False)


def shadow_grants(config: Configuration, registry: Registry) -> list[Grant]:
    """The shadow scheduler's rules (:mod:`app.shadow`): what its cluster state lists and watches
    for ``config`` (nodes, pods, the kinds the plugins' needs name), each rule cut down to ``get``,
    ``list`` and ``watch``: no Binding, no ``pods/status``, no Event, no Lease, no update of a
    volume or claim (its client refuses every other call: :class:`~app.shadow.readonly.ReadOnlyClient`)."""
    out = []
    for g in cluster_grants(config, registry, SHADOW):
        verbs = tuple(v for v in g.verbs if v in READ)
        if verbs:
            out.append(Grant(g.api_groups, g.resources, verbs, g.why, g.resource_names, g.namespace))
    return out


def shadow_roles(config: Configuration, registry: Registry, name: str, subject: dict[str, Any]) -> list[dict[str, Any]]:
    """The shadow scheduler's ClusterRole ``name`` (:func:`shadow_grants`) and its
    ClusterRoleBinding to ``subject``; no Role (it holds no Lease)."""
    return [
        role("ClusterRole", name, shadow_grants(config, registry)),
        binding("ClusterRoleBinding", name, "ClusterRole", name, subject),
    ]

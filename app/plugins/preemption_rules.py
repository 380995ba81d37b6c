"""PreemptionRules: the extender's say over kube-scheduler's preemption candidates.

kube-scheduler's DefaultPreemption proposes, per candidate node, the lower-priority pods it would
evict (``victims``, most important first) and calls the ``preempt`` verb
(pkg/scheduler/framework/preemption/preemption.go ``callExtenders``). This plugin:

- never lets a **protected** pod become a victim: a pod matching ``protect`` (a label or an
  annotation, ``key`` or ``key=value``, a namespace, or a priority class name) makes its candidate
  node **dropped**, not returned with a shortened victim list - evicting the others would not
  make room the in-tree dry run counted on, and an emptied list is an error upstream;
- drops a node when a victim cannot be identified (a cache-mode UID the cluster state does not
  know) unless ``allowUnknownVictims``;
- with ``fewestPDBViolations`` (default true), keeps only the candidates with the fewest
  ``NumPDBViolations``, which is also what kube-scheduler prefers first when it picks one
  (``pickOneNodeForPreemption``);
- never reorders victims, so upstream's priority order (and its choice of the node whose highest
  victim priority is lowest) is kept.

Pool-aware (``NodeResourcePool``) and gang-aware (``Coscheduling``) rules live in those plugins'
own preemption step; enable them at ``preemption`` too.
"""

from __future__ import annotations

from pydantic import Field

from app.framework.args import PluginArgs
from app.framework.handle import ClusterNeeds, Handle
from app.framework.registry import PluginEntry
from app.framework.status import SUCCESS, Status
from app.framework.types import CycleState, PodInfo, Victims

NAME = "PreemptionRules"


class ProtectedPods(PluginArgs):
    """Pods that must never be evicted: any match protects. ``labels``/``annotations`` entries
    are ``key`` (present) or ``key=value``."""

    labels: list[str] = Field(default_factory=list)
    annotations: list[str] = Field(default_factory=list)
    namespaces: list[str] = Field(default_factory=list)
    priority_class_names: list[str] = Field(default_factory=list)


class PreemptionRulesArgs(PluginArgs):
    """See the module doc."""

    protect: ProtectedPods = Field(default_factory=ProtectedPods)
    fewest_pdb_violations: bool = Field(default=True, alias="fewestPDBViolations")
    allow_unknown_victims: bool = False


def _pairs(specs: list[str]) -> list[tuple[str, str | None]]:
    out = []
    for spec in specs:
        key, eq, value = spec.partition("=")
        out.append((key, value if eq else None))
    return out


class PreemptionRules:
    """A preemption plugin (see the module doc)."""

    name = NAME

    def __init__(self, args: PreemptionRulesArgs, handle: Handle) -> None:
        p = args.protect
        self.labels = _pairs(p.labels)
        self.annotations = _pairs(p.annotations)
        self.namespaces = frozenset(p.namespaces)
        self.priority_classes = frozenset(p.priority_class_names)
        self.fewest_pdb = args.fewest_pdb_violations
        self.allow_unknown = args.allow_unknown_victims

    def protection(self, pod: PodInfo) -> str | None:
        """Why ``pod`` may not be evicted, or ``None``."""
        if not pod.name and not pod.namespace:
            return None if self.allow_unknown else f"victim {pod.uid} is unknown to the extender"
        if pod.namespace in self.namespaces:
            return f"namespace {pod.namespace} is protected"
        if pod.priority_class_name and pod.priority_class_name in self.priority_classes:
            return f"priority class {pod.priority_class_name} is protected"
        for key, value in self.labels:
            found = pod.labels.get(key)
            if found is not None and (value is None or found == value):
                return f"label {key} is protected"
        for key, value in self.annotations:
            found = pod.annotations.get(key)
            if found is not None and (value is None or found == value):
                return f"annotation {key} is protected"
        return None

    def process_preemption(
        self, state: CycleState, pod: PodInfo, candidates: dict[str, Victims]
    ) -> tuple[dict[str, Victims], Status]:
        """Drop nodes with a protected (or unknown) victim, then keep the fewest-PDB-violation ones."""
        kept: dict[str, Victims] = {}
        for node, victims in candidates.items():
            reason = next((r for r in map(self.protection, victims.pods) if r), None)
            if reason is None:
                kept[node] = victims
        if self.fewest_pdb and kept:
            fewest = min(v.num_pdb_violations for v in kept.values())
            kept = {n: v for n, v in kept.items() if v.num_pdb_violations == fewest}
        return kept, SUCCESS


def needs(args: PreemptionRulesArgs, http_timeout: float) -> ClusterNeeds:
    """The protected annotation keys: cluster-state pod records (the victims of a cache-mode
    request) must keep them."""
    return ClusterNeeds(pod_annotations=tuple(key for key, _ in _pairs(args.protect.annotations)))


PLUGIN = PluginEntry(
    name=NAME,
    factory=PreemptionRules,
    needs=needs,
    args=PreemptionRulesArgs,
    summary="preemption: protected pods never become victims (node dropped); fewest PDB violations kept",
)

"""The InterPodAffinity plugin (interpodaffinity/plugin.go): its args and their validation
(pkg/scheduler/apis/config ``InterPodAffinityArgs``, ``v1/defaults.go``,
``validation/validation_pluginargs.go``), the plugin class (its Filter half in
:mod:`~app.plugins.interpodaffinity.filtering`, its Score half in
:mod:`~app.plugins.interpodaffinity.scoring`) and its registration. Needs cluster state: the
nodes' pods, and the namespaces' labels for ``namespaceSelector``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field, field_validator

from app.framework import SUCCESS, Code, PodInfo, SignFragment, Status, signers
from app.framework.args import PluginArgs
from app.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
from app.framework.handle import ClusterNeeds, Handle
from app.framework.registry import PluginEntry
from app.plugins.interpodaffinity.common import NAME
from app.plugins.interpodaffinity.filtering import Filtering
from app.plugins.interpodaffinity.hints import is_schedulable_after_node_change, is_schedulable_after_pod_change
from app.plugins.interpodaffinity.scoring import Scoring

#: the bounds of ``hardPodAffinityWeight`` (validation_pluginargs.go ``validateHardPodAffinityWeight``)
MIN_HARD_POD_AFFINITY_WEIGHT, MAX_HARD_POD_AFFINITY_WEIGHT = 0, 100


class InterPodAffinityArgs(PluginArgs):
    """``InterPodAffinityArgs``: ``hardPodAffinityWeight`` (the score an existing pod's required
    affinity term matching the incoming pod adds, 0..100, default 1) and
    ``ignorePreferredTermsOfExistingPods`` (default ``false``: when ``true``, PreScore skips a pod
    that has no preferred term of its own)."""

    hard_pod_affinity_weight: int = Field(default=1, strict=True)
    ignore_preferred_terms_of_existing_pods: bool = False

    @field_validator("hard_pod_affinity_weight")
    @classmethod
    def _in_range(cls, weight: int) -> int:
        if not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
            raise ValueError(f"not in valid range [{MIN_HARD_POD_AFFINITY_WEIGHT}-{MAX_HARD_POD_AFFINITY_WEIGHT}]")
        return weight


#: the cluster events that may make a pod this plugin rejected schedulable, with their hints
#: (v1.36.3 ``EventsToRegister``, queueing hints on: no UpdateNodeTaint)
_EVENTS = (
    ClusterEventWithHint(
        ClusterEvent(POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
        is_schedulable_after_pod_change,
    ),
    ClusterEventWithHint(
        ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), is_schedulable_after_node_change
    ),
)


class InterPodAffinity(Filtering, Scoring):
    """PreFilter (with its extensions ``AddPod``/``RemovePod``) + Filter (:class:`Filtering`),
    PreScore + Score + NormalizeScore (:class:`Scoring`); see the package doc."""

    name = NAME

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (interpodaffinity/plugin.go, v1.36.3): unsignable with a pod (anti-)affinity;
        else the pod's labels, or nothing when ``ignorePreferredTermsOfExistingPods``."""
        affinity = pod.affinity
        if affinity is not None and (affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None):
            return [], Status(Code.UNSCHEDULABLE, ("pods with InterPodAffinity are not signable",))
        if self.ignore_preferred_terms_of_existing_pods:
            return [], SUCCESS
        return [(signers.LABELS, dict(pod.labels))], SUCCESS

    def __init__(self, args: InterPodAffinityArgs, handle: Handle) -> None:
        self.hard_pod_affinity_weight = args.hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = args.ignore_preferred_terms_of_existing_pods

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister`` (interpodaffinity/plugin.go, v1.36.3, queueing hints on): Pod
        Add|UpdatePodLabel|Delete with ``isSchedulableAfterPodChange``, Node Add|UpdateNodeLabel
        with ``isSchedulableAfterNodeChange`` (:mod:`~app.plugins.interpodaffinity.hints`)."""
        return _EVENTS


PLUGIN = PluginEntry(
    name=NAME,
    factory=InterPodAffinity,
    args=InterPodAffinityArgs,
    needs_cluster=True,
    # the namespaces' labels, for namespaceSelector (listed and watched as kube-scheduler's informer)
    needs=lambda args, http_timeout: ClusterNeeds(namespaces=True),
    summary="filter+score: kube-scheduler's InterPodAffinity (pod affinity and anti-affinity) on the cluster state",
)


__all__ = [
    "MAX_HARD_POD_AFFINITY_WEIGHT",
    "MIN_HARD_POD_AFFINITY_WEIGHT",
    "PLUGIN",
    "InterPodAffinity",
    "InterPodAffinityArgs",
]

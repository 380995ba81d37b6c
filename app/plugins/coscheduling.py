"""Coscheduling: gang scheduling through an extender (a pod group is placed together or not at all).

Follows the Coscheduling plugin of kubernetes-sigs/scheduler-plugins (``pkg/coscheduling``):

- Pods join a group with the label ``scheduling.x-k8s.io/pod-group: <name>`` (``podGroupLabel``);
  the group is ``<pod namespace>/<name>``. Its ``minMember`` comes from the ``PodGroup`` of that
  name (``scheduling.x-k8s.io/v1alpha1``, watched like nodes and pods) or, while that CRD is not
  installed, from the pod's annotation ``minMemberAnnotation``
  (default ``scheduling.x-k8s.io/min-member``).
What each extension point does is in :class:`Coscheduling`'s docstring (and
docs/plugins/coscheduling.md).

``permitWaitingTimeSeconds`` must leave kube-scheduler's ``httpTimeout`` room for the bind itself:
it is refused unless ``permitWaitingTimeSeconds + 1 s <= 90 % of httpTimeout`` (default: 60 % of
``httpTimeout``). Raise the profile's ``httpTimeout`` for longer waits. Needs cluster state.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from pydantic import Field

from app.framework import (
    BIND_BUDGET,
    PODS_TO_ACTIVATE,
    SKIP,
    SUCCESS,
    ClusterNeeds,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    PluginArgs,
    PluginEntry,
    PodGroupLister,
    PodIndex,
    PodInfo,
    PolicyRule,
    PreFilterResult,
    Status,
    Victims,
    WaitingPod,
)

log = logging.getLogger(__name__)

NAME = "Coscheduling"
#: the PodGroup CRD (kubernetes-sigs/scheduler-plugins ``apis/scheduling/v1alpha1``)
GROUP, PLURAL = "scheduling.x-k8s.io", "podgroups"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
MIN_MEMBER_ANNOTATION = "scheduling.x-k8s.io/min-member"
#: seconds a bind needs after Permit (validation margin)
BIND_ALLOWANCE = 1.0


class CoschedulingArgs(PluginArgs):
    """See the module doc; seconds for every time.

    - ``scheduleTimeoutSeconds``: while fewer than ``minMember`` pods of a group exist, PreFilter
      answers ``Error`` (retried with backoff) for up to the PodGroup's ``scheduleTimeoutSeconds``
      (this arg when the PodGroup sets none) from the first time a member reached filter; after
      that it rejects the member as ``UnschedulableAndUnresolvable``.
    - ``deniedPGExpirationTimeSeconds``: after a member fails past Reserve, its group is denied
      in PreFilter this long (upstream's ``deniedPG`` cache).
    """

    permit_waiting_time_seconds: float | None = Field(default=None, gt=0)
    denied_pg_expiration_time_seconds: float = Field(default=20.0, ge=0, alias="deniedPGExpirationTimeSeconds")
    schedule_timeout_seconds: float = Field(default=60.0, gt=0)
    pod_group_label: str = Field(default=POD_GROUP_LABEL, min_length=1)
    min_member_annotation: str = Field(default=MIN_MEMBER_ANNOTATION, min_length=1)
    use_pod_group_crd: bool = Field(default=True, alias="usePodGroupCRD")


def _index_name(label: str) -> str:
    return f"{NAME}/pod-group/{label}"


def needs(args: CoschedulingArgs, http_timeout: float) -> ClusterNeeds:
    """The pod index by group (``namespace/<label value>``), the ``minMember`` annotation, and
    the PodGroups (unless ``usePodGroupCRD`` is false)."""
    label = args.pod_group_label
    index = PodIndex(_index_name(label), lambda p: f"{p.namespace}/{p.labels[label]}" if label in p.labels else None)
    return ClusterNeeds(
        indexes=(index,), pod_annotations=(args.min_member_annotation,), pod_groups=args.use_pod_group_crd
    )


class Coscheduling:
    """PreFilter + Filter + Permit + Unreserve + preemption, as scheduler-plugins' ``pkg/coscheduling``:

    - **PreFilter**, while fewer than ``minMember`` pods of the group exist (the group is still being
      created), answers ``Error``, not a rejection, for up to the PodGroup's
      ``scheduleTimeoutSeconds`` (``scheduleTimeoutSeconds`` arg when the PodGroup sets none) from
      the first time a member reached filter; after that it rejects the member as
      ``UnschedulableAndUnresolvable`` ("has 2 of minMember 6 pods"). Why not reject at once, as
      upstream's PreFilter does: kube-scheduler files an extender's rejection as unschedulable and
      retries it only on a cluster event or after ``podMaxInUnschedulablePodsDuration`` (5 minutes;
      ``scheduling_queue.go`` ``AddUnschedulableIfNotPresent``, ``flushUnschedulablePodsLeftover``),
      and the creation of a sibling, a pending pod, is no such event; upstream avoids the wait with
      queueing hints and by activating siblings, which an extender has neither of. An ``Error``
      instead fails the attempt without a rejector plugin (``schedule_one.go``
      ``handleSchedulingFailure``): the pod goes to the backoff queue and is retried after 1 s,
      doubling to 10 s (``podInitialBackoffSeconds``/``podMaxBackoffSeconds``), so a group whose
      members are created together is complete within seconds. Coscheduling must therefore be
      ``failurePolicy: Fail`` (the default) at filter. A member of a **denied** group (below) is
      answered ``Error`` likewise, so it is retried as soon as the denial expires; a group whose
      PodGroup does not exist is rejected.
    - **Permit** (after Reserve, as upstream's ``Permit``): when the members already bound or
      reserved (assumed, waiting at Permit included) plus this one reach ``minMember``, every waiting
      member of the group is allowed and the pod goes on; otherwise the pod **waits**, keeping its
      reservation, for ``permitWaitingTimeSeconds`` (the framework's waiting pods; its pending
      siblings are asked to be retried now, upstream's ``ActivateSiblings``). A member that waited
      that long is rejected ("rejected due to timeout after waiting ..."); kube-scheduler then
      forgets and requeues it.
    - **Unreserve** (any member failing after Reserve: refused at Reserve by a full pool, rejected
      at Permit, its Binding refused): every waiting member of its group is rejected too, so a gang
      is bound whole or not at all, and every reservation is undone; the group is then **denied** in
      PreFilter for ``deniedPGExpirationTimeSeconds`` (upstream's ``deniedPG`` cache), so its pods do
      not keep taking nodes from other work.
    - **Preemption**: a candidate node is dropped when its victims include some, but not all, of a
      group's pods (evicting half a gang breaks the whole gang).
    """

    name = NAME

    def __init__(self, args: CoschedulingArgs, handle: Handle, clock: Callable[[], float] = time.monotonic) -> None:
        limit = BIND_BUDGET * handle.http_timeout - BIND_ALLOWANCE
        wait = args.permit_waiting_time_seconds
        if wait is None:
            wait = 0.6 * handle.http_timeout
        elif wait > limit:
            raise ValueError(
                f"{NAME}: permitWaitingTimeSeconds {wait:g} is not safely below the profile's httpTimeout "
                f"({handle.http_timeout:g}s): a held bind must answer within {BIND_BUDGET:.0%} of httpTimeout "
                f"and leave {BIND_ALLOWANCE:g}s to bind, so at most {max(limit, 0):g}s; raise httpTimeout"
            )
        self.wait = wait
        self.denied_for = args.denied_pg_expiration_time_seconds
        self.label = args.pod_group_label
        self.annotation = args.min_member_annotation
        self.cluster = handle.require_cluster(NAME)
        self.waiting_pods = handle.waiting_pods
        self._index = _index_name(self.label)
        self._use_crd = args.use_pod_group_crd
        self._clock = clock
        self.schedule_timeout = args.schedule_timeout_seconds
        self._denied: dict[str, float] = {}
        #: group -> when a member first reached filter while the group was short of minMember
        self._forming: dict[str, float] = {}

    @property
    def podgroups(self) -> PodGroupLister | None:
        """The watched PodGroups (``None`` with ``usePodGroupCRD: false``)."""
        return self.cluster.podgroups if self._use_crd else None

    # -- groups --------------------------------------------------------------------------------------

    def group_of(self, pod: PodInfo) -> str | None:
        """``namespace/name`` of the pod's group, or ``None``."""
        name = pod.labels.get(self.label)
        return f"{pod.namespace}/{name}" if name else None

    def min_member(self, pod: PodInfo, group: str) -> int | Status:
        """The group's ``minMember``, or the status explaining why it is unknown."""
        store = self.podgroups
        if store is not None and not store.absent:
            if not store.synced:
                return Status.error("PodGroups have not synced with the API server yet")
            namespace, _, name = group.partition("/")
            found = store.min_member(namespace, name)
            if found is None:
                return Status.unresolvable(f"PodGroup {group} not found", code="PodGroupNotFound")
            return found
        raw = pod.annotations.get(self.annotation)
        if raw is None:
            return Status.unresolvable(
                f"pod group {group}: no PodGroup CRD and no {self.annotation} annotation", code="PodGroupNotFound"
            )
        try:
            value = int(raw)
        except ValueError:
            value = -1
        if value < 0:
            return Status.unresolvable(
                f"pod group {group}: annotation {self.annotation}={raw!r} is not a count", code="PodGroupInvalid"
            )
        return value

    def members(self, group: str) -> tuple[PodInfo, ...]:
        """The watched pods of ``group`` (pending and bound)."""
        return self.cluster.indexed(self._index, group)

    def denied_until(self, group: str) -> float | None:
        """The clock time until which ``group`` is denied, or ``None``."""
        until = self._denied.get(group)
        if until is not None and until <= self._clock():
            del self._denied[group]
            return None
        return until

    # -- PreFilter / Filter -----------------------------------------------------------------------

    def timeout_of(self, group: str) -> float:
        """How long ``group`` may take to gather: its PodGroup's ``scheduleTimeoutSeconds``, else
        the ``scheduleTimeoutSeconds`` arg (seconds)."""
        if self.podgroups is not None and not self.podgroups.absent:
            namespace, _, name = group.partition("/")
            found = self.podgroups.schedule_timeout(namespace, name)
            if found:
                return float(found)
        return self.schedule_timeout

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """``Skip`` for a pod outside any group; ``Error`` while the group is denied or still
        gathering (kube-scheduler retries it within seconds); a rejection on every node when the
        group is unknown or has been short of ``minMember`` pods for its schedule timeout."""
        group = self.group_of(pod)
        if group is None:
            return None, SKIP
        until = self.denied_until(group)
        if until is not None:
            return None, Status.error(
                f"pod group {group} is denied for {until - self._clock():.0f}s more after its Permit timed out "
                "(kube-scheduler retries it with backoff)",
                code="PodGroupDenied",
            )
        need = self.min_member(pod, group)
        if isinstance(need, Status):
            return None, need
        members = self.members(group)
        total = len(members) + (0 if any(m.uid == pod.uid for m in members) else 1)
        if total >= need:
            self._forming.pop(group, None)
            return None, SUCCESS
        now = self._clock()
        if len(self._forming) > 10_000:  # forget groups that were abandoned long ago
            self._forming = {g: t for g, t in self._forming.items() if now - t < 10 * self.timeout_of(g)}
        since = self._forming.setdefault(group, now)
        timeout = self.timeout_of(group)
        if now - since <= timeout:
            return None, Status.error(
                f"pod group {group} has {total} of minMember {need} pods: waiting up to {timeout:g}s for the "
                "rest to be created (kube-scheduler retries it with backoff)",
                code="PodGroupWaiting",
            )
        return None, Status.unresolvable(
            f"pod group {group} has {total} of minMember {need} pods after {timeout:g}s", code="PodGroupIncomplete"
        )

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """Nothing per node: PreFilter decided."""
        return SUCCESS

    # -- Permit, Reserve, Unreserve ----------------------------------------------------------------------

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        """Upstream's ``Permit``: allow the group's waiting members and this pod once the members
        bound or reserved (this one included) reach ``minMember``; else wait up to
        ``permitWaitingTimeSeconds`` and ask for the pending siblings to be retried now."""
        group = self.group_of(pod)
        if group is None:
            return SUCCESS, 0.0
        need = self.min_member(pod, group)
        if isinstance(need, Status):
            return Status(Code.UNSCHEDULABLE, need.reasons, reason_code=need.reason_code), 0.0
        members = self.members(group)
        placement = self.cluster.placement
        assigned = sum(1 for m in members if m.uid != pod.uid and placement(m.uid) is not None)
        if assigned + 1 >= need:
            allowed: list[WaitingPod] = []
            self.waiting_pods.iterate(lambda w: allowed.append(w) if self.group_of(w.pod) == group else None)
            for waiting in allowed:
                waiting.allow(NAME)
            log.info("pod group %s: %d member(s) permitted (%d bound or reserved)", group, len(allowed) + 1, assigned)
            return SUCCESS, 0.0
        siblings = {m.uid: m for m in members if m.uid != pod.uid and not m.node_name and placement(m.uid) is None}
        if siblings:
            to_activate: dict[str, PodInfo] = state.get(PODS_TO_ACTIVATE) or {}
            to_activate.update(siblings)
            state.write(PODS_TO_ACTIVATE, to_activate)
        return Status(
            Code.WAIT, (f"pod group {group} has {assigned + 1} of minMember {need} pods reserved",)
        ), self.wait

    def reserve(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """Nothing to check (upstream's ``Reserve``)."""
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Upstream's ``Unreserve``: reject every waiting member of the pod's group ("rejection in
        Unreserve"), so none is bound without the others, and deny the group for
        ``deniedPGExpirationTimeSeconds``."""
        group = self.group_of(pod)
        if group is None:
            return
        rejected: list[WaitingPod] = []
        self.waiting_pods.iterate(
            lambda w: rejected.append(w) if w.pod.uid != pod.uid and self.group_of(w.pod) == group else None
        )
        for waiting in rejected:
            waiting.reject(NAME, "rejection in Unreserve")
        if self.denied_for > 0:
            self._denied[group] = self._clock() + self.denied_for
        log.warning(
            "pod group %s: member %s failed after Reserve: %d waiting member(s) rejected; denied for %gs",
            group,
            pod.key(),
            len(rejected),
            self.denied_for,
        )

    # -- preemption --------------------------------------------------------------------------------

    def process_preemption(
        self, state: CycleState, pod: PodInfo, candidates: dict[str, Victims]
    ) -> tuple[dict[str, Victims], Status]:
        """Drop the candidates whose victims are part, but not all, of a group's pods."""
        kept: dict[str, Victims] = {}
        for node, victims in candidates.items():
            by_group: dict[str, set[str]] = {}
            for victim in victims.pods:
                group = self.group_of(victim)
                if group is not None:
                    by_group.setdefault(group, set()).add(victim.uid)
            if all({m.uid for m in self.members(group)} <= uids for group, uids in by_group.items()):
                kept[node] = victims
        return kept, SUCCESS


PLUGIN = PluginEntry(
    name=NAME,
    factory=Coscheduling,
    args=CoschedulingArgs,
    needs_cluster=True,
    needs=needs,
    rbac=(PolicyRule((GROUP,), (PLURAL,), ("get", "list", "watch")),),
    summary="filter/bind: gang scheduling (PodGroup minMember; members wait at Permit, reserved, until all are)",
)

"""Verb handlers shared by the HTTP layer and ``replay``: body bytes in, :class:`Answer` out.

Status codes (DESIGN.md section 3): 200 for every decided answer, including a filter or bind
``Error`` (the protocol's own way to report failure); 400 for a body that is not a well-formed
request of the verb's type or exceeds a limit; 500 with ``Error`` when a fail-closed plugin errs
in prioritize or preempt (their result types have no ``Error`` field; kube-scheduler treats any
non-200 as a failed call and ignores the body).

A request the configuration cannot serve (unknown profile, a verb the profile does not serve,
``NodeNames`` or UID-only victims sent to a profile that has neither cluster state nor
``nodeCacheCapable: true``) is answered by :meth:`ExtenderService.mismatch`: for filter and bind,
HTTP 200 with ``Error`` saying which setting to change, because kube-scheduler shows an
``Error`` text in the pod's events but only the status code of a non-200; for prioritize and
preempt, whose result types have no ``Error`` field, 404 (profile, verb) or 400 (body form).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from app.cluster.runtime import ClusterRuntime
from app.cluster.state import Snapshot
from app.config import Configuration
from app.extender import codec
from app.framework.profile import Verb
from app.framework.runtime import Framework, FrameworkError
from app.framework.status import Code, Status
from app.framework.types import NodeInfo, PodInfo, PodRef, Victims
from app.observe.decisions import Decision, DecisionStore

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class Answer:
    """An HTTP answer: status code, body (JSON of the verb's result type, as bytes or as
    :data:`~app.extender.codec.Chunks`), whether it reports an error (a non-200, or ``Error`` in a
    200 filter or bind answer), and ``retry_after`` seconds for a 503."""

    status: int
    body: bytes | codec.Chunks
    error: bool = False
    retry_after: int | None = None
    #: the pod the request was about (set for decided filter, prioritize and preempt answers)
    pod: PodInfo | None = None


def error_answer(verb: str, status: int, message: str, retry_after: int | None = None) -> Answer:
    """:func:`error_body` with an HTTP status."""
    return Answer(status, codec.encode_error(verb, message), True, retry_after)


#: The reason a cache-mode filter gives a node name the cluster state does not know.
UNKNOWN_NODE = "node is not in the extender's cluster state"
NOT_SYNCED = "the extender's cluster state has not synced with the API server yet"
#: Verbs whose result type carries ``Error``: a configuration mismatch is answered 200 with it.
ERROR_FIELD_VERBS = frozenset({"filter", "bind"})


class ExtenderService:
    """The profiles' frameworks behind the four verbs, and the cluster state when configured.

    With cluster state, ``NodeNames`` (``nodeCacheCapable: true``) resolve through a
    :class:`~app.cluster.state.Snapshot` taken once per request: filter rejects a name the cache
    does not know as ``UnschedulableAndUnresolvable`` with :data:`UNKNOWN_NODE`, prioritize scores
    it 0, and preempt resolves victim UIDs to the cached pods. Filter counts the pods nominated to
    a node with at least the pod's priority, as kube-scheduler does
    (:meth:`~app.cluster.state.Snapshot.with_nominated`). Before the first sync, filter
    answers ``Error`` and prioritize/preempt answer 503. Nodes sent in full (``Nodes``) find their
    pods and requests in the same snapshot. ``listeners`` receive every decision.
    """

    def __init__(
        self,
        config: Configuration,
        frameworks: Mapping[str, Framework],
        cluster: ClusterRuntime | None = None,
        decisions: DecisionStore | None = None,
    ) -> None:
        self.config = config
        self.frameworks = dict(frameworks)
        self.cluster = cluster
        #: where decisions are kept for /explain (None: not kept)
        self.decisions = decisions
        #: called with every decision (metrics, decision logs); must not block
        self.listeners: list[Callable[[Decision], None]] = []
        #: posts the pod events a verb's decision deserves (with cluster state); must not block
        self.pod_events: Callable[[Decision], None] | None = None
        self.limits = config.server.limits.codec()
        self.verbs: dict[str, tuple[Verb, ...]] = {p.name: tuple(p.extender.verbs) for p in config.profiles}
        self.cache_capable = {p.name: p.extender.node_cache_capable for p in config.profiles}
        self.default_profile = config.default_profile

    def _snapshot(self) -> Snapshot | None:
        return self.cluster.state.snapshot() if self.cluster is not None else None

    @property
    def recording(self) -> bool:
        """Whether decisions are kept or listened to (else none is built)."""
        return self.decisions is not None or bool(self.listeners) or self.pod_events is not None

    def record(self, decision: Decision, pod_events: bool = True) -> None:
        """Keep ``decision`` for ``/explain`` and pass it to the listeners, and to
        :attr:`pod_events` unless ``pod_events`` is false (the standalone scheduler posts its own,
        kube-scheduler's, events)."""
        if self.decisions is not None:
            self.decisions.add(decision)
        listeners = self.listeners
        if pod_events and self.pod_events is not None:
            listeners = [*listeners, self.pod_events]
        for listener in listeners:
            try:
                listener(decision)
            except Exception:  # an observer's bug never fails the verb
                log.exception("decision listener %r failed", listener)

    # -- routing and configuration mismatches ------------------------------------------------------

    def mismatch(self, verb: str, not_found: int, message: str) -> Answer:
        """The answer to a request this configuration cannot serve: 200 with ``Error`` for filter
        and bind, else ``not_found`` (404 or 400) with ``Error`` for people and logs."""
        return error_answer(verb, 200 if verb in ERROR_FIELD_VERBS else not_found, message)

    def resolve(self, profile: str | None, verb: str) -> Framework | Answer:
        """The framework serving ``verb`` for ``profile`` (``None``: the default profile), or the
        answer explaining why there is none (:meth:`mismatch`)."""
        names = ", ".join(self.frameworks)
        name = profile if profile is not None else self.default_profile
        if name is None:
            return self.mismatch(
                verb, 404, f"no default profile: set urlPrefix to http(s)://HOST:PORT/PROFILE (profiles: {names})"
            )
        framework = self.frameworks.get(name)
        if framework is None:
            return self.mismatch(
                verb, 404, f"unknown profile {name!r}: set urlPrefix to end in one of the profiles ({names})"
            )
        served = self.verbs[name]
        if verb not in served:
            if verb == "bind":
                message = (
                    f"no binder is configured: profile {name!r} does not serve bind (it serves "
                    f"{', '.join(served)}); enable a bind plugin and add bind to its verbs, or remove "
                    "bindVerb from kube-scheduler's extender entry"
                )
            else:
                message = (
                    f"profile {name!r} does not serve {verb} (it serves {', '.join(served)}): add {verb} to "
                    f"profiles[{name}].extender.verbs, or remove {verb}Verb from kube-scheduler's extender entry"
                )
            return self.mismatch(verb, 404, message)
        return framework

    def _names_without_nodes(self, framework: Framework, verb: str) -> Answer | None:
        """The mismatch answer when a request names nodes (or victims) without their objects and
        the profile has neither cluster state nor ``nodeCacheCapable: true``: every such request
        errs, whatever the pod, instead of depending on which plugins happen to read nodes."""
        if self.cluster is not None or self.cache_capable.get(framework.profile, False):
            return None
        what = "NodeNames" if verb in ("filter", "prioritize") else "NodeNameToMetaVictims"
        return self.mismatch(
            verb,
            400,
            f"profile {framework.profile!r} received {what} but has no cluster state to look nodes up in: "
            "set nodeCacheCapable: false in kube-scheduler's extender entry (it then sends whole nodes), "
            "or add a cluster: section to the extender's configuration",
        )

    # -- verbs ------------------------------------------------------------------------------------

    def resolve_nodes(
        self, framework: Framework, view: codec.ExtenderArgsView, snapshot: Snapshot | None
    ) -> ResolvedNodes:
        """The NodeInfos plugins see and the request indexes the cache does not know
        (``snapshot``: the cluster state's, or ``None`` without one)."""
        if snapshot is None:
            return ResolvedNodes(view.nodes)
        if view.names is None or not self.cache_capable.get(framework.profile, False):
            for node in view.nodes:
                node.use_usage_lookup(snapshot.usage)
            return ResolvedNodes(view.nodes)
        get = snapshot.known.get
        resolved = [get(name) for name in view.names]  # NodeNames: no name-only NodeInfos built
        if None not in resolved:
            return ResolvedNodes(resolved)  # type: ignore[arg-type]
        unknown = [i for i, info in enumerate(resolved) if info is None]
        return ResolvedNodes([info for info in resolved if info is not None], unknown)

    def filter(self, framework: Framework, args: codec.ExtenderArgsView) -> Answer:
        """Answer a decoded filter request."""
        started = time.perf_counter()
        if args.names is not None and (mismatch := self._names_without_nodes(framework, "filter")):
            return mismatch
        snapshot = self._snapshot()
        if snapshot is not None and not snapshot.synced:
            return Answer(200, codec.encode_filter_error(NOT_SYNCED), True)
        resolved = self.resolve_nodes(framework, args, snapshot)
        if snapshot is not None and snapshot.nominated:
            resolved.nodes = [snapshot.with_nominated(node, args.pod) for node in resolved.nodes]
        outcome = framework.run_filter(args.pod, resolved.nodes)
        ignored = outcome.ignored_errors
        if outcome.error:
            log.warning("filter %s: %s", args.pod.key(), outcome.error)
            if self.recording:
                self._record(
                    framework,
                    "filter",
                    args.pod,
                    started,
                    error=outcome.error,
                    error_plugin=outcome.error_plugin,
                    error_code=outcome.error_code,
                    ignored=ignored,
                )
            return Answer(200, codec.encode_filter_error(outcome.error), True)
        statuses = resolved.realign(outcome.statuses, UNKNOWN_STATUS)
        if self.recording:
            self._record(
                framework, "filter", args.pod, started, names=args.names_for_record, statuses=statuses, ignored=ignored
            )
        requeuer = self.cluster.requeuer if self.cluster is not None else None
        if requeuer is not None and args.pod.uid:
            pod = args.pod
            if any(status.code is Code.SUCCESS for status in outcome.statuses):
                requeuer.passed(pod.uid)
            elif outcome.statuses:  # rejected on every node: kube-scheduler parks it
                requeuer.rejected(pod.namespace, pod.name, pod.uid)
        return Answer(200, codec.encode_filter_result(args, statuses))

    def prioritize(self, framework: Framework, args: codec.ExtenderArgsView) -> Answer:
        """Answer a decoded prioritize request."""
        started = time.perf_counter()
        if args.names is not None and (mismatch := self._names_without_nodes(framework, "prioritize")):
            return mismatch
        snapshot = self._snapshot()
        if snapshot is not None and not snapshot.synced:
            return error_answer("prioritize", 503, NOT_SYNCED, retry_after=1)
        resolved = self.resolve_nodes(framework, args, snapshot)
        try:
            outcome = framework.run_score(args.pod, resolved.nodes)
        except FrameworkError as exc:
            log.warning("prioritize: %s", exc)
            if self.recording:
                self._record(framework, "prioritize", args.pod, started, error=str(exc))
            return error_answer("prioritize", 500, str(exc))
        scores = resolved.realign(outcome.scores, 0)
        names = args.node_name_list()
        if self.recording:
            self._record(
                framework,
                "prioritize",
                args.pod,
                started,
                names=names,
                scores=scores,
                plugin_scores=outcome.plugin_scores,
                unknown=resolved.unknown,
            )
        return Answer(200, codec.encode_host_priority_list(names, scores))

    def preempt(self, framework: Framework, args: codec.PreemptionArgsView) -> Answer:
        """Answer a decoded preempt request: always ``NodeNameToMetaVictims`` with UIDs."""
        started = time.perf_counter()
        if args.meta and (mismatch := self._names_without_nodes(framework, "preempt")):
            return mismatch
        snapshot = self._snapshot()
        if snapshot is not None:
            if not snapshot.synced:
                return error_answer("preempt", 503, NOT_SYNCED, retry_after=1)
            resolve_victims(args.candidates, snapshot)
        dropped: dict[str, str] = {}
        try:
            candidates = framework.run_preemption(args.pod, args.candidates, dropped)
        except FrameworkError as exc:
            log.warning("preempt: %s", exc)
            if self.recording:
                self._record(framework, "preempt", args.pod, started, error=str(exc))
            return error_answer("preempt", 500, str(exc))
        if self.recording:
            victims = {node: [p.uid for p in v.pods] for node, v in candidates.items()}
            self._record(framework, "preempt", args.pod, started, victims=victims, dropped=dropped)
        return Answer(200, codec.encode_preemption_result(candidates))

    async def bind(self, framework: Framework, args: tuple[PodRef, str]) -> Answer:
        """Answer a decoded bind request: ``{"Error": ""}`` when a bind plugin bound the pod."""
        pod, node = args
        started = time.perf_counter()
        status = await framework.run_bind(pod, node)
        error = "" if status.is_success() else status.message
        if error:
            log.warning("bind %s/%s to %s: %s", pod.namespace, pod.name, node, error)
        if self.recording:
            self.record(Decision.since(started, framework.profile, "bind", pod, node=node, error=error))
        return Answer(200, codec.encode_binding_result(error), bool(error))

    def _record(self, framework: Framework, verb: str, pod: PodInfo, started: float, **fields: Any) -> None:
        self.record(Decision.since(started, framework.profile, verb, pod, **fields))


#: The verdict a cache-mode filter gives a node name the cluster state does not know.
UNKNOWN_STATUS = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (UNKNOWN_NODE,), "ClusterState", "UnknownNode")


@dataclass
class ResolvedNodes:
    """The candidate nodes a request's plugins see (``nodes``), and the request indexes of the
    names the cluster state does not know (``unknown``), which plugins never see."""

    nodes: list[NodeInfo]
    unknown: list[int] = field(default_factory=list)

    def realign(self, values: list[T], fill: T) -> list[T]:
        """Per-node results of ``nodes`` in the request's order, ``fill`` at the unknown names
        (:data:`UNKNOWN_STATUS`, or score 0)."""
        if not self.unknown:
            return values
        out: list[T] = []
        it = iter(values)
        skip = set(self.unknown)
        for i in range(len(values) + len(self.unknown)):
            out.append(fill if i in skip else next(it))
        return out


def resolve_victims(candidates: dict[str, Victims], snapshot: Snapshot) -> None:
    """Replace UID-only victims (cache mode) by the cached pod records where the cache has them."""
    for node, victims in candidates.items():
        victims.pods = [(snapshot.pod(node, p.uid) or p) if p.pod is None and not p.name else p for p in victims.pods]


__all__ = [
    "NOT_SYNCED",
    "UNKNOWN_NODE",
    "Answer",
    "ExtenderService",
    "ResolvedNodes",
    "error_answer",
    "resolve_victims",
]

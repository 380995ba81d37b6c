"""Verb handlers shared by the HTTP layer and ``replay``: body bytes in, :class:`Answer` out.

Status codes (docs/reference/protocol.md): 200 for every decided answer, including a filter or bind
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

The verb table (each verb's wire types, decoder and handler) is :mod:`app.api.verbs`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from app.cluster.connection import ClusterConnection
from app.cluster.leader import Leadership
from app.cluster.snapshot import Snapshot
from app.config import Configuration
from app.extender import codec
from app.extender.verbs import extender_scores, run_bind_verb, run_filter, run_preemption, run_prioritize
from app.framework.profile import Verb as VerbName
from app.framework.runtime import Framework, FrameworkError
from app.framework.status import Code, Status
from app.framework.types import CycleState, NodeInfo, ObjectDecodeError, PodInfo, PodRef, Victims
from app.lifecycle import WorkerHealth
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
    :class:`~app.cluster.snapshot.Snapshot` taken once per request: filter rejects a name the cache
    does not know as ``UnschedulableAndUnresolvable`` with :data:`UNKNOWN_NODE`, prioritize scores
    it 0, and preempt resolves victim UIDs to the cached pods. Filter counts the pods nominated to
    a node with at least the pod's priority, as kube-scheduler does
    (:meth:`~app.cluster.snapshot.Snapshot.with_nominated`). Prioritize answers each node's weighted
    mean of the plugins' scores on the extender's 0..10 (:func:`extender_scores`). Before the first
    sync, filter
    answers ``Error`` and prioritize/preempt answer 503. Nodes sent in full (``Nodes``) find their
    pods and requests in the same snapshot.

    Built once with what serving gives it (:mod:`app.bootstrap`): ``decisions`` (kept for
    ``/explain``; ``None``: not kept), ``node_images`` (the profiles whose plugins read nodes'
    ``status.images``, :attr:`ClusterNeeds.images`: the nodes of their request bodies are decoded
    with it), ``listeners`` (called with every decision: metrics, decision logs; must not block),
    ``pod_events`` (posts the pod events a verb's decision deserves; must not block), ``health``
    (the background workers' health, ``/readyz``) and ``leadership`` (what this replica's Leases
    say: ``/readyz``'s role, the leader metrics; default: no Lease, with cluster state).
    """

    def __init__(
        self,
        config: Configuration,
        frameworks: Mapping[str, Framework],
        cluster: ClusterConnection | None = None,
        decisions: DecisionStore | None = None,
        *,
        node_images: frozenset[str] = frozenset(),
        listeners: Sequence[Callable[[Decision], None]] = (),
        pod_events: Callable[[Decision], None] | None = None,
        health: Callable[[], list[WorkerHealth]] | None = None,
        leadership: Leadership | None = None,
    ) -> None:
        self.config = config
        self.frameworks = dict(frameworks)
        self.cluster = cluster
        self.decisions = decisions
        self.listeners: Sequence[Callable[[Decision], None]] = tuple(listeners)
        self.pod_events = pod_events
        limits = config.server.limits
        self.limits = codec.Limits(limits.max_nodes, limits.max_victims_per_node, limits.max_victims)
        #: what the codec keeps between this service's requests (a NodeNames list, the last pod)
        self.memo = codec.RequestMemo()
        self.health = health
        self.verbs: dict[str, tuple[VerbName, ...]] = {p.name: tuple(p.extender.verbs) for p in config.profiles}
        self.cache_capable = {p.name: p.extender.node_cache_capable for p in config.profiles}
        #: the profiles posting AuditFailedScheduling events (``auditEvents``)
        self.audit_events = frozenset(p.name for p in config.profiles if p.audit_events)
        self.default_profile = config.default_profile
        if leadership is None and cluster is not None:
            leadership = Leadership(cluster.bind_admission)
        self.leadership = leadership
        self.node_images = node_images
        #: ``(thread id, loop.call_soon)`` of :meth:`record_after_answers`
        self._after_answers: tuple[int, Callable[..., object]] | None = None
        #: the last ``NodeNames`` resolved (:meth:`resolve_nodes`): the list, the snapshot, the
        #: result (its lists never changed: a handler replaces ``nodes`` rather than edit it)
        self._resolved: _Resolution | None = None

    def record_after_answers(self, loop: asyncio.AbstractEventLoop) -> None:
        """From now on, a filter, prioritize or preempt evaluated on the calling thread, ``loop``'s,
        records its decision (:meth:`record`) in a callback of ``loop`` instead of before its
        answer is built: the HTTP layers write an answer in the same step of the loop as its verb
        ran, so the record follows the answer on the wire by microseconds and precedes the next
        request the loop reads (an ``/explain`` or ``/metrics`` asked after an answer shows its
        decision). A verb evaluated in the worker thread records at once."""
        self._after_answers = (threading.get_ident(), loop.call_soon)

    def _snapshot(self) -> Snapshot | None:
        return self.cluster.cache.snapshot() if self.cluster is not None else None

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

    def resolve_nodes(self, view: codec.ExtenderArgsView, snapshot: Snapshot | None) -> ResolvedNodes:
        """The NodeInfos plugins see and the request indexes the cache does not know
        (``snapshot``: the cluster state's, or ``None`` without one). ``NodeNames`` resolve through
        the cluster state whatever the profile's ``nodeCacheCapable`` says (kube-scheduler sends
        them only when its entry says true: a profile set otherwise still answers for the nodes
        it knows, rather than hand its plugins nodes without objects)."""
        if snapshot is None:
            return ResolvedNodes(view.nodes)
        if view.names is None:
            for node in view.nodes:
                node.use_usage_lookup(snapshot.usage)
            return ResolvedNodes(view.nodes)
        names = view.names
        last = self._resolved
        if last is not None and last.names is names:
            # the same NodeNames list (codec's kept lists): filter's resolution again for
            # prioritize, or the next pod's, in the same snapshot or the one after it
            if last.snapshot is snapshot:
                return ResolvedNodes(last.nodes.nodes, last.nodes.unknown)
            patched = last.patched(snapshot)
            if patched is not None:
                self._resolved = _Resolution(names, snapshot, patched, last.index)
                return ResolvedNodes(patched.nodes, patched.unknown)
        resolved = list(map(snapshot.known.get, names))  # NodeNames: no name-only NodeInfos built
        if None not in resolved:
            out = ResolvedNodes(resolved)  # type: ignore[arg-type]
        else:
            unknown = [i for i, info in enumerate(resolved) if info is None]
            out = ResolvedNodes([info for info in resolved if info is not None], unknown)
        self._resolved = _Resolution(names, snapshot, out)
        return ResolvedNodes(out.nodes, out.unknown)

    def filter(self, framework: Framework, args: codec.ExtenderArgsView) -> Answer:
        """Answer a decoded filter request."""
        started = time.perf_counter()
        if args.names is not None and (mismatch := self._names_without_nodes(framework, "filter")):
            return mismatch
        snapshot = self._snapshot()
        if snapshot is not None and not snapshot.synced:
            return Answer(200, codec.encode_filter_error(NOT_SYNCED), True)
        resolved = self.resolve_nodes(args, snapshot)
        if snapshot is not None and snapshot.nominated:
            resolved.nodes = [snapshot.with_nominated(node, args.pod) for node in resolved.nodes]
        try:
            outcome = run_filter(framework, args.pod, resolved.nodes, CycleState(snapshot))
        except ObjectDecodeError as exc:  # a node a plugin read does not decode: the client's mistake
            return error_answer("filter", 400, str(exc))
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
            return Answer(200, codec.encode_filter_error(outcome.error), True, pod=args.pod)
        statuses = resolved.realign(outcome.statuses, UNKNOWN_STATUS)
        if self.recording:
            names = codec.kept_json(args.names, args.memo) or args.node_name_list  # packed already when kept
            audit: dict[str, Any] = {}
            if outcome.audit:  # what the audited plugins would have decided, in the request's order
                audit["audit"] = {p: resolved.realign(v, UNKNOWN_STATUS) for p, v in outcome.audit.items()}
                audit["audit_events"] = framework.profile in self.audit_events
            self._record(
                framework, "filter", args.pod, started, names=names, statuses=statuses, ignored=ignored, **audit
            )
        requeuer = self.cluster.requeuer if self.cluster is not None else None
        if requeuer is not None and args.pod.uid:
            pod = args.pod
            if any(status.code is Code.SUCCESS for status in outcome.statuses):
                requeuer.passed(pod.uid)
            elif outcome.statuses:  # rejected on every node: kube-scheduler parks it
                requeuer.rejected(pod.namespace, pod.name, pod.uid)
        return Answer(200, codec.encode_filter_result(args, statuses), pod=args.pod)

    def prioritize(self, framework: Framework, args: codec.ExtenderArgsView) -> Answer:
        """Answer a decoded prioritize request."""
        started = time.perf_counter()
        if args.names is not None and (mismatch := self._names_without_nodes(framework, "prioritize")):
            return mismatch
        snapshot = self._snapshot()
        if snapshot is not None and not snapshot.synced:
            return error_answer("prioritize", 503, NOT_SYNCED, retry_after=1)
        resolved = self.resolve_nodes(args, snapshot)
        state = CycleState(snapshot)
        try:
            outcome, status = run_prioritize(framework, args.pod, resolved.nodes, state)
        except ObjectDecodeError as exc:
            return error_answer("prioritize", 400, str(exc))
        if outcome is None or not status.is_success():
            message = status.message
            log.warning("prioritize: %s", message)
            if self.recording:
                self._record(framework, "prioritize", args.pod, started, error=message)
            answer = error_answer("prioritize", 500, message)
            answer.pod = args.pod
            return answer
        scores = resolved.realign(extender_scores(outcome), 0)
        names = args.node_name_list()
        if self.recording:
            self._record(
                framework,
                "prioritize",
                args.pod,
                started,
                names=codec.kept_json(names, args.memo) or names,  # packed already when kept
                extender_scores=scores,
                plugin_scores=outcome.plugin_scores,
                unknown=resolved.unknown,
            )
        return Answer(200, codec.encode_host_priority_list(names, scores, args.memo), pod=args.pod)

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
            candidates = run_preemption(framework, args.pod, args.candidates, dropped)
        except ObjectDecodeError as exc:
            return error_answer("preempt", 400, str(exc))
        except FrameworkError as exc:
            log.warning("preempt: %s", exc)
            if self.recording:
                self._record(framework, "preempt", args.pod, started, error=str(exc))
            answer = error_answer("preempt", 500, str(exc))
            answer.pod = args.pod
            return answer
        if self.recording:
            victims = {node: [p.uid for p in v.pods] for node, v in candidates.items()}
            self._record(framework, "preempt", args.pod, started, victims=victims, dropped=dropped)
        return Answer(200, codec.encode_preemption_result(candidates), pod=args.pod)

    async def bind(self, framework: Framework, args: tuple[PodRef, str]) -> Answer:
        """Answer a decoded bind request: ``{"Error": ""}`` when a bind plugin bound the pod."""
        pod, node = args
        started = time.perf_counter()
        status = await run_bind_verb(framework, pod, node)
        error = "" if status.is_success() else status.message
        if error:
            log.warning("bind %s/%s to %s: %s", pod.namespace, pod.name, node, error)
        if self.recording:
            self.record(Decision.since(started, framework.profile, "bind", pod, node=node, error=error))
        return Answer(200, codec.encode_binding_result(error), bool(error))

    def _record(self, framework: Framework, verb: str, pod: PodInfo, started: float, **fields: Any) -> None:
        decision = Decision.since(started, framework.profile, verb, pod, **fields)
        after = self._after_answers
        if after is not None and after[0] == threading.get_ident():
            after[1](self.record, decision)  # once the answer is written (record_after_answers)
        else:
            self.record(decision)


#: The verdict a cache-mode filter gives a node name the cluster state does not know.
UNKNOWN_STATUS = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (UNKNOWN_NODE,), "ClusterState", "UnknownNode")


class _Resolution:
    """A ``NodeNames`` list resolved in a snapshot (:meth:`ExtenderService.resolve_nodes`), and
    the index of each name in it (built on first use)."""

    __slots__ = ("index", "names", "nodes", "snapshot")

    def __init__(
        self, names: list[str], snapshot: Snapshot, nodes: ResolvedNodes, index: dict[str, int] | None = None
    ) -> None:
        self.names = names
        self.snapshot = snapshot
        self.nodes = nodes
        self.index = index

    def patched(self, snapshot: Snapshot) -> ResolvedNodes | None:
        """The resolution in ``snapshot`` when it is the cluster state's next one (the last
        resolution's with the NodeInfos of the nodes changed meanwhile replaced), each name still
        known; else ``None`` (resolve anew)."""
        changed = snapshot.changed
        if (
            changed is None
            or snapshot.generation != self.snapshot.generation + 1
            or not self.snapshot.generation
            or self.nodes.unknown
        ):
            return None
        index = self.index
        if index is None:
            index = self.index = dict(zip(self.names, range(len(self.names)), strict=True))
            if len(index) != len(self.names):  # a name twice: resolve anew
                return None
        if len(index) != len(self.names):
            return None
        nodes = list(self.nodes.nodes)
        known = snapshot.known
        for name in changed:
            i = index.get(name)
            if i is not None:
                info = known.get(name)
                if info is None:
                    return None
                nodes[i] = info
        return ResolvedNodes(nodes)


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

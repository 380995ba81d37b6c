"""Verb handlers shared by the HTTP layer and ``replay``: body bytes in, (status, body bytes) out.

Status codes (DESIGN.md section 3): 200 for every decided answer, including a filter or bind
``Error`` (the protocol's own way to report failure); 400 for a body that is not a well-formed
request of the verb's type; 404 for an unknown profile or a verb the profile does not serve;
500 with ``Error`` when a fail-closed plugin errs in prioritize or preempt (their result types
have no ``Error`` field; kube-scheduler treats any non-200 as a failed call and ignores the body).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app import codec
from app.cluster.runtime import ClusterRuntime
from app.cluster.state import Snapshot
from app.config import Configuration
from app.framework.profile import Verb
from app.framework.runtime import FilterOutcome, Framework, FrameworkError, ScoreOutcome
from app.framework.status import Code, Status
from app.framework.types import NodeInfo, Victims

log = logging.getLogger(__name__)


@dataclass
class Answer:
    """An HTTP answer: status code and body bytes (always JSON of the verb's result type)."""

    status: int
    body: bytes


def error_body(verb: str, message: str) -> bytes:
    """The verb's own result type carrying ``message`` in ``Error``."""
    if verb == "filter":
        return codec.encode_filter_error(message)
    if verb == "bind":
        return codec.encode_binding_result(message)
    if verb == "preempt":
        return codec.encode_error_object(message, NodeNameToMetaVictims=None)
    return codec.encode_error_object(message)


def error_answer(verb: str, status: int, message: str) -> Answer:
    """:func:`error_body` with an HTTP status."""
    return Answer(status, error_body(verb, message))


#: The reason a cache-mode filter gives a node name the cluster state does not know.
UNKNOWN_NODE = "node is not in the extender's cluster state"
NOT_SYNCED = "the extender's cluster state has not synced with the API server yet"


class ExtenderService:
    """The profiles' frameworks behind the four verbs, and the cluster state when configured.

    With cluster state, ``NodeNames`` (``nodeCacheCapable: true``) resolve through a
    :class:`~app.cluster.state.Snapshot` taken once per request: filter rejects a name the cache
    does not know as ``UnschedulableAndUnresolvable`` with :data:`UNKNOWN_NODE`, prioritize scores
    it 0, and preempt resolves victim UIDs to the cached pods. Before the first sync, filter
    answers ``Error`` and prioritize/preempt answer 503. Nodes sent in full (``Nodes``) find their
    pods and requests in the same snapshot.
    """

    def __init__(
        self, config: Configuration, frameworks: Mapping[str, Framework], cluster: ClusterRuntime | None = None
    ) -> None:
        self.config = config
        self.frameworks = dict(frameworks)
        self.cluster = cluster
        self.verbs: dict[str, tuple[Verb, ...]] = {p.name: tuple(p.extender.verbs) for p in config.profiles}
        self.cache_capable = {p.name: p.extender.node_cache_capable for p in config.profiles}
        self.default_profile = config.default_profile

    def _snapshot(self) -> Snapshot | None:
        return self.cluster.state.snapshot() if self.cluster is not None else None

    def resolve_nodes(
        self, framework: Framework, view: codec.ExtenderArgsView, snapshot: Snapshot | None
    ) -> tuple[list[NodeInfo], list[int]]:
        """The NodeInfos plugins see, and the indexes of ``view.nodes`` the cache does not know
        (``snapshot``: the cluster state's, or ``None`` without one)."""
        if snapshot is None:
            return view.nodes, []
        if view.names is None or not self.cache_capable.get(framework.profile, False):
            for node in view.nodes:
                node.use_usage_lookup(snapshot.usage)
            return view.nodes, []
        get = snapshot.known.get
        resolved = [get(name) for name in view.names]  # NodeNames: no name-only NodeInfos built
        if None not in resolved:
            return resolved, []  # type: ignore[return-value]
        unknown = [i for i, info in enumerate(resolved) if info is None]
        known = [info for info in resolved if info is not None]
        return known, unknown

    def resolve(self, profile: str | None, verb: str) -> Framework | Answer:
        """The framework serving ``verb`` for ``profile`` (``None``: the default profile), or the
        404 answer explaining why there is none."""
        name = profile if profile is not None else self.default_profile
        if name is None:
            return error_answer(
                verb,
                404,
                f"no default profile: POST /{{profile}}/{verb} (profiles: {', '.join(self.frameworks)})",
            )
        framework = self.frameworks.get(name)
        if framework is None:
            return error_answer(verb, 404, f"unknown profile {name!r} (profiles: {', '.join(self.frameworks)})")
        served = self.verbs[name]
        if verb not in served:
            if verb == "bind":
                message = (
                    f"no binder is configured: profile {name!r} does not serve bind (it serves "
                    f"{', '.join(served)}); enable a bind plugin and add bind to its verbs"
                )
            else:
                message = f"profile {name!r} does not serve {verb} (it serves {', '.join(served)})"
            return error_answer(verb, 404, message)
        return framework

    def filter(self, framework: Framework, body: bytes) -> tuple[Answer, FilterOutcome | None]:
        """Answer a filter body; the outcome is ``None`` when the body was rejected."""
        try:
            args = codec.decode_extender_args(body, keep_raw=True)
            snapshot = self._snapshot()
            if snapshot is not None and not snapshot.synced:
                return Answer(200, codec.encode_filter_error(NOT_SYNCED)), None
            nodes, unknown = self.resolve_nodes(framework, args, snapshot)
            outcome = framework.run_filter(args.pod, nodes)
            if outcome.error:
                log.warning("filter %s: %s", args.pod.key(), outcome.error)
                return Answer(200, codec.encode_filter_error(outcome.error)), outcome
            if unknown:
                total = len(args.node_name_list())
                outcome.statuses = _merge_unknown(outcome.statuses, unknown, total, _UNKNOWN_STATUS)
            return Answer(200, codec.encode_filter_result(args, outcome.statuses)), outcome
        except codec.DecodeError as exc:
            return error_answer("filter", 400, str(exc)), None

    def prioritize(self, framework: Framework, body: bytes) -> tuple[Answer, ScoreOutcome | None]:
        """Answer a prioritize body; the outcome is ``None`` when the body was rejected or a
        fail-closed plugin erred (HTTP 500)."""
        try:
            args = codec.decode_extender_args(body, keep_raw=False)
            snapshot = self._snapshot()
            if snapshot is not None and not snapshot.synced:
                return error_answer("prioritize", 503, NOT_SYNCED), None
            nodes, unknown = self.resolve_nodes(framework, args, snapshot)
            outcome = framework.run_score(args.pod, nodes)
        except codec.DecodeError as exc:
            return error_answer("prioritize", 400, str(exc)), None
        except FrameworkError as exc:
            log.warning("prioritize: %s", exc)
            return error_answer("prioritize", 500, str(exc)), None
        if unknown:
            outcome.scores = _merge_unknown(outcome.scores, unknown, len(args.node_name_list()), 0)
        return Answer(200, codec.encode_host_priority_list(args.node_name_list(), outcome.scores)), outcome

    def preempt(self, framework: Framework, body: bytes) -> Answer:
        """Answer a preempt body: always ``NodeNameToMetaVictims`` with UIDs."""
        try:
            args = codec.decode_preemption_args(body)
            snapshot = self._snapshot()
            if snapshot is not None:
                if not snapshot.synced:
                    return error_answer("preempt", 503, NOT_SYNCED)
                resolve_victims(args.candidates, snapshot)
            candidates = framework.run_preemption(args.pod, args.candidates)
        except codec.DecodeError as exc:
            return error_answer("preempt", 400, str(exc))
        except FrameworkError as exc:
            log.warning("preempt: %s", exc)
            return error_answer("preempt", 500, str(exc))
        return Answer(200, codec.encode_preemption_result(candidates))

    async def bind(self, framework: Framework, body: bytes) -> Answer:
        """Answer a bind body: ``{"Error": ""}`` when a bind plugin bound the pod."""
        try:
            pod, node = codec.decode_binding_args(body)
        except codec.DecodeError as exc:
            return error_answer("bind", 400, str(exc))
        status = await framework.run_bind(pod, node)
        if not status.is_success():
            log.warning("bind %s/%s to %s: %s", pod.namespace, pod.name, node, status.message)
        return Answer(200, codec.encode_binding_result("" if status.is_success() else status.message))


_UNKNOWN_STATUS = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (UNKNOWN_NODE,), "ClusterState")


def _merge_unknown(known: list[Any], unknown: list[int], total: int, fill: Any) -> list[Any]:
    """Re-align per-node results of the known nodes with the request's node order, ``fill`` for
    the nodes the cache does not know (the unknown-node status, or score 0)."""
    out: list[Any] = []
    it = iter(known)
    skip = set(unknown)
    for i in range(total):
        out.append(fill if i in skip else next(it))
    return out


def resolve_victims(candidates: dict[str, Victims], snapshot: Snapshot) -> None:
    """Replace UID-only victims (cache mode) by the cached pod records where the cache has them."""
    for node, victims in candidates.items():
        victims.pods = [(snapshot.pod(node, p.uid) or p) if p.pod is None and not p.name else p for p in victims.pods]


__all__ = ["NOT_SYNCED", "UNKNOWN_NODE", "Answer", "ExtenderService", "error_answer", "error_body", "resolve_victims"]

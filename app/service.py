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

from app import codec
from app.config import Configuration
from app.framework.profile import Verb
from app.framework.runtime import FilterOutcome, Framework, FrameworkError, ScoreOutcome

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


class ExtenderService:
    """The profiles' frameworks behind the four verbs."""

    def __init__(self, config: Configuration, frameworks: Mapping[str, Framework]) -> None:
        self.config = config
        self.frameworks = dict(frameworks)
        self.verbs: dict[str, tuple[Verb, ...]] = {p.name: tuple(p.extender.verbs) for p in config.profiles}
        self.default_profile = config.default_profile

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
            outcome = framework.run_filter(args.pod, args.nodes)
            if outcome.error:
                log.warning("filter %s: %s", args.pod.key(), outcome.error)
                return Answer(200, codec.encode_filter_error(outcome.error)), outcome
            return Answer(200, codec.encode_filter_result(args, outcome.statuses)), outcome
        except codec.DecodeError as exc:
            return error_answer("filter", 400, str(exc)), None

    def prioritize(self, framework: Framework, body: bytes) -> tuple[Answer, ScoreOutcome | None]:
        """Answer a prioritize body; the outcome is ``None`` when the body was rejected or a
        fail-closed plugin erred (HTTP 500)."""
        try:
            args = codec.decode_extender_args(body, keep_raw=False)
            outcome = framework.run_score(args.pod, args.nodes)
        except codec.DecodeError as exc:
            return error_answer("prioritize", 400, str(exc)), None
        except FrameworkError as exc:
            log.warning("prioritize: %s", exc)
            return error_answer("prioritize", 500, str(exc)), None
        return Answer(200, codec.encode_host_priority_list(args.nodes, outcome.scores)), outcome

    def preempt(self, framework: Framework, body: bytes) -> Answer:
        """Answer a preempt body: always ``NodeNameToMetaVictims`` with UIDs."""
        try:
            args = codec.decode_preemption_args(body)
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


__all__ = ["Answer", "ExtenderService", "error_answer", "error_body"]

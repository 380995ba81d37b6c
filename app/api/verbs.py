"""The one table of the extender verbs (:data:`VERBS`): for each, its wire types, decoder,
handler and error encoder. The HTTP edge (:mod:`app.api.edge`), ``replay`` and the OpenAPI
document all read it.

A verb's life: the edge reads the body, ``decode`` turns it into the handler's input (raising
:class:`~app.extender.codec.DecodeError` for a client mistake, answered 400 through ``error``),
and ``handle`` (an :class:`~app.api.service.ExtenderService` method) answers it. ``blocking``
verbs (filter, prioritize, preempt: CPU work linear in the body) whose plugins evaluate more than
:data:`INLINE_WEIGHT` nodes or victims run in the verb worker thread, so the event loop keeps
answering ``/healthz``, ``/readyz`` and ``/metrics``; bind is a coroutine (its Binding call waits
on the API server).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from app.api.service import Answer, ExtenderService, error_answer
from app.extender import codec, models
from app.framework.runtime import Framework

#: Blocking verbs whose plugins evaluate at most this many nodes (or victims) run on the event
#: loop: at the stateful plugins' ~13 us per node, at most ~15 ms; the hop to the worker thread
#: costs 0.4 to 2 ms (measured, ``make bench``), a fifth of a 100-node answer.
INLINE_WEIGHT = 1000
#: Blocking verbs whose decoding is not one msgspec pass (preempt: victims are counted and folded
#: one by one) decode on the loop only below this body size (bytes).
INLINE_BODY_BYTES = 128 * 1024

#: How a verb decodes its body: (body bytes, limits, the service's memo) -> the handler's input;
#: raises :class:`~app.extender.codec.DecodeError`
Decode = Callable[[bytes | bytearray, codec.Limits, codec.RequestMemo], Any]


@dataclass(frozen=True)
class Verb:
    """One extender verb (``POST /{verb}`` and ``POST /{profile}/{verb}``)."""

    name: str
    #: the request and result types (pydantic: the documented contract, OpenAPI, ``schemas/``)
    request: type[BaseModel]
    result: type[BaseModel]
    summary: str
    #: (body bytes, limits, the service's memo) -> the handler's input; raises DecodeError
    decode: Decode
    #: (service, framework, decoded input) -> Answer, or an awaitable Answer when not ``blocking``;
    #: a node that a plugin reads lazily and that does not decode is answered 400 by the handler
    handle: Callable[[ExtenderService, Framework, Any], Answer | Awaitable[Answer]]
    #: CPU work (filter, prioritize, preempt), as opposed to a coroutine (bind)
    blocking: bool
    #: decoding is one msgspec pass, linear in C (filter, prioritize): done on the loop at any size
    decode_on_loop: bool = False
    #: the decoded input -> how many nodes or victims the plugins will evaluate
    weight: Callable[[Any], int] = len
    #: ``decode`` keeping the nodes' ``status.images``, for a profile whose plugins read them
    #: (:attr:`ExtenderService.node_images`); ``None``: ``decode`` for every profile
    decode_images: Decode | None = None

    def error(self, status: int, message: str, retry_after: int | None = None) -> Answer:
        """This verb's result type carrying ``message`` in ``Error``, with an HTTP status."""
        return error_answer(self.name, status, message, retry_after)

    def decoded(self, service: ExtenderService, body: bytes | bytearray, framework: Framework) -> Any:
        """The handler's input for ``framework``'s profile (its nodes with ``status.images`` when
        its plugins read them), or the 400 :class:`Answer` for a body that does not decode."""
        decode = self.decode
        if self.decode_images is not None and framework.profile in service.node_images:
            decode = self.decode_images
        try:
            return decode(body, service.limits, service.memo)
        except codec.DecodeError as exc:
            return self.error(400, str(exc))

    def run(self, service: ExtenderService, framework: Framework, body: bytes | bytearray) -> Answer:
        """Decode and answer a blocking verb's body (the worker thread's job for a large preempt
        body, whose decoding is not one msgspec pass)."""
        args = self.decoded(service, body, framework)
        if isinstance(args, Answer):
            return args
        answer = self.handle(service, framework, args)
        assert isinstance(answer, Answer)
        return answer

    async def run_async(self, service: ExtenderService, framework: Framework, body: bytes | bytearray) -> Answer:
        """Decode and answer a non-blocking verb's body (bind) on the event loop."""
        args = self.decoded(service, body, framework)
        if isinstance(args, Answer):
            return args
        answer = self.handle(service, framework, args)
        assert not isinstance(answer, Answer)
        return await answer


def _extender_args(keep_raw: bool, images: bool = False) -> Decode:
    """filter's (``keep_raw``) or prioritize's decoding of ``ExtenderArgs``, with the service's memo."""

    def decode(body: bytes | bytearray, limits: codec.Limits, memo: codec.RequestMemo) -> codec.ExtenderArgsView:
        return codec.decode_extender_args(body, limits, keep_raw=keep_raw, images=images, memo=memo)

    return decode


def _victims(args: codec.PreemptionArgsView) -> int:
    return len(args.candidates) + sum(len(v.pods) for v in args.candidates.values())


VERBS: dict[str, Verb] = {
    verb.name: verb
    for verb in (
        Verb(
            "filter",
            models.ExtenderArgs,
            models.ExtenderFilterResult,
            "Filter: which of the candidate nodes the pod may run on (ExtenderArgs -> ExtenderFilterResult).",
            _extender_args(keep_raw=True),
            ExtenderService.filter,
            blocking=True,
            decode_on_loop=True,
            decode_images=_extender_args(keep_raw=True, images=True),
        ),
        Verb(
            "prioritize",
            models.ExtenderArgs,
            models.HostPriorityList,
            "Prioritize: a 0..10 score per node (ExtenderArgs -> HostPriorityList, a bare array).",
            _extender_args(keep_raw=False),
            ExtenderService.prioritize,
            blocking=True,
            decode_on_loop=True,
            decode_images=_extender_args(keep_raw=False, images=True),
        ),
        Verb(
            "preempt",
            models.ExtenderPreemptionArgs,
            models.ExtenderPreemptionResult,
            "Preempt: the candidate nodes and victims this extender accepts, always as UIDs.",
            lambda body, limits, memo: codec.decode_preemption_args(body, limits),
            ExtenderService.preempt,
            blocking=True,
            weight=_victims,
        ),
        Verb(
            "bind",
            models.ExtenderBindingArgs,
            models.ExtenderBindingResult,
            "Bind: bind the pod to the node (ExtenderBindingArgs -> ExtenderBindingResult).",
            lambda body, limits, memo: codec.decode_binding_args(body, limits),
            ExtenderService.bind,
            blocking=False,
        ),
    )
}


def openapi_paths() -> tuple[dict[str, Any], list[type[BaseModel]]]:
    """The OpenAPI ``paths`` of the verbs (both routes each), and the models they reference."""
    json = "application/json"
    paths: dict[str, Any] = {}
    used: list[type[BaseModel]] = []
    for verb in VERBS.values():
        used += [verb.request, verb.result]

        def ref(model: type[BaseModel]) -> dict[str, Any]:
            return {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}

        error = {json: ref(verb.result)}
        mismatch = (
            "200 with Error (unknown profile, unserved verb, or NodeNames without cluster state)"
            if verb.name in ("filter", "bind")
            else "404 (unknown profile, unserved verb) or 400 (NodeNames without cluster state)"
        )
        operation: dict[str, Any] = {
            "tags": ["extender"],
            "summary": verb.summary,
            "requestBody": {"required": True, "content": {json: ref(verb.request)}},
            "responses": {
                "200": {"description": f"{verb.result.__name__}", "content": {json: ref(verb.result)}},
                "400": {"description": "malformed body or a limit exceeded; Error says which", "content": error},
                "404": {"description": f"a configuration mismatch: {mismatch}", "content": error},
                "408": {"description": "the body did not arrive within server.timeouts.body", "content": error},
                "413": {"description": "body larger than server.maxRequestBytes", "content": error},
                "500": {"description": "a fail-closed plugin erred (prioritize, preempt)", "content": error},
                "503": {
                    "description": "overloaded (connections, requests or bytes in flight) or not synced; "
                    "see Retry-After",
                    "content": error,
                },
            },
        }
        for path, suffix in ((f"/{verb.name}", ""), (f"/{{profile}}/{verb.name}", "_profile")):
            op: dict[str, Any] = {**operation, "operationId": f"{verb.name}{suffix}"}
            if suffix:
                op["parameters"] = [{"name": "profile", "in": "path", "required": True, "schema": {"type": "string"}}]
            paths[path] = {"post": op}
    return paths, used


__all__ = ["INLINE_BODY_BYTES", "INLINE_WEIGHT", "VERBS", "Decode", "Verb", "openapi_paths"]

"""The one table of the extender verbs: for each, its wire types, decoder, handler and error
encoder. The HTTP edge (:mod:`app.api.edge`), ``replay`` and the OpenAPI document all read it.

A verb's life: the edge reads the body, ``decode`` turns it into the handler's input (raising
:class:`~app.extender.codec.DecodeError` for a client mistake, answered 400 through ``error``),
and ``handle`` answers it. ``blocking`` verbs (filter, prioritize, preempt: CPU work linear in
the body) run in the verb worker thread so the event loop keeps answering ``/healthz``,
``/readyz`` and ``/metrics``; bind is a coroutine (its Binding call waits on the API server).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from pydantic import BaseModel

from app.api.handlers import Answer, ExtenderService, error_answer
from app.extender import codec, models
from app.framework.runtime import Framework
from app.framework.types import ObjectDecodeError


@dataclass(frozen=True)
class Verb:
    """One extender verb (``POST /{verb}`` and ``POST /{profile}/{verb}``)."""

    name: str
    #: the request and result types (pydantic: the documented contract, OpenAPI, ``schemas/``)
    request: type[BaseModel]
    result: type[BaseModel]
    summary: str
    #: body bytes -> the handler's input; raises DecodeError
    decode: Callable[[bytes | bytearray, codec.Limits], Any]
    #: (service, framework, decoded input) -> Answer, or an awaitable Answer when not ``blocking``
    handle: Callable[[ExtenderService, Framework, Any], Answer | Awaitable[Answer]]
    blocking: bool

    def error(self, status: int, message: str, retry_after: int | None = None) -> Answer:
        """This verb's result type carrying ``message`` in ``Error``, with an HTTP status."""
        return error_answer(self.name, status, message, retry_after)

    def run(self, service: ExtenderService, framework: Framework, body: bytes | bytearray) -> Answer:
        """Decode and answer a blocking verb's body (the worker thread's whole job)."""
        try:
            answer = self.handle(service, framework, self.decode(body, service.limits))
        except ObjectDecodeError as exc:  # the body, or a node a plugin read lazily
            return self.error(400, str(exc))
        assert isinstance(answer, Answer)
        return answer

    async def run_async(self, service: ExtenderService, framework: Framework, body: bytes | bytearray) -> Answer:
        """Decode and answer a non-blocking verb's body (bind) on the event loop."""
        try:
            args = self.decode(body, service.limits)
        except codec.DecodeError as exc:
            return self.error(400, str(exc))
        answer = self.handle(service, framework, args)
        assert not isinstance(answer, Answer)
        return await answer


VERBS: dict[str, Verb] = {
    verb.name: verb
    for verb in (
        Verb(
            "filter",
            models.ExtenderArgs,
            models.ExtenderFilterResult,
            "Filter: which of the candidate nodes the pod may run on (ExtenderArgs -> ExtenderFilterResult).",
            partial(codec.decode_extender_args, keep_raw=True),
            ExtenderService.filter,
            blocking=True,
        ),
        Verb(
            "prioritize",
            models.ExtenderArgs,
            models.HostPriorityList,
            "Prioritize: a 0..10 score per node (ExtenderArgs -> HostPriorityList, a bare array).",
            partial(codec.decode_extender_args, keep_raw=False),
            ExtenderService.prioritize,
            blocking=True,
        ),
        Verb(
            "preempt",
            models.ExtenderPreemptionArgs,
            models.ExtenderPreemptionResult,
            "Preempt: the candidate nodes and victims this extender accepts, always as UIDs.",
            codec.decode_preemption_args,
            ExtenderService.preempt,
            blocking=True,
        ),
        Verb(
            "bind",
            models.ExtenderBindingArgs,
            models.ExtenderBindingResult,
            "Bind: bind the pod to the node (ExtenderBindingArgs -> ExtenderBindingResult).",
            codec.decode_binding_args,
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

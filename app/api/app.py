"""The FastAPI application: the four verbs per profile, health, readiness, version and metrics.

Routes: ``POST /{verb}`` (the default profile) and ``POST /{profile}/{verb}`` for ``filter``,
``prioritize``, ``preempt`` and ``bind``; ``GET /healthz``, ``/readyz``, ``/version``,
``/metrics``. Request bodies are read as bytes whatever the Content-Type (``curl -d @file``
works) and decoded once by :mod:`app.codec`; bodies over ``server.maxRequestBytes`` get 413.
"""

from __future__ import annotations

import logging
import platform
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app import __version__
from app.api.metrics import Metrics
from app.extender import models
from app.framework.runtime import FilterOutcome
from app.framework.status import Code
from app.service import Answer, ExtenderService, error_answer

log = logging.getLogger(__name__)

_JSON = "application/json"
_VERB_MODELS: dict[str, tuple[type[Any], type[Any]]] = {
    "filter": (models.ExtenderArgs, models.ExtenderFilterResult),
    "prioritize": (models.ExtenderArgs, models.HostPriorityList),
    "preempt": (models.ExtenderPreemptionArgs, models.ExtenderPreemptionResult),
    "bind": (models.ExtenderBindingArgs, models.ExtenderBindingResult),
}
_VERB_DOCS = {
    "filter": "Filter: which of the candidate nodes the pod may run on (ExtenderArgs -> ExtenderFilterResult).",
    "prioritize": "Prioritize: a 0..10 score per node (ExtenderArgs -> HostPriorityList, a bare array).",
    "preempt": "Preempt: the candidate nodes and victims this extender accepts, always as UIDs.",
    "bind": "Bind: bind the pod to the node (ExtenderBindingArgs -> ExtenderBindingResult).",
}


Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class ClientDisconnectedError(Exception):
    """The client went away before sending the whole body: there is nobody to answer."""


async def read_body(headers: Iterable[tuple[bytes, bytes]], receive: Receive, limit: int) -> bytes | None:
    """The whole ASGI request body, or ``None`` when it exceeds ``limit`` bytes (checked against
    Content-Length first, then while streaming, so an oversized body is never buffered).

    Raises :class:`ClientDisconnectedError` when the client disconnects mid-body.
    """
    for name, value in headers:
        if name == b"content-length" and value.isdigit() and int(value) > limit:
            return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnectedError
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _count_filter(metrics: Metrics, profile: str, outcome: FilterOutcome) -> None:
    rejected: dict[tuple[str, str], int] = {}
    passed = 0
    for status in outcome.statuses:
        if status.code is Code.SUCCESS:
            passed += 1
        else:
            key = (
                status.plugin,
                "Unschedulable" if status.code is Code.UNSCHEDULABLE else "UnschedulableAndUnresolvable",
            )
            rejected[key] = rejected.get(key, 0) + 1
    if passed:
        metrics.filter_nodes.labels(profile, "", "Passed").inc(passed)
    for (plugin, result), n in rejected.items():
        metrics.filter_nodes.labels(profile, plugin, result).inc(n)
    for plugin, n in outcome.ignored_errors.items():
        metrics.filter_nodes.labels(profile, plugin, "IgnoredError").inc(n)
    if outcome.error:
        metrics.filter_nodes.labels(profile, outcome.error_plugin, "Error").inc()


def create_app(service: ExtenderService) -> VerbRouter:
    """Build the ASGI app serving ``service``'s profiles: :class:`VerbRouter` in front of FastAPI."""
    app = FastAPI(
        title="Kubernetes scheduler extender",
        version=__version__,
        description="kube-scheduler's HTTP extender (k8s.io/kube-scheduler/extender/v1) with pluggable policies.",
    )
    metrics = Metrics(service.cluster.state if service.cluster is not None else None)
    app.state.service = service
    app.state.metrics = metrics
    limit = service.config.server.max_request_bytes

    async def answer(
        verb: str, profile: str | None, headers: Iterable[tuple[bytes, bytes]], receive: Receive
    ) -> Answer:
        target = service.resolve(profile, verb)
        label = profile if profile is not None else (service.default_profile or "")
        if isinstance(target, Answer):
            result = target
        else:
            body = await read_body(headers, receive, limit)
            started = time.perf_counter()
            if body is None:
                result = error_answer(verb, 413, f"request body exceeds server.maxRequestBytes ({limit} bytes)")
            else:
                try:
                    result = await _dispatch(verb, target, body)
                except Exception as exc:  # a bug of ours or a plugin's: never a stack trace on the wire
                    log.exception("%s on profile %s failed", verb, label)
                    result = error_answer(verb, 500, f"internal error: {type(exc).__name__}: {exc}")
            metrics.duration.labels(label, verb).observe(time.perf_counter() - started)
        metrics.requests.labels(label, verb, str(result.status)).inc()
        return result

    async def handle(request: Request, verb: str, profile: str | None) -> Response:
        result = await answer(verb, profile, request.scope["headers"], request.receive)
        return Response(content=result.body, status_code=result.status, media_type=_JSON)

    async def _dispatch(verb: str, framework: Any, body: bytes) -> Answer:
        if verb == "filter":
            answer, outcome = service.filter(framework, body)
            if outcome is not None:
                _count_filter(metrics, framework.profile, outcome)
            return answer
        if verb == "prioritize":
            return service.prioritize(framework, body)[0]
        if verb == "preempt":
            return service.preempt(framework, body)
        return await service.bind(framework, body)

    def make_routes(
        verb: str,
    ) -> tuple[Callable[[Request], Awaitable[Response]], Callable[..., Awaitable[Response]]]:
        async def default_route(request: Request) -> Response:
            return await handle(request, verb, None)

        async def profile_route(request: Request, profile: str) -> Response:
            return await handle(request, verb, profile)

        return default_route, profile_route

    for verb, (request_model, result_model) in _VERB_MODELS.items():
        default_route, profile_route = make_routes(verb)
        extra = {
            "requestBody": {
                "required": True,
                "content": {_JSON: {"schema": {"$ref": f"#/components/schemas/{request_model.__name__}"}}},
            }
        }
        responses: dict[int | str, dict[str, Any]] = {
            200: {
                "description": f"{result_model.__name__}",
                "content": {_JSON: {"schema": {"$ref": f"#/components/schemas/{result_model.__name__}"}}},
            },
            400: {"description": "malformed body; the verb's result type carries Error"},
            404: {"description": "unknown profile, or a verb the profile does not serve"},
            413: {"description": "body larger than server.maxRequestBytes"},
            500: {"description": "a fail-closed plugin erred (prioritize, preempt) or an internal error"},
        }
        for path, endpoint in ((f"/{verb}", default_route), (f"/{{profile}}/{verb}", profile_route)):
            app.add_api_route(
                path,
                endpoint,
                methods=["POST"],
                summary=_VERB_DOCS[verb],
                openapi_extra=extra,
                responses=responses,
                response_class=Response,
                name=f"{verb}{'_profile' if '{profile}' in path else ''}",
                tags=["extender"],
            )

    @app.get("/healthz", response_class=PlainTextResponse, tags=["health"])
    async def healthz() -> str:
        """Liveness: the process answers."""
        return "ok"

    @app.get("/readyz", tags=["health"])
    async def readyz() -> JSONResponse:
        """Readiness: 200 when every profile can answer; 503 with the reason while the cluster
        state has not synced, or when its list/watch has failed for longer than ``staleAfter``."""
        body: dict[str, Any] = {"status": "ready", "profiles": list(service.frameworks)}
        if service.cluster is not None:
            ready, reason = service.cluster.state.ready()
            body["cluster"] = reason
            if not ready:
                body["status"] = "not ready"
                return JSONResponse(body, status_code=503)
        return JSONResponse(body)

    @app.get("/profiles", tags=["health"])
    async def profiles() -> dict[str, Any]:
        """The profiles served and, for each, the ``extenders:`` settings kube-scheduler must use
        (what ``render`` writes and ``check-scheduler-config`` compares a user's file with)."""
        tls = service.config.server.tls
        return {
            "defaultProfile": service.default_profile,
            "tls": tls is not None,
            "clientCertificateRequired": bool(tls is not None and tls.client_ca_file),
            "profiles": [
                {"name": p.name, "path": f"/{p.name}"} | p.extender.model_dump(mode="json", by_alias=True)
                for p in service.config.profiles
            ],
        }

    @app.get("/version", tags=["health"])
    async def version() -> dict[str, str]:
        """The service's version and runtime."""
        return {"version": __version__, "python": platform.python_version()}

    @app.get("/metrics", tags=["health"])
    async def metrics_route() -> Response:
        """Prometheus metrics (text exposition format)."""
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for request_model, result_model in _VERB_MODELS.values():
                for model in (request_model, result_model):
                    model_schema = model.model_json_schema(
                        by_alias=True, ref_template="#/components/schemas/{model}", mode="serialization"
                    )
                    components.update(model_schema.pop("$defs", {}))
                    components[model.__name__] = model_schema
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return VerbRouter(app, answer)


_VERB_SET = frozenset(_VERB_MODELS)
_JSON_HEADER = (b"content-type", b"application/json")


class VerbRouter:
    """The hot path: answers ``POST /{verb}`` and ``POST /{profile}/{verb}`` as a plain ASGI app and
    hands every other request to the FastAPI app (``.fastapi``: health, metrics, OpenAPI, docs).

    FastAPI/Starlette's request and middleware layers cost about 2 ms on a 1.5 MB body and 10 ms on
    a 7.3 MB one (measured against a bare ASGI app on this machine class), more than the verbs'
    own work; the same verb handler backs the FastAPI routes, which document the contract.
    """

    def __init__(
        self,
        app: FastAPI,
        answer: Callable[[str, str | None, Iterable[tuple[bytes, bytes]], Receive], Awaitable[Answer]],
    ) -> None:
        self.fastapi = app
        self._answer = answer

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            parts = scope["path"].split("/")
            route: tuple[str, str | None] | None = None
            if len(parts) == 2 and parts[1] in _VERB_SET:
                route = (parts[1], None)
            elif len(parts) == 3 and parts[2] in _VERB_SET and parts[1]:
                route = (parts[2], parts[1])
            if route is not None:
                try:
                    result = await self._answer(route[0], route[1], scope["headers"], receive)
                except ClientDisconnectedError:
                    return
                headers = [_JSON_HEADER, (b"content-length", str(len(result.body)).encode())]
                await send({"type": "http.response.start", "status": result.status, "headers": headers})
                await send({"type": "http.response.body", "body": result.body})
                return
        await self.fastapi(scope, receive, send)  # type: ignore[arg-type]

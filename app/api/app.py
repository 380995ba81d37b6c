"""The application: :class:`~app.api.edge.VerbRouter` (the verbs) in front of a FastAPI app that
serves ``GET /healthz``, ``/readyz``, ``/profiles``, ``/version``, ``/metrics`` and the OpenAPI
document (``/openapi.json``, ``/docs``), whose verb paths come from the same table the router
serves (:data:`~app.api.verbs.VERBS`).
"""

from __future__ import annotations

import platform
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app import __version__
from app.api.edge import VerbRouter
from app.api.handlers import ExtenderService
from app.api.metrics import Metrics
from app.api.verbs import openapi_paths


def create_app(service: ExtenderService) -> VerbRouter:
    """Build the ASGI app serving ``service``'s profiles; its metrics observe the verbs."""
    app = FastAPI(
        title="Kubernetes scheduler extender",
        version=__version__,
        description="kube-scheduler's HTTP extender (k8s.io/kube-scheduler/extender/v1) with pluggable policies.",
    )
    metrics = Metrics(service.frameworks, service.cluster)
    service.observer = metrics
    app.state.service = service
    app.state.metrics = metrics

    @app.get("/healthz", response_class=PlainTextResponse, tags=["health"])
    async def healthz() -> str:
        """Liveness: the process answers (verb work runs off the event loop, so this answers
        while a request is being decoded or evaluated)."""
        return "ok"

    @app.get("/readyz", tags=["health"])
    async def readyz() -> JSONResponse:
        """Readiness: 200 when every profile can answer; 503 with the reason while the cluster
        state has not synced, or when its list/watch has failed for longer than ``staleAfter``.
        With cluster state, ``role`` says whether this replica binds: ``leader``, ``warming up``
        (after a start or a takeover) or ``follower`` (another replica's kube-scheduler holds the
        Lease); all three are ready, as filter answers on each."""
        body: dict[str, Any] = {"status": "ready", "profiles": list(service.frameworks)}
        if service.cluster is not None:
            ready, reason = service.cluster.state.ready()
            body["cluster"] = reason
            body["role"] = service.cluster.role()
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
            paths, models = openapi_paths()
            schema["paths"] = paths | schema.get("paths", {})
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for model in models:
                model_schema = model.model_json_schema(
                    by_alias=True, ref_template="#/components/schemas/{model}", mode="serialization"
                )
                components.update(model_schema.pop("$defs", {}))
                components[model.__name__] = model_schema
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return VerbRouter(service, app, metrics, service.config.server)

"""The application: :class:`~app.api.edge.VerbRouter` (the verbs) in front of a FastAPI app that
serves the :data:`ROUTES` table (``GET /`` a JSON pointer to the rest, ``/healthz``, ``/readyz``,
``/profiles``, ``/explain/{namespace}/{name}``, ``/version``, ``/metrics``), each answered by a
method of :class:`Routes`, and the OpenAPI document (``/openapi.json``, ``/docs``), whose verb paths
come from the same table the router serves (:data:`~app.api.verbs.VERBS`).
"""

from __future__ import annotations

import platform
from functools import partial
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi_offline import FastAPIOffline
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app import __version__
from app.api.edge import PEER_CN, VerbRouter
from app.api.explain import Explanation
from app.api.metrics import Metrics
from app.api.service import ExtenderService
from app.api.verbs import VERBS, openapi_paths
from app.observe.capture import Capture

#: The endpoints besides the verbs: path, :class:`Routes` method answering ``GET`` on it, and
#: FastAPI's route options (OpenAPI tags, response class and model).
ROUTES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("/", "index", {"tags": ["health"]}),
    ("/healthz", "healthz", {"tags": ["health"], "response_class": PlainTextResponse}),
    ("/readyz", "readyz", {"tags": ["health"]}),
    ("/profiles", "profiles", {"tags": ["health"]}),
    (
        "/explain/{namespace}/{name}",
        "explain",
        {
            "tags": ["diagnostics"],
            "response_model": Explanation,
            "response_model_by_alias": True,
            "response_model_exclude_none": True,
            "responses": {
                404: {"description": "No decision is recorded for this pod"},
                403: {"description": "No client certificate"},
            },
        },
    ),
    ("/version", "version", {"tags": ["health"]}),
    ("/metrics", "metrics", {"tags": ["health"]}),
)


class Routes:
    """The answers of :data:`ROUTES` for ``service`` (each method's docstring is its OpenAPI
    description)."""

    def __init__(self, service: ExtenderService, metrics: Metrics) -> None:
        self.service = service
        self._metrics = metrics
        tls = service.config.server.tls
        self._explain_needs_certificate = bool(tls is not None and tls.client_ca_file)

    async def index(self) -> dict[str, Any]:
        """What this service answers: the verbs (``POST``, also under ``/{profile}/``), the profiles,
        the other endpoints and the API documentation (``/docs``)."""
        service = self.service
        return {
            "service": "scheduler-extender",
            "version": __version__,
            "docs": "/docs",
            "openapi": "/openapi.json",
            "verbs": [f"POST /{verb}" for verb in VERBS] + [f"POST /{{profile}}/{verb}" for verb in VERBS],
            "defaultProfile": service.default_profile,
            "profiles": [{"name": p.name, "verbs": list(p.extender.verbs)} for p in service.config.profiles],
            "endpoints": [path for path, _, _ in ROUTES if path != "/"],
        }

    async def healthz(self) -> str:
        """Liveness: the process answers (verb work runs off the event loop, so this answers
        while a request is being decoded or evaluated)."""
        return "ok"

    async def readyz(self) -> JSONResponse:
        """Readiness: 200 when every profile can answer; 503 with the reason while the cluster
        state has not synced, when its list/watch has failed for longer than ``staleAfter``, or
        when a background worker (reflector, scheduler, ...) ended by itself. ``workers`` lists
        each worker's last error while any has one.
        With cluster state, ``role`` says what this replica does: ``leader`` (it holds the Lease,
        or there is no election, and binds or schedules), ``leader (warming up)`` (it holds the
        Lease but waits: the cluster state's sync, or the warm-up after a start or a takeover) or
        ``standby`` (another replica holds the Lease); with leader election, ``leases`` gives each
        Lease's holder and this replica's role for it. All are ready: filter answers on each."""
        service = self.service
        body: dict[str, Any] = {"status": "ready", "profiles": list(service.frameworks)}
        if service.health is not None:
            health = service.health()
            if any(h.error for h in health):
                body["workers"] = {h.name: h.error or "ok" for h in health}
            ended = [h.name for h in health if not h.running]
            if ended:  # a background loop ended by itself: the service is no longer complete
                body["status"] = "not ready"
                body["workers"] = {h.name: h.error or ("ended" if not h.running else "ok") for h in health}
                return JSONResponse(body, status_code=503)
        if service.cluster is not None:
            ready, reason = service.cluster.health.ready()
            body["cluster"] = reason
            if service.leadership is not None:
                body["role"] = service.leadership.role()
                if service.leadership.elected:
                    body["leases"] = {
                        r.lease: {"holder": r.holder, "role": r.role} for r in service.leadership.leases()
                    }
            if not ready:
                body["status"] = "not ready"
                return JSONResponse(body, status_code=503)
        return JSONResponse(body)

    async def profiles(self) -> dict[str, Any]:
        """The profiles served and, for each, the ``extenders:`` settings kube-scheduler must use
        (what ``render`` writes and ``check-scheduler-config`` compares a user's file with)."""
        service = self.service
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

    async def explain(self, namespace: str, name: str, request: Request) -> Any:
        """The pod's recent decisions, oldest first: per attempt, each node's verdict, deciding
        plugin, reason and scores, and the outcome. With ``server.tls.clientCAFile`` set, only a
        caller with a client certificate that CA signed may read it (it names pods and nodes)."""
        if self._explain_needs_certificate and not request.scope.get(PEER_CN):
            return JSONResponse(
                {"detail": "explain needs a TLS client certificate signed by server.tls.clientCAFile"}, 403
            )
        store = self.service.decisions
        if store is None:
            return JSONResponse({"detail": "decision records are off (diagnostics.decisions.enabled: false)"}, 404)
        attempts = store.get(namespace, name)
        if not attempts:
            return JSONResponse(
                {"detail": f"no decision recorded for pod {namespace}/{name} in the last {store.max_age:g}s"}, 404
            )
        uid = attempts[-1].uid
        return {"pod": {"namespace": namespace, "name": name, "uid": uid}, "attempts": [a.explain() for a in attempts]}

    async def version(self) -> dict[str, str]:
        """The service's version and runtime."""
        return {"version": __version__, "python": platform.python_version()}

    async def metrics(self) -> Response:
        """Prometheus metrics (text exposition format)."""
        return Response(generate_latest(self._metrics.registry), media_type=CONTENT_TYPE_LATEST)


def create_app(service: ExtenderService, metrics: Metrics, capture: Capture | None = None) -> VerbRouter:
    """The ASGI app serving ``service``'s profiles: the verb router in front of the FastAPI app of
    :data:`ROUTES`. ``metrics``: the collectors ``/metrics`` exposes and the router counts into
    (the decisions' counts come from ``service``'s listeners: the composition root gives it
    :meth:`Metrics.decided`); ``capture``: ``diagnostics.capture``'s writer, or ``None``."""
    # the /docs and /redoc pages with their scripts and styles served from the package
    # (fastapi-offline): they work on an air-gapped control plane
    app = FastAPIOffline(
        title="Kubernetes scheduler extender",
        version=__version__,
        description="kube-scheduler's HTTP extender (k8s.io/kube-scheduler/extender/v1) with pluggable policies.",
    )
    routes = Routes(service, metrics)
    for path, endpoint, options in ROUTES:
        app.add_api_route(path, getattr(routes, endpoint), methods=["GET"], **options)
    app.openapi = partial(_openapi, app)  # type: ignore[method-assign]
    return VerbRouter(service, app, metrics, service.config.server, capture)


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document of ``app``'s routes plus the verbs' paths and wire models (built once)."""
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


__all__ = ["ROUTES", "Routes", "create_app"]

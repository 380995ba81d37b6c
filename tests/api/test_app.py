"""The app in-process: OpenAPI contract, internal errors, and the routes kube-scheduler composes."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import httpx
import pytest

from app.bootstrap import Assembly, build_app, load_assembly
from app.config import API_VERSION, KIND, Configuration, load_config
from app.framework import CycleState, EnabledPlugin, NodeInfo, PodInfo, PreFilterResult, Status, plugin_lists
from app.framework.runtime import Framework
from app.plugins import default_registry
from tests.support.bodies import fixture_bytes


class AppClient:
    """The ASGI app called in-process through httpx's ``ASGITransport`` (one event loop per call),
    for plugins that only a test defines; the e2e tests run the real server."""

    def __init__(self, app: Any, raise_server_exceptions: bool = True) -> None:
        self.app = app
        self.raise_app_exceptions = raise_server_exceptions

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        async def call() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app, raise_app_exceptions=self.raise_app_exceptions)
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
                return await c.request(method, url, **kwargs)

        return asyncio.run(call())

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)


def client() -> AppClient:
    return AppClient(build_app(load_assembly(None)))


def test_openapi_documents_the_wire_types() -> None:
    spec = client().get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    assert set(schemas["ExtenderArgs"]["properties"]) == {"Pod", "Nodes", "NodeNames"}
    assert set(schemas["ExtenderFilterResult"]["properties"]) == {
        "Nodes",
        "NodeNames",
        "FailedNodes",
        "FailedAndUnresolvableNodes",
        "Error",
    }
    assert schemas["HostPriorityList"]["anyOf"][0]["type"] == "array"
    for verb in ("filter", "prioritize", "preempt", "bind"):
        assert "post" in spec["paths"][f"/{verb}"] and "post" in spec["paths"][f"/{{profile}}/{verb}"]
    ref = spec["paths"]["/filter"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert ref == "#/components/schemas/ExtenderArgs"


def test_profile_route_equals_default_route() -> None:
    c = client()
    body = fixture_bytes("extenderargs_nocache_n10.json")
    assert c.post("/filter", content=body).content == c.post("/default/filter", content=body).content
    assert c.post("/prioritize", content=body).json() == c.post("/default/prioritize", content=body).json()


class Exploding:
    name = "Exploding"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        raise AssertionError("a bug in the framework's caller")  # caught by the runtime -> Error

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        raise AssertionError


def test_plugin_crash_is_an_error_answer_not_a_stack_trace() -> None:
    registry = default_registry(load_entry_points=False)
    config = load_config(None, registry)
    fw = Framework("default", plugin_lists(filter=[EnabledPlugin("Exploding", Exploding())]))
    c = AppClient(build_app(Assembly(config, {"default": fw})))
    r = c.post("/filter", content=fixture_bytes("extenderargs_nocache_n10.json"))
    assert r.status_code == 200
    assert r.json()["Error"] == "Exploding: PreFilter: plugin failed unexpectedly (the extender's log has the details)"
    assert "AssertionError" not in r.text
    assert "Traceback" not in r.text
    metrics = c.get("/metrics").text
    assert 'scheduler_extender_filter_nodes_total{plugin="Exploding",profile="default",result="Error"} 1.0' in metrics


def test_internal_error_is_500_with_the_verb_type() -> None:
    app = build_app(load_assembly(None))

    def broken(*args: object) -> object:
        raise RuntimeError("unexpected at 10.0.0.7:6443")

    app.service.resolve_nodes = broken  # type: ignore[method-assign]
    c = AppClient(app, raise_server_exceptions=False)
    r = c.post("/prioritize", content=fixture_bytes("extenderargs_nocache_n10.json"))
    assert r.status_code == 500
    assert r.json() == {"Error": "internal error while answering prioritize (the extender's log has the details)"}
    assert "RuntimeError" not in r.text and "10.0.0.7" not in r.text


class RecordingBinder:
    name = "RecordingBinder"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str, str]] = []

    async def bind(self, state: CycleState, pod: object, node_name: str) -> Status:
        self.calls.append((pod.namespace, pod.name, pod.uid, node_name))  # type: ignore[attr-defined]
        return Status()


def binding_client(insecure_bind: bool = True) -> tuple[AppClient, RecordingBinder]:
    config = Configuration.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "server": {"insecureBind": insecure_bind},
            "profiles": [
                {"name": "b", "extender": {"verbs": ["bind"]}, "plugins": {"bind": [{"name": "RecordingBinder"}]}}
            ],
        }
    )
    binder = RecordingBinder()
    fw = Framework("b", plugin_lists(bind=[EnabledPlugin("RecordingBinder", binder)]))
    return AppClient(build_app(Assembly(config, {"b": fw}))), binder


def test_bind_reaches_the_binder_with_the_uid() -> None:
    c, binder = binding_client()
    r = c.post("/b/bind", content=fixture_bytes("bindingargs.json"))
    assert r.status_code == 200 and r.json() == {"Error": ""}
    assert binder.calls == [
        (
            "shop",
            "web-frontend-8nwljbtfbb-p4hn7",
            "39da7cf8-9020-428c-8b8b-9036d30131c2",
            "ip-10-0-32-14.eu-west-1.compute.internal",
        )
    ]


@pytest.mark.parametrize(
    ("body", "message"),
    [(b"{}", "PodName, PodNamespace, PodUID, Node must be set"), (b'{"PodName":1}', "PodName")],
)
def test_malformed_bind_gets_400(body: bytes, message: str) -> None:
    c, binder = binding_client()
    r = c.post("/bind", content=body)
    assert r.status_code == 400
    assert message in r.json()["Error"] and set(r.json()) == {"Error"}
    assert binder.calls == []


def test_bind_without_tls_and_without_insecure_bind_is_refused() -> None:
    """Defence in depth: serve refuses this configuration, and the app still never binds for it."""
    c, binder = binding_client(insecure_bind=False)
    r = c.post("/b/bind", content=fixture_bytes("bindingargs.json"))
    assert r.status_code == 403
    assert r.json()["Error"].startswith("bind needs a TLS client certificate naming an identity of server.tls")
    assert binder.calls == []

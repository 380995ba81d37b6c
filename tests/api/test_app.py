"""The app in-process: OpenAPI contract, internal errors, and the routes kube-scheduler composes."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi.testclient import TestClient

from app.api import create_app
from app.cli import build_service
from app.config import load_config
from app.framework import CycleState, EnabledPlugin, Framework, NodeInfo, PodInfo, Status
from app.plugins import default_registry
from app.service import ExtenderService
from tests.support.bodies import fixture_bytes


def client() -> TestClient:
    return TestClient(create_app(build_service(None)))


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

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        raise AssertionError("a bug in the framework's caller")  # caught by the runtime -> Error

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        raise AssertionError


def test_plugin_crash_is_an_error_answer_not_a_stack_trace() -> None:
    registry = default_registry(load_entry_points=False)
    config = load_config(None, registry)
    fw = Framework("default", [EnabledPlugin("Exploding", Exploding())])
    c = TestClient(create_app(ExtenderService(config, {"default": fw})))
    r = c.post("/filter", content=fixture_bytes("extenderargs_cache_n10.json"))
    assert r.status_code == 200
    assert r.json()["Error"] == "Exploding: PreFilter: plugin raised AssertionError: a bug in the framework's caller"
    assert "Traceback" not in r.text


def test_internal_error_is_500_with_the_verb_type(monkeypatch: object) -> None:
    service = build_service(None)

    def broken(*args: object) -> object:
        raise RuntimeError("unexpected")

    service.prioritize = broken  # type: ignore[method-assign]
    c = TestClient(create_app(service), raise_server_exceptions=False)
    r = c.post("/prioritize", content=fixture_bytes("extenderargs_cache_n10.json"))
    assert r.status_code == 500
    assert r.json() == {"Error": "internal error: RuntimeError: unexpected"}

"""Verb work never holds the event loop: with a filter plugin blocked in the verb worker thread,
the real server (uvicorn with the guarded protocol, on a loopback port, in a thread of this
process so the test can hold the plugin) still answers /healthz, /readyz and /metrics, and shuts
down within ``server.timeouts.shutdown``."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import uvicorn

from app.api import edge
from app.api.edge import INLINE_SECONDS
from app.api.server import uvicorn_config
from app.api.verbs import INLINE_WEIGHT
from app.bootstrap import Assembly, build_app
from app.config import parse_config
from app.framework import SUCCESS, CycleState, EnabledPlugin, NodeInfo, PodInfo, PreFilterResult, Status, plugin_lists
from app.framework.runtime import Framework
from app.plugins import default_registry
from tests.conftest import free_port, serve_in_thread
from tests.support.bodies import fixture_bytes


class Gate:
    """A Filter plugin that waits, in PreFilter, until the test opens the gate."""

    name = "Gate"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.open = threading.Event()

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        self.entered.set()
        self.open.wait(30)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS


@pytest.fixture
def gated() -> Iterator[tuple[str, Gate, uvicorn.Server, threading.Thread]]:
    config = parse_config(
        {
            "apiVersion": "config.scheduler-extender.dev/v1alpha1",
            "kind": "ExtenderConfiguration",
            "server": {"timeouts": {"shutdown": "1s"}},
            "profiles": [
                {
                    "name": "default",
                    "extender": {"verbs": ["filter"], "nodeCacheCapable": True},
                    "plugins": {"filter": [{"name": "AnnotationNodeAffinity"}]},
                }
            ],
        },
        default_registry(load_entry_points=False),
    )
    gate = Gate()
    fw = Framework("default", plugin_lists(filter=[EnabledPlugin("Gate", gate)]))
    app = build_app(Assembly(config, {"default": fw}))
    port = free_port()
    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port, {"log_level": "warning"}))
    thread = serve_in_thread(server)
    yield f"http://127.0.0.1:{port}", gate, server, thread
    gate.open.set()
    server.should_exit = True
    thread.join(10)


def test_health_answers_while_a_verb_is_busy(gated: tuple[str, Gate, uvicorn.Server, threading.Thread]) -> None:
    url, gate, _, _ = gated
    body = fixture_bytes("extenderargs_cache_n5000.json")
    assert INLINE_WEIGHT < 5000  # this many nodes are evaluated in the worker thread
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(httpx.post, f"{url}/filter", content=body, timeout=30)
        assert gate.entered.wait(10), "the filter never reached the plugin"
        for path in ("/healthz", "/readyz", "/metrics"):
            assert httpx.get(f"{url}{path}", timeout=5).status_code == 200  # the plugin still blocks
        assert not pending.done()
        gate.open.set()
        answer = pending.result(timeout=10)
    assert answer.status_code == 200 and len(answer.json()["NodeNames"]) == 5000


def test_shutdown_does_not_wait_for_a_busy_verb(gated: tuple[str, Gate, uvicorn.Server, threading.Thread]) -> None:
    url, gate, server, thread = gated
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(httpx.post, f"{url}/filter", content=fixture_bytes("extenderargs_cache_n5000.json"))
        assert gate.entered.wait(10)
        server.should_exit = True
        thread.join(10)  # timeouts.shutdown is 1s: the serve loop ends although the plugin still blocks
        assert not thread.is_alive()
        assert not gate.open.is_set()
        gate.open.set()
        pending.exception(timeout=10)


class Where:
    """A Filter plugin that notes the thread each PreFilter ran on, taking ``seconds`` there."""

    name = "Where"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.threads: list[str] = []

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        self.threads.append(threading.current_thread().name)
        time.sleep(self.seconds)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS


@pytest.mark.parametrize(("seconds", "budget", "later"), [(0.0, 1.0, "loop"), (0.03, INLINE_SECONDS, "verb-worker")])
def test_a_verb_over_inline_weight_runs_on_the_loop_once_known_cheap(
    seconds: float, budget: float, later: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first filter of 5,000 names goes to the worker thread; once its profile's answers are
    known to take at most ``INLINE_SECONDS`` (``budget``: one second for the cheap case, so a
    busy test machine does not decide it), the next ones run on the loop (no thread hop); a
    slower one stays in the worker."""
    monkeypatch.setattr(edge, "INLINE_SECONDS", budget)
    where = Where(seconds)
    fw = Framework("default", plugin_lists(filter=[EnabledPlugin("Where", where)]))
    config = parse_config(
        {
            "apiVersion": "config.scheduler-extender.dev/v1alpha1",
            "kind": "ExtenderConfiguration",
            "profiles": [
                {
                    "name": "default",
                    "extender": {"verbs": ["filter"], "nodeCacheCapable": True},
                    "plugins": {"filter": [{"name": "AnnotationNodeAffinity"}]},
                }
            ],
        },
        default_registry(load_entry_points=False),
    )
    port = free_port()
    server = uvicorn.Server(
        uvicorn_config(build_app(Assembly(config, {"default": fw})), "127.0.0.1", port, {"log_level": "warning"})
    )
    thread = serve_in_thread(server)
    try:
        body = fixture_bytes("extenderargs_cache_n5000.json")
        with httpx.Client() as client:
            for _ in range(3):
                answer = client.post(f"http://127.0.0.1:{port}/filter", content=body, timeout=30)
                assert answer.status_code == 200 and len(answer.json()["NodeNames"]) == 5000
    finally:
        server.should_exit = True
        thread.join(10)
    assert INLINE_SECONDS < 0.03
    assert where.threads[0].startswith("verb-worker")
    assert all(
        name.startswith(later) if later != "loop" else not name.startswith("verb-worker") for name in where.threads[1:]
    )

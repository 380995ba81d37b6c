"""Decision store bounds, the log repeat filter and the JSON formatter, event aggregation and rate."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from app.framework.status import Status
from app.kube.errors import APIError
from app.observe.decisions import Decision, DecisionStore
from app.observe.events import EventRecorder, event_for
from app.observe.logs import JSONFormatter, RepeatFilter


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def decision(name: str, at: float, verb: str = "filter", **fields: Any) -> Decision:
    return Decision(at, "default", verb, "ns", name, f"uid-{name}", **fields)


def test_store_keeps_the_last_attempts_per_pod_and_drops_the_oldest_pods_first() -> None:
    clock = Clock()
    store = DecisionStore(max_records=5, max_age=60, attempts_per_pod=2, clock=clock)
    for i in range(3):
        store.add(decision("a", clock.now + i))
    assert [d.time for d in store.get("ns", "a")] == [1001.0, 1002.0] and len(store) == 2
    for name in ("b", "c", "d"):
        store.add(decision(name, clock.now + 3))
    assert len(store) == 5
    store.add(decision("e", clock.now + 4))  # 6 > 5: a's oldest goes first (least recently decided)
    assert len(store) == 5 and [d.time for d in store.get("ns", "a")] == [1002.0]
    store.add(decision("f", clock.now + 5))
    assert store.get("ns", "a") == [] and len(store) == 5
    clock.now += 70  # past maxAge: nothing is explained, and the next add trims
    assert store.get("ns", "b") == []
    store.add(decision("g", clock.now))
    assert len(store) == 1 and store.evicted == 8 and store.recorded == 9


def test_store_resolves_deferred_node_names() -> None:
    store = DecisionStore()
    d = decision("a", time.time(), names=lambda: ["n1", "n2"], statuses=[Status(), Status.unschedulable("full")])
    store.add(d)
    assert d.names == b'["n1","n2"]' and d.node_names() == ["n1", "n2"]  # packed: no reference to the request
    assert store.node_verdicts == 2
    nodes = store.get("ns", "a")[0].explain()["nodes"]
    assert nodes["n2"] == {"verdict": "Unschedulable", "plugin": "", "reason": "full", "reasonCode": "Unschedulable"}


def test_store_is_bounded_by_node_verdicts() -> None:
    store = DecisionStore(max_records=100, max_node_verdicts=1000, clock=Clock())
    for i in range(5):
        store.add(decision(f"p{i}", 1000.0 + i, names=[f"n{j}" for j in range(300)], statuses=[Status()] * 300))
    assert store.node_verdicts == 900 and len(store) == 3  # the two oldest pods made room
    assert store.get("ns", "p0") == [] and store.get("ns", "p4") != []


def test_repeat_filter_counts_identical_warnings_within_the_window() -> None:
    clock = Clock()
    repeat = RepeatFilter(window=60, clock=clock)

    def record(msg: str, level: int = logging.WARNING) -> logging.LogRecord:
        return logging.LogRecord("app.x", level, __file__, 1, msg, None, None)

    assert repeat.filter(record("api server unreachable"))
    assert not any(repeat.filter(record("api server unreachable")) for _ in range(4))
    assert repeat.filter(record("another warning")) and repeat.filter(record("info line", logging.INFO))
    clock.now += 61
    again = record("api server unreachable")
    assert repeat.filter(again)
    assert again.getMessage() == "api server unreachable (repeated 4 times in the last 60s)"
    line = json.loads(JSONFormatter().format(again))
    assert line["repeated"] == 4 and line["level"] == "warning" and line["logger"] == "app.x"


def test_events_aggregate_into_one_series_and_respect_the_rate() -> None:
    clock = Clock()
    calls: list[tuple[str, Any]] = []
    recorder = EventRecorder(
        lambda ns, body: calls.append(("create", body["metadata"]["name"])),
        lambda ns, name, patch: calls.append(("patch", patch["series"]["count"])),
        qps=1.0,
        burst=2,
        finish_time=360,
        refresh_time=1800,
        clock=clock,
    )
    rejected = decision("p", clock.now, statuses=[Status.unschedulable("full", code="PoolExhausted")], names=["n1"])
    event = event_for(rejected)
    assert event is not None and (event.reason, event.type) == ("PoolExhausted", "Warning")
    for _ in range(5):
        recorder.record(event)
    assert [c[0] for c in calls] == ["create", "patch"] and calls[1][1] == 2  # then counted only
    clock.now += 400
    recorder.tick()  # the series ended: its final count is written once
    assert calls[-1] == ("patch", 5) and len(calls) == 3
    # the budget is per pod (client-go's spam filter): other pods' events are all written
    other = [event_for(decision(f"q{i}", clock.now, verb="bind", node="n1", error="boom")) for i in range(3)]
    for e in other:
        assert e is not None
        recorder.record(e)
    assert recorder.dropped == 0 and len(calls) == 6
    # while p's own bucket (burst 2, one token a second) has one token left after the final write
    for e in (
        event_for(decision("p", clock.now, verb="bind", node="n1", error="boom")),
        event_for(decision("p", clock.now, error="gathering", error_code="PodGroupWaiting")),
    ):
        assert e is not None
        recorder.record(e)
    assert recorder.dropped == 1 and len(calls) == 7
    assert event_for(decision("ok", clock.now, verb="bind", node="n1")) is None


def test_a_series_whose_event_is_gone_is_created_again() -> None:
    calls: list[str] = []

    def patch(ns: str, name: str, body: Any) -> None:
        raise APIError(404, "NotFound", "gone")

    recorder = EventRecorder(lambda ns, body: calls.append(body.get("series", {}).get("count", 1)), patch)
    event = event_for(decision("p", 1.0, verb="bind", node="n1", error="boom"))
    assert event is not None
    recorder.record(event)
    recorder.record(event)
    assert calls == [1, 2] and recorder.posted == 2


def test_capture_selector_and_rotation(tmp_path: Any) -> None:
    import pytest

    from app.observe.capture import Capture, matches, parse_selector
    from tests.unit.helpers import pod

    selector = parse_selector("team, tier=web, env!=prod")
    assert matches(selector, {"team": "a", "tier": "web"}) and not matches(selector, {"team": "a", "tier": "db"})
    assert not matches(selector, {"team": "a", "tier": "web", "env": "prod"}) and not matches(selector, {"tier": "web"})
    with pytest.raises(ValueError, match="empty term"):
        parse_selector("a,,b")
    capture = Capture(str(tmp_path / "c.jsonl"), max_bytes=300, max_files=2, namespaces=["ns"], label_selector="")
    assert capture.wants(pod()) and not capture.wants(None)
    capture.start()
    for i in range(6):
        capture.offer("filter", "p", 200, b'{"Pod":{"metadata":{"name":"p%d"}}}' % i, b'{"Error":""}')
    capture.stop()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["c.jsonl", "c.jsonl.1", "c.jsonl.2"]  # rotated, at most maxFiles kept
    lines = [json.loads(line) for p in tmp_path.iterdir() for line in p.read_text().splitlines()]
    assert {line["request"]["Pod"]["metadata"]["name"] for line in lines} <= {f"p{i}" for i in range(6)}
    assert all(line["verb"] == "filter" and line["answer"] == {"Error": ""} for line in lines)
    assert capture.written == 6 and capture.queued == 0


def test_the_recorder_is_a_worker_that_writes_reports_failures_and_ends_on_stop() -> None:
    import asyncio
    import threading

    from app.kube.timefmt import micro_time

    written = threading.Event()
    bodies: list[dict[str, Any]] = []

    def create(ns: str, body: dict[str, Any]) -> None:
        if body["regarding"]["name"] == "refused":
            raise APIError(403, "Forbidden", "events is forbidden")
        bodies.append(body)
        written.set()

    recorder = EventRecorder(create, lambda ns, name, patch: None, clock=lambda: 1_700_000_000.5)
    refused = event_for(decision("refused", 1.0, verb="bind", node="n1", error="boom"))
    assert refused is not None
    recorder.record(refused)  # a failed write: dropped, and the worker's error
    assert recorder.dropped == 1 and "Forbidden" in recorder.error and recorder.errors == 1
    recorder.start()
    assert recorder.running
    event = event_for(decision("p", 1.0, verb="bind", node="n1", error="boom"))
    assert event is not None
    recorder.post(event)
    assert written.wait(10)
    assert bodies[0]["eventTime"] == micro_time(1_700_000_000.5) == "2023-11-14T22:13:20.500000Z"
    recorder.stop()  # does not wait: join does
    assert asyncio.run(recorder.join(10)) and not recorder.running
    assert recorder.error == ""  # the write that succeeded cleared it


def test_a_prioritize_decision_keeps_its_kind_of_score_and_explains_either_as_score() -> None:
    """The extender's 0..10 (``extender_scores``) and the standalone scheduler's ``TotalScore``
    (``total_scores``) are two fields; ``/explain`` shows the one set as each node's ``score``."""
    plugins = {"A": [30, 100]}
    extender = decision("p", 1.0, "prioritize", names=["n1", "n2"], extender_scores=[3, 10], plugin_scores=plugins)
    standalone = decision("p", 1.0, "prioritize", names=["n1", "n2"], total_scores=[60, 200], plugin_scores=plugins)
    assert (extender.total_scores, standalone.extender_scores) == ((), ())
    assert extender.explain()["nodes"] == {
        "n1": {"score": 3, "scores": {"A": 30}},
        "n2": {"score": 10, "scores": {"A": 100}},
    }
    assert standalone.explain()["nodes"] == {
        "n1": {"score": 60, "scores": {"A": 30}},
        "n2": {"score": 200, "scores": {"A": 100}},
    }
    assert extender.outcome() == {"topNodes": ["n2"], "topScore": 10}
    assert standalone.outcome() == {"topNodes": ["n2"], "topScore": 200}

"""Audit mode (``enforcement: audit``) from the configuration to the answer: what an audited plugin
may not do (reject a pod at PreFilter, weigh in a score, reserve, permit, bind), what it records,
the event it may post, and the configurations refused with their paths."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import orjson
import pytest

from app.api.service import ExtenderService
from app.api.verbs import VERBS
from app.bootstrap import assemble
from app.config import ConfigError, parse_config
from app.framework import (
    SUCCESS,
    CycleState,
    NodeInfo,
    PluginEntry,
    PodInfo,
    PreFilterResult,
    Status,
    build_registry,
)
from app.framework.registry import Registry
from app.observe.decisions import DecisionStore
from app.observe.events import event_for
from app.plugins import IN_TREE
from tests.support.bodies import fixture, fixture_bytes, go_marshal

NODES = [n["metadata"]["name"] for n in fixture("extenderargs_nocache_n10.json")["Nodes"]["items"]]


class Gate:
    """A PreFilter + Filter + Score + Reserve + Permit plugin whose verdicts the test sets:
    ``mode`` ``reject`` rejects the pod at PreFilter, ``narrow`` keeps the first three nodes,
    ``odd`` rejects every other node at Filter; each call is counted."""

    name = "Gate"
    mode: ClassVar[str] = "odd"
    calls: ClassVar[list[str]] = []

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        self.calls.append("pre_filter")
        state.write("Gate/seen", True)
        if self.mode == "reject":
            return None, Status.unschedulable("gate closed", code="GateClosed")
        if self.mode == "narrow":
            return PreFilterResult(frozenset(NODES[:3])), SUCCESS
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        self.calls.append("filter")
        assert state.read("Gate/seen")  # its own PreFilter's state, on its own cycle state
        return Status.unschedulable("odd node") if NODES.index(node.name) % 2 else SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        self.calls.append("score")
        return 100, SUCCESS

    def reserve(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        self.calls.append("reserve")
        return Status.unschedulable("reserved")

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.calls.append("unreserve")

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        self.calls.append("permit")
        return Status.unschedulable("not permitted"), 0.0


def registry() -> Registry:
    return build_registry([*IN_TREE, PluginEntry(name="Gate", factory=lambda args, handle: Gate())], False)


def profile(name: str, gate: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    filters: list[dict[str, Any]] = [{"name": "NodeUnschedulable"}, {"name": "TaintToleration"}]
    scores: list[dict[str, Any]] = [{"name": "NodeResourcesAllocatable"}]
    if gate is not None:
        filters.insert(1, {"name": "Gate", **gate})
        scores.append({"name": "Gate", "weight": 3})
    return {
        "name": name,
        "extender": {"verbs": ["filter", "prioritize", "preempt"]},
        "plugins": {"filter": filters, "score": scores},
        **extra,
    }


def config(*profiles: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "profiles": list(profiles),
    }


def service(*profiles: dict[str, Any]) -> ExtenderService:
    reg = registry()
    svc = assemble(parse_config(config(*profiles), reg), reg).service()
    svc.decisions = DecisionStore()
    return svc


def answer(svc: ExtenderService, profile_name: str, verb: str, body: bytes) -> bytes:
    out = VERBS[verb].run(svc, svc.frameworks[profile_name], body)
    assert out.status == 200
    return out.body if isinstance(out.body, bytes) else b"".join(out.body)


@pytest.fixture
def svc() -> ExtenderService:
    Gate.calls.clear()
    Gate.mode = "odd"
    return service(
        profile("base", None),
        profile("audited", {"enforcement": "audit"}, auditEvents=True),
        profile("enforced", {}),
    )


def test_an_audited_plugin_is_in_no_list_of_the_cycle(svc: ExtenderService) -> None:
    framework = svc.frameworks["audited"]
    assert framework.audited == ("Gate",)
    for point in ("pre_filter", "filter", "score", "reserve", "permit"):
        assert "Gate" not in [ep.name for ep in getattr(framework.lists, point)], point
        assert "Gate" in [ep.name for ep in getattr(framework.audit, point)], point
    assert not any(p.name == "Gate" for p in (*framework.reserve_plugins, *framework.permit_plugins))
    assert [ep.name for ep in framework.lists.filter] == [ep.name for ep in svc.frameworks["base"].lists.filter]
    assert "Gate" in [ep.name for ep in svc.frameworks["enforced"].lists.filter]  # the control


@pytest.mark.parametrize("mode", ["odd", "reject", "narrow"])
def test_the_answer_is_the_profiles_without_it_and_every_verdict_is_recorded(svc: ExtenderService, mode: str) -> None:
    Gate.mode = mode
    body = fixture_bytes("extenderargs_nocache_n10.json")
    for verb in ("filter", "prioritize"):
        assert answer(svc, "audited", verb, body) == answer(svc, "base", verb, body), verb
    enforced = orjson.loads(answer(svc, "enforced", "filter", body))  # the control: Gate decides there
    assert enforced["FailedNodes"] or enforced["FailedAndUnresolvableNodes"]
    Gate.calls.clear()
    answer(svc, "audited", "filter", body)
    # its cost: its PreFilter once and its Filter once per node it would judge, as enforced at most
    judged = {"odd": 10, "reject": 0, "narrow": 3}[mode]
    assert Gate.calls == ["pre_filter", *["filter"] * judged]
    pod = fixture("extenderargs_nocache_n10.json")["Pod"]["metadata"]
    store = svc.decisions
    assert store is not None
    decision = store.last_audited(pod["namespace"], pod["name"])
    assert decision is not None and decision.profile == "audited"
    verdicts = dict(zip(decision.node_names(), decision.audit["Gate"], strict=True))
    expected = {
        "odd": {n: "odd node" for i, n in enumerate(NODES) if i % 2},
        "reject": dict.fromkeys(NODES, "gate closed"),  # its PreFilter's rejection: every node, not the pod
        "narrow": {**dict.fromkeys(NODES[3:], "node(s) didn't satisfy plugin Gate"), NODES[1]: "odd node"},
    }[mode]
    assert {n: s.message for n, s in verdicts.items() if s.is_rejected()} == expected
    assert all(s.plugin == "Gate" for s in verdicts.values() if s.is_rejected())
    assert decision.audit_counts() == {"Gate": (len(expected), len(NODES) - len(expected))}
    assert not any(s.plugin == "Gate" for s in decision.statuses)  # the answer's verdicts are the others'
    assert all(s.code.name == "SUCCESS" for s in decision.statuses if s.plugin != "TaintToleration")


def test_prioritize_runs_no_audited_score_and_preempt_no_audited_plugin(svc: ExtenderService) -> None:
    body = fixture_bytes("extenderargs_nocache_n10.json")
    Gate.calls.clear()
    answer(svc, "audited", "prioritize", body)
    answer(svc, "audited", "preempt", fixture_bytes("preemptionargs_nocache.json"))
    assert Gate.calls == []
    answer(svc, "enforced", "prioritize", body)
    assert "score" in Gate.calls  # the control


def test_an_audit_failed_scheduling_event_says_what_enforcing_would_do(svc: ExtenderService) -> None:
    Gate.mode = "reject"
    doc: Any = fixture("extenderargs_nocache_n10.json")
    doc["Pod"]["metadata"]["name"] = "evented"
    answer(svc, "audited", "filter", go_marshal(doc))
    store = svc.decisions
    assert store is not None
    decision = store.get(doc["Pod"]["metadata"]["namespace"], "evented")[-1]
    event = event_for(decision)
    assert event is not None
    assert (event.type, event.reason, event.action) == ("Warning", "AuditFailedScheduling", "Filter")
    passed = sum(1 for s in decision.statuses if s.code.name == "SUCCESS")
    assert event.note == (
        f"audit: 0/10 nodes would be available to extender profile audited if Gate were enforced "
        f"({passed} pass today): Gate (10 gate closed)."
    )
    Gate.mode = "odd"  # some node it admits passes: no event
    answer(svc, "audited", "filter", go_marshal(doc))
    assert event_for(store.get(doc["Pod"]["metadata"]["namespace"], "evented")[-1]) is None


def test_no_event_without_audit_events() -> None:
    Gate.mode = "reject"
    svc = service(profile("quiet", {"enforcement": "audit"}))
    answer(svc, "quiet", "filter", fixture_bytes("extenderargs_nocache_n10.json"))
    pod = fixture("extenderargs_nocache_n10.json")["Pod"]["metadata"]
    store = svc.decisions
    assert store is not None
    decision = store.get(pod["namespace"], pod["name"])[-1]
    assert decision.audit_fails() == ["Gate"] and event_for(decision) is None


def refused(*profiles: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(config(*profiles), registry())
    return caught.value.problems


def test_a_standalone_profile_refuses_audit_and_points_at_the_shadow_scheduler() -> None:
    standalone = {**profile("mine", {"enforcement": "audit"}), "schedulerName": "my-scheduler", "auditEvents": True}
    doc = config(standalone) | {"cluster": {}}
    with pytest.raises(ConfigError) as caught:
        parse_config(doc, registry())
    problems = caught.value.problems
    assert any(
        p.startswith("profiles[0].plugins.filter[1].enforcement: audit applies to extender profiles only")
        and "python -m app shadow --config FILE" in p
        for p in problems
    ), problems
    assert any(p.startswith("profiles[0].auditEvents: applies to extender profiles only") for p in problems)


def test_audit_on_a_disabled_entry_or_on_every_binder_is_refused() -> None:
    disabled = profile("off", None)
    disabled["plugins"]["score"] = {
        "enabled": [{"name": "NodeResourcesAllocatable"}],
        "disabled": [{"name": "Gate", "enforcement": "audit"}],
    }
    problems = refused(disabled)
    assert "profiles[0].plugins.score.disabled[0].enforcement: audit applies to enabled plugins only" in problems
    binder = profile("binds", None)
    binder["extender"]["verbs"].append("bind")
    binder["plugins"]["bind"] = [{"name": "DefaultBinder", "enforcement": "audit"}]
    doc = config(binder) | {"cluster": {}}
    with pytest.raises(ConfigError) as caught:
        parse_config(doc, registry())
    assert any(
        p.startswith("profiles[0].plugins.bind: the profile serves bind but every bind plugin is audited")
        for p in caught.value.problems
    ), caught.value.problems


def test_enforcement_takes_only_audit_or_enforce() -> None:
    problems = refused(profile("typo", {"enforcement": "dryrun"}))
    assert any(p.startswith("profiles[0].plugins.filter[1].enforcement:") and "audit" in p for p in problems), problems

"""The one table of extension points (app/framework/points.py) and the rules that fill each point's
list: kube-scheduler's ``Plugins`` (pkg/scheduler/apis/config/types.go) and
``expandMultiPointPlugins`` (pkg/scheduler/framework/runtime/framework.go), then this service's
``implied`` rule; every point configurable; ``failurePolicy`` honoured or refused."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from app.bootstrap import check_configuration
from app.config import API_VERSION, KIND, ConfigError, parse_config
from app.deploy.wiring import service_config
from app.framework import SUCCESS, CycleState, NodeInfo, PluginEntry, PodInfo, Status, build_registry
from app.framework.build import build_framework, effective_points, expand_multi_point
from app.framework.points import (
    EXTENSION_POINTS,
    MULTI_POINT_KEY,
    POINTS,
    EnabledPlugin,
    PluginLists,
    implements,
    implied,
    plugin_lists,
)
from app.framework.profile import PluginRef, Plugins, PluginSet
from app.framework.runtime import Framework
from app.framework.types import PodRef
from app.plugins import IN_TREE
from app.tools.validate import extension_points
from tests.unit.helpers import pod

REPO = Path(__file__).resolve().parents[2]

#: kube-scheduler's ``Plugins`` fields in their order (pkg/scheduler/apis/config/types.go, v1.36:
#: PlacementGenerate and PlacementScore, of workload scheduling, left out)
UPSTREAM = [
    "PreEnqueue",
    "QueueSort",
    "PreFilter",
    "Filter",
    "PostFilter",
    "PreScore",
    "Score",
    "Reserve",
    "Permit",
    "PreBind",
    "Bind",
    "PostBind",
]


def test_the_table_is_upstreams_points_in_upstreams_order_and_the_extenders_preemption() -> None:
    names = [p.name for p in EXTENSION_POINTS]
    assert [n for n in names if n != "Preemption"] == UPSTREAM
    assert names.index("Preemption") == names.index("PostFilter") + 1
    assert [p.attr for p in EXTENSION_POINTS if p.extender_only] == ["preemption"]
    assert MULTI_POINT_KEY == "multiPoint"


def test_plugin_lists_and_the_configuration_have_one_field_per_row() -> None:
    assert [f.name for f in dataclasses.fields(PluginLists)] == [p.attr for p in EXTENSION_POINTS]
    fields = Plugins.model_fields
    assert set(fields) == {"multi_point", *POINTS}
    assert {fields[p.attr].alias for p in EXTENSION_POINTS} == {p.key for p in EXTENSION_POINTS}
    assert fields["multi_point"].alias == MULTI_POINT_KEY


def test_failure_policy_is_honoured_where_the_runtime_reads_it() -> None:
    assert [p.key for p in EXTENSION_POINTS if p.failure_policy] == [
        "preFilter",
        "filter",
        "preemption",
        "preScore",
        "score",
        "bind",
    ]


# -- plugins of every kind, to place ------------------------------------------------------------


class Base:
    def __init__(self, args: object, handle: object) -> None:
        self.log: list[str] = []


class PreFiltering(Base):
    name = "PreFiltering"

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[None, Status]:
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS


class Erring(PreFiltering):
    """A PreFilter that errs, and a Filter that passes."""

    name = "Erring"

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[None, Status]:
        return None, Status.error("broken")


class Pool(Base):
    """Filter, Reserve and Permit: a Filter plugin whose Reserve runs at bind."""

    name = "Pool"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS

    def reserve(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        return None

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        return SUCCESS, 0.0


class Scoring(Base):
    name = "Scoring"

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        return 0, SUCCESS


class Volumes(Base):
    """PreBind and PostBind alone: configurable at preBind and postBind only."""

    name = "Volumes"

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return SUCCESS

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        return None


class Binder(Base):
    name = "Binder"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return SUCCESS


ENTRIES = [PluginEntry(name=c.name, factory=c) for c in (PreFiltering, Erring, Pool, Scoring, Volumes, Binder)]
REGISTRY = build_registry([*IN_TREE, *ENTRIES], False)


def config(plugins: dict[str, Any], **profile: Any) -> dict[str, Any]:
    """A configuration of one extender profile; a plugin may be given by its name alone."""

    def refs(items: list[Any]) -> list[Any]:
        return [{"name": item} if isinstance(item, str) else item for item in items]

    plugins = {
        key: refs(value) if isinstance(value, list) else {k: refs(v) for k, v in value.items()}
        for key, value in plugins.items()
    }
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "profiles": [{"name": "p", "extender": {"verbs": ["filter"]}, "plugins": plugins, **profile}],
    }


def lists(plugins: dict[str, Any]) -> dict[str, list[str]]:
    """The built framework's plugin names per configuration key (the points it runs)."""
    profile = parse_config(config(plugins), REGISTRY).profiles[0]
    fw = build_framework(profile, REGISTRY)
    return {p.key: [ep.name for ep in fw.lists.of(p)] for p in EXTENSION_POINTS if fw.lists.of(p)}


def test_a_point_takes_what_the_profiles_other_points_imply() -> None:
    """Unconfigured: PreFilter the Filter plugins that implement it, PreScore the Score plugins
    that do, Reserve, Permit, PreBind and PostBind every plugin of the profile that does."""
    got = lists(
        {
            "filter": ["PreFiltering", "Pool"],
            "score": ["Scoring"],
            "preBind": ["Volumes"],
            "bind": ["Binder"],
        }
    )
    assert got == {
        "preFilter": ["PreFiltering"],
        "filter": ["PreFiltering", "Pool"],
        "preScore": ["Scoring"],
        "score": ["Scoring"],
        "reserve": ["Pool"],
        "permit": ["Pool"],
        "preBind": ["Volumes"],
        "bind": ["Binder"],
        "postBind": ["Volumes"],  # enabled at preBind, it implements PostBind too
    }


def test_every_point_is_configurable_with_enabled_and_disabled() -> None:
    base = {"filter": ["PreFiltering", "Pool"], "score": ["Scoring"], "bind": ["Binder"]}
    # PreFilter and PreScore off for one plugin (its Filter and Score still run), or for all
    got = lists(
        {**base, "preFilter": {"disabled": [{"name": "PreFiltering"}]}, "preScore": {"disabled": [{"name": "*"}]}}
    )
    assert "preFilter" not in got and "preScore" not in got and got["filter"] == ["PreFiltering", "Pool"]
    # a Filter plugin's Reserve left out at bind; Permit kept
    got = lists({**base, "reserve": {"disabled": [{"name": "Pool"}]}})
    assert "reserve" not in got and got["permit"] == ["Pool"]
    # enabled at PostBind, a plugin's PreBind runs too, unless disabled there
    got = lists({**base, "postBind": ["Volumes"]})
    assert got["postBind"] == ["Volumes"] and got["preBind"] == ["Volumes"]
    got = lists({**base, "postBind": ["Volumes"], "preBind": {"disabled": [{"name": "Volumes"}]}})
    assert got["postBind"] == ["Volumes"] and "preBind" not in got
    # "*": only the point's own
    got = lists({**base, "preFilter": {"enabled": [{"name": "Erring"}], "disabled": [{"name": "*"}]}})
    assert got["preFilter"] == ["Erring"]


def test_multi_point_places_a_plugin_at_every_point_it_implements() -> None:
    got = lists({"multiPoint": ["Pool", "Volumes", "Binder"], "reserve": {"disabled": [{"name": "Pool"}]}})
    assert got == {
        "filter": ["Pool"],
        "permit": ["Pool"],
        "preBind": ["Volumes"],
        "bind": ["Binder"],
        "postBind": ["Volumes"],
    }


def test_expand_multi_point_orders_as_upstream() -> None:
    """Overrides first (in the point's order), then multiPoint's others, then the point's rest."""

    def refs(*names: str) -> list[PluginRef]:
        return [PluginRef(name=n) for n in names]

    spec = PluginSet(enabled=refs("Own", "B"), disabled=refs("C"))
    got = expand_multi_point(spec, refs("A", "B", "C", "D"), lambda name: name != "D")
    assert [r.name for r in got] == ["B", "A", "Own"]
    everything = PluginSet(enabled=refs("Own"), disabled=refs("*"))
    assert [r.name for r in expand_multi_point(everything, refs("A"), lambda name: True)] == ["Own"]


def test_a_plugin_enabled_at_a_point_it_does_not_implement_is_refused_with_its_path() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(config({"filter": ["Pool"], "preBind": ["Pool"], "postFilter": ["Volumes"]}), REGISTRY)
    assert "profiles[0].plugins.preBind[0].name: plugin Pool does not implement pre_bind" in info.value.problems
    assert (
        "profiles[0].plugins.postFilter[0].name: plugin Volumes does not implement post_filter" in info.value.problems
    )


@pytest.mark.parametrize("key", ["reserve", "permit", "preBind", "postBind", "postFilter", "queueSort", "preEnqueue"])
def test_ignore_where_failure_policy_has_no_meaning_is_refused_naming_the_path(key: str) -> None:
    plugin = {"reserve": "Pool", "permit": "Pool", "preBind": "Volumes", "postBind": "Volumes"}.get(key, "Pool")
    doc = config({"filter": ["Pool"], key: [{"name": plugin, "failurePolicy": "Ignore"}]})
    with pytest.raises(ConfigError) as info:
        parse_config(doc, REGISTRY)
    where = f"profiles[0].plugins.{key}[0].failurePolicy: Ignore has no meaning at {key}: "
    assert any(p.startswith(where) for p in info.value.problems), info.value.problems
    assert any(
        p.endswith("failurePolicy applies at preFilter, filter, preemption, preScore, score, bind")
        for p in info.value.problems
    )


def test_fail_where_failure_policy_has_no_meaning_is_what_happens_and_render_writes_it_back() -> None:
    """``Fail`` (the default) is what Reserve, Permit and PreBind do with an error; render's mounted
    configuration writes it for every plugin, and reads back as it was."""
    doc = config({"filter": ["Pool"], "reserve": [{"name": "Pool", "failurePolicy": "Fail"}], "postBind": ["Volumes"]})
    written = service_config(parse_config(doc, REGISTRY), kubeconfig=None)
    assert written["profiles"][0]["plugins"]["postBind"] == [{"name": "Volumes", "failurePolicy": "Fail"}]
    assert parse_config(written, REGISTRY) == parse_config(doc, REGISTRY)


def test_ignore_at_multi_point_needs_a_point_that_honours_it() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(config({"multiPoint": [{"name": "Volumes", "failurePolicy": "Ignore"}]}), REGISTRY)
    assert (
        "profiles[0].plugins.multiPoint[0].failurePolicy: Ignore has no meaning at any point Volumes implements: "
        "failurePolicy applies at preFilter, filter, preemption, preScore, score, bind"
    ) in info.value.problems
    parse_config(config({"multiPoint": [{"name": "Pool", "failurePolicy": "Ignore"}]}), REGISTRY)  # its Filter has


def test_a_failure_policy_at_pre_filter_is_honoured() -> None:
    """``preFilter: [{name: Erring, failurePolicy: Ignore}]``: its error is ignored, where the same
    plugin taken from ``filter`` (failurePolicy Fail there) fails the cycle."""
    ignored = parse_config(
        config({"filter": ["Erring"], "preFilter": [{"name": "Erring", "failurePolicy": "Ignore"}]}), REGISTRY
    )
    state = CycleState()
    _, status, _ = build_framework(ignored.profiles[0], REGISTRY).run_pre_filter_plugins(state, pod(), [])
    assert status.is_success() and state.ignored_errors == {"Erring": 1}
    failing = parse_config(config({"filter": ["Erring"]}), REGISTRY)
    _, status, _ = build_framework(failing.profiles[0], REGISTRY).run_pre_filter_plugins(CycleState(), pod(), [])
    assert status.message == "broken" and status.plugin == "Erring"


def test_implements_is_one_function_and_unknown_is_unknown() -> None:
    assert implements(Pool, POINTS["reserve"]) is True
    assert implements(Pool, POINTS["pre_bind"]) is False
    assert implements(lambda args, handle: Pool(args, handle), POINTS["reserve"]) is None


def test_a_factory_that_is_not_a_class_is_judged_on_its_instance() -> None:
    """The configuration cannot tell what a factory function builds: it accepts it at a point,
    multiPoint does not place it, and the points that imply it take it when its instance
    implements them."""
    entry = PluginEntry(name="Made", factory=lambda args, handle: Pool(args, handle))
    registry = build_registry([*IN_TREE, *ENTRIES, entry], False)
    profile = parse_config(config({"filter": ["Made"]}), registry).profiles[0]
    assert [r.name for r in effective_points(profile, registry)["pre_bind"]] == ["Made"]  # may take part
    fw = build_framework(profile, registry)
    assert [ep.name for ep in fw.lists.reserve] == ["Made"] and fw.lists.pre_bind == ()
    profile = parse_config(config({"multiPoint": ["Made"], "filter": ["PreFiltering"]}), registry).profiles[0]
    assert [p.name for p in build_framework(profile, registry).plugins] == ["PreFiltering"]


def test_implied_is_the_extenders_rule_in_one_function() -> None:
    @dataclasses.dataclass
    class Named:
        name: str

    placed = {"filter": [Named("F")], "score": [Named("S"), Named("F")], "bind": [Named("B")], "reserve": [Named("R")]}
    assert [n.name for n in implied(POINTS["pre_filter"], placed)] == ["F"]
    assert [n.name for n in implied(POINTS["pre_score"], placed)] == ["S", "F"]
    assert [n.name for n in implied(POINTS["reserve"], placed)] == ["F", "S", "R", "B"]  # first-enabled order
    assert implied(POINTS["filter"], placed) == [] and implied(POINTS["bind"], placed) == []


def test_plugin_lists_refuses_an_unknown_point_and_fills_the_implied_ones() -> None:
    with pytest.raises(TypeError, match="unknown extension point"):
        plugin_lists(prefilter=[])
    pool = EnabledPlugin("Pool", Pool(None, None))
    lists = plugin_lists(filter=[pool], permit=[])
    assert lists.reserve == (pool,) and lists.permit == () and lists.pre_filter == ()


def test_validate_prints_every_point_of_the_table_the_framework_runs() -> None:
    profile = parse_config(
        config(
            {
                "filter": ["PreFiltering", "Pool"],
                "preBind": ["Volumes"],
                "bind": [{"name": "Binder", "failurePolicy": "Ignore"}],
            }
        ),
        REGISTRY,
    ).profiles[0]
    fw = build_framework(profile, REGISTRY)
    shown = dict(extension_points(fw, extender=True))
    assert list(shown) == [p.key for p in EXTENSION_POINTS]
    assert shown["preBind"] == ["Volumes"] and shown["postBind"] == ["Volumes"]
    assert shown["reserve"] == ["Pool"] and shown["bind"] == ["Binder [failurePolicy Ignore]"]
    assert "preemption" not in dict(extension_points(fw, extender=False))


def test_the_framework_refuses_a_plugin_at_a_point_it_does_not_implement() -> None:
    for point in EXTENSION_POINTS:
        with pytest.raises(ValueError, match=f"does not implement the {point.attr} extension point"):
            Framework("p", PluginLists(**{point.attr: (EnabledPlugin("X", object()),)}))  # type: ignore[arg-type]


def test_a_bind_through_the_extender_runs_a_filter_plugins_reserve() -> None:
    """The rule at work: Pool enabled at filter alone is reserved at the extender's bind."""
    from app.extender.verbs import run_bind_verb

    calls: list[str] = []

    class Recording(Pool):
        def reserve(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
            calls.append(node.name)
            return SUCCESS

    others = [e for e in ENTRIES if e.name != "Pool"]
    registry = build_registry([*IN_TREE, *others, PluginEntry(name="Pool", factory=Recording)], False)
    profile = parse_config(config({"filter": ["Pool"], "bind": ["Binder"]}), registry).profiles[0]
    fw = build_framework(profile, registry)
    assert asyncio.run(run_bind_verb(fw, PodRef("ns", "p", "uid-p"), "n1")).is_success()
    assert calls == ["n1"]


RECORDED = Path(__file__).parent / "recorded" / "plugin-lists.json"


def _lists_of(path: Path) -> dict[str, dict[str, Any]]:
    """Every profile's plugins per point of the service ``path`` configures, as recorded: a
    plugin ``name/weight/failurePolicy`` where the point keeps them, the shared Reserve plugins,
    whether binds wait out the warm-up."""
    checked = check_configuration(str(path), "validate")
    assert checked.assembly is not None, checked.problems
    out: dict[str, dict[str, Any]] = {}
    for name, fw in checked.assembly.frameworks.items():
        row: dict[str, Any] = {}
        for point in EXTENSION_POINTS:
            items: Sequence[Any] = getattr(fw, f"{point.attr}_plugins")
            row[f"{point.attr}_plugins"] = [
                f"{i.name}/{i.weight}/{i.failure_policy}" if isinstance(i, EnabledPlugin) else i.name for i in items
            ]
        row["shared_reserve"] = [p.name for p in fw.shared_reserve]
        row["bind_warm_up"] = fw.bind_warm_up
        out[name] = row
    return out


@pytest.mark.parametrize("config_file", sorted(json.loads(RECORDED.read_text())))
def test_the_shipped_configurations_keep_their_plugin_lists(config_file: str) -> None:
    """The lists recorded before every point became configurable (the code of a120c15), point by
    point and in order: the default configuration, the examples, the e2e configurations; the
    standalone examples then changed only with v1.36.3's default profile (EBSLimits, GCEPDLimits
    and AzureDiskLimits out, NodeDeclaredFeatures in: issue 35), and DefaultPreemption joined
    their PreEnqueue (v1.36.3's default_preemption.go is a PreEnqueuePlugin since async
    preemption, KEP 4832: it keeps a preemptor out while its victims are being deleted), and
    DynamicResources joined them (weight 2, before DefaultPreemption: v1.36.3's
    applyDynamicResources; issue 36)."""
    assert _lists_of(REPO / config_file) == json.loads(RECORDED.read_text())[config_file]


def test_every_shipped_configuration_is_recorded() -> None:
    shipped = ["app/default-config.yaml", *(f"examples/{p.name}" for p in (REPO / "examples").glob("*.yaml"))]
    shipped += [str(p.relative_to(REPO)) for p in (REPO / "tests" / "e2e" / "configs").glob("*.yaml")]
    assert sorted(shipped) == sorted(json.loads(RECORDED.read_text()))

"""Configuration loading and validation: every problem reported with its field path."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.bootstrap import assemble, cluster_settings
from app.config import API_VERSION, KIND, ConfigError, is_extended_resource_name, load_config, parse_config
from app.framework.profile import parse_duration
from app.plugins import default_registry

REGISTRY = default_registry(load_entry_points=False)
REPO = Path(__file__).resolve().parents[2]


def base(**profile: Any) -> dict[str, Any]:
    p: dict[str, Any] = {
        "name": "p",
        "extender": {"verbs": ["filter", "prioritize"]},
        "plugins": {"filter": [{"name": "CoinFlip"}], "score": [{"name": "DiceRoll"}]},
    }
    p.update(profile)
    return {"apiVersion": API_VERSION, "kind": KIND, "profiles": [p]}


def test_embedded_default_loads_and_is_deterministic() -> None:
    config = load_config(None, REGISTRY)
    assert config.default_profile == "default"
    profile = config.profiles[0]
    enabled = {*profile.plugins.filter.names(), *profile.plugins.score.names()}
    assert enabled == {"AnnotationNodeAffinity", "NodeResourcesAllocatable"}  # no chaos plugin
    assert (config.server.host, config.server.port) == ("127.0.0.1", 8888)


@pytest.mark.parametrize(
    "path", sorted((REPO / "examples").glob("*.yaml")) + sorted((REPO / "tests").rglob("configs/*.yaml"))
)
def test_shipped_configs_are_valid(path: Path) -> None:
    load_config(path, REGISTRY)


def mutate(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    keys = path.split(".")
    target: Any = doc
    for key in keys[:-1]:
        target = target[int(key)] if key.isdigit() else target[key]
    last = keys[-1]
    if last.isdigit():
        target[int(last)] = value
    else:
        target[last] = value
    return doc


INVALID = [
    (mutate(base(), "apiVersion", "v1"), "apiVersion: Input should be 'config.scheduler-extender.dev/v1alpha1'"),
    (mutate(base(), "kind", "Config"), "kind: Input should be 'ExtenderConfiguration'"),
    ({"apiVersion": API_VERSION, "kind": KIND, "profiles": []}, "profiles: List should have at least 1 item"),
    (mutate(base(), "profiles.0.name", "Bad_Name"), "profiles[0].name: must be a DNS-1123 label"),
    (mutate(base(), "profiles.0.name", "filter"), "profiles[0].name: 'filter' is reserved"),
    (mutate(base(), "profiles.0.extender.verbs", ["filter", "sort"]), "profiles[0].extender.verbs[1]: Input should be"),
    (
        mutate(base(), "profiles.0.extender.nodecachecapable", True),
        "profiles[0].extender.nodecachecapable: unknown field",
    ),
    (
        mutate(base(), "profiles.0.extender.httpTimeout", "5 seconds"),
        "profiles[0].extender.httpTimeout: invalid duration",
    ),
    (
        mutate(base(), "profiles.0.extender.weight", 0),
        "profiles[0].extender.weight: must have a positive weight applied to it",
    ),
    (
        mutate(
            base(), "profiles.0.extender.managedResources", [{"name": "example.com/ip"}, {"name": "example.com/ip"}]
        ),
        "profiles[0].extender.managedResources[1].name: duplicate extender managed resource name 'example.com/ip'",
    ),
    (
        mutate(base(), "profiles.0.extender.managedResources", [{"name": "kubernetes.io/foo"}]),
        "profiles[0].extender.managedResources[0].name: 'kubernetes.io/foo' is not a valid extended resource name",
    ),
    (  # kube-scheduler would send only the pods that request example.com/ip (HTTPExtender.IsInterested)
        mutate(
            base(plugins={"filter": [{"name": "AnnotationNodeAffinity"}], "score": [{"name": "DiceRoll"}]}),
            "profiles.0.extender.managedResources",
            [{"name": "example.com/ip"}],
        ),
        "profiles[0].extender.managedResources: kube-scheduler calls this extender only for pods that request or "
        "limit example.com/ip (HTTPExtender.IsInterested), so AnnotationNodeAffinity would never see the other "
        "pods: move them, and bind, to a second profile without managedResources",
    ),
    (
        mutate(base(), "profiles.0.plugins.score", []),
        "profiles[0].plugins.score: the profile serves prioritize but enables no score plugin",
    ),
    (
        mutate(base(), "profiles.0.plugins.filter", [{"name": "Nope"}]),
        "profiles[0].plugins.filter[0].name: unknown plugin 'Nope'",
    ),
    (
        mutate(base(), "profiles.0.plugins.score", [{"name": "DiceRoll", "weight": 0}]),
        "profiles[0].plugins.score[0].weight: must be > 0",
    ),
    (
        mutate(base(), "profiles.0.plugins.filter", [{"name": "CoinFlip", "weight": 2}]),
        "profiles[0].plugins.filter[0].weight: only score plugins take a weight",
    ),
    (
        mutate(base(), "profiles.0.plugins.filter", [{"name": "DiceRoll"}]),
        "profiles[0].plugins.filter[0].name: plugin DiceRoll does not implement filter",
    ),
    (
        mutate(base(), "profiles.0.plugins.filter", [{"name": "CoinFlip", "failurePolicy": "Maybe"}]),
        "profiles[0].plugins.filter[0].failurePolicy: Input should be 'Fail' or 'Ignore'",
    ),
    (
        mutate(base(), "profiles.0.pluginConfig", [{"name": "CoinFlip", "args": {"headsProbability": 2}}]),
        "profiles[0].pluginConfig[0].args.headsProbability: Input should be less than or equal to 1",
    ),
    (
        mutate(base(), "profiles.0.pluginConfig", [{"name": "AnnotationNodeAffinity", "args": {}}]),
        "profiles[0].pluginConfig[0].name: AnnotationNodeAffinity is not enabled",
    ),
    (mutate(base(), "server", {"defaultProfile": "x"}), "server.defaultProfile: no profile is named 'x'"),
    (mutate(base(), "server", {"maxRequestBytes": 0}), "server.maxRequestBytes: Input should be greater than 0"),
]


@pytest.mark.parametrize(("doc", "message"), INVALID)
def test_invalid_configuration_names_the_field(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(doc, REGISTRY)
    assert any(p.startswith(message) for p in info.value.problems), info.value.problems


def test_two_binders_are_refused() -> None:
    doc = base()
    doc["profiles"] = [
        {"name": "a", "extender": {"verbs": ["bind"]}, "plugins": {"bind": [{"name": "X"}]}},
        {"name": "b", "extender": {"verbs": ["bind"]}, "plugins": {"bind": [{"name": "Y"}]}},
    ]
    with pytest.raises(ConfigError) as info:
        parse_config(doc, REGISTRY)
    assert "profiles: found 2 profiles serving bind (a, b); only one extender can implement bind" in info.value.problems


def test_all_problems_are_reported_at_once(tmp_path: Path) -> None:
    doc = mutate(mutate(base(), "profiles.0.extender.weight", 0), "profiles.0.plugins.filter", [{"name": "Nope"}])
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError) as info:
        load_config(path, REGISTRY)
    assert len(info.value.problems) == 2 and str(path) in str(info.value)


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_config(tmp_path / "missing.yaml", REGISTRY)
    bad = tmp_path / "bad.yaml"
    bad.write_text("profiles: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad, REGISTRY)


@pytest.mark.parametrize(
    ("name", "valid"),
    [("example.com/ip", True), ("ipam.example.com/ip", True), ("foo.com/bar", True), ("cpu", False),
     ("kubernetes.io/foo", False), ("requests.example.com/x", False), ("example.com/", False), ("a/b/c", False)],
)  # fmt: skip
def test_extended_resource_names(name: str, valid: bool) -> None:
    assert is_extended_resource_name(name) is valid


@pytest.mark.parametrize(
    ("text", "seconds"), [("5s", 5.0), ("1m30s", 90.0), ("500ms", 0.5), ("1.5h", 5400.0), ("0", 0.0)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def _binder_profile(**binder_args: Any) -> dict[str, Any]:
    doc = base(
        extender={"verbs": ["filter", "bind"], "httpTimeout": "2s"},
        plugins={"filter": [{"name": "CoinFlip"}], "bind": [{"name": "DefaultBinder"}]},
    )
    if binder_args:
        doc["profiles"][0]["pluginConfig"] = [{"name": "DefaultBinder", "args": binder_args}]
    return doc


def test_cluster_plugins_need_a_cluster_section() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(_binder_profile(), REGISTRY)
    assert (
        "profiles[0].plugins.bind[0].name: plugin DefaultBinder needs cluster state: add a `cluster:` section"
        in str(err.value)
    )
    doc = _binder_profile()
    doc["cluster"] = {"assumedPodTTL": "45s", "watchTimeout": "2m"}
    config = parse_config(doc, REGISTRY)
    assert config.cluster is not None
    settings = cluster_settings(config.cluster)
    assert (settings.assumed_pod_ttl, settings.watch_timeout, settings.kubeconfig) == (45.0, 120, None)


@pytest.mark.parametrize(
    ("cluster", "args", "message"),
    [
        ({"assumedPodTtl": "30s"}, {}, "cluster.assumedPodTtl: unknown field"),
        ({"assumedPodTTL": "0s"}, {}, "cluster.assumedPodTTL: must be a positive duration"),
        ({"staleAfter": "soon"}, {}, "cluster.staleAfter: invalid duration 'soon'"),
        ({}, {"timeoutSeconds": 2}, "DefaultBinder: timeoutSeconds 2 must be below the profile's httpTimeout (2s)"),
        ({}, {"verifyFit": "maybe"}, "pluginConfig[0].args.verifyFit: Input should be a valid boolean"),
    ],
)
def test_cluster_section_errors(cluster: dict[str, Any], args: dict[str, Any], message: str) -> None:
    doc = _binder_profile(**args)
    doc["cluster"] = cluster
    with pytest.raises(ConfigError) as err:  # a plugin's factory refusing its args: when the service is assembled
        assemble(parse_config(doc, REGISTRY), REGISTRY)
    assert message in str(err.value)

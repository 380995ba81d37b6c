"""The strict KubeSchedulerConfiguration decoder and the upstream validation rules.

Negative cases and messages are ported from kubernetes/kubernetes
pkg/scheduler/apis/config/validation/validation_test.go (TestValidateKubeSchedulerConfiguration and
the extender cases of TestValidatePolicy), as PROTOCOL.md 3.1 lists them.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from app.deploy.kubesched import KubeConfigDecodeError, decode, validate
from app.framework.profile import parse_duration as go_duration_seconds

# upstream's validConfig, in v1 YAML form (two profiles, one extender without urlPrefix)
VALID: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "parallelism": 8,
    "clientConnection": {
        "acceptContentTypes": "application/json",
        "contentType": "application/json",
        "qps": 10,
        "burst": 10,
    },
    "leaderElection": {
        "resourceLock": "leases",
        "leaderElect": True,
        "leaseDuration": "30s",
        "renewDeadline": "15s",
        "retryPeriod": "5s",
        "resourceNamespace": "name",
        "resourceName": "name",
    },
    "podInitialBackoffSeconds": 1,
    "podMaxBackoffSeconds": 1,
    "percentageOfNodesToScore": 35,
    "profiles": [
        {
            "schedulerName": "me",
            "plugins": {"queueSort": {"enabled": [{"name": "CustomSort"}]}, "score": {"disabled": [{"name": "*"}]}},
            "pluginConfig": [
                {
                    "name": "DefaultPreemption",
                    "args": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
                }
            ],
        },
        {
            "schedulerName": "other",
            "plugins": {
                "queueSort": {"enabled": [{"name": "CustomSort"}]},
                "bind": {"enabled": [{"name": "CustomBind"}]},
            },
        },
    ],
    "extenders": [{"prioritizeVerb": "prioritize", "weight": 1}],
}


def _with(change: Any) -> str:
    doc = copy.deepcopy(VALID)
    change(doc)
    return yaml.safe_dump(doc)


def test_upstream_valid_config_decodes_and_validates() -> None:
    config = decode(yaml.safe_dump(VALID))
    assert validate(config) == []


def _ext(**kw: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        doc["extenders"][0].update(kw)

    return change


@pytest.mark.parametrize(
    ("name", "change", "expected"),
    [
        (
            "extender-negative-weight",
            _ext(weight=-1),
            ["extenders[0].weight: Invalid value: -1: must have a positive weight applied to it"],
        ),
        (
            "extender-duplicate-managed-resources",
            _ext(managedResources=[{"name": "foo"}, {"name": "foo"}]),
            [
                'extenders[0].managedResources[0].name: Invalid value: "foo": is an invalid extended resource name',
                'extenders[0].managedResources[1].name: Invalid value: "foo": is an invalid extended resource name',
                'extenders[0].managedResources[1].name: Invalid value: "foo": duplicate extender managed resource name',
            ],
        ),
        (
            "extender-duplicate-bind",
            lambda d: (
                d["extenders"][0].update(bindVerb="foo"),
                d["extenders"].append({"prioritizeVerb": "prioritize", "weight": 1, "bindVerb": "bar"}),
            ),
            ['extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement bind'],
        ),
        (
            "invalid duplicate extender resource name (across extenders)",
            lambda d: d.update(
                extenders=[
                    {"urlPrefix": "http://127.0.0.1:8081/extender", "managedResources": [{"name": "foo.com/bar"}]},
                    {
                        "urlPrefix": "http://127.0.0.1:8082/extender",
                        "bindVerb": "bind",
                        "managedResources": [{"name": "foo.com/bar"}],
                    },
                ]
            ),
            [
                'extenders[1].managedResources[0].name: Invalid value: "foo.com/bar": '
                "duplicate extender managed resource name"
            ],
        ),
        (
            "invalid extended resource name",
            _ext(managedResources=[{"name": "kubernetes.io/foo"}]),
            [
                'extenders[0].managedResources[0].name: Invalid value: "kubernetes.io/foo": '
                "is an invalid extended resource name"
            ],
        ),
        (
            "bad-parallelism-invalid-value",
            lambda d: d.update(parallelism=0),
            ["parallelism: Invalid value: 0: should be an integer value greater than zero"],
        ),
        (
            "bad-percentage-of-nodes-to-score",
            lambda d: d.update(percentageOfNodesToScore=101),
            ["percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"],
        ),
        (
            "scheduler-name-not-set",
            lambda d: d["profiles"][1].update(schedulerName=""),
            ["profiles[1].schedulerName: Required value"],
        ),
        (
            "repeated-scheduler-name",
            lambda d: d["profiles"][0].update(schedulerName="other"),
            ['profiles[1].schedulerName: Duplicate value: "other"'],
        ),
        (
            "duplicated-plugin-config",
            lambda d: d["profiles"][0].update(pluginConfig=[{"name": "config"}, {"name": "config"}]),
            ['profiles[0].pluginConfig[1]: Duplicate value: "config"'],
        ),
    ],
)
def test_upstream_negative_cases(name: str, change: Any, expected: list[str]) -> None:
    assert validate(decode(_with(change))) == expected, name


def test_weight_is_only_checked_with_prioritize() -> None:
    doc = _with(lambda d: d.update(extenders=[{"urlPrefix": "http://x", "filterVerb": "filter", "weight": 0}]))
    assert validate(decode(doc)) == []


def test_a_lone_profile_without_scheduler_name_is_defaulted() -> None:
    doc = _with(lambda d: d.update(profiles=[{"plugins": {}}]))
    assert validate(decode(doc)) == []


def _decode_problems(text: str) -> list[str]:
    with pytest.raises(KubeConfigDecodeError) as info:
        decode(text)
    return info.value.problems


def test_mis_cased_key_is_an_error_naming_the_right_spelling() -> None:
    (problem,) = _decode_problems(_with(_ext(enableHttps=True)))
    assert problem == (
        'unknown field "extenders[0].enableHttps" (did you mean "enableHTTPS"? '
        "keys are case-sensitive in kubescheduler.config.k8s.io/v1)"
    )
    (problem,) = _decode_problems(_with(_ext(URLPrefix="http://127.0.0.1:8888")))
    assert 'unknown field "extenders[0].URLPrefix"' in problem and '"urlPrefix"' in problem


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (lambda d: d.update(unknownTopLevel=1), 'unknown field "unknownTopLevel"'),
        (_ext(weight="1"), "extenders[0].weight"),
        (_ext(weight=1.5), "extenders[0].weight"),
        (_ext(nodeCacheCapable="true"), "extenders[0].nodeCacheCapable"),
        (_ext(httpTimeout=5), "extenders[0].httpTimeout"),
        (_ext(httpTimeout="5 seconds"), "invalid duration"),
        (_ext(tlsConfig={"caData": "not base64!"}), "illegal base64"),
        (lambda d: d["profiles"][0]["plugins"].update(filtre={}), 'unknown field "profiles[0].plugins.filtre"'),
        (lambda d: d["leaderElection"].update(leaderElect="yes please"), "leaderElection.leaderElect"),
    ],
)
def test_strict_decoding_rejects(change: Any, needle: str) -> None:
    problems = _decode_problems(_with(change))
    assert any(needle in p for p in problems), problems


def test_duplicate_keys_are_errors() -> None:
    text = (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: 1\nparallelism: 2\n"
    )
    assert _decode_problems(text) == ['line 4: key "parallelism" already set in map']


def test_removed_api_versions_are_named() -> None:
    (problem,) = _decode_problems("apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n")
    assert "v1beta3" in problem and "kubescheduler.config.k8s.io/v1" in problem


def test_go_durations() -> None:
    assert go_duration_seconds("1m30s") == 90 and go_duration_seconds("-1.5h") == -5400
    assert go_duration_seconds("0") == 0 and go_duration_seconds("300ms") == pytest.approx(0.3)
    for bad in ("5", "5 s", "", "1d"):
        with pytest.raises(ValueError):
            go_duration_seconds(bad)

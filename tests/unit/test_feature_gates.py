"""The configuration's ``featureGates`` (app/config.py, app/framework/features.py): kube-scheduler
v1.36.3's gate names (pkg/features/kube_features.go), validated with the stage of each; a loaded
configuration's gates become the process's, and the default profile and the accounting follow."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.config import ConfigError, parse_config
from app.framework import features
from app.framework.defaults import default_plugins
from app.plugins import default_registry

REGISTRY = default_registry(False)


def doc(**gates: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "cluster": {},
        "profiles": [{"name": "s", "schedulerName": "s"}],
    }
    if gates:
        out["featureGates"] = gates
    return out


@pytest.fixture(autouse=True)
def restore() -> Iterator[None]:
    yield
    features.set_current(features.DEFAULT)


def problems(**gates: Any) -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse_config(doc(**gates), REGISTRY)
    return err.value.problems


def test_v1_36_defaults_and_stages() -> None:
    """A few of kube_features.go's entries at v1.36: the stage and default of the last version up to
    1.36, and LockToDefault."""
    assert features.GATES["NodeDeclaredFeatures"] == features.Gate(True, "Beta", False)
    assert features.GATES["GangScheduling"] == features.Gate(False, "Alpha", False)
    assert features.GATES["SchedulerAsyncAPICalls"] == features.Gate(False, "Beta", False)
    assert features.GATES["StorageCapacityScoring"] == features.Gate(False, "Alpha", False)
    assert features.GATES["InPlacePodVerticalScaling"] == features.Gate(True, "GA", True)
    assert features.GATES["SidecarContainers"] == features.Gate(True, "GA", True)
    assert features.describe("GangScheduling") == "GangScheduling (Alpha, default false)"
    assert features.describe("SchedulerQueueingHints") == "SchedulerQueueingHints (GA, default true, locked)"


def test_an_unknown_gate_is_refused_with_the_known_ones_and_their_stages() -> None:
    (problem,) = problems(NodeDeclaredFeature=False)
    assert problem.startswith(
        "featureGates.NodeDeclaredFeature: unknown feature gate (did you mean 'NodeDeclaredFeatures'?)"
    )
    assert "GangScheduling (Alpha, default false)" in problem and "PodLevelResources (Beta, default true)" in problem


def test_values_locked_and_unimplemented_gates() -> None:
    (problem,) = problems(PodLevelResources="yes")
    assert problem == "featureGates.PodLevelResources: must be true or false, not 'yes'"
    (problem,) = problems(SchedulerQueueingHints=False)
    assert "cannot set SchedulerQueueingHints (GA, default true, locked) to false: it is locked" in problem
    (problem,) = problems(GangScheduling=True)
    assert "GangScheduling (Alpha, default false) is a kube-scheduler gate this scheduler does not implement" in problem
    # every problem at once, a bad gate with the other problems of the file, and none applied
    assert [p.split(":")[0] for p in problems(GangScheduling=True, Nope=True)] == [
        "featureGates.GangScheduling",
        "featureGates.Nope",
    ]
    bad = doc(NodeDeclaredFeatures=False, Nope=True)
    bad["server"] = {"port": -1}
    with pytest.raises(ConfigError) as err:
        parse_config(bad, REGISTRY)
    assert any(p.startswith("server.port") for p in err.value.problems)
    assert any(p.startswith("featureGates.Nope") for p in err.value.problems)
    assert features.current() == features.DEFAULT
    # a gate at its v1.36 default is accepted, implemented or not
    parse_config(doc(GangScheduling=False, SchedulerAsyncPreemption=True, InPlacePodVerticalScaling=True), REGISTRY)


def test_a_loaded_configuration_sets_the_process_gates_and_the_default_profile() -> None:
    config = parse_config(doc(NodeDeclaredFeatures=False, PodLevelResources=False), REGISTRY)
    assert config.feature_gates == {"NodeDeclaredFeatures": False, "PodLevelResources": False}
    assert not features.current().enabled("NodeDeclaredFeatures")
    assert features.current().overrides() == {"NodeDeclaredFeatures": False, "PodLevelResources": False}
    assert "NodeDeclaredFeatures" not in dict(default_plugins())
    parse_config(doc(), REGISTRY)  # the next configuration: v1.36's defaults again
    assert features.current() == features.DEFAULT
    assert default_plugins()[-1] == ("NodeDeclaredFeatures", None)
    with pytest.raises(KeyError):
        features.current().enabled("NoSuchGate")

"""kube-scheduler v1.36.3's feature gates that change scheduling, and the ones in effect.

:data:`GATES` holds, for each gate pkg/scheduler reads (pkg/features/kube_features.go of v1.36.3,
the entry of the highest version up to 1.36), its default, stage and whether it is locked to
the default. A configuration's ``featureGates`` (:func:`problems` validates it) overrides the
defaults; :func:`set_current` makes those the process's gates, as kube-scheduler's
``--feature-gates`` sets ``DefaultFeatureGate`` once at start, and :func:`current` is what the
plugins and the resource accounting read (plugins when they are built, as upstream's
``feature.Features``).

Only the gates in :data:`HONOURED` change what this scheduler does; any other known gate may be
written with its v1.36 default only (switching it is refused with the reason), and a locked gate
not at all, as ``featuregate`` refuses it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import NamedTuple


class Gate(NamedTuple):
    """A gate's v1.36.3 default, stage (``Alpha``, ``Beta``, ``GA``) and ``LockToDefault``."""

    default: bool
    stage: str
    locked: bool


#: kube-scheduler v1.36.3's scheduling gates (pkg/features/kube_features.go)
GATES: dict[str, Gate] = {
    "DRAAdminAccess": Gate(True, "GA", True),
    "DRAConsumableCapacity": Gate(True, "Beta", False),
    "DRADeviceBindingConditions": Gate(True, "Beta", False),
    "DRADeviceTaintRules": Gate(False, "Beta", False),
    "DRADeviceTaints": Gate(True, "Beta", False),
    "DRAExtendedResource": Gate(True, "Beta", False),
    "DRAListTypeAttributes": Gate(False, "Alpha", False),
    "DRANodeAllocatableResources": Gate(False, "Alpha", False),
    "DRAPartitionableDevices": Gate(True, "Beta", False),
    "DRAPrioritizedList": Gate(True, "GA", False),
    "DRAResourceClaimDeviceStatus": Gate(True, "Beta", False),
    "DRASchedulerFilterTimeout": Gate(True, "Beta", False),
    "DRAWorkloadResourceClaims": Gate(False, "Alpha", False),
    "DynamicResourceAllocation": Gate(True, "GA", True),
    "GangScheduling": Gate(False, "Alpha", False),
    "GenericWorkload": Gate(False, "Alpha", False),
    "InPlacePodLevelResourcesVerticalScaling": Gate(True, "Beta", False),
    "InPlacePodVerticalScaling": Gate(True, "GA", True),
    "MatchLabelKeysInPodTopologySpread": Gate(True, "Beta", False),
    "MatchLabelKeysInPodTopologySpreadSelectorMerge": Gate(True, "Beta", False),
    "NodeDeclaredFeatures": Gate(True, "Beta", False),
    "NodeInclusionPolicyInPodTopologySpread": Gate(True, "GA", True),
    "NominatedNodeNameForExpectation": Gate(True, "Beta", False),
    "OpportunisticBatching": Gate(True, "Beta", False),
    "PodLevelResources": Gate(True, "Beta", False),
    "SchedulerAsyncAPICalls": Gate(False, "Beta", False),
    "SchedulerAsyncPreemption": Gate(True, "Beta", False),
    "SchedulerPopFromBackoffQ": Gate(True, "Beta", False),
    "SchedulerQueueingHints": Gate(True, "GA", True),
    "SidecarContainers": Gate(True, "GA", True),
    "StorageCapacityScoring": Gate(False, "Alpha", False),
    "TaintTolerationComparisonOperators": Gate(False, "Alpha", False),
    "TopologyAwareWorkloadScheduling": Gate(False, "Alpha", False),
    "VolumeAttributesClass": Gate(True, "GA", True),
    "VolumeLimitScaling": Gate(False, "Alpha", False),
    "WorkloadAwarePreemption": Gate(False, "Alpha", False),
}

#: the gates whose both values this scheduler implements
HONOURED = frozenset(
    {
        "InPlacePodLevelResourcesVerticalScaling",
        "NodeDeclaredFeatures",
        "NominatedNodeNameForExpectation",
        "OpportunisticBatching",
        "PodLevelResources",
        "StorageCapacityScoring",
        "VolumeLimitScaling",
    }
)


def describe(name: str) -> str:
    """``Name (Stage, default true)``, ``, locked`` added for a locked gate."""
    gate = GATES[name]
    locked = ", locked" if gate.locked else ""
    return f"{name} ({gate.stage}, default {str(gate.default).lower()}{locked})"


def problems(overrides: Mapping[str, object], path: str = "featureGates") -> list[str]:
    """What is wrong with a ``featureGates`` map, each problem prefixed ``<path>.<name>: `` (or
    ``<name>: `` with an empty ``path``): an unknown name (the known ones listed with their
    stages), a value that is not a boolean, a locked gate set away from its default, a gate this
    scheduler does not implement set away from its v1.36 default."""
    out = []
    path = f"{path}." if path else ""
    for name, value in overrides.items():
        gate = GATES.get(name) if isinstance(name, str) else None
        if gate is None:
            close = difflib.get_close_matches(str(name), list(GATES), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            known = ", ".join(describe(n) for n in sorted(GATES))
            out.append(f"{path}{name}: unknown feature gate{hint}; kube-scheduler v1.36's are: {known}")
        elif not isinstance(value, bool):
            out.append(f"{path}{name}: must be true or false, not {value!r}")
        elif value != gate.default and gate.locked:
            out.append(f"{path}{name}: cannot set {describe(name)} to {str(value).lower()}: it is locked")
        elif value != gate.default and name not in HONOURED:
            out.append(
                f"{path}{name}: {describe(name)} is a kube-scheduler gate this scheduler does not implement "
                f"switching; only its v1.36 default is accepted (the ones it implements: {', '.join(sorted(HONOURED))})"
            )
    return out


class FeatureGates:
    """The gates in effect: v1.36.3's defaults with ``overrides`` (valid by :func:`problems`)."""

    __slots__ = ("_values",)

    def __init__(self, overrides: Mapping[str, bool] | None = None) -> None:
        values = {name: gate.default for name, gate in GATES.items()}
        values.update(overrides or {})
        self._values = values

    def enabled(self, name: str) -> bool:
        """Whether gate ``name`` is on; raises ``KeyError`` for a name not in :data:`GATES`."""
        if name not in GATES:
            raise KeyError(f"unknown feature gate {name!r}")
        return self._values[name]

    def overrides(self) -> dict[str, bool]:
        """The gates that differ from their v1.36 default."""
        return {name: value for name, value in self._values.items() if value != GATES[name].default}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FeatureGates) and self._values == other._values

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.overrides().items())))

    def __repr__(self) -> str:
        return f"FeatureGates({self.overrides()!r})"


DEFAULT = FeatureGates()
_current = DEFAULT


def current() -> FeatureGates:
    """The process's gates (:data:`DEFAULT` until :func:`set_current`)."""
    return _current


def set_current(gates: FeatureGates) -> None:
    """Make ``gates`` the process's (the configuration's ``featureGates``, applied when it is
    loaded)."""
    global _current
    _current = gates


__all__ = ["DEFAULT", "GATES", "HONOURED", "FeatureGates", "Gate", "current", "describe", "problems", "set_current"]

"""The plugin SDK, in kube-scheduler's vocabulary. Imports nothing from fastapi or kubernetes."""

from app.framework.args import PluginArgs
from app.framework.interfaces import (
    BindPlugin,
    FilterPlugin,
    NormalizeScorePlugin,
    PermitPlugin,
    Plugin,
    PreemptionPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from app.framework.registry import ENTRY_POINT_GROUP, Handle, PluginEntry, PolicyRule, Registry, build_registry
from app.framework.runtime import (
    MAX_EXTENDER_PRIORITY,
    MAX_NODE_SCORE,
    EnabledPlugin,
    FilterOutcome,
    Framework,
    FrameworkError,
    ScoreOutcome,
)
from app.framework.status import SKIP, SUCCESS, Code, Status
from app.framework.types import CycleState, NodeInfo, NodeScore, PodInfo, PodRef, Victims

__all__ = [
    "ENTRY_POINT_GROUP",
    "MAX_EXTENDER_PRIORITY",
    "MAX_NODE_SCORE",
    "SKIP",
    "SUCCESS",
    "BindPlugin",
    "Code",
    "CycleState",
    "EnabledPlugin",
    "FilterOutcome",
    "FilterPlugin",
    "Framework",
    "FrameworkError",
    "Handle",
    "NodeInfo",
    "NodeScore",
    "NormalizeScorePlugin",
    "PermitPlugin",
    "Plugin",
    "PluginArgs",
    "PluginEntry",
    "PodInfo",
    "PodRef",
    "PolicyRule",
    "PreFilterPlugin",
    "PreScorePlugin",
    "PreemptionPlugin",
    "Registry",
    "ReservePlugin",
    "ScoreOutcome",
    "ScorePlugin",
    "Status",
    "Victims",
    "build_registry",
]

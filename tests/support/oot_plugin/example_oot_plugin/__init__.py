"""An out-of-tree Filter plugin: rejects nodes whose name ends with a configured suffix."""

from __future__ import annotations

from app.framework import SUCCESS, CycleState, Handle, NodeInfo, PluginArgs, PluginEntry, PodInfo, Status


class AvoidNodeSuffixArgs(PluginArgs):
    """``suffix``: node names ending with it are rejected."""

    suffix: str = "-19.eu-west-1.compute.internal"


class AvoidNodeSuffix:
    """Filter: ``Unschedulable("node name suffix is avoided")`` for matching nodes."""

    name = "AvoidNodeSuffix"

    def __init__(self, args: AvoidNodeSuffixArgs, handle: Handle) -> None:
        self.suffix = args.suffix
        self.rejected = Status.unschedulable("node name suffix is avoided")

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return self.rejected if node.name.endswith(self.suffix) else SUCCESS


PLUGIN = PluginEntry(name="AvoidNodeSuffix", factory=AvoidNodeSuffix, args=AvoidNodeSuffixArgs)

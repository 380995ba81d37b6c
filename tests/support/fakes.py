"""The fake plugins of kube-scheduler's tests (pkg/scheduler/testing/framework, ``tf``), for the
ported table tests: Filter plugins that pass, fail, match the pod's name, or count their calls."""

from __future__ import annotations

from app.framework import SUCCESS, Code, CycleState, NodeInfo, PodInfo, Status

#: ``tf.ErrReasonFake``
ERR_REASON_FAKE = "Nodes failed the fake plugin"


class TrueFilter:
    """``tf.NewTrueFilterPlugin``: every node passes."""

    name = "TrueFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS


class FalseFilter:
    """``tf.NewFalseFilterPlugin``: every node fails."""

    name = "FalseFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status(Code.UNSCHEDULABLE, (ERR_REASON_FAKE,))


class MatchFilter:
    """``tf.NewMatchFilterPlugin``: the node named as the pod passes."""

    name = "MatchFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS if pod.name == node.name else Status(Code.UNSCHEDULABLE, (ERR_REASON_FAKE,))


class FakeFilter:
    """``tf.FakeFilterPlugin``: counts its calls (``calls``); a node in ``codes``
    (``FailedNodeReturnCodeMap``) fails with that code, the others with ``code`` (``SUCCESS``:
    they pass), the reason ``injecting failure for pod <name>``."""

    name = "FakeFilter"

    def __init__(self, codes: dict[str, Code] | None = None, code: Code = Code.SUCCESS) -> None:
        self.codes, self.code, self.calls = codes or {}, code, 0

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        self.calls += 1
        code = self.codes.get(node.name, self.code)
        return SUCCESS if code is Code.SUCCESS else Status(code, (f"injecting failure for pod {pod.name}",))


__all__ = ["ERR_REASON_FAKE", "FakeFilter", "FalseFilter", "MatchFilter", "TrueFilter"]

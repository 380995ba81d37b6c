"""Plugin result codes and statuses, as in kube-scheduler's ``pkg/scheduler/framework/interface.go``."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum


class Code(IntEnum):
    """Status codes with kube-scheduler's meanings (same numeric values as ``framework.Code``)."""

    #: The plugin ran and the pod may go on (to the next plugin or node).
    SUCCESS = 0
    #: An internal error: the plugin could not decide. Handled by the plugin's failure policy.
    ERROR = 1
    #: The node does not fit now; preemption may make room (-> ``FailedNodes``).
    UNSCHEDULABLE = 2
    #: The node does not fit and preemption cannot help (-> ``FailedAndUnresolvableNodes``).
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    #: Permit: the pod must wait (gang scheduling).
    WAIT = 4
    #: PreFilter/PreScore: this plugin has nothing to say about this pod; its Filter/Score is skipped.
    #: Bind: this plugin does not bind this pod; the next bind plugin is asked.
    SKIP = 5


@dataclass(frozen=True, slots=True)
class Status:
    """The result of one plugin call: a :class:`Code`, human reasons and the plugin that set it.

    Reasons for rejected nodes are short, lowercase and stable, and never name the node (the
    ``FailedNodes`` map key does), so kube-scheduler's "0/N nodes are available: ..." event groups
    identical reasons. ``reason_code`` is a short, stable CamelCase code for the reason (like a
    Kubernetes Event's ``reason``: ``InsufficientCPU``, ``PoolExhausted``), for metrics labels and
    machine reading; :func:`reason_code` falls back to the code's name when a plugin sets none.
    """

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    reason_code: str = ""

    @property
    def message(self) -> str:
        """All reasons joined with ``", "`` (kube-scheduler's ``Status.Message``)."""
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        """True for ``SUCCESS`` (a node that passes)."""
        return self.code is Code.SUCCESS

    def is_rejected(self) -> bool:
        """True for ``UNSCHEDULABLE`` and ``UNSCHEDULABLE_AND_UNRESOLVABLE``."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def with_plugin(self, plugin: str) -> Status:
        """This status, attributed to ``plugin`` (kube-scheduler's ``Status.WithPlugin``)."""
        return self if self.plugin == plugin else Status(self.code, self.reasons, plugin, self.reason_code)

    @staticmethod
    def error(message: str, code: str = "") -> Status:
        """An ``ERROR`` status with one reason; ``code``: its ``reason_code``."""
        return Status(Code.ERROR, (message,), reason_code=code)

    @staticmethod
    def unschedulable(*reasons: str, code: str = "") -> Status:
        """An ``UNSCHEDULABLE`` status (the node may fit after preemption); ``code``: its
        ``reason_code``."""
        return Status(Code.UNSCHEDULABLE, reasons, reason_code=code)

    @staticmethod
    def unresolvable(*reasons: str, code: str = "") -> Status:
        """An ``UNSCHEDULABLE_AND_UNRESOLVABLE`` status (preemption cannot help on this node);
        ``code``: its ``reason_code``."""
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons, reason_code=code)


_CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
}
_REASON_CODE = re.compile(r"^[A-Z][A-Za-z0-9]{0,47}$")


def code_name(code: Code) -> str:
    """kube-scheduler's name of ``code`` (``framework.Code.String``): ``Unschedulable``,
    ``UnschedulableAndUnresolvable``, ``Error``..."""
    return _CODE_NAMES[code]


def reason_code(status: Status) -> str:
    """``status.reason_code`` when it is a CamelCase word of at most 48 characters, else the
    name of its code (:func:`code_name`): a bounded, stable label value."""
    given = status.reason_code
    return given if given and _REASON_CODE.match(given) else _CODE_NAMES[status.code]


#: The shared success status; plugins return it rather than allocating one per node.
SUCCESS = Status()
#: The shared skip status.
SKIP = Status(Code.SKIP)


#: kube-scheduler's ``NoNodeAvailableMsg``.
NO_NODE_AVAILABLE = "0/{} nodes are available"


def fit_error_message(
    total: int,
    statuses: Iterable[Status],
    pre_filter: Status | str | None = None,
    post_filter: str = "",
    absent: Status | None = None,
) -> str:
    """kube-scheduler v1.36.3's ``FitError.Error()`` (pkg/scheduler/framework/types.go): ``0/N nodes
    are available:`` then, when a PreFilter rejected the pod, its message (``PreFilterMsg``) and a
    period; else ``"<count> <reason>"`` for each distinct reason of the rejected nodes (a node
    counts once per reason it has; with fewer statuses than ``total`` nodes, the nodes without one
    count with the reasons of ``absent``, ``NodeToStatus.AbsentNodesStatus``), sorted as strings,
    joined by ``, `` and ended with a period; then a space and the PostFilter's message
    (``PostFilterMsg``) as it is (v1.30 added a period after it)."""
    message = NO_NODE_AVAILABLE.format(total) + ":"
    pre = pre_filter.message if isinstance(pre_filter, Status) else pre_filter
    if pre:
        message += f" {pre}."
    else:
        histogram: dict[str, int] = {}
        seen = 0
        for status in statuses:
            seen += 1
            if status.code is not Code.SUCCESS:
                for reason in status.reasons:
                    histogram[reason] = histogram.get(reason, 0) + 1
        if absent is not None and seen < total:
            for reason in absent.reasons:
                histogram[reason] = histogram.get(reason, 0) + total - seen
        parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
        if parts:
            message += f" {', '.join(parts)}."
    if post_filter:
        message += f" {post_filter}"
    return message


@dataclass
class Diagnosis:
    """Why no node fit (``framework.Diagnosis``): each evaluated node's status
    (``NodeToStatus``), the status of the nodes without one (``AbsentNodesStatus``: ``None``
    leaves them out of the FitError's counts; kube-scheduler v1.36.3 gives the nodes a
    PreFilterResult excluded ``node(s) didn't satisfy plugin(s) [...]``, see
    :func:`absent_nodes_status`), the plugins that rejected the pod (``UnschedulablePlugins``: what
    moves it out of the unschedulable pool), and the messages of a PreFilter that rejected it and
    of the PostFilter."""

    node_to_status: dict[str, Status] = field(default_factory=dict)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
    absent_nodes_status: Status | None = None

    def add_plugin_status(self, status: Status) -> None:
        """``AddPluginStatus``: a rejection's plugin joins :attr:`unschedulable_plugins`."""
        if status.plugin and status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)


def absent_nodes_status(plugins: Iterable[str]) -> Status:
    """The status ``findNodesThatFitPod`` (pkg/scheduler/schedule_one.go, v1.36.3) gives the nodes a
    PreFilterResult left out: ``UnschedulableAndUnresolvable`` ``node(s) didn't satisfy plugin(s)
    [A B]`` (Go's ``%v`` of the sorted names of the PreFilter plugins that narrowed the nodes)."""
    names = " ".join(sorted(set(plugins)))
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"node(s) didn't satisfy plugin(s) [{names}]",))


@dataclass
class FitError:
    """No node fits the pod (``framework.FitError``): how many nodes there were and the
    :class:`Diagnosis`; :meth:`error` is kube-scheduler's message."""

    num_all_nodes: int
    diagnosis: Diagnosis = field(default_factory=Diagnosis)

    def error(self) -> str:
        """``FitError.Error()`` (:func:`fit_error_message`)."""
        d = self.diagnosis
        return fit_error_message(
            self.num_all_nodes, d.node_to_status.values(), d.pre_filter_msg, d.post_filter_msg, d.absent_nodes_status
        )

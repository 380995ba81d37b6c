"""Plugin result codes and statuses, as in kube-scheduler's ``pkg/scheduler/framework/interface.go``."""

from __future__ import annotations

from dataclasses import dataclass
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
    identical reasons.
    """

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

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
        return self if self.plugin == plugin else Status(self.code, self.reasons, plugin)

    @staticmethod
    def error(message: str) -> Status:
        """An ``ERROR`` status with one reason."""
        return Status(Code.ERROR, (message,))

    @staticmethod
    def unschedulable(*reasons: str) -> Status:
        """An ``UNSCHEDULABLE`` status (the node may fit after preemption)."""
        return Status(Code.UNSCHEDULABLE, reasons)

    @staticmethod
    def unresolvable(*reasons: str) -> Status:
        """An ``UNSCHEDULABLE_AND_UNRESOLVABLE`` status (preemption cannot help on this node)."""
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)


#: The shared success status; plugins return it rather than allocating one per node.
SUCCESS = Status()
#: The shared skip status.
SKIP = Status(Code.SKIP)

"""What a scheduling attempt returns: :class:`ScheduleResult` (pkg/scheduler/scheduler.go) with a
:class:`~app.framework.Status`, as ``schedulePod`` and ``schedulingCycle`` return them
(pkg/scheduler/schedule_one.go), and the status of a pod no node fits, :class:`FitErrorStatus`
(``NewStatus(code).WithError(fitErr)``), which carries the :class:`~app.framework.status.FitError`
to the failure handler."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.framework import SUCCESS, Code, NodeInfo, Status
from app.framework.nominator import NOMINATING_NOOP, NominatingInfo
from app.framework.runtime import ScoreResult
from app.framework.status import Diagnosis, FitError


@dataclass(frozen=True, slots=True)
class FitErrorStatus(Status):
    """A rejection whose message is its :class:`FitError`'s ("0/N nodes are available: ...") and
    which carries it (``fit_error``: upstream's ``status.AsError().(*FitError)``), so the failure
    handler sends the diagnosis's unschedulable plugins back to the queue with the pod. Build it
    with :func:`fit_error_status`."""

    fit_error: FitError | None = None


def fit_error_status(fit: FitError, code: Code = Code.UNSCHEDULABLE, plugin: str = "") -> FitErrorStatus:
    """``NewStatus(code).WithError(fit)``: the message is ``fit.error()`` as it reads now (set the
    diagnosis's PostFilter message first)."""
    return FitErrorStatus(code, (fit.error(),), plugin, fit_error=fit)


def fit_error_of(status: Status) -> FitError | None:
    """The :class:`FitError` ``status`` carries (``None``: another failure)."""
    return status.fit_error if isinstance(status, FitErrorStatus) else None


def rejected_on_node(node: str, status: Status) -> Status:
    """A failure after ``node`` was chosen (Reserve, Permit, WaitOnPermit, PreBind, Bind), as
    ``schedulingCycle`` and ``bindingCycle`` report it: a rejection becomes a FitError of that one
    node (``NumAllNodes: 1``) naming the plugin, with the rejection's code ("0/1 nodes are
    available: 1 <reason>."); any other status is returned as it is."""
    if not status.is_rejected():
        return status
    fit = FitError(1, Diagnosis({node: status}))
    fit.diagnosis.add_plugin_status(status)
    return fit_error_status(fit, status.code, status.plugin)


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    """``ScheduleResult``: the node chosen (``suggested_host``, ``SuggestedHost``; ``""`` on
    failure) and the ``nominating_info`` the failure handler applies (upstream's nil by default:
    ``NOOP``); then what the attempt evaluated, which the decision records show: the ``feasible``
    nodes, the ``diagnosis`` of the others (their statuses), and the ``scores`` (``None`` when no
    Score plugin ran). ``evaluated_nodes`` and ``feasible_nodes`` are upstream's
    ``EvaluatedNodes`` and ``FeasibleNodes``."""

    suggested_host: str = ""
    nominating_info: NominatingInfo = NOMINATING_NOOP
    feasible: Sequence[NodeInfo] = ()
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    scores: ScoreResult | None = None

    @property
    def evaluated_nodes(self) -> int:
        """``EvaluatedNodes``: the nodes Filter judged (feasible or not)."""
        return len(self.feasible) + len(self.diagnosis.node_to_status)

    @property
    def feasible_nodes(self) -> int:
        """``FeasibleNodes``: the nodes that passed Filter."""
        return len(self.feasible)

    def verdicts(self) -> tuple[list[str], list[Status]]:
        """The nodes evaluated and their Filter verdicts (the feasible ones ``SUCCESS`` first)."""
        names = [n.name for n in self.feasible]
        statuses: list[Status] = [SUCCESS] * len(names)
        for name, status in self.diagnosis.node_to_status.items():
            names.append(name)
            statuses.append(status)
        return names, statuses


__all__ = ["FitErrorStatus", "ScheduleResult", "fit_error_of", "fit_error_status", "rejected_on_node"]

"""What the runtime makes of a plugin's failure: the text an answer carries for an exception (the
exception itself goes to the log only), the text of an unexpected status, and
:class:`FrameworkError`, a verb a fail-closed plugin could not answer."""

from __future__ import annotations

import logging

from app.framework.errors import SchedulerExtenderError
from app.framework.status import Code, Status

log = logging.getLogger(__name__)

#: What an answer says of a plugin's unexpected exception: the exception itself (class, message,
#: traceback, which may name hosts or objects) goes to the log only.
PLUGIN_FAILED = "plugin failed unexpectedly (the extender's log has the details)"


class FrameworkError(SchedulerExtenderError):
    """A verb could not be answered because a fail-closed plugin returned ``ERROR``."""

    def __init__(self, plugin: str, message: str) -> None:
        super().__init__(f"{plugin}: {message}" if plugin else message)
        self.plugin = plugin


def describe(exc: BaseException) -> str:
    """The answer's text for a plugin exception (:data:`PLUGIN_FAILED`); logs the exception with
    its traceback. (A malformed quantity in a request is the data's fault: ``PodInfo.requests`` and
    ``NodeInfo.allocatable`` raise :class:`~app.framework.types.ObjectDecodeError` for it, which
    the runtime lets through as a 400.)"""
    log.error("plugin raised %s", type(exc).__name__, exc_info=exc)
    return PLUGIN_FAILED


def error_text(status: Status) -> str:
    """An ``ERROR`` status's message (``error`` when it has none), or ``unexpected status
    <CODE>[: <message>]`` for a status a point does not expect."""
    if status.code is Code.ERROR:
        return status.message or "error"
    return f"unexpected status {status.code.name}" + (f": {status.message}" if status.reasons else "")


__all__ = ["PLUGIN_FAILED", "FrameworkError", "describe", "error_text"]

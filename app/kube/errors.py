"""Errors of the Kubernetes API transport, independent of the official client's types."""

from __future__ import annotations

from app.framework.errors import SchedulerExtenderError


class KubeConfigError(SchedulerExtenderError, RuntimeError):
    """No usable cluster credentials: the message says what was tried and what failed."""


class APIError(SchedulerExtenderError):
    """An API request failed.

    ``status`` is the HTTP status (0 when the API server could not be reached or did not answer in
    time); ``reason`` the ``Status.reason`` (``NotFound``, ``Conflict``, ``Expired``, ``Gone``...)
    or a transport error name; ``message`` the ``Status.message`` or the transport error text.
    ``timed_out``: the request was sent but no answer came in time (its effect is unknown).
    """

    def __init__(self, status: int, reason: str, message: str, timed_out: bool = False) -> None:
        super().__init__(f"{status or 'unreachable'} {reason}: {message}" if message else f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.message = message
        self.timed_out = timed_out

    @property
    def gone(self) -> bool:
        """``410 Gone``: the resourceVersion or continue token is too old (relist)."""
        return self.status == 410

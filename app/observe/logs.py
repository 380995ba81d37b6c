"""One logging set-up for the service and uvicorn: text or JSON lines, decision lines, no floods.

- :func:`setup_logging` installs one handler on the root logger (stderr) and makes uvicorn's
  loggers (``uvicorn.error``, ``uvicorn.access``) propagate to it, so the service's lines, the
  server's and the access log share a format. ``json``: one object per line with ``time``
  (RFC 3339, UTC), ``level``, ``logger``, ``message`` and the record's fields (``extra=``); an
  access line carries ``client``, ``method``, ``path``, ``status``.
- :class:`RepeatFilter`: an identical warning or error (same logger, same text) repeated within
  ``window`` seconds is counted instead of written; the next one written after the window says
  ``(repeated N times in the last Ws)`` (field ``repeated``). An API server that stays unreachable
  thus writes one line a minute, not one per retry.
- :func:`decision_logger`: a listener of the verbs' decisions. At ``info``, one line for each
  decision that changed a pod's fate: every node rejected (with the aggregated reasons), a
  bind (or its error), a preemption with victims. At ``debug``, one line per request with the
  per-verdict node counts and the duration.
- Probes: a request carrying :data:`PROBE_HEADER` (``check-scheduler-config`` sends it) is
  answered as any other, but the service records no decision for it, does not count it in the
  request metrics, and :class:`ProbeFilter` drops the lines below ``warning`` written while its
  answer is sent (the access line) once the router has set :data:`PROBING`.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Literal

import orjson

from app.framework.status import Code, code_name
from app.observe.decisions import Decision, rfc3339

#: ``LogRecord`` attributes that are not fields a caller passed with ``extra=``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}
_TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: The request header (lower case, as ASGI servers deliver names) that marks a request as a probe
#: of ``check-scheduler-config``; its value names the tool.
PROBE_HEADER = b"x-scheduler-extender-probe"
#: True in the task answering a probe while its answer is sent (set by the verb router).
PROBING: ContextVar[bool] = ContextVar("scheduler_extender_probing", default=False)


class JSONFormatter(logging.Formatter):
    """A record as one JSON object: ``time``, ``level``, ``logger``, ``message``, its ``extra``
    fields, ``exception`` (the traceback text) when there is one. uvicorn's access lines get
    ``client``, ``method``, ``path``, ``http``, ``status`` from their arguments."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": rfc3339(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.name == "uvicorn.access" and isinstance(record.args, tuple) and len(record.args) == 5:
            client, method, path, http, status = record.args
            doc |= {"client": client, "method": method, "path": path, "http": http, "status": status}
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                doc[key] = value
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(doc, default=str).decode()


class RepeatFilter(logging.Filter):
    """Drops a warning or error identical (logger and text) to one written less than ``window``
    seconds ago, and counts it; see the module doc. Lower levels always pass. At most
    ``max_keys`` distinct lines are remembered (the oldest are forgotten first)."""

    def __init__(self, window: float = 60.0, max_keys: int = 1024, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.window = window
        self.max_keys = max_keys
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], list[float]] = {}  # key -> [last written, suppressed since]

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, record.getMessage())
        now = self._clock()
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and now - seen[0] < self.window:
                seen[1] += 1
                return False
            suppressed = int(seen[1]) if seen is not None else 0
            self._seen.pop(key, None)
            self._seen[key] = [now, 0]
            if len(self._seen) > self.max_keys:
                del self._seen[next(iter(self._seen))]
        if suppressed:
            record.msg = f"{record.getMessage()} (repeated {suppressed} times in the last {self.window:g}s)"
            record.args = None
            record.repeated = suppressed
        return True


class ProbeFilter(logging.Filter):
    """Drops records below ``warning`` written while a probe is answered (:data:`PROBING`):
    uvicorn's access line of a ``check-scheduler-config`` request. Warnings and errors pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not PROBING.get()


def setup_logging(level: str, fmt: Literal["text", "json"] = "text", repeat_window: float = 60.0) -> logging.Handler:
    """Route the service's and uvicorn's logs through one stderr handler at ``level``
    (``debug``, ``info``, ``warning``, ``error``) in ``fmt``; returns the handler. Pass
    ``log_config=None`` to uvicorn so that it keeps this set-up."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter() if fmt == "json" else logging.Formatter(_TEXT_FORMAT))
    handler.addFilter(RepeatFilter(repeat_window))
    handler.addFilter(ProbeFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
        logger.setLevel(level.upper())
    return handler


def decision_logger(log: logging.Logger | None = None) -> Callable[[Decision], None]:
    """A decision listener writing the lines of the module doc to ``log``
    (``app.observe.decisions`` by default)."""
    out = log or logging.getLogger("app.observe.decisions")

    def listen(decision: Decision) -> None:
        pod = f"{decision.namespace}/{decision.name}"
        fields: dict[str, Any] = {"pod": pod, "uid": decision.uid, "profile": decision.profile, "verb": decision.verb}
        if decision.rejected() and out.isEnabledFor(logging.INFO):
            reasons = decision.reason_counts()
            total = len(decision.statuses)
            summary = ", ".join(f"{n} {reason}" for reason, n in reasons.items())
            out.info("pod %s: 0/%d nodes are available: %s", pod, total, summary, extra=fields | {"reasons": reasons})
        elif decision.verb == "bind" and out.isEnabledFor(logging.INFO):
            if decision.error:
                out.info("pod %s: bind to %s failed: %s", pod, decision.node, decision.error, extra=fields)
            else:
                out.info("pod %s: bound to %s", pod, decision.node, extra=fields | {"node": decision.node})
        elif decision.verb == "preempt" and decision.victims and out.isEnabledFor(logging.INFO):
            count = sum(len(v) for v in decision.victims.values())
            out.info(
                "pod %s: preemption keeps %d candidate node(s), %d victim(s)",
                pod,
                len(decision.victims),
                count,
                extra=fields | {"victims": decision.victims},
            )
        if out.isEnabledFor(logging.DEBUG):
            counts: dict[str, int] = {}
            for status in decision.statuses:
                name = code_name(status.code) if status.code is not Code.SUCCESS else "Success"
                counts[name] = counts.get(name, 0) + 1
            out.debug(
                "%s %s on profile %s: %s in %.2f ms%s",
                decision.verb,
                pod,
                decision.profile,
                ", ".join(f"{n} {verdict}" for verdict, n in counts.items()) or f"{len(decision.scores)} scored",
                1000 * decision.seconds,
                f" (error: {decision.error})" if decision.error else "",
                extra=fields | {"nodes": counts, "seconds": round(decision.seconds, 6), "error": decision.error},
            )

    return listen


__all__ = [
    "PROBE_HEADER",
    "PROBING",
    "JSONFormatter",
    "ProbeFilter",
    "RepeatFilter",
    "decision_logger",
    "setup_logging",
]

"""Capture of live traffic: filter, prioritize and preempt requests and their answers, as JSON
lines, for ``python -m app replay --capture`` (what would another configuration have decided?).

Opt-in (``diagnostics.capture.enabled``) and **sensitive**: a line holds the whole request (the
pod's spec, with its labels, annotations, images and environment; whole nodes when
``nodeCacheCapable`` is false) and the answer. Only pods in ``namespaces`` (all when empty) whose
labels match ``labelSelector`` are captured. Lines go to ``path`` through the standard library's
``RotatingFileHandler`` (``maxBytes`` per file, ``maxFiles`` rotated files ``path.1``..``path.N``),
written by a ``QueueListener`` thread: the request path only copies the bytes and queues them; at
most 64 MiB wait, beyond that a line is dropped and counted (``dropped``).

A line: ``{"time", "verb", "profile", "status", "request": <the body>, "answer": <the answer>}``.
"""

from __future__ import annotations

import logging
import logging.handlers
import queue
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import orjson

from app.framework.labels import matches, parse_selector
from app.framework.types import PodInfo
from app.observe.decisions import rfc3339

#: bytes of lines waiting for the writer before new ones are dropped
MAX_QUEUED_BYTES = 64 * 1024 * 1024


class _Handler(logging.handlers.QueueHandler):
    """Queues preformatted lines; drops (and counts) past :data:`MAX_QUEUED_BYTES`."""

    def __init__(self, capture: Capture) -> None:
        super().__init__(queue.SimpleQueue())
        self.capture = capture

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record  # the message is the line: no formatting, no copy


class _Line:
    """One captured line, built when the writer formats it (``str``), not on the request path."""

    __slots__ = ("_text", "answer", "at", "profile", "request", "size", "status", "verb")

    def __init__(
        self, at: float, verb: str, profile: str, status: int, request: bytes, answer: bytes, size: int
    ) -> None:
        self.at, self.verb, self.profile, self.status = at, verb, profile, status
        self.request, self.answer, self.size = request, answer, size
        self._text: str | None = None

    def __str__(self) -> str:  # called twice by the rotating handler (rollover check, then write)
        if self._text is None:
            self._text = self._build()
        return self._text

    def _build(self) -> str:
        body, answer = self.request, self.answer
        if b"\n" in body or b"\r" in body:  # one line per record: re-encode a pretty-printed body
            body = orjson.dumps(orjson.loads(body))
        if b"\n" in answer:
            answer = orjson.dumps(orjson.loads(answer))
        head = orjson.dumps(
            {"time": rfc3339(self.at), "verb": self.verb, "profile": self.profile, "status": self.status}
        )
        return (head[:-1] + b',"request":' + body + b',"answer":' + answer + b"}").decode("utf-8", "replace")


class _Writer(logging.handlers.RotatingFileHandler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            super().emit(record)
        finally:
            with self.capture.lock:
                self.capture.queued -= record.msg.size if isinstance(record.msg, _Line) else 0

    capture: Capture


class Capture:
    """Writes captured lines (see the module doc). ``offer`` is called by the HTTP layer for each
    answered filter, prioritize and preempt; ``start``/``stop`` run the writer thread."""

    def __init__(
        self, path: str, max_bytes: int, max_files: int, namespaces: Sequence[str] = (), label_selector: str = ""
    ) -> None:
        self.path = Path(path)
        self.namespaces = frozenset(namespaces)
        self.selector = parse_selector(label_selector)
        self.lock = threading.Lock()
        self.queued = 0
        self.written = 0
        self.dropped = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        writer = _Writer(self.path, maxBytes=max_bytes, backupCount=max_files, encoding="utf-8")
        writer.capture = self
        writer.setFormatter(logging.Formatter("%(message)s"))
        self._handler = _Handler(self)
        self._listener = logging.handlers.QueueListener(self._handler.queue, writer)
        self._writer = writer

    def wants(self, pod: PodInfo | None) -> bool:
        """Whether requests about ``pod`` are captured."""
        if pod is None:
            return False
        if self.namespaces and pod.namespace not in self.namespaces:
            return False
        return matches(self.selector, pod.labels)

    def offer(self, verb: str, profile: str, status: int, request: bytes | bytearray, answer: bytes) -> None:
        """Queue one line (never blocks: the bytes are copied here, the line is built by the
        writer thread); drops it when too much is waiting."""
        size = len(request) + len(answer)
        with self.lock:
            if self.queued + size > MAX_QUEUED_BYTES:
                self.dropped += 1
                return
            self.queued += size
            self.written += 1
        line = _Line(time.time(), verb, profile, status, bytes(request), answer, size)
        record = logging.LogRecord("capture", logging.INFO, "", 0, line, None, None)
        self._handler.enqueue(record)

    def start(self) -> None:
        """Start the writer thread."""
        self._listener.start()

    def stop(self) -> None:
        """Write what is queued, then stop the writer and close the file."""
        self._listener.stop()
        self._writer.close()


__all__ = ["MAX_QUEUED_BYTES", "Capture", "matches", "parse_selector"]

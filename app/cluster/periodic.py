"""A daemon thread that calls one function every so many seconds until stopped."""

from __future__ import annotations

import threading
from collections.abc import Callable


class PeriodicThread:
    """Calls ``step()`` at once and then every ``interval`` seconds in a daemon thread named
    ``name``, until :meth:`stop` (which does not wait for a step in progress)."""

    def __init__(self, name: str, interval: float, step: Callable[[], None]) -> None:
        self.name = name
        self.interval = interval
        self._step = step
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread."""
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the thread after its current step."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._step()
            self._stop.wait(self.interval)


__all__ = ["PeriodicThread"]

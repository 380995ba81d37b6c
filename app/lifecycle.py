"""One lifecycle for the background work: workers and the supervisor that starts and stops them.

A :class:`Worker` is one piece of background work (a reflector, the re-queuer, the event writer, a
Lease follower or elector, the standalone scheduler) with the same semantics whatever runs it:

- ``start()`` does not block: a :class:`ThreadWorker` starts a daemon thread named after the
  worker, a :class:`TaskWorker` an asyncio task on the running loop;
- ``stop()`` does not block either: it only asks the worker to end (sets its stop event; a worker
  may do more, e.g. close an open watch stream so that a blocked read returns);
- ``await join(timeout)`` waits at most ``timeout`` seconds for the worker to end without blocking
  the event loop, and says whether it ended;
- ``error`` is the last error the worker reported (``""`` when none, or once it recovered),
  ``errors`` how many it reported. A body that raises is logged with its traceback and recorded in
  ``error``; the worker then ends (a :class:`PeriodicWorker` only skips to its next step). Nothing
  is restarted: a worker that ended by itself shows in :meth:`Supervisor.failed`.

The :class:`Supervisor` starts its workers in the order added and stops them in reverse (what was
started last, and may depend on the others, ends first). Each is asked to stop and then joined
within what is left of one ``timeout`` for them all (at least :data:`MIN_JOIN` seconds each); one
that does not end in time is named in a warning and left behind (threads are daemons: they do not
hold the process), so stopping is bounded by ``timeout`` plus :data:`MIN_JOIN` per late worker.
:meth:`Supervisor.health` is what ``/readyz`` shows.

This module imports only the standard library.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import threading
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

#: Seconds each worker is joined for at least, even when a stop's ``timeout`` is spent.
MIN_JOIN = 0.1


class Worker(abc.ABC):
    """One piece of background work named ``name`` (see the module doc for the semantics shared by
    every worker). Subclasses implement :meth:`start`, :meth:`stop`, :meth:`join` and
    :attr:`running`; they report errors with :meth:`failed` and clear them with :meth:`recovered`."""

    def __init__(self, name: str) -> None:
        self.name = name
        #: the last error reported, ``""`` when none
        self.error = ""
        #: how many errors were reported
        self.errors = 0

    @abc.abstractmethod
    def start(self) -> None:
        """Start the work; returns at once."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Ask the work to end; returns at once (see :meth:`join`)."""

    @abc.abstractmethod
    async def join(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for the work to end, without blocking the event loop;
        returns whether it ended (``True`` too when it was never started)."""

    @property
    @abc.abstractmethod
    def running(self) -> bool:
        """The work was started and has not ended."""

    def failed(self, message: str) -> bool:
        """Record ``message`` as the worker's error (and count it); returns whether it differs from
        the error recorded before, so a caller can log each distinct error once, not at every retry."""
        new = message != self.error
        self.error = message
        self.errors += 1
        return new

    def recovered(self) -> None:
        """The work succeeded again: clear :attr:`error` (:attr:`errors` keeps counting)."""
        self.error = ""

    def _crashed(self, exc: BaseException) -> None:
        """The body raised ``exc``: log it with its traceback and record it."""
        log.error("%s: failed: %s: %s", self.name, type(exc).__name__, exc, exc_info=exc)
        self.failed(f"{type(exc).__name__}: {exc}")


class ThreadWorker(Worker):
    """A worker whose :meth:`run` runs in a daemon thread named :attr:`name`.

    ``run()`` returns when :attr:`stopping` is set (it checks the event, or sleeps with
    :meth:`wait`). If it raises, the exception is logged with its traceback, recorded in
    :attr:`error`, and the thread ends: it is not restarted.
    """

    def __init__(self, name: str) -> None:
        super().__init__(name)
        #: set by :meth:`stop`: ``run()`` should return
        self.stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @abc.abstractmethod
    def run(self) -> None:
        """The work, in the worker's thread; returns once :attr:`stopping` is set."""

    def start(self) -> None:
        """Start the daemon thread (returns at once)."""
        self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask :meth:`run` to end (sets :attr:`stopping`); does not wait (see :meth:`join`)."""
        self.stopping.set()

    async def join(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for the thread to end (in a helper thread, so the event
        loop goes on); returns whether it ended."""
        thread = self._thread
        if thread is None:
            return True
        await asyncio.to_thread(thread.join, timeout)
        return not thread.is_alive()

    @property
    def running(self) -> bool:
        """The thread was started and is alive."""
        return self._thread is not None and self._thread.is_alive()

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` unless stopped meanwhile; returns ``True`` when stop was asked."""
        return self.stopping.wait(seconds)

    def _main(self) -> None:
        try:
            self.run()
        except Exception as exc:
            self._crashed(exc)


class PeriodicWorker(ThreadWorker):
    """A thread worker that calls :meth:`step` at once and then every ``interval`` seconds until
    stopped (a step in progress is not interrupted). A step that raises is logged with its
    traceback and recorded in :attr:`error`; the next step still runs."""

    def __init__(self, name: str, interval: float) -> None:
        super().__init__(name)
        self.interval = interval

    @abc.abstractmethod
    def step(self) -> None:
        """One round of the work, in the worker's thread."""

    def run(self) -> None:
        """Call :meth:`step` every ``interval`` seconds until stopped."""
        while not self.stopping.is_set():
            try:
                self.step()
            except Exception as exc:
                self._crashed(exc)
            if self.wait(self.interval):
                return


class TaskWorker(Worker):
    """A worker whose ``async`` :meth:`run` is an asyncio task on the running loop.

    :meth:`start`, :meth:`stop` and :meth:`join` must be called from within that loop. ``run()``
    returns once :attr:`stopping` is set (it checks the event, or sleeps with :meth:`wait`); one
    that has not ended when :meth:`join` times out after a stop is cancelled. If it raises, the
    exception is logged with its traceback, recorded in :attr:`error`, and the task ends: it is not
    restarted.
    """

    def __init__(self, name: str) -> None:
        super().__init__(name)
        #: set by :meth:`stop`: ``run()`` should return
        self.stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @abc.abstractmethod
    async def run(self) -> None:
        """The work, on the loop; returns once :attr:`stopping` is set."""

    def start(self) -> None:
        """Create the task on the running loop (returns at once; raises ``RuntimeError`` outside a
        running loop)."""
        self._task = asyncio.get_running_loop().create_task(self._main(), name=self.name)

    def stop(self) -> None:
        """Ask :meth:`run` to end (sets :attr:`stopping`); does not wait (see :meth:`join`)."""
        self.stopping.set()

    async def join(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for the task to end; returns whether it ended. After a
        :meth:`stop`, a task still running then is cancelled (and ``False`` returned)."""
        task = self._task
        if task is None:
            return True
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done and self.stopping.is_set():
            task.cancel()
        return bool(done)

    @property
    def running(self) -> bool:
        """The task was created and is not done."""
        return self._task is not None and not self._task.done()

    async def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` unless stopped meanwhile; returns ``True`` when stop was asked."""
        try:
            await asyncio.wait_for(self.stopping.wait(), seconds)
        except TimeoutError:
            return False
        return True

    async def _main(self) -> None:
        try:
            await self.run()
        except Exception as exc:
            self._crashed(exc)


@dataclass(frozen=True)
class WorkerHealth:
    """One worker as ``/readyz`` shows it: its name, whether it runs, its last error (``""``)."""

    name: str
    running: bool
    error: str


class Supervisor:
    """Starts workers in the order added and stops them in reverse, each join bounded (see the
    module doc)."""

    def __init__(self) -> None:
        self.workers: list[Worker] = []
        self._started = False

    def add(self, worker: Worker) -> Worker:
        """Supervise ``worker`` (started by :meth:`start`, or at once if already started);
        returns it."""
        self.workers.append(worker)
        if self._started:
            worker.start()
        return worker

    def start(self) -> None:
        """Start the workers in the order added."""
        self._started = True
        for worker in self.workers:
            worker.start()

    async def stop(self, timeout: float = 5.0) -> list[str]:
        """Stop the workers in reverse order: each is asked to stop, then joined within what is
        left of ``timeout`` seconds for them all (at least :data:`MIN_JOIN` each). A worker that
        does not end in time is named in a warning and left behind. Returns the names of those
        workers."""
        self._started = False
        deadline = time.monotonic() + timeout
        late: list[str] = []
        for worker in reversed(self.workers):
            worker.stop()
            wait = max(deadline - time.monotonic(), MIN_JOIN)
            if not await worker.join(wait):
                log.warning("%s did not end within %.1fs of being stopped: left behind", worker.name, wait)
                late.append(worker.name)
        return late

    def health(self) -> list[WorkerHealth]:
        """Every worker's name, whether it runs and its last error, in the order added."""
        return [WorkerHealth(w.name, w.running, w.error) for w in self.workers]

    def failed(self) -> list[WorkerHealth]:
        """The workers with an error: reported by the work, or the reason it ended by itself."""
        return [h for h in self.health() if h.error]


__all__ = ["MIN_JOIN", "PeriodicWorker", "Supervisor", "TaskWorker", "ThreadWorker", "Worker", "WorkerHealth"]

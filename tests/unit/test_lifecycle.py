"""The worker lifecycle: start in order, stop in reverse with a bounded join, errors logged and
visible; and the API time formats."""

from __future__ import annotations

import asyncio
import threading

import pytest

from app.kube.timefmt import micro_time, rfc3339_time
from app.lifecycle import PeriodicWorker, Supervisor, TaskWorker, ThreadWorker, WorkerHealth

#: generous bounds for waits that end as soon as the awaited thing happens
WAIT = 10.0


class Recorded(ThreadWorker):
    """Records when it starts and when its run ends in a shared list."""

    def __init__(self, name: str, order: list[str]) -> None:
        super().__init__(name)
        self.order = order
        self.started = threading.Event()

    def run(self) -> None:
        self.order.append(f"start {self.name}")
        self.started.set()
        self.stopping.wait()
        self.order.append(f"end {self.name}")


class Stubborn(ThreadWorker):
    """Ignores stop until released."""

    def __init__(self) -> None:
        super().__init__("stubborn")
        self.release = threading.Event()

    def run(self) -> None:
        self.release.wait()


def test_supervisor_starts_in_order_and_stops_in_reverse() -> None:
    order: list[str] = []
    workers = [Recorded(name, order) for name in ("a", "b", "c")]
    supervisor = Supervisor()
    for w in workers:
        supervisor.add(w)
    supervisor.start()
    for w in workers:
        assert w.started.wait(WAIT)
    assert [h.running for h in supervisor.health()] == [True, True, True]
    assert [w.name for w in workers] == [h.name for h in supervisor.health()]
    late = asyncio.run(supervisor.stop(timeout=WAIT))
    assert late == []
    # started in order (each thread records its own start: started one after the other, they may
    # record in any order, so compare the sets) and stopped strictly in reverse
    assert sorted(order[:3]) == ["start a", "start b", "start c"]
    assert order[3:] == ["end c", "end b", "end a"]
    assert supervisor.health() == [WorkerHealth(n, False, "") for n in ("a", "b", "c")]
    assert supervisor.failed() == []


def test_supervisor_start_calls_start_in_the_order_added() -> None:
    calls: list[str] = []

    class Spy(ThreadWorker):
        def start(self) -> None:
            calls.append(f"start {self.name}")

        def stop(self) -> None:
            calls.append(f"stop {self.name}")

        def run(self) -> None:  # never started: start is replaced
            raise AssertionError

    supervisor = Supervisor()
    for name in ("x", "y", "z"):
        supervisor.add(Spy(name))
    supervisor.start()
    asyncio.run(supervisor.stop(timeout=0.1))
    assert calls == ["start x", "start y", "start z", "stop z", "stop y", "stop x"]


def test_a_worker_that_ignores_stop_is_reported_after_the_bounded_join(caplog: pytest.LogCaptureFixture) -> None:
    order: list[str] = []
    polite, stubborn = Recorded("polite", order), Stubborn()
    supervisor = Supervisor()
    supervisor.add(polite)
    supervisor.add(stubborn)
    supervisor.start()
    assert polite.started.wait(WAIT)
    late = asyncio.run(supervisor.stop(timeout=0.2))  # returns although stubborn goes on
    assert late == ["stubborn"]
    assert "stubborn did not end within 0.2s" in caplog.text
    assert stubborn.running and not polite.running  # the next worker was still stopped
    stubborn.release.set()
    assert asyncio.run(stubborn.join(WAIT)) and not stubborn.running


def test_a_periodic_worker_keeps_stepping_after_a_step_raises(caplog: pytest.LogCaptureFixture) -> None:
    class Flaky(PeriodicWorker):
        def __init__(self) -> None:
            super().__init__("flaky", interval=0.01)
            self.steps = 0
            self.third = threading.Event()

        def step(self) -> None:
            self.steps += 1
            if self.steps >= 3:
                self.third.set()
                return
            raise RuntimeError(f"step {self.steps} failed")

    flaky = Flaky()
    flaky.start()
    assert flaky.third.wait(WAIT)  # steps 1 and 2 raised; the third still ran
    flaky.stop()
    assert asyncio.run(flaky.join(WAIT)) and not flaky.running
    assert flaky.error == "RuntimeError: step 2 failed" and flaky.errors == 2
    assert "flaky: failed: RuntimeError: step 1 failed" in caplog.text
    assert "Traceback" in caplog.text  # logged with its traceback


def test_a_thread_worker_whose_run_raises_ends_with_its_error(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(ThreadWorker):
        def run(self) -> None:
            raise ValueError("no kubeconfig")

    broken = Broken("broken")
    supervisor = Supervisor()
    supervisor.add(broken)
    supervisor.start()
    assert asyncio.run(broken.join(WAIT))  # ended by itself, without a stop
    assert not broken.running and broken.error == "ValueError: no kubeconfig" and broken.errors == 1
    assert supervisor.failed() == [WorkerHealth("broken", False, "ValueError: no kubeconfig")]
    assert "broken: failed: ValueError: no kubeconfig" in caplog.text
    assert asyncio.run(supervisor.stop(timeout=WAIT)) == []


def test_wait_returns_at_once_when_stopped() -> None:
    class Idle(ThreadWorker):
        def run(self) -> None:
            while not self.wait(3600):
                pass

    idle = Idle("idle")
    idle.start()
    assert idle.running and not idle.wait(0)
    idle.stop()
    assert idle.wait(0)
    assert asyncio.run(idle.join(WAIT)) and not idle.running


def test_failed_says_whether_the_error_is_new_and_recovered_clears_it() -> None:
    class Noop(ThreadWorker):
        def run(self) -> None:
            pass

    w = Noop("noop")
    assert w.failed("down") and not w.failed("down") and w.failed("other")
    assert (w.error, w.errors) == ("other", 3)
    w.recovered()
    assert (w.error, w.errors) == ("", 3)
    assert asyncio.run(w.join(0.1)) and not w.running  # never started: nothing to wait for


def test_a_task_worker_runs_on_the_loop_and_ends_on_stop() -> None:
    class Ticker(TaskWorker):
        def __init__(self) -> None:
            super().__init__("ticker")
            self.ticks = 0
            self.loop: asyncio.AbstractEventLoop | None = None
            self.ticked = asyncio.Event()

        async def run(self) -> None:
            self.loop = asyncio.get_running_loop()
            while not await self.wait(0.01):
                self.ticks += 1
                self.ticked.set()

    async def main() -> None:
        ticker = Ticker()
        supervisor = Supervisor()
        supervisor.add(ticker)
        supervisor.start()
        await asyncio.wait_for(ticker.ticked.wait(), WAIT)
        assert ticker.running and ticker.loop is asyncio.get_running_loop()
        assert await supervisor.stop(timeout=WAIT) == []
        assert not ticker.running and ticker.error == "" and ticker.ticks >= 1

    asyncio.run(main())


def test_a_task_worker_that_ignores_stop_is_cancelled_and_one_that_raises_records_it() -> None:
    class Deaf(TaskWorker):
        async def run(self) -> None:
            await asyncio.Event().wait()  # never checks stopping

    class Broken(TaskWorker):
        async def run(self) -> None:
            raise RuntimeError("boom")

    async def main() -> None:
        deaf, broken = Deaf("deaf"), Broken("broken")
        deaf.start()
        broken.start()
        assert await broken.join(WAIT) and broken.error == "RuntimeError: boom" and not broken.running
        deaf.stop()
        assert not await deaf.join(0.2)  # did not end in time: cancelled
        await asyncio.sleep(0)  # let the cancellation land
        assert not deaf.running

    asyncio.run(main())


def test_task_worker_start_needs_a_running_loop() -> None:
    class Noop(TaskWorker):
        async def run(self) -> None:
            pass

    with pytest.raises(RuntimeError):
        Noop("noop").start()


def test_api_time_formats() -> None:
    at = 1_700_000_000.123456  # 2023-11-14T22:13:20.123456Z
    assert micro_time(at) == "2023-11-14T22:13:20.123456Z"
    assert rfc3339_time(at) == "2023-11-14T22:13:20Z"
    assert rfc3339_time(0) == "1970-01-01T00:00:00Z" and micro_time(0) == "1970-01-01T00:00:00.000000Z"

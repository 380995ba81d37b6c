"""Queueing hints of the volume plugins end to end (issue 35, item 2): ``python -m app schedule``
against the test API server. Two pods are parked by VolumeBinding because their claims are
missing; a claim's addition moves the pod that uses it (VolumeBinding's
``isSchedulableAfterPersistentVolumeClaimChange`` says Queue) and leaves the other parked (Skip),
read from the scheduler's ``scheduler_schedule_attempts_total`` and ``scheduler_pending_pods``
and the pods' ``FailedScheduling`` Events (their series counts). No PersistentVolume changes during the test: a PV
event moves every pod VolumeBinding parked (it is registered without a hint, as upstream).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_scheduler import Scheduler, bound, events, wait_for
from tests.e2e.test_volumes import config, failed_note, using
from tests.support.apiserver import FakeAPIServer, claim, node, storage_class, volume

NOT_FOUND = 'persistentvolumeclaim "{}" not found'


@pytest.fixture
def api() -> Iterator[FakeAPIServer]:
    server = FakeAPIServer()
    server.start()
    yield server
    server.stop()


def metric(scheduler: Scheduler, sample: str) -> float:
    """The value of one sample (``name{labels}``) of the scheduler's ``/metrics`` (0 when absent)."""
    text = httpx.get(f"{scheduler.url}/metrics", timeout=5).text
    found = re.search(rf"^{re.escape(sample)} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def tries(api: FakeAPIServer, pod_name: str) -> int:
    """How many ``FailedScheduling`` the pod had: its Event's ``series.count`` (1 without a series;
    the note stays the first one's, as client-go's event aggregation keys on reason and action)."""
    found = [e for e in events(api, "FailedScheduling") if e["regarding"]["name"] == pod_name]
    return sum((e.get("series") or {}).get("count", 1) for e in found)


UNSCHEDULABLE_ATTEMPTS = 'scheduler_schedule_attempts_total{profile="volumes",result="unschedulable"}'
SCHEDULED_ATTEMPTS = 'scheduler_schedule_attempts_total{profile="volumes",result="scheduled"}'
PARKED = 'scheduler_pending_pods{queue="unschedulable"}'


def test_a_claims_addition_moves_only_the_pod_that_uses_it(api: FakeAPIServer, tmp_path: Path) -> None:
    for i in range(3):
        api.put("nodes", node(f"n{i}"))
    for name in ("manual", "slow"):
        api.put("storageclasses", storage_class(name, mode="Immediate", provisioner="kubernetes.io/no-provisioner"))
    # the volume "late" will be bound to, there from the start (no PV event during the test)
    ref = {"name": "late", "namespace": "default", "uid": "uid-pvc-default-late"}
    api.put("persistentvolumes", volume("pv-late", storage_class_name="manual", claim_ref=ref))
    api.put("pods", using("lonely", "late"))
    api.put("pods", using("watcher", "other"))
    scheduler = Scheduler(config(tmp_path, api))
    try:
        for pod_name, claim_name in (("lonely", "late"), ("watcher", "other")):
            wait_for(
                lambda p=pod_name, c=claim_name: NOT_FOUND.format(c) in failed_note(api, p)(),
                seconds=30,
                what=f"{pod_name} parked: its claim is missing",
            )
        wait_for(lambda: metric(scheduler, PARKED) == 2, what="both pods in the unschedulable pool")
        attempts = metric(scheduler, UNSCHEDULABLE_ATTEMPTS)
        assert attempts >= 2

        # an unrelated claim (for lonely) is added: watcher moves and is tried again, lonely stays
        api.put("persistentvolumeclaims", claim("other", storage_class_name="slow"))
        wait_for(lambda: tries(api, "watcher") == 2, what="watcher tried again once its claim exists")
        time.sleep(1.0)  # a pod moved with watcher would be tried at once (popBackoff) or after 1 s
        assert (tries(api, "lonely"), tries(api, "watcher")) == (1, 2)
        assert metric(scheduler, UNSCHEDULABLE_ATTEMPTS) == attempts + 1  # watcher's attempt alone
        assert metric(scheduler, PARKED) == 2

        # lonely's own claim is added (bound already): lonely moves and is bound, watcher stays
        api.put("persistentvolumeclaims", claim("late", storage_class_name="manual", volume_name="pv-late"))
        wait_for(lambda: "lonely" in bound(api), seconds=30, what="lonely bound once its claim exists")
        assert metric(scheduler, SCHEDULED_ATTEMPTS) == 1
        assert metric(scheduler, UNSCHEDULABLE_ATTEMPTS) == attempts + 1  # watcher was not tried again
        assert tries(api, "watcher") == 2
        assert metric(scheduler, PARKED) == 1
        assert "watcher" not in bound(api)
    finally:
        scheduler.stop()

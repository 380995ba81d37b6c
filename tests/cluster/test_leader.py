"""The Lease follower through the official client against the test API server, and the bind
admission it gates (leader, warm-up after a takeover)."""

from __future__ import annotations

from collections.abc import Callable

from app.cluster.connection import ClusterConnection
from app.cluster.leader import LEADER, STANDBY, WARMING_UP, LeaderElectionSettings, Leadership, LeaseFollower
from app.framework import ClusterNeeds
from app.kube.errors import APIError
from tests.cluster.conftest import official_client, wait_for
from tests.support.apiserver import FakeAPIServer, lease


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def follower(api: FakeAPIServer, clock: Clock, takeovers: list[int]) -> LeaseFollower:
    client = official_client(api.url)
    settings = LeaderElectionSettings(identity="cp-1", renew_deadline=10.0, retry_period=0.1)
    return LeaseFollower(settings, lambda ns, name: client.get_lease(ns, name, 2.0), lambda: takeovers.append(1), clock)


def test_follows_the_holder_and_its_renewals(api: FakeAPIServer) -> None:
    clock, takeovers = Clock(), []
    f = follower(api, clock, takeovers)
    f.poll()
    assert not f.is_leader() and f.error == "Lease kube-system/kube-scheduler does not exist"
    api.put("leases", lease("cp-2_7f3a"))  # another node's kube-scheduler leads
    f.poll()
    assert f.role() == STANDBY and f.holder == "cp-2_7f3a" and takeovers == []
    api.put("leases", lease("cp-1_91bc"))  # this node's kube-scheduler took over
    f.poll()
    assert f.role() == LEADER and takeovers == [1] and f.takeovers == 1
    clock.now += 9  # renewed within renewDeadline: still leading
    api.put("leases", lease("cp-1_91bc"))
    f.poll()
    assert f.is_leader() and takeovers == [1]
    clock.now += 10.5  # not renewed for renewDeadline: it would have stepped down
    f.poll()
    assert not f.is_leader()
    api.put("leases", lease("cp-1_91bc"))  # renewed again: a new term, a new takeover
    f.poll()
    assert f.is_leader() and takeovers == [1, 1]


def test_a_failed_read_keeps_the_leader_until_the_renew_deadline(api: FakeAPIServer) -> None:
    clock, takeovers = Clock(), []
    client = official_client(api.url)
    unreachable = [False]

    def read(namespace: str, name: str) -> bytes | None:
        if unreachable[0]:
            raise APIError(0, "MaxRetryError", "connection refused", timed_out=False)
        return client.get_lease(namespace, name, 2.0)

    settings = LeaderElectionSettings(identity="cp-1", renew_deadline=10.0, retry_period=0.1)
    f = LeaseFollower(settings, read, lambda: takeovers.append(1), clock)
    api.put("leases", lease("cp-1_91bc"))
    f.poll()
    assert f.is_leader()
    unreachable[0] = True  # the API server is unreachable for a while: no reason to step down yet
    clock.now += 5
    f.poll()
    assert f.is_leader() and f.error.startswith("reading Lease kube-system/kube-scheduler")
    clock.now += 6  # renewDeadline (10 s) since the last renewal seen: kube-scheduler gave up too
    f.poll()
    assert not f.is_leader() and takeovers == [1]


def test_a_hostname_prefix_is_not_the_holder(api: FakeAPIServer) -> None:
    clock, takeovers = Clock(), []
    f = follower(api, clock, takeovers)
    api.put("leases", lease("cp-10_aa"))  # "cp-1" is only a prefix of the holder's hostname
    f.poll()
    assert not f.is_leader()


def test_bind_admission_follows_the_lease(api: FakeAPIServer, make_cluster: Callable[..., ClusterConnection]) -> None:
    api.put("leases", lease("cp-2_7f3a"))
    settings = LeaderElectionSettings(identity="cp-1", renew_deadline=10.0, retry_period=0.1)
    cluster = make_cluster(api.url, leader_election=settings)
    # its Bindings may be in flight 0.5 s, and its Reserve (verifyFit) guards capacity
    cluster.register("DefaultBinder", ClusterNeeds(bind_deadline=0.5, reserves_capacity=True))
    wait_for(cluster.health.has_synced)
    wait_for(lambda: cluster.follower is not None and cluster.follower.holder == "cp-2_7f3a", what="Lease read")
    refusal = cluster.bind_admission()
    assert refusal is not None and refusal.startswith(
        "this extender's kube-scheduler (cp-1) does not hold the Lease kube-system/kube-scheduler (held by cp-2_7f3a)"
    )
    assert cluster.follower is not None
    leadership = Leadership(cluster.bind_admission, leases=[(cluster.follower, cluster.bind_admission)])
    assert leadership.role() == STANDBY
    assert [(r.lease, r.holder, r.role) for r in leadership.leases()] == [
        ("kube-system/kube-scheduler", "cp-2_7f3a", STANDBY)
    ]
    api.put("leases", lease("cp-1_91bc"))
    wait_for(lambda: leadership.role() != STANDBY, what="takeover")
    # a takeover restarts the warm-up: the previous leader's Bindings may still be in flight; the
    # role says so without denying that this replica's kube-scheduler holds the Lease
    assert leadership.role() == WARMING_UP and leadership.leases()[0].takeovers == 1
    assert (cluster.bind_admission() or "").startswith("warming up: binds are admitted in ")
    wait_for(lambda: cluster.bind_admission() is None, what="warm-up over")
    assert leadership.role() == LEADER


def test_the_elector_is_a_periodic_worker_whose_failed_writes_are_its_error() -> None:
    import asyncio
    import threading
    from typing import Any

    from app.cluster.leader import LeaseElector

    clock = Clock()
    down = [True]
    created: list[dict[str, Any]] = []
    led = threading.Event()

    def create(namespace: str, body: dict[str, Any]) -> None:
        if down[0]:
            raise APIError(503, "ServiceUnavailable", "etcd is down")
        created.append(body)

    def replace(namespace: str, name: str, body: dict[str, Any]) -> None:
        raise AssertionError("no Lease to replace")

    settings = LeaderElectionSettings(identity="cp-1", retry_period=0.01)
    elector = LeaseElector(settings, lambda ns, name: None, create, replace, on_start=led.set, clock=clock)
    elector.step()
    assert not elector.is_leader() and elector.error.startswith("Lease kube-system/kube-scheduler: ")
    assert "etcd is down" in elector.error and elector.errors == 1
    assert elector.name == "lease-elector" and elector.interval == 0.01
    down[0] = False
    elector.start()  # steps in its thread every retry_period
    assert led.wait(10) and elector.is_leader() and elector.error == ""
    assert created[0]["spec"]["renewTime"].endswith("Z") and elector.errors == 1
    elector.stop()
    assert asyncio.run(elector.join(10)) and not elector.running


def test_no_warm_up_without_a_reserve_that_guards_capacity(
    api: FakeAPIServer, make_cluster: Callable[..., ClusterConnection]
) -> None:
    """A bind deadline alone (DefaultBinder without verifyFit) protects nothing by waiting: binds
    are admitted as soon as the watch has synced, and a bind verb would not wait."""
    cluster = make_cluster(api.url)
    cluster.register("DefaultBinder", ClusterNeeds(bind_deadline=5.0))
    wait_for(cluster.health.has_synced)
    assert cluster.bind_admission() is None and cluster.bind_admission_wait() == 0.0
    assert Leadership(cluster.bind_admission).role() == LEADER

"""The standalone scheduler's pieces against kube-scheduler's semantics: queue order and backoff,
the FitError message, selectHost's reservoir sampling, and Lease election with preconditions."""

from __future__ import annotations

import time
from typing import Any

from app.cluster.leader import (
    LEADER,
    STANDBY,
    WARMING_UP,
    LeaderElectionSettings,
    Leadership,
    LeaseElector,
    LeaseReport,
)
from app.extender.verbs import run_filter
from app.framework import NodeInfo, PodInfo, Status
from app.framework.events import ANY_EVENT, NODE, POD, ActionType, ClusterEvent
from app.framework.status import fit_error_message
from app.kube.errors import APIError
from app.scheduler.queue import BACKOFF, UNSCHEDULABLE, SchedulingQueue
from tests.unit.helpers import pod, seed


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_queue_orders_by_priority_then_arrival_and_backs_off_errors() -> None:
    clock = Clock()
    q = SchedulingQueue(clock=clock)
    low, high, later_high = pod("low", uid="l"), pod("high", uid="h", priority=10), pod("h2", uid="h2", priority=10)
    q.sync([low, high])
    clock.now += 1
    q.sync([low, high, later_high])
    assert [q.pop(), q.pop(), q.pop()] == [high, later_high, low]
    assert q.pop() is None
    q.failed("h", unschedulable=False)  # an error: the error backoffQ, 1 s after the first error
    # the error backoffQ is never popped early (v1.33+ popBackoff takes the backoffQ of rejected pods)
    assert q.get("h").where == BACKOFF and q.pop() is None  # type: ignore[union-attr]
    clock.now += 1  # v1.33+ (KEP-5142, backoff_queue.go alignToWindow): backing off through the end's 1 s window
    assert q.pop() is None
    clock.now += 1
    assert q.pop() is high
    q.failed("h", unschedulable=False)  # a second error in a row: 2 s
    clock.now += 2.9
    assert q.pop() is None
    clock.now += 0.1
    assert q.pop() is high
    assert [q.backoff(n) for n in (1, 2, 3, 4, 5, 6)] == [1, 2, 4, 8, 10, 10]


def test_unschedulable_pods_wait_for_an_event_their_update_a_sibling_or_the_flush() -> None:
    clock = Clock()
    q = SchedulingQueue(max_unschedulable=300, clock=clock)
    a, b = pod("a", uid="a"), pod("b", uid="b")
    q.sync([a, b])
    q.pop(), q.pop()
    q.failed("a", unschedulable=True, plugins=["P"])
    q.failed("b", unschedulable=True, plugins=["P"])
    clock.now += 30
    assert q.pop() is None and q.counts()[UNSCHEDULABLE] == 2  # no event: they stay parked
    assert q.move_on(None) == 2  # events unknown: every parked pod goes back
    assert {q.pop().uid, q.pop().uid} == {"a", "b"}  # type: ignore[union-attr]
    q.failed("a", unschedulable=True, plugins=["P"])
    q.sync([pod("a", uid="a", annotations={"x": "y"}), b])  # its own object changed
    assert q.get("a").where == BACKOFF  # type: ignore[union-attr]  # still backing off (2 s after a 2nd try)
    clock.now += 2
    assert q.pop().uid == "a"  # type: ignore[union-attr]
    q.failed("a", unschedulable=True, plugins=["P"])
    q.activate([pod("a", uid="a")])  # PodsToActivate: a sibling of its pod group is waiting at Permit
    assert q.pop().uid == "a"  # type: ignore[union-attr]
    q.failed("a", unschedulable=True, plugins=["P"])
    clock.now += 300  # flushUnschedulablePodsLeftover: parked longer than 5 minutes, not as long
    assert q.pop() is None
    clock.now += 0.5
    assert q.pop().uid == "a"  # type: ignore[union-attr]  # the periodic flush
    q.done("a")
    q.sync([b])
    assert q.get("a") is None and len(q) == 1
    q.sync([])
    assert len(q) == 1  # b is being scheduled: it stays until the attempt ends


def test_fit_error_message_is_kube_schedulers() -> None:
    statuses = [
        Status(),
        Status.unschedulable("Insufficient cpu", "Insufficient memory"),
        Status.unschedulable("Insufficient cpu"),
        Status.unresolvable("node(s) didn't match Pod's node affinity/selector"),
    ]
    assert fit_error_message(4, statuses) == (
        "0/4 nodes are available: 1 Insufficient memory, 1 node(s) didn't match Pod's node affinity/selector, "
        "2 Insufficient cpu."
    )
    assert fit_error_message(0, []) == "0/0 nodes are available:"


class LeaseStore:
    """A Lease with kube-apiserver's optimistic concurrency, in memory."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0

    def read(self, namespace: str, name: str) -> bytes | None:
        import json

        return json.dumps(self.lease).encode() if self.lease is not None else None

    def create(self, namespace: str, body: dict[str, Any]) -> None:
        if self.lease is not None:
            raise APIError(409, "AlreadyExists", "exists")
        self._store(body)

    def replace(self, namespace: str, name: str, body: dict[str, Any]) -> None:
        if self.lease is None or body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise APIError(409, "Conflict", "the object has been modified")
        self._store(body)

    def _store(self, body: dict[str, Any]) -> None:
        self.version += 1
        self.lease = {**body, "metadata": {**body["metadata"], "resourceVersion": str(self.version)}}


def test_one_leader_and_a_takeover_only_after_the_lease_expires() -> None:
    clock, store = Clock(), LeaseStore()
    settings = LeaderElectionSettings(
        lease_name="chaos-scheduler", lease_duration=15, renew_deadline=10, retry_period=2
    )
    started: list[str] = []

    def elector(identity: str) -> LeaseElector:
        return LeaseElector(
            settings,
            store.read,
            store.create,
            store.replace,
            on_start=lambda: started.append(identity),
            identity=identity,
            clock=clock,
            wall=clock,
        )

    a, b = elector("a"), elector("b")
    a.step()
    b.step()
    assert a.is_leader() and not b.is_leader() and store.lease["spec"]["holderIdentity"] == "a"  # type: ignore[index]
    for _ in range(5):  # a renews; b keeps seeing a fresh record
        clock.now += 2
        a.step()
        b.step()
    assert a.is_leader() and not b.is_leader()
    clock.now += 14  # a stopped renewing (killed): b waits the lease duration from its last observation
    b.step()
    assert not b.is_leader()
    clock.now += 2
    b.step()
    assert b.is_leader() and store.lease["spec"]["holderIdentity"] == "b"  # type: ignore[index]
    assert store.lease["spec"]["leaseTransitions"] == 1 and started == ["a", "b"]  # type: ignore[index]
    clock.now += 11
    a.step()  # a returns: b holds a fresh record, so a may not write, and its own lease has lapsed
    assert not a.is_leader() and store.lease["spec"]["holderIdentity"] == "b"  # type: ignore[index]


def test_a_stopped_leader_releases_the_lease_and_the_standby_takes_it_at_its_next_step() -> None:
    """client-go's ``release`` (``ReleaseOnCancel``): holder cleared, ``leaseDurationSeconds`` 1,
    ``acquireTime`` and ``renewTime`` now, transitions kept; an empty holder is acquired at once,
    not a lease duration after it was last renewed; the released elector no longer leads."""
    clock, store = Clock(), LeaseStore()
    settings = LeaderElectionSettings(lease_name="ip-scheduler", lease_duration=15, renew_deadline=10, retry_period=2)
    busy = [True]
    stopped: list[str] = []
    a = LeaseElector(
        settings,
        store.read,
        store.create,
        store.replace,
        on_stop=lambda: stopped.append("a"),
        identity="a",
        clock=clock,
        wall=lambda: 1.7e9,
        guarded_done=lambda: not busy[0],
    )
    b = LeaseElector(settings, store.read, store.create, store.replace, identity="b", clock=clock, wall=clock)
    a.step()
    b.step()
    assert a.is_leader() and a.takeovers == 1 and not b.is_leader() and b.takeovers == 0
    assert not a.release()  # a binding cycle may still be in flight: the Lease is left to expire
    assert a.is_leader() and store.lease["spec"]["holderIdentity"] == "a"  # type: ignore[index]
    busy[0] = False
    assert a.release()
    spec = store.lease["spec"]  # type: ignore[index]
    assert spec == {
        "holderIdentity": "",
        "leaseDurationSeconds": 1,
        "acquireTime": "2023-11-14T22:13:20.000000Z",
        "renewTime": "2023-11-14T22:13:20.000000Z",
        "leaseTransitions": 0,
    }
    assert not a.is_leader() and stopped == ["a"] and a.holder == ""
    clock.now += 2  # b's next retry: the Lease has no holder, so b takes it although renewed just now
    b.step()
    assert b.is_leader() and b.takeovers == 1 and store.lease["spec"]["holderIdentity"] == "b"  # type: ignore[index]
    assert store.lease["spec"]["leaseTransitions"] == 1  # type: ignore[index]
    assert a.release()  # no longer the holder: nothing to write
    assert store.lease["spec"]["holderIdentity"] == "b"  # type: ignore[index]


def test_a_stopped_elector_releases_from_its_thread_once_stopped() -> None:
    import asyncio

    store = LeaseStore()
    settings = LeaderElectionSettings(lease_name="ip-scheduler", retry_period=0.01)
    elector = LeaseElector(settings, store.read, store.create, store.replace, identity="a")
    elector.start()
    deadline = time.monotonic() + 10
    while not elector.is_leader() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert elector.is_leader()
    elector.stop()
    assert asyncio.run(elector.join(10)) and not elector.running
    assert store.lease["spec"]["holderIdentity"] == "" and not elector.is_leader()  # type: ignore[index]


def test_leadership_reports_the_held_leases_and_the_warm_up_of_their_work() -> None:
    clock, store = Clock(), LeaseStore()
    settings = LeaderElectionSettings(lease_name="ip-scheduler", lease_duration=15, renew_deadline=10, retry_period=2)
    a = LeaseElector(settings, store.read, store.create, store.replace, identity="a", clock=clock, wall=clock)
    b = LeaseElector(settings, store.read, store.create, store.replace, identity="b", clock=clock, wall=clock)
    synced: list[str | None] = ["the cluster state has not synced yet"]
    replica_a = Leadership(leases=[(a, lambda: synced[0])])
    replica_b = Leadership(leases=[(b, lambda: None)])
    assert replica_a.role() == replica_b.role() == STANDBY  # nobody holds the Lease yet
    a.step()
    b.step()
    # a holds the Lease but its scheduler waits for the sync: it says so, and is still the holder
    assert replica_a.role() == WARMING_UP and replica_b.role() == STANDBY
    assert replica_a.leases() == [LeaseReport("kube-system/ip-scheduler", "a", WARMING_UP, 1)]
    assert replica_b.leases() == [LeaseReport("kube-system/ip-scheduler", "a", STANDBY, 0)]
    synced[0] = None
    assert replica_a.role() == LEADER
    assert Leadership().role() == LEADER and not Leadership().elected  # no election: it acts alone
    assert Leadership(lambda: "warming up").role() == WARMING_UP


def _default_profile_framework(**profile: Any) -> Any:
    """A standalone-scheduler profile's framework (kube-scheduler's default plugins), on an
    in-memory cluster."""
    from app.bootstrap import assemble
    from app.config import parse_config
    from app.plugins import default_registry

    registry = default_registry(False)
    doc = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "cluster": {},
        "profiles": [{"name": "s", "schedulerName": "s", **profile}],
    }
    return assemble(parse_config(doc, registry), registry).frameworks["s"]


def test_every_scheduler_profile_starts_from_kube_schedulers_default_plugins() -> None:
    fw = _default_profile_framework()
    assert [ep.name for ep in fw.filter_plugins] == [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeDeclaredFeatures",
    ]  # v1.36.3's getDefaultPlugins: no EBSLimits, GCEPDLimits, AzureDiskLimits; NodeDeclaredFeatures last,
    # DynamicResources inserted before DefaultPreemption after it (applyDynamicResources)
    assert [(ep.name, ep.weight) for ep in fw.score_plugins] == [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("DynamicResources", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ]
    assert [ep.name for ep in fw.queue_sort_plugins] == ["PrioritySort"]
    # v1.36.3's DefaultPreemption is a PreEnqueuePlugin (async preemption, KEP 4832), and so is
    # DynamicResources (a pod's claims exist)
    assert [ep.name for ep in fw.pre_enqueue_plugins] == ["SchedulingGates", "DynamicResources", "DefaultPreemption"]
    assert [ep.name for ep in fw.bind_plugins] == ["DefaultBinder"]
    # multiPoint's disabled and a point's own list, as KubeSchedulerConfiguration's mergePlugins
    fw = _default_profile_framework(
        plugins={
            "multiPoint": {"disabled": [{"name": "ImageLocality"}, {"name": "NodePorts"}]},
            "score": {
                "enabled": [{"name": "NodeResourcesFit", "weight": 5}],
                "disabled": [{"name": "TaintToleration"}],
            },
        }
    )
    assert "NodePorts" not in [ep.name for ep in fw.filter_plugins]
    scores = [(ep.name, ep.weight) for ep in fw.score_plugins]
    assert scores[0] == ("NodeResourcesFit", 5) and "ImageLocality" not in dict(scores)
    assert "TaintToleration" not in dict(scores) and "TaintToleration" in [ep.name for ep in fw.filter_plugins]
    fw = _default_profile_framework(
        extender={"verbs": ["bind"]},
        plugins={"multiPoint": {"disabled": [{"name": "*"}]}, "bind": [{"name": "DefaultBinder"}]},
    )
    assert fw.filter_plugins == () and [ep.name for ep in fw.bind_plugins] == ["DefaultBinder"]


def test_node_constraints_are_kube_schedulers_default_filters() -> None:
    """The default plugins reject the nodes kube-scheduler rejects, with its reasons."""
    from tests.unit.helpers import node

    fw = _default_profile_framework()
    room = {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}

    def verdict(p: PodInfo, n: NodeInfo) -> tuple[str, ...] | None:
        status = run_filter(fw, p, [n]).statuses[0]
        return None if status.is_success() else status.reasons

    control_plane = node(
        "cp", spec={"taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]}, status=room
    )
    cordoned = node("c", spec={"unschedulable": True}, status=room)
    prefer = node("p", spec={"taints": [{"key": "k", "value": "v", "effect": "PreferNoSchedule"}]}, status=room)
    gpu = node("g", labels={"accelerator": "a100"}, status=room)
    plain = pod("p")
    assert verdict(plain, control_plane) == ("node(s) had untolerated taint(s)",)  # v1.36.3 names no taint
    assert verdict(plain, cordoned) == ("node(s) were unschedulable",)
    assert verdict(plain, prefer) is None and verdict(plain, gpu) is None
    tolerant = pod("t", tolerations=[{"operator": "Exists"}])  # tolerates every taint
    assert verdict(tolerant, control_plane) is None and verdict(tolerant, cordoned) is None
    keyed = pod(
        "k",
        tolerations=[{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}],
    )
    assert verdict(keyed, control_plane) is None and verdict(keyed, cordoned) is not None
    selective = pod("s", nodeSelector={"accelerator": "a100"})
    assert verdict(selective, gpu) is None
    assert verdict(selective, prefer) == ("node(s) didn't match Pod's node affinity/selector",)


def test_a_parked_pod_moves_only_on_an_event_a_plugin_that_rejected_it_registered() -> None:
    """Queueing hints without hint functions (v1.30's EventsToRegister): a pod NodeResourcesFit
    rejected waits for a pod deletion or a node change, not for another pod's binding; one
    InterPodAffinity rejected moves when a pod is assigned; a pod no plugin rejected by name moves
    on any event; events lost to the log's bound move everyone."""
    clock = Clock()
    registered = {
        "NodeResourcesFit": (
            ClusterEvent(POD, ActionType.DELETE),
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE),
        ),
        "InterPodAffinity": (ClusterEvent(POD, ActionType.ALL), ClusterEvent(NODE, ActionType.ADD)),
    }
    interest = [e for events in registered.values() for e in events]  # no plugin registers a Node Delete
    q = SchedulingQueue(clock=clock, registered=lambda p: registered.get(p, (ANY_EVENT,)), interest=interest)
    fit, affinity, anon = pod("fit", uid="fit"), pod("aff", uid="aff"), pod("anon", uid="anon")
    q.sync([fit, affinity, anon])
    for _ in range(3):
        q.pop()
    q.failed("fit", unschedulable=True, plugins=["NodeResourcesFit"])
    q.failed("aff", unschedulable=True, plugins=["InterPodAffinity"])
    q.failed("anon", unschedulable=True)  # no plugin rejected it by name: backoffQ (upstream's rule)
    assert q.get("anon").where == BACKOFF  # type: ignore[union-attr]
    clock.now += 11  # past every backoff: a moved pod goes straight to activeQ
    assert q.move_on([ClusterEvent(POD, ActionType.ADD)]) == 1  # another pod bound: not fit's business
    assert {q.pop().uid, q.pop().uid} == {"aff", "anon"}  # type: ignore[union-attr]
    assert q.get("fit").where == UNSCHEDULABLE  # type: ignore[union-attr]
    assert q.move_on([ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL)]) == 1
    assert q.pop().uid == "fit"  # type: ignore[union-attr]
    # an event while the pod was in flight: it goes to backoffQ, not to the pool
    q.failed("fit", unschedulable=True, plugins=["NodeResourcesFit"], events=[ClusterEvent(POD, ActionType.DELETE)])
    assert q.get("fit").where == BACKOFF  # type: ignore[union-attr]
    q.failed("aff", unschedulable=True, plugins=["InterPodAffinity"], events=[ClusterEvent(NODE, ActionType.DELETE)])
    assert q.get("aff").where == UNSCHEDULABLE  # type: ignore[union-attr]
    assert q.move_on([]) == 0 and q.move_on(None) == 1  # None: the events are unknown


def _scheduler_profile() -> tuple[Any, Any]:
    """An assembled service with one standalone scheduler profile ``s`` (kube-scheduler's default
    plugins) and its cluster state, not connected: ``(service, runtime)``."""
    from app.bootstrap import assemble
    from app.config import parse_config
    from app.plugins import default_registry

    registry = default_registry(False)
    doc = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "cluster": {},
        "profiles": [{"name": "s", "schedulerName": "s"}],
    }
    service = assemble(parse_config(doc, registry), registry)
    assert service.cluster is not None
    return service, service.cluster


def _scheduler(service: Any, runtime: Any, **options: Any) -> Any:
    """The standalone :class:`Scheduler` of profile ``s``, its queue sharing the framework's
    nominator (as the assembly builds it); ``options`` as :class:`SchedulerOptions`'."""
    from app.scheduler.scheduler import Scheduler, SchedulerOptions

    framework = service.frameworks["s"]
    queue = SchedulingQueue(nominator=framework.nominator)
    return Scheduler("s", framework, runtime, queue, options=SchedulerOptions(**options))


def _verdicts(result: Any) -> dict[str, tuple[str, ...]]:
    """Each evaluated node's reasons (``()``: feasible)."""
    names, statuses = result.verdicts()
    return {n: s.reasons for n, s in zip(names, statuses, strict=True)}


def test_a_node_must_pass_filter_with_and_without_the_pods_nominated_to_it() -> None:
    """``RunFilterPluginsWithNominatedPods`` (pkg/scheduler/framework/runtime/framework.go): the
    pods of at least the pod's priority nominated to a node count there for every Filter plugin
    (resources, and the cluster-wide counts of InterPodAffinity through ``AddPod``), and a node
    must also pass without them: a pod affinity only a nominated pod satisfies does not count."""
    from app.framework import CycleState

    service, runtime = _scheduler_profile()

    def node_doc(name: str) -> dict[str, Any]:
        labels = {"kubernetes.io/hostname": name}
        room = {"cpu": "4", "memory": "8Gi", "pods": "110"}
        return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": room}}

    nominated = {
        "metadata": {"name": "web", "namespace": "ns", "uid": "uid-web", "labels": {"app": "web"}},
        "spec": {"priority": 100, "containers": [{"name": "c", "resources": {"requests": {"cpu": "3500m"}}}]},
        "status": {"phase": "Pending", "nominatedNodeName": "n1"},
    }
    seed(runtime.cache, [node_doc(n) for n in ("n1", "n2")], [nominated])
    scheduler = _scheduler(service, runtime)
    web = runtime.cache.pod("uid-web")
    scheduler.nominator.add_nominated_pod(web)  # as the queue records a pod that says it is nominated

    def verdicts(p: PodInfo) -> dict[str, tuple[str, ...]]:
        return _verdicts(scheduler.schedule_pod(CycleState(), p)[0])

    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    # the nominated pod counts on n1: its anti-affinity term's match, and its 3.5 cpu
    away = pod("away", affinity={"podAntiAffinity": {required: [term]}})
    assert verdicts(away) == {"n1": ("node(s) didn't match pod anti-affinity rules",), "n2": ()}
    big = pod("big", containers=[{"name": "c", "resources": {"requests": {"cpu": "1"}}}])
    assert verdicts(big) == {"n1": ("Insufficient cpu",), "n2": ()}
    # ... but only for a pod of at most its priority
    urgent = pod("urgent", priority=1000, affinity={"podAntiAffinity": {required: [term]}})
    assert verdicts(urgent) == {"n1": (), "n2": ()}
    # an affinity only the nominated pod satisfies: not on n1 (it may never run there)
    follower = pod("follower", affinity={"podAffinity": {required: [term]}})
    assert set(verdicts(follower).values()) == {("node(s) didn't match pod affinity rules",)}
    # once bound (or deleted) it is no longer nominated
    scheduler.nominator.delete_nominated_pod_if_exists(web)
    assert verdicts(big) == {"n1": (), "n2": ()}


def test_nodes_failing_with_their_nominated_pods_do_not_end_the_search() -> None:
    """``findNodesThatPassFilters`` (pkg/scheduler/schedule_one.go) counts a node as feasible only
    after ``RunFilterPluginsWithNominatedPods``: with 120 nodes and ``percentageOfNodesToScore``
    50 the search wants 100 feasible nodes; the first 100 it judges each hold a higher-priority
    pod nominated there (3.5 of 4 cpu), so they fail and the search goes on to the other 20,
    where the pod is placed; when those are too small, every node was judged and the FitError
    counts each."""
    from app.framework import CycleState
    from app.scheduler.result import fit_error_of

    def found(untried_cpu: str) -> tuple[list[str], Any, Any]:
        service, runtime = _scheduler_profile()
        names = [f"n{i:03d}" for i in range(120)]

        def node_doc(name: str, cpu: str) -> dict[str, Any]:
            room = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
            return {
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": room},
            }

        def nominated(node: str) -> dict[str, Any]:
            return {
                "metadata": {"name": f"vip-{node}", "namespace": "ns", "uid": f"uid-vip-{node}"},
                "spec": {"priority": 100, "containers": [{"name": "c", "resources": {"requests": {"cpu": "3500m"}}}]},
                "status": {"phase": "Pending", "nominatedNodeName": node},
            }

        seed(runtime.cache, [node_doc(n, "4") for n in names], [])
        order = [n.name for n in runtime.cache.snapshot().list()]  # the search's, from index 0
        nodes = [node_doc(n, "4" if i < 100 else untried_cpu) for i, n in enumerate(order)]
        seed(runtime.cache, nodes, [nominated(n) for n in order[:100]])
        assert [n.name for n in runtime.cache.snapshot().list()] == order
        scheduler = _scheduler(service, runtime, percentage_of_nodes_to_score=50)
        for n in order[:100]:
            scheduler.nominator.add_nominated_pod(runtime.cache.pod(f"uid-vip-{n}"))
        big = pod("big", containers=[{"name": "c", "resources": {"requests": {"cpu": "1"}}}])
        return order, *scheduler.schedule_pod(CycleState(), big)

    order, placed, status = found("4")
    assert status.is_success() and placed.suggested_host in order[100:]
    assert [n.name for n in placed.feasible] == order[100:]  # the nodes the first 100 judged did not reach
    assert (placed.evaluated_nodes, placed.feasible_nodes) == (120, 20)
    verdicts = _verdicts(placed)
    assert len(verdicts) == 120 and {verdicts[n] for n in order[:100]} == {("Insufficient cpu",)}
    _, unplaced, status = found("500m")
    assert unplaced.feasible == () and len(_verdicts(unplaced)) == 120 and unplaced.suggested_host == ""
    fit = fit_error_of(status)
    assert fit is not None and fit.error() == status.message == "0/120 nodes are available: 120 Insufficient cpu."


def test_a_nominated_pod_whose_preemption_finds_no_candidate_loses_its_nomination() -> None:
    """``handleSchedulingFailure`` (pkg/scheduler/schedule_one.go) applies PostFilter's result:
    ``Preempt`` answers ``NewPostFilterResultWithNominatedNode("")`` (``ModeOverride``) when no
    node is a candidate, so a pod nominated earlier loses its ``status.nominatedNodeName`` (the
    ``updatePod`` write, on the API executor) and its room among the nominated pods at once (the
    nominator's ``AddNominatedPod``); a pod not eligible to preempt gets nil (``ModeNoop``) and keeps
    both."""
    from concurrent.futures import ThreadPoolExecutor

    service, runtime = _scheduler_profile()

    def node_doc(name: str) -> dict[str, Any]:
        room = {"cpu": "2", "memory": "8Gi", "pods": "110"}
        return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}, "status": {"allocatable": room}}

    def pod_doc(name: str, priority: int, node: str = "", nominated: str = "", **spec: Any) -> dict[str, Any]:
        requests = {"cpu": "2"}
        return {
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
            "spec": {
                "schedulerName": "s",
                "priority": priority,
                "nodeName": node,
                "containers": [{"name": "c", "resources": {"requests": requests}}],
                **spec,
            },
            "status": {"phase": "Running" if node else "Pending", "nominatedNodeName": nominated},
        }

    running = [pod_doc("vip-1", 5000, node="n1"), pod_doc("vip-2", 5000, node="n2")]  # nothing to preempt
    urgent = pod_doc("urgent", 1000, nominated="n1")
    never = pod_doc("never", 900, nominated="n2", preemptionPolicy="Never")
    seed(runtime.cache, [node_doc("n1"), node_doc("n2")], [*running, urgent, never])

    class Client:
        def __init__(self) -> None:
            self.nominations: list[tuple[str, str, str]] = []
            self.conditions: list[tuple[str, str, str]] = []

        def set_nominated_node(self, namespace: str, name: str, node: str, timeout: float = 5.0) -> None:
            self.nominations.append((namespace, name, node))

        def set_pod_condition(self, namespace: str, name: str, condition: dict[str, Any]) -> None:
            self.conditions.append((name, condition["type"], condition["reason"]))

    client = Client()
    runtime.client = client  # type: ignore[assignment]
    runtime.executor = ThreadPoolExecutor(max_workers=1)
    scheduler = _scheduler(service, runtime)
    nominator = scheduler.nominator

    async def attempt_both() -> None:
        assert await scheduler.step()  # the queue records both nominations as it takes the pods in
        # urgent was tried first (higher priority): its room is gone at once
        assert {n: [p.name for p in nominator.nominated_pods_for_node(n)] for n in ("n1", "n2")} == {
            "n1": [],
            "n2": ["never"],
        }
        assert await scheduler.step()

    import asyncio

    asyncio.run(attempt_both())
    runtime.executor.shutdown(wait=True)
    assert client.nominations == [("ns", "urgent", "")]  # never's nomination is not written
    written = [("urgent", "PodScheduled", "Unschedulable"), ("never", "PodScheduled", "Unschedulable")]
    assert client.conditions == written
    assert nominator.nominated_node("uid-urgent") is None and nominator.nominated_node("uid-never") == "n2"
    assert scheduler.queue.get("uid-urgent").where == UNSCHEDULABLE  # type: ignore[union-attr]

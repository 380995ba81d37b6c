"""NodePorts, ported from kube-scheduler v1.36.3's
pkg/scheduler/framework/plugins/nodeports/node_ports_test.go (``TestNodePorts``,
``TestPreFilterDisabled``, ``TestGetContainerPorts``), plus a seeded property test of the conflict
rule against a reference ``HostPortInfo`` (pkg/scheduler/framework/types.go) and a run through the
framework.
"""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from app.extender.verbs import run_filter
from app.framework import SKIP, SUCCESS, Code, CycleState, NodeInfo, PodInfo, Status, objects
from app.framework.types import NodeUsage
from app.plugins.nodeports import ERR_REASON, PLUGIN, NodePorts, check_conflict
from tests.unit.helpers import framework

UNSCHEDULABLE = Status(Code.UNSCHEDULABLE, (ERR_REASON,))


def new_pod(host: str, *host_port_infos: str) -> PodInfo:
    """upstream's ``newPod``: one container with ``PROTOCOL/hostIP/hostPort`` ports, on ``host``."""
    ports = []
    for info in host_port_infos:
        protocol, host_ip, host_port = info.split("/")
        ports.append({"hostIP": host_ip, "hostPort": int(host_port), "protocol": protocol})
    doc: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": host, "containers": [{"name": "c", "image": "pause", "ports": ports}]},
    }
    return PodInfo(msgspec.convert(doc, objects.Pod))


def new_node_info(*pods: PodInfo) -> NodeInfo:
    """upstream's ``framework.NewNodeInfo(pods...)``: no node object, the pods on it."""
    return NodeInfo("", None, NodeUsage(pods=pods))


EMPTY_POD = PodInfo(msgspec.convert({}, objects.Pod))

# (name, pod, nodeInfo, wantPreFilterStatus, wantFilterStatus) as upstream's TestNodePorts table
CASES: list[tuple[str, PodInfo, NodeInfo, Status, Status]] = [
    ("skip filter", EMPTY_POD, new_node_info(), SKIP, SUCCESS),
    (
        "other port",
        new_pod("m1", "UDP/127.0.0.1/8080"),
        new_node_info(new_pod("m1", "UDP/127.0.0.1/9090")),
        SUCCESS,
        SUCCESS,
    ),
    (
        "same udp port",
        new_pod("m1", "UDP/127.0.0.1/8080"),
        new_node_info(new_pod("m1", "UDP/127.0.0.1/8080")),
        SUCCESS,
        UNSCHEDULABLE,
    ),
    (
        "same tcp port",
        new_pod("m1", "TCP/127.0.0.1/8080"),
        new_node_info(new_pod("m1", "TCP/127.0.0.1/8080")),
        SUCCESS,
        UNSCHEDULABLE,
    ),
    (
        "different host ip",
        new_pod("m1", "TCP/127.0.0.1/8080"),
        new_node_info(new_pod("m1", "TCP/127.0.0.2/8080")),
        SUCCESS,
        SUCCESS,
    ),
    (
        "different protocol",
        new_pod("m1", "UDP/127.0.0.1/8080"),
        new_node_info(new_pod("m1", "TCP/127.0.0.1/8080")),
        SUCCESS,
        SUCCESS,
    ),
    (
        "second udp port conflict",
        new_pod("m1", "UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        new_node_info(new_pod("m1", "UDP/127.0.0.1/8080")),
        SUCCESS,
        UNSCHEDULABLE,
    ),
    (
        "first tcp port conflict",
        new_pod("m1", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        new_node_info(new_pod("m1", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081")),
        SUCCESS,
        UNSCHEDULABLE,
    ),
    (
        "first tcp port conflict due to 0.0.0.0 hostIP",
        new_pod("m1", "TCP/0.0.0.0/8001"),
        new_node_info(new_pod("m1", "TCP/127.0.0.1/8001")),
        SUCCESS,
        UNSCHEDULABLE,
    ),
    (
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        new_pod("m1", "TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        new_node_info(new_pod("m1", "TCP/127.0.0.1/8001")),
        SUCCESS,
        UNSCHEDULABLE,
    ),
    (
        "second tcp port conflict to 0.0.0.0 hostIP",
        new_pod("m1", "TCP/127.0.0.1/8001"),
        new_node_info(new_pod("m1", "TCP/0.0.0.0/8001")),
        SUCCESS,
        UNSCHEDULABLE,
    ),
    (
        "second different protocol",
        new_pod("m1", "UDP/127.0.0.1/8001"),
        new_node_info(new_pod("m1", "TCP/0.0.0.0/8001")),
        SUCCESS,
        SUCCESS,
    ),
    (
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        new_pod("m1", "UDP/127.0.0.1/8001"),
        new_node_info(new_pod("m1", "TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001")),
        SUCCESS,
        UNSCHEDULABLE,
    ),
]


@pytest.mark.parametrize(("pod", "node", "want_pre", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_node_ports(pod: PodInfo, node: NodeInfo, want_pre: Status, want: Status) -> None:
    plugin = NodePorts()
    state = CycleState()
    result, pre = plugin.pre_filter(state, pod, [node])
    assert pre == want_pre and result is None
    if pre.code is Code.SKIP:
        return
    got = plugin.filter(state, pod, node)
    assert (got.code, got.reasons) == (want.code, want.reasons)


def test_pre_filter_disabled() -> None:
    """``TestPreFilterDisabled``: Filter without PreFilter is an Error (``ErrNotFound``)."""
    node = NodeInfo("n", msgspec.convert({"metadata": {"name": "n"}}, objects.Node))
    got = NodePorts().filter(CycleState(), EMPTY_POD, node)
    assert got.code is Code.ERROR
    assert got.message == 'reading "PreFilterNodePorts" from cycleState: not found'


def _container(*ports: tuple[int, int]) -> dict[str, Any]:
    return {
        "name": "c",
        "image": "pause",
        "ports": [{"containerPort": cp, "protocol": "TCP", **({"hostPort": hp} if hp else {})} for cp, hp in ports],
    }


def test_get_container_ports() -> None:
    """``TestGetContainerPorts`` case_0: only ports with a hostPort, in container order, of both pods."""
    pod1 = {
        "spec": {
            "containers": [
                _container((8001, 8001), (8002, 8002)),
                _container((8003, 8003), (8004, 8004)),
                _container((8005, 0)),
            ]
        }
    }
    pod2 = {
        "spec": {
            "containers": [
                _container((8011, 8011), (8012, 8012)),
                _container((8013, 8013), (8014, 8014)),
                _container((8015, 0)),
            ]
        }
    }
    got = [port for doc in (pod1, pod2) for port in PodInfo(msgspec.convert(doc, objects.Pod)).host_ports]
    want = [8001, 8002, 8003, 8004, 8011, 8012, 8013, 8014]
    assert got == [("0.0.0.0", "TCP", p) for p in want]


def _init_pod(sidecar: bool) -> PodInfo:
    """``st.MakePod().InitContainerPort(sidecar, [{8001, 8001, TCP}])``."""
    init: dict[str, Any] = {
        "name": "init-container",
        "image": "pause",
        "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}],
    }
    if sidecar:
        init["restartPolicy"] = "Always"
    return PodInfo(msgspec.convert({"spec": {"initContainers": [init]}}, objects.Pod))


def test_non_sidecar_init_container_using_host_port() -> None:
    """TestNodePorts (v1.36.3) "non-sidecar initContainer using hostPort": an init container that
    ends before the pod runs holds no port (``GetHostPorts``): PreFilter skips."""
    pod = _init_pod(sidecar=False)
    assert pod.host_ports == ()
    assert NodePorts().pre_filter(CycleState(), pod, [new_node_info(new_pod("m1", "TCP/0.0.0.0/8001"))]) == (None, SKIP)


def test_tcp_host_port_conflict_from_sidecar_init_container() -> None:
    """TestNodePorts (v1.36.3) "TCP hostPort conflict from sidecar initContainer": a sidecar's host
    ports are the pod's, on its side and on the node's (``updateUsedPorts``)."""
    pod = _init_pod(sidecar=True)
    assert pod.host_ports == (("0.0.0.0", "TCP", 8001),)
    node = new_node_info(new_pod("m1", "TCP/0.0.0.0/8001"))
    plugin, state = NodePorts(), CycleState()
    assert plugin.pre_filter(state, pod, [node]) == (None, SUCCESS)
    got = plugin.filter(state, pod, node)
    assert (got.code, got.reasons) == (UNSCHEDULABLE.code, UNSCHEDULABLE.reasons)
    # and a sidecar's port on the node blocks a pod asking for it
    other, other_state = new_pod("m2", "TCP/0.0.0.0/8001"), CycleState()
    plugin.pre_filter(other_state, other, [])
    assert plugin.filter(other_state, other, new_node_info(pod)).code is Code.UNSCHEDULABLE


class HostPortInfo:
    """A literal transcription of upstream's ``HostPortInfo`` (ip -> set of (protocol, port))."""

    def __init__(self) -> None:
        self.ports: dict[str, set[tuple[str, int]]] = {}

    @staticmethod
    def _sanitize(ip: str, protocol: str) -> tuple[str, str]:
        return ip or "0.0.0.0", protocol or "TCP"

    def add(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._sanitize(ip, protocol)
        self.ports.setdefault(ip, set()).add((protocol, port))

    def check_conflict(self, ip: str, protocol: str, port: int) -> bool:
        if port <= 0:
            return False
        ip, protocol = self._sanitize(ip, protocol)
        pp = (protocol, port)
        if ip == "0.0.0.0":
            return any(pp in m for m in self.ports.values())
        return any(pp in self.ports.get(key, set()) for key in ("0.0.0.0", ip))


def test_conflict_rule_matches_host_port_info_property() -> None:
    """Seeded random pods and nodes: Filter agrees with the reference ``HostPortInfo``."""
    rng = random.Random(20240417)
    ips = ["", "0.0.0.0", "127.0.0.1", "10.0.0.1"]
    protocols = ["", "TCP", "UDP", "SCTP"]
    plugin = NodePorts()

    def random_ports(n: int) -> list[tuple[str, str, int]]:
        return [(rng.choice(ips), rng.choice(protocols), rng.choice([0, 80, 81, 8080])) for _ in range(n)]

    def pod_of(ports: list[tuple[str, str, int]]) -> PodInfo:
        docs = [
            {"hostPort": p, **({"hostIP": ip} if ip else {}), **({"protocol": pr} if pr else {})} for ip, pr, p in ports
        ]
        doc = {"spec": {"containers": [{"name": "c", "image": "x", "ports": docs}]}}
        return PodInfo(msgspec.convert(doc, objects.Pod))

    for _ in range(500):
        existing = [random_ports(rng.randint(0, 3)) for _ in range(rng.randint(0, 3))]
        reference = HostPortInfo()
        for ports in existing:
            for port in ports:
                reference.add(*port)
        node = new_node_info(*(pod_of(ports) for ports in existing))
        wanted = random_ports(rng.randint(0, 3))
        pod = pod_of(wanted)
        state = CycleState()
        _, pre = plugin.pre_filter(state, pod, [node])
        has_host_ports = any(p > 0 for _, _, p in wanted)
        assert (pre.code is Code.SKIP) == (not has_host_ports)
        if not has_host_ports:
            continue
        expect_fit = not any(reference.check_conflict(*port) for port in wanted)
        got = plugin.filter(state, pod, node)
        assert got.is_success() == expect_fit, (existing, wanted)
        if not expect_fit:
            assert (got.code, got.message) == (Code.UNSCHEDULABLE, ERR_REASON)
        for ip, pr, p in wanted:
            assert check_conflict(node.used_ports, ip, pr, p) == reference.check_conflict(ip, pr, p)


def test_through_framework() -> None:
    busy = NodeInfo(
        "busy",
        msgspec.convert({"metadata": {"name": "busy"}}, objects.Node),
        NodeUsage(pods=(new_pod("busy", "TCP/0.0.0.0/8080"),)),
    )
    free = NodeInfo("free", msgspec.convert({"metadata": {"name": "free"}}, objects.Node))
    plugin = PLUGIN.factory(None, None)  # type: ignore[arg-type]
    fw = framework(filter=[plugin])
    out = run_filter(fw, new_pod("", "TCP/127.0.0.1/8080"), [busy, free])
    assert out.error == ""
    assert [(s.code, s.plugin, s.message) for s in out.statuses] == [
        (Code.UNSCHEDULABLE, "NodePorts", "node(s) didn't have free ports for the requested pod ports"),
        (Code.SUCCESS, "", ""),
    ]
    # a pod without host ports: PreFilter skips, every node passes
    out = run_filter(fw, EMPTY_POD, [busy, free])
    assert all(s.is_success() for s in out.statuses)
    assert PLUGIN.name == "NodePorts" and PLUGIN.needs_cluster and PLUGIN.args is None

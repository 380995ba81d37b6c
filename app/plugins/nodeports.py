"""NodePorts: a pod's host ports must be free on the node.

Ports kube-scheduler v1.36.3's plugin (pkg/scheduler/framework/plugins/nodeports/node_ports.go) and
the conflict rule of ``HostPortInfo.CheckConflict`` (pkg/scheduler/framework/types.go):

- PreFilter: the pod's host ports (``util.GetHostPorts``: the ports with a ``hostPort`` above 0 of
  its sidecars, the init containers with ``restartPolicy: Always``, then of its containers; other
  init containers end before the pod runs), as ``(hostIP, protocol, hostPort)`` with
  ``0.0.0.0`` and ``TCP`` for an unset IP or protocol (:attr:`PodInfo.host_ports`). ``Skip`` when
  the pod asks for none, so Filter is not run for it.
- Filter: ``Unschedulable`` with ``node(s) didn't have free ports for the requested pod ports``
  when one of those ports conflicts with a port a pod on the node uses
  (:attr:`NodeInfo.used_ports`). A wanted ``0.0.0.0`` conflicts with the same protocol and port on
  any IP; a wanted specific IP conflicts with that IP and with ``0.0.0.0``.

Needs cluster state: the pods on the nodes come from the cluster-state cache.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.framework import signers
from app.framework.events import (
    NODE,
    POD,
    QUEUE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    objects_as,
)
from app.framework.events import SKIP as QUEUE_SKIP
from app.framework.handle import Handle
from app.framework.interfaces import SignFragment
from app.framework.registry import PluginEntry
from app.framework.status import SKIP, SUCCESS, Code, Status
from app.framework.types import CycleState, NodeInfo, PodInfo, PreFilterResult

NAME = "NodePorts"
#: upstream's ``preFilterStateKey`` ("PreFilter" + Name)
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
#: upstream's ``ErrReason``, byte for byte
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
#: ``DefaultBindAllHostIP``
DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"

_NO_FREE_PORTS = Status(Code.UNSCHEDULABLE, (ERR_REASON,), reason_code="NodePortsConflict")

HostPort = tuple[str, str, int]


def check_conflict(used: frozenset[HostPort], ip: str, protocol: str, port: int) -> bool:
    """``HostPortInfo.CheckConflict``: whether ``(ip, protocol, port)`` conflicts with ``used``.

    ``used``: ``(hostIP, protocol, hostPort)`` of the ports taken on a node, sanitized (``0.0.0.0``
    and ``TCP`` for unset). A port of 0 or less never conflicts; an empty ``ip``/``protocol`` is
    ``0.0.0.0``/``TCP``. ``0.0.0.0`` conflicts with the protocol and port on every IP; another IP
    with itself and ``0.0.0.0``.
    """
    if port <= 0 or not used:
        return False
    ip = ip or DEFAULT_BIND_ALL_HOST_IP
    protocol = protocol or "TCP"
    if ip == DEFAULT_BIND_ALL_HOST_IP:
        return any(p == port and proto == protocol for _, proto, p in used)
    return (DEFAULT_BIND_ALL_HOST_IP, protocol, port) in used or (ip, protocol, port) in used


def fits_ports(want: Sequence[HostPort], node: NodeInfo) -> bool:
    """``fitsPorts``: whether none of ``want`` conflicts with the node's used ports."""
    used = node.used_ports
    if not used:
        return True
    return not any(check_conflict(used, ip, protocol, port) for ip, protocol, port in want)


def is_schedulable_after_pod_deleted(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """``isSchedulableAfterPodDeleted`` (v1.36.3 node_ports.go): ``Queue`` when the deleted pod
    was on a node (or nominated to one) and held a host port the pod asks for."""
    deleted, _ = objects_as(old, None, PodInfo)
    if deleted is None:
        raise TypeError("no deleted pod")
    if not deleted.node_name and not deleted.nominated_node_name:
        return QUEUE_SKIP
    in_use = frozenset(deleted.host_ports)
    if not in_use:
        return QUEUE_SKIP
    conflicts = any(check_conflict(in_use, ip, protocol, port) for ip, protocol, port in pod.host_ports)
    return QUEUE if conflicts else QUEUE_SKIP


#: v1.36.3 ``EventsToRegister``: the pods' ports are immutable, so only a deletion frees one;
#: Node Add without a hint (preCheck is gone with queueing hints)
_EVENTS = (
    ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), is_schedulable_after_pod_deleted),
    ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
)


class NodePorts:
    """PreFilter + Filter (see the module doc). Takes no args; stateless."""

    name = NAME

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status]:
        """``SignPod`` (node_ports.go, v1.36.3): the host ports."""
        return [(signers.HOST_PORTS, signers.host_ports(pod))], SUCCESS

    def __init__(self, args: None = None, handle: Handle | None = None) -> None:
        pass

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Writes the pod's host ports to the cycle state; ``Skip`` when it has none."""
        ports = pod.host_ports
        if not ports:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, ports)
        return None, SUCCESS

    def _wanted(self, state: CycleState) -> Sequence[HostPort] | None:
        return state.get(PRE_FILTER_STATE_KEY)  # type: ignore[no-any-return]

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``SUCCESS``, or ``Unschedulable`` (:data:`ERR_REASON`) on a port conflict; ``Error``
        when PreFilter did not run (upstream's ``reading "PreFilterNodePorts" from cycleState: not
        found``)."""
        want = self._wanted(state)
        if want is None:
            return _not_found()
        return SUCCESS if fits_ports(want, node) else _NO_FREE_PORTS

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """``EventsToRegister`` (v1.36.3): Pod Delete judged by
        :func:`is_schedulable_after_pod_deleted`, Node Add."""
        return _EVENTS


def _not_found() -> Status:
    return Status.error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')


PLUGIN = PluginEntry(
    name=NAME,
    factory=NodePorts,
    args=None,
    needs_cluster=True,
    summary="filter: kube-scheduler's NodePorts (the pod's host ports must be free on the node) on the cluster state",
)

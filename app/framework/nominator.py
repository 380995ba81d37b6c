"""The pods nominated to nodes, kept in memory: kube-scheduler's ``PodNominator`` (the
``nominator`` of pkg/scheduler/internal/queue/scheduling_queue.go, v1.30).

A preemptor is nominated to the node its victims leave (``status.nominatedNodeName``); until it
is bound there, Filter counts it on that node for every pod of lower or equal priority
(``RunFilterPluginsWithNominatedPods``), so the room is not given away. The nominator records a
nomination the moment the scheduling cycle decides it (``AddNominatedPod`` in
``handleSchedulingFailure``), before the API server shows it, so the next cycle sees it at once;
the scheduling queue keeps it in step with the watched pods (``UpdateNominatedPod`` on an update,
``DeleteNominatedPodIfExists`` when the pod is bound, assumed or deleted).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from enum import Enum
from typing import Self

from app.framework.types import PodInfo


class NominatingMode(Enum):
    """``framework.NominatingMode`` (pkg/scheduler/framework/types.go): how a scheduling failure
    treats the pod's ``status.nominatedNodeName``."""

    #: ``ModeNoop``: leave it as it is
    NOOP = "Noop"
    #: ``ModeOverride``: set it to the result's node (``""`` clears it)
    OVERRIDE = "Override"


class NominatingInfo(str):
    """``framework.NominatingInfo`` of a PostFilter result (``PostFilterResult``,
    pkg/scheduler/framework/types.go): the nominated node name (the string itself, ``""`` for none)
    and its :class:`NominatingMode` (:attr:`mode`). ``NominatingInfo(node)`` is
    ``NewPostFilterResultWithNominatedNode(node)`` (``OVERRIDE``; with ``""`` it clears the pod's
    nomination); :data:`NOMINATING_NOOP` stands for upstream's nil result. A plugin may return a
    plain ``str``, read by :meth:`of`."""

    mode: NominatingMode

    def __new__(cls, node: str = "", mode: NominatingMode = NominatingMode.OVERRIDE) -> Self:
        info = super().__new__(cls, node)
        info.mode = mode
        return info

    @classmethod
    def of(cls, value: str | None) -> NominatingInfo:
        """``value`` as a result: itself when it is one, else ``OVERRIDE`` when it names a node
        and ``NOOP`` (nil) when it is ``""`` or ``None``."""
        if isinstance(value, NominatingInfo):
            return value
        return cls(value or "", NominatingMode.OVERRIDE if value else NominatingMode.NOOP)

    def clears(self) -> bool:
        """Whether it clears the pod's nomination (``ModeOverride`` with ``""``)."""
        return self.mode is NominatingMode.OVERRIDE and not self

    def __repr__(self) -> str:
        return f"NominatingInfo({str(self)!r}, {self.mode.name})"


#: upstream's nil ``NominatingInfo`` (``ModeNoop``): the nomination stays as the pod says
NOMINATING_NOOP = NominatingInfo("", NominatingMode.NOOP)
#: ``clearNominatedNode`` (pkg/scheduler/schedule_one.go), also
#: ``NewPostFilterResultWithNominatedNode("")``: ``ModeOverride`` with no node
CLEAR_NOMINATED_NODE = NominatingInfo("", NominatingMode.OVERRIDE)

#: ``lookup(uid)``: the pod as the watch shows it now, ``None`` when it is gone (the nominator's
#: ``podLister``)
PodLookup = Callable[[str], "PodInfo | None"]


class PodNominator:
    """kube-scheduler's ``nominator``: node name -> the pods nominated to it, in the order they
    were nominated, and pod UID -> its node. Thread-safe (the scheduler's queue writes it on the
    event loop; large scheduling cycles read it in the verb worker thread).

    ``lookup``: the watched pod by UID (``podLister``); a pod it does not know, or knows bound to
    a node, is not nominated (``None``: no check, as upstream without a lister)."""

    def __init__(self, lookup: PodLookup | None = None) -> None:
        self._lookup = lookup
        self._lock = threading.Lock()
        #: node name -> the pods nominated to it (``nominatedPods``)
        self._pods: dict[str, list[PodInfo]] = {}
        #: pod UID -> its node (``nominatedPodToNode``)
        self._node_of: dict[str, str] = {}

    def add_nominated_pod(self, pod: PodInfo, nominating: NominatingInfo | None = None) -> None:
        """``AddNominatedPod``: record ``pod`` on the node ``nominating`` names (``OVERRIDE``;
        ``""`` drops it), or, for ``None``/``NOOP``, on its ``status.nominatedNodeName`` (none: it
        is dropped). Any previous nomination of the pod is replaced."""
        with self._lock:
            self._add(pod, nominating)

    def delete_nominated_pod_if_exists(self, pod: PodInfo) -> None:
        """``DeleteNominatedPodIfExists``: forget ``pod``'s nomination (it was bound, assumed or
        deleted)."""
        with self._lock:
            self._delete(pod.uid)

    def update_nominated_pod(self, old: PodInfo, new: PodInfo) -> None:
        """``UpdateNominatedPod``: ``new`` replaces ``old``. When neither carries a
        ``status.nominatedNodeName`` but the nominator holds one for the pod (decided by a
        scheduling cycle, not shown by the API server yet), it is kept."""
        with self._lock:
            nominating: NominatingInfo | None = None
            if not old.nominated_node_name and not new.nominated_node_name:
                node = self._node_of.get(old.uid)
                if node is not None:
                    nominating = NominatingInfo(node)
            self._delete(old.uid)
            self._add(new, nominating)

    def nominated_pods_for_node(self, node: str) -> list[PodInfo]:
        """``NominatedPodsForNode``: the pods nominated to ``node``, in nomination order (a copy)."""
        with self._lock:
            return list(self._pods.get(node, ()))

    def nominated_nodes(self) -> frozenset[str]:
        """The nodes some pod is nominated to now (a copy)."""
        with self._lock:
            return frozenset(self._pods)

    def nominated_node(self, uid: str) -> str | None:
        """The node pod ``uid`` is nominated to, or ``None``."""
        with self._lock:
            return self._node_of.get(uid)

    def __len__(self) -> int:
        with self._lock:
            return len(self._node_of)

    def _add(self, pod: PodInfo, nominating: NominatingInfo | None) -> None:
        self._delete(pod.uid)
        if nominating is not None and nominating.mode is NominatingMode.OVERRIDE:
            node = str(nominating)
        else:
            node = pod.nominated_node_name
        if not node:
            return
        if self._lookup is not None:
            current = self._lookup(pod.uid)
            if current is None or current.node_name:
                return  # deleted, or scheduled already: not nominated
        self._node_of[pod.uid] = node
        self._pods.setdefault(node, []).append(pod)

    def _delete(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is None:
            return
        pods = self._pods.get(node)
        if pods is None:
            return
        pods[:] = [p for p in pods if p.uid != uid]
        if not pods:
            del self._pods[node]


__all__ = [
    "CLEAR_NOMINATED_NODE",
    "NOMINATING_NOOP",
    "NominatingInfo",
    "NominatingMode",
    "PodLookup",
    "PodNominator",
]

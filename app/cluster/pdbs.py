"""PodDisruptionBudgets (``policy/v1``), watched like nodes and pods, for preemption.

Only what kube-scheduler's preemption reads is kept (``filterPodsWithPDBViolation`` in
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go): each budget's namespace,
``spec.selector``, ``status.disruptionsAllowed`` and the names in ``status.disruptedPods``, as
:class:`~app.framework.handle.PodDisruptionBudget` records. The store is the reflector's
:class:`~app.cluster.reflector.Store`; until its first list (or when the list fails) it holds no
budget, so every victim counts as violating none, as kube-scheduler's lister answers before its
informer synced.
"""

from __future__ import annotations

import threading
from typing import Any

import msgspec

from app.cluster.reflector import StoreHealth
from app.framework import objects
from app.framework.handle import PodDisruptionBudget

KIND = "poddisruptionbudgets"


class _Spec(msgspec.Struct, rename="camel"):
    selector: objects.LabelSelector | None = None


class _Status(msgspec.Struct, rename="camel"):
    disruptions_allowed: int = 0
    disrupted_pods: dict[str, Any] | None = None


class _PDB(msgspec.Struct):
    """A PodDisruptionBudget, cut to what preemption reads."""

    metadata: objects.ObjectMeta | None = None
    spec: _Spec | None = None
    status: _Status | None = None


def _record(item: _PDB) -> PodDisruptionBudget:
    meta = item.metadata or objects.EMPTY_META
    status = item.status or _Status()
    return PodDisruptionBudget(
        namespace=meta.namespace or "",
        name=meta.name or "",
        selector=item.spec.selector if item.spec else None,
        disruptions_allowed=status.disruptions_allowed,
        disrupted_pods=frozenset(status.disrupted_pods or ()),
    )


class PDBStore(StoreHealth):
    """``namespace/name`` -> :class:`PodDisruptionBudget` of the watched budgets; thread-safe."""

    object_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(_PDB)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._budgets: dict[str, PodDisruptionBudget] = {}
        self._list: tuple[PodDisruptionBudget, ...] = ()
        self.synced = False
        self.last_error = ""

    def budgets(self) -> tuple[PodDisruptionBudget, ...]:
        """Every budget (a snapshot: later changes do not show in it)."""
        return self._list

    # -- the reflector's store ------------------------------------------------------------------------

    def _publish(self) -> None:
        self._list = tuple(self._budgets.values())

    def prepare(self, obj: Any) -> Any:
        return obj

    def replace(self, items: list[Any]) -> None:
        with self._lock:
            records = [_record(i) for i in items]
            self._budgets = {f"{r.namespace}/{r.name}": r for r in records}
            self._publish()

    def apply(self, event: str, item: Any) -> None:
        with self._lock:
            record = _record(item)
            key = f"{record.namespace}/{record.name}"
            if event == "DELETED":
                self._budgets.pop(key, None)
            else:
                self._budgets[key] = record
            self._publish()

    def missing(self, error: str) -> None:
        with self._lock:
            self.synced, self.last_error = False, error
            self._budgets = {}
            self._publish()


__all__ = ["KIND", "PDBStore"]

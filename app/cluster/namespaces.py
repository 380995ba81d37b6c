"""Namespaces (``v1``), watched like nodes and pods, for InterPodAffinity's ``namespaceSelector``.

Only each namespace's labels are kept: what kube-scheduler's InterPodAffinity reads of them
(``GetNamespaceLabelsSnapshot`` in
pkg/scheduler/framework/plugins/interpodaffinity/plugin.go, through the namespace lister). The
store is the reflector's :class:`~app.cluster.reflector.Store`; its health is the cluster state's
(a third kind next to nodes and pods: :meth:`~app.cluster.health.SyncHealth.track_kind`), so the
cluster state is not synced, nor ready, nor does a scheduler start, before the namespaces were
listed, as kube-scheduler waits for every informer (``WaitForCacheSync``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import msgspec

from app.cluster.health import SyncHealth
from app.framework import objects

KIND = "namespaces"


class _Namespace(msgspec.Struct):
    """A Namespace, cut to its name and labels."""

    metadata: objects.ObjectMeta | None = None


class NamespaceStore:
    """Namespace name -> its labels; thread-safe (the reflector writes, requests read). Its
    health goes to ``health`` (kind :data:`KIND`)."""

    object_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(_Namespace)

    def __init__(self, health: SyncHealth) -> None:
        self._lock = threading.Lock()
        self._labels: dict[str, Mapping[str, str]] = {}
        health.track_kind(KIND)
        self.mark_synced = health.mark_synced
        self.mark_ok = health.mark_ok
        self.mark_failing = health.mark_failing
        self.count = health.count

    def labels(self, namespace: str) -> Mapping[str, str] | None:
        """The labels of ``namespace``; ``None`` when it is not known."""
        return self._labels.get(namespace)

    # -- the reflector's store ------------------------------------------------------------------------

    def prepare(self, obj: Any) -> Any:
        return obj

    def replace(self, items: list[Any]) -> None:
        records = dict(_record(i) for i in items)
        with self._lock:
            self._labels = records

    def apply(self, event: str, item: Any) -> None:
        name, labels = _record(item)
        with self._lock:
            if event == "DELETED":
                self._labels.pop(name, None)
            else:
                self._labels[name] = labels

    def missing(self, error: str) -> None:
        self.mark_failing(KIND, error)


def _record(item: _Namespace) -> tuple[str, Mapping[str, str]]:
    meta = item.metadata or objects.EMPTY_META
    return meta.name or "", dict(meta.labels or {})


__all__ = ["KIND", "NamespaceStore"]

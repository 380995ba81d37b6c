"""PodGroups (``scheduling.x-k8s.io/v1alpha1``, the CRD of kubernetes-sigs/scheduler-plugins'
Coscheduling), watched like nodes and pods.

Only what gang scheduling reads is kept: each group's ``spec.minMember`` by ``namespace/name``.
The store is the reflector's :class:`~app.cluster.reflector.Store`. When the CRD is not installed
(the list answers 404) the store says so (:attr:`PodGroupStore.absent`), and plugins fall back to
their annotation; the reflector keeps checking, so installing the CRD later is picked up.
"""

from __future__ import annotations

import threading
from typing import Any

import msgspec

from app.cluster.reflector import StoreHealth
from app.framework import objects

GROUP = "scheduling.x-k8s.io"
VERSION = "v1alpha1"
PLURAL = "podgroups"
KIND = "podgroups"


class PodGroupSpec(msgspec.Struct, rename="camel"):
    """``PodGroupSpec``: ``minMember`` (pods that must be scheduled together) and
    ``scheduleTimeoutSeconds`` (how long the group may take to gather)."""

    min_member: int | None = None
    schedule_timeout_seconds: int | None = None


class PodGroup(msgspec.Struct):
    """A PodGroup, cut to metadata and ``spec.minMember``."""

    metadata: objects.ObjectMeta | None = None
    spec: PodGroupSpec | None = None


def _key(group: PodGroup) -> str:
    meta = group.metadata or objects.EMPTY_META
    return f"{meta.namespace or ''}/{meta.name or ''}"


class PodGroupStore(StoreHealth):
    """``namespace/name`` -> ``minMember`` of the watched PodGroups; thread-safe.

    States: *pending* (before the first list), *synced*, or *absent* (the CRD is not installed).
    """

    object_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(PodGroup)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._min_member: dict[str, int] = {}
        self._timeout: dict[str, int] = {}
        self.synced = False
        self.absent = False
        self.last_error = ""

    def min_member(self, namespace: str, name: str) -> int | None:
        """The group's ``minMember`` (0 when the PodGroup sets none), or ``None`` when there is no
        such PodGroup."""
        with self._lock:
            return self._min_member.get(f"{namespace}/{name}")

    def schedule_timeout(self, namespace: str, name: str) -> int | None:
        """The group's ``scheduleTimeoutSeconds``, or ``None`` when it sets none (or does not exist)."""
        with self._lock:
            return self._timeout.get(f"{namespace}/{name}")

    # -- the reflector's store ------------------------------------------------------------------------

    def prepare(self, obj: Any) -> Any:
        return obj

    def replace(self, items: list[Any]) -> None:
        with self._lock:
            self._min_member = {_key(g): (g.spec.min_member or 0) if g.spec else 0 for g in items}
            self._timeout = {
                _key(g): g.spec.schedule_timeout_seconds for g in items if g.spec and g.spec.schedule_timeout_seconds
            }

    def apply(self, event: str, item: Any) -> None:
        with self._lock:
            key = _key(item)
            self._timeout.pop(key, None)
            if event == "DELETED":
                self._min_member.pop(key, None)
            else:
                self._min_member[key] = (item.spec.min_member or 0) if item.spec else 0
                if item.spec and item.spec.schedule_timeout_seconds:
                    self._timeout[key] = item.spec.schedule_timeout_seconds

    def missing(self, error: str) -> None:
        with self._lock:
            self.absent, self.synced, self.last_error = True, False, error
            self._min_member, self._timeout = {}, {}

    def mark_synced(self, kind: str) -> None:
        with self._lock:
            self.synced, self.absent = True, False


__all__ = ["GROUP", "KIND", "PLURAL", "VERSION", "PodGroup", "PodGroupStore"]

"""The reflector's :class:`~app.cluster.reflector.Store` of one kind among several that one owner
keeps (the storage kinds of :class:`~app.cluster.volumes.VolumeStores`, the DRA kinds of
:class:`~app.cluster.dra.DRAStores`): objects decoded by the kind's decoder, slimmed by the
owner's ``prepare``, handed to the owner by kind; the health goes to the owner's
:class:`~app.cluster.health.SyncHealth`. A kind the API server does not serve (404) is an empty,
synced collection."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from app.cluster.health import SyncHealth

log = logging.getLogger(__name__)


class KindOwner(Protocol):
    """What :class:`KindStore` hands its kind's objects to."""

    health: SyncHealth

    def replace(self, kind: str, items: list[Any]) -> None: ...

    def apply(self, kind: str, event: str, item: Any) -> None: ...


class KindStore:
    """The store of ``kind`` for ``owner``: ``decoder`` decodes one object (``.decode(bytes)``),
    ``prepare(kind, obj)`` turns a decoded object into what the owner keeps."""

    def __init__(self, kind: str, owner: KindOwner, decoder: Any, prepare: Callable[[str, Any], Any]) -> None:
        self.kind = kind
        self.owner = owner
        self.object_decoder = decoder
        self._prepare = prepare
        health = owner.health
        self.mark_synced = health.mark_synced
        self.mark_ok = health.mark_ok
        self.mark_failing = health.mark_failing
        self.count = health.count

    def prepare(self, obj: Any) -> Any:
        return self._prepare(self.kind, obj)

    def replace(self, items: list[Any]) -> None:
        self.owner.replace(self.kind, items)

    def apply(self, event: str, item: Any) -> None:
        self.owner.apply(self.kind, event, self._prepare(self.kind, item))

    def missing(self, error: str) -> None:
        """The API server does not serve the kind (404): an empty, synced collection."""
        log.warning("%s: the API server does not serve them (%s): treated as none", self.kind, error)
        self.owner.replace(self.kind, [])
        self.owner.health.mark_synced(self.kind)


__all__ = ["KindOwner", "KindStore"]

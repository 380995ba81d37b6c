"""List+watch reflectors for nodes and pods, each in its own thread.

The loop follows client-go's ``Reflector.ListAndWatch`` (k8s.io/client-go/tools/cache/reflector.go):

- **list** in pages of ``page_size`` (``limit``/``continue``), then replace the cache's contents;
  an expired continue token (``410``) restarts the list;
- **watch** from the list's resourceVersion with ``allowWatchBookmarks``; each event, bookmarks
  included, moves the last seen resourceVersion on. The API server ends a watch after
  ``timeoutSeconds`` (randomised between ``watch_timeout`` and twice that, as client-go's
  ``minWatchTimeout``), and the reflector resumes from the last resourceVersion without listing;
- a ``410 Gone`` (an HTTP 410 or an ``ERROR`` event carrying a 410 ``Status``: the history was
  compacted) forces a **relist**;
- any other failure (API server unreachable, 5xx, a broken stream) waits with **exponential
  backoff and jitter** (``backoff_initial`` doubling to ``backoff_max`` seconds, +0..100 %
  jitter, as client-go's ``wait.NewExponentialBackoffManager(800ms, 30s, ..., 2.0, 1.0)``), then
  resumes the watch, or relists when there is no resourceVersion yet.

Objects are decoded with msgspec straight into the slim views of :mod:`app.framework.objects`;
pods then become slim :class:`~app.framework.types.PodInfo` records.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import random
import threading
import time
from collections.abc import Iterator
from typing import Any, Protocol

import msgspec

from app.cluster.cache import Cache
from app.framework import objects
from app.kube.client import interrupt
from app.kube.errors import APIError
from app.lifecycle import ThreadWorker

log = logging.getLogger(__name__)


class ListerWatcher(Protocol):
    """What a reflector needs from the API (implemented by :class:`app.kube.client.KubeClient`)."""

    def list(
        self, kind: str, limit: int, continue_token: str | None, timeout: float, resource_version: str = ""
    ) -> bytes: ...

    def watch(self, kind: str, resource_version: str, timeout_seconds: int) -> Any: ...


class ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str | None = None
    # "continue" is a Python keyword: map it explicitly
    continue_: str | None = msgspec.field(default=None, name="continue")


class _List(msgspec.Struct):
    """A list page: its metadata and its items, undecoded (views into the page's bytes)."""

    metadata: ListMeta | None = None
    items: list[msgspec.Raw] | None = None


class _Event(msgspec.Struct):
    type: str
    object: msgspec.Raw


class _Status(msgspec.Struct):
    code: int | None = None
    reason: str | None = None
    message: str | None = None


class _MetaOnly(msgspec.Struct):
    metadata: objects.ObjectMeta | None = None


_EVENT = msgspec.json.Decoder(_Event)
_STATUS = msgspec.json.Decoder(_Status)
_META_ONLY = msgspec.json.Decoder(_MetaOnly)
_LIST = msgspec.json.Decoder(_List)
_OBJECTS: dict[str, msgspec.json.Decoder[Any]] = {
    "nodes": msgspec.json.Decoder(objects.Node),
    "pods": msgspec.json.Decoder(objects.Pod),
}
#: nodes without ``status.images`` when no plugin reads them (``ClusterNeeds.images``)
_NODES_WITHOUT_IMAGES: msgspec.json.Decoder[Any] = msgspec.json.Decoder(objects.RequestNode)


class Store(Protocol):
    """Where a reflector's objects go (client-go's ``cache.Store`` as the ``Reflector`` writes to it:
    ``Replace`` after a list, ``Add``/``Update``/``Delete`` per event), and where it reports its health.

    :class:`~app.cluster.cache.Cache` is the store of nodes and pods (through :func:`cache_store`,
    its health the cache's :class:`~app.cluster.health.SyncHealth`); other kinds (PodGroups) bring
    their own. ``object_decoder`` decodes one object (a list item or a watched
    object). ``prepare`` turns a decoded item into what ``replace``/``apply`` take. ``missing`` is
    called when the collection does not exist (HTTP 404: a CRD that is not installed); the
    reflector then retries at its longest backoff.
    """

    object_decoder: msgspec.json.Decoder[Any]

    def prepare(self, obj: Any) -> Any: ...

    def replace(self, items: list[Any]) -> None: ...

    def apply(self, event: str, item: Any) -> None: ...

    def missing(self, error: str) -> None: ...

    def mark_synced(self, kind: str) -> None: ...

    def mark_ok(self, kind: str) -> None: ...

    def mark_failing(self, kind: str, error: str) -> None: ...

    def count(self, kind: str, what: str) -> None: ...


class StoreHealth:
    """The health half of :class:`Store` for a store of its own (PodGroups, PodDisruptionBudgets,
    the spread selectors' kinds): ``synced`` once a list completed, ``last_error`` the latest
    failure; ``mark_ok`` and ``count`` do nothing (the reflector's own metrics count). A store
    sets both attributes in its ``__init__`` and clears ``synced`` in ``missing``."""

    synced: bool
    last_error: str

    def mark_synced(self, kind: str) -> None:
        self.synced = True

    def mark_ok(self, kind: str) -> None:
        pass

    def mark_failing(self, kind: str, error: str) -> None:
        self.last_error = error

    def count(self, kind: str, what: str) -> None:
        pass


class _CacheStore:
    """Nodes or pods into a :class:`~app.cluster.cache.Cache` (pods as slim records); the health
    goes to the cache's :attr:`~app.cluster.cache.Cache.health`."""

    def __init__(self, kind: str, cache: Cache) -> None:
        self.kind = kind
        self.cache = cache
        without_images = kind == "nodes" and not cache.keep_images
        self.object_decoder = _NODES_WITHOUT_IMAGES if without_images else _OBJECTS[kind]
        health = cache.health
        self.mark_synced = health.mark_synced
        self.mark_ok = health.mark_ok
        self.mark_failing = health.mark_failing
        self.count = health.count

    def prepare(self, obj: Any) -> Any:
        return self.cache.record(obj) if self.kind == "pods" else obj

    def replace(self, items: list[Any]) -> None:
        if self.kind == "nodes":
            self.cache.replace_nodes(items)
        else:
            self.cache.replace_pods(items)

    def apply(self, event: str, obj: Any) -> None:
        if self.kind == "nodes":
            if event == "DELETED":
                self.cache.delete_node(obj)
            else:
                self.cache.upsert_node(obj)
            return
        record = self.cache.record(obj)
        if event == "DELETED":
            self.cache.delete_pod(record)
        else:
            self.cache.upsert_pod(record)

    def missing(self, error: str) -> None:
        self.mark_failing(self.kind, error)


def cache_store(kind: str, cache: Cache) -> Store:
    """The store of ``kind`` (``nodes`` or ``pods``) into ``cache``. Raises ``ValueError`` for
    another kind."""
    if kind not in _OBJECTS:
        raise ValueError(f"unknown kind {kind!r}")
    return _CacheStore(kind, cache)


class _GcPause:
    """The collector's state shared by concurrent lists (see :func:`gc_paused`)."""

    lock = threading.Lock()
    lists = 0
    was_enabled = True


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a list builds its records, then freeze what
    survived (``gc.freeze``: moved out of the generations the collector scans).

    Listing 150,000 pods allocates millions of long-lived, acyclic objects; each collection the
    allocations trigger would scan all of them again (several times the cost of decoding them),
    and a full collection later would pause a request for tens of milliseconds. One collection
    runs before the freeze, so no garbage is frozen; records are still freed by reference
    counting when replaced, frozen or not. Concurrent lists (several
    reflectors at once) re-enable the collector when the last one ends.
    """
    with _GcPause.lock:
        _GcPause.lists += 1
        if _GcPause.lists == 1:
            _GcPause.was_enabled = gc.isenabled()
            gc.disable()
    try:
        yield
    finally:
        with _GcPause.lock:
            _GcPause.lists -= 1
            if _GcPause.lists == 0 and _GcPause.was_enabled:
                gc.collect()  # no garbage cycle made meanwhile (by any thread) is frozen for ever
                gc.freeze()
                gc.enable()


class _RelistError(Exception):
    """The resourceVersion is gone (410): list again."""


def iter_lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Split a watch body (chunks as they arrive) into its newline-delimited JSON events."""
    buffer = b""
    for chunk in chunks:
        *lines, buffer = (buffer + chunk).split(b"\n")
        for line in lines:
            if line.strip():
                yield line
    if buffer.strip():
        yield buffer


class Reflector(ThreadWorker):
    """Keeps ``store`` in step with the ``kind`` collection the lister serves (nodes and pods into
    the cache through :func:`cache_store`, PodGroups into their store).

    ``watch_timeout`` and the backoff bounds are in seconds; ``request_timeout`` bounds each list
    page. A :class:`~app.lifecycle.ThreadWorker` named ``reflector-<kind>``: ``start()`` runs the
    loop in a daemon thread; ``stop()`` asks it to end and closes an open watch, without waiting
    (``await join(timeout)`` waits). A failed list or watch is the worker's ``error`` (the loop
    backs off and retries) until a list or watch succeeds; a collection that does not exist (404)
    is reported to the store, not as an error.
    """

    def __init__(
        self,
        kind: str,
        lister: ListerWatcher,
        store: Store,
        page_size: int = 500,
        watch_timeout: int = 300,
        backoff_initial: float = 0.8,
        backoff_max: float = 30.0,
        request_timeout: float = 60.0,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(f"reflector-{kind}")
        self.kind = kind
        self.lister = lister
        self.store = store
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.request_timeout = request_timeout
        self._rng = rng or random.Random()
        self._stream: Any = None
        self._lock = threading.Lock()
        #: the resourceVersion to watch from; ``None``: list first
        self.resource_version: str | None = None
        #: the resourceVersion the next list asks for (client-go's ``relistResourceVersion``)
        self._relist_version = "0"

    # -- lifecycle ---------------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask the loop to end and interrupt the open watch: its socket is shut down
        (:func:`~app.kube.client.interrupt`), so a read blocked on an idle stream returns at once
        and the loop's thread closes the stream itself. Does not wait (see :meth:`join`)."""
        super().stop()
        with self._lock:
            stream = self._stream
        if stream is not None and not interrupt(stream):
            with contextlib.suppress(Exception):  # no socket to shut down (a test double): close it
                stream.close()

    def run(self) -> None:
        """The loop of the module doc; returns when stopped."""
        delay = self.backoff_initial
        while not self.stopping.is_set():
            try:
                if self.resource_version is None:
                    self._list()
                    delay = self.backoff_initial
                    self.recovered()
                if self.stopping.is_set():
                    return
                if self._watch():
                    delay = self.backoff_initial
                    self.store.count(self.kind, "watch_restart")
                    continue
                raise APIError(0, "WatchClosed", "the watch ended at once without an event")
            except _RelistError:
                log.info("%s: resourceVersion %s is gone (410): relisting", self.kind, self.resource_version)
                # relist from the last version seen, as client-go after an expired watch
                self._relist_version = self.resource_version or ""
                self.resource_version = None
                self.store.count(self.kind, "relist")
            except Exception as exc:  # any failure: back off, then resume (never kill the thread)
                if self.stopping.is_set():
                    return  # stop() closed the stream under our feet
                message = str(exc) if isinstance(exc, APIError) else f"{type(exc).__name__}: {exc}"
                if isinstance(exc, APIError) and exc.status == 404 and self.resource_version is None:
                    self.store.missing(message)
                    log.info(
                        "%s: the collection does not exist (%s); checking again in %.0fs",
                        self.kind,
                        message,
                        self.backoff_max,
                    )
                    if self.wait(self.backoff_max):
                        return
                    continue
                self.store.mark_failing(self.kind, message)
                self.failed(f"{self.kind} list/watch: {message}")
                wait = delay * (1 + self._rng.random())
                log.warning("%s list/watch failed (%s); retrying in %.1fs", self.kind, message, wait)
                if self.wait(wait):
                    return
                delay = min(delay * 2, self.backoff_max)

    # -- list --------------------------------------------------------------------------------------

    def _list(self) -> None:
        decode = self.store.object_decoder.decode
        prepare = self.store.prepare
        items: list[Any] = []
        token: str | None = None
        # client-go's relistResourceVersion: the first list asks for resourceVersion "0", which
        # kube-apiserver serves from its watch cache (in one response: the limit is ignored) instead
        # of paging through etcd; a relist asks for the last version seen; after a 410 on a list,
        # "" (a consistent read)
        list_version = self._relist_version
        resource_version = ""
        with gc_paused():
            while True:
                try:
                    body = self.lister.list(self.kind, self.page_size, token, self.request_timeout, list_version)
                except APIError as exc:
                    if exc.gone:
                        log.info("%s: list at resourceVersion %r is gone (410): listing again", self.kind, list_version)
                        items, token, list_version = [], None, ""
                        continue
                    raise
                page = _LIST.decode(body)
                meta = page.metadata or ListMeta()
                # items are decoded and made slim records one at a time, so the decoded views of
                # 150,000 pods (several times larger than the records) never exist at once, even
                # when the whole list comes in one response
                for raw in page.items or ():
                    items.append(prepare(decode(raw)))
                del page
                resource_version = meta.resource_version or resource_version
                token = meta.continue_
                if not token or self.stopping.is_set():
                    break
            self.store.replace(items)
        self.resource_version = resource_version
        self._relist_version = resource_version
        self.store.mark_synced(self.kind)
        log.info("%s: listed %d at resourceVersion %s", self.kind, len(items), resource_version)

    # -- watch -------------------------------------------------------------------------------------

    def _watch(self) -> bool:
        """Watch until the server ends the stream; returns whether any event arrived or the watch
        lasted at least a second (a watch that ends at once is treated as a failure)."""
        assert self.resource_version is not None
        timeout = int(self.watch_timeout * (1 + self._rng.random()))
        started = time.monotonic()
        try:
            stream = self.lister.watch(self.kind, self.resource_version, timeout)
        except APIError as exc:
            if exc.gone:
                raise _RelistError from exc
            raise
        with self._lock:
            if self.stopping.is_set():  # stop() ran while the watch was being opened
                stream.close()
                return True
            self._stream = stream
        self.store.mark_ok(self.kind)
        self.recovered()
        events = 0
        apply = self.store.apply
        decode = self.store.object_decoder.decode
        try:
            for line in iter_lines(stream.stream(amt=None, decode_content=False)):
                if self.stopping.is_set():
                    return True
                event = _EVENT.decode(line)
                if event.type == "ERROR":
                    status = _STATUS.decode(event.object)
                    if status.code == 410:
                        raise _RelistError
                    raise APIError(status.code or 0, status.reason or "Error", status.message or "watch error")
                if event.type == "BOOKMARK":
                    meta = _META_ONLY.decode(event.object).metadata
                    if meta is not None and meta.resource_version:
                        self.resource_version = meta.resource_version
                    events += 1
                    continue
                obj = decode(event.object)
                apply(event.type, obj)
                meta = obj.metadata
                if meta is not None and meta.resource_version:
                    self.resource_version = meta.resource_version
                events += 1
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise APIError(0, "BadEvent", f"undecodable watch event: {exc}") from exc
        finally:
            with self._lock:
                self._stream = None
            with contextlib.suppress(Exception):  # the stream may already be broken
                stream.close()
        return events > 0 or time.monotonic() - started >= 1.0


__all__ = [
    "ListMeta",
    "ListerWatcher",
    "Reflector",
    "Store",
    "StoreHealth",
    "cache_store",
    "iter_lines",
]

"""A small Kubernetes API server for tests: the HTTP contract of nodes, pods and pods/binding.

Not a mock of our code: the official ``kubernetes`` client (and through it our reflectors and
binder) talks to it over loopback HTTP exactly as to a real API server. Each behaviour follows
the API conventions (https://kubernetes.io/docs/reference/using-api/api-concepts/):

- **list** returns ``metadata.resourceVersion`` (the collection's version) and supports
  ``limit``/``continue`` chunking, each chunk from the same snapshot; a continue token older than
  the compacted history is ``410 Gone`` with reason ``Expired`` ("Retrieving large results sets
  in chunks"). ``resourceVersion=0`` is answered whole, as the watch cache does ("Resource
  versions": semantics for list).
- **watch** (``watch=true``) streams newline-delimited ``{"type","object"}`` events with HTTP
  chunked transfer encoding: ``ADDED``/``MODIFIED``/``DELETED``, and ``BOOKMARK`` events carrying
  only ``metadata.resourceVersion`` when ``allowWatchBookmarks=true`` ("Watch bookmarks").
  Events after the requested ``resourceVersion`` are replayed from history; a version older than
  the compacted history gets an ``ERROR`` event with a ``410`` ``Status`` (reason ``Expired``,
  "too old resource version"), as the watch cache answers ("Efficient detection of changes",
  "410 Gone responses"). ``timeoutSeconds`` ends the stream normally.
- **field selectors** on pods (``status.phase!=Succeeded,status.phase!=Failed``): an object that
  stops matching is sent to that watcher as ``DELETED``, one that starts matching as ``ADDED``
  (the apiserver's ``filterWithAttrsFunction`` in staging/src/k8s.io/apiserver/pkg/storage/cacher).
- **pods/binding** (pkg/registry/core/pod/storage/storage.go ``BindingREST.Create``/``assignPod``):
  ``201`` with a ``Success`` ``Status`` body; ``404 NotFound`` for a missing pod; ``409 Conflict``
  when the pod is already assigned ("pod X is already assigned to node Y") or when
  ``metadata.uid`` differs from the pod's (the UID precondition: the storage layer's
  ``Precondition failed: UID in precondition`` is an invalid-object error, which
  ``InterpretUpdateError`` turns into a Conflict).
- **events.k8s.io/v1 Events**: create (201; 409 for a taken name; 422 without the required
  fields) and PATCH (the patch's fields merged: an event series' update), recorded in
  ``event_writes``.
- **TokenReview** (``authentication.k8s.io/v1``, ``POST .../tokenreviews``): ``201`` with the
  review; ``status.authenticated`` and ``status.user`` for a token registered in :attr:`tokens`
  (the user's groups gain ``system:authenticated``, as kube-apiserver's authenticators add it),
  ``authenticated: false`` otherwise; recorded in ``token_reviews``.
- **SubjectAccessReview** (``authorization.k8s.io/v1``, ``POST .../subjectaccessreviews``):
  ``201`` with ``status.allowed`` when ``(user or one of its groups, path)`` is in :attr:`allowed`
  (an RBAC ``nonResourceURLs`` grant of ``get``), with an RBAC-style ``reason``; ``allowed: false``
  and no reason otherwise (RBAC has no opinion); recorded in ``access_reviews``.
  ``token_review_failure``/``access_review_failure``: answer those reviews with that HTTP status
  (an API server in trouble).
- **storage kinds** (PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes,
  CSIDrivers, CSIStorageCapacities): list and watch as the other kinds; ``PATCH`` of a claim or
  a volume (a JSON merge patch, what VolumeBinding's PreBind sends) with
  ``metadata.resourceVersion`` as precondition (``409 Conflict`` "the object has been modified"
  when it is not the stored one), recorded in :attr:`FakeAPIServer.volume_patches`.
- **DRA kinds** (``resource.k8s.io/v1``: ResourceClaims, namespaced; ResourceSlices and
  DeviceClasses, cluster-scoped): list and watch as the other kinds. A claim is read (``GET``),
  replaced (``PUT``: metadata and spec, its status kept) and its ``/status`` replaced (``PUT``:
  the status only) with ``metadata.resourceVersion`` as precondition (``409 Conflict``
  "the object has been modified"), or patched (strategic merge ``PATCH`` of ``/status``:
  ``reservedFor`` entries removed by ``{"$patch": "delete", "uid": ...}``, as the registry merges
  by the list's key). As the registry's status strategy validates: ``reservedFor`` needs an
  allocation (``422 Invalid``), and an allocation once set cannot be replaced by another (only
  removed; kube-apiserver v1.36.3 refuses even an ``allocationTimestamp`` added to it, "may not
  be specified when `allocated` is not set", "field is immutable"). Every write is recorded in
  :attr:`FakeAPIServer.claim_writes`.
- Errors are ``Status`` objects (``kind: Status``, ``status: Failure``, ``reason``, ``code``).

Controls for tests: add/modify/delete objects, :meth:`compact` the history, :meth:`end_watches`,
and :meth:`stop`/:meth:`start` the listener on the same port (API server down and back).
"""

from __future__ import annotations

import base64
import copy
import datetime
import json
import queue
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson

Obj = dict[str, Any]


def status_body(code: int, reason: str, message: str, **details: Any) -> Obj:
    """A ``metav1.Status`` failure object."""
    out: Obj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        out["details"] = details
    return out


#: the cluster-scoped kinds (keyed by name; the others by namespace/name)
CLUSTER_SCOPED = frozenset(
    {
        "nodes",
        "namespaces",
        "persistentvolumes",
        "storageclasses",
        "csinodes",
        "csidrivers",
        "volumeattachments",
        "resourceslices",
        "deviceclasses",
    }
)
#: the storage kinds: collection path and kind
STORAGE_KINDS = {
    "persistentvolumeclaims": ("/api/v1/persistentvolumeclaims", "PersistentVolumeClaim"),
    "persistentvolumes": ("/api/v1/persistentvolumes", "PersistentVolume"),
    "storageclasses": ("/apis/storage.k8s.io/v1/storageclasses", "StorageClass"),
    "csinodes": ("/apis/storage.k8s.io/v1/csinodes", "CSINode"),
    "csidrivers": ("/apis/storage.k8s.io/v1/csidrivers", "CSIDriver"),
    "csistoragecapacities": ("/apis/storage.k8s.io/v1/csistoragecapacities", "CSIStorageCapacity"),
    "volumeattachments": ("/apis/storage.k8s.io/v1/volumeattachments", "VolumeAttachment"),
}
#: the DRA kinds (``resource.k8s.io/v1``): collection path and kind
DRA_KINDS = {
    "resourceclaims": ("/apis/resource.k8s.io/v1/resourceclaims", "ResourceClaim"),
    "resourceslices": ("/apis/resource.k8s.io/v1/resourceslices", "ResourceSlice"),
    "deviceclasses": ("/apis/resource.k8s.io/v1/deviceclasses", "DeviceClass"),
}


def _key(kind: str, obj: Obj) -> str:
    meta = obj["metadata"]
    return meta["name"] if kind in CLUSTER_SCOPED else f"{meta['namespace']}/{meta['name']}"


def _matches(kind: str, selector: str | None, obj: Obj) -> bool:
    if not selector or kind != "pods":
        return True
    phase = (obj.get("status") or {}).get("phase", "")
    for term in selector.split(","):
        if term.startswith("status.phase!="):
            if phase == term.split("!=", 1)[1]:
                return False
        elif term.startswith("status.phase=") and phase != term.split("=", 1)[1]:
            return False
    return True


class _QuietServer(ThreadingHTTPServer):
    """Reuses the port at once after a stop, and does not print a traceback when a client hangs up.
    Its listen backlog is a real server's, not socketserver's 5: a client opening a pool of
    connections at once would otherwise see connections dropped and retried a second later."""

    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 1024

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


@dataclass
class TLS:
    """HTTPS for :class:`FakeAPIServer`: its server context (requiring a client certificate the CA
    signed, as kube-apiserver's ``--client-ca-file``) and, base64 for a kubeconfig, the CA and a
    client certificate and key."""

    context: ssl.SSLContext
    ca_data: str
    cert_data: str
    key_data: str

    @classmethod
    def issue(cls) -> TLS:
        """A fresh CA (trustme), a server certificate for ``127.0.0.1`` and a client certificate
        for ``system:kube-scheduler``."""
        import trustme

        ca = trustme.CA()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1").configure_cert(context)
        ca.configure_trust(context)
        context.verify_mode = ssl.CERT_REQUIRED
        client = ca.issue_cert("kube-scheduler.local", common_name="system:kube-scheduler")
        b64 = base64.b64encode
        return cls(
            context,
            b64(ca.cert_pem.bytes()).decode(),
            b64(b"".join(blob.bytes() for blob in client.cert_chain_pems)).decode(),
            b64(client.private_key_pem.bytes()).decode(),
        )


@dataclass
class _Watcher:
    kind: str
    selector: str | None
    events: queue.Queue[tuple[str, Obj] | None] = field(default_factory=queue.Queue)


class FakeAPIServer:
    """The API server of the module doc, on ``127.0.0.1``; ``url`` once started."""

    def __init__(self, bookmark_interval: float = 0.5) -> None:
        self.bookmark_interval = bookmark_interval
        self.lock = threading.RLock()
        self.objects: dict[str, dict[str, Obj]] = {
            "nodes": {},
            "pods": {},
            "podgroups": {},
            "poddisruptionbudgets": {},
            "services": {},
            "replicationcontrollers": {},
            "replicasets": {},
            "statefulsets": {},
            "namespaces": {},
            "leases": {},
            "events": {},
            **{kind: {} for kind in STORAGE_KINDS},
            **{kind: {} for kind in DRA_KINDS},
        }
        #: (verb, namespace/name, body) of every write of a ResourceClaim (``update``,
        #: ``update_status``, ``patch_status``), in order, whatever the answer
        self.claim_writes: list[tuple[str, str, Obj]] = []
        #: (kind, key, patch) of every PATCH of a claim or a volume, in order
        self.volume_patches: list[tuple[str, str, Obj]] = []
        #: ("create" | "patch", namespace/name) of every events.k8s.io write, in order
        self.event_writes: list[tuple[str, str]] = []
        #: (lease name, holderIdentity) of every Lease write, in order
        self.lease_writes: list[tuple[str, str]] = []
        #: the ``spec`` of every Lease write, in the same order
        self.lease_specs: list[Obj] = []
        #: for each of :attr:`bindings`, how many Lease writes came before it (who led then)
        self.lease_writes_before_binding: list[int] = []
        #: (namespace/name, patch) of every pods/status PATCH
        self.status_patches: list[tuple[str, Obj]] = []
        #: whether the scheduling.x-k8s.io PodGroup CRD is installed (else its paths are 404)
        self.podgroup_crd = True
        #: incremented by :meth:`stop`: watches of an earlier lifetime end
        self.epoch = 0
        #: whether lists at resourceVersion 0 are served whole, from the watch cache (kube-apiserver's
        #: default); ``False``: paged like any other list (``--watch-cache=false``)
        self.watch_cache = True
        #: what ``GET /version`` reports (``gitVersion``)
        self.version = "v1.36.3"
        self.rv = 100
        self.compacted_rv = 0
        self.history: list[tuple[int, str, str, Obj]] = []
        self.watchers: list[_Watcher] = []
        self.bindings: list[Obj] = []
        #: ``namespace/name`` of every pod deleted through the API (preemption's victims)
        self.deletions: list[str] = []
        #: (namespace/name, annotations) of every PATCH of a pod's annotations
        self.patches: list[tuple[str, Obj]] = []
        self.requests: list[str] = []
        self.snapshots: dict[str, tuple[int, list[bytes]]] = {}
        self.binding_delay = 0.0
        #: the ``Authorization`` header of every request, in order
        self.authorizations: list[str] = []
        #: bearer token -> (username, groups) the TokenReviews authenticate
        self.tokens: dict[str, tuple[str, list[str]]] = {}
        #: (user or group, non-resource path) pairs a SubjectAccessReview of ``get`` allows
        self.allowed: set[tuple[str, str]] = set()
        #: the token of every TokenReview, and the spec of every SubjectAccessReview, in order
        self.token_reviews: list[str] = []
        self.access_reviews: list[Obj] = []
        #: answer TokenReviews / SubjectAccessReviews with this HTTP status (``None``: answer them)
        self.token_review_failure: int | None = None
        self.access_review_failure: int | None = None
        self.tls: TLS | None = None
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self, port: int | None = None, tls: TLS | None = None) -> FakeAPIServer:
        """Listen on ``port`` (default: the previous port, or a free one); over HTTPS with ``tls``
        (kept for later restarts)."""
        handler = _handler(self, self.epoch)
        server = _QuietServer(("127.0.0.1", port if port is not None else self.port), handler)
        self.tls = tls or self.tls
        if self.tls is not None:
            server.socket = self.tls.context.wrap_socket(server.socket, server_side=True)
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and end every watch (the API server goes away), also one whose request
        was accepted just before the listener closed (it ends at its next tick: the listener's
        epoch is over)."""
        with self.lock:
            self.epoch += 1
        self.end_watches()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (``https`` when started with TLS)."""
        return f"{'https' if self.tls is not None else 'http'}://127.0.0.1:{self.port}"

    def kubeconfig(self) -> str:
        """A kubeconfig (YAML text) pointing at this server: a bearer token and, over TLS, the CA
        and the client certificate as inline data, as kubeadm writes them."""
        cluster, user = f"    server: {self.url}\n", "    token: test-token\n"
        if self.tls is not None:
            cluster += f"    certificate-authority-data: {self.tls.ca_data}\n"
            user += f"    client-certificate-data: {self.tls.cert_data}\n    client-key-data: {self.tls.key_data}\n"
        return (
            "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
            f"clusters:\n- name: test\n  cluster:\n{cluster}"
            f"users:\n- name: test\n  user:\n{user}"
            "contexts:\n- name: test\n  context:\n    cluster: test\n    user: test\n"
        )

    # -- state changes -----------------------------------------------------------------------------

    def _emit(self, kind: str, event: str, obj: Obj, old: Obj | None) -> None:
        self.history.append((self.rv, kind, event, copy.deepcopy(obj)))
        for w in list(self.watchers):
            if w.kind != kind:
                continue
            now = _matches(kind, w.selector, obj)
            before = old is not None and _matches(kind, w.selector, old)
            if event == "MODIFIED":
                if now and before:
                    w.events.put(("MODIFIED", obj))
                elif now:
                    w.events.put(("ADDED", obj))
                elif before:
                    w.events.put(("DELETED", obj))
            elif now:
                w.events.put((event, obj))

    def put(self, kind: str, obj: Obj) -> Obj:
        """Create or replace an object (ADDED or MODIFIED); returns the stored copy."""
        with self.lock:
            obj = copy.deepcopy(obj)
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            key = _key(kind, obj)
            old = self.objects[kind].get(key)
            self.objects[kind][key] = obj
            self._emit(kind, "MODIFIED" if old is not None else "ADDED", obj, old)
            return obj

    def delete(self, kind: str, key: str) -> None:
        """Delete an object (DELETED)."""
        with self.lock:
            obj = self.objects[kind].pop(key)
            self.rv += 1
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self._emit(kind, "DELETED", obj, None)

    def compact(self) -> None:
        """Drop the event history: older resourceVersions and continue tokens become 410."""
        with self.lock:
            self.compacted_rv = self.rv
            self.history.clear()

    def end_watches(self) -> None:
        """End every open watch stream normally (as a server-side timeout does)."""
        with self.lock:
            for w in self.watchers:
                w.events.put(None)

    def pod(self, namespace: str, name: str) -> Obj | None:
        """The stored pod, or ``None``."""
        with self.lock:
            return copy.deepcopy(self.objects["pods"].get(f"{namespace}/{name}"))

    # -- request handling --------------------------------------------------------------------------

    def write_lease(self, namespace: str, name: str, body: Obj, create: bool) -> tuple[int, Obj]:
        """Create (``POST``: 409 ``AlreadyExists`` when it exists) or replace (``PUT``: 404 when
        missing, 409 ``Conflict`` when ``metadata.resourceVersion`` is not the stored one) a Lease,
        as kube-apiserver's optimistic concurrency does; each write bumps the resourceVersion."""
        key = f"{namespace}/{name}"
        with self.lock:
            current = self.objects["leases"].get(key)
            if create and current is not None:
                return 409, status_body(409, "AlreadyExists", f'leases.coordination.k8s.io "{name}" already exists')
            if not create:
                if current is None:
                    return 404, status_body(404, "NotFound", f'leases.coordination.k8s.io "{name}" not found')
                given = (body.get("metadata") or {}).get("resourceVersion")
                if given != current["metadata"].get("resourceVersion"):
                    message = (
                        f'Operation cannot be fulfilled on leases.coordination.k8s.io "{name}": '
                        "the object has been modified"
                    )
                    return 409, status_body(409, "Conflict", message)
            self.rv += 1
            stored = copy.deepcopy(body)
            stored["metadata"] = {**(body.get("metadata") or {}), "name": name, "namespace": namespace}
            stored["metadata"]["resourceVersion"] = str(self.rv)
            self.objects["leases"][key] = stored
            self.lease_writes.append((name, stored["spec"].get("holderIdentity", "")))
            self.lease_specs.append(copy.deepcopy(stored["spec"]))
            return (201 if create else 200), stored

    def patch_pod_status(self, namespace: str, name: str, patch: Obj) -> tuple[int, Obj]:
        """``PATCH pods/{name}/status``: ``status.conditions`` merged by ``type`` (the strategic
        merge key), other status fields replaced; emitted as MODIFIED."""
        with self.lock:
            current = self.objects["pods"].get(f"{namespace}/{name}")
            if current is None:
                return 404, status_body(404, "NotFound", f'pods "{name}" not found')
            new = copy.deepcopy(current)
            status = new.setdefault("status", {})
            for key, value in (patch.get("status") or {}).items():
                if key == "conditions":
                    by_type = {c.get("type"): c for c in status.get("conditions") or []}
                    for condition in value or []:
                        by_type[condition.get("type")] = {**by_type.get(condition.get("type"), {}), **condition}
                    status["conditions"] = list(by_type.values())
                else:
                    status[key] = value
            self.status_patches.append((f"{namespace}/{name}", copy.deepcopy(patch)))
            return 200, self.put("pods", new)

    def create_event(self, namespace: str, body: Obj) -> tuple[int, Obj]:
        """``POST /apis/events.k8s.io/v1/namespaces/{ns}/events``: stored under ``events``
        (``namespace/name``); 409 ``AlreadyExists`` for a taken name, 422 without the fields the
        API server requires of an events.k8s.io/v1 Event (``eventTime``, ``reportingController``,
        ``reportingInstance``, ``action``, ``reason``, ``regarding``)."""
        meta = body.get("metadata") or {}
        key = f"{namespace}/{meta.get('name')}"
        required = ("eventTime", "reportingController", "reportingInstance", "action", "reason", "regarding")
        missing = [f for f in required if not body.get(f)]
        if missing or meta.get("namespace", namespace) != namespace:
            return 422, status_body(422, "Invalid", f"Event is invalid: missing {', '.join(missing)}")
        with self.lock:
            if key in self.objects["events"]:
                return 409, status_body(
                    409, "AlreadyExists", f'events.events.k8s.io "{meta.get("name")}" already exists'
                )
            self.rv += 1
            stored = copy.deepcopy(body)
            stored["metadata"] = {**meta, "namespace": namespace, "resourceVersion": str(self.rv)}
            self.objects["events"][key] = stored
            self.event_writes.append(("create", key))
            return 201, stored

    def patch_event(self, namespace: str, name: str, patch: Obj) -> tuple[int, Obj]:
        """``PATCH .../events/{name}``: the patch's top-level fields merged in (what a strategic
        merge of ``series`` does); 404 when there is no such Event."""
        key = f"{namespace}/{name}"
        with self.lock:
            current = self.objects["events"].get(key)
            if current is None:
                return 404, status_body(404, "NotFound", f'events.events.k8s.io "{name}" not found')
            self.rv += 1
            current.update(copy.deepcopy(patch))
            current["metadata"]["resourceVersion"] = str(self.rv)
            self.event_writes.append(("patch", key))
            return 200, current

    def list(self, kind: str, query: dict[str, str]) -> tuple[int, Obj | bytes]:
        """A list answer: ``(status, body)``, the body already encoded for a list.

        ``resourceVersion=0`` without ``continue`` is served whole, ``limit`` ignored, as
        kube-apiserver serves it from its watch cache (client-go's first list asks for it; a
        paginated answer to it means the watch cache is off). Otherwise ``limit`` pages the list,
        each page from the snapshot taken by the first (items are encoded when the snapshot is
        taken: a consistent copy without deep-copying objects).
        """
        selector = query.get("fieldSelector")
        list_kind = {
            "nodes": "NodeList",
            "pods": "PodList",
            "podgroups": "PodGroupList",
            "poddisruptionbudgets": "PodDisruptionBudgetList",
            "services": "ServiceList",
            "replicationcontrollers": "ReplicationControllerList",
            "replicasets": "ReplicaSetList",
            "statefulsets": "StatefulSetList",
            **{k: f"{v[1]}List" for k, v in STORAGE_KINDS.items()},
            **{k: f"{v[1]}List" for k, v in DRA_KINDS.items()},
            "namespaces": "NamespaceList",
        }[kind]
        with self.lock:
            token = query.get("continue")
            if token:
                snap = self.snapshots.get(token)
                if snap is None or snap[0] < self.compacted_rv:
                    return 410, status_body(
                        410,
                        "Expired",
                        "The provided continue parameter is too old to display a consistent list result.",
                    )
                list_rv, items = snap
            else:
                list_rv = self.rv
                items = [orjson.dumps(o) for _, o in sorted(self.objects[kind].items()) if _matches(kind, selector, o)]
            limit = int(query.get("limit") or 0)
            if self.watch_cache and query.get("resourceVersion") == "0" and not token:
                limit = 0
            meta: Obj = {"resourceVersion": str(list_rv)}
            if limit and len(items) > limit:
                page, rest = items[:limit], items[limit:]
                next_token = base64.b64encode(f"{list_rv}:{len(self.snapshots)}".encode()).decode()
                self.snapshots[next_token] = (list_rv, rest)
                meta["continue"] = next_token
                meta["remainingItemCount"] = len(rest)
            else:
                page = items
        head = orjson.dumps({"kind": list_kind, "apiVersion": "v1", "metadata": meta})
        return 200, head[:-1] + b',"items":[' + b",".join(page) + b"]}"

    def open_watch(self, kind: str, query: dict[str, str]) -> tuple[_Watcher, list[tuple[str, Obj]], bool]:
        """Register a watcher; returns it, the replayed events and whether the version is gone."""
        selector = query.get("fieldSelector")
        rv = int(query.get("resourceVersion") or 0)
        with self.lock:
            watcher = _Watcher(kind, selector)
            if rv and rv < self.compacted_rv:
                return watcher, [], True
            replay: list[tuple[str, Obj]] = []
            for ev_rv, ev_kind, ev_type, obj in self.history:
                if ev_kind == kind and ev_rv > rv and _matches(kind, selector, obj):
                    replay.append((ev_type, obj))
            self.watchers.append(watcher)
            return watcher, replay, False

    def close_watch(self, watcher: _Watcher) -> None:
        with self.lock:
            if watcher in self.watchers:
                self.watchers.remove(watcher)

    def token_review(self, body: Obj) -> tuple[int, Obj]:
        """``POST /apis/authentication.k8s.io/v1/tokenreviews`` (see the module doc)."""
        token = (body.get("spec") or {}).get("token", "")
        with self.lock:
            self.token_reviews.append(token)
            failure = self.token_review_failure
            if failure is not None:
                return failure, status_body(failure, "InternalError", "etcd is unhappy")
            known = self.tokens.get(token)
        review: Obj = {
            "kind": "TokenReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "spec": body.get("spec") or {},
            "status": {"user": {}},
        }
        if known is not None:
            name, groups = known
            review["status"] = {
                "authenticated": True,
                "user": {"username": name, "uid": f"uid-{name}", "groups": [*groups, "system:authenticated"]},
                "audiences": ["https://kubernetes.default.svc.cluster.local"],
            }
        return 201, review

    def access_review(self, body: Obj) -> tuple[int, Obj]:
        """``POST /apis/authorization.k8s.io/v1/subjectaccessreviews`` (see the module doc)."""
        spec = body.get("spec") or {}
        with self.lock:
            self.access_reviews.append(copy.deepcopy(spec))
            failure = self.access_review_failure
            if failure is not None:
                return failure, status_body(failure, "InternalError", "etcd is unhappy")
            attrs = spec.get("nonResourceAttributes") or {}
            path, verb = attrs.get("path"), attrs.get("verb")
            who = [spec.get("user", ""), *(spec.get("groups") or [])]
            grant = next((w for w in who if (w, path) in self.allowed), None) if verb == "get" else None
        status: Obj = {"allowed": False}
        if grant is not None:
            status = {
                "allowed": True,
                "reason": f'RBAC: allowed by ClusterRoleBinding "metrics-reader" of ClusterRole "metrics-reader" '
                f'to User "{grant}"',
            }
        review = {
            "kind": "SubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }
        return 201, review

    def patch_volume(self, kind: str, key: str, patch: Obj) -> tuple[int, Obj]:
        """``PATCH`` of a PersistentVolumeClaim or PersistentVolume (``key``: ``namespace/name`` or
        ``name``): a JSON merge patch (RFC 7386: maps merged, ``null`` deletes, anything else
        replaced), ``metadata.resourceVersion`` in it a precondition; emitted as MODIFIED."""
        name = key.rsplit("/", 1)[-1]
        resource = "persistentvolumeclaims" if kind == "persistentvolumeclaims" else "persistentvolumes"
        with self.lock:
            current = self.objects[kind].get(key)
            if current is None:
                return 404, status_body(404, "NotFound", f'{resource} "{name}" not found')
            wanted = (patch.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != current["metadata"].get("resourceVersion"):
                message = (
                    f'Operation cannot be fulfilled on {resource} "{name}": the object has been modified; '
                    "please apply your changes to the latest version and try again"
                )
                return 409, status_body(409, "Conflict", message)
            self.volume_patches.append((kind, key, copy.deepcopy(patch)))
            return 200, self.put(kind, _merge_patch(current, patch))

    def claim(self, namespace: str, name: str) -> Obj | None:
        """The stored ResourceClaim, or ``None``."""
        with self.lock:
            return copy.deepcopy(self.objects["resourceclaims"].get(f"{namespace}/{name}"))

    def write_claim(self, verb: str, namespace: str, name: str, body: Obj) -> tuple[int, Obj]:
        """A ResourceClaim's ``update`` (PUT: metadata and spec), ``update_status`` (PUT of
        ``/status``) or ``patch_status`` (strategic merge of ``/status``), as the module doc says."""
        key = f"{namespace}/{name}"
        with self.lock:
            self.claim_writes.append((verb, key, copy.deepcopy(body)))
            current = self.objects["resourceclaims"].get(key)
            if current is None:
                return 404, _claim_not_found(name)
            wanted = (body.get("metadata") or {}).get("resourceVersion")
            if verb != "patch_status" and wanted and wanted != current["metadata"].get("resourceVersion"):
                message = (
                    f'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "{name}": the object has been '
                    "modified; please apply your changes to the latest version and try again"
                )
                return 409, status_body(
                    409, "Conflict", message, name=name, group="resource.k8s.io", kind="resourceclaims"
                )
            new = copy.deepcopy(current)
            if verb == "update":
                meta = dict(body.get("metadata") or {})
                for field_name in ("finalizers", "labels", "annotations", "ownerReferences"):
                    if meta.get(field_name) is None:
                        new["metadata"].pop(field_name, None)
                    else:
                        new["metadata"][field_name] = meta[field_name]
            elif verb == "update_status":
                new["status"] = copy.deepcopy(body.get("status") or {})
            else:
                status = new.setdefault("status", {})
                patch = body.get("status") or {}
                for entry in patch.get("reservedFor") or ():
                    if entry.get("$patch") == "delete":
                        kept = [r for r in status.get("reservedFor") or () if r.get("uid") != entry.get("uid")]
                        status["reservedFor"] = kept
            status = {k: v for k, v in (new.get("status") or {}).items() if v not in (None, [], {})}
            new["status"] = status
            old_allocation = (current.get("status") or {}).get("allocation")
            if status.get("reservedFor") and not status.get("allocation"):
                return 422, _claim_invalid(
                    name, "status.reservedFor: Forbidden: may not be specified when `allocated` is not set"
                )
            if old_allocation and status.get("allocation") and status["allocation"] != old_allocation:
                return 422, _claim_invalid(name, "status.allocation: Invalid value: field is immutable")
            return 200, self.put("resourceclaims", new)

    def bind(self, namespace: str, name: str, body: Obj) -> tuple[int, Obj]:
        if self.binding_delay:
            time.sleep(self.binding_delay)
        target = body.get("target") or {}
        meta = body.get("metadata") or {}
        with self.lock:
            self.bindings.append(copy.deepcopy(body))
            self.lease_writes_before_binding.append(len(self.lease_writes))
            pod = self.objects["pods"].get(f"{namespace}/{name}")
            if pod is None:
                return 404, status_body(404, "NotFound", f'pods "{name}" not found', name=name, kind="pods")
            uid = meta.get("uid")
            if uid and uid != pod["metadata"].get("uid"):
                return 409, status_body(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on pods/binding "{name}": Precondition failed: '
                    f"UID in precondition: {uid}, UID in object meta: {pod['metadata'].get('uid')}",
                    name=name,
                    kind="pods/binding",
                )
            if pod["spec"].get("nodeName"):
                return 409, status_body(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already '
                    f'assigned to node "{pod["spec"]["nodeName"]}"',
                    name=name,
                    kind="pods/binding",
                )
            new = copy.deepcopy(pod)
            new["spec"]["nodeName"] = target.get("name", "")
            new.setdefault("status", {}).setdefault("conditions", []).append({"type": "PodScheduled", "status": "True"})
            self.put("pods", new)
        return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _handler(api: FakeAPIServer, epoch: int) -> type[BaseHTTPRequestHandler]:
    """The request handler of one listener's lifetime ``epoch`` (its watches end when it stops)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # as Go's net package does on every TCP connection (kube-apiserver's too): without it, an
        # answer written as headers then body waits for the client's delayed ACK (40 ms), which
        # capped every client of this server at 16 keep-alive connections / 45 ms = 355 requests/s
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, code: int, body: Obj | bytes) -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            try:
                self.wfile.write(data)
            except OSError:  # the client gave up (a test of its deadline)
                self.close_connection = True

        def _route(self) -> tuple[str, list[str], dict[str, str]]:
            parts = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            api.requests.append(f"{self.command} {self.path}")
            api.authorizations.append(self.headers.get("Authorization", ""))
            return parts.path, [p for p in parts.path.split("/") if p], query

        def do_GET(self) -> None:
            path, segs, query = self._route()
            kind = {
                "/api/v1/nodes": "nodes",
                "/api/v1/pods": "pods",
                "/apis/scheduling.x-k8s.io/v1alpha1/podgroups": "podgroups",
                "/apis/policy/v1/poddisruptionbudgets": "poddisruptionbudgets",
                "/api/v1/services": "services",
                "/api/v1/replicationcontrollers": "replicationcontrollers",
                "/apis/apps/v1/replicasets": "replicasets",
                "/apis/apps/v1/statefulsets": "statefulsets",
                **{collection: kind for kind, (collection, _) in STORAGE_KINDS.items()},
                **{collection: kind for kind, (collection, _) in DRA_KINDS.items()},
                "/api/v1/namespaces": "namespaces",
            }.get(path)
            if path in ("/version", "/version/"):
                major, minor = api.version.removeprefix("v").split(".")[:2]
                self._send(
                    200,
                    {
                        "major": major,
                        "minor": minor,
                        "gitVersion": api.version,
                        "gitCommit": "0" * 40,
                        "gitTreeState": "clean",
                        "buildDate": "2026-01-01T00:00:00Z",
                        "goVersion": "go1.25.0",
                        "compiler": "gc",
                        "platform": "linux/amd64",
                    },
                )
                return
            if kind == "podgroups" and not api.podgroup_crd:
                self._send(404, status_body(404, "NotFound", "the server could not find the requested resource"))
                return
            if kind is not None:
                if query.get("watch") in ("true", "1", "True"):
                    self._watch(kind, query)
                else:
                    self._send(*api.list(kind, query))
                return
            # GET /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}: what a follower of
            # kube-scheduler's leader election reads (client-go resourcelock.LeaseLock.Get)
            if (
                len(segs) == 7
                and segs[:4] == ["apis", "coordination.k8s.io", "v1", "namespaces"]
                and segs[5] == "leases"
            ):
                with api.lock:
                    lease = api.objects["leases"].get(f"{segs[4]}/{segs[6]}")
                if lease is None:
                    self._send(404, status_body(404, "NotFound", f'leases.coordination.k8s.io "{segs[6]}" not found'))
                else:
                    self._send(200, lease)
                return
            if _claim_path(segs) and len(segs) == 7:
                claim = api.claim(segs[4], segs[6])
                if claim is None:
                    self._send(404, _claim_not_found(segs[6]))
                else:
                    self._send(200, claim)
                return
            if len(segs) == 6 and segs[:3] == ["api", "v1", "namespaces"] and segs[4] == "pods":
                pod = api.pod(segs[3], segs[5])
                if pod is None:
                    self._send(404, status_body(404, "NotFound", f'pods "{segs[5]}" not found'))
                else:
                    self._send(200, pod)
                return
            self._send(404, status_body(404, "NotFound", "the server could not find the requested resource"))

        def do_POST(self) -> None:
            _path, segs, _ = self._route()
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if len(segs) == 7 and segs[:3] == ["api", "v1", "namespaces"] and segs[4:7:2] == ["pods", "binding"]:
                self._send(*api.bind(segs[3], segs[5], body))
                return
            if segs[:4] == ["apis", "events.k8s.io", "v1", "namespaces"] and segs[5:] == ["events"]:
                self._send(*api.create_event(segs[4], body))
                return
            if segs[:4] == ["apis", "coordination.k8s.io", "v1", "namespaces"] and segs[5:] == ["leases"]:
                self._send(*api.write_lease(segs[4], (body.get("metadata") or {}).get("name", ""), body, create=True))
                return
            if segs == ["apis", "authentication.k8s.io", "v1", "tokenreviews"]:
                self._send(*api.token_review(body))
                return
            if segs == ["apis", "authorization.k8s.io", "v1", "subjectaccessreviews"]:
                self._send(*api.access_review(body))
                return
            self._send(404, status_body(404, "NotFound", "the server could not find the requested resource"))

        def do_PATCH(self) -> None:
            """``PATCH /api/v1/namespaces/{ns}/pods/{name}``: a merge of ``metadata.annotations`` (what
            a strategic-merge or JSON merge patch of annotations does), emitted as MODIFIED."""
            _path, segs, _ = self._route()
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if len(segs) == 6 and segs[:3] == ["api", "v1", "namespaces"] and segs[4] == "pods":
                with api.lock:
                    current = api.pod(segs[3], segs[5])
                    if current is None:
                        self._send(404, status_body(404, "NotFound", f'pods "{segs[5]}" not found'))
                        return
                    new = copy.deepcopy(current)
                    annotations = (body.get("metadata") or {}).get("annotations") or {}
                    merged = {**(new["metadata"].get("annotations") or {}), **annotations}
                    new["metadata"]["annotations"] = {k: v for k, v in merged.items() if v is not None}
                    api.patches.append((f"{segs[3]}/{segs[5]}", annotations))
                    self._send(200, api.put("pods", new))
                return
            if len(segs) == 7 and segs[:3] == ["api", "v1", "namespaces"] and segs[4:7:2] == ["pods", "status"]:
                self._send(*api.patch_pod_status(segs[3], segs[5], body))
                return
            if segs[:4] == ["apis", "events.k8s.io", "v1", "namespaces"] and len(segs) == 7 and segs[5] == "events":
                self._send(*api.patch_event(segs[4], segs[6], body))
                return
            if len(segs) == 6 and segs[:3] == ["api", "v1", "namespaces"] and segs[4] == "persistentvolumeclaims":
                self._send(*api.patch_volume("persistentvolumeclaims", f"{segs[3]}/{segs[5]}", body))
                return
            if len(segs) == 4 and segs[:3] == ["api", "v1", "persistentvolumes"]:
                self._send(*api.patch_volume("persistentvolumes", segs[3], body))
                return
            if _claim_path(segs) and segs[7:] == ["status"]:
                self._send(*api.write_claim("patch_status", segs[4], segs[6], body))
                return
            self._send(404, status_body(404, "NotFound", "the server could not find the requested resource"))

        def do_DELETE(self) -> None:
            """``DELETE /api/v1/namespaces/{ns}/pods/{name}``, honouring ``preconditions.uid`` (409 on
            another UID), emitted as DELETED; recorded in :attr:`FakeAPIServer.deletions`."""
            _path, segs, _ = self._route()
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if len(segs) == 6 and segs[:3] == ["api", "v1", "namespaces"] and segs[4] == "pods":
                key = f"{segs[3]}/{segs[5]}"
                with api.lock:
                    current = api.objects["pods"].get(key)
                    if current is None:
                        self._send(404, status_body(404, "NotFound", f'pods "{segs[5]}" not found'))
                        return
                    uid = ((body or {}).get("preconditions") or {}).get("uid")
                    if uid and uid != current["metadata"].get("uid"):
                        self._send(409, status_body(409, "Conflict", "Precondition failed: UID in precondition"))
                        return
                    api.deletions.append(key)
                    api.delete("pods", key)
                self._send(200, current)
                return
            self._send(404, status_body(404, "NotFound", "the server could not find the requested resource"))

        def do_PUT(self) -> None:
            """``PUT .../leases/{name}``: a replace with ``metadata.resourceVersion`` as precondition."""
            _path, segs, _ = self._route()
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if segs[:4] == ["apis", "coordination.k8s.io", "v1", "namespaces"] and len(segs) == 7:
                self._send(*api.write_lease(segs[4], segs[6], body, create=False))
                return
            if _claim_path(segs) and segs[7:] in ([], ["status"]):
                self._send(*api.write_claim("update_status" if segs[7:] else "update", segs[4], segs[6], body))
                return
            self._send(404, status_body(404, "NotFound", "the server could not find the requested resource"))

        def _chunk(self, obj: Obj) -> None:
            data = json.dumps(obj).encode() + b"\n"
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _watch(self, kind: str, query: dict[str, str]) -> None:
            watcher, replay, gone = api.open_watch(kind, query)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                if gone:
                    self._chunk(
                        {
                            "type": "ERROR",
                            "object": status_body(
                                410, "Expired", f"too old resource version: {query.get('resourceVersion')}"
                            ),
                        }
                    )
                    return
                for event, obj in replay:
                    self._chunk({"type": event, "object": obj})
                deadline = time.monotonic() + int(query.get("timeoutSeconds") or 3600)
                bookmarks = query.get("allowWatchBookmarks") in ("true", "True", "1")
                next_bookmark = time.monotonic() + api.bookmark_interval
                for item in _events(watcher, deadline, api.bookmark_interval):
                    if item is None:
                        return
                    if item == ("tick", {}):
                        if epoch != api.epoch:  # the listener that accepted it has stopped
                            return
                        if bookmarks and time.monotonic() >= next_bookmark:
                            with api.lock:
                                rv = str(api.rv)
                            list_kind = {
                                "nodes": "Node",
                                "pods": "Pod",
                                "podgroups": "PodGroup",
                                "poddisruptionbudgets": "PodDisruptionBudget",
                                "services": "Service",
                                "replicationcontrollers": "ReplicationController",
                                "replicasets": "ReplicaSet",
                                "statefulsets": "StatefulSet",
                                **{k: v[1] for k, v in STORAGE_KINDS.items()},
                                **{k: v[1] for k, v in DRA_KINDS.items()},
                                "namespaces": "Namespace",
                            }[kind]
                            self._chunk(
                                {
                                    "type": "BOOKMARK",
                                    "object": {
                                        "kind": list_kind,
                                        "apiVersion": "v1",
                                        "metadata": {"resourceVersion": rv},
                                    },
                                }
                            )
                            next_bookmark = time.monotonic() + api.bookmark_interval
                        continue
                    self._chunk({"type": item[0], "object": item[1]})
            except (BrokenPipeError, ConnectionResetError):
                return
            finally:
                api.close_watch(watcher)
                try:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    pass
                self.close_connection = True

    return Handler


def _claim_path(segs: list[str]) -> bool:
    """``/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}[/status]``."""
    return (
        len(segs) >= 7 and segs[:4] == ["apis", "resource.k8s.io", "v1", "namespaces"] and segs[5] == "resourceclaims"
    )


def _claim_not_found(name: str) -> Obj:
    return status_body(404, "NotFound", f'resourceclaims.resource.k8s.io "{name}" not found')


def _claim_invalid(name: str, cause: str) -> Obj:
    return status_body(422, "Invalid", f'ResourceClaim.resource.k8s.io "{name}" is invalid: {cause}')


def _events(watcher: _Watcher, deadline: float, tick: float) -> Iterator[tuple[str, Obj] | None]:
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            yield None
            return
        try:
            item = watcher.events.get(timeout=min(tick / 2, left))
        except queue.Empty:
            yield ("tick", {})
            continue
        yield item
        if item is None:
            return


def _merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch of ``target`` by ``patch`` (a new object)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge_patch(out.get(key), value)
    return out


# -- object builders -------------------------------------------------------------------------------


def node(name: str, cpu: str = "4", memory: str = "16Gi", pods: str = "110", **labels: str) -> Obj:
    """A ready node with ``allocatable`` = ``capacity``."""
    res = {"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": "100Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {},
        "status": {"allocatable": dict(res), "capacity": dict(res)},
    }


def pod_group(name: str, namespace: str = "default", min_member: int = 2) -> Obj:
    """A ``scheduling.x-k8s.io/v1alpha1`` PodGroup."""
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-pg-{namespace}-{name}"},
        "spec": {"minMember": min_member},
    }


def pod(
    name: str,
    namespace: str = "default",
    node_name: str = "",
    cpu: str | None = "100m",
    memory: str | None = "128Mi",
    phase: str = "Pending",
    uid: str | None = None,
    **extra: Any,
) -> Obj:
    """A one-container pod with the given requests (``None``: not requested)."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    spec: Obj = {"containers": [{"name": "app", "image": "busybox", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    spec.update(extra)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{namespace}-{name}"},
        "spec": spec,
        "status": {"phase": phase},
    }


def storage_class(
    name: str, mode: str = "WaitForFirstConsumer", provisioner: str = "test.csi.example.com", **extra: Any
) -> Obj:
    """A ``storage.k8s.io/v1`` StorageClass (``volumeBindingMode`` defaulted, as the API server does)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "uid": f"uid-sc-{name}"},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        **extra,
    }


def claim(
    name: str,
    namespace: str = "default",
    storage_class_name: str | None = "standard",
    size: str = "1Gi",
    access_modes: tuple[str, ...] = ("ReadWriteOnce",),
    volume_name: str = "",
    **annotations: str,
) -> Obj:
    """A PersistentVolumeClaim (``Pending``, or ``Bound`` to ``volume_name`` with
    ``pv.kubernetes.io/bind-completed``, as the PV controller leaves it)."""
    spec: Obj = {"accessModes": list(access_modes), "resources": {"requests": {"storage": size}}}
    if storage_class_name is not None:
        spec["storageClassName"] = storage_class_name
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"uid-pvc-{namespace}-{name}"}
    phase = "Pending"
    if volume_name:
        spec["volumeName"] = volume_name
        annotations = {"pv.kubernetes.io/bind-completed": "yes", **annotations}
        phase = "Bound"
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase},
    }


def volume(
    name: str,
    size: str = "1Gi",
    storage_class_name: str = "standard",
    claim_ref: Obj | None = None,
    zone: str = "",
    csi_driver: str = "test.csi.example.com",
    labels: dict[str, str] | None = None,
    access_modes: tuple[str, ...] = ("ReadWriteOnce",),
) -> Obj:
    """A CSI PersistentVolume, ``Available`` (``Bound`` with ``claim_ref``), with a required node
    affinity on ``topology.kubernetes.io/zone`` when ``zone`` is given."""
    spec: Obj = {
        "capacity": {"storage": size},
        "accessModes": list(access_modes),
        "storageClassName": storage_class_name,
        "persistentVolumeReclaimPolicy": "Delete",
        "volumeMode": "Filesystem",
        "csi": {"driver": csi_driver, "volumeHandle": f"handle-{name}"},
    }
    if zone:
        requirement = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [requirement]}]}}
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "uid": f"uid-pv-{name}", "labels": dict(labels or {})},
        "spec": spec,
        "status": {"phase": "Bound" if claim_ref is not None else "Available"},
    }


def csi_node(node_name: str, driver: str = "test.csi.example.com", count: int | None = None) -> Obj:
    """A CSINode of ``node_name`` with one driver (``allocatable.count`` when ``count`` is given)."""
    entry: Obj = {"name": driver, "nodeID": node_name, "topologyKeys": ["topology.kubernetes.io/zone"]}
    if count is not None:
        entry["allocatable"] = {"count": count}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node_name, "uid": f"uid-csinode-{node_name}"},
        "spec": {"drivers": [entry]},
    }


def claim_volume(name: str, claim_name: str) -> Obj:
    """A pod volume using claim ``claim_name`` (for ``spec.volumes``)."""
    return {"name": name, "persistentVolumeClaim": {"claimName": claim_name}}


def lease(holder: str, name: str = "kube-scheduler", namespace: str = "kube-system", duration: int = 15) -> Obj:
    """A ``coordination.k8s.io/v1`` Lease as kube-scheduler's leader election writes it
    (client-go ``LeaseLock``), held by ``holder`` and renewed now."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0,
        },
    }


def device_class(name: str, *expressions: str, driver: str = "gpu.example.com") -> Obj:
    """A ``resource.k8s.io/v1`` DeviceClass selecting ``driver``'s devices (and ``expressions``,
    CEL)."""
    selectors = [{"cel": {"expression": f'device.driver == "{driver}"'}}]
    selectors += [{"cel": {"expression": e}} for e in expressions]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "uid": f"uid-dc-{name}"},
        "spec": {"selectors": selectors},
    }


def resource_slice(node_name: str, devices: int = 2, driver: str = "gpu.example.com", model: str = "a100") -> Obj:
    """A ``resource.k8s.io/v1`` ResourceSlice of ``node_name``: one pool (the node's name) of
    ``devices`` devices ``gpu-0``.. with the string attribute ``model``."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{driver}", "uid": f"uid-rs-{node_name}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": model}}} for i in range(devices)],
        },
    }


def resource_claim(
    name: str, device_class_name: str = "gpu.example.com", count: int = 1, namespace: str = "default", *selectors: str
) -> Obj:
    """A ``resource.k8s.io/v1`` ResourceClaim of one request ``gpu`` for ``count`` devices of the
    class (with CEL ``selectors``), unallocated."""
    exactly: Obj = {"deviceClassName": device_class_name, "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-rc-{namespace}-{name}"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
        "status": {},
    }


def claim_pod(name: str, *claims: str, namespace: str = "default", **extra: Any) -> Obj:
    """A pod using the ResourceClaims ``claims`` by name (``spec.resourceClaims``, each entry
    named after its claim, referenced by the container)."""
    obj = pod(name, namespace, resourceClaims=[{"name": c, "resourceClaimName": c} for c in claims], **extra)
    obj["spec"]["containers"][0]["resources"]["claims"] = [{"name": c} for c in claims]
    return obj


@contextmanager
def running(populate: Callable[[FakeAPIServer], None]) -> Iterator[FakeAPIServer]:
    """A started :class:`FakeAPIServer` holding what ``populate`` puts in it; stopped on exit."""
    server = FakeAPIServer().start()
    try:
        populate(server)
        yield server
    finally:
        server.stop()

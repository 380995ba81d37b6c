"""Client loading and the raw list/watch/write calls of the cluster state, the binder, the Lease,
the event recorder and the metrics listener's reviews (TokenReview, SubjectAccessReview).

Credentials and TLS come from the official ``kubernetes`` client (``load_client``), in client-go's
``BuildConfigFromFlags`` order plus in-cluster:

1. the explicit ``cluster.kubeconfig`` path of the configuration (no fallback when it fails);
2. in-cluster: the service account token and ``KUBERNETES_SERVICE_HOST``/``_PORT``;
3. the default kubeconfig: ``$KUBECONFIG`` or ``~/.kube/config``.

The requests themselves go through the official client's configured urllib3 pool
(``ApiClient.rest_client.pool_manager``: its CA, client certificate, ``verify_ssl``,
``tls_server_name``, proxy and pool size) with the bearer token of ``Configuration.auth_settings``
(refreshed by the client's hook: in-cluster token rotation, exec plugins), on the REST paths of the
API conventions. The generated API classes are not used: ``CoreV1Api`` alone costs a third of a
second to import, most of a scheduler's time to its first bind, and its model classes cost far
more than the cache itself at 150,000 pods. Lists and watch events are decoded by
:mod:`app.cluster.reflector` into slim records with msgspec; responses whose body is not needed
are drained so the connection goes back to the pool.

Bindings are the exception: they are created on the event loop by :mod:`app.kube.aio` (with
this client's configuration and :class:`AuthHeader`), which costs the service less CPU per
Binding than this pool on the API executor's threads (``bench/bench_bind.py``). The methods here
run on the API executor (``cluster.apiWorkers`` threads).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote, urlencode

import msgspec
import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from app.kube.errors import APIError, KubeConfigError

#: kube-scheduler's pod informer selector: terminal pods hold no resources.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"

#: The collections the reflectors list and watch, by kind.
COLLECTIONS = {
    "nodes": "/api/v1/nodes",
    "pods": "/api/v1/pods",
    "podgroups": "/apis/scheduling.x-k8s.io/v1alpha1/podgroups",
    "poddisruptionbudgets": "/apis/policy/v1/poddisruptionbudgets",
    # what PodTopologySpread's default selector reads (app.cluster.selectors)
    "services": "/api/v1/services",
    "replicationcontrollers": "/api/v1/replicationcontrollers",
    "replicasets": "/apis/apps/v1/replicasets",
    "statefulsets": "/apis/apps/v1/statefulsets",
    # what the volume plugins read (app.cluster.volumes)
    "persistentvolumeclaims": "/api/v1/persistentvolumeclaims",
    "persistentvolumes": "/api/v1/persistentvolumes",
    "storageclasses": "/apis/storage.k8s.io/v1/storageclasses",
    "csinodes": "/apis/storage.k8s.io/v1/csinodes",
    "csidrivers": "/apis/storage.k8s.io/v1/csidrivers",
    "csistoragecapacities": "/apis/storage.k8s.io/v1/csistoragecapacities",
    "volumeattachments": "/apis/storage.k8s.io/v1/volumeattachments",
    # what InterPodAffinity's namespaceSelector reads (app.cluster.namespaces)
    "namespaces": "/api/v1/namespaces",
    # what DynamicResources reads (app.cluster.dra)
    "resourceclaims": "/apis/resource.k8s.io/v1/resourceclaims",
    "resourceslices": "/apis/resource.k8s.io/v1/resourceslices",
    "deviceclasses": "/apis/resource.k8s.io/v1/deviceclasses",
}
JSON = "application/json"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"


class WatchStream(Protocol):
    """An open watch response: ``stream()`` yields body chunks as they arrive; ``close()`` ends it."""

    def stream(self, amt: int | None = ..., decode_content: bool | None = ...) -> Any: ...

    def close(self) -> None: ...


def interrupt(stream: Any) -> bool:
    """Shut down the socket under an open streamed response (a watch), so that a read blocked on
    it in another thread returns at once (end of stream or an error); returns whether a socket was
    found. Does not close the response: its reader does, once the read returned.

    Closing the response from another thread instead waits for the blocked read (the buffered
    reader's lock), which on an idle watch lasts until the next event or bookmark: minutes with
    kube-apiserver. ``shutdown(2)`` of the descriptor wakes the reader at once, over TLS too (the
    plain socket's ``shutdown`` is called: ``SSLSocket.shutdown`` would also drop the TLS object
    the reader is using). Safe to call on a response that is already closed."""
    connection = getattr(stream, "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is None:  # urllib3 may have handed the connection back: the socket is under the body
        raw = getattr(getattr(getattr(stream, "_fp", None), "fp", None), "raw", None)
        sock = getattr(raw, "_sock", None)
    if not isinstance(sock, socket.socket):
        return False
    with contextlib.suppress(OSError):  # already closed or not connected: nothing to wake
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    return True


@dataclass
class LoadedClient:
    """An ``ApiClient`` and where its credentials came from (for logs)."""

    api_client: k8s.ApiClient
    source: str


def load_client(
    kubeconfig: str | None = None, context: str | None = None, pool_size: int = 16, option: str = "cluster.kubeconfig"
) -> LoadedClient:
    """Load cluster credentials in the order of the module doc; ``option``: the configuration
    field an explicit ``kubeconfig`` came from (named when it fails).

    Raises :class:`KubeConfigError` naming each source tried and why it failed.
    """
    if kubeconfig:
        cfg = k8s.Configuration()
        try:
            k8s_config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)  # type: ignore[no-untyped-call]
        except (k8s_config.ConfigException, OSError, ValueError, TypeError) as exc:
            raise KubeConfigError(f"{option} {kubeconfig}: {exc}") from exc
        cfg.connection_pool_maxsize = pool_size
        return LoadedClient(k8s.ApiClient(cfg), f"kubeconfig {kubeconfig}")
    tried: list[str] = []
    cfg = k8s.Configuration()
    try:
        k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        cfg.connection_pool_maxsize = pool_size
        return LoadedClient(k8s.ApiClient(cfg), "in-cluster service account")
    except k8s_config.ConfigException as exc:
        tried.append(f"in-cluster: {exc}")
    # read $KUBECONFIG now: the client reads it once, at import
    default = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    cfg = k8s.Configuration()
    try:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=default, context=context, client_configuration=cfg
        )
        cfg.connection_pool_maxsize = pool_size
        return LoadedClient(k8s.ApiClient(cfg), f"kubeconfig {default}")
    except (k8s_config.ConfigException, OSError, ValueError, TypeError) as exc:
        tried.append(f"default kubeconfig {default}: {exc}")
    raise KubeConfigError(
        "no cluster credentials: set cluster.kubeconfig in the configuration, run in a pod with a "
        "service account, or provide a kubeconfig (" + "; ".join(tried) + ")"
    )


def status_error(status: int, body: bytes | str | None, reason: str = "") -> APIError:
    """The :class:`APIError` of a non-2xx answer: ``Status.reason`` and ``Status.message`` from its
    body when it is a ``Status`` (the API conventions), else the HTTP reason and the body's start."""
    message = ""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if body:
        try:
            doc = json.loads(body)
            if isinstance(doc, dict):
                reason = doc.get("reason") or reason
                message = doc.get("message") or ""
        except ValueError:
            message = body[:200]
    return APIError(status, reason, message)


def api_error(exc: BaseException) -> APIError:
    """Translate urllib3's exceptions into :class:`APIError`; a read timeout is ``timed_out`` (the
    request was sent, its effect is unknown)."""
    if isinstance(exc, APIError):
        return exc
    timed_out = isinstance(exc, urllib3.exceptions.ReadTimeoutError) or (
        isinstance(exc, urllib3.exceptions.TimeoutError) and not isinstance(exc, urllib3.exceptions.ConnectTimeoutError)
    )
    return APIError(0, type(exc).__name__, str(exc), timed_out=timed_out)


#: How long a bearer token read from the client's configuration is reused (seconds). The official
#: client's refresh hook rebuilds the whole configuration on every read (its kubeconfig loader's
#: ``_refresh_api_key``); client-go rereads a service account token once a minute
#: (``transport.NewCachedFileTokenSource``), so a token rotated by the kubelet is still picked up.
TOKEN_CACHE_SECONDS = 10.0


class AuthHeader:
    """The ``Authorization`` header of a ``kubernetes.client.Configuration`` (``{}`` without a
    bearer token), read from ``auth_settings`` at most every :data:`TOKEN_CACHE_SECONDS`.
    Thread-safe enough: a race reads the configuration twice."""

    def __init__(self, configuration: Any) -> None:
        self.configuration = configuration
        self._value: dict[str, str] = {}
        self._until = -1.0

    def __call__(self) -> dict[str, str]:
        now = time.monotonic()
        if now >= self._until:
            value: dict[str, str] = {}
            for auth in self.configuration.auth_settings().values():
                if auth.get("in") == "header" and auth.get("value"):
                    value[auth["key"]] = auth["value"]
            self._value, self._until = value, now + TOKEN_CACHE_SECONDS
        return self._value


_STR = msgspec.json.Encoder()


def binding_body(namespace: str, name: str, uid: str, node: str) -> bytes:
    """The JSON of kube-scheduler's DefaultBinder ``v1.Binding``
    (pkg/scheduler/framework/plugins/defaultbinder/default_binder.go), built from a template
    rather than by a generic serializer: ``metadata`` with the pod's name, namespace and UID (the
    API server's precondition: a pod recreated under the same name is not bound), ``target`` the
    Node. Strings are JSON-escaped; UTF-8 bytes."""
    return (
        b'{"kind":"Binding","apiVersion":"v1","metadata":{"name":%s,"namespace":%s,"uid":%s},"target":{"kind":"Node","name":%s}}'
        % (
            _STR.encode(name),
            _STR.encode(namespace),
            _STR.encode(uid),
            _STR.encode(node),
        )
    )


def _timeout(value: float | tuple[float, float]) -> urllib3.Timeout:
    if isinstance(value, tuple):
        return urllib3.Timeout(connect=value[0], read=value[1])
    return urllib3.Timeout(total=value)


def _name(value: str) -> str:
    return quote(value, safe="")


class KubeClient:
    """The API calls the cluster state, the Lease, the event recorder and preemption make; every
    method raises :class:`APIError`.

    Blocking: call it from a thread, never from the event loop.
    """

    def __init__(self, api_client: k8s.ApiClient) -> None:
        self.api_client = api_client
        self.configuration: Any = api_client.configuration
        self.host = str(self.configuration.host).rstrip("/")
        self.pool: urllib3.PoolManager = api_client.rest_client.pool_manager
        self.auth = AuthHeader(self.configuration)

    def headers(self, content_type: str | None = None) -> dict[str, str]:
        """The request headers: ``Accept``, the client's default headers (User-Agent), the bearer
        token when the credentials have one (:class:`AuthHeader`: the client's refresh hook
        rotates it) and ``Content-Type`` when a body is sent."""
        headers = {"Accept": JSON, **self.api_client.default_headers, **self.auth()}
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def request(
        self,
        method: str,
        path: str,
        timeout: float | tuple[float, float],
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        stream: bool = False,
    ) -> Any:
        """One API request: the urllib3 response, unread when ``stream`` (the caller reads and
        closes it), else read whole (``.data``). A status of 400 or more raises :class:`APIError`
        with the ``Status`` the API server answered."""
        url = self.host + path
        if query:
            url += "?" + urlencode({k: v for k, v in query.items() if v is not None and v != ""})
        data = None if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            resp = self.pool.request(
                method,
                url,
                body=data,
                headers=self.headers(content_type if data is not None else None),
                preload_content=not stream,
                timeout=_timeout(timeout),
            )
        except Exception as exc:
            raise api_error(exc) from exc
        if resp.status >= 400:
            try:
                payload = resp.data
            except Exception:  # a broken body: the status says enough
                payload = b""
            finally:
                resp.release_conn()
            raise status_error(resp.status, payload, str(resp.reason or ""))
        return resp

    def _list_or_watch(self, kind: str, timeout: float | tuple[float, float], stream: bool, **query: Any) -> Any:
        """``GET`` a collection of :data:`COLLECTIONS`: ``nodes``, (non-terminal) ``pods``,
        ``podgroups`` (``scheduling.x-k8s.io/v1alpha1``), ``poddisruptionbudgets`` (``policy/v1``),
        ``services``, ``replicationcontrollers`` (``v1``), ``replicasets`` or ``statefulsets``
        (``apps/v1``), ``persistentvolumeclaims``, ``persistentvolumes`` (``v1``),
        ``storageclasses``, ``csinodes``, ``csidrivers``, ``csistoragecapacities``,
        ``volumeattachments`` (``storage.k8s.io/v1``) or ``namespaces`` (``v1``)."""
        if kind == "pods":
            query["fieldSelector"] = POD_FIELD_SELECTOR
        return self.request("GET", COLLECTIONS[kind], timeout, query=query, stream=stream)

    def list(
        self, kind: str, limit: int, continue_token: str | None, timeout: float, resource_version: str = ""
    ) -> bytes:
        """One page of a kind of :data:`COLLECTIONS` (``pods``: the non-terminal ones): the raw
        list JSON. ``resource_version`` as ``ListOptions.resourceVersion`` (``"0"``: any version,
        served from kube-apiserver's watch cache; ``""``: the latest, a consistent read); a continue
        token carries its own."""
        query: dict[str, Any] = {"limit": limit}
        if continue_token:
            query["continue"] = continue_token
        elif resource_version:
            query["resourceVersion"] = resource_version
        data: bytes = self._list_or_watch(kind, timeout, False, **query).data
        return data

    def watch(self, kind: str, resource_version: str, timeout_seconds: int) -> WatchStream:
        """Open a watch of ``kind`` from ``resource_version`` with bookmarks; the server ends it after
        ``timeout_seconds`` (the client gives up reading 30 s later)."""
        stream: WatchStream = self._list_or_watch(
            kind,
            (10, timeout_seconds + 30),
            True,
            watch="true",
            resourceVersion=resource_version,
            allowWatchBookmarks="true",
            timeoutSeconds=timeout_seconds,
        )
        return stream

    def create_binding(self, namespace: str, name: str, uid: str, node: str, timeout: float) -> None:
        """POST ``pods/binding`` with ``metadata.uid`` as the precondition, as kube-scheduler's
        DefaultBinder (pkg/scheduler/framework/plugins/defaultbinder/default_binder.go)."""
        path = f"/api/v1/namespaces/{_name(namespace)}/pods/{_name(name)}/binding"
        self.request("POST", path, timeout, body=binding_body(namespace, name, uid, node))

    def get_pod(self, namespace: str, name: str, timeout: float) -> bytes:
        """The raw JSON of one pod."""
        data: bytes = self.request("GET", f"/api/v1/namespaces/{_name(namespace)}/pods/{_name(name)}", timeout).data
        return data

    def annotate_pod(self, namespace: str, name: str, annotations: dict[str, str], timeout: float) -> None:
        """Merge ``annotations`` into a pod's (a strategic-merge PATCH of its metadata)."""
        path = f"/api/v1/namespaces/{_name(namespace)}/pods/{_name(name)}"
        self.request(
            "PATCH", path, timeout, body={"metadata": {"annotations": annotations}}, content_type=STRATEGIC_MERGE
        )

    def patch_volume_object(
        self, kind: str, namespace: str, name: str, patch: dict[str, Any], timeout: float = 5.0
    ) -> str:
        """JSON merge PATCH of a ``persistentvolumeclaims`` (namespaced) or ``persistentvolumes``
        object, as VolumeBinding's PreBind updates a claim or a volume; a
        ``metadata.resourceVersion`` in ``patch`` is the precondition (``409 Conflict`` when the
        object changed). Returns the object's ``resourceVersion`` after the patch."""
        if kind == "persistentvolumeclaims":
            path = f"/api/v1/namespaces/{_name(namespace)}/persistentvolumeclaims/{_name(name)}"
        elif kind == "persistentvolumes":
            path = f"/api/v1/persistentvolumes/{_name(name)}"
        else:
            raise ValueError(f"not a volume kind: {kind!r}")
        data: bytes = self.request("PATCH", path, timeout, body=patch, content_type=MERGE).data
        try:
            meta = (json.loads(data) or {}).get("metadata") or {}
        except (ValueError, AttributeError) as exc:
            raise APIError(0, "MalformedResponse", f"{kind}/{name}: {exc}") from exc
        return str(meta.get("resourceVersion") or "")

    def resource_claim_call(
        self, verb: str, namespace: str, name: str, body: Mapping[str, Any] | None, timeout: float = 5.0
    ) -> dict[str, Any]:
        """One call on a ``resource.k8s.io/v1`` ResourceClaim, as DynamicResources makes them:
        ``get``, ``update`` (PUT), ``update_status`` (PUT of ``/status``; the body's
        ``metadata.resourceVersion`` is the precondition, ``409 Conflict`` when the claim
        changed) or ``patch_status`` (strategic-merge PATCH of ``/status``). Returns the claim
        the API server answered."""
        path = f"/apis/resource.k8s.io/v1/namespaces/{_name(namespace)}/resourceclaims/{_name(name)}"
        if verb == "get":
            resp = self.request("GET", path, timeout)
        elif verb == "update":
            resp = self.request("PUT", path, timeout, body=dict(body or {}))
        elif verb == "update_status":
            resp = self.request("PUT", path + "/status", timeout, body=dict(body or {}))
        elif verb == "patch_status":
            resp = self.request("PATCH", path + "/status", timeout, body=dict(body or {}), content_type=STRATEGIC_MERGE)
        else:
            raise ValueError(f"not a ResourceClaim call: {verb!r}")
        try:
            claim = json.loads(resp.data)
        except ValueError as exc:
            raise APIError(0, "MalformedResponse", f"resourceclaims/{name}: {exc}") from exc
        if not isinstance(claim, dict):
            raise APIError(0, "MalformedResponse", f"resourceclaims/{name}: not an object")
        return claim

    def create_event(self, namespace: str, body: dict[str, Any], timeout: float = 5.0) -> None:
        """POST an ``events.k8s.io/v1`` Event (``body`` as JSON) in ``namespace``."""
        self.request("POST", f"/apis/events.k8s.io/v1/namespaces/{_name(namespace)}/events", timeout, body=body)

    def patch_event(self, namespace: str, name: str, patch: dict[str, Any], timeout: float = 5.0) -> None:
        """Strategic-merge PATCH of an ``events.k8s.io/v1`` Event (an event series' count)."""
        path = f"/apis/events.k8s.io/v1/namespaces/{_name(namespace)}/events/{_name(name)}"
        self.request("PATCH", path, timeout, body=patch, content_type=STRATEGIC_MERGE)

    def server_version(self, timeout: float = 5.0) -> str:
        """The API server's ``gitVersion`` (``GET /version``), such as ``v1.35.0``."""
        data = self.request("GET", "/version", timeout).data
        try:
            info = json.loads(data)
        except ValueError as exc:
            raise APIError(0, "MalformedResponse", f"/version: {exc}") from exc
        return str(info.get("gitVersion") or "") if isinstance(info, dict) else ""

    def set_pod_condition(self, namespace: str, name: str, condition: dict[str, Any], timeout: float = 5.0) -> None:
        """Strategic-merge PATCH of ``pods/status`` with one condition (merged by ``type``), as
        kube-scheduler's ``updatePod`` writes ``PodScheduled``."""
        path = f"/api/v1/namespaces/{_name(namespace)}/pods/{_name(name)}/status"
        self.request("PATCH", path, timeout, body={"status": {"conditions": [condition]}}, content_type=STRATEGIC_MERGE)

    def set_nominated_node(self, namespace: str, name: str, node: str, timeout: float = 5.0) -> None:
        """Merge PATCH of ``pods/status`` setting ``status.nominatedNodeName`` (``""`` clears it),
        as kube-scheduler's ``updatePod`` writes a preemptor's nomination."""
        path = f"/api/v1/namespaces/{_name(namespace)}/pods/{_name(name)}/status"
        self.request("PATCH", path, timeout, body={"status": {"nominatedNodeName": node or None}}, content_type=MERGE)

    def delete_pod(self, namespace: str, name: str, uid: str, timeout: float = 5.0) -> None:
        """DELETE a pod with its UID as precondition (a preemption victim: never another pod that
        took its name); a pod already gone is not an error."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
        try:
            self.request("DELETE", f"/api/v1/namespaces/{_name(namespace)}/pods/{_name(name)}", timeout, body=body)
        except APIError as exc:
            if exc.status != 404:
                raise

    def create_lease(self, namespace: str, body: dict[str, Any], timeout: float = 5.0) -> None:
        """POST a ``coordination.k8s.io/v1`` Lease (409 ``AlreadyExists`` when another came first)."""
        self.request("POST", f"/apis/coordination.k8s.io/v1/namespaces/{_name(namespace)}/leases", timeout, body=body)

    def replace_lease(self, namespace: str, name: str, body: dict[str, Any], timeout: float = 5.0) -> None:
        """PUT a Lease; ``metadata.resourceVersion`` is the precondition (409 ``Conflict`` when it
        changed since it was read)."""
        path = f"/apis/coordination.k8s.io/v1/namespaces/{_name(namespace)}/leases/{_name(name)}"
        self.request("PUT", path, timeout, body=body)

    def get_lease(self, namespace: str, name: str, timeout: float) -> bytes | None:
        """The raw JSON of a ``coordination.k8s.io/v1`` Lease, or ``None`` when it does not exist."""
        path = f"/apis/coordination.k8s.io/v1/namespaces/{_name(namespace)}/leases/{_name(name)}"
        try:
            data: bytes = self.request("GET", path, timeout).data
        except APIError as exc:
            if exc.status == 404:
                return None
            raise
        return data

    def create_token_review(self, token: str, timeout: float) -> dict[str, Any]:
        """POST an ``authentication.k8s.io/v1`` TokenReview of ``token`` (no audiences: the API
        server's own) and return its ``status`` (``authenticated``, ``user``: ``username``, ``uid``,
        ``groups``, ``extra``; ``error``), as k8s.io/apiserver's webhook token authenticator does
        (plugin/pkg/authenticator/token/webhook/webhook.go). Needs ``tokenreviews: create``.
        Raises :class:`APIError`, also for an answer that is not a TokenReview."""
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        data = self.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", timeout, body=body).data
        return _review_status(data, "TokenReview")

    def create_subject_access_review(self, spec: dict[str, Any], timeout: float) -> dict[str, Any]:
        """POST an ``authorization.k8s.io/v1`` SubjectAccessReview with ``spec`` (``user``,
        ``groups``, ``uid``, ``extra``, and ``nonResourceAttributes: {path, verb}`` or
        ``resourceAttributes``) and return its ``status`` (``allowed``, ``denied``, ``reason``,
        ``evaluationError``), as k8s.io/apiserver's webhook authorizer does
        (plugin/pkg/authorizer/webhook/webhook.go). Needs ``subjectaccessreviews: create``.
        Raises :class:`APIError`, also for an answer that is not a SubjectAccessReview."""
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        data = self.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", timeout, body=body).data
        return _review_status(data, "SubjectAccessReview")

    def close(self) -> None:
        """Release the connection pool."""
        self.api_client.close()  # type: ignore[no-untyped-call]


def _review_status(data: bytes, kind: str) -> dict[str, Any]:
    """The ``status`` of a review the API server answered; raises :class:`APIError` when the body
    is not a JSON object (an empty ``status`` is an answer: not authenticated, not allowed)."""
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise APIError(0, "MalformedResponse", f"{kind}: {exc}") from exc
    if not isinstance(doc, dict):
        raise APIError(0, "MalformedResponse", f"{kind}: the answer is not an object")
    status = doc.get("status") or {}
    if not isinstance(status, dict):
        raise APIError(0, "MalformedResponse", f"{kind}: status is not an object")
    return status


__all__ = [
    "COLLECTIONS",
    "POD_FIELD_SELECTOR",
    "TOKEN_CACHE_SECONDS",
    "AuthHeader",
    "KubeClient",
    "LoadedClient",
    "WatchStream",
    "api_error",
    "binding_body",
    "interrupt",
    "load_client",
    "status_error",
]

"""Client loading and the raw list/watch/bind calls, on the official ``kubernetes`` client.

Loading order (``load_client``), as client-go's ``BuildConfigFromFlags`` plus in-cluster:

1. the explicit ``cluster.kubeconfig`` path of the configuration (no fallback when it fails);
2. in-cluster: the service account token and ``KUBERNETES_SERVICE_HOST``/``_PORT``;
3. the default kubeconfig: ``$KUBECONFIG`` or ``~/.kube/config``.

Responses are read with ``_preload_content=False``: lists and watch events are decoded by
:mod:`app.cluster.reflector` into slim records with msgspec (the official client's model classes
cost far more than the cache itself at 150,000 pods), and the Binding response is never handed to
the client's deserializer, which fails on it (kubernetes-client/python#825, #547: the API server
answers a ``Status``, the client expects a ``V1Binding`` and raises
``ValueError: Invalid value for `target`, must not be `None```).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from app.kube.errors import APIError, KubeConfigError

#: kube-scheduler's pod informer selector: terminal pods hold no resources.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"


class WatchStream(Protocol):
    """An open watch response: ``stream()`` yields body chunks as they arrive; ``close()`` ends it."""

    def stream(self, amt: int | None = ..., decode_content: bool | None = ...) -> Any: ...

    def close(self) -> None: ...


@dataclass
class LoadedClient:
    """An ``ApiClient`` and where its credentials came from (for logs)."""

    api_client: k8s.ApiClient
    source: str


def load_client(kubeconfig: str | None = None, context: str | None = None, pool_size: int = 16) -> LoadedClient:
    """Load cluster credentials in the order of the module doc.

    Raises :class:`KubeConfigError` naming each source tried and why it failed.
    """
    if kubeconfig:
        cfg = k8s.Configuration()
        try:
            k8s_config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)  # type: ignore[no-untyped-call]
        except (k8s_config.ConfigException, OSError, ValueError, TypeError) as exc:
            raise KubeConfigError(f"cluster.kubeconfig {kubeconfig}: {exc}") from exc
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


def api_error(exc: BaseException) -> APIError:
    """Translate the client's and urllib3's exceptions into :class:`APIError`."""
    if isinstance(exc, APIError):
        return exc
    if isinstance(exc, ApiException):
        reason, message = exc.reason or "", ""
        body = exc.body
        if isinstance(body, bytes):
            body = body.decode("utf-8", "replace")
        if body:
            try:
                status = json.loads(body)
                if isinstance(status, dict):
                    reason = status.get("reason") or reason
                    message = status.get("message") or ""
            except ValueError:
                message = body[:200]
        return APIError(int(exc.status or 0), reason, message)
    return APIError(0, type(exc).__name__, str(exc), timed_out=isinstance(exc, urllib3.exceptions.TimeoutError))


def _discard(call: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Make an API call whose answer is not needed: its body is read before the connection goes
    back to the pool (an unread body would be taken for the start of the next response on that
    connection: BadStatusLine). Raises :class:`APIError`."""
    try:
        resp = call(*args, _preload_content=False, **kwargs)
        resp.drain_conn()
        resp.release_conn()
    except Exception as exc:
        raise api_error(exc) from exc


class KubeClient:
    """The API calls the cluster state and the binder make; every method raises :class:`APIError`.

    Blocking: call it from a thread, never from the event loop.
    """

    def __init__(self, api_client: k8s.ApiClient) -> None:
        self.api_client = api_client
        self.core = k8s.CoreV1Api(api_client)
        self.custom = k8s.CustomObjectsApi(api_client)
        self.coordination = k8s.CoordinationV1Api(api_client)
        self.events = k8s.EventsV1Api(api_client)
        self.policy = k8s.PolicyV1Api(api_client)

    def _list_or_watch(self, kind: str, **kwargs: Any) -> Any:
        """``GET`` the ``nodes``, (non-terminal) ``pods``, ``podgroups``
        (``scheduling.x-k8s.io/v1alpha1``) or ``poddisruptionbudgets`` (``policy/v1``) collection
        with ``kwargs``; the urllib3 response
        (``_preload_content=False``). Raises :class:`APIError`."""
        try:
            if kind == "nodes":
                return self.core.list_node(_preload_content=False, **kwargs)
            if kind == "podgroups":
                return self.custom.list_cluster_custom_object(
                    "scheduling.x-k8s.io", "v1alpha1", "podgroups", _preload_content=False, **kwargs
                )
            if kind == "poddisruptionbudgets":
                return self.policy.list_pod_disruption_budget_for_all_namespaces(_preload_content=False, **kwargs)
            return self.core.list_pod_for_all_namespaces(
                field_selector=POD_FIELD_SELECTOR, _preload_content=False, **kwargs
            )
        except Exception as exc:
            raise api_error(exc) from exc

    def list(
        self, kind: str, limit: int, continue_token: str | None, timeout: float, resource_version: str = ""
    ) -> bytes:
        """One page of ``nodes``, (non-terminal) ``pods`` or ``podgroups``: the raw list JSON.
        ``resource_version`` as ``ListOptions.resourceVersion`` (``"0"``: any version, served from
        kube-apiserver's watch cache; ``""``: the latest, a consistent read); a continue token
        carries its own."""
        kwargs: dict[str, Any] = {"limit": limit, "_request_timeout": timeout}
        if continue_token:
            kwargs["_continue"] = continue_token
        elif resource_version:
            kwargs["resource_version"] = resource_version
        data: bytes = self._list_or_watch(kind, **kwargs).data
        return data

    def watch(self, kind: str, resource_version: str, timeout_seconds: int) -> WatchStream:
        """Open a watch of ``kind`` from ``resource_version`` with bookmarks; the server ends it after
        ``timeout_seconds`` (the client gives up reading 30 s later)."""
        stream: WatchStream = self._list_or_watch(
            kind,
            watch=True,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout_seconds,
            _request_timeout=(10, timeout_seconds + 30),
        )
        return stream

    def create_binding(self, namespace: str, name: str, uid: str, node: str, timeout: float) -> None:
        """POST ``pods/binding`` with ``metadata.uid`` as the precondition, as kube-scheduler's
        DefaultBinder (pkg/scheduler/framework/plugins/defaultbinder/default_binder.go)."""
        body = k8s.V1Binding(
            api_version="v1",
            kind="Binding",
            metadata=k8s.V1ObjectMeta(namespace=namespace, name=name, uid=uid),
            target=k8s.V1ObjectReference(kind="Node", name=node),
        )
        _discard(self.core.create_namespaced_pod_binding, name, namespace, body, _request_timeout=timeout)

    def get_pod(self, namespace: str, name: str, timeout: float) -> bytes:
        """The raw JSON of one pod."""
        resp: Any
        try:
            resp = self.core.read_namespaced_pod(name, namespace, _preload_content=False, _request_timeout=timeout)
            data: bytes = resp.data
            return data
        except Exception as exc:
            raise api_error(exc) from exc

    def annotate_pod(self, namespace: str, name: str, annotations: dict[str, str], timeout: float) -> None:
        """Merge ``annotations`` into a pod's (a strategic-merge PATCH of its metadata)."""
        patch = {"metadata": {"annotations": annotations}}
        _discard(self.core.patch_namespaced_pod, name, namespace, patch, _request_timeout=timeout)

    def create_event(self, namespace: str, body: dict[str, Any], timeout: float = 5.0) -> None:
        """POST an ``events.k8s.io/v1`` Event (``body`` as JSON) in ``namespace``."""
        event: Any = body  # sent as JSON as it is: the client serializes a dict unchanged
        _discard(self.events.create_namespaced_event, namespace, event, _request_timeout=timeout)

    def patch_event(self, namespace: str, name: str, patch: dict[str, Any], timeout: float = 5.0) -> None:
        """Strategic-merge PATCH of an ``events.k8s.io/v1`` Event (an event series' count)."""
        _discard(self.events.patch_namespaced_event, name, namespace, patch, _request_timeout=timeout)

    def server_version(self, timeout: float = 5.0) -> str:
        """The API server's ``gitVersion`` (``GET /version``), such as ``v1.35.0``."""
        try:
            info = k8s.VersionApi(self.api_client).get_code(_request_timeout=timeout)
        except Exception as exc:
            raise api_error(exc) from exc
        return str(info.git_version or "")

    def set_pod_condition(self, namespace: str, name: str, condition: dict[str, Any], timeout: float = 5.0) -> None:
        """Strategic-merge PATCH of ``pods/status`` with one condition (merged by ``type``), as
        kube-scheduler's ``updatePod`` writes ``PodScheduled``."""
        patch = {"status": {"conditions": [condition]}}
        _discard(self.core.patch_namespaced_pod_status, name, namespace, patch, _request_timeout=timeout)

    def set_nominated_node(self, namespace: str, name: str, node: str, timeout: float = 5.0) -> None:
        """Merge PATCH of ``pods/status`` setting ``status.nominatedNodeName`` (``""`` clears it),
        as kube-scheduler's ``updatePod`` writes a preemptor's nomination."""
        patch = {"status": {"nominatedNodeName": node or None}}
        _discard(self.core.patch_namespaced_pod_status, name, namespace, patch, _request_timeout=timeout)

    def delete_pod(self, namespace: str, name: str, uid: str, timeout: float = 5.0) -> None:
        """DELETE a pod with its UID as precondition (a preemption victim: never another pod that
        took its name); a pod already gone is not an error."""
        body: Any = {"preconditions": {"uid": uid}}
        try:
            self.core.delete_namespaced_pod(name, namespace, body=body, _request_timeout=timeout)
        except Exception as exc:
            error = api_error(exc)
            if error.status != 404:
                raise error from exc

    def create_lease(self, namespace: str, body: dict[str, Any], timeout: float = 5.0) -> None:
        """POST a ``coordination.k8s.io/v1`` Lease (409 ``AlreadyExists`` when another came first)."""
        lease: Any = body
        _discard(self.coordination.create_namespaced_lease, namespace, lease, _request_timeout=timeout)

    def replace_lease(self, namespace: str, name: str, body: dict[str, Any], timeout: float = 5.0) -> None:
        """PUT a Lease; ``metadata.resourceVersion`` is the precondition (409 ``Conflict`` when it
        changed since it was read)."""
        lease: Any = body
        _discard(self.coordination.replace_namespaced_lease, name, namespace, lease, _request_timeout=timeout)

    def get_lease(self, namespace: str, name: str, timeout: float) -> bytes | None:
        """The raw JSON of a ``coordination.k8s.io/v1`` Lease, or ``None`` when it does not exist."""
        resp: Any
        try:
            resp = self.coordination.read_namespaced_lease(
                name, namespace, _preload_content=False, _request_timeout=timeout
            )
            data: bytes = resp.data
            return data
        except Exception as exc:
            error = api_error(exc)
            if error.status == 404:
                return None
            raise error from exc

    def close(self) -> None:
        """Release the connection pool."""
        self.api_client.close()  # type: ignore[no-untyped-call]


__all__ = ["POD_FIELD_SELECTOR", "KubeClient", "LoadedClient", "WatchStream", "api_error", "load_client"]

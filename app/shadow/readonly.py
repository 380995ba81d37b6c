"""The shadow scheduler's API client: :class:`ReadOnlyClient` forwards the reads the cluster state
makes (list, watch, get) to a :class:`~app.kube.client.KubeClient` and refuses every other call
with :class:`ReadOnlyError` before any request is sent, so the shadow cannot write to the cluster
whatever runs in it (no Binding, no status, no Event, no Lease, no annotation)."""

from __future__ import annotations

from typing import Any

from app.kube.client import KubeClient
from app.kube.errors import APIError

#: The calls forwarded: the reflectors' list and watch, the reads of a pod and a Lease, the
#: server's version, and what the cluster connection reads of the client (no request).
READS = frozenset(
    {"list", "watch", "get_pod", "get_lease", "server_version", "close", "api_client", "configuration", "host"}
)


class ReadOnlyError(APIError):
    """A write the shadow scheduler refused (HTTP status 0: nothing was sent): the call's name."""

    def __init__(self, call: str) -> None:
        super().__init__(0, "ReadOnly", f"the shadow scheduler is read-only: {call} refused, nothing was sent")
        self.call = call


class ReadOnlyClient:
    """``client``'s reads (:data:`READS`); any other attribute is a function raising
    :class:`ReadOnlyError`. Not a :class:`KubeClient`: the cluster connection builds no event-loop
    Binding client over it (:meth:`ClusterConnection._async_bindings`). ``refused`` counts the
    calls refused."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        if name in READS:
            return getattr(self._client, name)
        if name.startswith("__"):
            raise AttributeError(name)

        def refuse(*args: Any, **kwargs: Any) -> Any:
            self.refused += 1
            raise ReadOnlyError(name)

        return refuse


__all__ = ["READS", "ReadOnlyClient", "ReadOnlyError"]

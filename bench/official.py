"""The ceiling the benchmarks compare against: the official ``kubernetes`` client's generated
``CoreV1Api`` binding pods directly, as a Python scheduler without this project would."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def official_binder(kubeconfig: Path, pool_size: int = 16) -> Callable[[str, str, str, str], None]:
    """``bind(namespace, name, uid, node)``: ``CoreV1Api.create_namespaced_pod_binding`` with
    the UID as precondition, on a pool of ``pool_size`` connections; the response is not
    deserialized (the client fails on it: kubernetes-client/python#825)."""
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    cfg = k8s.Configuration()
    k8s_config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)  # type: ignore[no-untyped-call]
    cfg.connection_pool_maxsize = pool_size
    core = k8s.CoreV1Api(k8s.ApiClient(cfg))

    def bind(namespace: str, name: str, uid: str, node: str) -> None:
        body = k8s.V1Binding(
            metadata=k8s.V1ObjectMeta(namespace=namespace, name=name, uid=uid),
            target=k8s.V1ObjectReference(kind="Node", name=node),
        )
        resp = core.create_namespaced_pod_binding(name, namespace, body, _preload_content=False, _request_timeout=30)
        resp.drain_conn()
        resp.release_conn()

    return bind

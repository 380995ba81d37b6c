"""The metrics listener as ``render`` deploys it (``server.metrics``): its defaults, its
Service, the RBAC of its reviews and of the scraper, and a prometheus-operator PodMonitor.
"""

from __future__ import annotations

from typing import Any

from app.config import DEFAULT_METRICS_PORT, Configuration, MetricsServerConfig
from app.deploy.crds import podgroup_crd_file, uses_podgroups
from app.deploy.objects import RenderError, binding, cluster_role, dump, header, meta, pod_labels
from app.framework.registry import Registry


def auth_delegator(name: str, subject: dict[str, Any]) -> dict[str, Any]:
    """The ClusterRoleBinding ``<name>-auth-delegator`` of ``subject`` to the built-in ClusterRole
    ``system:auth-delegator`` (``tokenreviews`` and ``subjectaccessreviews`` ``create``): what
    the metrics listener's reviews need, as every delegating API server's identity does."""
    return binding("ClusterRoleBinding", f"{name}-auth-delegator", "ClusterRole", "system:auth-delegator", subject)


def metrics_defaults(config: Configuration) -> Configuration:
    """``config`` as ``render`` deploys it: with ``cluster:`` and no ``server.metrics``, the metrics
    listener with its defaults (:class:`~app.config.MetricsServerConfig`: ``0.0.0.0:10261``,
    HTTPS, delegated authentication and authorization with the cluster credentials), so that every
    deployment is scrapeable; ``server.metrics.enabled: false`` keeps it off. Without ``cluster:``
    there are no credentials for the reviews: only a configured listener is rendered. Raises
    :class:`RenderError` when ``server.port`` is the default metrics port."""
    server = config.server
    if config.cluster is None or server.metrics is not None:
        return config
    if server.port == DEFAULT_METRICS_PORT:
        raise RenderError(
            f"server.port {server.port} is the metrics listener's default port: set server.metrics.port "
            "(or server.metrics.enabled: false)"
        )
    return config.model_copy(update={"server": server.model_copy(update={"metrics": MetricsServerConfig()})})


def metrics_objects(
    metrics: MetricsServerConfig,
    name: str,
    ns: str,
    selector: dict[str, str],
    reviewer: dict[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """What makes the metrics listener of the pods ``selector`` selects in ``ns`` scrapeable:

    - a headless Service ``<name>-metrics`` of its port (``metrics``);
    - unless ``insecure``, ``reviewer`` (the RBAC subject of the extender's credentials, when
      ``render`` knows it) bound to ``system:auth-delegator`` (:func:`auth_delegator`): the
      listener's TokenReviews and SubjectAccessReviews;
    - unless ``insecure``: the ServiceAccount ``<name>-metrics-reader``, a Secret of type
      ``kubernetes.io/service-account-token`` holding its token (``<name>-metrics-reader-token``),
      the ClusterRole ``<name>-metrics-reader`` (``get`` of ``nonResourceURLs: ["/metrics"]``, what
      the SubjectAccessReviews ask) and its binding to that ServiceAccount;

    and, apart (it needs prometheus-operator's CRD), a ``monitoring.coreos.com/v1`` PodMonitor
    ``<name>`` scraping port ``metrics`` over HTTPS with that token (``authorization``, type
    ``Bearer``) and ``insecureSkipVerify`` (the listener's certificate is self-signed unless
    ``server.metrics.tls`` is set; give ``tlsConfig.ca`` then)."""
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(f"{name}-metrics", ns),
        "spec": {
            "clusterIP": "None",
            "selector": selector,
            "ports": [{"name": "metrics", "port": metrics.port, "targetPort": "metrics", "protocol": "TCP"}],
        },
    }
    endpoint: dict[str, Any] = {"port": "metrics", "path": "/metrics", "scheme": "http"}
    objects: list[dict[str, Any]] = [service]
    if not metrics.insecure:
        if reviewer is not None:
            objects.append(auth_delegator(name, reviewer))
        reader = f"{name}-metrics-reader"
        secret = {"name": f"{reader}-token", "key": "token"}
        sa = {"kind": "ServiceAccount", "name": reader, "namespace": ns}
        objects += [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(reader, ns)},
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": meta(secret["name"], ns) | {"annotations": {"kubernetes.io/service-account.name": reader}},
                "type": "kubernetes.io/service-account-token",
            },
            cluster_role(reader, [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]),
            binding("ClusterRoleBinding", reader, "ClusterRole", reader, sa),
        ]
        endpoint |= {
            "scheme": "https",
            "tlsConfig": {"insecureSkipVerify": True},
            "authorization": {"type": "Bearer", "credentials": secret},
        }
    monitor = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": meta(name, ns),
        "spec": {
            "selector": {"matchLabels": selector},
            "namespaceSelector": {"matchNames": [ns]},
            "podMetricsEndpoints": [endpoint],
        },
    }
    return objects, monitor


def deployed_metrics(config: Configuration) -> Configuration:
    """``config`` as a Deployment's pod runs it: its metrics listener (if any) without host files
    (``tls``: the self-signed certificate; ``clientCAFile``; ``kubeconfig``: the in-cluster
    service account of ``cluster:``). Raises :class:`RenderError` for a listener that needs
    credentials and a configuration without ``cluster:``."""
    metrics = config.server.metrics_listener
    if metrics is None:
        return config
    if not metrics.insecure and config.cluster is None:
        raise RenderError(
            "server.metrics: the Deployments' metrics listener reviews its callers with the in-cluster service "
            "account of the cluster: section: add one, or set server.metrics.insecure: true (or enabled: false)"
        )
    plain = metrics.model_copy(update={"tls": None, "client_ca_file": None, "kubeconfig": None})
    return config.model_copy(update={"server": config.server.model_copy(update={"metrics": plain})})


def metrics_files_of(config: Configuration, name: str, ns: str, source: str, where: str) -> dict[str, str]:
    """``metrics.yaml`` and ``podmonitor.yaml`` of a Deployment target whose pods run as the
    ServiceAccount ``name`` (empty without the listener)."""
    metrics = config.server.metrics_listener
    if metrics is None:
        return {}
    sa = {"kind": "ServiceAccount", "name": name, "namespace": ns}
    objects, monitor = metrics_objects(metrics, name, ns, pod_labels(name), sa)
    return {
        "metrics.yaml": header(
            f"{where}metrics.yaml: the metrics listener's Service, the right of `{name}` to review its callers and "
            "the identity a scraper reads it with.",
            source,
        )
        + dump(*objects),
        "podmonitor.yaml": header(
            f"{where}podmonitor.yaml: a prometheus-operator PodMonitor of the metrics listener: kubectl apply -f it "
            "where prometheus-operator runs (no kustomization lists it: it needs the monitoring.coreos.com CRDs).",
            source,
        )
        + dump(monitor),
    }


def deployment_extras(
    config: Configuration, registry: Registry, name: str, ns: str, source: str, where: str
) -> dict[str, str]:
    """The files a Deployment target (``where``: its directory) carries beside its own:
    ``metrics.yaml`` and ``podmonitor.yaml`` with the metrics listener (its pods run as the
    ServiceAccount ``name``), ``podgroup-crd.yaml`` when a plugin reads PodGroups."""
    out = metrics_files_of(config, name, ns, source, where)
    if uses_podgroups(config, registry):
        out["podgroup-crd.yaml"] = podgroup_crd_file(f"{where}podgroup-crd.yaml", source)
    return out

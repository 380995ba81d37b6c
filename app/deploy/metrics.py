"""The metrics listener as ``render`` deploys it (``server.metrics``): its defaults, its
Service, the RBAC of its reviews and of the scraper, and a prometheus-operator PodMonitor.
"""

from __future__ import annotations

from typing import Any

from app.config import DEFAULT_METRICS_PORT, Configuration, MetricsServerConfig, MetricsTLSConfig
from app.deploy.crds import podgroup_crd_file, uses_podgroups
from app.deploy.objects import RenderError, binding, cluster_role, dump, header, meta, pod_disruption_budget, pod_labels
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


#: Where a Deployment's pods mount the Secret ``<name>-metrics-tls`` (``tls.crt``, ``tls.key``,
#: ``ca.crt``): the metrics listener's serving certificate (:func:`deployed_metrics`).
METRICS_TLS_DIR = "/etc/scheduler-extender-metrics-tls"


def tls_secret(name: str) -> str:
    """The Secret ``<name>-metrics-tls``: the listener's certificate and key (``tls.crt``,
    ``tls.key``) and the CA that signed it (``ca.crt``), which the PodMonitor verifies with."""
    return f"{name}-metrics-tls"


def service_dns(name: str, ns: str) -> str:
    """The DNS name of the metrics Service ``<name>-metrics`` in ``ns``: the name the PodMonitor
    verifies the listener's certificate for (``certs --name`` puts it in the certificate)."""
    return f"{name}-metrics.{ns}.svc"


def metrics_objects(
    metrics: MetricsServerConfig,
    name: str,
    ns: str,
    selector: dict[str, str],
    reader: str,
    reviewer: dict[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """What makes the metrics listener of the pods ``selector`` selects in ``ns`` scrapeable:

    - a headless Service ``<name>-metrics`` of its port (``metrics``);
    - unless ``insecure``, ``reviewer`` (the RBAC subject of the extender's credentials, when
      ``render`` knows it) bound to ``system:auth-delegator`` (:func:`auth_delegator`): the
      listener's TokenReviews and SubjectAccessReviews;
    - unless ``insecure``: the ClusterRole ``<name>-metrics-reader`` (``get`` of
      ``nonResourceURLs: ["/metrics"]``, what the SubjectAccessReviews ask) bound to the scraper's
      ServiceAccount ``reader`` (``NAMESPACE/NAME``): the scraper presents the bound, projected
      token of its own pods (kubelet-rotated, invalid once the pod is gone), no long-lived token
      Secret;

    and, apart (it needs prometheus-operator's CRD), a ``monitoring.coreos.com/v1`` PodMonitor
    ``<name>`` scraping port ``metrics`` over HTTPS, verifying the listener's certificate with the
    CA in the Secret ``<name>-metrics-tls`` (key ``ca.crt``) for the Service's DNS name
    (:func:`service_dns`). Prometheus sends its own token through its scrape class
    (``authorization.credentialsFile``, docs/operations/metrics.md): a PodMonitor names no file."""
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
        role = f"{name}-metrics-reader"
        reader_ns, _, reader_name = reader.rpartition("/")
        sa = {"kind": "ServiceAccount", "name": reader_name, "namespace": reader_ns}
        objects += [
            cluster_role(role, [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]),
            binding("ClusterRoleBinding", role, "ClusterRole", role, sa),
        ]
        ca = {"secret": {"name": tls_secret(name), "key": "ca.crt"}}
        endpoint |= {"scheme": "https", "tlsConfig": {"ca": ca, "serverName": service_dns(name, ns)}}
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


def deployed_metrics(config: Configuration, name: str) -> Configuration:
    """``config`` as the pods of the Deployment ``name`` run it: its metrics listener (if any)
    without host files: no ``clientCAFile``, no ``kubeconfig`` (the in-cluster service account of
    ``cluster:``), and unless ``insecure`` the certificate of the Secret ``<name>-metrics-tls``
    mounted at :data:`METRICS_TLS_DIR`. Raises :class:`RenderError` for a listener that needs
    credentials and a configuration without ``cluster:``."""
    metrics = config.server.metrics_listener
    if metrics is None:
        return config
    if not metrics.insecure and config.cluster is None:
        raise RenderError(
            "server.metrics: the Deployments' metrics listener reviews its callers with the in-cluster service "
            "account of the cluster: section: add one, or set server.metrics.insecure: true (or enabled: false)"
        )
    tls = None
    if not metrics.insecure:
        tls = MetricsTLSConfig.model_validate(
            {"certFile": f"{METRICS_TLS_DIR}/tls.crt", "keyFile": f"{METRICS_TLS_DIR}/tls.key"}
        )
    plain = metrics.model_copy(update={"tls": tls, "client_ca_file": None, "kubeconfig": None})
    return config.model_copy(update={"server": config.server.model_copy(update={"metrics": plain})})


def tls_volume(config: Configuration, name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The volume and mount of the Secret ``<name>-metrics-tls`` (:func:`deployed_metrics`),
    readable by the pods' group (``fsGroup``: :func:`~app.deploy.objects.scheduler_deployment`):
    none for an insecure listener or none at all."""
    metrics = config.server.metrics_listener
    if metrics is None or metrics.insecure:
        return [], []
    volume = {"name": "metrics-tls", "secret": {"secretName": tls_secret(name), "defaultMode": 0o440}}
    return [volume], [{"name": "metrics-tls", "mountPath": METRICS_TLS_DIR, "readOnly": True}]


def metrics_files_of(config: Configuration, name: str, ns: str, reader: str, source: str, where: str) -> dict[str, str]:
    """``metrics.yaml`` and ``podmonitor.yaml`` of a Deployment target whose pods run as the
    ServiceAccount ``name`` (empty without the listener); ``reader``: the scraper's
    ServiceAccount (``NAMESPACE/NAME``)."""
    metrics = config.server.metrics_listener
    if metrics is None:
        return {}
    sa = {"kind": "ServiceAccount", "name": name, "namespace": ns}
    objects, monitor = metrics_objects(metrics, name, ns, pod_labels(name), reader, sa)
    return {
        "metrics.yaml": header(
            f"{where}metrics.yaml: the metrics listener's Service, the right of `{name}` to review its callers and "
            f"the scraper's ({reader}) right to read /metrics. The pods mount the Secret {tls_secret(name)} (tls.crt, "
            f"tls.key, ca.crt): make it first from `scheduler-extender certs --name {service_dns(name, ns)}` "
            "(docs/operations/metrics.md).",
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


def deployment_files(
    files: dict[str, str],
    config: Configuration,
    registry: Registry,
    name: str,
    ns: str,
    reader: str,
    source: str,
    where: str,
    what: str,
) -> tuple[dict[str, str], list[str]]:
    """A Deployment target's files (``where``: its directory): its own ``files`` (each YAML
    text) plus its PodDisruptionBudget, with headers saying ``what`` it is, and
    :func:`deployment_extras`; and the kustomization's ``resources`` (the PodMonitor and the CRD
    are not: they need CRDs, and deleting the CRD deletes every PodGroup)."""
    files = dict(files)
    budget = pod_disruption_budget(name, ns)
    if budget is not None:
        files["poddisruptionbudget.yaml"] = dump(budget)
    out = {k: header(f"{where}{k}: {what}", source) + v for k, v in files.items()}
    extras = deployment_extras(config, registry, name, ns, reader, source, where)
    out.update(extras)
    resources = sorted([*files, *(["metrics.yaml"] if "metrics.yaml" in extras else [])])
    return out, resources


def deployment_extras(
    config: Configuration, registry: Registry, name: str, ns: str, reader: str, source: str, where: str
) -> dict[str, str]:
    """The files a Deployment target (``where``: its directory) carries beside its own:
    ``metrics.yaml`` and ``podmonitor.yaml`` with the metrics listener (its pods run as the
    ServiceAccount ``name``), ``podgroup-crd.yaml`` when a plugin reads PodGroups."""
    out = metrics_files_of(config, name, ns, reader, source, where)
    if uses_podgroups(config, registry):
        out["podgroup-crd.yaml"] = podgroup_crd_file(f"{where}podgroup-crd.yaml", source)
    return out

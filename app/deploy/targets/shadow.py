"""``render --target shadow``: ``shadow/``, the shadow scheduler (``python -m app shadow``) beside
the cluster's kube-scheduler: one replica (no leader election: it writes nothing, so two would
only record twice) of a Deployment running the configuration's first profile on every bind of
``default-scheduler``, with its ServiceAccount and a ClusterRole of ``get``, ``list`` and ``watch``
only (:func:`~app.deploy.rbac.shadow_roles`: no Binding, no ``pods/status``, no Event, no Lease).

The shadow serves ``/healthz``, ``/readyz``, ``/metrics``, ``/explain`` and ``/shadow`` on its one
listener, plain HTTP on the pod's address (``server.port``): no metrics listener, whose reviews of
callers would need ``create`` of TokenReviews and SubjectAccessReviews; the pod carries the
``prometheus.io/*`` scrape annotations of it. Reach ``/shadow`` with ``kubectl port-forward``.
"""

from __future__ import annotations

from typing import Any

from app.config import Configuration
from app.deploy.objects import (
    RenderError,
    RenderOptions,
    dump,
    extender_resources,
    header,
    kustomization,
    meta,
    pod_labels,
    security_context,
)
from app.deploy.rbac import shadow_roles
from app.framework.registry import Registry

NAME = "shadow"
FILES = ("shadow/",)
#: The Deployment, its ServiceAccount and its roles.
SHADOW_NAME = "scheduler-extender-shadow"
#: Where the pod mounts its configuration (the ConfigMap ``<name>-config``).
CONFIG_DIR = "/etc/scheduler-extender"


def shadow_config(config: Configuration) -> dict[str, Any]:
    """The configuration the pod runs: listening on every address of the pod (the probes and the
    scraper reach it), without TLS files or a metrics listener (see the module doc), the cluster
    state through the in-cluster service account."""
    server = config.server.model_copy(update={"host": "0.0.0.0", "tls": None, "metrics": None})
    assert config.cluster is not None
    cluster = config.cluster.model_copy(update={"kubeconfig": None, "context": None, "leader_election": None})
    mounted = config.model_copy(update={"server": server, "cluster": cluster})
    doc: dict[str, Any] = mounted.model_dump(mode="json", by_alias=True, exclude_none=True)
    return doc


def shadow_deployment(config: Configuration, options: RenderOptions) -> dict[str, Any]:
    """The Deployment: one replica, the shadow command, probes of ``/healthz`` and ``/readyz`` on
    the ``http`` port, scrape annotations, the RuntimeDefault seccomp profile."""
    port = config.server.port
    labels = pod_labels(SHADOW_NAME)
    container = {
        "name": "shadow",
        "image": options.extender_image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python", "-m", "app", "shadow"],
        "args": ["--config", f"{CONFIG_DIR}/config.yaml"],
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
        "startupProbe": _probe("/healthz", 2, 30),
        "livenessProbe": _probe("/healthz", 10, 3),
        "readinessProbe": _probe("/readyz", 10, 3),
        "resources": extender_resources(config),
        "securityContext": security_context(),
        "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}],
    }
    annotations = {"prometheus.io/scrape": "true", "prometheus.io/port": str(port), "prometheus.io/path": "/metrics"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(SHADOW_NAME, options.namespace),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": annotations},
                "spec": {
                    "serviceAccountName": SHADOW_NAME,
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                    "volumes": [{"name": "config", "configMap": {"name": f"{SHADOW_NAME}-config"}}],
                },
            },
        },
    }


def _probe(path: str, period: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": "http", "scheme": "HTTP"},
        "periodSeconds": period,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }


def files(config: Configuration, registry: Registry, options: RenderOptions, source: str) -> dict[str, str]:
    """The target's files (:data:`FILES`) as ``{relative path: text}``. Raises :class:`RenderError`
    for a configuration without ``cluster:`` (the shadow reads the cluster state)."""
    if config.cluster is None:
        raise RenderError(
            "--target shadow: the shadow scheduler reads the cluster state: add a cluster: section to the configuration"
        )
    ns = options.namespace
    sa = {"kind": "ServiceAccount", "name": SHADOW_NAME, "namespace": ns}
    profile = config.profiles[0].name
    what = f"the shadow scheduler `{SHADOW_NAME}` (profile {profile}, beside default-scheduler; read-only)."
    own = {
        "deployment.yaml": dump(shadow_deployment(config, options)),
        "serviceaccount.yaml": dump({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(SHADOW_NAME, ns)}),
        "rbac.yaml": dump(*shadow_roles(config, registry, SHADOW_NAME, sa)),
    }
    out = {f"shadow/{k}": header(f"shadow/{k}: {what}", source) + v for k, v in own.items()}
    out["shadow/scheduler-extender-config.yaml"] = header(
        "shadow/scheduler-extender-config.yaml: the shadow scheduler's configuration (a ConfigMap generated by "
        "kustomization.yaml; credentials: the in-cluster service account).",
        source,
    ) + dump(shadow_config(config))
    out["shadow/kustomization.yaml"] = header(
        "`kubectl apply -k` this directory (the ConfigMap's name carries a hash of its content).", source
    ) + dump(kustomization(sorted(own), {f"{SHADOW_NAME}-config": ["config.yaml=scheduler-extender-config.yaml"]}, ns))
    return out

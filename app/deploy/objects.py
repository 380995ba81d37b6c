"""The shared builders of ``render``'s Kubernetes objects: the YAML writer and headers, object
metadata, RBAC objects, the containers and pods of the install targets (:mod:`app.deploy.targets`),
and the Deployment the Deployment targets run (``apps/v1``, with its PodDisruptionBudget).

Everything here returns plain dicts in the API's field order (``rbac.authorization.k8s.io/v1``,
``v1``, ``apps/v1``, ``policy/v1``), so a render is deterministic and diffable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from app import __version__
from app.config import Configuration, MetricsServerConfig
from app.deploy.sizing import CLUSTER_MEMORY_BYTES, IDLE_MEMORY_BYTES, memory_limit_bytes
from app.framework.errors import SchedulerExtenderError

#: Where the install guide puts each file on a kubeadm control-plane node.
SCHEDULER_CONFIG_PATH = "/etc/kubernetes/kube-scheduler-config.yaml"


#: Where the install guide puts the kubeadm patch (any directory given to ``--patches``).
KUBEADM_PATCHES_DIR = "/etc/kubernetes/scheduler-extender/patches"


SCHEDULER_KUBECONFIG_PATH = "/etc/kubernetes/scheduler.conf"


EXTENDER_CONFIG_PATH = "/etc/kubernetes/scheduler-extender/config.yaml"


EXTENDER_KUBECONFIG_PATH = "/etc/kubernetes/scheduler-extender.conf"


#: The user name in the extender's client certificate (``kubeadm kubeconfig user --client-name``).
EXTENDER_USER = "system:scheduler-extender"


#: Paths inside the second-scheduler pod (ConfigMap mounts).
SECOND_SCHEDULER_CONFIG_DIR = "/etc/kubernetes/kube-scheduler"


SECOND_EXTENDER_CONFIG_DIR = "/etc/scheduler-extender"


#: The image's non-root user (Dockerfile ``USER``).
EXTENDER_UID = 65532


# kube-scheduler's secure port (--secure-port default) and probe paths served by every v1 release.
KUBE_SCHEDULER_PORT = 10259


class RenderError(SchedulerExtenderError, ValueError):
    """The configuration cannot be deployed as asked; the message says what to change."""


#: The extender image ``make image`` builds by default; no registry serves it.
LOCAL_IMAGE = f"scheduler-extender:{__version__}"


#: The kube-scheduler release the manifests pin by default (the newest tested: the lab of the
#: real-control-plane tier runs kube-apiserver and kube-scheduler v1.36.3).
DEFAULT_KUBERNETES_VERSION = "v1.36.3"


#: The ServiceAccount of the Prometheus that reads ``/metrics`` by default: kube-prometheus's.
DEFAULT_METRICS_READER = "monitoring/prometheus-k8s"


@dataclass(frozen=True)
class RenderOptions:
    """Parameters that are not part of the service configuration.

    ``kubernetes_version``: the kube-scheduler image tag (must match the control plane).
    ``extender_image``: this service's image (``Dockerfile``). ``scheduler_name``: add a second
    profile with this ``schedulerName`` to the kubeadm KubeSchedulerConfiguration (the classic
    multi-profile setup: pods choose it with ``spec.schedulerName``); extenders apply to every
    profile, as in kube-scheduler. ``second_scheduler_name``: the ``schedulerName`` (and lease name)
    of the ``second-scheduler/`` Deployment. ``namespace``: where that Deployment runs.
    ``metrics_reader``: the ServiceAccount (``NAMESPACE/NAME``) of the scraper allowed to read
    ``/metrics`` (default: kube-prometheus's Prometheus, :data:`DEFAULT_METRICS_READER`).
    """

    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    kube_scheduler_image: str = "registry.k8s.io/kube-scheduler"
    extender_image: str = LOCAL_IMAGE
    scheduler_name: str | None = None
    second_scheduler_name: str = "extender-scheduler"
    namespace: str = "kube-system"
    metrics_reader: str = DEFAULT_METRICS_READER


class _Dumper(yaml.SafeDumper):
    """Block style, insertion order, multi-line strings as literal blocks, and never anchors and
    aliases (``&id001``/``*id001``) for objects that occur twice: each is written out in full."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump(*docs: Any) -> str:
    """YAML for ``docs`` (one document, or several each after ``---``), keys in given order. A
    document whose last key is ``rules`` with reasons (:class:`~app.deploy.rbac.Rules`: a list
    with ``whys``) gets each rule's reasons as comments above it."""
    texts = [_dump_doc(doc) for doc in docs]
    return texts[0] if len(texts) == 1 else "".join(f"---\n{text}" for text in texts)


def _yaml(doc: Any) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False)


def _dump_doc(doc: Any) -> str:
    rules = doc.get("rules") if isinstance(doc, dict) else None
    whys: list[list[str]] | None = getattr(rules, "whys", None)
    if rules is None or whys is None or not rules or list(doc)[-1] != "rules":
        return _yaml(doc if whys is None else {**doc, "rules": list(rules or [])})
    text = _yaml({k: v for k, v in doc.items() if k != "rules"}) + "rules:\n"
    for rule, why in zip(rules, whys, strict=True):
        text += "".join(f"# {line}\n" for line in why) + _yaml([dict(rule)])
    return text


def header(what: str, source: str) -> str:
    return (
        f"# {what}\n# Rendered by `python -m app render` from {source} (scheduler-extender {__version__}).\n"
        "# Do not edit: change the service configuration and render again.\n"
    )


def meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = {"app.kubernetes.io/name": "scheduler-extender", "app.kubernetes.io/part-of": "scheduler-extender"}
    return meta


def kustomization(resources: list[str], config_maps: dict[str, list[str]], ns: str) -> dict[str, Any]:
    """A ``kustomization.yaml`` applying ``resources`` and generating one ConfigMap per
    ``config_maps`` entry (name -> kustomize ``files`` entries) in ``ns``, labelled as
    :func:`meta` labels: kustomize's ``configMapGenerator`` names each with a hash of its content
    and rewrites the references to it, so a new render rolls the pods on the next ``apply -k``."""
    generators = [
        {"name": name, "namespace": ns, "files": files, "options": {"labels": meta(name, ns)["labels"]}}
        for name, files in config_maps.items()
    ]
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
        "configMapGenerator": generators,
    }


def cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": meta(name),
        "rules": rules,
    }


def binding(
    kind: str, name: str, role_kind: str, role: str, subject: dict[str, Any], ns: str | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta(name, ns),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [subject],
    }


def security_context() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": EXTENDER_UID,
        "runAsGroup": EXTENDER_UID,
    }


def host_file(name: str, path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    volume = {"name": name, "hostPath": {"path": path, "type": "File"}}
    mount = {"name": name, "mountPath": path, "readOnly": True}
    return volume, mount


def tls_files(config: Configuration, side: str) -> list[tuple[str, str]]:
    tls = config.server.tls
    if tls is None:
        return []
    if side == "server":
        files = [("tls-cert", tls.cert_file), ("tls-key", tls.key_file), ("tls-client-ca", tls.client_ca_file)]
    else:
        c = tls.scheduler
        files = [("extender-ca", c.ca_file), ("extender-client-cert", c.cert_file), ("extender-client-key", c.key_file)]
    return [(n, p) for n, p in files if p]


#: The labels of the extender's static pod (what its metrics Service and PodMonitor select).
STATIC_POD_LABELS = {"component": "scheduler-extender", "tier": "control-plane"}


def metrics_host_files(config: Configuration) -> list[tuple[str, str]]:
    """The host files the metrics listener reads in a static pod: its certificate and key, its
    client CA and its own kubeconfig, when set."""
    metrics = config.server.metrics_listener
    if metrics is None:
        return []
    files = [("metrics-client-ca", metrics.client_ca_file), ("metrics-kubeconfig", metrics.kubeconfig)]
    if metrics.tls is not None:
        files = [("metrics-tls-cert", metrics.tls.cert_file), ("metrics-tls-key", metrics.tls.key_file), *files]
    return [(n, p) for n, p in files if p]


def kube_scheduler_container(options: RenderOptions, args: list[str], **rest: Any) -> dict[str, Any]:
    """kube-scheduler's container: the image from ``options``, ``kube-scheduler`` plus ``args``."""
    return {
        "name": "kube-scheduler",
        "image": f"{options.kube_scheduler_image}:{options.kubernetes_version}",
        "imagePullPolicy": "IfNotPresent",
        "command": ["kube-scheduler", *args],
        **rest,
    }


def probe(config: Configuration, path: str, period: int, failures: int) -> dict[str, Any]:
    # With TLS the kubelet probes over HTTPS without a client certificate (it verifies none
    # either): client certificates are optional at the handshake and only bind requires one, so
    # the probe reaches the same event loop as the verbs and detects a stalled server.
    tls = config.server.tls
    return {
        "httpGet": {
            "host": "127.0.0.1",
            "path": path,
            "port": config.server.port,
            "scheme": "HTTPS" if tls is not None else "HTTP",
        },
        "periodSeconds": period,
        "timeoutSeconds": 2,
        "failureThreshold": failures,
    }


def container_ports(config: Configuration) -> list[dict[str, Any]]:
    """The extender's container ports: ``http`` (the verbs) and, with the metrics listener,
    ``metrics`` (what the Service and the PodMonitor name)."""
    ports = [{"name": "http", "containerPort": config.server.port, "protocol": "TCP"}]
    metrics = config.server.metrics_listener
    if metrics is not None:
        ports.append({"name": "metrics", "containerPort": metrics.port, "protocol": "TCP"})
    return ports


def extender_container(config: Configuration, options: RenderOptions, config_path: str) -> dict[str, Any]:
    return {
        "name": "scheduler-extender",
        "image": options.extender_image,
        "imagePullPolicy": "IfNotPresent",
        "args": ["--config", config_path],
        "ports": container_ports(config),
        "startupProbe": probe(config, "/healthz", 1, 30),
        "livenessProbe": probe(config, "/healthz", 10, 3),
        "readinessProbe": probe(config, "/readyz", 5, 3),
        "resources": extender_resources(config),
        "securityContext": security_context(),
    }


def extender_resources(config: Configuration) -> dict[str, Any]:
    """The extender container's requests and limits: memory request the idle footprint (plus the
    cluster cache), memory limit :func:`~app.deploy.sizing.memory_limit_bytes`, which grows with
    ``server.maxInFlightBytes`` so that a pod that admits a body can answer it."""
    mib = 1024 * 1024
    idle = IDLE_MEMORY_BYTES + (CLUSTER_MEMORY_BYTES if config.cluster is not None else 0)
    limit = -(-memory_limit_bytes(config) // mib)
    return {"requests": {"cpu": "100m", "memory": f"{idle // mib}Mi"}, "limits": {"memory": f"{limit}Mi"}}


def scrape_annotations(metrics: MetricsServerConfig) -> dict[str, str]:
    """The ``prometheus.io/*`` pod annotations of annotation-based scraping (the ``kubernetes-pods``
    job of Prometheus's example configuration): scrape, port, scheme (``https`` unless
    ``insecure``) and path. The scraper authenticates with its own service account token."""
    return {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(metrics.port),
        "prometheus.io/scheme": "http" if metrics.insecure else "https",
        "prometheus.io/path": "/metrics",
    }


#: Replicas of the scheduler Deployments: kube-scheduler (second-scheduler/) or this service
#: (scheduler/) elects a leader with its Lease; the other replica stands by.
SCHEDULER_REPLICAS = 2


def pod_labels(name: str) -> dict[str, str]:
    """The labels of a scheduler Deployment's pods (its selector, and its metrics Service's)."""
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/component": "scheduler"}


def scheduler_deployment(
    name: str,
    ns: str,
    containers: list[dict[str, Any]],
    volumes: list[dict[str, Any]],
    metrics: MetricsServerConfig | None = None,
) -> dict[str, Any]:
    """A scheduler's Deployment: :data:`SCHEDULER_REPLICAS` replicas (they elect a leader), its
    ServiceAccount ``name``, ``system-cluster-critical``, the RuntimeDefault seccomp profile; with
    two replicas or more, spread over nodes (a topology spread constraint on
    ``kubernetes.io/hostname``, ``maxSkew`` 1, ``DoNotSchedule``, tainted nodes not counted: one
    node going away never takes both, and a one-node cluster still runs both); with ``metrics``,
    the pods' scrape annotations (:func:`scrape_annotations`)."""
    labels = pod_labels(name)
    template: dict[str, Any] = {"labels": labels}
    if metrics is not None:
        template["annotations"] = scrape_annotations(metrics)
    spec: dict[str, Any] = {
        "serviceAccountName": name,
        "priorityClassName": "system-cluster-critical",
        # fsGroup: the Secret volumes (the metrics listener's key) are readable by the pods' group
        "securityContext": {"fsGroup": EXTENDER_UID, "seccompProfile": {"type": "RuntimeDefault"}},
    }
    if SCHEDULER_REPLICAS >= 2:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": labels},
                "nodeTaintsPolicy": "Honor",
            }
        ]
    spec |= {"containers": containers, "volumes": volumes}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(name, ns),
        "spec": {
            "replicas": SCHEDULER_REPLICAS,
            "selector": {"matchLabels": labels},
            "template": {"metadata": template, "spec": spec},
        },
    }


def pod_disruption_budget(name: str, ns: str) -> dict[str, Any] | None:
    """The PodDisruptionBudget (``policy/v1``) of the scheduler Deployment ``name``: at most one of
    its pods evicted at a time (``maxUnavailable: 1``), so a node drain never stops scheduling;
    ``None`` with fewer than two replicas (a budget would then block every drain)."""
    if SCHEDULER_REPLICAS < 2:
        return None
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta(name, ns),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": pod_labels(name)}},
    }


def deployment_probes(config: Configuration) -> dict[str, Any]:
    """The probes of a Deployment's service container (its verb listener stays on the pod's
    loopback, which the kubelet does not reach): ``httpGet`` of ``/healthz`` and ``/readyz`` on
    the metrics listener's port ``metrics`` (on the pod's address; both paths are served without
    authentication, ``alwaysAllowPaths``; HTTPS unless ``insecure``: the kubelet verifies no
    certificate), as kube-scheduler's own probes use its secure port. Without the listener
    (``server.metrics.enabled: false``) nothing on the pod's address answers: the probes run a
    request to the loopback inside the container instead (one interpreter per probe)."""
    metrics = config.server.metrics_listener
    timing = {
        "startupProbe": {"periodSeconds": 2, "timeoutSeconds": 2, "failureThreshold": 30},
        "livenessProbe": {"periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 3},
        "readinessProbe": {"periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 3},
    }
    paths = {"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"}
    if metrics is not None:
        scheme = "HTTP" if metrics.insecure else "HTTPS"
        return {
            kind: {"httpGet": {"path": paths[kind], "port": "metrics", "scheme": scheme}, **timing[kind]}
            for kind in timing
        }
    script = (
        "import sys, urllib.request; "
        f"sys.exit(urllib.request.urlopen('http://127.0.0.1:{config.server.port}{{}}', timeout=2).status != 200)"
    )
    return {
        kind: {"exec": {"command": ["python", "-c", script.format(paths[kind])]}, **timing[kind]} for kind in timing
    }

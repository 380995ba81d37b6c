"""The files both control-plane targets (``kubeadm`` and ``static-pod``) write: kube-scheduler's
``KubeSchedulerConfiguration`` wired to the extender, the extender's hostNetwork static pod and
its configuration, its RBAC, its metrics listener's objects and the PodGroup CRD. Rendered from
the configuration with :func:`~app.deploy.wiring.secure_defaults` (mutual TLS for bind, binds
while this node's kube-scheduler holds its Lease)."""

from __future__ import annotations

from typing import Any

from app.config import Configuration
from app.deploy.crds import podgroup_crd_file, uses_podgroups
from app.deploy.metrics import metrics_objects, tls_secret
from app.deploy.objects import (
    EXTENDER_CONFIG_PATH,
    EXTENDER_KUBECONFIG_PATH,
    EXTENDER_USER,
    SCHEDULER_CONFIG_PATH,
    SCHEDULER_KUBECONFIG_PATH,
    STATIC_POD_LABELS,
    RenderError,
    RenderOptions,
    dump,
    extender_container,
    header,
    host_file,
    metrics_host_files,
    scrape_annotations,
    tls_files,
)
from app.deploy.rbac import EXTENDER, roles
from app.deploy.wiring import extender_kubeconfig, scheduler_configuration, secure_defaults, service_config
from app.framework.registry import Registry

#: The files of both control-plane targets (``podgroup-crd.yaml`` only when a profile enables
#: Coscheduling, ``scheduler-extender-rbac.yaml`` only with ``cluster:``,
#: ``scheduler-extender-metrics.yaml`` and ``-podmonitor.yaml`` only with the metrics listener).
FILES = (
    "kube-scheduler-config.yaml",
    "scheduler-extender.yaml",
    "scheduler-extender-config.yaml",
    "scheduler-extender-rbac.yaml",
    "scheduler-extender-metrics.yaml",
    "scheduler-extender-podmonitor.yaml",
    "podgroup-crd.yaml",
)


def extender_static_pod(config: Configuration, options: RenderOptions) -> dict[str, Any]:
    """The service's static pod: hostNetwork on 127.0.0.1, system-node-critical, non-root,
    read-only root filesystem, no capabilities; hostPath mounts for its config, its kubeconfig
    (with ``cluster:``) and TLS files. With the metrics listener: its port (named ``metrics``, on
    the host's addresses: hostNetwork), its files and the scrape annotations."""
    files = [("config", EXTENDER_CONFIG_PATH)]
    kubeconfig = extender_kubeconfig(config)
    if kubeconfig is not None:
        files.append(("kubeconfig", kubeconfig))
    files += tls_files(config, "server")
    mounted = {p for _, p in files}
    files += [(n, p) for n, p in metrics_host_files(config) if p not in mounted]  # a file mounted once
    volumes, mounts = zip(*(host_file(n, p) for n, p in files), strict=True)
    container = extender_container(config, options, EXTENDER_CONFIG_PATH)
    container["volumeMounts"] = list(mounts)
    metadata: dict[str, Any] = {"name": "scheduler-extender", "namespace": "kube-system", "labels": STATIC_POD_LABELS}
    metrics = config.server.metrics_listener
    if metrics is not None:
        metadata["annotations"] = scrape_annotations(metrics)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "hostNetwork": True,
            "priorityClassName": "system-node-critical",
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [container],
            "volumes": list(volumes),
        },
    }


def files(config: Configuration, registry: Registry, options: RenderOptions, source: str) -> dict[str, str]:
    """The control-plane files (:data:`FILES`) of ``config`` (with the metrics listener's defaults
    applied: :func:`~app.deploy.metrics.metrics_defaults`) as ``{relative path: text}``. Raises
    :class:`RenderError` for ``--scheduler-name default-scheduler`` and TLS kube-scheduler
    cannot use."""
    if options.scheduler_name == "default-scheduler":
        raise RenderError("--scheduler-name: 'default-scheduler' is the default profile already")
    names = ["default-scheduler", options.scheduler_name] if options.scheduler_name else None
    config = secure_defaults(config)
    kubeconfig = extender_kubeconfig(config)
    out: dict[str, str] = {}
    out["kube-scheduler-config.yaml"] = header(
        f"KubeSchedulerConfiguration for kubeadm: copy to {SCHEDULER_CONFIG_PATH}.", source
    ) + dump(
        scheduler_configuration(
            config,
            kubeconfig=SCHEDULER_KUBECONFIG_PATH,
            leader_election={"leaderElect": True},
            scheduler_names=names,
        )
    )
    out["scheduler-extender.yaml"] = header(
        "The extender's static pod: copy to /etc/kubernetes/manifests/scheduler-extender.yaml.", source
    ) + dump(extender_static_pod(config, options))
    out["scheduler-extender-config.yaml"] = header(
        f"The extender's configuration as its static pod mounts it: copy to {EXTENDER_CONFIG_PATH}.", source
    ) + dump(service_config(config, kubeconfig=kubeconfig))
    user = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": EXTENDER_USER}
    rbac = roles(config, registry, EXTENDER, "scheduler-extender", user)
    if rbac:
        out["scheduler-extender-rbac.yaml"] = header(
            f"What the extender may do with the credentials in {EXTENDER_KUBECONFIG_PATH}: kubectl apply -f.",
            source,
        ) + dump(*rbac)
    metrics = config.server.metrics_listener
    if metrics is not None:
        # the reviews use the credentials of cluster: (EXTENDER_USER) unless the listener has its own
        reviewer = user if config.cluster is not None and metrics.kubeconfig is None else None
        name = "scheduler-extender"
        reader = options.metrics_reader
        objects, monitor = metrics_objects(metrics, name, "kube-system", STATIC_POD_LABELS, reader, reviewer)
        out["scheduler-extender-metrics.yaml"] = header(
            "The extender's metrics listener: its Service (the static pods on each control-plane node), the "
            f"extender's right to review its callers ({EXTENDER_USER}) and the scraper's ({reader}) right to read "
            f"/metrics: kubectl apply -f. The PodMonitor verifies the listener's certificate with ca.crt of the Secret "
            f"{tls_secret(name)} (docs/operations/metrics.md).",
            source,
        ) + dump(*objects)
        out["scheduler-extender-podmonitor.yaml"] = header(
            "A prometheus-operator PodMonitor of the extender's metrics listener: kubectl apply -f it where "
            "prometheus-operator runs (it needs the monitoring.coreos.com CRDs).",
            source,
        ) + dump(monitor)
    if uses_podgroups(config, registry):
        out["podgroup-crd.yaml"] = podgroup_crd_file("podgroup-crd.yaml", source)
    return out

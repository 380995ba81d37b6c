"""``render --target static-pod``: the control-plane files (:mod:`.control_plane`) and a whole
kube-scheduler static pod (``kube-scheduler.yaml``), for a control plane kubeadm does not manage."""

from __future__ import annotations

from typing import Any

from app.config import Configuration
from app.deploy.objects import (
    KUBE_SCHEDULER_PORT,
    SCHEDULER_KUBECONFIG_PATH,
    RenderOptions,
    dump,
    header,
    host_file,
    kube_scheduler_container,
)
from app.deploy.targets import control_plane
from app.deploy.wiring import scheduler_wiring, secure_defaults
from app.framework.registry import Registry

NAME = "static-pod"
FILES = ("kube-scheduler.yaml", *control_plane.FILES)


def kube_scheduler_static_pod(config: Configuration, options: RenderOptions) -> dict[str, Any]:
    """kubeadm's kube-scheduler static pod (cmd/kubeadm/app/phases/controlplane/manifests.go) with
    ``--config``, the config file's hostPath volume and mount, and the TLS files kube-scheduler
    needs to reach the extender; the image tag is ``options.kubernetes_version``."""
    arg, wiring = scheduler_wiring(config)
    files = [("kubeconfig", SCHEDULER_KUBECONFIG_PATH), *wiring]
    volumes, mounts = zip(*(host_file(n, p) for n, p in files), strict=True)
    probe = {"host": "127.0.0.1", "path": "/healthz", "port": KUBE_SCHEDULER_PORT, "scheme": "HTTPS"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "kube-scheduler",
            "namespace": "kube-system",
            "labels": {"component": "kube-scheduler", "tier": "control-plane"},
        },
        "spec": {
            "hostNetwork": True,
            "priority": 2000001000,
            "priorityClassName": "system-node-critical",
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [
                kube_scheduler_container(
                    options,
                    [
                        f"--authentication-kubeconfig={SCHEDULER_KUBECONFIG_PATH}",
                        f"--authorization-kubeconfig={SCHEDULER_KUBECONFIG_PATH}",
                        "--bind-address=127.0.0.1",
                        arg,
                    ],
                    livenessProbe={
                        "httpGet": probe,
                        "initialDelaySeconds": 10,
                        "periodSeconds": 10,
                        "timeoutSeconds": 15,
                        "failureThreshold": 8,
                    },
                    startupProbe={
                        "httpGet": probe,
                        "initialDelaySeconds": 10,
                        "periodSeconds": 10,
                        "timeoutSeconds": 15,
                        "failureThreshold": 24,
                    },
                    resources={"requests": {"cpu": "100m"}},
                    volumeMounts=list(mounts),
                )
            ],
            "volumes": list(volumes),
        },
    }


def files(config: Configuration, registry: Registry, options: RenderOptions, source: str) -> dict[str, str]:
    """The target's files (:data:`FILES`) as ``{relative path: text}``."""
    out = control_plane.files(config, registry, options, source)
    out["kube-scheduler.yaml"] = header(
        "kube-scheduler static pod: copy to /etc/kubernetes/manifests/kube-scheduler.yaml.", source
    ) + dump(kube_scheduler_static_pod(secure_defaults(config), options))
    return out

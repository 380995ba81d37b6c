"""``render --target kubeadm``: the control-plane files (:mod:`.control_plane`) and ``kubeadm/``,
the upgrade-safe ways to wire kubeadm's own kube-scheduler manifest to the extender (a patch for
``--patches`` and a ``ClusterConfiguration`` snippet, cmd/kubeadm/app/util/patches/patches.go)."""

from __future__ import annotations

from typing import Any

from app.config import Configuration
from app.deploy.objects import KUBEADM_PATCHES_DIR, RenderOptions, dump, header, host_file
from app.deploy.targets import control_plane
from app.deploy.wiring import scheduler_wiring, secure_defaults
from app.framework.registry import Registry

NAME = "kubeadm"
FILES = ("kubeadm/", *control_plane.FILES)


def kubeadm_patch(config: Configuration) -> list[dict[str, Any]]:
    """A JSON patch (RFC 6902) of kubeadm's kube-scheduler static pod that adds ``--config`` and the
    host-file mounts, leaving everything kubeadm wrote: ``kubeadm init|join|upgrade apply --patches
    DIR`` applies ``kube-scheduler0+json.yaml`` to the manifest it generates
    (cmd/kubeadm/app/util/patches/patches.go: target ``kube-scheduler``, patch type ``json``)."""
    arg, files = scheduler_wiring(config)
    ops: list[dict[str, Any]] = [{"op": "add", "path": "/spec/containers/0/command/-", "value": arg}]
    for name, path in files:
        volume, mount = host_file(name, path)
        ops.append({"op": "add", "path": "/spec/volumes/-", "value": volume})
        ops.append({"op": "add", "path": "/spec/containers/0/volumeMounts/-", "value": mount})
    return ops


def kubeadm_cluster_configuration(config: Configuration, options: RenderOptions) -> dict[str, Any]:
    """The ``scheduler:`` part of kubeadm's ``ClusterConfiguration`` that adds ``--config`` and the
    mounts: kept in the ``kubeadm-config`` ConfigMap, so ``kubeadm upgrade apply`` regenerates the
    manifest with them. ``kubeadm.k8s.io/v1beta4`` (extraArgs as name/value pairs) from v1.31,
    ``v1beta3`` (a map) before."""
    arg, files = scheduler_wiring(config)
    name, _, value = arg.removeprefix("--").partition("=")
    minor = int(options.kubernetes_version.split(".")[1])
    volumes = [{"name": n, "hostPath": p, "mountPath": p, "readOnly": True, "pathType": "File"} for n, p in files]
    if minor >= 31:
        extra_args: Any = [{"name": name, "value": value}]
        version = "kubeadm.k8s.io/v1beta4"
    else:
        extra_args = {name: value}
        version = "kubeadm.k8s.io/v1beta3"
    return {
        "apiVersion": version,
        "kind": "ClusterConfiguration",
        "kubernetesVersion": options.kubernetes_version,
        "scheduler": {"extraArgs": extra_args, "extraVolumes": volumes},
    }


def kubeadm_wiring(config: Configuration, options: RenderOptions, source: str) -> dict[str, str]:
    """``kubeadm/``: the upgrade-safe ways to wire kube-scheduler to the extender without replacing
    kubeadm's manifest: ``patches/kube-scheduler0+json.yaml`` (for ``--patches``) and
    ``cluster-configuration.yaml`` (merge its ``scheduler:`` into your ClusterConfiguration)."""
    return {
        "patches/kube-scheduler0+json.yaml": header(
            f"kubeadm --patches {KUBEADM_PATCHES_DIR}: copy to {KUBEADM_PATCHES_DIR}/kube-scheduler0+json.yaml; "
            "adds --config and the mounts to the kube-scheduler manifest kubeadm generates (init, join "
            "--control-plane, upgrade apply/node).",
            source,
        )
        + dump(kubeadm_patch(config)),
        "cluster-configuration.yaml": header(
            "kubeadm ClusterConfiguration: merge its scheduler: section into yours (kubeadm init --config), "
            "or into the kubeadm-config ConfigMap of a running cluster, so that upgrades keep --config.",
            source,
        )
        + dump(kubeadm_cluster_configuration(config, options)),
    }


def files(config: Configuration, registry: Registry, options: RenderOptions, source: str) -> dict[str, str]:
    """The target's files (:data:`FILES`) as ``{relative path: text}``."""
    out = control_plane.files(config, registry, options, source)
    for name, text in kubeadm_wiring(secure_defaults(config), options, source).items():
        out[f"kubeadm/{name}"] = text
    return out

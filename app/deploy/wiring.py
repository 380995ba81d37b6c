"""How kube-scheduler and this service are wired together: the ``extenders:`` of a
``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1``, pkg/scheduler/apis/config/v1),
the service configuration as a pod mounts it, and the secure defaults of the control-plane
targets (mutual TLS, following kube-scheduler's Lease).
"""

from __future__ import annotations

from typing import Any

from app.config import Configuration, LeaderElectionConfig, MetricsTLSConfig, TLSConfig
from app.deploy.objects import (
    EXTENDER_KUBECONFIG_PATH,
    SCHEDULER_CONFIG_PATH,
    RenderError,
    tls_files,
)

VERB_KEYS = {"filter": "filterVerb", "prioritize": "prioritizeVerb", "preempt": "preemptVerb", "bind": "bindVerb"}


def extender_entries(config: Configuration) -> list[dict[str, Any]]:
    """The ``extenders:`` list for ``config``: one entry per profile, at ``/{profile}``, naming
    exactly the verbs the profile serves.

    Raises :class:`RenderError` for TLS without kube-scheduler's CA, or client-certificate TLS
    without kube-scheduler's certificate and key.
    """
    server_tls = config.server.tls
    entries = []
    for profile in config.profiles:
        ext = profile.extender
        scheme = "https" if server_tls is not None else "http"
        entry: dict[str, Any] = {"urlPrefix": f"{scheme}://127.0.0.1:{config.server.port}/{profile.name}"}
        for verb in ("filter", "prioritize", "preempt", "bind"):
            if verb in ext.verbs:
                entry[VERB_KEYS[verb]] = verb
        if "prioritize" in ext.verbs:
            entry["weight"] = ext.weight
        entry["nodeCacheCapable"] = ext.node_cache_capable
        if ext.managed_resources:
            entry["managedResources"] = [
                {"name": r.name, "ignoredByScheduler": r.ignored_by_scheduler} for r in ext.managed_resources
            ]
        entry["ignorable"] = ext.ignorable
        entry["httpTimeout"] = ext.http_timeout
        if server_tls is not None:
            client = server_tls.scheduler
            if not client.ca_file:
                raise RenderError(
                    "server.tls.scheduler.caFile: required with server.tls: without a CA kube-scheduler "
                    "does not verify the extender's certificate (enableHTTPS with no caFile means insecure)"
                )
            if server_tls.client_ca_file and not (client.cert_file and client.key_file):
                raise RenderError(
                    "server.tls.scheduler.certFile/keyFile: required with server.tls.clientCAFile: "
                    "kube-scheduler must present a client certificate"
                )
            tls_config = {"caFile": client.ca_file}
            if client.cert_file and client.key_file:
                tls_config |= {"certFile": client.cert_file, "keyFile": client.key_file}
            if client.server_name:
                tls_config["serverName"] = client.server_name
            entry["enableHTTPS"] = True
            entry["tlsConfig"] = tls_config
        entries.append(entry)
    return entries


def scheduler_configuration(
    config: Configuration,
    *,
    kubeconfig: str | None,
    leader_election: dict[str, Any],
    scheduler_names: list[str] | None,
) -> dict[str, Any]:
    """A ``KubeSchedulerConfiguration`` v1 document wired to ``config``'s profiles."""
    doc: dict[str, Any] = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    if kubeconfig:
        doc["clientConnection"] = {"kubeconfig": kubeconfig}
    doc["leaderElection"] = leader_election
    if scheduler_names:
        doc["profiles"] = [{"schedulerName": name} for name in scheduler_names]
    doc["extenders"] = extender_entries(config)
    return doc


def service_config(config: Configuration, *, kubeconfig: str | None) -> dict[str, Any]:
    """The service configuration as mounted: listening on 127.0.0.1, ``cluster.kubeconfig`` set to
    ``kubeconfig`` (``None``: the in-cluster service account)."""
    server = config.server.model_copy(update={"host": "127.0.0.1"})
    update: dict[str, Any] = {"server": server}
    if config.cluster is not None:
        update["cluster"] = config.cluster.model_copy(update={"kubeconfig": kubeconfig, "context": None})
    mounted = config.model_copy(update=update)
    return mounted.model_dump(mode="json", by_alias=True, exclude_none=True)


#: Where ``render`` expects ``python -m app certs`` to have written the PKI on each control-plane
#: node when it turns TLS on by default (:func:`secure_defaults`).
PKI_DIR = "/etc/kubernetes/scheduler-extender/pki"


def secure_defaults(config: Configuration) -> Configuration:
    """The configuration the static pods run: for a configuration that serves ``bind`` and sets
    neither ``server.tls`` nor ``server.insecureBind``, mutual TLS with the files of
    ``python -m app certs --out`` :data:`PKI_DIR` (kube-scheduler's extender client can
    authenticate only with a client certificate); with ``cluster:`` and bind, binds only while
    this node's kube-scheduler holds the ``kube-system/kube-scheduler`` Lease, unless
    ``cluster.leaderElection`` says otherwise; a metrics listener over HTTPS without
    ``server.metrics.tls`` serves the server certificate of :data:`PKI_DIR` (which ``certs``
    issues for the metrics Service's name too), so that a scraper can verify it with ``ca.crt``."""
    update: dict[str, Any] = {}
    server = config.server
    metrics = server.metrics_listener
    if metrics is not None and not metrics.insecure and metrics.tls is None:
        cert = MetricsTLSConfig.model_validate(
            {"certFile": f"{PKI_DIR}/server.crt", "keyFile": f"{PKI_DIR}/server.key"}
        )
        server = server.model_copy(update={"metrics": metrics.model_copy(update={"tls": cert})})
        update["server"] = server
    if any("bind" in p.extender.verbs for p in config.profiles):
        if server.tls is None and not server.insecure_bind:
            tls = TLSConfig.model_validate(
                {
                    "certFile": f"{PKI_DIR}/server.crt",
                    "keyFile": f"{PKI_DIR}/server.key",
                    "clientCAFile": f"{PKI_DIR}/ca.crt",
                    "scheduler": {
                        "caFile": f"{PKI_DIR}/ca.crt",
                        "certFile": f"{PKI_DIR}/scheduler.crt",
                        "keyFile": f"{PKI_DIR}/scheduler.key",
                    },
                }
            )
            update["server"] = server.model_copy(update={"tls": tls})
        if config.cluster is not None and config.cluster.leader_election is None:
            update["cluster"] = config.cluster.model_copy(update={"leader_election": LeaderElectionConfig()})
    return config.model_copy(update=update) if update else config


def extender_kubeconfig(config: Configuration) -> str | None:
    """The kubeconfig the static pod mounts and its config names (``None`` without ``cluster:``)."""
    if config.cluster is None:
        return None
    return config.cluster.kubeconfig or EXTENDER_KUBECONFIG_PATH


def scheduler_wiring(config: Configuration) -> tuple[str, list[tuple[str, str]]]:
    """What kube-scheduler needs beyond kubeadm's manifest: the ``--config`` argument and the host
    files to mount (the configuration, and the TLS files that reach the extender)."""
    return f"--config={SCHEDULER_CONFIG_PATH}", [
        ("scheduler-config", SCHEDULER_CONFIG_PATH),
        *tls_files(config, "scheduler"),
    ]

"""``python -m app render``: every deployment artefact, generated from the service configuration.

One :class:`~app.config.Configuration` gives (file names relative to ``--out``):

- ``kube-scheduler-config.yaml``: ``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1``)
  with one ``extenders:`` entry per profile, for a kubeadm control plane
  (host path :data:`SCHEDULER_CONFIG_PATH`).
- ``kube-scheduler.yaml``: kubeadm's kube-scheduler static pod with ``--config`` and the config
  file's hostPath volume and mount (host path ``/etc/kubernetes/manifests/kube-scheduler.yaml``).
- ``scheduler-extender.yaml``: this service as a hostNetwork static pod on 127.0.0.1
  (``/etc/kubernetes/manifests/scheduler-extender.yaml``).
- ``scheduler-extender-config.yaml``: the service configuration as that pod mounts it
  (:data:`EXTENDER_CONFIG_PATH`).
- ``scheduler-extender-rbac.yaml`` (only with ``cluster:``): the ClusterRole the service needs
  and its binding to the user of :data:`EXTENDER_KUBECONFIG_PATH`.
- ``second-scheduler/``: a separate kube-scheduler Deployment (own ``schedulerName``) with this
  service as a sidecar, ConfigMaps, ServiceAccount, RBAC and ``kustomization.yaml``.
- ``kubeadm/``: kubeadm's patch and ``ClusterConfiguration`` snippet that wire kubeadm's own
  kube-scheduler manifest (:func:`kubeadm_wiring`).
- ``scheduler/`` (only for profiles with ``schedulerName``): the standalone scheduler
  (:func:`standalone_scheduler`).
- ``podgroup-crd.yaml`` (and a copy in ``second-scheduler/`` and ``scheduler/``, which their
  kustomizations leave out: ``delete -k`` must not delete every PodGroup), only when a profile
  enables Coscheduling: the PodGroup CRD (:data:`PODGROUP_CRD`).
- with the metrics listener (``server.metrics``, on by default with ``cluster:``:
  :func:`metrics_defaults`): ``scheduler-extender-metrics.yaml`` (``metrics.yaml`` in
  ``second-scheduler/`` and ``scheduler/``): a headless Service of the listener's port, and the
  ServiceAccount, token Secret and RBAC (``nonResourceURLs: ["/metrics"]``) a scraper reads it
  with; ``scheduler-extender-podmonitor.yaml`` (``podmonitor.yaml``, outside the kustomizations:
  it needs prometheus-operator's CRD): a ``PodMonitor`` (:func:`metrics_objects`). The pods carry
  a ``metrics`` port and ``prometheus.io/*`` scrape annotations; the extender's identity is bound
  to ``system:auth-delegator`` (its reviews).

Each install mode is a *target* (:data:`TARGETS`, :data:`TARGET_FILES`): ``render(...,
targets=...)`` writes only the files of those given; :func:`default_targets` says what a
configuration implies.

Output is deterministic: keys in a fixed order, no timestamps, so a re-render can be diffed
(``manifests/`` holds the render of the embedded default and a test fails when it drifts).
Rendering refuses what would deploy broken (:class:`RenderError`): TLS without a CA for
kube-scheduler, client-certificate TLS without kube-scheduler's certificate.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from app import __version__
from app.cluster import podgroups
from app.cluster.runtime import CACHE_RBAC, EVENTS_RBAC, REQUEUE_RBAC, needs_rbac
from app.config import DEFAULT_METRICS_PORT, Configuration, LeaderElectionConfig, MetricsServerConfig, TLSConfig
from app.deploy.sizing import CLUSTER_MEMORY_BYTES, IDLE_MEMORY_BYTES, memory_limit_bytes
from app.framework.build import effective_points, enabled_plugins, plugin_args
from app.framework.errors import SchedulerExtenderError
from app.framework.registry import PolicyRule, Registry

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
VERB_KEYS = {"filter": "filterVerb", "prioritize": "prioritizeVerb", "preempt": "preemptVerb", "bind": "bindVerb"}
# kube-scheduler's secure port (--secure-port default) and probe paths served by every v1 release.
KUBE_SCHEDULER_PORT = 10259


class RenderError(SchedulerExtenderError, ValueError):
    """The configuration cannot be deployed as asked; the message says what to change."""


#: The extender image ``make image`` builds by default; no registry serves it.
LOCAL_IMAGE = f"scheduler-extender:{__version__}"
#: The kube-scheduler release the manifests pin by default (the newest tested).
DEFAULT_KUBERNETES_VERSION = "v1.35.0"
#: The oldest release whose kube-scheduler reads ``kubescheduler.config.k8s.io/v1`` (GA in 1.25).
OLDEST_KUBERNETES_MINOR = 25
NEWEST_TESTED_MINOR = 35
_RELEASE = re.compile(r"^(v?)(1)\.(\d+)\.(\d+)$")


def kubernetes_release(text: str) -> tuple[str, str]:
    """``(tag, warning)``: ``text`` as a kube-scheduler image tag (``v1.31.4``), and a warning
    (``""`` when none). ``1.31.4`` is normalised to ``v1.31.4`` with a warning; a release newer
    than the newest tested is accepted with a warning. Raises :class:`RenderError` for anything
    that is not a full release (``1.31``, ``latest``) or older than 1.25 (no
    ``kubescheduler.config.k8s.io/v1``)."""
    m = _RELEASE.match(text.strip())
    if m is None:
        raise RenderError(
            f"--kubernetes-version {text!r}: give the full release of your control plane, such as "
            f"{DEFAULT_KUBERNETES_VERSION} (kube-scheduler images are tagged vMAJOR.MINOR.PATCH; "
            "kubectl version shows the API server's)"
        )
    prefix, _, minor, patch = m.groups()
    tag = f"v1.{int(minor)}.{int(patch)}"
    warning = "" if prefix else f"--kubernetes-version {text}: using the image tag {tag}"
    if int(minor) < OLDEST_KUBERNETES_MINOR:
        raise RenderError(
            f"--kubernetes-version {tag}: kube-scheduler before v1.{OLDEST_KUBERNETES_MINOR} does not read "
            "kubescheduler.config.k8s.io/v1, which the rendered configuration uses"
        )
    if int(minor) > NEWEST_TESTED_MINOR:
        warning = (warning + "; " if warning else "") + (
            f"{tag} is newer than the newest release tested (v1.{NEWEST_TESTED_MINOR})"
        )
    return tag, warning


@dataclass(frozen=True)
class RenderOptions:
    """Parameters that are not part of the service configuration.

    ``kubernetes_version``: the kube-scheduler image tag (must match the control plane).
    ``extender_image``: this service's image (``Dockerfile``). ``scheduler_name``: add a second
    profile with this ``schedulerName`` to the kubeadm KubeSchedulerConfiguration (the classic
    multi-profile setup: pods choose it with ``spec.schedulerName``); extenders apply to every
    profile, as in kube-scheduler. ``second_scheduler_name``: the ``schedulerName`` (and lease name)
    of the ``second-scheduler/`` Deployment. ``namespace``: where that Deployment runs.
    """

    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    kube_scheduler_image: str = "registry.k8s.io/kube-scheduler"
    extender_image: str = LOCAL_IMAGE
    scheduler_name: str | None = None
    second_scheduler_name: str = "extender-scheduler"
    namespace: str = "kube-system"


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
    """YAML for ``docs`` (one document, or several separated by ``---``), keys in given order."""
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, default_flow_style=False, explicit_start=len(docs) > 1)


def _header(what: str, source: str) -> str:
    return (
        f"# {what}\n# Rendered by `python -m app render` from {source} (scheduler-extender {__version__}).\n"
        "# Do not edit: change the service configuration and render again.\n"
    )


#: What the headers name when ``render`` runs without ``--config``.
DEFAULT_SOURCE = "the embedded default configuration"


def header_source(path: str | None) -> str:
    """How the headers name the configuration file ``path`` (as given to ``--config``): a relative
    path as given, an absolute one by its file name only, so that rendered files never carry the
    layout of the machine they were rendered on."""
    if path is None:
        return DEFAULT_SOURCE
    given = Path(path)
    return given.name if given.is_absolute() else given.as_posix()


#: The install modes ``render --target`` chooses among (``all``: every one of them).
TARGETS = ("kubeadm", "static-pod", "second-scheduler", "standalone")
#: The files each target writes (a name ending in ``/``: that directory); ``podgroup-crd.yaml``
#: only when a profile enables Coscheduling, ``scheduler-extender-rbac.yaml`` only with ``cluster:``,
#: ``scheduler-extender-metrics.yaml`` and ``-podmonitor.yaml`` only with the metrics listener.
_STATIC_POD_FILES = (
    "kube-scheduler-config.yaml",
    "scheduler-extender.yaml",
    "scheduler-extender-config.yaml",
    "scheduler-extender-rbac.yaml",
    "scheduler-extender-metrics.yaml",
    "scheduler-extender-podmonitor.yaml",
    "podgroup-crd.yaml",
)
TARGET_FILES = {
    "kubeadm": ("kubeadm/", *_STATIC_POD_FILES),
    "static-pod": ("kube-scheduler.yaml", *_STATIC_POD_FILES),
    "second-scheduler": ("second-scheduler/",),
    "standalone": ("scheduler/",),
}


def every_target(config: Configuration) -> tuple[str, ...]:
    """``--target all``: every install mode ``config`` can deploy (:data:`TARGETS`; ``standalone``
    only when a profile sets ``schedulerName``)."""
    if any(p.scheduler_name for p in config.profiles):
        return TARGETS
    return tuple(t for t in TARGETS if t != "standalone")


def default_targets(config: Configuration) -> tuple[tuple[str, ...], str]:
    """The targets ``config`` implies and why: ``standalone`` when a profile sets
    ``schedulerName`` (this service schedules those pods itself: a Deployment, no control-plane
    access needed, as on EKS or GKE); else ``kubeadm`` and ``static-pod``, the two ways to wire
    the control plane's kube-scheduler to the extender (render cannot tell whether kubeadm runs
    it: the files are the same but for ``kubeadm/`` against ``kube-scheduler.yaml``)."""
    named = [f"{p.name} ({p.scheduler_name})" for p in config.profiles if p.scheduler_name]
    if named:
        reason = f"{_profiles(named)} schedulerName: the standalone scheduler, scheduler/"
        others = [p.name for p in config.profiles if not p.scheduler_name]
        if others:
            reason += f"; kube-scheduler reaches {_profiles(others, '')} only with --target kubeadm or static-pod"
        return ("standalone",), reason
    return ("kubeadm", "static-pod"), (
        "no profile sets schedulerName: the extender beside the control plane's kube-scheduler, which "
        "kubeadm wires with kubeadm/ and a cluster without kubeadm with kube-scheduler.yaml"
    )


def _profiles(names: list[str], verb: str = " set") -> str:
    """``profile a sets`` / ``profiles a, b set`` (``verb`` ``""``: the names only)."""
    one = len(names) == 1
    return f"profile{'' if one else 's'} {', '.join(names)}{verb}{'s' if one and verb else ''}"


def target_note(targets: Collection[str], reason: str) -> str:
    """The line ``render`` prints when it chose ``targets`` itself."""
    chosen = " ".join(f"--target {t}" for t in targets)
    return (
        f"note: rendered {chosen} ({reason}); choose another with --target {'|'.join(TARGETS)} "
        "(repeatable), or --target all for every install mode"
    )


#: The PodGroup CRD (``scheduling.x-k8s.io/v1alpha1``) as kubernetes-sigs/scheduler-plugins
#: ships it (``config/crd/bases/scheduling.x-k8s.io_podgroups.yaml``), descriptions shortened:
#: Coscheduling reads each group's ``minMember`` and ``scheduleTimeoutSeconds``.
PODGROUP_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {
        "annotations": {"api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/scheduler-plugins/pull/50"},
        "name": f"{podgroups.PLURAL}.{podgroups.GROUP}",
    },
    "spec": {
        "group": podgroups.GROUP,
        "names": {
            "kind": "PodGroup",
            "listKind": "PodGroupList",
            "plural": podgroups.PLURAL,
            "shortNames": ["pg", "pgs"],
            "singular": "podgroup",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "additionalPrinterColumns": [
                    {"jsonPath": ".status.phase", "name": "Phase", "type": "string"},
                    {"jsonPath": ".spec.minMember", "name": "MinMember", "type": "integer"},
                    {"jsonPath": ".status.running", "name": "Running", "type": "integer"},
                    {"jsonPath": ".status.succeeded", "name": "Succeeded", "type": "integer"},
                    {"jsonPath": ".status.failed", "name": "Failed", "type": "integer"},
                    {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
                ],
                "name": podgroups.VERSION,
                "schema": {
                    "openAPIV3Schema": {
                        "description": "PodGroup is a collection of Pod; used for batch workload.",
                        "properties": {
                            "apiVersion": {"type": "string"},
                            "kind": {"type": "string"},
                            "metadata": {"type": "object"},
                            "spec": {
                                "description": "Specification of the desired behavior of the pod group.",
                                "properties": {
                                    "minMember": {
                                        "description": "The pods that must be scheduled together (at least 1).",
                                        "format": "int32",
                                        "minimum": 1,
                                        "type": "integer",
                                    },
                                    "minResources": {
                                        "additionalProperties": {
                                            "anyOf": [{"type": "integer"}, {"type": "string"}],
                                            "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|"
                                            r"[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
                                            "x-kubernetes-int-or-string": True,
                                        },
                                        "description": "The resources the group needs to start.",
                                        "type": "object",
                                    },
                                    "scheduleTimeoutSeconds": {
                                        "description": "How long the members may wait for the group.",
                                        "format": "int32",
                                        "type": "integer",
                                    },
                                },
                                "type": "object",
                            },
                            "status": {
                                "description": "The observed state of the pod group.",
                                "properties": {
                                    "failed": {"format": "int32", "type": "integer"},
                                    "occupiedBy": {"type": "string"},
                                    "phase": {"type": "string"},
                                    "running": {"format": "int32", "type": "integer"},
                                    "scheduleStartTime": {"format": "date-time", "type": "string"},
                                    "succeeded": {"format": "int32", "type": "integer"},
                                },
                                "type": "object",
                            },
                        },
                        "type": "object",
                    }
                },
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
            }
        ],
    },
}


def uses_podgroups(config: Configuration, registry: Registry) -> bool:
    """Does a profile enable a plugin that declares it reads PodGroups (``ClusterNeeds.pod_groups``:
    Coscheduling unless ``usePodGroupCRD: false``)? Then the manifests carry :data:`PODGROUP_CRD`."""
    for profile in config.profiles:
        timeout = profile.extender.http_timeout_seconds
        for name in enabled_plugins(profile, registry):
            entry = registry.get(name)
            if entry is None or entry.needs is None:
                continue
            if entry.needs(plugin_args(profile, entry), timeout).pod_groups:
                return True
    return False


def _podgroup_crd(where: str, source: str) -> str:
    return _header(
        f"{where}: the PodGroup CRD ({podgroups.GROUP}/{podgroups.VERSION}, as kubernetes-sigs/scheduler-plugins "
        "ships it) for Coscheduling's pod groups: kubectl apply -f it once per cluster, unless installed already "
        "(no kustomization lists it: deleting it deletes every PodGroup).",
        source,
    ) + dump(PODGROUP_CRD)


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


def _policy_rules(config: Configuration, registry: Registry, scheduling: bool = False) -> list[PolicyRule]:
    """The rules of :func:`extender_rules`, unmerged; ``scheduling``: of the standalone scheduler
    (whose profiles with ``schedulerName`` bind, whatever verbs they serve)."""
    if config.cluster is None:
        return []
    rules = list(CACHE_RBAC)
    if config.cluster.requeue_rejected_pods:
        rules.append(REQUEUE_RBAC)
    if config.diagnostics.events.enabled:
        rules.append(EVENTS_RBAC)
    for profile in config.profiles:
        points = effective_points(profile, registry)
        binds = "bind" in profile.extender.verbs or (scheduling and profile.scheduler_name)
        binders = set() if binds else {ref.name for ref in points["bind"]}  # they never run here
        names = {ref.name for refs in points.values() for ref in refs} - binders
        for name in sorted(names):
            entry = registry.get(name)
            if entry is None:
                continue
            rules += entry.rbac
            if entry.needs is not None:  # what the cache watches for it (a spread's selectors)
                needs = entry.needs(plugin_args(profile, entry), profile.extender.http_timeout_seconds)
                rules += needs_rbac(needs)
    return rules


def merge_rules(rules: list[PolicyRule]) -> list[dict[str, Any]]:
    """``rules`` as ClusterRole rules, one per group and resource, verbs merged in a stable order."""
    merged: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        for g in rule.api_groups:
            for r in rule.resources:
                merged.setdefault((g, r), set()).update(rule.verbs)
    order = ("get", "list", "watch", "create", "update", "patch", "delete")
    return [
        {
            "apiGroups": [g],
            "resources": [r],
            "verbs": sorted(v, key=lambda x: (order.index(x) if x in order else 99, x)),
        }
        for (g, r), v in sorted(merged.items())
    ]


def extender_rules(config: Configuration, registry: Registry) -> list[dict[str, Any]]:
    """RBAC rules the service needs: none without ``cluster:``; else list/watch of nodes and pods
    (the cache), ``pods`` patch (re-queue assistance, when on), ``events.k8s.io`` events create
    and patch (pod events, when on), plus each enabled plugin's declared
    :class:`~app.framework.registry.PolicyRule` (``DefaultBinder``: ``pods/binding`` create and
    ``pods`` get) and the list/watch of what the cache watches for its ``needs``
    (:func:`~app.cluster.runtime.needs_rbac`: PodTopologySpread's default constraints read
    Services, ReplicationControllers, ReplicaSets and StatefulSets), merged by group and resource."""
    return merge_rules(_policy_rules(config, registry))


def _extender_kubeconfig(config: Configuration) -> str | None:
    """The kubeconfig the static pod mounts and its config names (``None`` without ``cluster:``)."""
    if config.cluster is None:
        return None
    return config.cluster.kubeconfig or EXTENDER_KUBECONFIG_PATH


def _kube_scheduler_container(options: RenderOptions, args: list[str], **rest: Any) -> dict[str, Any]:
    """kube-scheduler's container: the image from ``options``, ``kube-scheduler`` plus ``args``."""
    return {
        "name": "kube-scheduler",
        "image": f"{options.kube_scheduler_image}:{options.kubernetes_version}",
        "imagePullPolicy": "IfNotPresent",
        "command": ["kube-scheduler", *args],
        **rest,
    }


def _security_context() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": EXTENDER_UID,
        "runAsGroup": EXTENDER_UID,
    }


def _probe(config: Configuration, path: str, period: int, failures: int) -> dict[str, Any]:
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


def _ports(config: Configuration) -> list[dict[str, Any]]:
    """The extender's container ports: ``http`` (the verbs) and, with the metrics listener,
    ``metrics`` (what the Service and the PodMonitor name)."""
    ports = [{"name": "http", "containerPort": config.server.port, "protocol": "TCP"}]
    metrics = config.server.metrics_listener
    if metrics is not None:
        ports.append({"name": "metrics", "containerPort": metrics.port, "protocol": "TCP"})
    return ports


def _extender_container(config: Configuration, options: RenderOptions, config_path: str) -> dict[str, Any]:
    return {
        "name": "scheduler-extender",
        "image": options.extender_image,
        "imagePullPolicy": "IfNotPresent",
        "args": ["--config", config_path],
        "ports": _ports(config),
        "startupProbe": _probe(config, "/healthz", 1, 30),
        "livenessProbe": _probe(config, "/healthz", 10, 3),
        "readinessProbe": _probe(config, "/readyz", 5, 3),
        "resources": extender_resources(config),
        "securityContext": _security_context(),
    }


def extender_resources(config: Configuration) -> dict[str, Any]:
    """The extender container's requests and limits: memory request the idle footprint (plus the
    cluster cache), memory limit :func:`~app.deploy.sizing.memory_limit_bytes`, which grows with
    ``server.maxInFlightBytes`` so that a pod that admits a body can answer it."""
    mib = 1024 * 1024
    idle = IDLE_MEMORY_BYTES + (CLUSTER_MEMORY_BYTES if config.cluster is not None else 0)
    limit = -(-memory_limit_bytes(config) // mib)
    return {"requests": {"cpu": "100m", "memory": f"{idle // mib}Mi"}, "limits": {"memory": f"{limit}Mi"}}


def _host_file(name: str, path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    volume = {"name": name, "hostPath": {"path": path, "type": "File"}}
    mount = {"name": name, "mountPath": path, "readOnly": True}
    return volume, mount


def _tls_files(config: Configuration, side: str) -> list[tuple[str, str]]:
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


def _metrics_files(config: Configuration) -> list[tuple[str, str]]:
    """The host files the metrics listener reads in a static pod: its certificate and key, its
    client CA and its own kubeconfig, when set."""
    metrics = config.server.metrics_listener
    if metrics is None:
        return []
    files = [("metrics-client-ca", metrics.client_ca_file), ("metrics-kubeconfig", metrics.kubeconfig)]
    if metrics.tls is not None:
        files = [("metrics-tls-cert", metrics.tls.cert_file), ("metrics-tls-key", metrics.tls.key_file), *files]
    return [(n, p) for n, p in files if p]


def extender_static_pod(config: Configuration, options: RenderOptions) -> dict[str, Any]:
    """The service's static pod: hostNetwork on 127.0.0.1, system-node-critical, non-root,
    read-only root filesystem, no capabilities; hostPath mounts for its config, its kubeconfig
    (with ``cluster:``) and TLS files. With the metrics listener: its port (named ``metrics``, on
    the host's addresses: hostNetwork), its files and the scrape annotations."""
    files = [("config", EXTENDER_CONFIG_PATH)]
    kubeconfig = _extender_kubeconfig(config)
    if kubeconfig is not None:
        files.append(("kubeconfig", kubeconfig))
    files += _tls_files(config, "server")
    mounted = {p for _, p in files}
    files += [(n, p) for n, p in _metrics_files(config) if p not in mounted]  # a file mounted once
    volumes, mounts = zip(*(_host_file(n, p) for n, p in files), strict=True)
    container = _extender_container(config, options, EXTENDER_CONFIG_PATH)
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


def kube_scheduler_static_pod(config: Configuration, options: RenderOptions) -> dict[str, Any]:
    """kubeadm's kube-scheduler static pod (cmd/kubeadm/app/phases/controlplane/manifests.go) with
    ``--config``, the config file's hostPath volume and mount, and the TLS files kube-scheduler
    needs to reach the extender; the image tag is ``options.kubernetes_version``."""
    arg, wiring = _scheduler_wiring(config)
    files = [("kubeconfig", SCHEDULER_KUBECONFIG_PATH), *wiring]
    volumes, mounts = zip(*(_host_file(n, p) for n, p in files), strict=True)
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
                _kube_scheduler_container(
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


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = {"app.kubernetes.io/name": "scheduler-extender", "app.kubernetes.io/part-of": "scheduler-extender"}
    return meta


def _cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": _meta(name),
        "rules": rules,
    }


def _binding(
    kind: str, name: str, role_kind: str, role: str, subject: dict[str, Any], ns: str | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": _meta(name, ns),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [subject],
    }


def static_pod_rbac(config: Configuration, registry: Registry) -> list[dict[str, Any]]:
    """ClusterRole ``scheduler-extender`` and its binding to :data:`EXTENDER_USER` (empty without
    ``cluster:``); with ``cluster.leaderElection``, a Role to ``get`` the one Lease it follows (a
    follower only reads it) and its RoleBinding. (The metrics listener's ``system:auth-delegator``
    binding is in ``scheduler-extender-metrics.yaml``: :func:`metrics_objects`.)"""
    rules = extender_rules(config, registry)
    if not rules:
        return []
    user = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": EXTENDER_USER}
    out = [
        _cluster_role("scheduler-extender", rules),
        _binding("ClusterRoleBinding", "scheduler-extender", "ClusterRole", "scheduler-extender", user),
    ]
    election = config.cluster.leader_election if config.cluster is not None else None
    if election is not None:
        ns = election.lease_namespace
        out += [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": _meta("scheduler-extender-lease", ns),
                "rules": [
                    {
                        "apiGroups": ["coordination.k8s.io"],
                        "resources": ["leases"],
                        "resourceNames": [election.lease_name],
                        "verbs": ["get"],
                    }
                ],
            },
            _binding("RoleBinding", "scheduler-extender-lease", "Role", "scheduler-extender-lease", user, ns),
        ]
    return out


def auth_delegator(name: str, subject: dict[str, Any]) -> dict[str, Any]:
    """The ClusterRoleBinding ``<name>-auth-delegator`` of ``subject`` to the built-in ClusterRole
    ``system:auth-delegator`` (``tokenreviews`` and ``subjectaccessreviews`` ``create``): what
    the metrics listener's reviews need, as every delegating API server's identity does."""
    return _binding("ClusterRoleBinding", f"{name}-auth-delegator", "ClusterRole", "system:auth-delegator", subject)


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
        "metadata": _meta(f"{name}-metrics", ns),
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
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(reader, ns)},
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": _meta(secret["name"], ns) | {"annotations": {"kubernetes.io/service-account.name": reader}},
                "type": "kubernetes.io/service-account-token",
            },
            _cluster_role(reader, [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]),
            _binding("ClusterRoleBinding", reader, "ClusterRole", reader, sa),
        ]
        endpoint |= {
            "scheme": "https",
            "tlsConfig": {"insecureSkipVerify": True},
            "authorization": {"type": "Bearer", "credentials": secret},
        }
    monitor = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": _meta(name, ns),
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


def _deployment_extras(
    config: Configuration, registry: Registry, name: str, ns: str, source: str, where: str
) -> dict[str, str]:
    """The files a Deployment target (``where``: its directory) carries beside its own:
    ``metrics.yaml`` and ``podmonitor.yaml`` with the metrics listener (its pods run as the
    ServiceAccount ``name``), ``podgroup-crd.yaml`` when a plugin reads PodGroups."""
    out = _metrics_files_of(config, name, ns, source, where)
    if uses_podgroups(config, registry):
        out["podgroup-crd.yaml"] = _podgroup_crd(f"{where}podgroup-crd.yaml", source)
    return out


def _metrics_files_of(config: Configuration, name: str, ns: str, source: str, where: str) -> dict[str, str]:
    """``metrics.yaml`` and ``podmonitor.yaml`` of a Deployment target whose pods run as the
    ServiceAccount ``name`` (empty without the listener)."""
    metrics = config.server.metrics_listener
    if metrics is None:
        return {}
    sa = {"kind": "ServiceAccount", "name": name, "namespace": ns}
    objects, monitor = metrics_objects(metrics, name, ns, _pod_labels(name), sa)
    return {
        "metrics.yaml": _header(
            f"{where}metrics.yaml: the metrics listener's Service, the right of `{name}` to review its callers and "
            "the identity a scraper reads it with.",
            source,
        )
        + dump(*objects),
        "podmonitor.yaml": _header(
            f"{where}podmonitor.yaml: a prometheus-operator PodMonitor of the metrics listener: kubectl apply -f it "
            "where prometheus-operator runs (no kustomization lists it: it needs the monitoring.coreos.com CRDs).",
            source,
        )
        + dump(monitor),
    }


#: Replicas of the second-scheduler Deployment: kube-scheduler elects a leader with its Lease and
#: each extender sidecar binds only while its own kube-scheduler holds it.
SECOND_SCHEDULER_REPLICAS = 2

#: Where ``render`` expects ``python -m app certs`` to have written the PKI on each control-plane
#: node when it turns TLS on by default (:func:`secure_defaults`).
PKI_DIR = "/etc/kubernetes/scheduler-extender/pki"


def secure_defaults(config: Configuration) -> Configuration:
    """The configuration the static pods run: for a configuration that serves ``bind`` and sets
    neither ``server.tls`` nor ``server.insecureBind``, mutual TLS with the files of
    ``python -m app certs --out`` :data:`PKI_DIR` (kube-scheduler's extender client can
    authenticate only with a client certificate); with ``cluster:`` and bind, binds only while
    this node's kube-scheduler holds the ``kube-system/kube-scheduler`` Lease, unless
    ``cluster.leaderElection`` says otherwise."""
    serves_bind = any("bind" in p.extender.verbs for p in config.profiles)
    if not serves_bind:
        return config
    update: dict[str, Any] = {}
    server = config.server
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
    return config.model_copy(update=update)


def _pod_labels(name: str) -> dict[str, str]:
    """The labels of a scheduler Deployment's pods (its selector, and its metrics Service's)."""
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/component": "scheduler"}


def _scheduler_deployment(
    name: str,
    ns: str,
    containers: list[dict[str, Any]],
    volumes: list[dict[str, Any]],
    metrics: MetricsServerConfig | None = None,
) -> dict[str, Any]:
    """A scheduler's Deployment: :data:`SECOND_SCHEDULER_REPLICAS` replicas (they elect a leader),
    its ServiceAccount ``name``, ``system-cluster-critical``, the RuntimeDefault seccomp profile;
    with ``metrics``, the pods' scrape annotations (:func:`scrape_annotations`)."""
    labels = _pod_labels(name)
    template: dict[str, Any] = {"labels": labels}
    if metrics is not None:
        template["annotations"] = scrape_annotations(metrics)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(name, ns),
        "spec": {
            "replicas": SECOND_SCHEDULER_REPLICAS,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": template,
                "spec": {
                    "serviceAccountName": name,
                    "priorityClassName": "system-cluster-critical",
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": containers,
                    "volumes": volumes,
                },
            },
        },
    }


def second_scheduler(config: Configuration, registry: Registry, options: RenderOptions, source: str) -> dict[str, str]:
    """``second-scheduler/``: file name -> text (see the module doc). kube-scheduler reaches the
    sidecar over the pod's loopback, so everything here is rendered from ``config`` without TLS."""
    name = options.second_scheduler_name
    ns = options.namespace
    # The pod's loopback is reachable only by the pod's own containers: bind needs no client
    # certificate there. The sidecar binds while its kube-scheduler holds the scheduler's Lease.
    serves_bind = any("bind" in p.extender.verbs for p in config.profiles)
    server = config.server.model_copy(update={"tls": None, "insecure_bind": config.server.insecure_bind or serves_bind})
    update: dict[str, Any] = {"server": server}
    if config.cluster is not None and serves_bind:
        election = LeaderElectionConfig.model_validate({"leaseName": name, "leaseNamespace": ns})
        update["cluster"] = config.cluster.model_copy(update={"leader_election": election})
    config = deployed_metrics(config.model_copy(update=update))
    metrics = config.server.metrics_listener
    sa = {"kind": "ServiceAccount", "name": name, "namespace": ns}
    sched_config = scheduler_configuration(
        config,
        kubeconfig=None,
        leader_election={"leaderElect": True, "resourceName": name, "resourceNamespace": ns},
        scheduler_names=[name],
    )
    extender_config = service_config(config, kubeconfig=None)
    # kustomize's configMapGenerator names each ConfigMap with a hash of its content and rewrites
    # the Deployment's references: a re-rendered configuration rolls the pods on the next apply -k
    generators = [
        {
            "name": f"{name}-config",
            "namespace": ns,
            "files": ["kube-scheduler-config.yaml"],
            "options": {"labels": _meta(name, ns)["labels"]},
        },
        {
            "name": f"{name}-extender-config",
            "namespace": ns,
            "files": ["config.yaml=scheduler-extender-config.yaml"],
            "options": {"labels": _meta(name, ns)["labels"]},
        },
    ]
    service_account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, ns)}
    # kube-scheduler's own permissions are upstream's bootstrap roles (as in the "Configure
    # Multiple Schedulers" task); the lease named after this scheduler needs its own Role because
    # system:kube-scheduler only allows get/update of the "kube-scheduler" lease.
    rbac: list[dict[str, Any]] = [
        _binding("ClusterRoleBinding", f"{name}-as-kube-scheduler", "ClusterRole", "system:kube-scheduler", sa),
        _binding("ClusterRoleBinding", f"{name}-as-volume-scheduler", "ClusterRole", "system:volume-scheduler", sa),
        _binding(
            "RoleBinding",
            f"{name}-extension-apiserver-authentication-reader",
            "Role",
            "extension-apiserver-authentication-reader",
            sa,
            "kube-system",
        ),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta(f"{name}-leader-election", ns),
            "rules": [
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "resourceNames": [name],
                    "verbs": ["get", "update"],
                },
            ],
        },
        _binding("RoleBinding", f"{name}-leader-election", "Role", f"{name}-leader-election", sa, ns),
    ]
    rules = extender_rules(config, registry)
    if rules:
        rbac += [
            _cluster_role(f"{name}-extender", rules),
            _binding("ClusterRoleBinding", f"{name}-extender", "ClusterRole", f"{name}-extender", sa),
        ]
    sched_mount = {"name": "scheduler-config", "mountPath": SECOND_SCHEDULER_CONFIG_DIR, "readOnly": True}
    ext_mount = {"name": "extender-config", "mountPath": SECOND_EXTENDER_CONFIG_DIR, "readOnly": True}
    probe = {"path": "/healthz", "port": KUBE_SCHEDULER_PORT, "scheme": "HTTPS"}
    extender = _extender_container(config, options, f"{SECOND_EXTENDER_CONFIG_DIR}/config.yaml")
    extender["volumeMounts"] = [ext_mount]
    kube_scheduler = _kube_scheduler_container(
        options,
        [f"--config={SECOND_SCHEDULER_CONFIG_DIR}/kube-scheduler-config.yaml"],
        livenessProbe={"httpGet": probe, "initialDelaySeconds": 15, "periodSeconds": 10},
        readinessProbe={"httpGet": probe, "periodSeconds": 5},
        resources={"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "1Gi"}},
        securityContext=_security_context(),
        volumeMounts=[sched_mount],
    )
    volumes = [
        {"name": "scheduler-config", "configMap": {"name": f"{name}-config"}},
        {"name": "extender-config", "configMap": {"name": f"{name}-extender-config"}},
    ]
    deployment = _scheduler_deployment(name, ns, [kube_scheduler, extender], volumes, metrics)
    files = {
        "serviceaccount.yaml": dump(service_account),
        "rbac.yaml": dump(*rbac),
        "deployment.yaml": dump(deployment),
    }
    out = {
        k: _header(f"second-scheduler/{k}: kube-scheduler `{name}` with the extender as a sidecar.", source) + v
        for k, v in files.items()
    }
    extras = _deployment_extras(config, registry, name, ns, source, "second-scheduler/")
    out.update(extras)
    if "metrics.yaml" in extras:  # a resource of the kustomization (the PodMonitor and the CRD are not)
        files["metrics.yaml"] = extras["metrics.yaml"]
    out["kube-scheduler-config.yaml"] = _header(
        f"second-scheduler/kube-scheduler-config.yaml: the KubeSchedulerConfiguration of `{name}` "
        "(a ConfigMap generated by kustomization.yaml).",
        source,
    ) + dump(sched_config)
    out["scheduler-extender-config.yaml"] = _header(
        "second-scheduler/scheduler-extender-config.yaml: the extender sidecar's configuration "
        "(a ConfigMap generated by kustomization.yaml).",
        source,
    ) + dump(extender_config)
    out["kustomization.yaml"] = _header(
        "`kubectl apply -k` this directory (the ConfigMaps' names carry a hash of their content: a new "
        "render rolls the pods).",
        source,
    ) + dump(
        {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": sorted(files),
            "configMapGenerator": generators,
        }
    )
    return out


def render(
    config: Configuration,
    registry: Registry,
    options: RenderOptions,
    source: str,
    targets: Collection[str] | None = None,
) -> dict[str, str]:
    """The artefacts of ``targets`` (default: :func:`every_target`) as ``{relative path: text}``
    (see the module doc and :data:`TARGET_FILES`); ``source`` names the configuration in the
    headers. Raises :class:`RenderError`, also for an unknown target and for ``standalone`` when
    no profile sets ``schedulerName``."""
    if targets is None:
        targets = every_target(config)
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown or not targets:
        raise RenderError(f"--target {', '.join(unknown) or '(none)'}: choose among {', '.join(TARGETS)} or all")
    names = ["default-scheduler", options.scheduler_name] if options.scheduler_name else None
    if options.scheduler_name == "default-scheduler":
        raise RenderError("--scheduler-name: 'default-scheduler' is the default profile already")
    plain = metrics_defaults(config)
    config = secure_defaults(plain)
    kubeconfig = _extender_kubeconfig(config)
    out: dict[str, str] = {}
    control_plane = {"kubeadm", "static-pod"} & set(targets)
    if control_plane:
        out["kube-scheduler-config.yaml"] = _header(
            f"KubeSchedulerConfiguration for kubeadm: copy to {SCHEDULER_CONFIG_PATH}.", source
        ) + dump(
            scheduler_configuration(
                config,
                kubeconfig=SCHEDULER_KUBECONFIG_PATH,
                leader_election={"leaderElect": True},
                scheduler_names=names,
            )
        )
    if "static-pod" in targets:
        out["kube-scheduler.yaml"] = _header(
            "kube-scheduler static pod: copy to /etc/kubernetes/manifests/kube-scheduler.yaml.", source
        ) + dump(kube_scheduler_static_pod(config, options))
    if control_plane:
        out["scheduler-extender.yaml"] = _header(
            "The extender's static pod: copy to /etc/kubernetes/manifests/scheduler-extender.yaml.", source
        ) + dump(extender_static_pod(config, options))
        out["scheduler-extender-config.yaml"] = _header(
            f"The extender's configuration as its static pod mounts it: copy to {EXTENDER_CONFIG_PATH}.", source
        ) + dump(service_config(config, kubeconfig=kubeconfig))
        rbac = static_pod_rbac(config, registry)
        if rbac:
            out["scheduler-extender-rbac.yaml"] = _header(
                f"What the extender may do with the credentials in {EXTENDER_KUBECONFIG_PATH}: kubectl apply -f.",
                source,
            ) + dump(*rbac)
        metrics = config.server.metrics_listener
        if metrics is not None:
            # the reviews use the credentials of cluster: (EXTENDER_USER) unless the listener has its own
            user = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": EXTENDER_USER}
            reviewer = user if config.cluster is not None and metrics.kubeconfig is None else None
            name = "scheduler-extender"
            objects, monitor = metrics_objects(metrics, name, "kube-system", STATIC_POD_LABELS, reviewer)
            out["scheduler-extender-metrics.yaml"] = _header(
                "The extender's metrics listener: its Service (the static pods on each control-plane node), the "
                f"extender's right to review its callers ({EXTENDER_USER}) and the identity a scraper reads it with: "
                "kubectl apply -f.",
                source,
            ) + dump(*objects)
            out["scheduler-extender-podmonitor.yaml"] = _header(
                "A prometheus-operator PodMonitor of the extender's metrics listener: kubectl apply -f it where "
                "prometheus-operator runs (it needs the monitoring.coreos.com CRDs).",
                source,
            ) + dump(monitor)
        if uses_podgroups(config, registry):
            out["podgroup-crd.yaml"] = _podgroup_crd("podgroup-crd.yaml", source)
    if "second-scheduler" in targets:
        for name, text in second_scheduler(plain, registry, options, source).items():
            out[f"second-scheduler/{name}"] = text
    if "kubeadm" in targets:
        for name, text in kubeadm_wiring(config, options, source).items():
            out[f"kubeadm/{name}"] = text
    if "standalone" in targets:
        standalone = standalone_scheduler(plain, registry, options, source)
        if not standalone:
            raise RenderError(
                "--target standalone: no profile sets schedulerName, so there is no standalone scheduler to "
                "deploy; render --target kubeadm, static-pod or second-scheduler to extend kube-scheduler instead"
            )
        for name, text in standalone.items():
            out[f"scheduler/{name}"] = text
    if options.extender_image == LOCAL_IMAGE:
        note = (
            f"# NOTE: the image {LOCAL_IMAGE} is built locally (make image) and served by no registry: push it to "
            "yours and render again with --image REGISTRY/NAME:TAG, or load it into each node's container runtime.\n"
        )
        for name in ("scheduler-extender.yaml", "second-scheduler/deployment.yaml", "scheduler/deployment.yaml"):
            if name not in out:
                continue
            lines = out[name].splitlines(keepends=True)
            at = next(i for i, line in enumerate(lines) if not line.startswith("#"))  # after the header
            out[name] = "".join([*lines[:at], note, *lines[at:]])
    return out


def _scheduler_wiring(config: Configuration) -> tuple[str, list[tuple[str, str]]]:
    """What kube-scheduler needs beyond kubeadm's manifest: the ``--config`` argument and the host
    files to mount (the configuration, and the TLS files that reach the extender)."""
    return f"--config={SCHEDULER_CONFIG_PATH}", [
        ("scheduler-config", SCHEDULER_CONFIG_PATH),
        *_tls_files(config, "scheduler"),
    ]


#: What the standalone scheduler needs beyond the extender's rules (kube-scheduler's own verbs):
#: bind, write PodScheduled, post events, and elect a leader on its Lease.
SCHEDULER_RBAC = (
    PolicyRule(("",), ("pods",), ("get", "list", "watch")),
    PolicyRule(("",), ("pods/binding",), ("create",)),
    PolicyRule(("",), ("pods/status",), ("patch",)),
    PolicyRule(("events.k8s.io",), ("events",), ("create", "patch")),
    PolicyRule(("coordination.k8s.io",), ("leases",), ("get", "create", "update")),
)


def standalone_scheduler(
    config: Configuration, registry: Registry, options: RenderOptions, source: str
) -> dict[str, str]:
    """``scheduler/``, for profiles with ``schedulerName``: a Deployment running ``python -m app
    schedule`` (two replicas electing a leader on each scheduler's Lease), its configuration as a
    ConfigMap generated with a content hash, a ServiceAccount and a ClusterRole with the
    extender's rules plus :data:`SCHEDULER_RBAC`. The server stays on loopback; probes run
    inside the container. Empty when no profile sets ``schedulerName``."""
    names = [p.scheduler_name for p in config.profiles if p.scheduler_name]
    if not names:
        return {}
    config = deployed_metrics(config)
    metrics = config.server.metrics_listener
    ns = options.namespace
    name = names[0] if len(names) == 1 else "scheduler-extender-scheduler"
    sa = {"kind": "ServiceAccount", "name": name, "namespace": ns}
    rules = merge_rules([*_policy_rules(config, registry, scheduling=True), *SCHEDULER_RBAC])
    mounted = "/etc/scheduler-extender/config.yaml"
    probe_script = (
        "import sys, urllib.request; "
        f"sys.exit(urllib.request.urlopen('http://127.0.0.1:{config.server.port}/{{}}', timeout=2).status != 200)"
    )

    def probe(path: str, **timing: int) -> dict[str, Any]:
        return {"exec": {"command": ["python", "-c", probe_script.format(path)]}, **timing}

    container = {
        "name": "scheduler",
        "image": options.extender_image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python", "-m", "app", "schedule"],
        "args": ["--config", mounted],
        **({"ports": _ports(config)[1:]} if metrics is not None else {}),
        "startupProbe": probe("healthz", periodSeconds=2, failureThreshold=30),
        "livenessProbe": probe("healthz", periodSeconds=10, timeoutSeconds=5),
        "readinessProbe": probe("readyz", periodSeconds=10, timeoutSeconds=5),
        "resources": extender_resources(config),
        "securityContext": _security_context(),
        "volumeMounts": [{"name": "config", "mountPath": "/etc/scheduler-extender", "readOnly": True}],
    }
    deployment = _scheduler_deployment(
        name, ns, [container], [{"name": "config", "configMap": {"name": f"{name}-config"}}], metrics
    )
    rbac = [_cluster_role(name, rules), _binding("ClusterRoleBinding", name, "ClusterRole", name, sa)]
    files = {
        "deployment.yaml": dump(deployment),
        "serviceaccount.yaml": dump({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, ns)}),
        "rbac.yaml": dump(*rbac),
    }
    out = {
        k: _header(f"scheduler/{k}: the standalone scheduler `{name}` ({', '.join(names)}).", source) + v
        for k, v in files.items()
    }
    extras = _deployment_extras(config, registry, name, ns, source, "scheduler/")
    out.update(extras)
    if "metrics.yaml" in extras:  # a resource of the kustomization (the PodMonitor and the CRD are not)
        files["metrics.yaml"] = extras["metrics.yaml"]
    out["scheduler-extender-config.yaml"] = _header(
        "scheduler/scheduler-extender-config.yaml: the scheduler's configuration (a ConfigMap generated by "
        "kustomization.yaml; credentials: the in-cluster service account).",
        source,
    ) + dump(service_config(config, kubeconfig=None))
    out["kustomization.yaml"] = _header(
        "`kubectl apply -k` this directory (the ConfigMap's name carries a hash of its content).", source
    ) + dump(
        {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": sorted(files),
            "configMapGenerator": [
                {
                    "name": f"{name}-config",
                    "namespace": ns,
                    "files": ["config.yaml=scheduler-extender-config.yaml"],
                    "options": {"labels": _meta(name, ns)["labels"]},
                }
            ],
        }
    )
    return out


def kubeadm_patch(config: Configuration) -> list[dict[str, Any]]:
    """A JSON patch (RFC 6902) of kubeadm's kube-scheduler static pod that adds ``--config`` and the
    host-file mounts, leaving everything kubeadm wrote: ``kubeadm init|join|upgrade apply --patches
    DIR`` applies ``kube-scheduler0+json.yaml`` to the manifest it generates
    (cmd/kubeadm/app/util/patches/patches.go: target ``kube-scheduler``, patch type ``json``)."""
    arg, files = _scheduler_wiring(config)
    ops: list[dict[str, Any]] = [{"op": "add", "path": "/spec/containers/0/command/-", "value": arg}]
    for name, path in files:
        volume, mount = _host_file(name, path)
        ops.append({"op": "add", "path": "/spec/volumes/-", "value": volume})
        ops.append({"op": "add", "path": "/spec/containers/0/volumeMounts/-", "value": mount})
    return ops


def kubeadm_cluster_configuration(config: Configuration, options: RenderOptions) -> dict[str, Any]:
    """The ``scheduler:`` part of kubeadm's ``ClusterConfiguration`` that adds ``--config`` and the
    mounts: kept in the ``kubeadm-config`` ConfigMap, so ``kubeadm upgrade apply`` regenerates the
    manifest with them. ``kubeadm.k8s.io/v1beta4`` (extraArgs as name/value pairs) from v1.31,
    ``v1beta3`` (a map) before."""
    arg, files = _scheduler_wiring(config)
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
        "patches/kube-scheduler0+json.yaml": _header(
            f"kubeadm --patches {KUBEADM_PATCHES_DIR}: copy to {KUBEADM_PATCHES_DIR}/kube-scheduler0+json.yaml; "
            "adds --config and the mounts to the kube-scheduler manifest kubeadm generates (init, join "
            "--control-plane, upgrade apply/node).",
            source,
        )
        + dump(kubeadm_patch(config)),
        "cluster-configuration.yaml": _header(
            "kubeadm ClusterConfiguration: merge its scheduler: section into yours (kubeadm init --config), "
            "or into the kubeadm-config ConfigMap of a running cluster, so that upgrades keep --config.",
            source,
        )
        + dump(kubeadm_cluster_configuration(config, options)),
    }


#: The list of the files ``render`` wrote into a directory (one relative path per line).
RENDERED = ".rendered"


def write(files: dict[str, str], out: Path) -> list[Path]:
    """Write ``files`` under ``out`` and list them in ``out/.rendered``; returns the paths written.

    ``out`` must be missing, empty, or a directory this function rendered before (it has
    ``.rendered``): then the files of the previous render that this one does not produce are
    removed, so ``kubectl apply -f out/`` never applies a manifest of an older configuration.
    Raises :class:`RenderError` for any other directory, and ``OSError`` when writing fails.
    """
    listing = out / RENDERED
    previous: set[str] = set()
    if out.exists():
        if not out.is_dir():
            raise RenderError(f"{out} exists and is not a directory")
        if listing.is_file():
            previous = {line.strip() for line in listing.read_text(encoding="utf-8").splitlines() if line.strip()}
        elif any(out.iterdir()):
            raise RenderError(
                f"{out} is not empty and was not written by render (no {RENDERED} in it): "
                "choose an empty or new directory"
            )
    for stale in sorted(previous - files.keys()):
        path = out / stale
        if ".." not in Path(stale).parts and path.is_file():
            path.unlink()
    written = []
    for rel, text in sorted(files.items()):
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    listing.write_text("".join(f"{rel}\n" for rel in sorted(files)), encoding="utf-8")
    return written

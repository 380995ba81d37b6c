"""``python -m app render``: every deployment artefact, generated from the service configuration.

One :class:`~app.config.Configuration` gives every file :func:`render` lists.

Each install mode is a *target* (:data:`TARGETS`, :data:`TARGET_FILES`): ``render(...,
targets=...)`` writes only the files of those given; :func:`default_targets` says what a
configuration implies.

Output is deterministic: keys in a fixed order, no timestamps, so a re-render can be diffed
(``manifests/`` holds the render of the embedded default and a test fails when it drifts).
A configuration whose profiles audit plugins (``enforcement: audit``) says so in a comment of
each configuration file rendered (:func:`audit_comment`). Rendering refuses what would deploy
broken (:class:`RenderError`): TLS without a CA for kube-scheduler, client-certificate TLS
without kube-scheduler's certificate.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

from app.config import Configuration
from app.deploy.metrics import metrics_defaults
from app.deploy.objects import DEFAULT_KUBERNETES_VERSION, LOCAL_IMAGE, RenderError, RenderOptions
from app.deploy.targets import TARGETS as MODULES
from app.framework.registry import Registry

#: The oldest release whose kube-scheduler reads ``kubescheduler.config.k8s.io/v1`` (GA in 1.25).
OLDEST_KUBERNETES_MINOR = 25


NEWEST_TESTED_MINOR = 36


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
TARGETS = tuple(MODULES)
#: The files each target writes (a name ending in ``/``: that directory); ``podgroup-crd.yaml``
#: only when a profile enables Coscheduling, ``scheduler-extender-rbac.yaml`` only with ``cluster:``,
#: ``scheduler-extender-metrics.yaml`` and ``-podmonitor.yaml`` only with the metrics listener.
TARGET_FILES = {name: module.FILES for name, module in MODULES.items()}


def every_target(config: Configuration) -> tuple[str, ...]:
    """``--target all``: every install mode ``config`` can deploy (:data:`TARGETS`; ``standalone``
    only when a profile sets ``schedulerName``; never ``shadow``, a trial beside kube-scheduler
    rather than an install mode: ``--target shadow`` alone)."""
    modes = tuple(t for t in TARGETS if t != "shadow")
    if any(p.scheduler_name for p in config.profiles):
        return modes
    return tuple(t for t in modes if t != "standalone")


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
    no profile sets ``schedulerName``.

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
    """
    if targets is None:
        targets = every_target(config)
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown or not targets:
        raise RenderError(f"--target {', '.join(unknown) or '(none)'}: choose among {', '.join(TARGETS)} or all")
    config = metrics_defaults(config)
    out: dict[str, str] = {}
    for name, module in MODULES.items():
        if name in targets:
            out.update(module.files(config, registry, options, source))
    audit = audit_comment(config)
    if audit:
        for name in [n for n in out if n.endswith(("scheduler-extender-config.yaml", "kube-scheduler-config.yaml"))]:
            out[name] = _after_header(out[name], audit)
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
    return dict(sorted(out.items()))


def audit_comment(config: Configuration) -> str:
    """The comment lines (each ``# ...\n``) naming the plugins each profile audits
    (``enforcement: audit``: verdicts recorded, never applied), or ``""`` when none does."""
    lines = []
    for profile in config.profiles:
        audited = profile.audited()
        if audited:
            lines.append(
                f"# AUDIT: profile {profile.name} audits {', '.join(audited)} (enforcement: audit): their "
                "verdicts are recorded (explain, scheduler_extender_audit_verdicts_total), never applied.\n"
            )
    if lines:
        lines.append("# To enforce a plugin, remove its enforcement: audit (or set enforce) and render again.\n")
    return "".join(lines)


def _after_header(text: str, lines: str) -> str:
    """``text`` with ``lines`` inserted after its leading comment lines (the header)."""
    rows = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(rows) if not line.startswith("#")), len(rows))
    return "".join([*rows[:at], lines, *rows[at:]])


def render_warnings(config: Configuration, targets: Collection[str]) -> list[str]:
    """What ``render`` warns about for ``targets`` (each a sentence, no prefix): a control-plane
    target (``kubeadm``, ``static-pod``) of a configuration whose every profile sets
    ``schedulerName``: kube-scheduler's default profile reaches none of them, so the ``extenders:``
    entries it wires into every pod's scheduling can never act (the profiles are the standalone
    scheduler's)."""
    control_plane = [t for t in TARGETS if t in targets and t in ("kubeadm", "static-pod")]
    named = [f"{p.name} ({p.scheduler_name})" for p in config.profiles if p.scheduler_name]
    if not control_plane or len(named) < len(config.profiles):
        return []
    chosen = " and ".join(f"--target {t}" for t in control_plane)
    return [
        f"{chosen}: {_profiles(named)} schedulerName, so kube-scheduler's default profile reaches no profile: the "
        "extenders: entries wired into kube-scheduler-config.yaml can never act, yet kube-scheduler calls them for "
        "every pod (and fails the pod when the extender is down, unless ignorable); render --target standalone "
        "to schedule those pods with this service, or add a profile without schedulerName for kube-scheduler"
    ]


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


__all__ = [
    "DEFAULT_KUBERNETES_VERSION",
    "DEFAULT_SOURCE",
    "LOCAL_IMAGE",
    "NEWEST_TESTED_MINOR",
    "OLDEST_KUBERNETES_MINOR",
    "RENDERED",
    "TARGETS",
    "TARGET_FILES",
    "RenderError",
    "RenderOptions",
    "audit_comment",
    "default_targets",
    "every_target",
    "header_source",
    "kubernetes_release",
    "render",
    "render_warnings",
    "target_note",
    "write",
]

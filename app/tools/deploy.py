"""The deployment commands: ``render`` (the manifests of a configuration, :mod:`app.deploy.render`),
``certs`` (the PKI of mutual TLS, :mod:`app.deploy.certs`) and ``check-scheduler-config`` (a
KubeSchedulerConfiguration against this service, :mod:`app.deploy.check`). Each takes the parsed
arguments of its subcommand (:mod:`app.cli`) and returns the exit status."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from app.bootstrap import assemble
from app.config import load_config
from app.deploy.certs import CertsError, issue
from app.deploy.check import check
from app.deploy.render import (
    RenderError,
    RenderOptions,
    default_targets,
    every_target,
    header_source,
    kubernetes_release,
    render_warnings,
    target_note,
    write,
)
from app.deploy.render import render as render_files
from app.plugins import default_registry


def render(args: argparse.Namespace) -> int:
    """``render [--config F] --out DIR [--target T]...``: every check ``serve`` makes of the
    configuration's plugins (:func:`~app.bootstrap.assemble`), then the files of the targets (the
    configuration's own without ``--target``, with a note saying so), their paths on standard
    output and the warnings on standard error. 1 for a release or a configuration that would
    deploy broken (:class:`~app.deploy.render.RenderError`)."""
    registry = default_registry()
    config = load_config(args.config, registry)
    assemble(config, registry, args.config or "<embedded default>")  # every check serve makes
    version = None
    if args.kubernetes_version is not None:
        try:
            version, warning = kubernetes_release(args.kubernetes_version)
        except RenderError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
    given = {
        "kubernetes_version": version,
        "extender_image": args.image,
        "scheduler_name": args.scheduler_name,
        "second_scheduler_name": args.second_scheduler_name,
        "namespace": args.namespace,
    }
    options = RenderOptions(**{k: v for k, v in given.items() if v is not None})
    note = ""
    if not args.target:  # what the configuration implies, and a note saying so
        targets, reason = default_targets(config)
        note = target_note(targets, reason)
    elif "all" in args.target:
        targets = every_target(config)
    else:
        targets = tuple(dict.fromkeys(args.target))
    try:
        files = render_files(config, registry, options, header_source(args.config), targets)
        written = write(files, Path(args.out))
    except RenderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    if note:
        print(note, file=sys.stderr)
    for warning in render_warnings(config, targets):
        print(f"warning: {warning}", file=sys.stderr)
    if args.image is None:
        print(
            f"warning: the manifests use the image {options.extender_image}, which no registry serves: build it "
            "(make image IMAGE=REGISTRY/NAME:TAG), push it, and render again with --image REGISTRY/NAME:TAG "
            "(or load it into each node's container runtime)",
            file=sys.stderr,
        )
    return 0


def certs(args: argparse.Namespace) -> int:
    """``certs --out DIR [--name N]... [--days D] [--force]``: the files' paths and what the
    certificates name on standard output; 1 when they cannot be written."""
    try:
        issued = issue(Path(args.out), args.name, args.days, args.force)
    except (CertsError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path in issued.paths:
        print(path)
    print(f"server certificate for {', '.join(issued.names)}; client certificate CN system:kube-scheduler")
    return 0


def check_scheduler_config(args: argparse.Namespace) -> int:
    """``check-scheduler-config FILE [--url U] [--offline] [--timeout S] [--kubeconfig K]``: the
    report on standard output; 1 when it found an error (``--kubeconfig`` defaults to
    ``$KUBECONFIG``)."""
    kubeconfig = args.kubeconfig or os.environ.get("KUBECONFIG") or None
    report = check(args.file, url=args.url, offline=args.offline, timeout=args.timeout, kubeconfig=kubeconfig)
    print(report.render())
    return 1 if report.errors else 0


__all__ = ["certs", "check_scheduler_config", "render"]

"""``validate``: check a configuration file in one run and print, per profile, what will run.

Every problem at once, each with its field path: the schema, the semantic checks, the args each
plugin's factory refuses, and the start-up checks ``serve`` makes before it listens
(:func:`app.bootstrap.check_configuration`). For a valid file, each profile's mode (an extender:
the verbs kube-scheduler calls and how; a standalone scheduler: its ``schedulerName``, no extender
fields) and the plugins it runs per extension point, kube-scheduler's defaults merged, in
kube-scheduler's order (pkg/scheduler/apis/config/types.go ``Plugins``: PreEnqueue, QueueSort,
PreFilter, Filter, PostFilter, PreScore, Score, Reserve, Permit, PreBind, Bind, PostBind; the
table :data:`app.framework.points.EXTENSION_POINTS`). A plugin the profile audits
(``enforcement: audit``) is listed at its points marked ``[audit]``, and named once more on an
``audit`` line saying what runs of it.

``validate`` judges the file as ``render`` deploys it: a profile that serves ``bind`` without
``server.tls`` is one ``render`` secures by itself (mutual TLS on a control-plane node, the pod's
loopback for the second scheduler), so ``validate`` accepts it and says so, while ``serve`` run
with the file as written refuses it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from app.bootstrap import Checked, bind_refusal, check_configuration, report_refusal
from app.config import Configuration, bind_exposure
from app.deploy.wiring import PKI_DIR, secure_defaults
from app.framework.points import EXTENSION_POINTS
from app.framework.profile import Profile
from app.framework.runtime import Framework


def validate(args: argparse.Namespace) -> int:
    """``validate CONFIG [--host H] [--port P]``: exit 0 when the file is valid (what will run on
    standard output, notes on standard error), else 1 with every problem on standard error."""
    checked = check_configuration(args.config, "validate", args.host, args.port)
    found, refused = notes(checked, args.host, args.port)
    checked.preflight.errors.extend(refused)
    for note in found:
        print(f"note: {note}", file=sys.stderr)
    if checked.errors or checked.assembly is None:
        report_refusal(checked, sys.stderr)
        return 1
    assembly = checked.assembly
    profiles = assembly.config.profiles
    print(f"{checked.source}: valid ({len(profiles)} profile{'s' if len(profiles) != 1 else ''})")
    for profile in profiles:
        print_profile(profile, assembly.config, assembly.frameworks[profile.name], sys.stdout)
    return 0


def notes(checked: Checked, host: str | None, port: int | None) -> tuple[list[str], list[str]]:
    """``(notes, errors)``: the start-up checks' notes, and what ``render`` does of a ``bind`` that
    ``serve`` would refuse as written; an error when ``render`` would not secure it either. Does not
    change ``checked``."""
    out = list(checked.preflight.notes)
    exposure = checked.preflight.bind_exposure
    assembly = checked.assembly
    if exposure is None or assembly is None:
        return out, []
    if bind_exposure(secure_defaults(assembly.config), host, port) is not None:  # nor does render secure it
        return out, [bind_refusal(exposure)]
    out.append(
        f"{exposure}, so serve refuses to start with this file as it is (set server.tls with clientCAFile, "
        "or server.insecureBind: true). render secures bind by itself: its kubeadm and static-pod targets serve "
        f"it over mutual TLS with the files that python -m app certs --out {PKI_DIR} writes on each "
        "control-plane node, its second-scheduler target on the pod's loopback"
    )
    return out, []


def print_profile(profile: Profile, config: Configuration, framework: Framework, out: TextIO) -> None:
    """One profile: its mode on one line, then each extension point it runs with its plugins."""
    print(f"profile {profile.name}: {mode(profile, config)}", file=out)
    for point, plugins in extension_points(framework, extender=not profile.scheduler_name):
        if plugins:
            print(f"  {point:<11} {', '.join(plugins)}", file=out)
    if framework.audited:
        print(
            f"  {'audit':<11} {', '.join(framework.audited)}: PreFilter and Filter verdicts recorded "
            "(explain, scheduler_extender_audit_verdicts_total), never applied; no other point of "
            f"{'theirs' if len(framework.audited) > 1 else 'its'} runs (enforcement: audit)",
            file=out,
        )


def mode(profile: Profile, config: Configuration) -> str:
    """How ``profile`` runs: a standalone scheduler (its ``schedulerName``, its Lease) or an
    extender kube-scheduler calls (verbs, path, the ``extenders:`` fields that change its calls)."""
    if profile.scheduler_name:
        scheduling = config.scheduling
        election = (
            f"replicas elect a leader on the Lease {scheduling.lease_namespace}/{profile.scheduler_name}"
            if scheduling.leader_elect
            else "no leader election (one replica)"
        )
        return (
            f"standalone scheduler (python -m app schedule) of the pods with spec.schedulerName "
            f"{profile.scheduler_name}, kube-scheduler's default plugins merged; {election}"
        )
    ext = profile.extender
    verbs = ", ".join(f"prioritize (weight {ext.weight})" if v == "prioritize" else v for v in ext.verbs)
    paths = f"/{profile.name}/<verb>" + (" and /<verb>" if config.default_profile == profile.name else "")
    fields = [
        f"nodeCacheCapable {str(ext.node_cache_capable).lower()}",
        f"httpTimeout {ext.http_timeout}",
        f"ignorable {str(ext.ignorable).lower()}",
    ]
    if ext.managed_resources:
        fields.append(f"managedResources {', '.join(r.name for r in ext.managed_resources)}")
    return f"extender: kube-scheduler calls {verbs} at {paths} ({'; '.join(fields)})"


def extension_points(framework: Framework, extender: bool) -> Sequence[tuple[str, list[str]]]:
    """What ``framework`` runs per extension point, one row of
    :data:`~app.framework.points.EXTENSION_POINTS` each in its order (kube-scheduler's, the
    extender's ``preemption`` after PostFilter and only with ``extender``): ``(configuration key,
    plugin names)``, a score plugin with its weight, a plugin whose errors are ignored marked so
    where the point has a ``failurePolicy``, a Reserve another profile shares with this one marked
    ``cluster-wide``, an audited plugin (``enforcement: audit``) after the enforced ones, marked
    ``[audit]``. Reads the built framework."""
    points: list[tuple[str, list[str]]] = []
    for point in EXTENSION_POINTS:
        if point.extender_only and not extender:
            continue
        names = []
        for ep in framework.lists.of(point):
            text = f"{ep.name} ({ep.weight})" if point.attr == "score" else ep.name
            names.append(f"{text} [failurePolicy Ignore]" if point.failure_policy and ep.ignores_errors else text)
        if point.attr == "reserve":
            own = {id(ep.plugin) for ep in framework.lists.reserve}
            names += [f"{p.name} (cluster-wide)" for p in framework.shared_reserve if id(p) not in own]
        for ep in framework.audit.of(point):
            names.append(f"{f'{ep.name} ({ep.weight})' if point.attr == 'score' else ep.name} [audit]")
        points.append((point.key, names))
    return points


__all__ = ["extension_points", "mode", "notes", "print_profile", "validate"]

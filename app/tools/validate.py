"""``validate``: check a configuration file in one run and print, per profile, what will run.

Every problem at once, each with its field path: the schema, the semantic checks, the args each
plugin's factory refuses, and the start-up checks ``serve`` makes before it listens
(:func:`app.bootstrap.check_configuration`). For a valid file, each profile's mode (an extender:
the verbs kube-scheduler calls and how; a standalone scheduler: its ``schedulerName``, no extender
fields) and the plugins it runs per extension point, kube-scheduler's defaults merged, in
kube-scheduler's order (pkg/scheduler/apis/config/types.go ``Plugins``: PreEnqueue, QueueSort,
PreFilter, Filter, PostFilter, PreScore, Score, Reserve, Permit, PreBind, Bind, PostBind).

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
from app.framework.interfaces import PreFilterPlugin, PreScorePlugin
from app.framework.profile import Profile
from app.framework.runtime import EnabledPlugin, Framework


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
    """What ``framework`` runs per extension point, in kube-scheduler's order: ``(point, plugin
    names)``, a score plugin with its weight, a plugin whose errors are ignored marked so, a
    Reserve another profile shares with this one marked ``cluster-wide``; the extender's
    ``preempt`` verb (``extender``) after PostFilter. Reads the built framework: the one place to
    change when the framework's shape does."""

    def names(plugins: Sequence[EnabledPlugin], weights: bool = False) -> list[str]:
        out = []
        for ep in plugins:
            text = f"{ep.name} ({ep.weight})" if weights else ep.name
            out.append(f"{text} [failurePolicy Ignore]" if ep.ignores_errors else text)
        return out

    own = {id(p) for p in framework.reserve_plugins}
    reserve = [p.name for p in framework.reserve_plugins]
    reserve += [f"{p.name} (cluster-wide)" for p in framework.shared_reserve if id(p) not in own]
    points: list[tuple[str, list[str]]] = [
        ("preEnqueue", names(framework.pre_enqueue_plugins)),
        ("queueSort", names(framework.queue_sort_plugins)),
        ("preFilter", [ep.name for ep in framework.filter_plugins if isinstance(ep.plugin, PreFilterPlugin)]),
        ("filter", names(framework.filter_plugins)),
        ("postFilter", names(framework.post_filter_plugins)),
    ]
    if extender:
        points.append(("preempt", names(framework.preemption_plugins)))
    points += [
        ("preScore", [ep.name for ep in framework.score_plugins if isinstance(ep.plugin, PreScorePlugin)]),
        ("score", names(framework.score_plugins, weights=True)),
        ("reserve", reserve),
        ("permit", [p.name for p in framework.permit_plugins]),
        ("preBind", [p.name for p in framework.pre_bind_plugins]),
        ("bind", names(framework.bind_plugins)),
        ("postBind", [p.name for p in framework.post_bind_plugins]),
    ]
    return points


__all__ = ["extension_points", "mode", "notes", "print_profile", "validate"]

"""Command line: ``python -m app serve | replay | validate | schemas | render |
check-scheduler-config`` (console script ``scheduler-extender``).

- ``serve [--config F] [--host H] [--port P]``: run the service (embedded default without --config).
- ``replay [--config F] [--profile P] [--verb V] BODY.json``: run a recorded request body through a
  profile offline and print a per-node table of verdicts, reasons and scores.
- ``validate F [--host H] [--port P]``: check a configuration file as ``serve`` would (every check
  it makes before listening); exit 1 with every problem and its field path.
- ``schemas --out DIR``: write the JSON Schemas of the wire types and the configuration.
- ``render [--config F] --out DIR [--target T]``: write the deployment manifests for the configuration
  (KubeSchedulerConfiguration, static pods, second-scheduler variant, RBAC); see
  :mod:`app.deploy.render`.
- ``certs --out DIR [--name N]``: write the CA, server and kube-scheduler client certificates for
  mutual TLS (:mod:`app.deploy.certs`).
- ``check-scheduler-config FILE [--url URL] [--offline]``: preflight a KubeSchedulerConfiguration
  (strict decoding, upstream validation, then the running service); see :mod:`app.deploy.check`.
- ``reference [--docs DIR] [--check]``: write (or check) the documentation's generated pages
  (:mod:`app.tools.reference`).

Exit codes: 0 success, 1 invalid configuration or input, 2 usage error.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from app import __version__
from app.bootstrap import assemble, build_service, preflight, serve
from app.config import ConfigError, load_config
from app.deploy.render import DEFAULT_KUBERNETES_VERSION
from app.plugins import default_registry


def _replay(args: argparse.Namespace) -> int:
    from app.tools.replay import replay

    return replay(args)


def _explain(args: argparse.Namespace) -> int:
    from app.tools.explain import explain

    return explain(args)


def _schedule(args: argparse.Namespace) -> int:
    """``schedule``: ``serve`` plus the standalone schedulers of the profiles with ``schedulerName``."""
    return _stopped(serve(args.config, args.host, args.port, schedule=True))


def _serve(args: argparse.Namespace) -> int:
    return _stopped(serve(args.config, args.host, args.port))


def _stopped(status: int) -> int:
    """After ``serve``/``schedule`` ran and a signal stopped it (status 0), end the process at once
    with that status, the logs and standard streams flushed: the shutdown is over, and a verb still
    busy in the worker thread (which a normal exit would join) must not hold the process past
    ``server.timeouts.shutdown``. Any other status (a refused start) is returned."""
    if status != 0:
        return status
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _validate(args: argparse.Namespace) -> int:
    """``validate``: the file's schema and semantics, the plugins' args (the frameworks are built),
    and every check ``serve`` makes before it listens (:func:`app.bootstrap.preflight`); every
    problem at once, exit 1 when any."""
    service = build_service(args.config)
    config = service.config
    checked = preflight(config, args.host, args.port, schedule=None)
    for note in checked.notes:
        print(f"note: {note}", file=sys.stderr)
    if checked.errors:
        print(f"error: {args.config}: serve would refuse this configuration:", file=sys.stderr)
        for error in checked.errors:
            print(f"  - {error}", file=sys.stderr)
        return 1
    print(f"{args.config}: valid ({len(config.profiles)} profile(s))")
    for profile in config.profiles:
        ext = profile.extender
        print(
            f"  {profile.name}: verbs {', '.join(ext.verbs)}; nodeCacheCapable {str(ext.node_cache_capable).lower()}; "
            f"filter [{', '.join(profile.plugins.filter.names())}] "
            f"score [{', '.join(profile.plugins.score.names())}]"
        )
    return 0


def _schemas(args: argparse.Namespace) -> int:
    from app.tools.schemas import write_schemas

    for path in write_schemas(Path(args.out)):
        print(path)
    return 0


def _render(args: argparse.Namespace) -> int:
    from app.deploy.render import (
        RenderError,
        RenderOptions,
        default_targets,
        every_target,
        header_source,
        kubernetes_release,
        render,
        target_note,
        write,
    )

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
        files = render(config, registry, options, header_source(args.config), targets)
        written = write(files, Path(args.out))
    except RenderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    if note:
        print(note, file=sys.stderr)
    if args.image is None:
        print(
            f"warning: the manifests use the image {options.extender_image}, which no registry serves: build it "
            "(make image IMAGE=REGISTRY/NAME:TAG), push it, and render again with --image REGISTRY/NAME:TAG "
            "(or load it into each node's container runtime)",
            file=sys.stderr,
        )
    return 0


def _certs(args: argparse.Namespace) -> int:
    from app.deploy.certs import CertsError, issue

    try:
        issued = issue(Path(args.out), args.name, args.days, args.force)
    except (CertsError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path in issued.paths:
        print(path)
    print(f"server certificate for {', '.join(issued.names)}; client certificate CN system:kube-scheduler")
    return 0


def _reference(args: argparse.Namespace) -> int:
    """``reference``: the generated documentation pages (:mod:`app.tools.reference`), from this
    module's own parser, which ``app.tools`` may not import."""
    from app.tools.reference import stale, write_references

    try:
        if args.check:
            problems = stale(build_parser(), Path(args.docs))
            for problem in problems:
                print(f"error: {problem}", file=sys.stderr)
            return 1 if problems else 0
        for path in write_references(build_parser(), Path(args.docs)):
            print(path)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _check_scheduler_config(args: argparse.Namespace) -> int:
    from app.deploy.check import check

    kubeconfig = args.kubeconfig or os.environ.get("KUBECONFIG") or None
    report = check(args.file, url=args.url, offline=args.offline, timeout=args.timeout, kubeconfig=kubeconfig)
    print(report.render())
    return 1 if report.errors else 0


def build_parser() -> argparse.ArgumentParser:
    """The command line: every command, its arguments and examples (``python -m app reference``
    documents them from this parser in docs/reference/cli.md)."""
    parser = argparse.ArgumentParser(
        prog="scheduler-extender",
        description="A Kubernetes scheduler extender: the HTTP webhook kube-scheduler calls to filter, "
        "prioritize, preempt and bind, with pluggable policies.",
        epilog="exit codes: 0 success, 1 invalid configuration or input, 2 usage error",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve",
        help="run the extender service",
        description="Run the extender service: the verbs kube-scheduler calls, health, metrics and /docs.",
        epilog=_examples("serve", "serve --config examples/two-profiles.yaml --port 8889"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--config", help="configuration file (default: the embedded default)")
    serve.add_argument("--host", help="listen address (overrides server.host)")
    serve.add_argument("--port", type=_port, help="listen port, 0..65535 (overrides server.port)")
    serve.set_defaults(func=_serve)
    sched = sub.add_parser(
        "schedule",
        help="run the service and schedule, on its own, the pods whose spec.schedulerName a profile names",
        epilog=_examples("schedule --config examples/chaos-scheduler.yaml"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sched.add_argument("--config", required=True, help="configuration file with profiles that set schedulerName")
    sched.add_argument("--host", help="listen address for health, metrics and explain (overrides server.host)")
    sched.add_argument("--port", type=_port, help="listen port, 0..65535 (overrides server.port)")
    sched.set_defaults(func=_schedule)

    replay = sub.add_parser(
        "replay",
        help="run a recorded request body, or a capture of live traffic, through a configuration offline",
        description="Answer a recorded request body exactly as the server would (filter, then prioritize with "
        "the nodes that passed; or preempt), and print a per-node table. Exit 1 when the answer is an error.",
        epilog=_examples(
            "replay tests/fixtures/extenderargs_nocache_n10.json",
            "replay tests/fixtures/extenderargs_nocache_n10_space.json --verb filter --json",
            "replay --capture capture.jsonl --config new.yaml",
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    replay.add_argument("body", nargs="?", help="ExtenderArgs or ExtenderPreemptionArgs JSON file")
    replay.add_argument(
        "--capture",
        action="append",
        metavar="FILE",
        help="captured traffic (diagnostics.capture, JSON lines): replay every request through --config and "
        "print what would be decided differently; repeatable (oldest file first)",
    )
    replay.add_argument(
        "--json",
        action="store_true",
        help="print the answers as JSON (verb -> status and answer), or with --capture the diff",
    )
    replay.add_argument("--config", help="configuration file (default: the embedded default)")
    replay.add_argument("--profile", help="profile name (default: the default profile)")
    replay.add_argument(
        "--verb",
        choices=["filter", "prioritize", "all"],
        default="all",
        help="for an ExtenderArgs body: one verb on the whole body, or all (default): filter, then prioritize",
    )
    replay.add_argument("--url", help="send the body to the service running here instead (filter, then prioritize)")
    replay.add_argument(
        "--cluster-state",
        action="append",
        metavar="FILE",
        help="nodes, pods and PodGroups (a List as kubectl get -o json writes it) for the cluster "
        "state of stateful policies, instead of an API server; repeatable",
    )
    replay.set_defaults(func=_replay)
    validate = sub.add_parser(
        "validate",
        help="check a configuration file as serve would, every problem at once",
        description="Check a configuration file: its schema and semantics, each plugin's args, and every "
        "check serve makes before it listens (bind exposure, TLS files). Exit 0 when serve would start, "
        "1 with every problem and its field path.",
        epilog=_examples("validate examples/two-profiles.yaml", "validate my-config.yaml --port 9443"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    validate.add_argument("config", help="the configuration file (YAML, kind ExtenderConfiguration)")
    validate.add_argument("--host", help="check as serve --host would listen (overrides server.host)")
    validate.add_argument("--port", type=_port, help="check as serve --port would listen (overrides server.port)")
    validate.set_defaults(func=_validate)
    schemas = sub.add_parser(
        "schemas",
        help="write JSON Schemas of the wire types and the configuration",
        description="Write one JSON Schema file per extender wire type (ExtenderArgs, ExtenderFilterResult, ...) "
        "and one for the configuration (ExtenderConfiguration.json) into a directory.",
        epilog=_examples("schemas --out schemas"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    schemas.add_argument(
        "--out", required=True, metavar="DIR", help="directory to write the .json files to (created if missing)"
    )
    schemas.set_defaults(func=_schemas)
    rend = sub.add_parser(
        "render",
        help="write deployment manifests rendered from a configuration",
        description="Write the deployment manifests of one install target (or all) rendered from a configuration.",
        epilog=_examples(
            "render --config examples/cluster.yaml --target kubeadm --out manifests",
            "render --config examples/ip-scheduler.yaml --target standalone --image REGISTRY/scheduler-extender:0.1.0 "
            "--out ip",
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rend.add_argument("--config", help="configuration file (default: the embedded default)")
    rend.add_argument("--out", required=True, help="output directory")
    from app.deploy.render import TARGETS

    rend.add_argument(
        "--target",
        action="append",
        choices=[*TARGETS, "all"],
        help="write only this install mode's files; repeatable; all: every mode (default: standalone when a "
        "profile sets schedulerName, else kubeadm and static-pod)",
    )
    rend.add_argument(
        "--kubernetes-version",
        help=f"your control plane's release, vMAJOR.MINOR.PATCH, for the kube-scheduler image "
        f"(default: {DEFAULT_KUBERNETES_VERSION}; kube-scheduler must not be newer than the API server)",
    )
    rend.add_argument("--image", help="the extender's image (default: scheduler-extender:<version>)")
    rend.add_argument("--scheduler-name", help="add a kube-scheduler profile with this schedulerName (kubeadm config)")
    rend.add_argument(
        "--second-scheduler-name", help="schedulerName of second-scheduler/ (default: extender-scheduler)"
    )
    rend.add_argument("--namespace", help="namespace of second-scheduler/ (default: kube-system)")
    rend.set_defaults(func=_render)
    certs = sub.add_parser(
        "certs",
        help="write a CA, the extender's server certificate and kube-scheduler's client certificate",
        epilog=_examples("certs --out pki", "certs --out pki --name extender.example.com --force"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    certs.add_argument("--out", required=True, help="directory (render mounts /etc/kubernetes/scheduler-extender/pki)")
    certs.add_argument(
        "--name",
        action="append",
        default=[],
        help="another DNS name or IP address for the server certificate; repeatable",
    )
    certs.add_argument("--days", type=int, default=365, help="validity of the two leaf certificates (default 365)")
    certs.add_argument("--force", action="store_true", help="replace existing files")
    certs.set_defaults(func=_certs)
    exp = sub.add_parser(
        "explain",
        help="why a pod was (not) placed: the service's recent decisions for it",
        epilog=_examples("explain shop/web-frontend-8nwljbtfbb-p4hn7", "explain shop/web --url http://127.0.0.1:8889"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    exp.add_argument("pod", help="NAMESPACE/NAME")
    exp.add_argument(
        "--url", default="http://127.0.0.1:8888", help="the running service (default http://127.0.0.1:8888)"
    )
    exp.add_argument("--cacert", help="CA that signed the service's certificate (https)")
    exp.add_argument("--cert", help="client certificate (when the service sets server.tls.clientCAFile)")
    exp.add_argument("--key", help="the client certificate's key")
    exp.add_argument("--json", action="store_true", help="print the /explain JSON instead of the table")
    exp.add_argument("--top", type=int, default=5, help="highest-scored nodes to show per prioritize (default 5)")
    exp.set_defaults(func=_explain)

    chk = sub.add_parser(
        "check-scheduler-config",
        help="preflight a KubeSchedulerConfiguration against this service",
        epilog=_examples(
            "check-scheduler-config /etc/kubernetes/kube-scheduler-config.yaml",
            "check-scheduler-config manifests/kube-scheduler-config.yaml --offline",
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    chk.add_argument(
        "file",
        help="a KubeSchedulerConfiguration, or kube-scheduler's static pod manifest (then: does it run with "
        "--config, and that file's checks)",
    )
    chk.add_argument(
        "--kubeconfig",
        help="with a static pod manifest: compare its kube-scheduler image with the API server's version "
        "(default: $KUBECONFIG when set)",
    )
    chk.add_argument("--url", help="reach the service here instead of each urlPrefix's scheme://host:port")
    chk.add_argument("--offline", action="store_true", help="skip the checks against the running service")
    chk.add_argument("--timeout", type=float, default=5.0, help="seconds per request (default 5)")
    chk.set_defaults(func=_check_scheduler_config)
    ref = sub.add_parser(
        "reference",
        help="write the generated pages of the documentation: configuration, command line, plugin args",
        description="Write docs/reference/configuration.md (from the configuration models), docs/reference/cli.md "
        "(from this command line) and the args table of each plugin page under docs/plugins/.",
        epilog=_examples("reference", "reference --check"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ref.add_argument("--docs", default="docs", metavar="DIR", help="the documentation directory (default: docs)")
    ref.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each file that is out of date")
    ref.set_defaults(func=_reference)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m app`` and the ``scheduler-extender`` script."""
    args = build_parser().parse_args(argv)
    try:
        result: int = args.func(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a file that cannot be read or written: the user's to fix, no traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    return result


def _examples(*commands: str) -> str:
    """A subcommand's help epilog: example command lines."""
    return "examples:\n" + "\n".join(f"  python -m app {c}" for c in commands)


def _port(text: str) -> int:
    """``--port``: an integer 0..65535, as ``server.port`` in the configuration file."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: expected an integer 0..65535") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {port}: expected 0..65535")
    return port

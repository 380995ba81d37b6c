"""Command line: ``python -m app serve | schedule | shadow | replay | validate | schemas | render |
certs | explain | shadow-report | check-scheduler-config | reference`` (console script ``scheduler-extender``): argument
parsing and dispatch only; each command's body is in the layer it belongs to
(:mod:`app.bootstrap.serve` for ``serve``/``schedule``, :mod:`app.tools` for the others), imported
when the command runs.

- ``serve [--config F] [--host H] [--port P]``: run the service (embedded default without --config).
- ``shadow --config F [--profile P] [--scheduler-name N]``: run a profile beside another scheduler,
  read-only, and record what it would have done for each pod that scheduler binds
  (:mod:`app.tools.shadow`); ``shadow-report (--url U | --file F)`` reports the agreement.
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
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from app import __version__
from app.config import ConfigError
from app.deploy.render import DEFAULT_KUBERNETES_VERSION

if TYPE_CHECKING:
    #: What ``ArgumentParser.add_subparsers`` returns.
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


# -- dispatch: each command's body lives in the layer it belongs to, imported when it runs ----------


def _serve(args: argparse.Namespace) -> int:
    from app.bootstrap.serve import serve_command

    return serve_command(args)


def _schedule(args: argparse.Namespace) -> int:
    from app.bootstrap.serve import schedule_command

    return schedule_command(args)


def _shadow(args: argparse.Namespace) -> int:
    from app.tools.shadow import shadow_command

    return shadow_command(args)


def _shadow_report(args: argparse.Namespace) -> int:
    from app.tools.shadow_report import shadow_report

    return shadow_report(args)


def _replay(args: argparse.Namespace) -> int:
    from app.tools.replay import replay

    return replay(args)


def _validate(args: argparse.Namespace) -> int:
    from app.tools.validate import validate

    return validate(args)


def _schemas(args: argparse.Namespace) -> int:
    from app.tools.schemas import schemas

    return schemas(args)


def _render(args: argparse.Namespace) -> int:
    from app.tools.deploy import render

    return render(args)


def _certs(args: argparse.Namespace) -> int:
    from app.tools.deploy import certs

    return certs(args)


def _explain(args: argparse.Namespace) -> int:
    from app.tools.explain import explain

    return explain(args)


def _check_scheduler_config(args: argparse.Namespace) -> int:
    from app.tools.deploy import check_scheduler_config

    return check_scheduler_config(args)


def _reference(args: argparse.Namespace) -> int:
    """``reference``: the generated documentation pages, from this module's own parser, which
    ``app.tools`` may not import."""
    from app.tools.reference import reference

    return reference(args, build_parser())


# -- parsing --------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The command line: every command, its arguments and examples (``python -m app reference``
    documents them from this parser in docs/reference/cli.md), one ``_add_<command>`` each, in
    :data:`COMMANDS` order."""
    parser = argparse.ArgumentParser(
        prog="scheduler-extender",
        description="A Kubernetes scheduler extender: the HTTP webhook kube-scheduler calls to filter, "
        "prioritize, preempt and bind, with pluggable policies.",
        epilog="exit codes: 0 success, 1 invalid configuration or input, 2 usage error",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    return parser


def _command(
    sub: Subparsers, name: str, help: str, description: str, examples: Sequence[str]
) -> argparse.ArgumentParser:
    """Add the subcommand ``name``: its one-line ``help`` (the command list), its ``description``
    (its own ``--help``) and example command lines."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        description=description,
        epilog=_examples(*examples),
        formatter_class=_HelpFormatter,
    )
    return parser


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's help, the description wrapped to the terminal, the examples epilog as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def _add_serve(sub: Subparsers) -> None:
    serve = _command(
        sub,
        "serve",
        "run the extender service",
        "Run the extender service: the verbs kube-scheduler calls, health, metrics and /docs. Exits 0 once "
        "SIGTERM or SIGINT stopped it (within server.timeouts.shutdown), 1 when it refuses to start.",
        ["serve", "serve --config examples/two-profiles.yaml --port 8889"],
    )
    serve.add_argument("--config", help="configuration file (default: the embedded default)")
    serve.add_argument("--host", help="listen address (overrides server.host)")
    serve.add_argument("--port", type=_port, help="listen port, 0..65535 (overrides server.port)")
    serve.set_defaults(func=_serve)


def _add_schedule(sub: Subparsers) -> None:
    sched = _command(
        sub,
        "schedule",
        "run the service and schedule, on its own, the pods whose spec.schedulerName a profile names",
        "Run the service and, for each profile with schedulerName, a scheduler of its own: it binds the pods "
        "whose spec.schedulerName is that name, with kube-scheduler's default plugins and the profile's. "
        "Replicas elect one leader per scheduler on a Lease (scheduling.leaderElect); /readyz says which "
        "replica leads. On SIGTERM the leader stops scheduling, releases its Lease and exits 0 within "
        "server.timeouts.shutdown.",
        ["schedule --config examples/chaos-scheduler.yaml"],
    )
    sched.add_argument("--config", required=True, help="configuration file with profiles that set schedulerName")
    sched.add_argument("--host", help="listen address for health, metrics and explain (overrides server.host)")
    sched.add_argument("--port", type=_port, help="listen port, 0..65535 (overrides server.port)")
    sched.set_defaults(func=_schedule)


def _add_shadow(sub: Subparsers) -> None:
    shadow = _command(
        sub,
        "shadow",
        "run a profile beside another scheduler, read-only, and record what it would have done",
        "Follow the pods another scheduler binds (spec.schedulerName default-scheduler, or each "
        "--scheduler-name) and, for each bind, run the profile's scheduling cycle (PreFilter, Filter on every "
        "node, PreScore, Score of every feasible node) on the cluster state as it was just before that bind. "
        "Each record says whether the bound node is the profile's best (same), feasible but ranked lower "
        "(feasible) or rejected (infeasible), and why. Nothing is written to the cluster (no Binding, "
        "status, Event or Lease; no leader election). Serves /metrics (scheduler_shadow_decisions_total), "
        "/explain and GET /shadow (the records). Exits 0 once SIGTERM or SIGINT stopped it, 1 when it refuses "
        "to start.",
        [
            "shadow --config examples/cluster.yaml --port 8890",
            "shadow --config shadow.yaml --profile default --scheduler-name default-scheduler --record shadow.jsonl",
        ],
    )
    shadow.add_argument("--config", required=True, help="configuration file with a cluster: section")
    shadow.add_argument("--profile", help="the profile to run (default: the first profile)")
    shadow.add_argument(
        "--scheduler-name",
        action="append",
        help="follow the binds of the pods with this spec.schedulerName; repeatable (default: default-scheduler)",
    )
    shadow.add_argument("--record", help="also append each record to this file as a JSON line")
    shadow.add_argument(
        "--max-records", type=int, default=10_000, help="records kept in memory for /shadow (default 10000)"
    )
    shadow.add_argument("--host", help="listen address for metrics, explain and /shadow (overrides server.host)")
    shadow.add_argument("--port", type=_port, help="listen port, 0..65535 (overrides server.port)")
    shadow.set_defaults(func=_shadow)


def _add_shadow_report(sub: Subparsers) -> None:
    rep = _command(
        sub,
        "shadow-report",
        "the shadow scheduler's agreement with the scheduler it follows, and its disagreements",
        "Read the shadow scheduler's records, from a running shadow (--url: GET /shadow, the records it keeps) "
        "or from the file shadow --record wrote (--file), and print the agreement rate (same / shadowed binds) "
        "and each pod on which the profile disagreed: the bound and the chosen node, their TotalScore, the "
        "bound node's rank and the plugin that made the difference (the largest weighted score difference, or "
        "the plugin that rejected the bound node). Exit 1 when the records cannot be read.",
        ["shadow-report --url http://127.0.0.1:8890", "shadow-report --file shadow.jsonl --json"],
    )
    source = rep.add_mutually_exclusive_group(required=True)
    source.add_argument("--url", help="a running shadow scheduler, e.g. http://127.0.0.1:8890")
    source.add_argument("--file", help="the JSON lines shadow --record wrote")
    rep.add_argument("--json", action="store_true", help="print the report as JSON")
    rep.set_defaults(func=_shadow_report)


def _add_replay(sub: Subparsers) -> None:
    replay = _command(
        sub,
        "replay",
        "run a recorded request body, or a capture of live traffic, through a configuration offline",
        "Answer a recorded request body exactly as the server would (filter, then prioritize with "
        "the nodes that passed; or preempt), and print a per-node table. Exit 1 when the answer is an error.",
        [
            "replay tests/fixtures/extenderargs_nocache_n10.json",
            "replay tests/fixtures/extenderargs_nocache_n10_space.json --verb filter --json",
            "replay --capture capture.jsonl --config new.yaml",
        ],
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


def _add_validate(sub: Subparsers) -> None:
    validate = _command(
        sub,
        "validate",
        "check a configuration file as serve would, every problem at once, and show what will run",
        "Check a configuration file in one run: its schema and semantics, each plugin's args, and every "
        "check serve makes before it listens (TLS files, the metrics listener). Exit 0 with, per profile, "
        "its mode (the verbs kube-scheduler calls, or the schedulerName it schedules) and the plugins it "
        "runs at each extension point in kube-scheduler's order; 1 with every problem and its field path. "
        "A bind that render secures by itself (mutual TLS) is accepted, with a note.",
        ["validate examples/two-profiles.yaml", "validate my-config.yaml --port 9443"],
    )
    validate.add_argument("config", help="the configuration file (YAML, kind ExtenderConfiguration)")
    validate.add_argument("--host", help="check as serve --host would listen (overrides server.host)")
    validate.add_argument("--port", type=_port, help="check as serve --port would listen (overrides server.port)")
    validate.set_defaults(func=_validate)


def _add_schemas(sub: Subparsers) -> None:
    schemas = _command(
        sub,
        "schemas",
        "write JSON Schemas of the wire types and the configuration",
        "Write one JSON Schema file per extender wire type (ExtenderArgs, ExtenderFilterResult, ...) "
        "and one for the configuration (ExtenderConfiguration.json) into a directory.",
        ["schemas --out schemas"],
    )
    schemas.add_argument(
        "--out", required=True, metavar="DIR", help="directory to write the .json files to (created if missing)"
    )
    schemas.set_defaults(func=_schemas)


def _add_render(sub: Subparsers) -> None:
    from app.deploy.render import TARGETS

    rend = _command(
        sub,
        "render",
        "write deployment manifests rendered from a configuration",
        "Write the deployment manifests of one install target (or all) rendered from a configuration.",
        [
            "render --config examples/cluster.yaml --target kubeadm --out manifests",
            "render --config examples/ip-scheduler.yaml --target standalone --image REGISTRY/scheduler-extender:0.1.0 "
            "--out ip",
        ],
    )
    rend.add_argument("--config", help="configuration file (default: the embedded default)")
    rend.add_argument("--out", required=True, help="output directory")
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


def _add_certs(sub: Subparsers) -> None:
    certs = _command(
        sub,
        "certs",
        "write a CA, the extender's server certificate and kube-scheduler's client certificate",
        "Write the files of mutual TLS between kube-scheduler and the extender into a directory: a CA "
        "(ca.crt, ca.key; 10 years), the extender's serving certificate (server.crt, server.key) for "
        "127.0.0.1, ::1, localhost and each --name, and kube-scheduler's client certificate (scheduler.crt, "
        "scheduler.key; CN system:kube-scheduler, which the extender admits to bind). Keys are written mode "
        "0600; a directory that already holds any of these files is refused unless --force.",
        ["certs --out pki", "certs --out pki --name extender.example.com --force"],
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


def _add_explain(sub: Subparsers) -> None:
    exp = _command(
        sub,
        "explain",
        "why a pod was (not) placed: the service's recent decisions for it",
        "Ask a running service (GET /explain/NAMESPACE/NAME) why it placed a pod or not, and print its "
        "recent decisions, oldest first: per filter, prioritize, preempt and bind, each node's verdict, "
        "the plugin that decided and its reason, the highest scores, and the outcome. Exit 1 when the "
        "service has no decision for the pod or cannot be reached, 2 for a malformed NAMESPACE/NAME.",
        ["explain shop/web-frontend-8nwljbtfbb-p4hn7", "explain shop/web --url http://127.0.0.1:8889"],
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


def _add_check_scheduler_config(sub: Subparsers) -> None:
    chk = _command(
        sub,
        "check-scheduler-config",
        "preflight a KubeSchedulerConfiguration against this service",
        "Check a KubeSchedulerConfiguration (or kube-scheduler's static pod manifest) before kube-scheduler "
        "reads it: strict decoding and kube-scheduler's own validation, what upstream accepts but breaks in "
        "practice, the files its tlsConfig names, then each extenders: entry against the running service "
        "(the profile its urlPrefix names, each verb answering with its result type, nodeCacheCapable, the "
        "scheme and client certificate), with probes that change nothing. Exit 1 when an error is found "
        "(warnings allowed).",
        [
            "check-scheduler-config /etc/kubernetes/kube-scheduler-config.yaml",
            "check-scheduler-config manifests/kube-scheduler-config.yaml --offline",
        ],
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


def _add_reference(sub: Subparsers) -> None:
    ref = _command(
        sub,
        "reference",
        "write the generated pages of the documentation: configuration, command line, plugin args",
        "Write docs/reference/configuration.md (from the configuration models), docs/reference/cli.md "
        "(from this command line) and the args table of each plugin page under docs/plugins/.",
        ["reference", "reference --check"],
    )
    ref.add_argument("--docs", default="docs", metavar="DIR", help="the documentation directory (default: docs)")
    ref.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each file that is out of date")
    ref.set_defaults(func=_reference)


#: The subcommands, in the order ``--help`` lists them: each adds its parser.
COMMANDS: tuple[Callable[[Subparsers], None], ...] = (
    _add_serve,
    _add_schedule,
    _add_shadow,
    _add_replay,
    _add_validate,
    _add_schemas,
    _add_render,
    _add_certs,
    _add_explain,
    _add_shadow_report,
    _add_check_scheduler_config,
    _add_reference,
)


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

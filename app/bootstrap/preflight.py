"""Preflight: every check a command makes of a configuration file before it starts, in one run.

:func:`check_configuration` reads the file, parses it (schema and semantic checks), assembles
what is valid (:func:`~app.bootstrap.assemble.assemble`: the args each plugin's factory refuses)
and runs the start-up checks (:func:`preflight`: bind exposure with the effective address,
``schedulerName`` for ``schedule``, the TLS files, the metrics listener's) on the sections and
profiles valid on their own (:func:`~app.config.valid_parts`), so a file's problems come in one
run. ``serve``, ``schedule`` and ``validate`` all call it, so they cannot disagree about what
starts. The TLS contexts themselves are :mod:`app.api.server`'s: this loads them only.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TextIO

from app.bootstrap.assemble import Assembly, assemble
from app.config import (
    ConfigError,
    Configuration,
    bind_exposure,
    metrics_exposure,
    parse_config,
    read_config,
    valid_parts,
)
from app.framework.registry import Registry
from app.plugins import default_registry

#: The commands :func:`preflight` checks for.
Command = Literal["serve", "schedule", "validate"]


@dataclass
class Preflight:
    """What :func:`preflight` found: ``errors`` the command refuses to start with, ``notes`` it
    starts with (warnings). ``bind_exposure``: why ``bind`` would be served without
    client-certificate verification, when ``server.insecureBind`` does not accept it (an error of
    ``serve`` and ``schedule``; ``validate`` says whether ``render`` secures it)."""

    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    bind_exposure: str | None = None


@dataclass
class Checked:
    """What :func:`check_configuration` found in the file ``source``: ``problems`` of the
    configuration itself (schema, semantics, and the plugins' args as their factories judge
    them: ``field.path: message``), ``preflight`` the start-up checks, and the ``assembly`` built
    when there is no problem."""

    source: str
    problems: list[str]
    preflight: Preflight
    assembly: Assembly | None

    @property
    def errors(self) -> bool:
        """Whether the command refuses the file."""
        return bool(self.problems or self.preflight.errors)


def check_configuration(
    path: str | None,
    command: Command,
    host: str | None = None,
    port: int | None = None,
    registry: Registry | None = None,
) -> Checked:
    """Every check of the configuration file ``path`` (``None``: the embedded default) in one
    run, each stage on what the previous ones found valid: the schema and the semantic checks
    (:func:`~app.config.parse_config`), then the plugins' factories (:func:`assemble`: the args
    each refuses) and the start-up checks of ``command`` (:func:`preflight`) on the sections and
    profiles that are valid on their own (:func:`~app.config.valid_parts`), so a file with a
    mistake at each stage shows them all at once."""
    registry = registry or default_registry()
    try:
        data, source = read_config(path)
    except ConfigError as exc:
        return Checked(exc.source, exc.problems, Preflight(), None)
    positions: Sequence[int] | None = None
    server_valid = True
    try:
        config = parse_config(data, registry, source)
        problems: list[str] = []
    except ConfigError as exc:
        problems = list(exc.problems)
        parts = valid_parts(data, registry)
        if parts is None:
            return Checked(source, problems, Preflight(), None)
        config, positions, server_valid = parts.config, parts.positions, parts.server
    assembly = None
    try:
        assembly = assemble(config, registry, source, positions)
    except ConfigError as exc:
        problems += exc.problems
    checked = Preflight()
    if server_valid:
        # with profiles left out (invalid), whether one sets schedulerName cannot be told
        judged: Command = "serve" if command == "schedule" and positions is not None else command
        checked = preflight(config, host, port, judged)
    return Checked(source, list(dict.fromkeys(problems)), checked, None if problems else assembly)


def report_refusal(checked: Checked, out: TextIO) -> None:
    """Write what :func:`check_configuration` refuses to ``out``: the configuration's problems as
    :class:`~app.config.ConfigError` says them, then each start-up check that failed."""
    if checked.problems:
        print(f"error: {ConfigError(checked.problems, checked.source)}", file=out)
    for error in checked.preflight.errors:
        print(f"error: {error}", file=out)


def preflight(
    config: Configuration, host: str | None = None, port: int | None = None, command: Command = "serve"
) -> Preflight:
    """Every check ``command`` makes of an assembled configuration before it listens, with the
    effective ``host``/``port`` (``None``: the configuration's): ``schedule`` needs a profile with
    ``schedulerName``; bind exposure (an error unless ``server.insecureBind``, except for
    ``validate``: :attr:`Preflight.bind_exposure`); the TLS files load; the metrics listener's.
    ``validate`` and ``serve`` both call this, so they cannot disagree about what starts."""
    out = Preflight()
    server = config.server
    if command == "schedule" and not any(p.scheduler_name for p in config.profiles):
        out.errors.append(
            "no profile sets schedulerName: schedule runs a scheduler for the pods whose "
            "spec.schedulerName a profile names (see examples/chaos-scheduler.yaml)"
        )
    exposure = bind_exposure(config, host, port)
    if exposure is not None and not server.insecure_bind:
        out.bind_exposure = exposure
        if command != "validate":
            out.errors.append(bind_refusal(exposure))
    elif exposure is not None:
        out.notes.append(f"server.insecureBind: {exposure}")
    if server.tls is not None:
        from app.api.server import ssl_context

        tls = server.tls
        files = {"certFile": tls.cert_file, "keyFile": tls.key_file, "clientCAFile": tls.client_ca_file}
        _tls_files_load("server.tls", lambda: ssl_context(tls), out, files)
    if server.metrics_listener is not None:
        _metrics_preflight(config, port if port is not None else server.port, out)
    return out


def bind_refusal(exposure: str) -> str:
    """The error of a ``bind`` served without client-certificate verification (``exposure``: why,
    from :func:`~app.config.bind_exposure`) and how to secure or accept it."""
    return (
        f"{exposure}. Set server.tls with clientCAFile (python -m app certs makes the files), "
        "or server.insecureBind: true to accept that exposure"
    )


def _metrics_preflight(config: Configuration, port: int, out: Preflight) -> None:
    """``server.metrics``: a port of its own (the effective one, ``--port`` included), credentials
    for the reviews unless ``insecure`` (a warning then says what is exposed), TLS files that load."""
    metrics = config.server.metrics_listener
    assert metrics is not None
    if metrics.port == port:
        out.errors.append(
            f"server.metrics.port ({metrics.port}) is the verbs' port too: set another server.metrics.port"
        )
    if metrics.insecure:
        out.notes.append(metrics_exposure(metrics))
        return
    if metrics.kubeconfig is None and config.cluster is None:
        out.errors.append(
            "server.metrics: the metrics listener authenticates and authorizes its callers through the API server "
            "(TokenReview, SubjectAccessReview, as kube-scheduler does) and has no credentials for it: set "
            "server.metrics.kubeconfig, or add a cluster: section (its credentials are used); or set "
            "server.metrics.insecure: true to serve the metrics to anyone without authentication"
        )
    # the files only: the self-signed certificate is made at start, not to check a configuration
    from app.api.server import metrics_ssl_context

    paths = {"clientCAFile": metrics.client_ca_file}
    if metrics.tls is not None:
        paths = {"tls.certFile": metrics.tls.cert_file, "tls.keyFile": metrics.tls.key_file, **paths}
    if metrics.tls is not None or metrics.client_ca_file:
        _tls_files_load("server.metrics", lambda: metrics_ssl_context(metrics, self_signed=False), out, paths)


def _tls_files_load(section: str, load: Callable[[], object], out: Preflight, files: Mapping[str, str | None]) -> None:
    """``load()`` (a TLS context from ``section``'s ``files``: field -> path), its failure an
    error naming the file; each file that cannot be read an error at its field's path."""
    unread = []
    for key, path in files.items():
        if path:
            try:
                with open(path, "rb"):
                    pass
            except OSError as exc:
                unread.append(f"{section}.{key}: cannot read {path}: {exc.strerror or exc}")
    if unread:
        out.errors.extend(unread)
        return
    try:
        load()
    except (OSError, ssl.SSLError) as exc:
        what = f"{exc.filename}: " if isinstance(exc, OSError) and exc.filename else ""
        out.errors.append(f"{section}: the certificate, key or client CA does not load: {what}{exc.strerror or exc}")


__all__ = ["Checked", "Command", "Preflight", "bind_refusal", "check_configuration", "preflight", "report_refusal"]

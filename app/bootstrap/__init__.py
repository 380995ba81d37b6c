"""The one composition root: configuration -> registry -> cluster state -> frameworks (each built
once) -> serve and/or schedule, on ONE asyncio loop. Three phases, one module each, read in order:

- :mod:`app.bootstrap.assemble`: a validated configuration -> the cluster state (the needs every
  enabled plugin declares registered) -> one :class:`~app.framework.runtime.Framework` per
  profile (:class:`Assembly`); nothing connected. ``validate``, ``render``, ``replay`` and
  ``serve`` all assemble, so they agree on what is valid.
- :mod:`app.bootstrap.preflight`: every check a command makes of a file before it starts, in one
  run (:func:`check_configuration`).
- :mod:`app.bootstrap.serve`: ``serve``/``schedule`` connect the cluster state and run the HTTP
  server and the standalone schedulers until SIGTERM/SIGINT (:func:`serve`).
"""

from app.bootstrap.assemble import (
    Assembly,
    assemble,
    build_service,
    cluster_settings,
    decision_store,
    load_assembly,
)
from app.bootstrap.preflight import (
    Checked,
    Command,
    Preflight,
    bind_refusal,
    check_configuration,
    preflight,
    report_refusal,
)
from app.bootstrap.serve import build_app, schedule_command, serve, serve_command

__all__ = [
    "Assembly",
    "Checked",
    "Command",
    "Preflight",
    "assemble",
    "bind_refusal",
    "build_app",
    "build_service",
    "check_configuration",
    "cluster_settings",
    "decision_store",
    "load_assembly",
    "preflight",
    "report_refusal",
    "schedule_command",
    "serve",
    "serve_command",
]

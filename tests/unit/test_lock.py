"""The locks (``requirements.lock``: what the image and ``make run`` install; ``requirements-dev.lock``:
``make test`` on top) agree with ``pyproject.toml``, without network: every declared requirement
is pinned to a version it admits, every pin carries hashes, nothing is pinned for a requirement
that is no longer declared, and the two locks pin the runtime alike."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from ..conftest import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
#: ``name==version \`` then its ``--hash=`` lines, then ``# via`` lines (uv pip compile's format)
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def parse_lock(path: Path) -> dict[str, tuple[str, int, set[str]]]:
    """``{canonical name: (version, hashes, what it is pinned for)}`` of a lock file; "what for"
    is the ``# via`` annotations (``scheduler-extender (pyproject.toml)``: a direct requirement)."""
    pins: dict[str, tuple[str, int, set[str]]] = {}
    name = ""
    for line in path.read_text().splitlines():
        if m := PIN.match(line):
            name = canonicalize_name(m.group(1))
            pins[name] = (m.group(2), 0, set())
        elif line.strip().startswith("--hash=sha256:") and name:
            version, hashes, via = pins[name]
            pins[name] = (version, hashes + 1, via)
        elif line.strip().startswith("#") and name:
            via_text = line.strip().lstrip("#").strip()
            if via_text and via_text != "via":
                pins[name][2].add(via_text.removeprefix("via ").strip())
    return pins


def declared(extra: str | None = None) -> list[Requirement]:
    """The requirements ``pyproject.toml`` declares (``extra``: plus that optional group)."""
    reqs = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
    if extra is not None:
        reqs += [Requirement(r) for r in PYPROJECT["project"]["optional-dependencies"][extra]]
    return reqs


def disagreements(lock: dict[str, tuple[str, int, set[str]]], reqs: list[Requirement]) -> list[str]:
    """What makes ``lock`` disagree with ``reqs`` (empty: they agree)."""
    problems = []
    names = {canonicalize_name(r.name) for r in reqs}
    for req in reqs:
        pin = lock.get(canonicalize_name(req.name))
        if pin is None:
            problems.append(f"{req} is declared but not pinned")
        elif not req.specifier.contains(pin[0], prereleases=True):
            problems.append(f"{req} is declared but {req.name}=={pin[0]} is pinned")
    for name, (version, hashes, via) in lock.items():
        if hashes == 0:
            problems.append(f"{name}=={version} has no hash")
        direct = any(v.startswith("scheduler-extender") for v in via)
        if direct and name not in names:
            problems.append(f"{name}=={version} is pinned for a requirement pyproject.toml no longer declares")
    return problems


@pytest.mark.parametrize(("lock", "extra"), [("requirements.lock", None), ("requirements-dev.lock", "dev")])
def test_the_lock_agrees_with_pyproject(lock: str, extra: str | None) -> None:
    assert disagreements(parse_lock(REPO / lock), declared(extra)) == [], "run `make lock`"


def test_the_dev_lock_pins_the_runtime_as_the_image_does() -> None:
    runtime, dev = parse_lock(REPO / "requirements.lock"), parse_lock(REPO / "requirements-dev.lock")
    assert {n: v[0] for n, v in runtime.items()} == {n: dev[n][0] for n in runtime}


def test_a_disagreement_is_found(tmp_path: Path) -> None:
    """The check fails for a requirement raised past its pin, one added, one dropped."""
    lock = parse_lock(REPO / "requirements.lock")
    reqs = declared()
    raised = [Requirement("fastapi>=999") if r.name == "fastapi" else r for r in reqs]
    assert disagreements(lock, raised) == [f"fastapi>=999 is declared but fastapi=={lock['fastapi'][0]} is pinned"]
    assert disagreements(lock, [*reqs, Requirement("left-pad>=1")]) == ["left-pad>=1 is declared but not pinned"]
    dropped = [r for r in reqs if r.name != "httpx"]
    assert disagreements(lock, dropped) == [
        f"httpx=={lock['httpx'][0]} is pinned for a requirement pyproject.toml no longer declares"
    ]


def test_make_and_the_dockerfile_install_the_lock_with_hashes() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert "pip install --quiet --require-hashes -r $(LOCK)" in makefile
    assert "pip install --quiet --require-hashes -r $(DEV_LOCK)" in makefile
    assert "--no-deps ." in makefile
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "--require-hashes -r requirements.lock" in dockerfile and "--no-deps" in dockerfile
    assert "!requirements.lock" in (REPO / ".dockerignore").read_text()

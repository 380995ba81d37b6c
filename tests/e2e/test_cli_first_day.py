"""The first-day findings of issue 23, through the real ``python -m app`` and the real server:
validate runs serve's checks, every configuration problem at once, replay answers what the
server answers, usage errors name what to type, help shows examples, a taken port is one line,
schemas needs --out, and ``GET /`` points somewhere."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import REPO, Server, cli, no_traceback

FIXTURES = REPO / "tests" / "fixtures"
BODIES = sorted(p.name for p in FIXTURES.glob("*.json") if p.name != "manifest.json")


def test_validate_runs_the_checks_serve_makes_with_the_effective_port() -> None:
    out = cli("validate", "examples/cluster.yaml")
    no_traceback(out)
    # a bind render secures by itself (mutual TLS) is accepted with a note naming the effective address
    assert out.returncode == 0 and "valid (1 profile)" in out.stdout
    assert "serves bind without client-certificate verification" in out.stderr and "127.0.0.1:8888" in out.stderr
    assert "schedule (not serve)" not in out.stderr  # schedule's own check is not validate's to note
    out = cli("validate", "examples/cluster.yaml", "--port", "8890")
    assert out.returncode == 0 and "127.0.0.1:8890" in out.stderr and "8888" not in out.stderr
    served = cli("serve", "--config", "examples/cluster.yaml", "--port", "8890")
    no_traceback(served)
    assert served.returncode == 1 and "127.0.0.1:8890 could bind" in served.stderr and "8888" not in served.stderr
    good = cli("validate", "examples/two-profiles.yaml")
    assert good.returncode == 0 and "valid (2 profiles)" in good.stdout


def test_schedule_reports_every_refusal_at_once() -> None:
    out = cli("schedule", "--config", "examples/cluster.yaml", "--port", "8891")
    no_traceback(out)
    assert out.returncode == 1
    assert "error: no profile sets schedulerName" in out.stderr
    assert "127.0.0.1:8891 could bind any pending pod" in out.stderr


def test_validate_reports_schema_and_semantic_problems_together(tmp_path: Path) -> None:
    doc = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "server": {"port": 99999, "defaultProfile": "spac"},
        "profiles": [
            {"name": "space", "extender": {"verbs": ["filter"]}, "plugins": {"filter": [{"name": "AnotationX"}]}}
        ],
    }
    bad = tmp_path / "two-mistakes.yaml"
    bad.write_text(yaml.safe_dump(doc))
    out = cli("validate", str(bad))
    no_traceback(out)
    assert out.returncode == 1
    assert "server.port: Input should be less than or equal to 65535" in out.stderr
    assert "profiles[0].plugins.filter[0].name: unknown plugin 'AnotationX'" in out.stderr
    assert "server.defaultProfile: no profile is named 'spac' (did you mean 'space'?)" in out.stderr


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.stop()


def _verbs(name: str) -> list[str]:
    if name.startswith("extenderargs"):
        return ["filter", "prioritize"]
    return ["preempt"] if name.startswith("preemptionargs") else ["bind"]


@pytest.mark.parametrize("name", BODIES)
def test_replay_answers_what_the_server_answers(server: Server, name: str) -> None:
    body = (FIXTURES / name).read_bytes()
    for verb in _verbs(name):
        live = server.post(verb, body)
        args = ["replay", str(FIXTURES / name), "--json"]
        if verb in ("filter", "prioritize"):
            args += ["--verb", verb]
        out = cli(*args)
        no_traceback(out)
        assert "Traceback" not in out.stderr
        replayed = json.loads(out.stdout)[verb]
        assert replayed == {"status": live.status_code, "answer": live.json()}, f"{name} {verb}"
        error = live.status_code != 200 or bool(live.json().get("Error") if isinstance(live.json(), dict) else "")
        assert (out.returncode != 0) == error, f"{name} {verb}: exit {out.returncode}"


def test_replay_of_an_error_answer_says_so_and_fails() -> None:
    out = cli("replay", "tests/fixtures/extenderargs_cache_n10.json")
    no_traceback(out)
    assert out.returncode == 1
    assert "filter answers HTTP 200 with Error: profile 'default' received NodeNames" in out.stdout
    assert "nodes pass" not in out.stdout


def test_replay_names_an_unknown_profile() -> None:
    out = cli("replay", "--profile", "nope", "tests/fixtures/extenderargs_nocache_n10.json")
    no_traceback(out)
    assert out.returncode == 2
    assert "unknown profile 'nope'" in out.stderr and "the profiles are default" in out.stderr


@pytest.mark.parametrize(
    "command",
    ["serve", "schedule", "replay", "validate", "schemas", "certs", "explain", "check-scheduler-config", "render"],
)
def test_help_describes_arguments_and_shows_an_example(command: str) -> None:
    out = cli(command, "--help")
    assert out.returncode == 0
    assert "examples:" in out.stdout and f"python -m app {command}" in out.stdout
    if command == "validate":
        assert "the configuration file" in out.stdout
    if command == "schemas":
        assert "directory to write" in out.stdout


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = cli("serve", "--host", "127.0.0.1", "--port", str(port))
    no_traceback(out)
    assert out.returncode == 1
    assert f"error: 127.0.0.1:{port} is in use: another process listens there; pass --port or set server.port" in (
        out.stderr
    )
    assert "Errno" not in out.stderr and "serving profiles" not in out.stderr


def test_schemas_needs_out(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this tree's app, from another directory
    out = subprocess.run(
        [sys.executable, "-m", "app", "schemas"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2 and "--out" in out.stderr
    assert not (tmp_path / "schemas").exists()
    written = cli("schemas", "--out", str(tmp_path / "s"))
    assert written.returncode == 0 and (tmp_path / "s" / "ExtenderConfiguration.json").exists()


def test_root_points_to_the_docs_and_the_verbs(server: Server) -> None:
    r = httpx.get(f"{server.url}/", timeout=5)
    assert r.status_code == 200
    doc = r.json()
    assert doc["docs"] == "/docs" and "POST /filter" in doc["verbs"] and "POST /{profile}/bind" in doc["verbs"]
    assert httpx.get(f"{server.url}{doc['docs']}", timeout=5).status_code == 200
    assert server.post("filter", (FIXTURES / "extenderargs_nocache_n10.json").read_bytes()).status_code == 200

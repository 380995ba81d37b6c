"""The command line as a newcomer meets it (the real ``python -m app``): no traceback for a user's
mistake, messages that say what to write, render that never leaves stale files, versions checked."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, cli, no_traceback

GOOD = """apiVersion: config.scheduler-extender.dev/v1alpha1
kind: ExtenderConfiguration
profiles:
- name: space
  extender: {verbs: [filter]}
  plugins:
    filter: [{name: AnnotationNodeAffinity}]
"""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["render", "--out", "/proc/nope/out"], "error: /proc/nope"),
        (["replay", "/nonexistent/body.json"], "error: /nonexistent/body.json: No such file or directory"),
        (["validate", "/nonexistent.yaml"], "cannot read the file: No such file or directory"),
        (["replay", "--capture", "/nonexistent.jsonl"], "error: /nonexistent.jsonl: No such file or directory"),
    ],
)
def test_missing_and_unwritable_files_are_one_line_errors(args: list[str], message: str) -> None:
    out = cli(*args)
    no_traceback(out)
    assert out.returncode == 1 and message in out.stderr


def test_config_mistakes_say_what_to_write(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("AnnotationNodeAffinity", "AnotationNodeAffinity") + "server: {defaultProfile: spac}\n")
    out = cli("validate", str(bad))
    no_traceback(out)
    assert out.returncode == 1
    assert "unknown plugin 'AnotationNodeAffinity' (did you mean 'AnnotationNodeAffinity'?)" in out.stderr
    assert "no profile is named 'spac' (did you mean 'space'?)" in out.stderr
    bad.write_text(GOOD.replace("{verbs: [filter]}", "{verbs: [filter], httpTimeout: 5}"))
    out = cli("validate", str(bad))
    assert 'httpTimeout: expected a duration such as "5s"' in out.stderr and "Value error" not in out.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("profiles:\n  - name: [a\n")
    out = cli("validate", str(broken))
    assert f"{broken}: invalid configuration" in out.stderr and "at line 3, column 1" in out.stderr
    assert "<unicode string>" not in out.stderr


def test_port_is_validated_on_the_command_line() -> None:
    out = cli("serve", "--port", "70000")
    assert out.returncode == 2 and "invalid port 70000: expected 0..65535" in out.stderr
    no_traceback(out)


def test_nothing_claims_to_serve_when_the_socket_cannot_be_bound() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = cli("serve", "--host", "127.0.0.1", "--port", str(port))
    assert out.returncode != 0
    assert "serving profiles" not in out.stderr + out.stdout


def test_version_and_plain_help(capsys: pytest.CaptureFixture[str]) -> None:
    from app import __version__
    from app.cli import main

    assert cli("--version").stdout.strip() == f"scheduler-extender {__version__}"
    commands = [
        "serve",
        "schedule",
        "replay",
        "validate",
        "schemas",
        "render",
        "certs",
        "explain",
        "check-scheduler-config",
    ]
    texts = []
    for args in (["--help"], *([c, "--help"] for c in commands)):  # in-process: the parser is the CLI's
        with pytest.raises(SystemExit):
            main(args)
        texts.append(capsys.readouterr().out)
    assert all(c in texts[0] for c in commands)
    assert "`" not in "".join(texts)
    assert "default: v1.36.3" in " ".join("".join(texts).split())  # whatever the wrapping


def test_render_replaces_its_own_files_and_refuses_foreign_directories(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = cli("render", "--config", str(REPO / "examples" / "cluster.yaml"), "--out", str(out))
    assert first.returncode == 0 and (out / "scheduler-extender-rbac.yaml").exists()
    again = cli("render", "--out", str(out))  # the embedded default has no cluster: no RBAC file
    assert again.returncode == 0
    assert not (out / "scheduler-extender-rbac.yaml").exists()  # not left for kubectl apply -f out/
    listed = (out / ".rendered").read_text().split()
    assert sorted(listed) == sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml"))
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    refused = cli("render", "--out", str(foreign))
    assert refused.returncode == 1 and "is not empty and was not written by render" in refused.stderr
    assert (foreign / "notes.txt").read_text() == "mine"


def test_rendered_yaml_has_no_anchors(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli("render", "--config", str(REPO / "examples" / "stateful.yaml"), "--out", str(out)).returncode == 0
    for path in out.rglob("*.yaml"):
        text = path.read_text()
        assert "&id0" not in text and "*id0" not in text, path
        list(yaml.safe_load_all(text))


@pytest.mark.parametrize(
    ("given", "code", "tag", "message"),
    [
        ("v1.31.4", 0, "v1.31.4", ""),
        ("1.31.4", 0, "v1.31.4", "warning: --kubernetes-version 1.31.4: using the image tag v1.31.4"),
        ("1.31", 1, None, "give the full release of your control plane"),
        ("v1.24.0", 1, None, "does not read kubescheduler.config.k8s.io/v1"),
    ],
)
def test_kubernetes_version_must_be_a_full_release(
    tmp_path: Path, given: str, code: int, tag: str | None, message: str
) -> None:
    out = cli("render", "--kubernetes-version", given, "--out", str(tmp_path / "out"))
    assert out.returncode == code and message in out.stderr
    if tag is not None:
        assert (
            f"image: registry.k8s.io/kube-scheduler:{tag}\n" in (tmp_path / "out" / "kube-scheduler.yaml").read_text()
        )
    else:
        assert not (tmp_path / "out").exists()

"""``check-scheduler-config`` as a user runs it (the CLI) against the real server: every file it
cannot read is named with the field naming it, one mistake is one error (the probes it would only
repeat are skipped, and the report says so), and its probes leave no decision, no info line and
no request metric behind while being answered, and refused, as any request."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import REPO, Server, free_port
from tests.e2e.test_bind_security import certs, client_context, tls_config
from tests.e2e.test_cluster_server import populate
from tests.support.apiserver import FakeAPIServer, running
from tests.support.bodies import fixture_bytes

MANIFESTS = REPO / "manifests"
PROBE = {"X-Scheduler-Extender-Probe": "check-scheduler-config"}
#: the empty candidate lists the check sends (no node, no victim)
PROBE_POD = {"metadata": {"name": "preflight", "namespace": "default", "uid": "u"}, "spec": {}, "status": {}}


def _check(file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "app", "check-scheduler-config", str(file), *args]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60)


def _render(tmp_path: Path, config: Path) -> Path:
    out = tmp_path / "rendered"
    cmd = [sys.executable, "-m", "app", "render", "--config", str(config), "--out", str(out)]
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)
    return out / "kube-scheduler-config.yaml"


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _requests_counted(server: Server, **kwargs: Any) -> list[str]:
    """The samples of ``scheduler_extender_requests_total`` and ``..._decisions_total``."""
    text = httpx.get(f"{server.url}/metrics", timeout=10, **kwargs).text
    prefixes = ("scheduler_extender_requests_total{", "scheduler_extender_decisions_total{")
    return [line for line in text.splitlines() if line.startswith(prefixes)]


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[Server]:
    """The service of the committed manifests, with the access log on (info lines of every
    request) and a small ``maxRequestBytes``."""
    doc = yaml.safe_load((MANIFESTS / "scheduler-extender-config.yaml").read_text())
    doc["server"] |= {"accessLog": True, "logLevel": "info", "maxRequestBytes": 262144}
    server = Server(_write(tmp_path / "config.yaml", doc))
    yield server
    server.stop()


def test_each_unreadable_tls_file_is_named_with_its_field(tmp_path: Path) -> None:
    """A rendered mTLS entry on a machine without the PKI: each file by field and path, offline
    too, and no live check that could only fail for the same reason."""
    ksc = _render(tmp_path, REPO / "examples" / "cluster.yaml")
    pki = "/etc/kubernetes/scheduler-extender/pki"
    for args in (["--url", f"http://127.0.0.1:{free_port()}"], ["--offline"]):
        result = _check(ksc, *args)
        assert result.returncode == 1, result.stdout
        for field, name in (("caFile", "ca.crt"), ("certFile", "scheduler.crt"), ("keyFile", "scheduler.key")):
            assert f"tlsConfig.{field}: cannot read {pki}/{name}: no such file" in result.stdout, result.stdout
        assert "[Errno" not in result.stdout and "cannot reach" not in result.stdout
        assert "result: 3 error(s)" in result.stdout
        assert ("SKIPPED  the checks against the running extender" in result.stdout) == (args[0] == "--url")
    # a directory, a readable file and a missing file: the two that cannot be read, and only them
    doc = yaml.safe_load(ksc.read_text())
    readable = tmp_path / "scheduler.crt"
    readable.write_text("not checked for content here\n")
    doc["extenders"][0]["tlsConfig"] |= {
        "caFile": str(tmp_path),
        "certFile": str(readable),
        "keyFile": str(tmp_path / "missing.key"),
    }
    result = _check(_write(tmp_path / "ksc.yaml", doc), "--offline")
    assert f"tlsConfig.caFile: cannot read {tmp_path}: Is a directory" in result.stdout, result.stdout
    assert f"tlsConfig.keyFile: cannot read {tmp_path / 'missing.key'}: no such file" in result.stdout
    assert "tlsConfig.certFile" not in result.stdout and "result: 2 error(s)" in result.stdout
    # readable but not PEM: the live check names the field and the file it could not use
    doc["extenders"][0]["tlsConfig"] |= {"caFile": str(readable), "keyFile": str(readable)}
    result = _check(_write(tmp_path / "ksc.yaml", doc), "--url", f"https://127.0.0.1:{free_port()}")
    assert f"tlsConfig.caFile {readable}: not a usable PEM CA certificate" in result.stdout, result.stdout


def test_a_mismatch_is_reported_once_and_its_probes_are_skipped(plain: Server, tmp_path: Path) -> None:
    doc = yaml.safe_load((MANIFESTS / "kube-scheduler-config.yaml").read_text())
    doc["extenders"][0]["nodeCacheCapable"] = True
    result = _check(_write(tmp_path / "ksc.yaml", doc), "--url", plain.url)
    assert result.returncode == 1
    assert "nodeCacheCapable: true, but profile 'default' has nodeCacheCapable: false" in result.stdout
    assert "result: 1 error(s)" in result.stdout, result.stdout
    assert "SKIPPED  filterVerb, prioritizeVerb, preemptVerb not probed: the nodeCacheCapable mismatch" in (
        result.stdout
    )
    assert "checks that depend on an error were skipped" in result.stdout
    assert "HTTP 400" not in result.stdout and "answered Error" not in result.stdout


def test_probes_leave_no_decision_info_line_or_request_metric(plain: Server) -> None:
    result = _check(MANIFESTS / "kube-scheduler-config.yaml", "--url", plain.url)
    assert result.returncode == 0 and "0 error(s)" in result.stdout, result.stdout
    for verb in ("filter", "prioritize", "preempt"):
        assert f"{verb}Verb '{verb}' answers" in result.stdout
    assert _requests_counted(plain) == []
    assert httpx.get(f"{plain.url}/explain/default/preflight", timeout=10).status_code == 404
    log = plain.log.read_text()
    assert "pod default/preflight" not in log and "/default/filter" not in log and "GET /profiles" not in log, log
    # the same request without the header: decided, recorded, logged and counted (the test sees them)
    body = {"Pod": PROBE_POD, "Nodes": {"metadata": {}, "items": []}, "NodeNames": None}
    plain_answer = httpx.post(f"{plain.url}/default/filter", json=body, timeout=10)
    probe_answer = httpx.post(f"{plain.url}/default/filter", json=body, headers=PROBE, timeout=10)
    assert probe_answer.status_code == plain_answer.status_code == 200
    assert probe_answer.content == plain_answer.content
    counted = _requests_counted(plain)
    assert any('verb="filter"' in line and line.endswith(" 1.0") for line in counted), counted
    assert httpx.get(f"{plain.url}/explain/default/preflight", timeout=10).json()["attempts"]
    log = plain.log.read_text()
    assert log.count('"POST /default/filter HTTP/1.1" 200') == 1 and "pod default/preflight" in log, log
    # a real request's answer is the same with the header, and not counted
    real = fixture_bytes("extenderargs_nocache_n10_space.json")
    answers = [httpx.post(f"{plain.url}/filter", content=real, headers=h, timeout=10) for h in ({}, PROBE)]
    assert answers[0].content == answers[1].content and answers[0].status_code == 200
    assert sum(float(line.split()[-1]) for line in _requests_counted(plain) if "requests_total" in line) == 2


def test_a_probe_is_refused_as_any_request(plain: Server) -> None:
    """Limits and routing refuse a probe with the same answer as any request."""
    too_large = b'{"Pod":' + b" " * 300000 + b"{}}"
    for path, content in (("/filter", too_large), ("/nope/prioritize", b"{}"), ("/filter", b"not json")):
        plain_answer = httpx.post(f"{plain.url}{path}", content=content, timeout=10)
        probe_answer = httpx.post(f"{plain.url}{path}", content=content, headers=PROBE, timeout=10)
        assert plain_answer.status_code in (400, 404, 413)
        assert (probe_answer.status_code, probe_answer.content) == (plain_answer.status_code, plain_answer.content)


@pytest.fixture(scope="module")
def api() -> Iterator[FakeAPIServer]:
    with running(populate) as server:
        yield server


@pytest.fixture(scope="module")
def secure(api: FakeAPIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path, Path]]:
    """Bind under mutual TLS with cluster state; returns the server, its PKI and its config."""
    tmp = tmp_path_factory.mktemp("mtls-probes")
    pki = tmp / "pki"
    certs(pki)
    config = tls_config(tmp, api, pki)
    server = Server(config, verify=client_context(pki, False))
    yield server, pki, config
    server.stop()


def test_mtls_probes_including_bind_leave_no_trace(
    secure: tuple[Server, Path, Path], api: FakeAPIServer, tmp_path: Path
) -> None:
    server, pki, config = secure
    verify = client_context(pki, True)
    before = len(api.bindings)
    ksc = _render(tmp_path, config)
    result = _check(ksc, "--url", server.url)
    assert result.returncode == 0 and "0 error(s)" in result.stdout, result.stdout
    assert "bindVerb 'bind' answers" in result.stdout
    assert _requests_counted(server, verify=verify) == []
    # without a client certificate: one error, and bind (which would refuse it) is not probed
    doc = yaml.safe_load(ksc.read_text())
    for key in ("certFile", "keyFile"):
        del doc["extenders"][0]["tlsConfig"][key]
    result = _check(_write(tmp_path / "nocert.yaml", doc), "--url", server.url)
    assert "the service requires a client certificate" in result.stdout
    assert "result: 1 error(s)" in result.stdout and "SKIPPED  bindVerb not probed" in result.stdout, result.stdout
    # a probe is refused by bind's authorization as any caller is
    body = fixture_bytes("bindingargs.json")
    anonymous = client_context(pki, False)
    refused = [
        httpx.post(f"{server.url}/bind", content=body, headers=h, verify=anonymous, timeout=10) for h in ({}, PROBE)
    ]
    assert refused[0].status_code == refused[1].status_code == 403
    assert refused[0].content == refused[1].content
    assert len(api.bindings) == before

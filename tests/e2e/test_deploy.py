"""The rendered files against the real server process: every rendered verb is a route the running
service answers, and `check-scheduler-config` run as a user would (the CLI, a real port, real TLS)."""

from __future__ import annotations

import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme
import yaml

from ..conftest import REPO, Server, free_port

FIXTURES = REPO / "tests" / "fixtures"
MANIFESTS = REPO / "manifests"
BODIES = {
    ("filter", False): "extenderargs_nocache_n10_space.json",
    ("prioritize", False): "extenderargs_nocache_n10.json",
    ("preempt", False): "preemptionargs_nocache.json",
    ("filter", True): "extenderargs_cache_n10.json",
    ("prioritize", True): "extenderargs_cache_n10.json",
    ("preempt", True): "preemptionargs_cache.json",
    ("bind", True): "bindingargs.json",
    ("bind", False): "bindingargs.json",
}


def _render(tmp_path: Path, config: Path | None) -> Path:
    out = tmp_path / "rendered"
    cmd = [sys.executable, "-m", "app", "render", "--out", str(out)]
    if config is not None:
        cmd += ["--config", str(config)]
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)
    return out


def _check(file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "app", "check-scheduler-config", str(file), *args]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def rendered_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    """The service started from the committed, rendered scheduler-extender-config.yaml."""
    server = Server(MANIFESTS / "scheduler-extender-config.yaml")
    yield server, MANIFESTS
    server.stop()


def _on_port(url_prefix: str, server: Server) -> str:
    _, rest = url_prefix.split("://", 1)
    path = rest.partition("/")[2]
    return f"{server.url}/{path}"


@pytest.mark.parametrize("source", ["manifests/kube-scheduler-config.yaml", "second-scheduler config"])
def test_every_rendered_verb_is_a_route_the_running_service_answers(
    rendered_server: tuple[Server, Path], source: str
) -> None:
    server, manifests = rendered_server
    if source.startswith("manifests"):
        text = (manifests / "kube-scheduler-config.yaml").read_text()
    else:
        text = (manifests / "second-scheduler" / "kube-scheduler-config.yaml").read_text()
    entries = yaml.safe_load(text)["extenders"]
    assert entries
    for entry in entries:
        prefix = _on_port(entry["urlPrefix"], server).rstrip("/")
        verbs = {k.removesuffix("Verb"): v for k, v in entry.items() if k.endswith("Verb")}
        assert verbs
        for kind, verb in verbs.items():
            body = (FIXTURES / BODIES[(kind, entry["nodeCacheCapable"])]).read_bytes()
            r = httpx.post(f"{prefix}/{verb}", content=body, headers={"Content-Type": "application/json"}, timeout=30)
            assert r.status_code == 200, (entry["urlPrefix"], verb, r.status_code, r.text[:200])
        # and a verb the entry does not name is not served by that profile: filter and bind say so
        # in Error (kube-scheduler shows only the status code of a non-200), the others with 404
        for kind in {"filter", "prioritize", "preempt", "bind"} - set(verbs):
            r = httpx.post(f"{prefix}/{kind}", content=b"{}", timeout=10)
            assert r.status_code == (200 if kind in ("filter", "bind") else 404)
            assert "does not serve" in r.json()["Error"]


def test_check_scheduler_config_passes_on_the_rendered_file(rendered_server: tuple[Server, Path]) -> None:
    server, manifests = rendered_server
    result = _check(manifests / "kube-scheduler-config.yaml", "--url", server.url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "result: 0 error(s), 0 warning(s)" in result.stdout
    for verb in ("filter", "prioritize", "preempt"):
        assert f"{verb}Verb '{verb}' answers" in result.stdout


def _write(tmp_path: Path, doc: dict[str, Any], name: str = "ksc.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _rendered_doc() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((MANIFESTS / "kube-scheduler-config.yaml").read_text())
    return doc


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (
            lambda e: e.update(nodeCacheCapable=True),
            "nodeCacheCapable: true, but profile 'default' has nodeCacheCapable: false",
        ),
        (lambda e: e.update(bindVerb="bind"), "bindVerb is configured but profile 'default' does not serve bind"),
        (lambda e: e.update(urlPrefix="http://127.0.0.1:8888/nope"), "names no profile (served: /default)"),
        (lambda e: e.update(filterVerb="filterz"), "filterVerb is 'filterz': this service answers filter at 'filter'"),
        (
            lambda e: e.update(urlPrefix="https://127.0.0.1:8888/default"),
            "urlPrefix is https:// but the service serves plain",
        ),
        (lambda e: e.update(enableHttps=True), 'did you mean "enableHTTPS"'),
        (lambda e: e.update(weight=0), "must have a positive weight applied to it"),
        (
            lambda e: e.update(managedResources=[{"name": "example.com/ip", "ignoredByScheduler": True}]),
            "managedResources example.com/ip: kube-scheduler would call this extender only for pods that request "
            "them (HTTPExtender.IsInterested), hiding every other pod from profile 'default'",
        ),
    ],
)
def test_check_scheduler_config_reports_each_mistake(
    rendered_server: tuple[Server, Path], tmp_path: Path, change: Any, needle: str
) -> None:
    server, _ = rendered_server
    doc = _rendered_doc()
    change(doc["extenders"][0])
    result = _check(_write(tmp_path, doc), "--url", server.url)
    assert result.returncode == 1, result.stdout
    assert needle in result.stdout, result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    # one mistake, one error: probes whose answers would only repeat it are skipped, and said so
    assert "result: 1 error(s)" in result.stdout, result.stdout


def test_check_scheduler_config_warns_on_unused_verbs_and_managed_resources(
    rendered_server: tuple[Server, Path], tmp_path: Path
) -> None:
    server, _ = rendered_server
    doc = _rendered_doc()
    entry = doc["extenders"][0]
    del entry["preemptVerb"]
    result = _check(_write(tmp_path, doc), "--url", server.url)
    assert result.returncode == 0, result.stdout
    assert "profile 'default' serves preempt but the entry has no preemptVerb" in result.stdout
    # managed resources the profile does not declare would hide every other pod from it: an error
    entry["managedResources"] = [{"name": "example.com/ip"}]
    result = _check(_write(tmp_path, doc), "--url", server.url)
    assert result.returncode == 1, result.stdout
    assert "without ignoredByScheduler: true" in result.stdout
    assert "hiding every other pod from profile 'default'" in result.stdout


def test_check_scheduler_config_when_nothing_listens(tmp_path: Path) -> None:
    doc = _rendered_doc()
    result = _check(_write(tmp_path, doc), "--url", f"http://127.0.0.1:{free_port()}")
    assert result.returncode == 1 and "cannot reach the extender" in result.stdout
    offline = _check(_write(tmp_path, doc), "--offline")
    assert offline.returncode == 0 and "answers" not in offline.stdout


def _tls_config(tmp: Path, name: str, scheduler: dict[str, Any]) -> tuple[Path, Path]:
    """A default-profile config serving HTTPS with a certificate for ``name`` from a throwaway CA
    (trustme); ``scheduler`` is merged into ``server.tls.scheduler`` after ``caFile``. Returns the
    config file and the CA file."""
    ca = trustme.CA()
    cert = ca.issue_cert(name)
    ca_file, cert_file, key_file = tmp / "ca.crt", tmp / "tls.crt", tmp / "tls.key"
    ca.cert_pem.write_to_path(str(ca_file))
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    doc = yaml.safe_load((REPO / "app" / "default-config.yaml").read_text())
    doc["server"]["tls"] = {
        "certFile": str(cert_file),
        "keyFile": str(key_file),
        "scheduler": {"caFile": str(ca_file), **scheduler},
    }
    config = tmp / "config.yaml"
    config.write_text(yaml.safe_dump(doc))
    return config, ca_file


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path, Path]]:
    """The service over HTTPS with a certificate for 127.0.0.1 from a throwaway CA (trustme)."""
    tmp = tmp_path_factory.mktemp("tls")
    config, ca_file = _tls_config(tmp, "127.0.0.1", {})
    context = ssl.create_default_context(cafile=str(ca_file))
    server = Server(config, verify=context)
    yield server, config, tmp
    server.stop()


def test_tls_rendered_entry_checks_clean_and_missing_ca_warns_loudly(
    tls_server: tuple[Server, Path, Path], tmp_path: Path
) -> None:
    server, config, _ = tls_server
    out = _render(tmp_path, config)
    ksc = out / "kube-scheduler-config.yaml"
    result = _check(ksc, "--url", server.url)
    assert result.returncode == 0, result.stdout
    assert "0 warning(s)" in result.stdout and "filterVerb 'filter' answers at https://" in result.stdout
    doc = yaml.safe_load(ksc.read_text())
    del doc["extenders"][0]["tlsConfig"]
    result = _check(_write(tmp_path, doc, "noca.yaml"), "--url", server.url)
    assert result.returncode == 0  # kube-scheduler would work, unverified: a warning, loudly
    assert "!!! enableHTTPS without tlsConfig.caFile/caData" in result.stdout
    doc["extenders"][0]["urlPrefix"] = doc["extenders"][0]["urlPrefix"].replace("https://", "http://")
    result = _check(_write(tmp_path, doc, "plain.yaml"), "--url", server.url.replace("https://", "http://"))
    assert result.returncode == 1
    assert "does not switch the scheme" in result.stdout


def test_tls_with_a_wrong_ca_fails_the_live_check(tls_server: tuple[Server, Path, Path], tmp_path: Path) -> None:
    server, config, _ = tls_server
    out = _render(tmp_path, config)
    doc = yaml.safe_load((out / "kube-scheduler-config.yaml").read_text())
    other = tmp_path / "other-ca.crt"
    trustme.CA().cert_pem.write_to_path(str(other))
    doc["extenders"][0]["tlsConfig"]["caFile"] = str(other)
    result = _check(_write(tmp_path, doc), "--url", server.url)
    assert result.returncode == 1 and "CERTIFICATE_VERIFY_FAILED" in result.stdout


def test_replay_url_prints_the_verdicts_of_the_running_service(rendered_server: tuple[Server, Path]) -> None:
    server, _ = rendered_server
    result = subprocess.run(
        [sys.executable, "-m", "app", "replay", "--url", server.url, "--profile", "default",
         str(FIXTURES / "extenderargs_nocache_n10_space.json")],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert sum(" pass " in line for line in lines) == 1
    assert sum("UnschedulableAndUnresolvable" in line for line in lines) == 9


def test_tls_server_name_is_checked_against_the_certificate(tmp_path: Path) -> None:
    """A certificate for `extender.kube-system` only: the check passes with tlsConfig.serverName
    set to it (SNI and verification use that name), and fails without it (127.0.0.1 mismatch)."""
    config, ca_file = _tls_config(tmp_path, "extender.kube-system", {"serverName": "extender.kube-system"})
    context = ssl.create_default_context(cafile=str(ca_file))
    context.check_hostname = False
    server = Server(config, verify=context)
    try:
        ksc = _render(tmp_path, config) / "kube-scheduler-config.yaml"
        entry = yaml.safe_load(ksc.read_text())["extenders"][0]
        assert entry["tlsConfig"]["serverName"] == "extender.kube-system"
        result = _check(ksc, "--url", server.url)
        assert result.returncode == 0, result.stdout
        del entry["tlsConfig"]["serverName"]
        result = _check(
            _write(tmp_path, {**yaml.safe_load(ksc.read_text()), "extenders": [entry]}), "--url", server.url
        )
        assert result.returncode == 1 and "CERTIFICATE_VERIFY_FAILED" in result.stdout
    finally:
        server.stop()

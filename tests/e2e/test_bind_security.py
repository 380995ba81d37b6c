"""Bind under mutual TLS, against the real server and the test API server: the PKI comes from the
real ``python -m app certs``; a caller without kube-scheduler's client certificate binds nothing;
certificates rotate without a restart; ``serve`` refuses bind without client certificates unless
told otherwise."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO, Server, cluster_config, mutual_tls
from tests.e2e.test_cluster_server import populate
from tests.support.apiserver import FakeAPIServer, running
from tests.support.bodies import fixture, fixture_bytes


def certs(out: Path, *extra: str) -> None:
    subprocess.run([sys.executable, "-m", "app", "certs", "--out", str(out), *extra], cwd=REPO, check=True)


def client_context(pki: Path, with_certificate: bool) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    if with_certificate:
        context.load_cert_chain(str(pki / "scheduler.crt"), str(pki / "scheduler.key"))
    return context


def tls_config(tmp: Path, api: FakeAPIServer, pki: Path) -> Path:
    return cluster_config(tmp, api.kubeconfig(), edit=mutual_tls(pki, reloadInterval="500ms"))


@pytest.fixture(scope="module")
def api() -> Iterator[FakeAPIServer]:
    with running(populate) as server:
        yield server


@pytest.fixture(scope="module")
def secure(api: FakeAPIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    tmp = tmp_path_factory.mktemp("mtls")
    pki = tmp / "pki"
    certs(pki)
    s = Server(tls_config(tmp, api, pki), verify=client_context(pki, False))
    yield s, pki
    s.stop()


def test_bind_without_a_client_certificate_binds_nothing(secure: tuple[Server, Path], api: FakeAPIServer) -> None:
    server, pki = secure
    before = len(api.bindings)
    r = httpx.post(f"{server.url}/bind", content=fixture_bytes("bindingargs.json"), verify=client_context(pki, False))
    assert r.status_code == 403
    assert r.json() == {
        "Error": "bind needs a TLS client certificate naming an identity of server.tls.allowedClients "
        "(system:kube-scheduler); this caller presented no client certificate"
    }
    assert len(api.bindings) == before  # no Binding reached the API server
    # the read-only verbs and the kubelet's probes need no client certificate
    plain = client_context(pki, False)
    assert httpx.get(f"{server.url}/healthz", verify=plain).status_code == 200
    answer = httpx.post(f"{server.url}/filter", content=fixture_bytes("extenderargs_cache_n10.json"), verify=plain)
    assert answer.status_code == 200 and answer.json()["Error"] == ""


def test_kube_schedulers_certificate_binds(secure: tuple[Server, Path], api: FakeAPIServer) -> None:
    server, pki = secure
    r = httpx.post(f"{server.url}/bind", content=fixture_bytes("bindingargs.json"), verify=client_context(pki, True))
    assert r.status_code == 200 and r.json() == {"Error": ""}
    args = fixture("bindingargs.json")
    assert api.bindings[-1]["metadata"]["uid"] == args["PodUID"]


def test_explain_needs_a_client_certificate(secure: tuple[Server, Path]) -> None:
    server, pki = secure
    plain = client_context(pki, False)
    httpx.post(f"{server.url}/filter", content=fixture_bytes("extenderargs_cache_n10.json"), verify=plain)
    meta = fixture("extenderargs_cache_n10.json")["Pod"]["metadata"]
    url = f"{server.url}/explain/{meta['namespace']}/{meta['name']}"
    refused = httpx.get(url, verify=plain)  # it names pods and nodes: not for any caller
    assert refused.status_code == 403 and "client certificate" in refused.json()["detail"]
    r = httpx.get(url, verify=client_context(pki, True))
    assert r.status_code == 200 and r.json()["attempts"][-1]["verb"] == "filter"
    tls = ["--cacert", str(pki / "ca.crt"), "--cert", str(pki / "scheduler.crt"), "--key", str(pki / "scheduler.key")]
    pod = f"{meta['namespace']}/{meta['name']}"
    cli = [sys.executable, "-m", "app", "explain", pod, "--url", server.url]
    out = subprocess.run([*cli, *tls], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0 and "filter  profile default" in out.stdout
    without = subprocess.run([*cli, "--cacert", str(pki / "ca.crt")], cwd=REPO, capture_output=True, text=True)
    assert without.returncode == 1 and "HTTP 403" in without.stderr


def test_rotated_certificates_are_served_without_a_restart(secure: tuple[Server, Path]) -> None:
    server, pki = secure
    old_ca = (pki / "ca.crt").read_bytes()
    certs(pki, "--force")  # a new CA, server and client certificate, in place
    assert (pki / "ca.crt").read_bytes() != old_ca
    deadline = time.monotonic() + 10
    while True:
        try:
            r = httpx.get(f"{server.url}/healthz", verify=client_context(pki, True))
            break  # the new chain verifies: the server reloaded its certificate
        except httpx.ConnectError:
            if time.monotonic() > deadline:
                pytest.fail("the rotated certificate was not served within 10 s (reloadInterval 500ms)")
            time.sleep(0.2)
    assert r.status_code == 200
    bound = httpx.post(
        f"{server.url}/bind", content=fixture_bytes("bindingargs.json"), verify=client_context(pki, True)
    )
    assert bound.status_code == 200, bound.text  # the new client certificate is trusted too


def test_serve_refuses_bind_without_client_certificates(tmp_path: Path, api: FakeAPIServer) -> None:
    config = cluster_config(tmp_path, api.kubeconfig(), edit=lambda doc: doc["server"].update(insecureBind=False))
    proc = subprocess.run(
        [sys.executable, "-m", "app", "serve", "--config", str(config), "--port", "0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "serves bind without client-certificate verification" in proc.stderr
    assert "server.insecureBind: true to accept that exposure" in proc.stderr and "Traceback" not in proc.stderr


def test_insecure_bind_warns_at_start_and_on_each_bind(tmp_path: Path, api: FakeAPIServer) -> None:
    server = Server(cluster_config(tmp_path, api.kubeconfig()))  # the helper sets insecureBind: true
    try:
        server.post("bind", json.dumps({"PodName": "x", "PodNamespace": "y", "PodUID": "z", "Node": "n"}).encode())
        log = server.log.read_text()
        assert "server.insecureBind: profile 'default' serves bind without client-certificate verification" in log
        assert "bind from an unauthenticated caller (server.insecureBind: true)" in log
    finally:
        server.stop()

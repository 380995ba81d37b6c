"""Go's HTTP/2 client against the real server: kube-scheduler's extender transport
(``bench/kubesched``: ``makeTransport``'s ``http.Transport``, HTTP/2 by ALPN, mutual TLS) keeps one
connection for as long as it can. 10,020 filter and prioritize requests, one pod after another,
must all be answered over that one connection. zttp 0.0.35 as published sent ``GOAWAY
ENHANCE_YOUR_CALM`` at its 4,096th stream (``third_party/zttp``); Go then dialled again.

In the real-control-plane tier because building the Go program costs about a minute on a machine
whose Go build cache is cold; it needs no cluster (the test API server of ``tests/support``)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.gotool import kubesched
from tests.conftest import Server, cluster_config, mutual_tls
from tests.e2e.test_bind_security import certs, client_context
from tests.e2e.test_cluster_server import populate
from tests.support.apiserver import FakeAPIServer, running
from tests.support.bodies import fixture

ROUNDS = 5_000  # after kubesched's 20 of warm-up: 10,040 requests


@pytest.fixture(scope="module")
def api() -> Iterator[FakeAPIServer]:
    with running(populate) as server:
        yield server


def test_go_http2_client_sends_ten_thousand_requests_over_one_connection(api: FakeAPIServer, tmp_path: Path) -> None:
    pki = tmp_path / "pki"
    certs(pki)
    server = Server(cluster_config(tmp_path, api.kubeconfig(), edit=mutual_tls(pki)), verify=client_context(pki, False))
    try:
        body = fixture("extenderargs_cache_n10.json")
        body["Pod"]["metadata"]["uid"] = "00000000-0000-4000-8000-000000000000"
        path = tmp_path / "filter.json"
        path.write_text(json.dumps(body))
        out = subprocess.run(
            [
                str(kubesched()),
                "verbs",
                "-url", server.url,
                "-body", str(path),
                "-n", str(ROUNDS),
                "-ca", str(pki / "ca.crt"),
                "-cert", str(pki / "scheduler.crt"),
                "-key", str(pki / "scheduler.key"),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )  # fmt: skip
    finally:
        server.stop()
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.split("R ", 1)[1])
    requests = 2 * (ROUNDS + 20)
    assert result["requests"] == requests
    assert result["protocols"] == {"HTTP/2.0": requests}
    assert result["conns"] == 1, f"{result['conns']} connections: the server ended one"

"""The metrics listener (``server.metrics``) through the real server process on real ports, and the
``profile`` label of every verb on the default profile (issue 23, item 6).

The test API server answers TokenReviews for the tokens a test registers and SubjectAccessReviews
for the (user or group, path) pairs it allows. A request without credentials is kube-scheduler's
anonymous user, authorized like any other (403 unless RBAC grants ``system:anonymous``); an
unknown token is 401."""

from __future__ import annotations

import re
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme
import yaml

from tests.conftest import REPO, Server, cli, cluster_config, free_port
from tests.support.apiserver import FakeAPIServer, node
from tests.support.bodies import fixture_bytes


def _samples(text: str, name: str) -> dict[str, float]:
    """``{label set: value}`` of the samples of ``name`` in a Prometheus text exposition."""
    out = {}
    for line in text.splitlines():
        m = re.match(rf"^{name}\{{(.*)\}} (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def _label(labels: str, name: str) -> str:
    """The value of label ``name`` in a sample's label set (``""`` without it)."""
    m = re.search(rf'{name}="([^"]*)"', labels)
    return m.group(1) if m else ""


def test_every_verb_on_the_default_profile_is_counted_with_its_name(default_server: Server) -> None:
    """POST /bind on the default profile (which does not serve bind: answered 200 with ``Error``)
    and POST /filter are both counted under ``profile="default"``; ``unknown`` is only for a
    path naming no configured profile."""
    default_server.post("filter", fixture_bytes("extenderargs_nocache_n10.json")).raise_for_status()
    bind = default_server.post("bind", fixture_bytes("bindingargs.json"))
    assert bind.status_code == 200 and bind.json()["Error"]
    httpx.post(f"{default_server.url}/nosuchprofile/filter", content=b"{}", timeout=10)
    text = httpx.get(f"{default_server.url}/metrics", timeout=10).text
    requests = _samples(text, "scheduler_extender_requests_total")
    profiles = {
        verb: {_label(k, "profile") for k in requests if _label(k, "verb") == verb} for verb in ("filter", "bind")
    }
    assert profiles["bind"] == {"default"}, requests
    assert "default" in profiles["filter"]
    assert any('profile="unknown"' in k and 'verb="filter"' in k for k in requests), requests


# -- the metrics listener, against the test API server's TokenReviews and SubjectAccessReviews ------


READER, OUTSIDER, GROUPED = "reader-token", "outsider-token", "grouped-token"


def _metrics_config(tmp: Path, api: FakeAPIServer, **metrics: Any) -> tuple[Path, int]:
    """examples/cluster.yaml against ``api``, with a metrics listener on a free loopback port."""
    port = free_port()

    def edit(doc: dict[str, Any]) -> None:
        doc["server"]["metrics"] = {"host": "127.0.0.1", "port": port, **metrics}

    return cluster_config(tmp, api.kubeconfig(), edit=edit), port


@dataclass
class Listener:
    api: FakeAPIServer
    server: Server
    url: str
    ca: trustme.CA


@pytest.fixture(scope="module")
def listener(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Listener]:
    """The service with ``server.metrics`` (HTTPS, self-signed; client certificates of a test CA)."""
    tmp = tmp_path_factory.mktemp("metrics")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp / "client-ca.crt"))
    api = FakeAPIServer().start()
    api.put("nodes", node("n1"))
    api.tokens |= {
        READER: ("system:serviceaccount:monitoring:prometheus", ["system:serviceaccounts"]),
        OUTSIDER: ("mallory", []),
        GROUPED: ("grace", ["metrics-readers"]),
    }
    api.allowed |= {("system:serviceaccount:monitoring:prometheus", "/metrics"), ("metrics-readers", "/metrics")}
    path, port = _metrics_config(tmp, api, clientCAFile=str(tmp / "client-ca.crt"))
    server = Server(path)
    try:
        yield Listener(api, server, f"https://127.0.0.1:{port}", ca)
    finally:
        server.stop()
        api.stop()


def _get(listener: Listener, path: str, token: str | None = None, cert: str | None = None) -> httpx.Response:
    """GET ``path`` of the metrics listener, with a bearer ``token`` or the client certificate and
    key in the PEM file ``cert`` (the listener's self-signed certificate is not verified)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if cert is not None:
        context.load_cert_chain(cert)
    return httpx.get(f"{listener.url}{path}", headers=headers, verify=context, timeout=10)


def test_an_allowed_token_reads_the_metrics_the_verb_listener_serves(listener: Listener) -> None:
    listener.server.post("filter", fixture_bytes("extenderargs_nocache_n10.json")).raise_for_status()
    r = _get(listener, "/metrics", READER)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain; version=")
    requests = _samples(r.text, "scheduler_extender_requests_total")
    assert requests.get('code="200",outcome="success",profile="default",verb="filter"', 0) >= 1
    assert "scheduler_extender_cluster_objects" in r.text  # the same registry as /metrics on the verb port
    review = listener.api.access_reviews[-1]
    assert review["user"] == "system:serviceaccount:monitoring:prometheus"
    assert review["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
    assert review["groups"] == ["system:serviceaccounts", "system:authenticated"] and review["uid"]
    # the reviews are made with the extender's own credentials (cluster.kubeconfig)
    assert "Bearer test-token" in listener.api.authorizations


def test_a_token_the_api_server_does_not_know_is_401(listener: Listener) -> None:
    r = _get(listener, "/metrics", "forged-token")
    assert r.status_code == 401
    assert r.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }


def test_an_authenticated_user_without_the_grant_is_403(listener: Listener) -> None:
    r = _get(listener, "/metrics", OUTSIDER)
    assert r.status_code == 403
    body = r.json()
    assert body["reason"] == "Forbidden" and body["code"] == 403
    assert body["message"] == 'forbidden: User "mallory" cannot get path "/metrics"'


def test_no_credentials_is_the_anonymous_user_and_forbidden_as_kube_scheduler_answers(listener: Listener) -> None:
    """kube-scheduler's delegating authenticator admits a request without credentials as
    ``system:anonymous`` and the SubjectAccessReview decides: 403 unless RBAC grants it."""
    r = _get(listener, "/metrics")
    assert r.status_code == 403
    assert r.json()["message"] == 'forbidden: User "system:anonymous" cannot get path "/metrics"'
    review = listener.api.access_reviews[-1]
    assert review["user"] == "system:anonymous" and review["groups"] == ["system:unauthenticated"]


def test_a_group_grant_admits_its_members(listener: Listener) -> None:
    assert _get(listener, "/metrics", GROUPED).status_code == 200


def test_health_is_served_without_credentials_and_costs_no_review(listener: Listener) -> None:
    api = listener.api
    before = (len(api.token_reviews), len(api.access_reviews))
    for path in ("/healthz", "/readyz"):
        assert _get(listener, path).status_code == 200
        assert _get(listener, path, "forged-token").status_code == 200  # not even looked at
    assert _get(listener, "/readyz").json()["status"] == "ready"
    assert (len(api.token_reviews), len(api.access_reviews)) == before


def test_only_the_three_paths_are_served_and_the_rest_is_404_before_any_review(listener: Listener) -> None:
    api = listener.api
    before = (len(api.token_reviews), len(api.access_reviews))
    body = fixture_bytes("extenderargs_nocache_n10.json")
    for verb in ("filter", "prioritize", "preempt", "bind"):
        r = httpx.post(f"{listener.url}/{verb}", content=body, verify=False, timeout=10)
        assert r.status_code == 404 and r.text == "404 page not found\n"
        r = httpx.post(f"{listener.url}/default/{verb}", content=body, verify=False, timeout=10)
        assert r.status_code == 404
    for path in ("/", "/profiles", "/explain/default/p", "/docs", "/openapi.json", "/metrics/", "/version"):
        assert _get(listener, path, READER).status_code == 404, path
    assert httpx.post(f"{listener.url}/metrics", verify=False, timeout=10).status_code == 404
    assert (len(api.token_reviews), len(api.access_reviews)) == before


def test_repeated_scrapes_within_the_cache_ttl_cost_one_review_of_each_kind(listener: Listener) -> None:
    api = listener.api
    token = "scraper-token"
    api.tokens[token] = ("scraper", [])
    api.allowed.add(("scraper", "/metrics"))
    with httpx.Client(verify=False, timeout=10) as client:
        for _ in range(5):
            r = client.get(f"{listener.url}/metrics", headers={"Authorization": f"Bearer {token}"})
            assert r.status_code == 200
    assert api.token_reviews.count(token) == 1
    assert [s["user"] for s in api.access_reviews].count("scraper") == 1


def test_a_failing_api_server_is_401_for_tokens_500_for_access_and_nothing_failed_is_kept(listener: Listener) -> None:
    """k8s.io/apiserver: a TokenReview that fails does not authenticate (401, logged); a
    SubjectAccessReview that fails is the authorizer's error (500); neither is cached."""
    api = listener.api
    api.tokens |= {"carol-token": ("carol", []), "dan-token": ("dan", [])}
    api.allowed |= {("carol", "/metrics"), ("dan", "/metrics")}
    api.access_review_failure = 500
    try:
        r = _get(listener, "/metrics", "carol-token")
    finally:
        api.access_review_failure = None
    assert r.status_code == 500 and r.text.startswith('Internal Server Error: "/metrics": ')
    assert _get(listener, "/metrics", "carol-token").status_code == 200
    assert api.token_reviews.count("carol-token") == 1  # the token's answer was kept, the failure not
    api.token_review_failure = 503
    try:
        assert _get(listener, "/metrics", "dan-token").status_code == 401
    finally:
        api.token_review_failure = None
    assert _get(listener, "/metrics", "dan-token").status_code == 200
    assert api.token_reviews.count("dan-token") == 2
    log = listener.server.log.read_text()
    assert "the TokenReview failed" in log and "the SubjectAccessReview failed" in log


def test_a_client_certificate_of_the_client_ca_authenticates_as_cn_with_o_as_groups(
    listener: Listener, tmp_path: Path
) -> None:
    api = listener.api
    cert = listener.ca.issue_cert(common_name="dave", organization_name="metrics-readers")
    pem = tmp_path / "dave.pem"
    cert.private_key_and_cert_chain_pem.write_to_path(str(pem))
    before = len(api.token_reviews)
    r = _get(listener, "/metrics", cert=str(pem))
    assert r.status_code == 200, r.text
    assert len(api.token_reviews) == before  # no token: no TokenReview
    review = api.access_reviews[-1]
    assert review["user"] == "dave" and review["groups"] == ["metrics-readers", "system:authenticated"]
    stranger = trustme.CA().issue_cert(common_name="eve", organization_name="metrics-readers")
    stranger.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "eve.pem"))
    with pytest.raises(httpx.TransportError):  # a CA the listener does not trust: no handshake
        _get(listener, "/metrics", cert=str(tmp_path / "eve.pem"))


def test_the_listener_serves_a_self_signed_certificate_made_at_start(listener: Listener) -> None:
    port = int(listener.url.rsplit(":", 1)[1])
    pem = ssl.get_server_certificate(("127.0.0.1", port))
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(pem.encode())
    (cn,) = cert.subject.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)
    assert str(cn.value).startswith("scheduler-extender-metrics@")
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    with pytest.raises(httpx.TransportError):  # plain HTTP is not served
        httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).raise_for_status()


def test_insecure_serves_plain_http_without_credentials_and_says_what_it_exposes(tmp_path: Path) -> None:
    api = FakeAPIServer().start()
    try:
        path, port = _metrics_config(tmp_path, api, insecure=True)
        validate = cli("validate", str(path))
        assert validate.returncode == 0, validate.stderr
        assert "server.metrics.insecure" in validate.stderr and "without authentication" in validate.stderr
        assert "every metric" in validate.stderr and f"127.0.0.1:{port}" in validate.stderr
        server = Server(path)
        try:
            r = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
            assert r.status_code == 200 and "scheduler_extender_requests_total" in r.text
            assert httpx.post(f"http://127.0.0.1:{port}/filter", content=b"{}", timeout=10).status_code == 404
            assert api.token_reviews == [] and api.access_reviews == []
            assert "server.metrics.insecure" in server.log.read_text()  # serve warns too
        finally:
            server.stop()
    finally:
        api.stop()


def test_without_credentials_for_the_reviews_validate_and_serve_refuse_naming_the_ways_out(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO / "app" / "default-config.yaml").read_text())
    doc["server"]["metrics"] = {"port": free_port()}
    path = tmp_path / "no-credentials.yaml"
    path.write_text(yaml.safe_dump(doc))
    for command in (["validate", str(path)], ["serve", "--config", str(path)]):
        result = cli(*command, "--port", str(free_port()))
        assert result.returncode == 1, result.stderr
        for way in ("server.metrics.kubeconfig", "cluster:", "server.metrics.insecure: true"):
            assert way in result.stderr, (command, result.stderr)
        assert "Traceback" not in result.stderr


def test_an_unreadable_reviewer_kubeconfig_is_named_by_its_own_setting(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO / "app" / "default-config.yaml").read_text())
    missing = tmp_path / "reviewer.conf"
    doc["server"]["metrics"] = {"port": free_port(), "kubeconfig": str(missing)}
    path = tmp_path / "reviewer.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = cli("serve", "--config", str(path), "--port", str(free_port()))
    assert result.returncode == 1, result.stderr
    assert f"server.metrics.kubeconfig {missing}" in result.stderr
    assert "cluster.kubeconfig" not in result.stderr and "Traceback" not in result.stderr


def test_the_metrics_port_must_differ_from_the_verbs_port(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO / "app" / "default-config.yaml").read_text())
    doc["server"]["metrics"] = {"insecure": True, "port": 8888}
    path = tmp_path / "same-port.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = cli("validate", str(path))
    assert result.returncode == 1 and "server.metrics.port: 8888 must differ from port" in result.stderr
    doc["server"]["metrics"]["port"] = 9999
    path.write_text(yaml.safe_dump(doc))
    result = cli("validate", str(path), "--port", "9999")  # the effective port
    assert result.returncode == 1 and "server.metrics.port (9999) is the verbs' port too" in result.stderr


def test_a_metrics_port_in_use_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        doc = yaml.safe_load((REPO / "app" / "default-config.yaml").read_text())
        doc["server"]["metrics"] = {"insecure": True, "host": "127.0.0.1", "port": port}
        path = tmp_path / "taken.yaml"
        path.write_text(yaml.safe_dump(doc))
        result = cli("serve", "--config", str(path), "--port", str(free_port()))
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: the metrics listener 127.0.0.1:{port} is in use: another process listens there; "
        "set server.metrics.port"
    ], result.stderr
    assert "Traceback" not in result.stderr

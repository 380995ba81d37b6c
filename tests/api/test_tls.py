"""The listeners' TLS, built in one place (``app/api/server.py``): the verb listener's context is
the one uvicorn serves (client certificates verified when presented, TLS 1.2 or later, no session
tickets), uvicorn builds none of its own, and the metrics listener's follows the same rules."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest

from app.api.delegated import metrics_listener
from app.api.server import metrics_server, metrics_ssl_context, uvicorn_config, verb_ssl_context
from app.bootstrap import assemble, build_app, preflight
from app.config import API_VERSION, KIND, Configuration, parse_config
from app.deploy.certs import issue
from app.plugins import default_registry

REGISTRY = default_registry(load_entry_points=False)
PROFILES = [{"name": "default", "extender": {"verbs": ["filter"]}, "plugins": {"filter": [{"name": "NodeName"}]}}]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pki")
    issue(out)
    return out


def configuration(pki: Path, client_ca: bool = True, **server: Any) -> Configuration:
    tls = {"certFile": str(pki / "server.crt"), "keyFile": str(pki / "server.key")}
    if client_ca:
        tls["clientCAFile"] = str(pki / "ca.crt")
    return parse_config(
        {"apiVersion": API_VERSION, "kind": KIND, "server": {"tls": tls, **server}, "profiles": PROFILES},
        REGISTRY,
    )


def test_the_verb_listener_serves_the_one_context_with_the_client_ca_verified_when_presented(pki: Path) -> None:
    app = build_app(assemble(configuration(pki), REGISTRY))
    served = uvicorn_config(app, "127.0.0.1", 0, {"log_level": "warning"})
    context = served.ssl
    assert isinstance(context, ssl.SSLContext)
    # the kubelet's probes present no certificate; bind checks the verified identity itself
    assert context.verify_mode == ssl.CERT_OPTIONAL
    assert [c["subject"] for c in context.get_ca_certs()] == [c["subject"] for c in ssl_ca(pki)]
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert context.num_tickets == 0
    # uvicorn was given the context, not files to build one of its own
    assert served.ssl_certfile is None and served.ssl_ca_certs is None and served.ssl_cert_reqs == ssl.CERT_NONE


def test_without_a_client_ca_no_client_certificate_is_asked_for(pki: Path) -> None:
    context = verb_ssl_context(configuration(pki, client_ca=False).server)
    assert context is not None and context.verify_mode == ssl.CERT_NONE
    assert (
        verb_ssl_context(parse_config({"apiVersion": API_VERSION, "kind": KIND, "profiles": PROFILES}, REGISTRY).server)
        is None
    )


def test_the_metrics_listener_verifies_its_client_ca_as_the_verb_listener_does(pki: Path) -> None:
    metrics = {"port": 10259, "clientCAFile": str(pki / "ca.crt"), "kubeconfig": "unused"}
    config = configuration(pki, metrics=metrics)
    assert config.server.metrics_listener is not None
    context = metrics_ssl_context(config.server.metrics_listener)  # the self-signed certificate
    assert context.verify_mode == ssl.CERT_OPTIONAL and context.minimum_version == ssl.TLSVersion.TLSv1_2
    app = build_app(assemble(config, REGISTRY))
    listener = metrics_listener(app.fastapi, config.server.metrics_listener, object())  # type: ignore[arg-type]
    served = metrics_server(listener, config.server, {"log_level": "warning"}).config
    assert isinstance(served.ssl, ssl.SSLContext) and served.ssl.verify_mode == ssl.CERT_OPTIONAL
    assert served.ssl_certfile is None


def test_preflight_loads_the_files_and_names_one_that_does_not(pki: Path, tmp_path: Path) -> None:
    assert preflight(configuration(pki)).errors == []
    broken = tmp_path / "ca.crt"
    broken.write_text("not a certificate\n")
    (tmp_path / "server.crt").write_bytes((pki / "server.crt").read_bytes())
    (tmp_path / "server.key").write_bytes((pki / "server.key").read_bytes())
    errors = preflight(configuration(tmp_path)).errors
    assert len(errors) == 1 and errors[0].startswith("server.tls: the certificate, key or client CA does not load")


def ssl_ca(pki: Path) -> list[dict[str, Any]]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_verify_locations(str(pki / "ca.crt"))
    return context.get_ca_certs()  # type: ignore[return-value]

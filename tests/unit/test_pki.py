"""The PKI both ``python -m app certs`` and the metrics listener's self-signed certificate are
issued with (app/kube/pki.py): leaves signed by their CA, with the usages and names asked for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from app.deploy.certs import issue
from app.kube.pki import subject_alt_names
from tests.conftest import REPO


def test_certs_issues_a_ca_and_two_leaves_it_signed(tmp_path: Path) -> None:
    issued = issue(tmp_path, names=["ext.example", "10.0.0.7", "localhost"])
    metrics = "scheduler-extender-metrics.kube-system.svc"  # the static pods' metrics Service
    assert issued.names == ["127.0.0.1", "::1", "localhost", metrics, "ext.example", "10.0.0.7"]
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.crt").read_bytes())
    server = x509.load_pem_x509_certificate((tmp_path / "server.crt").read_bytes())
    client = x509.load_pem_x509_certificate((tmp_path / "scheduler.crt").read_bytes())
    for leaf in (server, client):
        leaf.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    usage = x509.ExtendedKeyUsage
    assert list(server.extensions.get_extension_for_class(usage).value) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert list(client.extensions.get_extension_for_class(usage).value) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    sans = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost", metrics, "ext.example"]
    assert (tmp_path / "server.key").stat().st_mode & 0o777 == 0o600


def test_a_name_that_is_neither_an_address_nor_a_dns_name_is_refused_by_the_cli(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'bad name' is neither an IP address nor a DNS name"):
        subject_alt_names(["localhost", "bad name"])
    out = subprocess.run(
        [sys.executable, "-m", "app", "certs", "--out", str(tmp_path), "--name", "bad name"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1
    assert "--name 'bad name' is neither an IP address nor a DNS name" in out.stderr
    assert list(tmp_path.iterdir()) == []

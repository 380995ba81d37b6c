"""``python -m app certs``: the PKI for mutual TLS between kube-scheduler and the extender.

Writes, with the ``cryptography`` library (ECDSA P-256, SHA-256):

- ``ca.crt``/``ca.key``: a CA that signs the two others (10 years, as kubeadm's CAs);
- ``server.crt``/``server.key``: the extender's serving certificate (server auth) for
  ``127.0.0.1``, ``::1``, ``localhost`` and any ``--name`` (DNS names or IP addresses);
- ``scheduler.crt``/``scheduler.key``: kube-scheduler's client certificate (client auth), CN
  ``system:kube-scheduler`` (:data:`~app.config.SCHEDULER_CLIENT_CN`), which the extender admits to
  ``bind`` by default (``server.tls.allowedClients``).

Leaf certificates last ``--days`` (365). Keys are written mode 0600; the extender runs as uid
65532 and must be able to read ``server.key`` (the install steps of docs/install/kubeadm.md
``chown`` it).
Existing files are not overwritten without ``--force``. ``render`` mounts the directory
(:data:`~app.deploy.render.PKI_DIR` by default) into both static pods.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from app.config import SCHEDULER_CLIENT_CN
from app.framework.errors import SchedulerExtenderError

#: The files ``certs`` writes, in order.
FILES = ("ca.crt", "ca.key", "server.crt", "server.key", "scheduler.crt", "scheduler.key")
CA_DAYS = 3650


class CertsError(SchedulerExtenderError, ValueError):
    """The certificates cannot be written (existing files, a bad name)."""


@dataclass(frozen=True)
class Issued:
    """What was written: the paths, and the server certificate's subject alternative names."""

    paths: list[Path]
    names: list[str]


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    data = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_bytes(data)


def _sans(names: list[str]) -> list[x509.GeneralName]:
    out: list[x509.GeneralName] = []
    for name in names:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            if not name or " " in name:
                raise CertsError(f"--name {name!r} is neither an IP address nor a DNS name") from None
            out.append(x509.DNSName(name))
    return out


def issue(out: Path, names: list[str] | None = None, days: int = 365, force: bool = False) -> Issued:
    """Write the CA, the server and the kube-scheduler client certificates into ``out``.

    Raises :class:`CertsError` when a file exists (without ``force``) or a name is invalid.
    """
    existing = [out / f for f in FILES if (out / f).exists()]
    if existing and not force:
        raise CertsError(f"{existing[0]} exists: pass --force to replace the whole set")
    sans = ["127.0.0.1", "::1", "localhost", *(n for n in names or [] if n not in ("127.0.0.1", "::1", "localhost"))]
    general_names = _sans(sans)
    out.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)  # tolerate clock skew

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("scheduler-extender-ca")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(
        common_name: str, usage: x509.ObjectIdentifier, san: list[x509.GeneralName] | None
    ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        )
        if san:
            builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return builder.sign(ca_key, hashes.SHA256()), key

    server, server_key = leaf("scheduler-extender", ExtendedKeyUsageOID.SERVER_AUTH, general_names)
    client, client_key = leaf(SCHEDULER_CLIENT_CN, ExtendedKeyUsageOID.CLIENT_AUTH, None)
    pem = serialization.Encoding.PEM
    (out / "ca.crt").write_bytes(ca.public_bytes(pem))
    _write_key(out / "ca.key", ca_key)
    (out / "server.crt").write_bytes(server.public_bytes(pem))
    _write_key(out / "server.key", server_key)
    (out / "scheduler.crt").write_bytes(client.public_bytes(pem))
    _write_key(out / "scheduler.key", client_key)
    return Issued([out / f for f in FILES], sans)


__all__ = ["FILES", "CertsError", "Issued", "issue"]

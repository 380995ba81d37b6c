"""Certificates with the ``cryptography`` library (ECDSA P-256, SHA-256): a CA and the leaves it
signs, as kubeadm's PKI shapes them (CA: ``BasicConstraints(ca, pathlen 0)``, key usages
certificate and CRL signing, a subject key identifier; leaf: digital signature, one extended key
usage, the CA's key identifier, subject alternative names for a server).

Used by ``python -m app certs`` (:mod:`app.deploy.certs`: the files for mutual TLS between
kube-scheduler and the extender) and by the metrics listener's in-memory self-signed certificate
(:func:`app.api.server.self_signed_certificate`).
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

Key = ec.EllipticCurvePrivateKey


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def subject_alt_names(names: Iterable[str]) -> list[x509.GeneralName]:
    """``names`` (duplicates dropped, order kept) as IP address or DNS name entries. Raises
    ``ValueError`` naming one that is neither (empty, or with a space)."""
    out: list[x509.GeneralName] = []
    for name in dict.fromkeys(names):
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            if not name or " " in name:
                raise ValueError(f"{name!r} is neither an IP address nor a DNS name") from None
            out.append(x509.DNSName(name))
    return out


def new_ca(common_name: str, not_before: datetime.datetime, days: int) -> tuple[x509.Certificate, Key]:
    """A self-signed CA named ``common_name``, valid ``days`` days from ``not_before``, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name)
    ca = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_before + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return ca, key


def new_leaf(
    ca: x509.Certificate,
    ca_key: Key,
    common_name: str,
    usage: x509.ObjectIdentifier,
    sans: list[x509.GeneralName] | None,
    not_before: datetime.datetime,
    days: int,
) -> tuple[x509.Certificate, Key]:
    """A certificate for ``common_name`` signed by ``ca``: extended key usage ``usage`` (server or
    client auth), subject alternative names ``sans`` when given, valid ``days`` days from
    ``not_before``; and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_before + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def pem(certificate: x509.Certificate) -> bytes:
    """The certificate as PEM."""
    return certificate.public_bytes(serialization.Encoding.PEM)


def pem_key(key: Key) -> bytes:
    """The private key as unencrypted PKCS#8 PEM."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


__all__ = ["Key", "new_ca", "new_leaf", "pem", "pem_key", "subject_alt_names"]

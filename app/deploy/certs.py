"""``python -m app certs``: the PKI for mutual TLS between kube-scheduler and the extender.

Writes, with :mod:`app.kube.pki` (the ``cryptography`` library, ECDSA P-256, SHA-256):

- ``ca.crt``/``ca.key``: a CA that signs the two others (10 years, as kubeadm's CAs);
- ``server.crt``/``server.key``: the extender's serving certificate (server auth) for
  :data:`DEFAULT_NAMES` and any ``--name`` (DNS names or IP addresses): the verb listener's and
  the metrics listener's;
- ``scheduler.crt``/``scheduler.key``: kube-scheduler's client certificate (client auth), CN
  ``system:kube-scheduler`` (:data:`~app.config.SCHEDULER_CLIENT_CN`), which the extender admits to
  ``bind`` by default (``server.tls.allowedClients``).

Leaf certificates last ``--days`` (365). Keys are written mode 0600; the extender runs as uid
65532 and must be able to read ``server.key`` (the install steps of docs/install/kubeadm.md
``chown`` it).
Existing files are not overwritten without ``--force``. ``render`` mounts the directory
(:data:`~app.deploy.wiring.PKI_DIR` by default) into both static pods.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from cryptography.x509.oid import ExtendedKeyUsageOID

from app.config import SCHEDULER_CLIENT_CN
from app.framework.errors import SchedulerExtenderError
from app.kube.pki import Key, new_ca, new_leaf, pem, pem_key, subject_alt_names

#: The files ``certs`` writes, in order.
FILES = ("ca.crt", "ca.key", "server.crt", "server.key", "scheduler.crt", "scheduler.key")
CA_DAYS = 3650
#: The server certificate's names besides ``--name``: the loopback kube-scheduler reaches the
#: static pod on, and the metrics Service of the static pods (``scheduler-extender-metrics`` in
#: ``kube-system``), the name their PodMonitor verifies the metrics listener's certificate for.
DEFAULT_NAMES = ("127.0.0.1", "::1", "localhost", "scheduler-extender-metrics.kube-system.svc")


class CertsError(SchedulerExtenderError, ValueError):
    """The certificates cannot be written (existing files, a bad name)."""


@dataclass(frozen=True)
class Issued:
    """What was written: the paths, and the server certificate's subject alternative names."""

    paths: list[Path]
    names: list[str]


def _write_key(path: Path, key: Key) -> None:
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_bytes(pem_key(key))


def issue(out: Path, names: list[str] | None = None, days: int = 365, force: bool = False) -> Issued:
    """Write the CA, the server and the kube-scheduler client certificates into ``out``.

    Raises :class:`CertsError` when a file exists (without ``force``) or a name is invalid.
    """
    existing = [out / f for f in FILES if (out / f).exists()]
    if existing and not force:
        raise CertsError(f"{existing[0]} exists: pass --force to replace the whole set")
    sans = list(dict.fromkeys([*DEFAULT_NAMES, *(names or [])]))
    try:
        general_names = subject_alt_names(sans)
    except ValueError as exc:
        raise CertsError(f"--name {exc}") from None
    out.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)  # tolerate clock skew

    ca, ca_key = new_ca("scheduler-extender-ca", now, CA_DAYS)
    server, server_key = new_leaf(
        ca, ca_key, "scheduler-extender", ExtendedKeyUsageOID.SERVER_AUTH, general_names, now, days
    )
    client, client_key = new_leaf(ca, ca_key, SCHEDULER_CLIENT_CN, ExtendedKeyUsageOID.CLIENT_AUTH, None, now, days)
    (out / "ca.crt").write_bytes(pem(ca))
    _write_key(out / "ca.key", ca_key)
    (out / "server.crt").write_bytes(pem(server))
    _write_key(out / "server.key", server_key)
    (out / "scheduler.crt").write_bytes(pem(client))
    _write_key(out / "scheduler.key", client_key)
    return Issued([out / f for f in FILES], sans)


__all__ = ["FILES", "CertsError", "Issued", "issue"]

"""The session's cluster for the real-control-plane tier (``make test-cluster``).

Which cluster:

- ``KUBECONFIG`` and ``KUBE_SCHEDULER`` both set: the user's cluster (admin credentials) and that
  kube-scheduler binary (``KUBECTL``: kubectl, default the one on ``PATH``);
- else the lab, ``$LAB_DIR`` or ``../shared/lab`` beside the checkout, started on free ports with
  its own ``LAB_HOME`` (under ``~/.cache/scheduler-extender-realcluster/``) and wiped afterwards;
- else every test skips with the reason; with ``REQUIRE_CLUSTER=1`` (``.ci/run`` sets it when
  the lab is present) the session then exits nonzero.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.realcluster.support import Cluster, Lab, etcd_available

#: why no cluster could run, once the fixture found out (``pytest_sessionfinish`` reads it)
_UNAVAILABLE: list[str] = []


def _unavailable(reason: str) -> None:
    _UNAVAILABLE.append(reason)
    pytest.skip(f"no cluster for the real-control-plane tier: {reason}")


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    kubeconfig, kube_scheduler = os.environ.get("KUBECONFIG"), os.environ.get("KUBE_SCHEDULER")
    workdir = Path(tempfile.mkdtemp(prefix="realcluster-"))
    if kubeconfig and kube_scheduler:
        kubectl = os.environ.get("KUBECTL") or shutil.which("kubectl")
        if not kubectl:
            _unavailable("KUBECONFIG and KUBE_SCHEDULER are set but no kubectl (set KUBECTL or put it on PATH)")
        c = Cluster(Path(kubeconfig), str(kubectl), kube_scheduler, workdir, lab=False)
        yield c
        c.close()
        return
    lab_dir = Path(os.environ.get("LAB_DIR") or REPO.parent / "shared" / "lab")
    if not (lab_dir / "cluster.sh").exists():
        _unavailable(f"no lab at {lab_dir} (set LAB_DIR) and no KUBECONFIG with KUBE_SCHEDULER")
    if not etcd_available():
        _unavailable("the lab needs etcd: apt-get install -y etcd-server")
    home = Path.home() / ".cache" / "scheduler-extender-realcluster" / f"run-{os.getpid()}"
    lab = Lab(lab_dir, home)
    try:
        kcfg = lab.up()
    except Exception:
        lab.down(check=False)
        raise
    print(f"\nlab: LAB_HOME={home} LAB_API_PORT={lab.env['LAB_API_PORT']} KUBECONFIG={kcfg}; logs in {workdir}")
    c = Cluster(kcfg, lab.binary("kubectl"), lab.binary("kube-scheduler"), workdir, lab=True)
    try:
        yield c
    finally:
        c.close()
        lab.down()
        shutil.rmtree(home, ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _UNAVAILABLE and os.environ.get("REQUIRE_CLUSTER") == "1":
        print(f"\nREQUIRE_CLUSTER=1 but the tier could not run: {_UNAVAILABLE[0]}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def big_nodes(cluster: Cluster) -> list[str]:
    """200 Ready nodes ``lab-node-1..200`` (cpu 4, memory 16Gi, pods 110)."""
    return cluster.nodes(200)

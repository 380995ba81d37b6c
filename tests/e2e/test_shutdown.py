"""SIGTERM ends ``serve`` and ``schedule`` within ``server.timeouts.shutdown`` whatever the watches
are doing.

kube-apiserver answers a watch with its headers at once and then may send nothing for minutes: no
event while nothing changes, and a bookmark only about once a minute. A reflector's thread is then
blocked reading the stream; stopping it must interrupt that read (``Reflector.stop`` shuts the
socket down) rather than wait for it. The test API server here sends no bookmark at all
(``bookmark_interval`` of an hour), so every watch stays idle as kube-apiserver's may.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import REPO, free_port
from tests.support.apiserver import FakeAPIServer, node

#: the configured ``server.timeouts.shutdown``, seconds
SHUTDOWN = 3


@pytest.fixture
def idle_api() -> Iterator[FakeAPIServer]:
    server = FakeAPIServer(bookmark_interval=3600.0)
    server.start()
    for i in range(3):
        server.put("nodes", node(f"node-{i}"))
    yield server
    server.stop()


def _config(tmp: Path, api: FakeAPIServer, example: str) -> Path:
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(api.kubeconfig())
    doc = yaml.safe_load((REPO / "examples" / example).read_text())
    doc["cluster"] = {"kubeconfig": str(kubeconfig)}
    server = doc.setdefault("server", {})
    server["timeouts"] = {"shutdown": f"{SHUTDOWN}s"}
    server["insecureBind"] = True  # loopback only, for the test
    path = tmp / example
    path.write_text(yaml.safe_dump(doc))
    return path


def _watches_open(api: FakeAPIServer, kinds: set[str]) -> bool:
    with api.lock:
        return kinds <= {w.kind for w in api.watchers}


@pytest.mark.parametrize(("command", "example"), [("schedule", "ip-scheduler.yaml"), ("serve", "cluster.yaml")])
def test_sigterm_with_idle_watches_exits_within_the_shutdown_timeout(
    idle_api: FakeAPIServer, tmp_path: Path, command: str, example: str
) -> None:
    port = free_port()
    path = _config(tmp_path, idle_api, example)
    log = tmp_path / "process.log"
    cmd = [sys.executable, "-m", "app", command, "--config", str(path), "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _watches_open(idle_api, {"nodes", "pods"}):
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        assert _watches_open(idle_api, {"nodes", "pods"}), log.read_text()
        # the reflectors are now blocked reading idle streams; make sure the server answers too
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
        time.sleep(0.5)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            status = proc.wait(timeout=SHUTDOWN + 10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"{command} was still running {SHUTDOWN + 10}s after SIGTERM:\n{log.read_text()}")
        took = time.monotonic() - started
        assert took < SHUTDOWN + 1, f"{command} took {took:.1f}s to exit after SIGTERM:\n{log.read_text()}"
        # a clean stop on SIGTERM exits 0, as kube-scheduler does when asked to terminate
        assert status == 0, log.read_text()
        assert "did not end within" not in log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

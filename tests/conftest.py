"""Shared test helpers: a real server process on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
import yaml

REPO = Path(__file__).resolve().parent.parent


def cluster_config(
    tmp: Path, kubeconfig: str, example: str = "cluster.yaml", edit: Callable[[Any], None] | None = None, **cluster: Any
) -> Path:
    """``examples/<example>`` with its ``cluster:`` pointed at ``kubeconfig`` (YAML text, written
    next to it) and updated with ``cluster``; ``edit(doc)`` may change the document further.

    Bind is served to plain-HTTP callers (``server.insecureBind``) so the tests can call it
    without certificates; ``tests/e2e/test_bind_security.py`` tests the secure configuration.
    DefaultBinder's timeout is 1 s (short warm-ups)."""
    path = tmp / "kubeconfig"
    path.write_text(kubeconfig)
    doc = yaml.safe_load((REPO / "examples" / example).read_text())
    doc["cluster"].update({"kubeconfig": str(path), **cluster})
    doc.setdefault("server", {})["insecureBind"] = True
    # binds to the loopback test API server take milliseconds: a 1 s bind timeout keeps the
    # warm-up after a start (one bind deadline) short; a test that needs more sets it in ``edit``
    for profile in doc["profiles"]:
        for pc in profile.get("pluginConfig", []):
            if pc["name"] == "DefaultBinder":
                pc["args"] = {**(pc.get("args") or {}), "timeoutSeconds": 1}
    if edit is not None:
        edit(doc)
    out = tmp / example
    out.write_text(yaml.safe_dump(doc))
    return out


def mutual_tls(pki: Path, **tls: Any) -> Callable[[Any], None]:
    """A :func:`cluster_config` edit serving the verbs over mutual TLS as ``examples/cluster.yaml``
    deploys: the certificates ``python -m app certs`` wrote into ``pki``, bind only for
    kube-scheduler's client certificate (``insecureBind`` off); ``tls``: further ``server.tls``
    fields (``reloadInterval``)."""

    def secure(doc: Any) -> None:
        doc["server"]["insecureBind"] = False
        doc["server"]["tls"] = {
            "certFile": str(pki / "server.crt"),
            "keyFile": str(pki / "server.key"),
            "clientCAFile": str(pki / "ca.crt"),
            **tls,
            "scheduler": {
                "caFile": str(pki / "ca.crt"),
                "certFile": str(pki / "scheduler.crt"),
                "keyFile": str(pki / "scheduler.key"),
            },
        }

    return secure


def cli(*args: str, cwd: Path = REPO, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m app ARGS`` as a user runs it, from ``cwd`` (the checkout's ``app`` whatever the
    working directory): exit status, stdout and stderr as text."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "app", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def no_traceback(out: subprocess.CompletedProcess[str]) -> None:
    """A command's output shows no Python traceback."""
    assert "Traceback" not in out.stderr + out.stdout, out.stderr


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_in_thread(server: uvicorn.Server) -> threading.Thread:
    """Run ``server`` (an in-process uvicorn server on loopback) in a daemon thread, returned once
    its ``/healthz`` answers (at most 10 s)."""
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"{'https' if server.config.ssl else 'http'}://{server.config.host}:{server.config.port}/healthz"
    with httpx.Client(timeout=1, verify=False) as probe:  # one client: an httpx client costs ~20 ms of CPU
        for _ in range(200):
            try:
                probe.get(url)
                break
            except httpx.TransportError:
                time.sleep(0.05)
    return thread


class Server:
    """``python -m app serve`` as a child process on 127.0.0.1:<port>."""

    def __init__(
        self,
        config: Path | None = None,
        env: dict[str, str] | None = None,
        wait_ready: bool = True,
        verify: Any = None,
        port: int | None = None,
    ) -> None:
        """``verify``: for a TLS configuration, what httpx verifies the server with (an SSL context).
        ``port``: listen there instead of on a free port."""
        self.port = port if port is not None else free_port()
        self.url = f"{'https' if verify is not None else 'http'}://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "app", "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        if config is not None:
            cmd += ["--config", str(config)]
        self.log = REPO / ".pytest_cache" / f"server-{self.port}.log"
        self.log.parent.mkdir(exist_ok=True)
        self._log_file = self.log.open("wb")
        self.proc = subprocess.Popen(
            cmd, cwd=REPO, stdout=self._log_file, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
        )
        deadline = time.monotonic() + 30
        path = "readyz" if wait_ready else "healthz"
        with httpx.Client(timeout=1, verify=verify or True) as probe:  # one client for every poll (~20 ms each)
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited with {self.proc.returncode}: {self.log.read_text()}")
                try:
                    r = probe.get(f"{self.url}/{path}")
                    if r.status_code == 200 and not (wait_ready and r.json().get("role") == "leader (warming up)"):
                        return  # ready, and (with cluster state) past the warm-up before binds are admitted
                    time.sleep(0.1)
                except httpx.TransportError:
                    time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server did not become ready: {self.log.read_text()}")

    def post(self, verb: str, body: bytes) -> httpx.Response:
        """POST ``body`` to ``/{verb}`` (the default profile), as kube-scheduler does."""
        return httpx.post(f"{self.url}/{verb}", content=body, timeout=30)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._log_file.close()


@pytest.fixture(scope="session")
def default_server() -> Iterator[Server]:
    """The service on its embedded default configuration."""
    server = Server()
    yield server
    server.stop()

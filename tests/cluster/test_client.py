"""Client loading: explicit kubeconfig, in-cluster, default kubeconfig, and the start-up error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.kube.client import KubeClient, load_client
from app.kube.errors import KubeConfigError
from tests.conftest import REPO
from tests.support.apiserver import FakeAPIServer, node


def _clean_env(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(home))


def test_explicit_kubeconfig_is_used_and_does_not_fall_back(
    api: FakeAPIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clean_env(monkeypatch, tmp_path)
    path = tmp_path / "config"
    path.write_text(api.kubeconfig())
    api.put("nodes", node("n1"))
    loaded = load_client(str(path))
    assert loaded.source == f"kubeconfig {path}"
    body = KubeClient(loaded.api_client).list("nodes", 10, None, 5)
    assert b'"n1"' in body
    with pytest.raises(KubeConfigError, match=r"cluster.kubeconfig /nonexistent"):
        load_client("/nonexistent")


def test_default_kubeconfig_from_env(api: FakeAPIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_env(monkeypatch, tmp_path)
    path = tmp_path / "kc"
    path.write_text(api.kubeconfig())
    monkeypatch.setenv("KUBECONFIG", str(path))
    assert load_client().source == f"kubeconfig {path}"


def test_no_credentials_names_what_was_tried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clean_env(monkeypatch, tmp_path)
    with pytest.raises(KubeConfigError) as err:
        load_client()
    text = str(err.value)
    assert text.startswith("no cluster credentials")
    assert "in-cluster:" in text and f"default kubeconfig {tmp_path}/.kube/config" in text


def test_serve_exits_with_a_clear_error_without_credentials(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        (REPO / "examples" / "cluster.yaml").read_text().replace("server:\n", "server:\n  insecureBind: true\n")
    )
    assert "insecureBind: true" in config.read_text()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBERNETES_", "KUBECONFIG"))}
    env["HOME"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "app", "serve", "--config", str(config), "--port", "0"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "error: cluster state is configured but no cluster credentials" in proc.stderr
    assert "Traceback" not in proc.stderr

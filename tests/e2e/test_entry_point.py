"""Out-of-tree plugins: a real distribution installed with pip, found through its entry point."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO, Server
from tests.support.bodies import fixture_bytes

DIST = REPO / "tests" / "support" / "oot_plugin"
CONFIG = """\
apiVersion: config.scheduler-extender.dev/v1alpha1
kind: ExtenderConfiguration
profiles:
- name: oot
  extender: {verbs: [filter], nodeCacheCapable: true}
  plugins:
    filter:
    - name: AvoidNodeSuffix
  pluginConfig:
  - name: AvoidNodeSuffix
    args: {suffix: "-13.eu-west-1.compute.internal"}
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("build")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(DIST)],
        check=True,
        cwd=build,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )  # fmt: skip
    assert list(target.glob("example_oot_plugin-*.dist-info/entry_points.txt"))
    return target


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cfg") / "oot.yaml"
    path.write_text(CONFIG)
    return path


def env_with(site: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}


def test_validate_sees_the_plugin_only_when_installed(site: Path, config: Path) -> None:
    run = [sys.executable, "-m", "app", "validate", str(config)]
    without = subprocess.run(run, capture_output=True, text=True, cwd=REPO)
    assert without.returncode == 1
    assert "profiles[0].plugins.filter[0].name: unknown plugin 'AvoidNodeSuffix'" in without.stderr
    with_plugin = subprocess.run(run, capture_output=True, text=True, cwd=REPO, env={**os.environ, **env_with(site)})
    assert with_plugin.returncode == 0, with_plugin.stderr
    assert "  filter      AvoidNodeSuffix" in with_plugin.stdout.splitlines()


@pytest.fixture(scope="module")
def server(site: Path, config: Path) -> Iterator[Server]:
    s = Server(config, env=env_with(site))
    yield s
    s.stop()


def test_server_runs_the_out_of_tree_plugin(server: Server) -> None:
    r = httpx.post(f"{server.url}/filter", content=fixture_bytes("extenderargs_cache_n10.json"))
    assert r.status_code == 200
    assert r.json()["FailedNodes"] == {"ip-10-0-32-13.eu-west-1.compute.internal": "node name suffix is avoided"}
    assert len(r.json()["NodeNames"]) == 9

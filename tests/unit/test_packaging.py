"""What a user gets besides the code (project issue 23, items 7 and 8): the license, the changelog,
the version claims of the documentation (docs/operations/upgrades.md, and no page contradicting it)
and of the fixtures against the code, the configuration API's version policy, the embedded default
that fails open (said in the README, the install pages and docs/choosing-a-mode.md), and
out-of-tree plugins installed the way the Dockerfile installs them into a wheel-built environment,
found by ``python -m app validate``."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from app.config import API_VERSION, ConfigError, load_config, parse_config
from app.deploy.render import DEFAULT_KUBERNETES_VERSION, NEWEST_TESTED_MINOR, OLDEST_KUBERNETES_MINOR
from app.plugins import default_registry
from tests.conftest import REPO
from tests.support.apiserver import FakeAPIServer

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
README = (REPO / "README.md").read_text()
DOCS = REPO / "docs"
#: the documentation pages the assertions below read: where the README's sections moved
UPGRADES = (DOCS / "operations" / "upgrades.md").read_text()
CHOOSING = (DOCS / "choosing-a-mode.md").read_text()
#: the install pages that show the warning about applying manifests/ unchanged
INSTALL_PAGES = ("install/index.md", "install/kubeadm.md", "install/kind.md")
DOCKERFILE = (REPO / "Dockerfile").read_text()
#: sha256 of https://www.apache.org/licenses/LICENSE-2.0.txt (also Debian's common-licenses/Apache-2.0)
APACHE_2_0_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def _section(text: str, heading: str) -> str:
    """The body of the Markdown section ``heading`` (a whole heading line), up to the next heading
    of the same or a higher level."""
    level = heading.split(" ", 1)[0]
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    nxt = re.compile(rf"^#{{1,{len(level)}}} ", re.M).search(text, start)
    return text[start : nxt.start() if nxt else len(text)]


# -- license --------------------------------------------------------------------------------------


def test_license_file_is_the_apache_2_0_text_pyproject_declares() -> None:
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    text = (REPO / "LICENSE").read_bytes()
    assert hashlib.sha256(text).hexdigest() == APACHE_2_0_SHA256, "LICENSE is not the verbatim Apache-2.0 text"
    lines = [line.strip() for line in text.decode().splitlines()]
    assert lines[1:3] == ["Apache License", "Version 2.0, January 2004"]
    assert "END OF TERMS AND CONDITIONS" in lines
    # the image's label and the README say the same (the README keeps its License section)
    assert 'org.opencontainers.image.licenses="Apache-2.0"' in DOCKERFILE
    assert "[Apache License 2.0](LICENSE)" in _section(README, "## License")


# -- changelog ------------------------------------------------------------------------------------

CHANGE_TYPES = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_changelog_keeps_a_changelog() -> None:
    text = (REPO / "CHANGELOG.md").read_text()
    assert text.startswith("# Changelog\n")
    assert "[Keep a Changelog](https://keepachangelog.com/en/1.1.0/)" in text
    releases = re.findall(r"^## (.*)$", text, re.M)
    assert releases and releases[0] == "[Unreleased]"
    for release in releases[1:]:
        assert re.fullmatch(r"\[\d+\.\d+\.\d+\] - \d{4}-\d{2}-\d{2}", release), release
    unreleased = _section(text, "## [Unreleased]")
    kinds = re.findall(r"^### (.*)$", unreleased, re.M)
    assert kinds and set(kinds) <= CHANGE_TYPES and len(kinds) == len(set(kinds))
    for kind in kinds:
        assert re.search(r"^- \S", _section(unreleased, f"### {kind}"), re.M), f"### {kind} lists nothing"
    # what this work changed for a user is in it
    assert "`ignorable: true`" in _section(unreleased, "### Changed")
    assert "PLUGIN_PACKAGES" in unreleased


# -- versions -------------------------------------------------------------------------------------


def _fixture_release() -> str:
    """The Kubernetes release the fixtures' README says the bodies were marshalled with."""
    text = (REPO / "tests" / "fixtures" / "README.md").read_text()
    (release,) = set(re.findall(r"Kubernetes (\d+\.\d+\.\d+)", text))
    return release


def test_every_kubernetes_version_claim_agrees_with_the_code() -> None:
    newest, oldest = f"v1.{NEWEST_TESTED_MINOR}", f"v1.{OLDEST_KUBERNETES_MINOR}"
    # the code: the pinned default is a release of the newest tested minor, which the test API
    # server reports and whose kubeadm manifest the kubeadm tests patch
    assert DEFAULT_KUBERNETES_VERSION.startswith(newest + ".")
    assert FakeAPIServer().version == DEFAULT_KUBERNETES_VERSION
    assert (REPO / "tests" / "fixtures" / "kubeadm" / f"kube-scheduler-{newest}.yaml").is_file()
    # the fixtures: the release their README names is the one their bytes carry
    fixture = _fixture_release()
    body = json.loads((REPO / "tests" / "fixtures" / "extenderargs_nocache_n10.json").read_bytes())
    assert {n["status"]["nodeInfo"]["kubeletVersion"] for n in body["Nodes"]["items"]} == {f"v{fixture}"}
    fixtures_readme = (REPO / "tests" / "fixtures" / "README.md").read_text()
    assert f"v1.{OLDEST_KUBERNETES_MINOR} to {newest}" in fixtures_readme
    # the compatibility matrix (docs/operations/upgrades.md) says all of it
    matrix = _section(UPGRADES, "## Compatibility")
    assert f"**{newest} is the newest release the deployment is tested with.**" in matrix
    assert f"{oldest} to {newest} (`render` default {DEFAULT_KUBERNETES_VERSION}" in matrix
    assert f"v{fixture}" in matrix and f"reports `gitVersion` {DEFAULT_KUBERNETES_VERSION}" in matrix
    assert f"kubeadm {newest}'s generated kube-scheduler manifest" in matrix
    # no sentence of the README or of a documentation page calls another release the newest tested
    for page in [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]:
        for sentence in re.split(r"(?<=[.!?])\**\s", page.read_text().replace("\n", " ")):
            if "newest" in sentence:
                assert set(re.findall(r"v1\.\d+", sentence)) <= {newest}, f"{page.relative_to(REPO)}: {sentence}"


def test_the_configuration_api_version_policy_is_stated_and_enforced() -> None:
    assert API_VERSION == "config.scheduler-extender.dev/v1alpha1"
    policy = _section(UPGRADES, "## Versions and upgrades")
    assert f"`{API_VERSION}`" in policy
    assert "**What v1alpha1 promises.**" in policy and "**How a later version arrives.**" in policy
    assert "[`CHANGELOG.md`](../changelog.md)" in policy  # the site's page that includes CHANGELOG.md
    assert '--8<-- "CHANGELOG.md"' in (DOCS / "changelog.md").read_text()
    # "any other apiVersion is refused": a later version is not read as this one
    doc = yaml.safe_load((REPO / "app" / "default-config.yaml").read_text())
    doc["apiVersion"] = "config.scheduler-extender.dev/v1beta1"
    with pytest.raises(ConfigError, match="apiVersion"):
        parse_config(doc, default_registry(load_entry_points=False))


# -- the embedded default fails open ------------------------------------------------------------


def test_the_embedded_default_and_its_manifests_fail_open() -> None:
    config = load_config(None, default_registry(load_entry_points=False))
    assert config.profiles and all(p.extender.ignorable for p in config.profiles)
    for path in ("kube-scheduler-config.yaml", "second-scheduler/kube-scheduler-config.yaml"):
        extenders = yaml.safe_load((REPO / "manifests" / path).read_text())["extenders"]
        assert extenders and all(e["ignorable"] is True for e in extenders), path
    # the README keeps GitHub's warning, shortened; the install pages show it as an admonition
    warnings = {"README.md": README.split("> [!WARNING]\n", 1)[1].split("\n\n", 1)[0]}
    for page in INSTALL_PAGES:
        text = (DOCS / page).read_text()
        assert "\n!!! warning\n" in text, f"docs/{page} has no warning admonition"
        body = text.split("\n!!! warning\n", 1)[1]
        end = re.search(r"^(?!    |$)", body, re.M)  # the first line the admonition does not indent
        warnings[page] = body[: end.start() if end else len(body)]
    for page, warning in warnings.items():
        warning = " ".join(line.lstrip("> ").strip() for line in warning.splitlines())
        assert "**`manifests/` is a demonstration, not your policy.**" in warning, page
        assert "**every pod of the cluster**" in warning and "`ignorable: true`" in warning, page
    down = _section(CHOOSING, "## When the extender is down: `ignorable`")
    assert "The embedded default, and so `manifests/`, sets `ignorable: true`" in down
    assert "The trade-off" in down


# -- out-of-tree plugins, installed as the Dockerfile does ------------------------------------------

PLUGIN_PYPROJECT = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "tiny-oot-policy"
version = "0.0.1"

[project.entry-points."scheduler_extender.plugins"]
TinyOotFilter = "tiny_oot_policy:PLUGIN"

[tool.setuptools]
packages = ["tiny_oot_policy"]
"""
PLUGIN_MODULE = """\
from app.framework import SUCCESS, PluginEntry


class TinyOotFilter:
    name = "TinyOotFilter"

    def __init__(self, args, handle):
        pass

    def filter(self, state, pod, node):
        return SUCCESS


PLUGIN = PluginEntry(name="TinyOotFilter", factory=TinyOotFilter)
"""
PLUGIN_CONFIG = f"""\
apiVersion: {API_VERSION}
kind: ExtenderConfiguration
profiles:
- name: oot
  extender: {{verbs: [filter]}}
  plugins:
    filter:
    - name: TinyOotFilter
"""


def _plugin_install_step() -> str:
    """The Dockerfile's build-stage ``RUN`` that installs ``PLUGIN_PACKAGES``, as one shell script."""
    build_stage = DOCKERFILE.split("\nFROM ", 2)[1]  # from the first FROM up to the runtime stage
    assert re.search(r'^ARG PLUGIN_PACKAGES=""$', build_stage, re.M), "the build argument defaults to nothing"
    steps = [s for s in build_stage.replace("\\\n", " ").splitlines() if s.startswith("RUN ")]
    (step,) = [s for s in steps if "$PLUGIN_PACKAGES" in s]
    assert steps.index(step) > next(i for i, s in enumerate(steps) if "--no-binary=scheduler-extender ." in s)
    return step.removeprefix("RUN ")


def _pip(python: Path, *args: str, cwd: Path) -> None:
    subprocess.run([str(python), "-m", "pip", *args], cwd=cwd, check=True, capture_output=True, timeout=120)


@pytest.mark.slow
def test_the_dockerfile_installs_an_out_of_tree_plugin_validate_finds(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INDEX="1", PIP_NO_CACHE_DIR="1")
    host = Path(sys.executable)
    # the project's wheel, from the files a checkout ships
    src = tmp_path / "src"
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "app", src / "app", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    wheels = tmp_path / "wheels"
    _pip(host, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), ".", cwd=src)
    (wheel,) = wheels.glob("scheduler_extender-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        info = next(n.split("/")[0] for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        assert zf.read(f"{info}/licenses/LICENSE") == (REPO / "LICENSE").read_bytes()
        assert "License-Expression: Apache-2.0" in zf.read(f"{info}/METADATA").decode()
    # a tiny plugin distribution, as a user would publish it
    plugin = tmp_path / "plugin"
    (plugin / "tiny_oot_policy").mkdir(parents=True)
    (plugin / "pyproject.toml").write_text(PLUGIN_PYPROJECT)
    (plugin / "tiny_oot_policy" / "__init__.py").write_text(PLUGIN_MODULE)
    _pip(host, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), ".", cwd=plugin)
    (plugin_wheel,) = wheels.glob("tiny_oot_policy-*.whl")
    # the image's virtualenv: the project's wheel; its dependencies are taken from this test's own
    # environment (a .pth after the venv's own site-packages: no registry needed)
    venv = tmp_path / "opt-venv"
    subprocess.run([str(host), "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
    python = venv / "bin" / "python"
    _pip(python, "install", "--no-deps", "-q", str(wheel), cwd=tmp_path)
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(site) / "zz_host_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    config = tmp_path / "oot.yaml"
    config.write_text(PLUGIN_CONFIG)

    def validate() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(python), "-m", "app", "validate", str(config)],
            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60,
        )  # fmt: skip

    where = subprocess.run(
        [str(python), "-c", "import app; print(app.__file__)"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert where.stdout.startswith(site), "the service must come from the wheel, not the checkout"
    before = validate()
    assert before.returncode == 1 and "unknown plugin 'TinyOotFilter'" in before.stderr
    # the Dockerfile's step, verbatim but for the virtualenv's path: a no-op when empty, then with the plugin
    step = _plugin_install_step().replace("/opt/venv", str(venv))
    for packages in ("", str(plugin_wheel)):
        run = subprocess.run(["sh", "-c", step], env={**env, "PLUGIN_PACKAGES": packages}, capture_output=True)
        assert run.returncode == 0, run.stderr
    assert not (venv / "installed.txt").exists()
    after = validate()
    assert after.returncode == 0, after.stderr
    assert "  filter      TinyOotFilter" in after.stdout.splitlines()

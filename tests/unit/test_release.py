"""The release workflow (.github/workflows/release.yml), linted against the GitHub workflow schema
that check-jsonschema ships, and checked for what a release must do: test, build multi-arch, push,
render the manifests for the pushed image, attach them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import REPO

WORKFLOW = REPO / ".github" / "workflows" / "release.yml"


def lint(path: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(path)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_release_workflow_passes_the_schema() -> None:
    out = lint(WORKFLOW)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_linter_really_lints(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    doc = yaml.safe_load(WORKFLOW.read_text())
    doc["jobs"]["image"]["runs_on"] = doc["jobs"]["image"].pop("runs-on")  # a typo
    broken.write_text(yaml.safe_dump(doc))
    assert lint(broken).returncode != 0


def test_release_builds_multi_arch_pushes_and_attaches_manifests_for_that_image() -> None:
    doc = yaml.safe_load(WORKFLOW.read_text())
    assert doc[True]["push"]["tags"] == ["v*.*.*"]  # YAML 1.1 reads the key `on` as true
    jobs = doc["jobs"]
    assert jobs["test"]["steps"][-1]["run"] == "make test"
    assert jobs["image"]["needs"] == "test" and jobs["manifests"]["needs"] == "image"
    build = next(s for s in jobs["image"]["steps"] if s.get("uses", "").startswith("docker/build-push-action"))
    assert set(build["with"]["platforms"].split(",")) == {"linux/amd64", "linux/arm64"}
    assert build["with"]["push"] is True
    assert build["with"]["tags"] == "${{ env.IMAGE }}:${{ github.ref_name }}"
    render = next(s["run"] for s in jobs["manifests"]["steps"] if "render" in s.get("run", ""))
    assert '--image "$IMAGE:$GITHUB_REF_NAME"' in render  # the manifests name the image just pushed
    attach = next(s for s in jobs["manifests"]["steps"] if s.get("uses", "").startswith("softprops/action-gh-release"))
    assert attach["with"]["files"] == "manifests-${{ github.ref_name }}.tar.gz"
    assert "manifests-$GITHUB_REF_NAME.tar.gz" in render

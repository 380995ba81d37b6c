"""`python -m app render --target ...` through the real CLI: each install mode writes only its
files, the default follows from the configuration and says so, headers carry no local absolute
path, the PodGroup CRD comes with Coscheduling, and what is written still passes the validators."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from app.cluster import podgroups
from tests.conftest import REPO
from tests.unit.test_render import OLDEST, PINNED, assert_valid

EXAMPLES = REPO / "examples"
CONTROL_PLANE = {
    "kube-scheduler-config.yaml",
    "scheduler-extender.yaml",
    "scheduler-extender-config.yaml",
    "scheduler-extender-rbac.yaml",  # the configurations below have cluster:
}
KUBEADM = CONTROL_PLANE | {"kubeadm/patches/kube-scheduler0+json.yaml", "kubeadm/cluster-configuration.yaml"}
STATIC_POD = CONTROL_PLANE | {"kube-scheduler.yaml"}
SECOND = {
    f"second-scheduler/{n}"
    for n in (
        "deployment.yaml",
        "kube-scheduler-config.yaml",
        "kustomization.yaml",
        "rbac.yaml",
        "scheduler-extender-config.yaml",
        "serviceaccount.yaml",
    )
}
STANDALONE = {
    f"scheduler/{n}"
    for n in (
        "deployment.yaml",
        "kustomization.yaml",
        "rbac.yaml",
        "scheduler-extender-config.yaml",
        "serviceaccount.yaml",
    )
}
CRD = "podgroup-crd.yaml"


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH: the checkout's app, whatever the working directory
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "app", "render", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def written(out: Path) -> dict[str, str]:
    files = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}
    listed = files.pop(".rendered").split()
    assert sorted(listed) == sorted(files)
    return files


def render_ok(out: Path, *args: str, cwd: Path = REPO) -> tuple[dict[str, str], str]:
    result = cli(*args, "--out", str(out), cwd=cwd)
    assert result.returncode == 0, result.stderr
    return written(out), result.stderr


def _with_coscheduling(tmp_path: Path) -> Path:
    """examples/ip-scheduler.yaml (schedulerName) with Coscheduling at filter as well."""
    doc = yaml.safe_load((EXAMPLES / "ip-scheduler.yaml").read_text())
    doc["profiles"][0]["plugins"]["filter"].append({"name": "Coscheduling"})
    path = tmp_path / "gang-scheduler.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize(
    ("target", "example", "expected"),
    [
        ("kubeadm", "cluster.yaml", KUBEADM),
        ("static-pod", "cluster.yaml", STATIC_POD),
        ("second-scheduler", "cluster.yaml", SECOND),
        ("standalone", "ip-scheduler.yaml", STANDALONE),
    ],
)
def test_each_target_writes_only_its_files_and_they_pass_the_validators(
    tmp_path: Path, target: str, example: str, expected: set[str]
) -> None:
    files, stderr = render_ok(tmp_path / "out", "--config", f"examples/{example}", "--target", target)
    assert set(files) == expected
    assert "note:" not in stderr  # a target was given: nothing chosen for the user
    for version in (PINNED, OLDEST):
        assert_valid(files, version)


def test_targets_combine_and_all_writes_every_mode(tmp_path: Path) -> None:
    both, _ = render_ok(
        tmp_path / "a", "--config", "examples/cluster.yaml", "--target", "kubeadm", "--target", "static-pod"
    )
    assert set(both) == KUBEADM | STATIC_POD
    everything, stderr = render_ok(tmp_path / "b", "--config", "examples/ip-scheduler.yaml", "--target", "all")
    assert set(everything) == KUBEADM | STATIC_POD | SECOND | STANDALONE and "note:" not in stderr


def test_a_narrower_render_into_the_same_directory_removes_the_other_modes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    render_ok(out, "--config", "examples/ip-scheduler.yaml", "--target", "all")
    files, _ = render_ok(out, "--config", "examples/ip-scheduler.yaml", "--target", "standalone")
    assert set(files) == STANDALONE
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml")) == sorted(STANDALONE)


@pytest.mark.parametrize(
    ("config", "expected", "chosen"),
    [
        ([], (KUBEADM | STATIC_POD) - {"scheduler-extender-rbac.yaml"}, "--target kubeadm --target static-pod"),
        (["--config", "examples/cluster.yaml"], KUBEADM | STATIC_POD, "--target kubeadm --target static-pod"),
        (["--config", "examples/ip-scheduler.yaml"], STANDALONE, "--target standalone"),
    ],
)
def test_the_default_is_what_the_configuration_implies_and_a_note_says_so(
    tmp_path: Path, config: list[str], expected: set[str], chosen: str
) -> None:
    files, stderr = render_ok(tmp_path / "out", *config)
    assert set(files) == expected
    (note,) = [line for line in stderr.splitlines() if line.startswith("note:")]
    assert f"note: rendered {chosen} (" in note
    assert "--target kubeadm|static-pod|second-scheduler|standalone" in note and "--target all" in note


def test_wrong_targets_are_refused(tmp_path: Path) -> None:
    unknown = cli("--target", "eks", "--out", str(tmp_path / "a"))
    assert unknown.returncode == 2 and "invalid choice: 'eks'" in unknown.stderr
    standalone = cli("--target", "standalone", "--out", str(tmp_path / "b"))  # the default has no schedulerName
    assert (
        standalone.returncode == 1 and "error: --target standalone: no profile sets schedulerName" in standalone.stderr
    )
    assert "Traceback" not in standalone.stderr and not (tmp_path / "b").exists()


def test_headers_name_the_configuration_without_its_absolute_path(tmp_path: Path) -> None:
    config = tmp_path / "deep" / "dir" / "cluster.yaml"
    config.parent.mkdir(parents=True)
    config.write_text((EXAMPLES / "cluster.yaml").read_text())
    files, _ = render_ok(tmp_path / "abs", "--config", str(config), "--target", "all")
    leaked = [name for name, text in files.items() if str(tmp_path) in text or "/deep/dir/" in text]
    assert leaked == []
    assert all("from cluster.yaml (scheduler-extender" in text for text in files.values() if text.startswith("#"))
    # a path relative to the working directory is kept as given
    files, _ = render_ok(tmp_path / "rel", "--config", "deep/dir/cluster.yaml", "--target", "kubeadm", cwd=tmp_path)
    assert "from deep/dir/cluster.yaml (scheduler-extender" in files["scheduler-extender.yaml"]
    assert not any(str(tmp_path) in text for text in files.values())


def _crds(files: dict[str, str]) -> dict[str, dict[str, object]]:
    return {name: yaml.safe_load(text) for name, text in files.items() if name.endswith(CRD)}


@pytest.mark.parametrize("target", ["kubeadm", "static-pod", "second-scheduler", "standalone"])
def test_the_podgroup_crd_comes_with_coscheduling_and_only_then(tmp_path: Path, target: str) -> None:
    gang = "examples/stateful.yaml" if target != "standalone" else str(_with_coscheduling(tmp_path))
    plain = "examples/cluster.yaml" if target != "standalone" else "examples/ip-scheduler.yaml"
    files, _ = render_ok(tmp_path / "gang", "--config", gang, "--target", target)
    where = {"second-scheduler": "second-scheduler/", "standalone": "scheduler/"}.get(target, "")
    crds = _crds(files)
    assert list(crds) == [f"{where}{CRD}"]
    (crd,) = crds.values()
    spec = crd["spec"]
    assert isinstance(spec, dict)
    assert crd["kind"] == "CustomResourceDefinition" and crd["metadata"] == {
        "annotations": {"api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/scheduler-plugins/pull/50"},
        "name": "podgroups.scheduling.x-k8s.io",
    }
    assert spec["group"] == podgroups.GROUP and spec["names"]["kind"] == "PodGroup" and spec["scope"] == "Namespaced"
    (version,) = spec["versions"]
    assert version["name"] == podgroups.VERSION and version["served"] and version["storage"]
    fields = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert {"minMember", "scheduleTimeoutSeconds", "minResources"} <= set(fields)  # what Coscheduling reads
    if where:  # beside the kustomization, not in it: `kubectl delete -k` must not delete every PodGroup
        assert CRD not in yaml.safe_load(files[f"{where}kustomization.yaml"])["resources"]
    for v in (PINNED, OLDEST):
        assert "CustomResourceDefinition" in assert_valid(files, v)
    without, _ = render_ok(tmp_path / "plain", "--config", plain, "--target", target)
    assert _crds(without) == {}

"""The rendered kubeadm wiring: the JSON patch applies to the manifest kubeadm generates (the fixture
tests/fixtures/kubeadm/kube-scheduler-v1.35.yaml, its source named in it) with python-json-patch, and
the result is a valid Pod that runs kube-scheduler with --config and every file it reads mounted;
the ClusterConfiguration snippet says the same in kubeadm's words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonpatch
import kubernetes_validate
import pytest
import yaml

from app.config import load_config
from app.deploy.render import RenderOptions, render
from app.plugins import default_registry
from tests.conftest import REPO
from tests.unit.test_render import CONFIGS

FIXTURE = REPO / "tests" / "fixtures" / "kubeadm" / "kube-scheduler-v1.35.yaml"


def rendered(config: Path | None, version: str = "v1.35.0") -> dict[str, str]:
    registry = default_registry()
    return render(load_config(config, registry), registry, RenderOptions(kubernetes_version=version), "test")


@pytest.mark.parametrize("name", ["default", "mtls"])
def test_patch_applies_to_kubeadms_manifest_and_passes_strict_validation(name: str, tmp_path: Path) -> None:
    files = rendered(CONFIGS[name](tmp_path) if name != "default" else None)
    kubeadm_pod = yaml.safe_load(FIXTURE.read_text())
    patch = jsonpatch.JsonPatch(yaml.safe_load(files["kubeadm/patches/kube-scheduler0+json.yaml"]))
    pod: dict[str, Any] = patch.apply(kubeadm_pod)
    container = pod["spec"]["containers"][0]
    # kubeadm's own settings stay; --config and the mounts are added
    assert container["command"][:6] == kubeadm_pod["spec"]["containers"][0]["command"]
    config_arg = container["command"][-1]
    assert config_arg.startswith("--config=")
    mounted = {m["mountPath"] for m in container["volumeMounts"]}
    hosts = {v["hostPath"]["path"] for v in pod["spec"]["volumes"]}
    entry = yaml.safe_load(files["kube-scheduler-config.yaml"])
    wanted = {config_arg.removeprefix("--config="), entry["clientConnection"]["kubeconfig"]}
    for ext in entry["extenders"]:
        wanted |= {v for v in (ext.get("tlsConfig") or {}).values() if isinstance(v, str)}
    assert wanted <= mounted and wanted <= hosts
    names = [v["name"] for v in pod["spec"]["volumes"]]
    assert len(names) == len(set(names))  # no clash with kubeadm's volume names
    # kubeadm writes `creationTimestamp: null` and `status: {}` (what the API server fills in); the
    # rest is validated as the kubelet's static pod would be
    clean = {k: v for k, v in pod.items() if k != "status"}
    clean["metadata"] = {k: v for k, v in pod["metadata"].items() if v is not None}
    kubernetes_validate.validate(clean, "1.35.0", strict=True)


@pytest.mark.parametrize(
    ("version", "api"), [("v1.35.0", "kubeadm.k8s.io/v1beta4"), ("v1.30.2", "kubeadm.k8s.io/v1beta3")]
)
def test_cluster_configuration_adds_config_and_mounts(version: str, api: str) -> None:
    files = rendered(None, version)
    doc = yaml.safe_load(files["kubeadm/cluster-configuration.yaml"])
    assert doc["apiVersion"] == api and doc["kind"] == "ClusterConfiguration"
    assert doc["kubernetesVersion"] == version
    args = doc["scheduler"]["extraArgs"]
    config = args["config"] if isinstance(args, dict) else {a["name"]: a["value"] for a in args}["config"]
    patch = yaml.safe_load(files["kubeadm/patches/kube-scheduler0+json.yaml"])
    assert f"--config={config}" == patch[0]["value"]
    volumes = {v["hostPath"] for v in doc["scheduler"]["extraVolumes"]}
    assert volumes == {op["value"]["hostPath"]["path"] for op in patch if op["path"] == "/spec/volumes/-"}
    assert all(v["readOnly"] and v["pathType"] == "File" for v in doc["scheduler"]["extraVolumes"])


def test_check_scheduler_config_reads_the_static_pod_it_is_given(tmp_path: Path) -> None:
    """After `kubeadm upgrade`: pointed at the live static pod, the preflight says whether
    kube-scheduler still runs with --config, then checks that file."""
    from app.deploy.check import check

    unwired = check(FIXTURE, offline=True)
    assert unwired.errors == 1 and "runs without --config" in unwired.render()
    files = rendered(None)
    config = tmp_path / "kube-scheduler-config.yaml"
    config.write_text(files["kube-scheduler-config.yaml"])
    patch = yaml.safe_load(files["kubeadm/patches/kube-scheduler0+json.yaml"])
    patch[0]["value"] = f"--config={config}"  # the live file, here in tmp_path
    pod = jsonpatch.JsonPatch(patch).apply(yaml.safe_load(FIXTURE.read_text()))
    manifest = tmp_path / "kube-scheduler.yaml"
    manifest.write_text(yaml.safe_dump(pod))
    wired = check(manifest, offline=True)
    assert wired.errors == 0, wired.render()
    assert f"runs with --config={config}" in wired.render() and "decodes strictly" in wired.render()


@pytest.mark.parametrize(
    ("api_version", "level", "words"),
    [
        ("v1.35.2", "ok", "within the skew policy"),
        ("v1.34.5", "error", "newer than the API server v1.34.5"),
        ("v1.37.0", "warning", "more than one minor release older"),
    ],
)
def test_static_pod_image_against_the_api_servers_version(
    api_version: str, level: str, words: str, tmp_path: Path
) -> None:
    from app.deploy.check import check
    from tests.support.apiserver import FakeAPIServer

    api = FakeAPIServer()
    api.version = api_version
    api.start()
    try:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(api.kubeconfig())
        report = check(FIXTURE, offline=True, kubeconfig=str(kubeconfig))  # its image: kube-scheduler:v1.35.0
    finally:
        api.stop()
    assert any(lvl == level and words in message for lvl, _, message in report.findings), report.render()

"""``render --target shadow`` through the real CLI: the shadow scheduler's Deployment (one
replica, ``python -m app shadow``), its ServiceAccount, a ClusterRole of get/list/watch only (no
Binding, no pods/status, no Event, no Lease, no volume update, even for a configuration whose
plugins write those when they schedule), the configuration it mounts; every object passes
kubernetes-validate, and ``--target all`` leaves the shadow out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.e2e.test_render_targets import EXAMPLES, render, render_ok
from tests.unit.test_render import OLDEST, PINNED, assert_valid

SHADOW = {
    f"shadow/{n}"
    for n in (
        "deployment.yaml",
        "kustomization.yaml",
        "rbac.yaml",
        "serviceaccount.yaml",
        "scheduler-extender-config.yaml",
    )
}


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def _config(tmp_path: Path) -> Path:
    """examples/ip-scheduler.yaml with the volume plugins (their needs read claims and volumes,
    which kube-scheduler's roles may update) and events on."""
    doc = yaml.safe_load((EXAMPLES / "ip-scheduler.yaml").read_text())
    doc.setdefault("diagnostics", {})["events"] = {"enabled": True}
    path = tmp_path / "shadow.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_shadow_target_is_a_read_only_deployment(tmp_path: Path) -> None:
    files, stderr = render_ok(tmp_path / "out", "--config", str(_config(tmp_path)), "--target", "shadow")
    assert set(files) == SHADOW and "note:" not in stderr
    for version in (PINNED, OLDEST):
        assert_valid(files, version)
    (deployment,) = _docs(files["shadow/deployment.yaml"])
    spec = deployment["spec"]
    assert spec["replicas"] == 1
    (container,) = spec["template"]["spec"]["containers"]
    assert container["command"] == ["python", "-m", "app", "shadow"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http", "scheme": "HTTP"}
    assert spec["template"]["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    rbac = _docs(files["shadow/rbac.yaml"])
    assert [d["kind"] for d in rbac] == ["ClusterRole", "ClusterRoleBinding"]  # no Role: no Lease
    rules = rbac[0]["rules"]
    verbs = {v for rule in rules for v in rule["verbs"]}
    assert verbs <= {"get", "list", "watch"}, rules
    resources = {r for rule in rules for r in rule["resources"]}
    assert {"nodes", "pods"} <= resources
    assert not resources & {"bindings", "pods/binding", "pods/status", "events", "leases"}
    # the volume plugins' reads stay (the cluster state watches claims and volumes), their writes go
    assert {"persistentvolumeclaims", "persistentvolumes"} <= resources
    config = yaml.safe_load(files["shadow/scheduler-extender-config.yaml"].split("\n", 3)[-1])
    assert config["server"]["host"] == "0.0.0.0" and "metrics" not in config["server"]
    assert "kubeconfig" not in config["cluster"]


def test_all_leaves_the_shadow_out_and_it_needs_cluster_state(tmp_path: Path) -> None:
    files, _ = render_ok(tmp_path / "all", "--config", "examples/ip-scheduler.yaml", "--target", "all")
    assert not any(f.startswith("shadow/") for f in files)
    refused = render("--target", "shadow", "--out", str(tmp_path / "none"))  # the embedded default
    assert refused.returncode == 1 and "cluster: section" in refused.stderr

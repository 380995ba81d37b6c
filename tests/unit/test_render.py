"""`render`: drift of the committed manifests, real validators on every rendered object, and the
cross-checks between files (volumes, RBAC, the install guide)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from app.config import load_config, parse_config
from app.deploy import kubesched
from app.deploy.render import (
    TARGET_FILES,
    TARGETS,
    RenderError,
    RenderOptions,
    default_targets,
    header_source,
    render,
)
from app.plugins import default_registry

from ..conftest import REPO

MANIFESTS = REPO / "manifests"
#: The Kubernetes version the defaults are pinned to, and the oldest the docs claim
#: (kubescheduler.config.k8s.io/v1 is GA since 1.25).
PINNED, OLDEST = "1.36.0", "1.25.0"
DEFAULT_SOURCE = "the embedded default configuration"


def _render(config_path: Path | None, options: RenderOptions | None = None) -> dict[str, str]:
    registry = default_registry()
    config = load_config(config_path, registry)
    return render(config, registry, options or RenderOptions(), str(config_path) if config_path else DEFAULT_SOURCE)


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def _objects(files: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """Every Kubernetes object rendered (not the component configs), and the ConfigMaps a
    kustomization's configMapGenerator makes of its files (as kustomize does, less the hash)."""
    out = []
    for name, text in files.items():
        if name.endswith("kustomization.yaml"):
            folder = name.rpartition("/")[0]
            for generator in yaml.safe_load(text).get("configMapGenerator", []):
                data = {}
                for spec in generator["files"]:
                    key, _, path = spec.rpartition("=")
                    data[key or path] = files[f"{folder}/{path}"]
                meta = {"name": generator["name"], "namespace": generator["namespace"]}
                meta["labels"] = generator.get("options", {}).get("labels", {})
                out.append((name, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}))
            continue
        if name.endswith(("kube-scheduler-config.yaml", "scheduler-extender-config.yaml")):
            continue
        if name.startswith("kubeadm/"):  # a JSON patch and kubeadm's own type: tests/unit/test_kubeadm.py
            continue
        # prometheus-operator's PodMonitor is no built-in kind: tests/e2e/test_render_targets.py checks it
        out += [(name, doc) for doc in _docs(text) if doc.get("apiVersion") != "monitoring.coreos.com/v1"]
    return out


def _tls_config(tmp_path: Path, scheduler: dict[str, Any], client_ca: bool = False) -> Path:
    tls: dict[str, Any] = {
        "certFile": "/etc/kubernetes/scheduler-extender/tls.crt",
        "keyFile": "/etc/kubernetes/scheduler-extender/tls.key",
        "scheduler": scheduler,
    }
    if client_ca:
        tls["clientCAFile"] = "/etc/kubernetes/scheduler-extender/client-ca.crt"
    doc = yaml.safe_load((REPO / "app" / "default-config.yaml").read_text())
    doc["server"]["tls"] = tls
    path = tmp_path / "tls.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _no_bind_cluster_config(tmp_path: Path) -> Path:
    doc = yaml.safe_load((REPO / "examples" / "cluster.yaml").read_text())
    profile = doc["profiles"][0]
    profile["extender"]["verbs"] = ["filter", "prioritize"]
    profile["plugins"].pop("bind")
    profile["pluginConfig"] = [pc for pc in profile["pluginConfig"] if pc["name"] != "DefaultBinder"]
    path = tmp_path / "nobind.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


CONFIGS = {
    "default": lambda tmp: None,
    "cluster": lambda tmp: REPO / "examples" / "cluster.yaml",
    "two-profiles": lambda tmp: REPO / "examples" / "two-profiles.yaml",
    "stateful": lambda tmp: REPO / "examples" / "stateful.yaml",
    "ip-scheduler": lambda tmp: REPO / "examples" / "ip-scheduler.yaml",
    "cluster-no-bind": _no_bind_cluster_config,
    "tls": lambda tmp: _tls_config(tmp, {"caFile": "/etc/kubernetes/pki/scheduler-extender-ca.crt"}),
    "mtls": lambda tmp: _tls_config(
        tmp,
        {
            "caFile": "/etc/kubernetes/pki/scheduler-extender-ca.crt",
            "certFile": "/etc/kubernetes/pki/scheduler-extender-client.crt",
            "keyFile": "/etc/kubernetes/pki/scheduler-extender-client.key",
        },
        client_ca=True,
    ),
}


@pytest.fixture(params=sorted(CONFIGS))
def rendered(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path | None, dict[str, str]]:
    path = CONFIGS[request.param](tmp_path)
    return request.param, path, _render(path)


def test_committed_manifests_match_a_fresh_render(tmp_path: Path) -> None:
    """`python -m app render --target all --out DIR` (the real CLI) reproduces manifests/ byte for byte."""
    out = tmp_path / "out"
    subprocess.run(
        [sys.executable, "-m", "app", "render", "--target", "all", "--out", str(out)],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    fresh = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}
    committed = {p.relative_to(MANIFESTS).as_posix(): p.read_text() for p in MANIFESTS.rglob("*") if p.is_file()}
    fix = "run `python -m app render --target all --out manifests`"
    assert sorted(fresh) == sorted(committed), f"files differ: {fix}"
    for name in fresh:
        assert fresh[name] == committed[name], f"manifests/{name} drifted: {fix}"


def test_render_is_deterministic() -> None:
    first = _render(REPO / "examples" / "cluster.yaml")
    assert first == _render(REPO / "examples" / "cluster.yaml")
    assert not any(re.search(r"20\d\d-\d\d-\d\d", text) for text in first.values()), "no timestamps"


def assert_valid(files: dict[str, str], version: str) -> set[str]:
    """Every Kubernetes object of ``files`` (:func:`_objects`) passes ``kubernetes-validate
    --strict`` for ``version``; returns the kinds seen."""
    objects = _objects(files)
    for name, doc in objects:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{name} {doc['kind']} {doc['metadata']['name']} at {version}: {exc.message}")
    return {doc["kind"] for _, doc in objects}


@pytest.mark.parametrize("version", [PINNED, OLDEST])
def test_every_rendered_object_passes_kubernetes_validate_strict(
    rendered: tuple[str, Path | None, dict[str, str]], version: str
) -> None:
    name, _, files = rendered
    kinds = assert_valid(files, version)
    assert {"Pod", "Deployment", "ConfigMap", "ServiceAccount", "ClusterRoleBinding", "Role"} <= kinds
    assert ("CustomResourceDefinition" in kinds) == (name == "stateful")  # the PodGroup CRD, for Coscheduling


def test_the_validator_is_strict_enough_to_catch_a_typo() -> None:
    (pod,) = _docs(_render(None)["scheduler-extender.yaml"])
    pod["spec"]["hostNetwrk"] = pod["spec"].pop("hostNetwork")
    with pytest.raises(kubernetes_validate.ValidationError, match="hostNetwrk"):
        kubernetes_validate.validate(pod, PINNED, strict=True)


def test_scheduler_configurations_pass_the_strict_decoder_and_upstream_validation(
    rendered: tuple[str, Path | None, dict[str, str]],
) -> None:
    _, _, files = rendered
    texts = [files["kube-scheduler-config.yaml"], files["second-scheduler/kube-scheduler-config.yaml"]]
    for text in texts:
        config = kubesched.decode(text)
        assert kubesched.validate(config) == []
        assert config.extenders


def test_mounted_service_configs_load_and_listen_on_loopback(rendered: tuple[str, Path | None, dict[str, str]]) -> None:
    _, source, files = rendered
    original = load_config(source, default_registry())
    for text in (files["scheduler-extender-config.yaml"], files["second-scheduler/scheduler-extender-config.yaml"]):
        mounted = parse_config(yaml.safe_load(text), default_registry())
        assert mounted.server.host == "127.0.0.1" and mounted.server.port == original.server.port
        assert [p.model_dump() for p in mounted.profiles] == [p.model_dump() for p in original.profiles]


def test_every_extender_entry_names_exactly_the_profile_verbs(
    rendered: tuple[str, Path | None, dict[str, str]],
) -> None:
    _, source, files = rendered
    config = load_config(source, default_registry())
    entries = yaml.safe_load(files["kube-scheduler-config.yaml"])["extenders"]
    assert len(entries) == len(config.profiles)
    for entry, profile in zip(entries, config.profiles, strict=True):
        verbs = {k.removesuffix("Verb"): v for k, v in entry.items() if k.endswith("Verb")}
        assert verbs == {v: v for v in profile.extender.verbs}
        assert entry["urlPrefix"].endswith(f"127.0.0.1:{config.server.port}/{profile.name}")
        assert entry["nodeCacheCapable"] is profile.extender.node_cache_capable
        assert (
            entry["httpTimeout"] == profile.extender.http_timeout and entry["ignorable"] is profile.extender.ignorable
        )
        assert ("weight" in entry) == ("prioritize" in profile.extender.verbs)


def _pod_specs(files: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    specs = []
    for name, doc in _objects(files):
        if doc["kind"] == "Pod":
            specs.append((name, doc["spec"]))
        elif doc["kind"] == "Deployment":
            specs.append((name, doc["spec"]["template"]["spec"]))
    return specs


def test_every_volume_mount_names_a_volume_and_every_volume_is_mounted(
    rendered: tuple[str, Path | None, dict[str, str]],
) -> None:
    _, _, files = rendered
    specs = _pod_specs(files)
    # two static pods and the second scheduler, and the standalone scheduler with schedulerName
    assert len(specs) == 3 + any(n.startswith("scheduler/") for n in files)
    for name, spec in specs:
        volumes = {v["name"] for v in spec.get("volumes", [])}
        mounted = {m["name"] for c in spec["containers"] for m in c.get("volumeMounts", [])}
        assert mounted <= volumes, f"{name}: mounts without a volume: {mounted - volumes}"
        assert volumes <= mounted, f"{name}: volumes never mounted: {volumes - mounted}"
        for c in spec["containers"]:
            assert c["resources"]["requests"], f"{name}/{c['name']}: no requests"


def test_config_maps_mounted_by_the_deployment_are_generated_from_rendered_files() -> None:
    """kustomize's configMapGenerator (content-hashed names, references in the Deployment
    rewritten): each generated ConfigMap is mounted, and its files are rendered beside it."""
    files = _render(None)
    kustomization = yaml.safe_load(files["second-scheduler/kustomization.yaml"])
    generators = {g["name"]: g for g in kustomization["configMapGenerator"]}
    (deployment,) = _docs(files["second-scheduler/deployment.yaml"])
    used = {v["configMap"]["name"] for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert used == set(generators)
    for generator in generators.values():
        assert generator["namespace"] == deployment["metadata"]["namespace"]
        for spec in generator["files"]:
            assert f"second-scheduler/{spec.rpartition('=')[2]}" in files
    keys = [spec.partition("=")[0] for g in generators.values() for spec in g["files"]]
    assert sorted(keys) == ["config.yaml", "kube-scheduler-config.yaml"]  # what the containers read


def test_extender_static_pod_is_locked_down() -> None:
    (pod,) = _docs(_render(REPO / "examples" / "cluster.yaml")["scheduler-extender.yaml"])
    spec = pod["spec"]
    assert spec["hostNetwork"] is True and spec["priorityClassName"] == "system-node-critical"
    (c,) = spec["containers"]
    sc = c["securityContext"]
    assert sc["runAsNonRoot"] and sc["runAsUser"] != 0 and sc["readOnlyRootFilesystem"]
    assert sc["capabilities"]["drop"] == ["ALL"] and sc["allowPrivilegeEscalation"] is False
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz" and c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["livenessProbe"]["httpGet"]["host"] == "127.0.0.1"
    assert c["resources"]["limits"]["memory"]
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    pki = "/etc/kubernetes/scheduler-extender/pki"
    assert mounts == {
        "/etc/kubernetes/scheduler-extender/config.yaml",
        "/etc/kubernetes/scheduler-extender.conf",
        f"{pki}/server.crt",
        f"{pki}/server.key",
        f"{pki}/ca.crt",
    }  # the profile serves bind: mutual TLS by default
    config = yaml.safe_load(_render(REPO / "examples" / "cluster.yaml")["scheduler-extender-config.yaml"])
    assert config["cluster"]["kubeconfig"] == "/etc/kubernetes/scheduler-extender.conf"
    assert "--config" in c["args"] and "/etc/kubernetes/scheduler-extender/config.yaml" in c["args"]


def test_kube_scheduler_static_pod_has_the_three_edits() -> None:
    files = _render(None, RenderOptions(kubernetes_version="v1.33.4"))
    (pod,) = _docs(files["kube-scheduler.yaml"])
    (c,) = pod["spec"]["containers"]
    assert c["image"] == "registry.k8s.io/kube-scheduler:v1.33.4"
    assert "--config=/etc/kubernetes/kube-scheduler-config.yaml" in c["command"]
    volume = next(
        v for v in pod["spec"]["volumes"] if v["hostPath"]["path"] == "/etc/kubernetes/kube-scheduler-config.yaml"
    )
    assert any(m["name"] == volume["name"] and m["readOnly"] for m in c["volumeMounts"])


def _binding_rules(files: dict[str, str]) -> dict[str, bool]:
    """For each file holding an extender ClusterRole: does it allow creating pods/binding? (The
    second scheduler's sidecar holds it through system:kube-scheduler, bound to its pod's account:
    its own ClusterRole leaves out what that role grants.)"""
    out = {}
    for name in ("scheduler-extender-rbac.yaml",):
        roles = [d for d in _docs(files.get(name, "")) if d["kind"] == "ClusterRole"]
        out[name] = any(
            "pods/binding" in r["resources"] and "create" in r["verbs"] for role in roles for r in role["rules"]
        )
    return out


def test_pods_binding_rbac_is_present_exactly_when_bind_is_served(
    rendered: tuple[str, Path | None, dict[str, str]],
) -> None:
    _, source, files = rendered
    config = load_config(source, default_registry())
    serves_bind = any("bind" in p.extender.verbs for p in config.profiles)
    assert set(_binding_rules(files).values()) == {serves_bind}
    if config.cluster is None:
        assert "scheduler-extender-rbac.yaml" not in files
    else:
        (role, binding, *lease) = _docs(files["scheduler-extender-rbac.yaml"])
        if serves_bind:  # binds follow kube-scheduler's Lease: get of that one Lease, nothing more
            lease_role, lease_binding = lease
            assert lease_role["metadata"]["name"] == "scheduler-extender-leases"
            assert lease_role["kind"] == "Role" and lease_role["metadata"]["namespace"] == "kube-system"
            assert lease_role["rules"] == [
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "resourceNames": ["kube-scheduler"],
                    "verbs": ["get"],
                }
            ]
            assert lease_binding["subjects"] == binding["subjects"]
        else:
            assert lease == []
        rules = {(r["resources"][0], v) for r in role["rules"] for v in r["verbs"]}
        assert {("nodes", "list"), ("nodes", "watch"), ("pods", "list"), ("pods", "watch")} <= rules
        assert binding["subjects"][0]["name"] == "system:scheduler-extender"
        # Coscheduling's PodGroup read is rendered exactly when a profile enables it
        podgroups = {
            (tuple(r["apiGroups"]), v) for r in role["rules"] if r["resources"] == ["podgroups"] for v in r["verbs"]
        }
        enabled = any(ref.name == "Coscheduling" for p in config.profiles for ref in p.plugins.filter.enabled)
        # what the cluster state's reflector does: list and watch, never a get
        assert podgroups == ({(("scheduling.x-k8s.io",), v) for v in ("list", "watch")} if enabled else set())


def test_second_scheduler_has_its_own_name_lease_and_kustomization() -> None:
    files = _render(REPO / "examples" / "cluster.yaml", RenderOptions(second_scheduler_name="edge-scheduler"))
    sched = yaml.safe_load(files["second-scheduler/kube-scheduler-config.yaml"])
    assert sched["profiles"] == [{"schedulerName": "edge-scheduler"}]
    assert sched["leaderElection"]["resourceName"] == "edge-scheduler"
    assert "clientConnection" not in sched  # in-cluster service account
    lease_role = next(d for d in _docs(files["second-scheduler/rbac.yaml"]) if d["kind"] == "Role")
    assert ["edge-scheduler"] in [r.get("resourceNames") for r in lease_role["rules"]]
    kustomization = yaml.safe_load(files["second-scheduler/kustomization.yaml"])
    listed = set(kustomization["resources"])
    present = {n.removeprefix("second-scheduler/") for n in files if n.startswith("second-scheduler/")}
    generated = {"kube-scheduler-config.yaml", "scheduler-extender-config.yaml"}
    apart = {"podmonitor.yaml"}  # needs prometheus-operator's CRD: applied on its own
    assert listed == present - {"kustomization.yaml"} - generated - apart
    (deployment,) = _docs(files["second-scheduler/deployment.yaml"])
    spec = deployment["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "edge-scheduler"
    assert [c["name"] for c in spec["containers"]] == ["kube-scheduler", "scheduler-extender"]


def test_extra_scheduler_profile_option() -> None:
    files = _render(None, RenderOptions(scheduler_name="space-scheduler"))
    profiles = yaml.safe_load(files["kube-scheduler-config.yaml"])["profiles"]
    assert profiles == [{"schedulerName": "default-scheduler"}, {"schedulerName": "space-scheduler"}]
    assert "profiles" not in yaml.safe_load(_render(None)["kube-scheduler-config.yaml"])


def test_tls_entries_carry_the_ca_and_mount_it(tmp_path: Path) -> None:
    files = _render(CONFIGS["mtls"](tmp_path))
    (entry,) = yaml.safe_load(files["kube-scheduler-config.yaml"])["extenders"]
    assert entry["urlPrefix"].startswith("https://") and entry["enableHTTPS"] is True
    assert entry["tlsConfig"] == {
        "caFile": "/etc/kubernetes/pki/scheduler-extender-ca.crt",
        "certFile": "/etc/kubernetes/pki/scheduler-extender-client.crt",
        "keyFile": "/etc/kubernetes/pki/scheduler-extender-client.key",
    }
    (pod,) = _docs(files["kube-scheduler.yaml"])
    paths = {v["hostPath"]["path"] for v in pod["spec"]["volumes"]}
    assert set(entry["tlsConfig"].values()) <= paths
    (ext,) = _docs(files["scheduler-extender.yaml"])
    # client certificates are optional at the handshake (only bind needs one): the kubelet's HTTPS
    # probe, which presents none, reaches /healthz on the same event loop as the verbs
    assert ext["spec"]["containers"][0]["livenessProbe"]["httpGet"]["scheme"] == "HTTPS"
    # the sidecar variant talks plain HTTP inside the pod
    (sidecar_entry,) = yaml.safe_load(files["second-scheduler/kube-scheduler-config.yaml"])["extenders"]
    assert sidecar_entry["urlPrefix"].startswith("http://") and "tlsConfig" not in sidecar_entry


def test_render_refuses_tls_without_a_ca_for_kube_scheduler(tmp_path: Path) -> None:
    with pytest.raises(RenderError, match=r"caFile: required"):
        _render(_tls_config(tmp_path, {}))
    with pytest.raises(RenderError, match=r"certFile/keyFile: required with server.tls.clientCAFile"):
        _render(_tls_config(tmp_path, {"caFile": "/ca.crt"}, client_ca=True))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "app",
            "render",
            "--config",
            str(_tls_config(tmp_path, {})),
            "--out",
            str(tmp_path / "o"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1 and "caFile: required" in result.stderr and "Traceback" not in result.stderr


def test_host_files_the_manifests_mount_are_the_ones_the_install_guide_copies() -> None:
    guide = (REPO / "docs" / "install" / "kubeadm.md").read_text()  # the kubeadm install guide
    installs = re.findall(r"sudo install (?:-\S+ )*(?:-m \d+ )?(\S+) (/etc/kubernetes/\S+)", guide)
    assert installs, "the guide has no install commands"
    for src, _ in installs:
        assert (REPO / src).is_file(), f"the guide copies {src}, which is not in the repository"
    targets = {dst for _, dst in installs}
    static = {dst for dst in targets if dst.startswith("/etc/kubernetes/manifests/")}
    # kubeadm keeps its own kube-scheduler manifest: the guide installs the extender's static pod and
    # the patch that adds --config and the mounts to kubeadm's
    assert static == {"/etc/kubernetes/manifests/scheduler-extender.yaml"}
    patches = {dst for dst in targets if dst.endswith("+json.yaml")}
    assert patches == {"/etc/kubernetes/scheduler-extender/patches/kube-scheduler0+json.yaml"}
    (pod,) = _docs((MANIFESTS / "scheduler-extender.yaml").read_text())
    mounted = {v["hostPath"]["path"] for v in pod["spec"]["volumes"]}
    patch = yaml.safe_load((MANIFESTS / "kubeadm" / "patches" / "kube-scheduler0+json.yaml").read_text())
    mounted |= {op["value"]["hostPath"]["path"] for op in patch if op["path"] == "/spec/volumes/-"}
    assert mounted == targets - static - patches
    # and each copied file is the one whose header names that destination
    for src, dst in installs:
        assert dst in (REPO / src).read_text().splitlines()[0], f"{src}'s header does not name {dst}"


def test_standalone_scheduler_deployment_runs_schedule_with_its_rights() -> None:
    files = _render(REPO / "examples" / "ip-scheduler.yaml")
    (deployment,) = _docs(files["scheduler/deployment.yaml"])
    spec = deployment["spec"]
    assert deployment["metadata"]["name"] == "ip-scheduler" and spec["replicas"] == 2
    (container,) = spec["template"]["spec"]["containers"]
    assert container["command"] == ["python", "-m", "app", "schedule"]
    assert container["args"] == ["--config", "/etc/scheduler-extender/config.yaml"]
    # the verb listener stays on loopback; the kubelet probes the metrics listener on the pod's address
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics", "scheme": "HTTPS"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics", "scheme": "HTTPS"}
    config = yaml.safe_load(files["scheduler/scheduler-extender-config.yaml"])
    assert config["server"]["host"] == "127.0.0.1" and config["profiles"][0]["schedulerName"] == "ip-scheduler"
    assert config["cluster"].get("kubeconfig") is None  # the in-cluster service account
    role = next(d for d in _docs(files["scheduler/rbac.yaml"]) if d["kind"] == "ClusterRole")
    rights = {(r["apiGroups"][0], r["resources"][0]): set(r["verbs"]) for r in role["rules"]}
    assert {"create"} <= rights[("", "pods/binding")] and {"patch"} <= rights[("", "pods/status")]
    assert ("coordination.k8s.io", "leases") not in rights  # no Lease cluster-wide
    assert "patch" not in rights[("", "pods")]  # pods/status only: no re-queue assistance here
    (leases,) = [d for d in _docs(files["scheduler/rbac.yaml"]) if d["kind"] == "Role"]
    assert leases["metadata"]["namespace"] == "kube-system"
    assert leases["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["ip-scheduler"],
            "verbs": ["get", "update"],
        },
    ]
    assert {"create", "patch"} <= rights[("events.k8s.io", "events")]
    assert {"list", "watch"} <= rights[("", "nodes")] and {"list", "watch"} <= rights[("", "pods")]
    assert "scheduler/deployment.yaml" not in _render(REPO / "examples" / "cluster.yaml")


SELECTING = [("", "services"), ("", "replicationcontrollers"), ("apps", "replicasets"), ("apps", "statefulsets")]


def test_topology_spread_defaults_list_and_watch_what_selects_pods(tmp_path: Path) -> None:
    """PodTopologySpread's default constraints (``defaultingType: System``, kube-scheduler's default
    profile) read the Services, ReplicationControllers, ReplicaSets and StatefulSets selecting a
    pod: the ClusterRole lists and watches them; with ``List`` and no ``defaultConstraints``
    nothing is deduced and they are not watched; the extender's profile without the plugin neither."""

    def rights(files: dict[str, str], path: str) -> dict[tuple[str, str], set[str]]:
        role = next(d for d in _docs(files[path]) if d["kind"] == "ClusterRole")
        return {(r["apiGroups"][0], r["resources"][0]): set(r["verbs"]) for r in role["rules"]}

    system = rights(_render(REPO / "examples" / "ip-scheduler.yaml"), "scheduler/rbac.yaml")
    assert all(system.get(key) == {"list", "watch"} for key in SELECTING), system
    doc = yaml.safe_load((REPO / "examples" / "ip-scheduler.yaml").read_text())
    doc["profiles"][0]["pluginConfig"].append({"name": "PodTopologySpread", "args": {"defaultingType": "List"}})
    listed = tmp_path / "list.yaml"
    listed.write_text(yaml.safe_dump(doc))
    assert not set(SELECTING) & set(rights(_render(listed), "scheduler/rbac.yaml"))
    extender = rights(_render(REPO / "examples" / "cluster.yaml"), "scheduler-extender-rbac.yaml")
    assert not set(SELECTING) & set(extender)


def declared(target: str, name: str) -> bool:
    """Is ``name`` one of the files :data:`TARGET_FILES` declares for ``target``?"""
    return any(name == entry or (entry.endswith("/") and name.startswith(entry)) for entry in TARGET_FILES[target])


def test_each_target_renders_only_its_declared_files_and_all_of_them_make_the_whole(
    rendered: tuple[str, Path | None, dict[str, str]],
) -> None:
    _, source, everything = rendered
    registry = default_registry()
    config = load_config(source, registry)
    union: set[str] = set()
    for target in TARGETS:
        if target == "standalone" and not any(p.scheduler_name for p in config.profiles):
            with pytest.raises(RenderError, match="--target standalone: no profile sets schedulerName"):
                render(config, registry, RenderOptions(), "test", [target])
            continue
        if target == "shadow":  # a trial beside kube-scheduler, not an install mode: never in --target all
            if config.cluster is None:
                with pytest.raises(RenderError, match="--target shadow: the shadow scheduler reads the cluster state"):
                    render(config, registry, RenderOptions(), "test", [target])
                continue
            files = render(config, registry, RenderOptions(), "test", [target])
            assert files and [n for n in files if not declared(target, n)] == []
            assert not files.keys() & set(everything)
            continue
        files = render(config, registry, RenderOptions(), "test", [target])
        assert files, target
        assert [n for n in files if not declared(target, n)] == [], target
        union |= files.keys()
    assert union == set(everything)


def test_render_refuses_an_unknown_target() -> None:
    registry = default_registry()
    with pytest.raises(RenderError, match="--target eks: choose among kubeadm, static-pod"):
        render(load_config(None, registry), registry, RenderOptions(), "test", ["eks"])


@pytest.mark.parametrize(
    ("example", "targets", "words"),
    [
        (None, ("kubeadm", "static-pod"), "no profile sets schedulerName"),
        ("cluster.yaml", ("kubeadm", "static-pod"), "no profile sets schedulerName"),
        ("ip-scheduler.yaml", ("standalone",), "profile ip (ip-scheduler) sets schedulerName"),
    ],
)
def test_the_default_target_follows_from_scheduler_name(
    example: str | None, targets: tuple[str, ...], words: str
) -> None:
    config = load_config(REPO / "examples" / example if example else None, default_registry())
    chosen, reason = default_targets(config)
    assert chosen == targets and words in reason


def test_a_mixed_configuration_defaults_to_standalone_and_says_what_it_leaves_out(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO / "examples" / "ip-scheduler.yaml").read_text())
    doc["profiles"].append(yaml.safe_load((REPO / "app" / "default-config.yaml").read_text())["profiles"][0])
    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump(doc))
    chosen, reason = default_targets(load_config(path, default_registry()))
    assert chosen == ("standalone",)
    assert "kube-scheduler reaches profile default only with --target kubeadm or static-pod" in reason


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (None, DEFAULT_SOURCE),
        ("examples/cluster.yaml", "examples/cluster.yaml"),
        ("../elsewhere/cluster.yaml", "../elsewhere/cluster.yaml"),
        ("/home/someone/secret/cluster.yaml", "cluster.yaml"),
    ],
)
def test_headers_name_a_relative_path_as_given_and_an_absolute_one_by_file_name(given: str | None, named: str) -> None:
    assert header_source(given) == named

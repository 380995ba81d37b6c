"""`python -m app render --target ...` through the real CLI: each install mode writes only its
files, the default follows from the configuration and says so, headers carry no local absolute
path, the PodGroup CRD comes with Coscheduling, and what is written still passes the validators."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from app.cluster import podgroups
from tests.conftest import REPO, cli
from tests.unit.test_render import OLDEST, PINNED, assert_valid

EXAMPLES = REPO / "examples"
#: what only a configuration with cluster: renders beside the control plane: the RBAC of its
#: credentials, and the metrics listener render gives it (its Service, RBAC and PodMonitor)
CLUSTER_ONLY = {
    "scheduler-extender-rbac.yaml",
    "scheduler-extender-metrics.yaml",
    "scheduler-extender-podmonitor.yaml",
}
CONTROL_PLANE = {
    "kube-scheduler-config.yaml",
    "scheduler-extender.yaml",
    "scheduler-extender-config.yaml",
} | CLUSTER_ONLY  # the configurations below have cluster:
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
        "poddisruptionbudget.yaml",
        "metrics.yaml",
        "podmonitor.yaml",
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
        "poddisruptionbudget.yaml",
        "metrics.yaml",
        "podmonitor.yaml",
    )
}
CRD = "podgroup-crd.yaml"


def render(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return cli("render", *args, cwd=cwd)


def written(out: Path) -> dict[str, str]:
    files = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}
    listed = files.pop(".rendered").split()
    assert sorted(listed) == sorted(files)
    return files


def render_ok(out: Path, *args: str, cwd: Path = REPO) -> tuple[dict[str, str], str]:
    result = render(*args, "--out", str(out), cwd=cwd)
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
        ([], (KUBEADM | STATIC_POD) - CLUSTER_ONLY, "--target kubeadm --target static-pod"),
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
    unknown = render("--target", "eks", "--out", str(tmp_path / "a"))
    assert unknown.returncode == 2 and "invalid choice: 'eks'" in unknown.stderr
    standalone = render("--target", "standalone", "--out", str(tmp_path / "b"))  # the default has no schedulerName
    assert (
        standalone.returncode == 1 and "error: --target standalone: no profile sets schedulerName" in standalone.stderr
    )
    assert "Traceback" not in standalone.stderr and not (tmp_path / "b").exists()
    # named one by one, the four targets ask for standalone as much as --target standalone does
    named = [arg for t in ("kubeadm", "static-pod", "second-scheduler", "standalone") for arg in ("--target", t)]
    every = render(*named, "--out", str(tmp_path / "c"))
    assert every.returncode == 1 and "error: --target standalone: no profile sets schedulerName" in every.stderr
    # --target all is every mode the configuration can deploy: without schedulerName, not standalone
    files, _ = render_ok(tmp_path / "d", "--target", "all")
    assert (
        not any(name.startswith("scheduler/") for name in files)
        and "kubeadm/patches/kube-scheduler0+json.yaml" in files
    )


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


# -- the metrics listener: a Service, a PodMonitor, scrape annotations and RBAC for each target ------

#: The fields of prometheus-operator's PodMonitor (monitoring.coreos.com/v1) the rendered ones may use.
PODMONITOR_SPEC = {"selector", "namespaceSelector", "podMetricsEndpoints", "jobLabel", "podTargetLabels"}
PODMONITOR_ENDPOINT = {"port", "path", "scheme", "interval", "tlsConfig", "authorization", "bearerTokenSecret"}
#: (directory, pod labels, namespace, file names) of the metrics objects of each target
METRICS_FILES = {
    "kubeadm": ("", "scheduler-extender-metrics.yaml", "scheduler-extender-podmonitor.yaml"),
    "static-pod": ("", "scheduler-extender-metrics.yaml", "scheduler-extender-podmonitor.yaml"),
    "second-scheduler": ("second-scheduler/", "metrics.yaml", "podmonitor.yaml"),
    "standalone": ("scheduler/", "metrics.yaml", "podmonitor.yaml"),
}


def _all(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def _pod(files: dict[str, str], target: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the extender pod's metadata, the extender container) of ``target``."""
    if target in ("kubeadm", "static-pod"):
        (pod,) = _all(files["scheduler-extender.yaml"])
        return pod["metadata"], pod["spec"]["containers"][-1]
    where = METRICS_FILES[target][0]
    (deployment,) = _all(files[f"{where}deployment.yaml"])
    template = deployment["spec"]["template"]
    return template["metadata"], template["spec"]["containers"][-1]


def _extender_config(files: dict[str, str], target: str) -> dict[str, Any]:
    where = METRICS_FILES[target][0]
    parsed: dict[str, Any] = yaml.safe_load(files[f"{where}scheduler-extender-config.yaml"])
    return parsed


@pytest.mark.parametrize("target", ["kubeadm", "static-pod", "second-scheduler", "standalone"])
def test_each_target_makes_the_metrics_listener_scrapeable(tmp_path: Path, target: str) -> None:
    example = "ip-scheduler.yaml" if target == "standalone" else "cluster.yaml"
    files, _ = render_ok(tmp_path / "out", "--config", f"examples/{example}", "--target", target)
    where, metrics_file, monitor_file = METRICS_FILES[target]
    # the listener, on by default with cluster:, in the mounted configuration
    listener = _extender_config(files, target)["server"]["metrics"]
    assert listener["host"] == "0.0.0.0" and listener["port"] == 10261 and listener["insecure"] is False
    assert listener["cacheTTL"] == "10s" and listener["alwaysAllowPaths"] == ["/healthz", "/readyz"]
    # the pod: a port named metrics and the scrape annotations
    metadata, container = _pod(files, target)
    assert {"name": "metrics", "containerPort": 10261, "protocol": "TCP"} in container["ports"]
    assert metadata["annotations"] == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "10261",
        "prometheus.io/scheme": "https",
        "prometheus.io/path": "/metrics",
    }
    labels, ns = metadata["labels"], "kube-system"
    objects = {(d["kind"], d["metadata"]["name"]): d for d in _all(files[f"{where}{metrics_file}"])}
    kinds = sorted(kind for kind, _ in objects)
    # no ServiceAccount of its own and no long-lived token Secret for the scraper
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "Service"]
    (service,) = [d for (kind, _), d in objects.items() if kind == "Service"]
    assert service["metadata"]["namespace"] == ns and service["spec"]["selector"] == labels
    assert service["spec"]["ports"] == [{"name": "metrics", "port": 10261, "targetPort": "metrics", "protocol": "TCP"}]
    # the scraper reads /metrics as its own ServiceAccount (its pods' bound, projected token)
    (role,) = [d for (kind, _), d in objects.items() if kind == "ClusterRole"]
    name = role["metadata"]["name"]
    assert name.endswith("-metrics-reader")
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    binding = objects[("ClusterRoleBinding", name)]
    assert binding["roleRef"]["name"] == name
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}]
    # the extender's own identity may review its callers
    (delegator,) = [
        d for (kind, n), d in objects.items() if kind == "ClusterRoleBinding" and n.endswith("-auth-delegator")
    ]
    assert delegator["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "system:auth-delegator",
    }
    if where:  # the Deployment's ServiceAccount
        (deployment,) = _all(files[f"{where}deployment.yaml"])
        account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
        assert delegator["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": ns}]
        kustomization = yaml.safe_load(files[f"{where}kustomization.yaml"])
        assert metrics_file in kustomization["resources"] and monitor_file not in kustomization["resources"]
        # the listener serves the certificate of the Secret the PodMonitor takes the CA from
        listener = _extender_config(files, target)["server"]["metrics"]
        mount = next(m for m in container["volumeMounts"] if m["name"] == "metrics-tls")
        assert listener["tls"] == {
            "certFile": f"{mount['mountPath']}/tls.crt",
            "keyFile": f"{mount['mountPath']}/tls.key",
            "reloadInterval": "10s",
        }
        volume = next(v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "metrics-tls")
        secret = volume["secret"]["secretName"]
    else:  # the user of the static pod's kubeconfig, which its cluster: section reviews with
        assert delegator["subjects"] == [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:scheduler-extender"}
        ]
        listener = _extender_config(files, target)["server"]["metrics"]  # the certs PKI on each node
        pki = "/etc/kubernetes/scheduler-extender/pki"
        assert listener["tls"] == {
            "certFile": f"{pki}/server.crt",
            "keyFile": f"{pki}/server.key",
            "reloadInterval": "10s",
        }
        secret = "scheduler-extender-metrics-tls"
    # the PodMonitor: the pods' labels, port metrics over HTTPS, the certificate verified with its CA
    (monitor,) = _all(files[f"{where}{monitor_file}"])
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1" and monitor["kind"] == "PodMonitor"
    spec = monitor["spec"]
    assert set(spec) <= PODMONITOR_SPEC and monitor["metadata"]["namespace"] == ns
    assert spec["selector"] == {"matchLabels": labels} and spec["namespaceSelector"] == {"matchNames": [ns]}
    (endpoint,) = spec["podMetricsEndpoints"]
    assert set(endpoint) <= PODMONITOR_ENDPOINT
    assert endpoint["port"] == "metrics" and endpoint["scheme"] == "https" and endpoint["path"] == "/metrics"
    assert endpoint["tlsConfig"] == {
        "ca": {"secret": {"name": secret, "key": "ca.crt"}},
        "serverName": f"{service['metadata']['name']}.{ns}.svc",
    }
    assert "insecureSkipVerify" not in str(monitor)
    for version in (PINNED, OLDEST):
        assert {"Service", "ClusterRole", "ClusterRoleBinding"} <= assert_valid(files, version)


def _edited(tmp_path: Path, example: str, **metrics: Any) -> Path:
    doc = yaml.safe_load((EXAMPLES / example).read_text())
    doc["server"]["metrics"] = metrics
    path = tmp_path / f"metrics-{example}"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_an_insecure_listener_is_scraped_over_http_without_a_reader(tmp_path: Path) -> None:
    config = _edited(tmp_path, "cluster.yaml", insecure=True)
    files, _ = render_ok(tmp_path / "out", "--config", str(config), "--target", "all")
    metadata, _ = _pod(files, "static-pod")
    assert metadata["annotations"]["prometheus.io/scheme"] == "http"
    for where, metrics_file, monitor_file in (METRICS_FILES["second-scheduler"],):  # no schedulerName: no scheduler/
        (monitor,) = _all(files[f"{where}{monitor_file}"])
        assert monitor["spec"]["podMetricsEndpoints"] == [{"port": "metrics", "path": "/metrics", "scheme": "http"}]
        assert [d["kind"] for d in _all(files[f"{where}{metrics_file}"])] == ["Service"]
    assert [d["kind"] for d in _all(files["scheduler-extender-metrics.yaml"])] == ["Service"]


def test_a_listener_turned_off_renders_nothing_of_it(tmp_path: Path) -> None:
    config = _edited(tmp_path, "cluster.yaml", enabled=False)
    files, _ = render_ok(tmp_path / "out", "--config", str(config), "--target", "all")
    assert not [n for n in files if "metrics" in n.rpartition("/")[2] or "podmonitor" in n]
    metadata, container = _pod(files, "static-pod")
    assert "annotations" not in metadata and [p["name"] for p in container["ports"]] == ["http"]


def test_the_static_pod_mounts_the_listener_files_and_the_deployments_make_do_without(tmp_path: Path) -> None:
    pki = "/etc/kubernetes/scheduler-extender/pki"
    config = _edited(
        tmp_path,
        "cluster.yaml",
        tls={"certFile": f"{pki}/metrics.crt", "keyFile": f"{pki}/metrics.key"},
        clientCAFile=f"{pki}/ca.crt",  # also the verbs' client CA (render's mutual TLS): mounted once
    )
    files, _ = render_ok(tmp_path / "out", "--config", str(config), "--target", "all")
    (pod,) = _all(files["scheduler-extender.yaml"])
    paths = [v["hostPath"]["path"] for v in pod["spec"]["volumes"]]
    assert {f"{pki}/metrics.crt", f"{pki}/metrics.key", f"{pki}/ca.crt"} <= set(paths)
    assert len(paths) == len(set(paths))
    mounted = {m["mountPath"] for m in pod["spec"]["containers"][0]["volumeMounts"]}
    assert set(paths) == mounted
    listener = _extender_config(files, "static-pod")["server"]["metrics"]
    assert listener["tls"]["certFile"] == f"{pki}/metrics.crt" and listener["clientCAFile"] == f"{pki}/ca.crt"
    listener = _extender_config(files, "second-scheduler")["server"]["metrics"]  # a Deployment: no host files
    assert listener["tls"]["certFile"].startswith("/etc/scheduler-extender-metrics-tls/")  # the Secret's
    assert "clientCAFile" not in listener and "kubeconfig" not in listener
    for version in (PINNED, OLDEST):
        assert_valid(files, version)


def test_no_podgroup_crd_when_coscheduling_reads_no_podgroups(tmp_path: Path) -> None:
    """Coscheduling with ``usePodGroupCRD: false`` takes ``minMember`` from a pod annotation and
    watches no PodGroup: render writes no CRD for it (the plugin's declared needs, not its RBAC)."""
    doc = yaml.safe_load((EXAMPLES / "stateful.yaml").read_text())
    for profile in doc["profiles"]:
        for pc in profile.get("pluginConfig", []):
            if pc["name"] == "Coscheduling":
                pc["args"] = {**(pc.get("args") or {}), "usePodGroupCRD": False}
    config = tmp_path / "stateful.yaml"
    config.write_text(yaml.safe_dump(doc))
    files, _ = render_ok(tmp_path / "out", "--config", str(config), "--target", "kubeadm")
    assert _crds(files) == {}


# -- HA hygiene and the real kustomize ---------------------------------------------------------------


@pytest.mark.parametrize(("target", "where"), [("second-scheduler", "second-scheduler/"), ("standalone", "scheduler/")])
def test_two_replicas_spread_over_nodes_with_a_disruption_budget(tmp_path: Path, target: str, where: str) -> None:
    files, _ = render_ok(tmp_path / "out", "--config", "examples/ip-scheduler.yaml", "--target", target)
    (deployment,) = _all(files[f"{where}deployment.yaml"])
    spec = deployment["spec"]
    labels = spec["selector"]["matchLabels"]
    assert spec["replicas"] >= 2
    (spread,) = spec["template"]["spec"]["topologySpreadConstraints"]
    assert spread == {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": labels},
        "nodeTaintsPolicy": "Honor",
    }
    (budget,) = _all(files[f"{where}poddisruptionbudget.yaml"])
    assert budget["apiVersion"] == "policy/v1" and budget["kind"] == "PodDisruptionBudget"
    assert budget["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": labels}}
    assert budget["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert "poddisruptionbudget.yaml" in yaml.safe_load(files[f"{where}kustomization.yaml"])["resources"]
    # no probe starts an interpreter: the kubelet's httpGet on the metrics port
    for container in spec["template"]["spec"]["containers"]:
        for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
            if kind in container and container["name"] != "kube-scheduler":
                assert "exec" not in container[kind] and container[kind]["httpGet"]["port"] == "metrics"
                assert "host" not in container[kind]["httpGet"]  # the pod's address, not the node's loopback


KUBECTL = shutil.which("kubectl")


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize(("target", "where"), [("second-scheduler", "second-scheduler"), ("standalone", "scheduler")])
def test_kubectl_kustomize_builds_each_deployment_target(tmp_path: Path, target: str, where: str) -> None:
    out = tmp_path / "out"
    render_ok(out, "--config", "examples/ip-scheduler.yaml", "--target", target)
    built = subprocess.run([KUBECTL, "kustomize", str(out / where)], capture_output=True, text=True, check=True)
    kinds = sorted(d["kind"] for d in _all(built.stdout))
    assert {"ConfigMap", "Deployment", "PodDisruptionBudget", "ServiceAccount", "Role", "ClusterRole"} <= set(kinds)
    for version in (PINNED, OLDEST):
        for doc in _all(built.stdout):
            kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("target", ["kubeadm", "static-pod"])
def test_a_control_plane_target_warns_when_kube_scheduler_reaches_no_profile(tmp_path: Path, target: str) -> None:
    _, stderr = render_ok(tmp_path / "named", "--config", "examples/ip-scheduler.yaml", "--target", target)
    assert f"warning: --target {target}: profile ip (ip-scheduler) sets schedulerName" in stderr
    assert "can never act" in stderr and "--target standalone" in stderr
    _, stderr = render_ok(tmp_path / "plain", "--config", "examples/cluster.yaml", "--target", target)
    assert "can never act" not in stderr
    _, stderr = render_ok(tmp_path / "own", "--config", "examples/ip-scheduler.yaml", "--target", "standalone")
    assert "can never act" not in stderr

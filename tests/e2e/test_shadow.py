"""The shadow scheduler (``python -m app shadow``) against the test API server: the test binds
pods to nodes it chooses (as another scheduler would), and the shadow's records, report, metrics
and ``explain`` say exactly where the profile agrees: the best node (``same``), a feasible node
ranked lower (``feasible``), a node the profile rejects (``infeasible``: an untolerated taint, a
node filled by earlier binds). The cluster state is the one just before each bind: a pod that
exactly fits the room left is feasible (itself not counted), the next one no longer is (earlier
binds counted). The API server's request log shows no call but GET."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import REPO, free_port
from tests.e2e.test_cycle import metric
from tests.e2e.test_scheduler import wait_for
from tests.support.apiserver import FakeAPIServer, node, pod

PROFILE = "shadow"
FOLLOWED = "default-scheduler"


class ShadowProcess:
    """``python -m app shadow`` as a child process."""

    def __init__(self, tmp: Path, api: FakeAPIServer, *extra: str) -> None:
        kubeconfig = tmp / "kubeconfig"
        kubeconfig.write_text(api.kubeconfig())
        doc = {
            "apiVersion": "config.scheduler-extender.dev/v1alpha1",
            "kind": "ExtenderConfiguration",
            "server": {"host": "127.0.0.1", "port": 8888},
            "cluster": {"kubeconfig": str(kubeconfig)},
            # kube-scheduler's default plugins: a profile with schedulerName starts from them (the
            # shadow schedules nothing under that name)
            "profiles": [{"name": PROFILE, "schedulerName": "shadow-default"}],
        }
        self.config = tmp / "shadow.yaml"
        self.config.write_text(yaml.safe_dump(doc))
        self.record = tmp / "shadow.jsonl"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tmp / "shadow.log"
        cmd = [sys.executable, "-m", "app", "shadow", "--config", str(self.config), "--port", str(self.port)]
        cmd += ["--record", str(self.record), *extra]
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=self.log.open("wb"), stderr=subprocess.STDOUT)

    def ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def records(self) -> list[dict[str, Any]]:
        body: list[dict[str, Any]] = httpx.get(f"{self.url}/shadow", timeout=5).json()["records"]
        return body

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait()


@pytest.fixture
def api() -> Iterator[FakeAPIServer]:
    server = FakeAPIServer()
    server.start()
    yield server
    server.stop()


def pending(name: str, cpu: str, memory: str, scheduler: str = FOLLOWED, **spec: Any) -> dict[str, Any]:
    doc = pod(name, cpu=cpu, memory=memory, **spec)
    doc["spec"]["schedulerName"] = scheduler
    return doc


def bind(api: FakeAPIServer, name: str, target: str) -> None:
    """The test's binder: a Binding as kube-scheduler posts it (the API server sets nodeName)."""
    code, _ = api.bind("default", name, {"metadata": {"name": name}, "target": {"kind": "Node", "name": target}})
    assert code == 201


def shadow_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args], cwd=REPO, capture_output=True, text=True, timeout=60, env=os.environ
    )


#: (pod, cpu, memory, node bound to, extra spec) in the order they are bound
BINDS: list[tuple[str, str, str, str, dict[str, Any]]] = [
    ("best", "1", "2Gi", "big", {}),
    ("lower", "1", "2Gi", "small", {}),
    ("tainted", "100m", "128Mi", "gpu", {}),
    ("exact", "1", "2Gi", "small", {}),  # the room small has left, exactly: feasible
    ("full", "1", "2Gi", "small", {}),  # small is full now: infeasible
    (
        "tolerates",
        "100m",
        "128Mi",
        "gpu",
        {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]},
    ),
]


def test_shadow_reports_agreement_exactly_and_writes_nothing(api: FakeAPIServer, tmp_path: Path) -> None:
    api.put("nodes", node("big", cpu="32", memory="64Gi"))
    api.put("nodes", node("small", cpu="2", memory="4Gi"))
    gpu = node("gpu", cpu="32", memory="64Gi")
    gpu["spec"]["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    api.put("nodes", gpu)
    shadow = ShadowProcess(tmp_path, api)
    try:
        wait_for(shadow.ready, 30, "the shadow's readiness")
        for i, (name, cpu, memory, target, spec) in enumerate(BINDS):
            api.put("pods", pending(name, cpu, memory, **spec))
            # a pod of another scheduler, bound too: counted on its node, not shadowed
            api.put("pods", pending(f"other-{i}", "10m", "16Mi", scheduler="other-scheduler"))
            bind(api, f"other-{i}", "big")
            bind(api, name, target)
            wait_for(lambda n=i + 1: len(shadow.records()) == n, 20, f"the shadow record of {name}")
        records = {r["name"]: r for r in shadow.records()}
        assert httpx.get(f"{shadow.url}/shadow").json()["refusedWrites"] == 0
        assert set(records) == {b[0] for b in BINDS}
        agreement = {n: r["agreement"] for n, r in records.items()}
        assert agreement == {
            "best": "same",
            "lower": "feasible",
            "tainted": "infeasible",
            "exact": "feasible",
            "full": "infeasible",
            "tolerates": "same",
        }
        best, lower = records["best"], records["lower"]
        assert best["chosenNode"] == "big" and best["rank"] == 1 and best["feasibleNodes"] == 2
        assert best["boundTotal"] == best["chosenTotal"]
        assert lower["chosenNode"] == "big" and lower["rank"] == 2 and lower["boundNode"] == "small"
        assert lower["chosenTotal"] > lower["boundTotal"]
        assert lower["difference"] == "NodeResourcesFit" and lower["differenceScore"] > 0
        assert sum(lower["chosenScores"].values()) == lower["chosenTotal"]
        assert sum(lower["boundScores"].values()) == lower["boundTotal"]
        tainted = records["tainted"]
        assert tainted["rejectedBy"] == "TaintToleration" == tainted["difference"]
        assert tainted["rejectedReason"] == "node(s) had untolerated taint(s)"
        assert tainted["rank"] is None and tainted["chosenNode"] == "big"
        assert records["exact"]["rank"] == 2  # small exactly fits: the pod itself is not counted
        full = records["full"]
        assert full["rejectedBy"] == "NodeResourcesFit"
        assert full["rejectedReason"] == "Insufficient cpu, Insufficient memory"
        assert (
            records["tolerates"]["chosenNode"] == "gpu" and records["tolerates"]["feasibleNodes"] == 2
        )  # small is full

        for agreement_, count in (("same", 2), ("feasible", 2), ("infeasible", 2)):
            assert (
                metric(shadow.url, "scheduler_shadow_decisions_total", profile=PROFILE, agreement=agreement_) == count
            )

        # explain shows the shadow record as an attempt
        explained = httpx.get(f"{shadow.url}/explain/default/lower").json()
        (attempt,) = explained["attempts"]
        assert attempt["verb"] == "shadow" and attempt["outcome"]["agreement"] == "feasible"
        assert attempt["outcome"]["boundNode"] == "small" and attempt["outcome"]["chosenNode"] == "big"
        assert attempt["nodes"]["gpu"]["plugin"] == "TaintToleration"
        assert attempt["nodes"]["big"]["score"] == lower["chosenTotal"]
        text = shadow_cli("explain", "default/tainted", "--url", shadow.url)
        assert text.returncode == 0, text.stderr
        assert "shadow" in text.stdout and "infeasible" in text.stdout and "TaintToleration" in text.stdout

        # the report, from the running shadow and from its record file
        report = shadow_cli("shadow-report", "--url", shadow.url, "--json")
        assert report.returncode == 0, report.stderr
        body = json.loads(report.stdout)
        assert body["shadowed"] == 6 and body["agreementRate"] == round(2 / 6, 6)
        assert body["counts"] == {"same": 2, "feasible": 2, "infeasible": 2, "error": 0}
        assert body["schedulers"] == [FOLLOWED] and body["profiles"] == [PROFILE]
        by_pod = {d["pod"]: d for d in body["disagreements"]}
        assert list(by_pod) == ["default/lower", "default/tainted", "default/exact", "default/full"]
        assert by_pod["default/lower"]["boundNode"] == "small" and by_pod["default/lower"]["chosenNode"] == "big"
        assert by_pod["default/tainted"]["difference"] == "TaintToleration"
        assert by_pod["default/full"]["reason"] == "Insufficient cpu, Insufficient memory"
        from_file = shadow_cli("shadow-report", "--file", str(shadow.record), "--json")
        assert json.loads(from_file.stdout) == body
        text = shadow_cli("shadow-report", "--url", shadow.url)
        assert text.returncode == 0
        lines = text.stdout.splitlines()
        assert lines[0] == f"shadowed 6 binds of {FOLLOWED} with profile {PROFILE}: agreement 33.3%"
        assert lines[1] == "  same 2  feasible 2  infeasible 2  error 0"
        assert any(
            line.startswith("  default/lower  feasible  bound to small (")
            and "would choose big (" in line
            and "NodeResourcesFit +" in line
            for line in lines
        )
        assert any(
            line == "  default/tainted  infeasible  bound to gpu; "
            f"would choose big ({records['tainted']['chosenTotal']}); "
            "TaintToleration: node(s) had untolerated taint(s)"
            for line in lines
        )
    finally:
        assert shadow.stop() == 0, shadow.log.read_text()[-3000:]
    # read-only: the shadow's every request was a GET (lists and watches), none a write
    methods = {r.split(" ", 1)[0] for r in api.requests}
    assert methods == {"GET"}, sorted(r for r in api.requests if not r.startswith("GET "))
    assert not any("/leases" in r or "/events" in r or "/binding" in r for r in api.requests)
    assert api.patches == [] and api.status_patches == [] and api.event_writes == [] and api.lease_writes == []
    assert len(api.bindings) == 2 * len(BINDS)  # the test's own, none more


def test_shadow_report_of_missing_or_bad_records_is_a_clear_error(tmp_path: Path) -> None:
    missing = shadow_cli("shadow-report", "--file", str(tmp_path / "none.jsonl"))
    assert missing.returncode == 1 and missing.stderr.startswith("error: ") and "Traceback" not in missing.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"name": "x"}\nnot json\n')
    out = shadow_cli("shadow-report", "--file", str(bad))
    assert out.returncode == 1 and "bad.jsonl:2: not JSON" in out.stderr
    unreachable = shadow_cli("shadow-report", "--url", f"http://127.0.0.1:{free_port()}")
    assert unreachable.returncode == 1 and "cannot reach" in unreachable.stderr
    usage = shadow_cli("shadow-report")
    assert usage.returncode == 2


def test_shadow_refuses_a_configuration_without_cluster_state(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "config.scheduler-extender.dev/v1alpha1",
                "kind": "ExtenderConfiguration",
                "profiles": [
                    {
                        "name": "x",
                        "extender": {"verbs": ["filter"]},
                        "plugins": {"filter": [{"name": "NodeUnschedulable"}]},
                    }
                ],
            }
        )
    )
    out = shadow_cli("shadow", "--config", str(config))
    assert out.returncode == 1 and "cluster: section" in out.stderr

"""Audit mode (``enforcement: audit``) against the real server process, without cluster state: the
shared fixtures POSTed as kube-scheduler sends them to a profile auditing NodeAffinity and
AnnotationNodeAffinity (:data:`CONFIG_TEXT`). Its answers are those of the profile
without them, byte for byte; what they would have rejected is what each rejects when enforced
alone, node by node and reason by reason, in ``/explain``, ``python -m app explain`` and
``/metrics``."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Server, cli
from tests.support.bodies import fixture, fixture_bytes, go_marshal

#: "audited" is "base" with NodeAffinity and AnnotationNodeAffinity audited (their verdicts
#: recorded, never applied; NodeAffinity's score does not run); "affinity" and "annotation" enforce
#: each of them alone, which tells what the audit must record
CONFIG_TEXT = """\
apiVersion: config.scheduler-extender.dev/v1alpha1
kind: ExtenderConfiguration
server:
  defaultProfile: base
  maxRequestBytes: 16777216
profiles:
- name: base
  extender:
    verbs: [filter, prioritize, preempt]
  plugins:
    filter:
    - name: NodeUnschedulable
    - name: TaintToleration
    score:
    - name: NodeResourcesAllocatable
    - name: TaintToleration
- name: audited
  extender:
    verbs: [filter, prioritize, preempt]
  plugins:
    filter:
    - name: NodeAffinity
      enforcement: audit
    - name: NodeUnschedulable
    - name: TaintToleration
    - name: AnnotationNodeAffinity
      enforcement: audit
    score:
    - name: NodeResourcesAllocatable
    - name: NodeAffinity
      weight: 5
    - name: TaintToleration
  pluginConfig:
  - name: AnnotationNodeAffinity
    args: {exclusive: true}
- name: affinity
  extender:
    verbs: [filter]
  plugins:
    filter:
    - name: NodeAffinity
- name: annotation
  extender:
    verbs: [filter]
  plugins:
    filter:
    - name: AnnotationNodeAffinity
  pluginConfig:
  - name: AnnotationNodeAffinity
    args: {exclusive: true}
"""
AUDITED = ("NodeAffinity", "AnnotationNodeAffinity")
ALONE = {"NodeAffinity": "affinity", "AnnotationNodeAffinity": "annotation"}
BODIES = (
    "extenderargs_nocache_n10.json",
    "extenderargs_nocache_n100.json",
    "extenderargs_nocache_n100_space.json",
    "extenderargs_nocache_n100_extres.json",
)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("audit") / "audit.yaml"
    path.write_text(CONFIG_TEXT)
    return path


@pytest.fixture(scope="module")
def server(config: Path) -> Iterator[Server]:
    s = Server(config)
    yield s
    s.stop()


def zoned(body: str, name: str, zone: str = "eu-west-1a") -> bytes:
    """``body`` with its pod renamed ``name`` and required in ``zone`` (NodeAffinity then rejects
    the nodes of the other zones)."""
    doc: Any = copy.deepcopy(fixture(body))
    doc["Pod"]["metadata"]["name"] = name
    terms = doc["Pod"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    terms["nodeSelectorTerms"][0]["matchExpressions"].append(
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
    )
    return go_marshal(doc)


def rejected(answer: dict[str, Any]) -> dict[str, str]:
    """A filter answer's rejected nodes with their reasons."""
    return {**(answer["FailedNodes"] or {}), **(answer["FailedAndUnresolvableNodes"] or {})}


def audit_metric(url: str, profile: str, plugin: str, outcome: str) -> float:
    text = httpx.get(f"{url}/metrics").text
    labels = f'outcome="{outcome}",plugin="{plugin}",profile="{profile}"'
    match = re.search(rf"^scheduler_extender_audit_verdicts_total\{{{re.escape(labels)}\}} (\S+)$", text, re.M)
    assert match is not None, f"no series {labels}"
    return float(match.group(1))


@pytest.mark.parametrize("body", BODIES)
def test_the_answers_are_the_profiles_without_the_audited_plugins_byte_for_byte(server: Server, body: str) -> None:
    raw = fixture_bytes(body)
    for verb in ("filter", "prioritize"):
        base = httpx.post(f"{server.url}/base/{verb}", content=raw, timeout=30)
        audited = httpx.post(f"{server.url}/audited/{verb}", content=raw, timeout=30)
        assert base.status_code == audited.status_code == 200
        assert audited.content == base.content, verb
    # a pod the audited plugins reject on most nodes: still the same answer
    raw = zoned(body, f"zoned-{body.split('.')[0]}")
    for verb in ("filter", "prioritize"):
        base = httpx.post(f"{server.url}/base/{verb}", content=raw, timeout=30)
        assert httpx.post(f"{server.url}/audited/{verb}", content=raw, timeout=30).content == base.content
    preempt = fixture_bytes("preemptionargs_nocache.json")
    base = httpx.post(f"{server.url}/base/preempt", content=preempt, timeout=30)
    assert httpx.post(f"{server.url}/audited/preempt", content=preempt, timeout=30).content == base.content


@pytest.mark.parametrize("body", ["extenderargs_nocache_n100.json", "extenderargs_nocache_n100_space.json"])
def test_every_would_be_rejection_is_recorded_with_its_reason(server: Server, body: str) -> None:
    name = f"audit-{body.split('.')[0].replace('_', '-')}"
    raw = zoned(body, name)
    answer = httpx.post(f"{server.url}/audited/filter", content=raw, timeout=30).json()
    namespace = fixture(body)["Pod"]["metadata"]["namespace"]
    attempt = httpx.get(f"{server.url}/explain/{namespace}/{name}").json()["attempts"][-1]
    assert rejected(answer) == rejected(httpx.post(f"{server.url}/base/filter", content=raw, timeout=30).json())
    assert (attempt["profile"], attempt["verb"]) == ("audited", "filter")
    nodes = fixture(body)["Nodes"]["items"]
    for plugin in AUDITED:
        alone = rejected(httpx.post(f"{server.url}/{ALONE[plugin]}/filter", content=raw, timeout=30).json())
        assert alone, f"{plugin} must reject some node of {body} for the test to mean anything"
        recorded = {
            node: verdict["reason"]
            for node, d in attempt["nodes"].items()
            for verdict in d.get("audit", ())
            if verdict["plugin"] == plugin
        }
        assert recorded == alone
        # the nodes it would have rejected stay in the answer, unless an enforced plugin rejects them
        passing = {n["metadata"]["name"] for n in answer["Nodes"]["items"]}
        kept = set(alone) - set(rejected(answer))
        assert kept and kept <= passing
        assert attempt["outcome"]["audit"][plugin] == {"wouldReject": len(alone), "wouldAdmit": len(nodes) - len(alone)}
    assert "audit" not in attempt["outcome"] or set(attempt["outcome"]["audit"]) == set(AUDITED)


def test_the_metrics_count_each_node_an_audited_plugin_would_reject_or_admit(server: Server) -> None:
    body = "extenderargs_nocache_n100.json"
    raw = zoned(body, "metrics-pod", zone="eu-west-1b")
    before = {
        (p, o): audit_metric(server.url, "audited", p, o) for p in AUDITED for o in ("would_reject", "would_admit")
    }
    assert audit_metric(server.url, "audited", "NodeAffinity", "violated") == 0
    for _ in range(2):
        assert httpx.post(f"{server.url}/audited/filter", content=raw, timeout=30).status_code == 200
    for plugin in AUDITED:
        alone = rejected(httpx.post(f"{server.url}/{ALONE[plugin]}/filter", content=raw, timeout=30).json())
        reject = audit_metric(server.url, "audited", plugin, "would_reject") - before[plugin, "would_reject"]
        admit = audit_metric(server.url, "audited", plugin, "would_admit") - before[plugin, "would_admit"]
        assert (reject, admit) == (2 * len(alone), 2 * (100 - len(alone)))
    text = httpx.get(f"{server.url}/metrics").text
    assert (
        'scheduler_extender_audit_verdicts_total{outcome="would_reject",plugin="NodeAffinity",profile="base"}'
        not in text
    )
    # the enforced plugins' own counters know nothing of the audited ones
    assert 'plugin="NodeAffinity",profile="audited",result=' not in text
    assert 'code="NodeAffinityRejected",plugin="NodeAffinity",profile="audited"' not in text


def test_audited_scores_weigh_zero(server: Server) -> None:
    body = "extenderargs_nocache_n100.json"
    raw = zoned(body, "scored-pod")
    scored = httpx.post(f"{server.url}/audited/prioritize", content=raw, timeout=30)
    assert scored.content == httpx.post(f"{server.url}/base/prioritize", content=raw, timeout=30).content
    namespace = fixture(body)["Pod"]["metadata"]["namespace"]
    attempt = httpx.get(f"{server.url}/explain/{namespace}/scored-pod").json()["attempts"][-1]
    assert attempt["verb"] == "prioritize"
    assert all(set(d["scores"]) == {"NodeResourcesAllocatable", "TaintToleration"} for d in attempt["nodes"].values())


def test_explain_prints_what_each_audited_plugin_would_have_done(server: Server) -> None:
    body = "extenderargs_nocache_n10.json"
    raw = zoned(body, "explained-pod", zone="eu-west-1c")
    httpx.post(f"{server.url}/audited/filter", content=raw, timeout=30)
    alone = rejected(httpx.post(f"{server.url}/affinity/filter", content=raw, timeout=30).json())
    namespace = fixture(body)["Pod"]["metadata"]["namespace"]
    out = cli("explain", f"{namespace}/explained-pod", "--url", server.url)
    assert out.returncode == 0, out.stderr
    assert (
        f"audit: NodeAffinity (not enforced) would reject {len(alone)}, admit {10 - len(alone)} of 10 nodes"
        in out.stdout
    )
    for node, reason in alone.items():
        assert f"audit: NodeAffinity would have rejected node {node}: {reason}" in out.stdout
    assert "audit: AnnotationNodeAffinity would have rejected node" in out.stdout  # the edge nodes


def test_validate_marks_the_audited_plugins(config: Path) -> None:
    out = cli("validate", str(config))
    assert out.returncode == 0, out.stderr
    audited = out.stdout.split("profile audited:")[1].split("profile affinity:")[0]
    assert (
        "  filter      NodeUnschedulable, TaintToleration, NodeAffinity [audit], AnnotationNodeAffinity [audit]"
        in audited
    )
    assert "  score       NodeResourcesAllocatable (1), TaintToleration (1), NodeAffinity (5) [audit]" in audited
    assert "  audit       NodeAffinity, AnnotationNodeAffinity: PreFilter and Filter verdicts recorded" in audited
    assert "[audit]" not in out.stdout.split("profile audited:")[0]


def test_render_says_which_plugins_audit(config: Path, tmp_path: Path) -> None:
    out = cli("render", "--config", str(config), "--out", str(tmp_path / "out"), "--target", "kubeadm")
    assert out.returncode == 0, out.stderr
    config = (tmp_path / "out" / "scheduler-extender-config.yaml").read_text()
    assert (
        "# AUDIT: profile audited audits NodeAffinity, AnnotationNodeAffinity (enforcement: audit): their verdicts "
        "are recorded (explain, scheduler_extender_audit_verdicts_total), never applied." in config
    )
    # written back as configured, and only where configured
    assert len(re.findall(r"^ +enforcement: audit$", config, re.M)) == 2
    assert "enforcement: enforce" not in config
    scheduler = (tmp_path / "out" / "kube-scheduler-config.yaml").read_text()
    assert "# AUDIT: profile audited audits NodeAffinity, AnnotationNodeAffinity" in scheduler
    # switching to enforce is the configuration change alone: the same file without the key
    enforced = tmp_path / "enforced.yaml"
    enforced.write_text(CONFIG_TEXT.replace("      enforcement: audit\n", ""))
    out = cli("render", "--config", str(enforced), "--out", str(tmp_path / "enforced"), "--target", "kubeadm")
    assert out.returncode == 0, out.stderr
    assert "AUDIT" not in (tmp_path / "enforced" / "scheduler-extender-config.yaml").read_text()
    out = cli("validate", str(enforced))
    assert "[audit]" not in out.stdout and "NodeAffinity, NodeUnschedulable" in out.stdout

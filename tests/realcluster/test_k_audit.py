"""Audit mode under real traffic: kube-scheduler v1.36.3 calls the service (mutual TLS, HTTP/2, the
configuration ``render --target kubeadm`` writes) whose profile audits a pool plugin
(NodeResourcePool) and an affinity plugin (AnnotationNodeAffinity); kube-scheduler binds itself.

Each pod may go to one node only (its ``nodeSelector``), so where it lands is known whatever the
scores: with the plugins absent every pod is bound to its node, and enforced they would leave the
pods of four nodes Pending (a pool without capacity) and some of four others (edge nodes reserved
for ``type=space`` pods). Audited, every pod is bound to its node, as with the plugins absent;
every rejection they would have made is recorded (``/explain``, node and reason), counted
(``would_reject``) and, the pod being bound there, counted ``violated`` once per pod and plugin."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import Server, cluster_config, free_port, mutual_tls
from tests.realcluster.extender import RENDER_ARGS, SCHEDULER, certs, client_context, pod
from tests.realcluster.support import Cluster, KubeScheduler, Obj, render, wait_for

POOL = "tier.example.com/pool-size"
CONSUMER = "tier.example.com/ip"
PER_NODE = 5
#: the tier's nodes: 4 edge nodes (AnnotationNodeAffinity reserves them), 4 with a pool of 0, 4 free
EDGE = [f"tier-audit-edge-{i}" for i in range(1, 5)]
EMPTY = [f"tier-audit-empty-{i}" for i in range(1, 5)]
FREE = [f"tier-audit-free-{i}" for i in range(1, 5)]
POOL_REASON = "pool tier-ip has no capacity on this node"
EDGE_REASON = "node label kubernetes.io/role=edge is reserved for pods annotated type=space"


def profile(doc: Obj) -> None:
    """The service's one profile: the two plugins audited, a score enforced; kube-scheduler binds."""
    doc["profiles"] = [
        {
            "name": "default",
            "extender": {"verbs": ["filter", "prioritize"], "nodeCacheCapable": True, "httpTimeout": "30s"},
            "plugins": {
                "filter": [
                    {"name": "NodeResourcePool", "enforcement": "audit"},
                    {"name": "AnnotationNodeAffinity", "enforcement": "audit"},
                ],
                "score": [{"name": "NodeResourcesAllocatable"}],
            },
            "pluginConfig": [
                {
                    "name": "NodeResourcePool",
                    "args": {
                        "pool": "tier-ip",
                        "capacityAnnotation": POOL,
                        "defaultCapacity": 100,
                        "consumers": {"label": f"{CONSUMER}=yes"},
                    },
                },
                {
                    "name": "AnnotationNodeAffinity",
                    "args": {
                        "annotationKey": "type",
                        "annotationValue": "space",
                        "nodeLabelKey": "kubernetes.io/role",
                        "nodeLabelValue": "edge",
                        "exclusive": True,
                    },
                },
            ],
        }
    ]


class Audited:
    """The service with :func:`profile` and kube-scheduler calling it (filter and prioritize)."""

    def __init__(self, cluster: Cluster, tmp: Path) -> None:
        self.pki = tmp / "pki"
        certs(self.pki)
        port = free_port()

        def edit(doc: Obj) -> None:
            mutual_tls(self.pki)(doc)
            doc["server"]["port"] = port
            profile(doc)

        config = cluster_config(tmp, cluster.kubeconfig.read_text(), edit=edit)
        rendered = render(config, "kubeadm", tmp / "rendered", *RENDER_ARGS)
        text = (rendered / "kube-scheduler-config.yaml").read_text()
        assert "# AUDIT: profile default audits NodeResourcePool, AnnotationNodeAffinity" in text
        ksc = yaml.safe_load(text)
        (extender,) = ksc["extenders"]
        assert "bindVerb" not in extender and extender["filterVerb"] == "filter"
        ksc["clientConnection"] = {"kubeconfig": "@KUBECONFIG@", "qps": 500, "burst": 1000}
        ksc["leaderElection"] = {"leaderElect": False}
        ksc["profiles"] = [{"schedulerName": SCHEDULER}]
        self.server = Server(config, verify=client_context(self.pki), port=port)
        self.kube: KubeScheduler | None = None
        try:
            self.kube = cluster.scheduler(yaml.safe_dump(ksc))
        except BaseException:
            self.server.stop()
            raise

    def get(self, path: str) -> httpx.Response:
        """GET ``path`` with kube-scheduler's client certificate (``/explain`` asks for one)."""
        context = client_context(self.pki)
        context.load_cert_chain(str(self.pki / "scheduler.crt"), str(self.pki / "scheduler.key"))
        return httpx.get(f"{self.server.url}{path}", verify=context, timeout=10)

    def audit_metric(self, plugin: str, outcome: str) -> float:
        labels = f'outcome="{outcome}",plugin="{plugin}",profile="default"'
        pattern = rf"^scheduler_extender_audit_verdicts_total\{{{re.escape(labels)}\}} (\S+)$"
        match = re.search(pattern, self.get("/metrics").text, re.M)
        assert match is not None, labels
        return float(match.group(1))

    def stop(self) -> None:
        if self.kube is not None:
            self.kube.stop()
        self.server.stop()


@pytest.fixture(scope="module")
def audited(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Audited]:
    cluster.nodes(4, prefix="tier-audit-edge", labels={"kubernetes.io/role": "edge"})
    cluster.nodes(4, prefix="tier-audit-empty")
    cluster.nodes(4, prefix="tier-audit-free")
    merge = {"Content-Type": "application/merge-patch+json"}
    for name in EMPTY:
        cluster.request(
            "PATCH", f"/api/v1/nodes/{name}", json={"metadata": {"annotations": {POOL: "0"}}}, headers=merge
        )
    a = Audited(cluster, tmp_path_factory.mktemp("audit"))
    yield a
    a.stop()


def pods() -> tuple[list[Obj], dict[str, dict[str, str]]]:
    """Every pod, and pod name -> {audited plugin: the reason it would reject the pod's node}."""
    docs: list[Obj] = []
    expected: dict[str, dict[str, str]] = {}
    for node in [*EDGE, *EMPTY, *FREE]:
        for i in range(PER_NODE):
            name = f"{node}-{i}"
            space = node in EDGE and i >= 3  # two pods per edge node may use it
            doc = pod(name, nodeSelector={"kubernetes.io/hostname": node})
            doc["metadata"]["labels"] = {CONSUMER: "yes"}
            if space:
                doc["metadata"]["annotations"] = {"type": "space"}
            docs.append(doc)
            reasons = {}
            if node in EMPTY:
                reasons["NodeResourcePool"] = POOL_REASON
            if node in EDGE and not space:
                reasons["AnnotationNodeAffinity"] = EDGE_REASON
            expected[name] = reasons
    return docs, expected


def test_audited_plugins_change_no_placement_and_record_every_rejection(cluster: Cluster, audited: Audited) -> None:
    ns = cluster.namespace("tier-audit")
    docs, expected = pods()
    assert audited.kube is not None
    try:
        cluster.create(f"/api/v1/namespaces/{ns}/pods", docs)

        def all_bound() -> dict[str, str] | None:
            bound = cluster.bound(ns)
            return bound if len(bound) == len(docs) else None

        on = wait_for(all_bound, seconds=180, what="every pod bound")
        # placed as with the plugins absent: each on the one node it may go to
        assert on == {d["metadata"]["name"]: d["spec"]["nodeSelector"]["kubernetes.io/hostname"] for d in docs}
        recorded: dict[str, dict[str, str]] = {}
        for name in expected:
            attempts: list[dict[str, Any]] = audited.get(f"/explain/{ns}/{name}").json()["attempts"]
            filters = [a for a in attempts if a["verb"] == "filter"]
            assert filters, name
            node = on[name]
            verdicts = filters[-1]["nodes"][node]
            assert verdicts["verdict"] == "Success"  # the answer: the node passes
            recorded[name] = {v["plugin"]: v["reason"] for v in verdicts.get("audit", ())}
        assert recorded == expected
        rejections = {
            p: sum(1 for r in expected.values() if p in r) for p in ("NodeResourcePool", "AnnotationNodeAffinity")
        }
        assert rejections == {"NodeResourcePool": 4 * PER_NODE, "AnnotationNodeAffinity": 4 * 3}
        for plugin, n in rejections.items():
            # a pod kube-scheduler tried once was filtered once: each rejection counted once
            assert audited.audit_metric(plugin, "would_reject") == n
            assert audited.audit_metric(plugin, "would_admit") == len(docs) - n
            wait_for(
                lambda p=plugin, k=n: audited.audit_metric(p, "violated") == k, seconds=30, what=f"{plugin} violated"
            )
        assert audited.kube.errors() == []
        assert "Traceback" not in audited.server.log.read_text(errors="replace")
    finally:
        cluster.delete_pods(ns)

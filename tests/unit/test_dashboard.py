"""dashboards/scheduler-extender.json: valid Grafana JSON whose every query names a metric the
service exports (read from the exposition of a real Metrics registry with cluster state, and the
shadow scheduler's collectors registered in it as ``python -m app shadow`` does)."""

from __future__ import annotations

import json
import re

from prometheus_client import generate_latest

from app.api.metrics import Metrics, ShadowMetrics
from app.cluster.connection import ClusterConnection, ClusterSettings
from tests.conftest import REPO

DASHBOARD = REPO / "dashboards" / "scheduler-extender.json"
_SUFFIXES = ("_bucket", "_sum", "_count")
#: audit mode's metric (issue 40 item 1), exported by the branch that builds audit mode: until it is
#: merged the registry lacks it, and only this name is allowed unexported (once exported, it is
#: checked as any other)
AUDIT = "scheduler_extender_audit_verdicts_total"


def exported() -> set[str]:
    """Every metric name the service's registry declares (HELP/TYPE lines: present even before a
    labelled series has a sample)."""
    metrics = Metrics(["default"], ClusterConnection(ClusterSettings()))
    ShadowMetrics(metrics.registry, ["default"])
    text = generate_latest(metrics.registry).decode()
    names = set()
    for line in text.splitlines():
        if line.startswith(("# HELP ", "# TYPE ")):
            name, kind = line.split()[2], line.split()[3] if line.startswith("# TYPE ") else ""
            names.add(name)
            if kind == "histogram":
                names.update(name + s for s in _SUFFIXES)
    return names


def test_every_query_names_an_exported_metric() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    names = exported()
    names |= {AUDIT} if not any(n.startswith(AUDIT.removesuffix("_total")) for n in names) else set()
    queries = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert len(queries) >= 10
    used = set()
    for query in queries:
        metrics = set(re.findall(r"\bscheduler_(?:extender|shadow)_[a-z_]+\b", query))
        assert metrics, f"no service metric in {query!r}"
        assert metrics <= names, f"{query!r} names metrics the service does not export: {metrics - names}"
        used |= metrics
        assert query.count("(") == query.count(")"), query
    # the panels the issue asks for: requests, latency percentiles by verb, rejections by
    # plugin, bind errors, cache staleness
    for wanted in (
        "scheduler_extender_requests_total",
        "scheduler_extender_request_duration_seconds_bucket",
        "scheduler_extender_rejections_total",
        "scheduler_extender_decisions_total",
        "scheduler_extender_cluster_seconds_since_sync",
        # issue 40: the shadow scheduler's agreement, audit mode's verdicts
        "scheduler_shadow_decisions_total",
        AUDIT,
    ):
        assert wanted in used
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])


def test_the_shadow_and_audit_panels_break_down_by_their_labels() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = {p["title"]: [t["expr"] for t in p["targets"]] for p in dashboard["panels"]}
    by_agreement = exprs["Shadow scheduler: binds shadowed per second by agreement"]
    assert by_agreement == ['sum by (profile, agreement) (rate(scheduler_shadow_decisions_total{job=~"$job"}[5m]))']
    (rate,) = exprs["Shadow scheduler: agreement rate (same / shadowed)"]
    assert 'agreement="same"' in rate and rate.count("scheduler_shadow_decisions_total") == 2
    (audit,) = exprs["Audit mode: verdicts per second by plugin and outcome"]
    assert audit.startswith("sum by (plugin, outcome) (rate(scheduler_extender_audit_verdicts_total")
    # the job variable lists a shadow scheduler's job too (it serves no verb requests)
    (job,) = [v for v in dashboard["templating"]["list"] if v["name"] == "job"]
    assert "scheduler_shadow_decisions_total" in job["query"]

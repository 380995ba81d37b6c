"""dashboards/scheduler-extender.json: valid Grafana JSON whose every query names a metric the
service exports (read from the exposition of a real Metrics registry with cluster state)."""

from __future__ import annotations

import json
import re

from prometheus_client import generate_latest

from app.api.metrics import Metrics
from app.cluster.connection import ClusterConnection, ClusterSettings
from tests.conftest import REPO

DASHBOARD = REPO / "dashboards" / "scheduler-extender.json"
_SUFFIXES = ("_bucket", "_sum", "_count")


def exported() -> set[str]:
    """Every metric name the service's registry declares (HELP/TYPE lines: present even before a
    labelled series has a sample)."""
    text = generate_latest(Metrics(["default"], ClusterConnection(ClusterSettings())).registry).decode()
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
    queries = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert len(queries) >= 10
    used = set()
    for query in queries:
        metrics = set(re.findall(r"\bscheduler_extender_[a-z_]+\b", query))
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
    ):
        assert wanted in used
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])

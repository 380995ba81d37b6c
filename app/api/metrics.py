"""Prometheus metrics of the service (prometheus-client), one registry per app instance."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from app.cluster.state import ClusterState

# the *_created series only add noise to every scrape
disable_created_metrics()  # type: ignore[no-untyped-call]

# Filter on 5000 full nodes takes ~0.2 s; keep resolution below 1 ms for cache-mode calls.
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """The service's collectors.

    - ``scheduler_extender_requests_total{profile,verb,code}``: answered requests by HTTP status.
    - ``scheduler_extender_request_duration_seconds{profile,verb}``: time from the body read to
      the answer, in seconds.
    - ``scheduler_extender_filter_nodes_total{profile,plugin,result}``: filter verdicts per plugin:
      ``Unschedulable``/``UnschedulableAndUnresolvable`` (nodes the plugin rejected), ``Error``
      (fail-closed errors), ``IgnoredError`` (fail-open errors); ``plugin=""``, ``result=Passed``
      counts nodes that passed every plugin.
    """

    def __init__(self, cluster: ClusterState | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        if cluster is not None:
            self.registry.register(ClusterCollector(cluster))
        self.requests = Counter(
            "scheduler_extender_requests",
            "Extender requests answered, by profile, verb and HTTP status code.",
            ["profile", "verb", "code"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "scheduler_extender_request_duration_seconds",
            "Time to answer an extender request, in seconds (body read excluded).",
            ["profile", "verb"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.filter_nodes = Counter(
            "scheduler_extender_filter_nodes",
            "Filter verdicts per plugin: nodes rejected, plugin errors, and nodes passed.",
            ["profile", "plugin", "result"],
            registry=self.registry,
        )


class ClusterCollector(Collector):
    """Cluster-state metrics, read from :meth:`ClusterState.stats` at scrape time.

    - ``scheduler_extender_cluster_objects{kind}``: nodes, pods and assumed pods in the cache.
    - ``scheduler_extender_cluster_synced{resource}``: 1 once ``nodes``/``pods`` completed a list.
    - ``scheduler_extender_cluster_relists_total{resource}``, ``..._watch_restarts_total{resource}``,
      ``..._list_watch_errors_total{resource}``: reflector activity.
    - ``scheduler_extender_assumed_pods_total{outcome}``: assumptions ``confirmed`` by the watch or
      ``expired`` unconfirmed.
    """

    def __init__(self, state: ClusterState) -> None:
        self.state = state

    def describe(self) -> list[object]:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        stats = self.state.stats()
        objects = GaugeMetricFamily(
            "scheduler_extender_cluster_objects", "Objects in the cluster-state cache.", labels=["kind"]
        )
        for kind in ("nodes", "pods", "assumed_pods"):
            objects.add_metric([kind], stats[kind])
        yield objects
        synced = GaugeMetricFamily(
            "scheduler_extender_cluster_synced", "1 once the resource completed its first list.", labels=["resource"]
        )
        relists = CounterMetricFamily(
            "scheduler_extender_cluster_relists", "Relists (410 Gone or start-up).", labels=["resource"]
        )
        restarts = CounterMetricFamily(
            "scheduler_extender_cluster_watch_restarts", "Watches resumed after ending.", labels=["resource"]
        )
        errors = CounterMetricFamily(
            "scheduler_extender_cluster_list_watch_errors", "Failed lists and watches.", labels=["resource"]
        )
        for kind in ("nodes", "pods"):
            synced.add_metric([kind], stats[f"{kind}_synced"])
            relists.add_metric([kind], stats[f"{kind}_relists"])
            restarts.add_metric([kind], stats[f"{kind}_watch_restarts"])
            errors.add_metric([kind], stats[f"{kind}_errors"])
        yield from (synced, relists, restarts, errors)
        assumed = CounterMetricFamily("scheduler_extender_assumed_pods", "Assumed pods by outcome.", labels=["outcome"])
        assumed.add_metric(["confirmed"], stats["assumed_confirmed"])
        assumed.add_metric(["expired"], stats["assumed_expired"])
        yield assumed

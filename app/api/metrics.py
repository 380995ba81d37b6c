"""Prometheus metrics of the service (prometheus-client), one registry per app instance."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics

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

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
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

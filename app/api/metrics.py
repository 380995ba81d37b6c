"""Prometheus metrics of the service (prometheus-client), one registry per app instance."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from app.cluster.leader import STANDBY, Leadership
from app.extender.codec import all_passed
from app.framework.status import Code, Status, code_name, reason_code
from app.observe.decisions import Decision, DecisionStore

if TYPE_CHECKING:
    from app.cluster.connection import ClusterConnection

# the *_created series only add noise to every scrape
disable_created_metrics()  # type: ignore[no-untyped-call]

# Filter on 5000 full nodes takes ~0.2 s; keep resolution below 1 ms for cache-mode calls.
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


#: The ``profile`` label of requests to a path whose profile is not configured: label values come
#: only from the configuration, so a scan of random paths cannot grow the series.
UNKNOWN_PROFILE = "unknown"


class EventCounts(Protocol):
    """What the event metrics read of a pod-event writer (:class:`~app.observe.events.EventRecorder`)."""

    posted: int
    dropped: int


class Metrics:
    """The service's collectors; label values come only from the configured profiles and plugins,
    the four verbs and fixed words. :meth:`decided` is a listener of every decision.

    - ``scheduler_extender_requests_total{profile,verb,code,outcome}``: answered verb requests by
      HTTP status; ``outcome`` is ``error`` for a non-200 and for a 200 filter or bind answer
      carrying ``Error``, else ``success``. ``profile`` is the profile the path names: ``/{verb}``
      names the default profile, whether or not it serves the verb; :data:`UNKNOWN_PROFILE` only
      for a path naming no configured profile (or ``/{verb}`` without a default profile). A probe
      of ``check-scheduler-config`` (:data:`~app.observe.logs.PROBE_HEADER`) is not counted here
      nor in the duration, and builds no decision (see :mod:`app.api.edge`).
    - ``scheduler_extender_request_duration_seconds{profile,verb}``: from the start of the request
      (body read included) to the answer, in seconds.
    - ``scheduler_extender_filter_nodes_total{profile,plugin,result}``: nodes each plugin rejected
      (``Unschedulable``/``UnschedulableAndUnresolvable``), fail-closed errors (``Error``) and
      fail-open errors (``IgnoredError``); ``scheduler_extender_filter_nodes_passed_total{profile}``:
      nodes that passed every plugin.
    - ``scheduler_extender_overload_total{reason}``: requests answered 503 because of
      ``connections``, ``requests`` or ``bytes`` in flight; ``scheduler_extender_timeouts_total{phase}``:
      connections closed for a ``header`` or ``body`` that did not arrive in time.
    - ``scheduler_extender_requests_in_flight``: verb requests being read or answered now.
    - ``scheduler_extender_decisions_total{profile,verb,outcome}``: decisions by what they meant
      for the pod: filter ``passed`` (some node passed), ``rejected`` (every node) or ``error``;
      prioritize ``scored``/``error``; preempt ``victims``/``no_candidates``/``error``; bind
      ``bound``/``error`` (an ``Error`` answered with HTTP 200 included).
    - ``scheduler_extender_rejections_total{profile,plugin,code}``: nodes rejected, by plugin and
      reason code (:func:`~app.framework.status.reason_code`: short and stable, never the text;
      past 256 distinct pairs, ``Other``).
    - ``scheduler_extender_decision_records``: decisions kept for ``/explain`` (in ``decisions``).
    - ``scheduler_pending_pods{queue}`` (``active``, ``backoff``, ``unschedulable``): from
      ``queue_counts()`` at scrape time (the standalone schedulers' queues, summed), when given.
    - ``scheduler_extender_audit_verdicts_total{profile,plugin,outcome}``: what the plugins a
      profile audits (``enforcement: audit``) would have decided: ``would_reject`` and
      ``would_admit`` (nodes, per filter), ``violated`` (pods seen bound to a node the plugin would
      have rejected: :meth:`audit_violated`).
    """

    def __init__(
        self,
        profiles: Iterable[str],
        cluster: ClusterConnection | None = None,
        recorders: Sequence[EventCounts] = (),
        leadership: Leadership | None = None,
        decisions: DecisionStore | None = None,
        queue_counts: Callable[[], dict[str, int]] | None = None,
    ) -> None:
        self.profiles = frozenset(profiles)
        self.registry = CollectorRegistry(auto_describe=True)
        if cluster is not None:
            leadership = leadership or Leadership(cluster.bind_admission)
            self.registry.register(ClusterCollector(cluster, recorders, leadership))
        self.requests = Counter(
            "scheduler_extender_requests",
            "Extender requests answered, by profile, verb, HTTP status code and outcome.",
            ["profile", "verb", "code", "outcome"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "scheduler_extender_request_duration_seconds",
            "Time to answer an extender request, body read included, in seconds.",
            ["profile", "verb"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.filter_nodes = Counter(
            "scheduler_extender_filter_nodes",
            "Filter verdicts per plugin: nodes rejected and plugin errors.",
            ["profile", "plugin", "result"],
            registry=self.registry,
        )
        self.filter_passed = Counter(
            "scheduler_extender_filter_nodes_passed",
            "Nodes that passed every filter plugin.",
            ["profile"],
            registry=self.registry,
        )
        self.overload = Counter(
            "scheduler_extender_overload",
            "Requests answered 503 because too many connections, requests or body bytes were in flight.",
            ["reason"],
            registry=self.registry,
        )
        self.timeouts = Counter(
            "scheduler_extender_timeouts",
            "Connections closed because a request's header or body did not arrive in time.",
            ["phase"],
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "scheduler_extender_requests_in_flight",
            "Verb requests being read or answered.",
            registry=self.registry,
        )
        self.decisions = Counter(
            "scheduler_extender_decisions",
            "Decisions by profile, verb and outcome (passed, rejected, scored, victims, no_candidates, bound, error).",
            ["profile", "verb", "outcome"],
            registry=self.registry,
        )
        self.rejections = Counter(
            "scheduler_extender_rejections",
            "Nodes rejected by filter, by plugin and reason code.",
            ["profile", "plugin", "code"],
            registry=self.registry,
        )
        self._rejection_pairs: set[tuple[str, str, str]] = set()
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts",
            "Scheduling attempts of the standalone scheduler by result (scheduled, unschedulable, error).",
            ["profile", "result"],
            registry=self.registry,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (the scheduling cycle, and the binding cycle when bound).",
            ["profile", "result"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.records = Gauge(
            "scheduler_extender_decision_records",
            "Decisions kept for /explain.",
            registry=self.registry,
        )
        if decisions is not None:
            self.records.set_function(lambda: len(decisions))
        if queue_counts is not None:  # the standalone schedulers' queues
            self.registry.register(_PendingPods(queue_counts))
        # the children of the label sets every request counts, found once each (``labels()``
        # validates and locks: a few microseconds a call); bounded as the label values are
        self._answered: dict[tuple[str, str, int, bool], tuple[Counter, Histogram]] = {}
        self._decided: dict[tuple[str, str, str], Counter] = {}
        self._passed: dict[str, Counter] = {}
        self._audit_metrics(profiles)

    def profile_label(self, profile: str | None) -> str:
        """``profile`` when it is configured, else :data:`UNKNOWN_PROFILE`."""
        return profile if profile in self.profiles else UNKNOWN_PROFILE

    def answered(self, profile: str, verb: str, status: int, error: bool, seconds: float) -> None:
        """A verb request was answered (``profile`` already a :meth:`profile_label`); the router
        does not call it for a probe."""
        key = (profile, verb, status, error)
        children = self._answered.get(key)
        if children is None:
            outcome = "error" if error or status != 200 else "success"
            children = (self.requests.labels(profile, verb, str(status), outcome), self.duration.labels(profile, verb))
            self._answered[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def _filtered(self, decision: Decision) -> int:
        """Count a filter's verdicts per plugin and reason code; returns the nodes that passed."""
        profile = decision.profile
        rejected: dict[int, tuple[Status, int]] = {}  # plugins share a status among many nodes
        passed = 0
        if all_passed(decision.statuses):  # the common case, without a loop in Python
            passed = len(decision.statuses)
        else:
            for status in decision.statuses:
                if status.code is Code.SUCCESS:
                    passed += 1
                else:
                    seen = rejected.get(id(status))
                    rejected[id(status)] = (status, seen[1] + 1 if seen else 1)
        if passed:
            counter = self._passed.get(profile)
            if counter is None:
                counter = self._passed[profile] = self.filter_passed.labels(profile)
            counter.inc(passed)
        by_result: dict[tuple[str, str], int] = {}
        by_code: dict[tuple[str, str], int] = {}
        for status, n in rejected.values():
            key = (status.plugin, code_name(status.code))
            by_result[key] = by_result.get(key, 0) + n
            key = (status.plugin, reason_code(status))
            by_code[key] = by_code.get(key, 0) + n
        for (plugin, result), n in by_result.items():
            self.filter_nodes.labels(profile, plugin, result).inc(n)
        for (plugin, code), n in by_code.items():
            pair = (profile, plugin, code)
            if pair not in self._rejection_pairs:
                if len(self._rejection_pairs) >= _MAX_REJECTION_PAIRS:
                    pair = (profile, plugin, "Other")
                self._rejection_pairs.add(pair)
            self.rejections.labels(*pair).inc(n)
        for plugin, n in decision.ignored.items():
            self.filter_nodes.labels(profile, plugin, "IgnoredError").inc(n)
        if decision.error_plugin:
            self.filter_nodes.labels(profile, decision.error_plugin, "Error").inc()
        return passed

    def attempt(self, profile: str, result: str, seconds: float) -> None:
        """A standalone scheduler's attempt (:class:`~app.scheduler.scheduler.SchedulerMetrics`):
        ``scheduler_schedule_attempts_total{profile,result}`` and
        ``scheduler_scheduling_attempt_duration_seconds{profile,result}``."""
        self.schedule_attempts.labels(profile, result).inc()
        self.attempt_duration.labels(profile, result).observe(seconds)

    def decided(self, decision: Decision) -> None:
        """Count a decision by outcome and, for a filter, its verdicts per plugin and reason code
        (a listener of :class:`~app.api.service.ExtenderService` and of the standalone scheduler)."""
        verb = decision.verb
        passed = self._filtered(decision) if verb == "filter" else 0
        if decision.error:
            outcome = "error"
        elif verb == "filter":
            outcome = "passed" if passed else "rejected"
        elif verb == "prioritize":
            outcome = "scored"
        elif verb == "preempt":
            outcome = "victims" if decision.victims else "no_candidates"
        else:
            outcome = "bound"
        key = (decision.profile, verb, outcome)
        counter = self._decided.get(key)
        if counter is None:
            counter = self._decided[key] = self.decisions.labels(*key)
        counter.inc()
        if decision.audit:
            self.audited(decision)

    # -- audit mode (enforcement: audit) --------------------------------------------------------------

    def _audit_metrics(self, profiles: Iterable[str]) -> None:
        """The audit mode's counter (label values: configured profiles and plugins, three outcomes),
        each series of an audited plugin at 0 from the start when ``profiles`` maps the profiles'
        names to their frameworks (what serving passes)."""
        self.audit_verdicts = Counter(
            "scheduler_extender_audit_verdicts",
            "What audited plugins (enforcement: audit) would have decided: nodes they would_reject or "
            "would_admit, and pods bound to a node they would have rejected (violated).",
            ["profile", "plugin", "outcome"],
            registry=self.registry,
        )
        if isinstance(profiles, Mapping):
            for name, framework in profiles.items():
                for plugin in getattr(framework, "audited", ()):
                    for outcome in AUDIT_OUTCOMES:
                        self.audit_verdicts.labels(name, plugin, outcome)

    def audited(self, decision: Decision) -> None:
        """Count a filter's audit verdicts: ``would_reject`` and ``would_admit`` per node."""
        for plugin, (reject, admit) in decision.audit_counts().items():
            if reject:
                self.audit_verdicts.labels(decision.profile, plugin, "would_reject").inc(reject)
            if admit:
                self.audit_verdicts.labels(decision.profile, plugin, "would_admit").inc(admit)

    def audit_violated(self, profile: str, plugin: str) -> None:
        """A pod of ``profile`` was seen bound to a node ``plugin`` (audited) would have rejected."""
        self.audit_verdicts.labels(profile, plugin, "violated").inc()


#: The ``outcome`` label values of ``scheduler_extender_audit_verdicts_total``.
AUDIT_OUTCOMES = ("would_reject", "would_admit", "violated")

#: Distinct (profile, plugin, code) series of ``scheduler_extender_rejections_total`` before ``Other``.
_MAX_REJECTION_PAIRS = 256


class _PendingPods(Collector):
    def __init__(self, counts: Callable[[], dict[str, int]]) -> None:
        self.counts = counts

    def describe(self) -> list[object]:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("scheduler_pending_pods", "Pending pods by queue.", labels=["queue"])
        counts = self.counts()
        for queue in ("active", "backoff", "unschedulable"):
            family.add_metric([queue], counts.get(queue, 0))
        yield family


class ClusterCollector(Collector):
    """Cluster-state metrics, read from :meth:`ClusterConnection.stats` at scrape time.

    - ``scheduler_extender_cluster_objects{kind}``: nodes, pods and assumed pods in the cache.
    - ``scheduler_extender_cluster_synced{resource}``: 1 once ``nodes``/``pods`` completed a list.
    - ``scheduler_extender_cluster_seconds_since_sync{resource}``: since the last completed list or
      working watch (-1 before the first).
    - ``scheduler_extender_cluster_relists_total{resource}``, ``..._watch_restarts_total{resource}``,
      ``..._list_watch_errors_total{resource}``: reflector activity.
    - ``scheduler_extender_assumed_pods_total{outcome}``: assumptions ``confirmed`` by the watch or
      ``expired`` unconfirmed.
    - ``scheduler_extender_requeued_pods_total``: pending pods annotated by re-queue assistance.
    - ``scheduler_extender_events_posted_total``, ``..._events_dropped_total``: pod events
      written, and dropped (queue full, over the rate budget, refused).
    - ``scheduler_extender_is_leader{lease}``: 1 while this replica holds the Lease
      ``<namespace>/<name>`` (kube-scheduler's that it follows, or a standalone scheduler's that it
      elects on), warming up included; 0 on a standby. Without leader election one sample with
      ``lease=""``, 1: the replica acts alone. ``scheduler_extender_takeovers_total{lease}``: times
      this replica became the Lease's holder (its first acquisition included). Both read
      :class:`~app.cluster.leader.Leadership`, as ``/readyz``'s ``role`` does.
    """

    def __init__(self, cluster: ClusterConnection, recorders: Sequence[EventCounts], leadership: Leadership) -> None:
        self.cluster = cluster
        #: the pod-event writers
        self.recorders = recorders
        #: the Leases followed or elected on
        self.leadership = leadership

    def describe(self) -> list[object]:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        stats = self.cluster.stats()
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
        since = GaugeMetricFamily(
            "scheduler_extender_cluster_seconds_since_sync",
            "Seconds since the resource's last completed list or working watch (-1 before the first).",
            labels=["resource"],
        )
        for kind in ("nodes", "pods"):
            since.add_metric([kind], stats[f"{kind}_since_ok"])
        yield since
        yield from self._leadership()
        recorders = self.recorders
        yield CounterMetricFamily(
            "scheduler_extender_events_posted",
            "Pod events written to the API server (creates and series updates).",
            value=sum(r.posted for r in recorders),
        )
        yield CounterMetricFamily(
            "scheduler_extender_events_dropped",
            "Pod events not written: queue full, over the rate budget, or refused by the API server.",
            value=sum(r.dropped for r in recorders),
        )
        requeuer = self.cluster.requeuer
        yield CounterMetricFamily(
            "scheduler_extender_requeued_pods",
            "Pending pods annotated so that kube-scheduler retries them (re-queue assistance).",
            value=requeuer.requeued if requeuer is not None else 0,
        )
        assumed = CounterMetricFamily("scheduler_extender_assumed_pods", "Assumed pods by outcome.", labels=["outcome"])
        assumed.add_metric(["confirmed"], stats["assumed_confirmed"])
        assumed.add_metric(["expired"], stats["assumed_expired"])
        yield assumed

    def _leadership(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        leader = GaugeMetricFamily(
            "scheduler_extender_is_leader",
            '1 while this replica holds the Lease (warming up included), 0 on a standby; lease="" without election.',
            labels=["lease"],
        )
        takeovers = CounterMetricFamily(
            "scheduler_extender_takeovers", "Times this replica became the Lease's holder.", labels=["lease"]
        )
        reports = self.leadership.leases()
        if not reports:
            leader.add_metric([""], 1)
        for report in reports:
            leader.add_metric([report.lease], 0 if report.role == STANDBY else 1)
            takeovers.add_metric([report.lease], report.takeovers)
        yield leader
        yield takeovers


# -- the shadow scheduler (python -m app shadow, app.shadow) ------------------------------------------


#: ``scheduler_shadow_decisions_total``'s ``agreement`` values (:mod:`app.shadow.record`)
SHADOW_AGREEMENTS = ("same", "feasible", "infeasible")


class ShadowMetrics:
    """The shadow scheduler's collectors, in ``registry`` (the app's :attr:`Metrics.registry`):

    - ``scheduler_shadow_decisions_total{profile,agreement}``: binds of the followed scheduler the
      profile was run for, by ``agreement``: ``same`` (the bound node is among the profile's best
      by ``TotalScore``), ``feasible`` (feasible, ranked lower), ``infeasible`` (the profile
      rejects it); every pair of the configured profiles is exported from the start, at 0.
    """

    def __init__(self, registry: CollectorRegistry, profiles: Iterable[str]) -> None:
        self.decisions = Counter(
            "scheduler_shadow_decisions",
            "Binds of the followed scheduler shadowed by a profile, by agreement (same, feasible, infeasible).",
            ["profile", "agreement"],
            registry=registry,
        )
        for profile in profiles:
            for agreement in SHADOW_AGREEMENTS:
                self.decisions.labels(profile, agreement)

    def shadowed(self, profile: str, agreement: str) -> None:
        """One shadow record (an ``error`` one is not counted)."""
        if agreement in SHADOW_AGREEMENTS:
            self.decisions.labels(profile, agreement).inc()

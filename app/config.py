"""The service configuration: one YAML file in the style of a Kubernetes component config.

::

    apiVersion: config.scheduler-extender.dev/v1alpha1
    kind: ExtenderConfiguration
    server: {host: 127.0.0.1, port: 8888, maxRequestBytes: 134217728}
    profiles:
    - name: default
      extender: {verbs: [filter, prioritize], weight: 1, nodeCacheCapable: false}
      plugins: {filter: [{name: AnnotationNodeAffinity}], score: [{name: NodeResourcesAllocatable}]}
      pluginConfig: [{name: NodeResourcesAllocatable, args: {mode: Most}}]

Loading validates everything up front and fails with every problem at once, each prefixed by its
field path (``profiles[0].plugins.score[1].weight: must be > 0``): unknown keys, unknown plugins,
a plugin enabled at a point it does not implement, bad args, and kube-scheduler's own extender
rules (``validateExtenders`` in pkg/scheduler/apis/config/validation/validation.go): a positive
weight with prioritize, at most one binder, valid and unique managed resources.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import pydantic
import yaml
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from app.framework import features
from app.framework.build import effective_points, enabled_plugins
from app.framework.errors import SchedulerExtenderError
from app.framework.labels import parse_selector
from app.framework.points import EXTENSION_POINTS, MULTI_POINT_KEY, POINTS, ExtensionPoint, implements
from app.framework.profile import Duration, PluginRef, Profile, parse_duration
from app.framework.registry import Registry
from app.framework.resources import is_extended_resource_name

API_VERSION = "config.scheduler-extender.dev/v1alpha1"
KIND = "ExtenderConfiguration"
DEFAULT_MAX_REQUEST_BYTES = 128 * 1024 * 1024


class ConfigError(SchedulerExtenderError, ValueError):
    """The configuration is invalid; ``problems`` lists each as ``field.path: message``."""

    def __init__(self, problems: list[str], source: str = "") -> None:
        self.problems = problems
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(f"{where}invalid configuration:\n" + "\n".join(f"  - {p}" for p in problems))


class FieldError(SchedulerExtenderError, ValueError):
    """A model validator's refusal of one of its fields: ``field`` (the camelCase path below the
    model), so the problem is reported at that field's path rather than the model's."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=False, frozen=True)


_M = TypeVar("_M", bound=_Model)


class SchedulerTLSConfig(_Model):
    """How kube-scheduler reaches this HTTPS server: rendered as the extender entry's
    ``tlsConfig`` (``ExtenderTLSConfig``). ``caFile`` is the CA that signed ``server.tls.certFile``;
    without it kube-scheduler does not verify the certificate at all (client-go ``TLSConfigFor``:
    ``enableHTTPS`` with no CA means insecure), so ``render`` refuses TLS without it.
    ``certFile``/``keyFile``: kube-scheduler's client certificate, needed when ``clientCAFile`` is
    set. ``serverName``: the name in the server certificate when it is not ``server.host``.
    Paths are on the control-plane host and are mounted into kube-scheduler at the same path.
    """

    ca_file: str | None = Field(default=None, alias="caFile")
    cert_file: str | None = None
    key_file: str | None = None
    server_name: str | None = None


#: The client certificate's CN that ``python -m app certs`` issues for kube-scheduler, and the
#: identity ``server.tls.allowedClients`` admits to bind by default.
SCHEDULER_CLIENT_CN = "system:kube-scheduler"


class TLSConfig(_Model):
    """Serve HTTPS with this certificate and key (PEM files, reloaded when they change).
    ``clientCAFile``: verify client certificates signed by this CA (kube-scheduler's
    ``tlsConfig.certFile``/``keyFile``); a client without one may still call the read-only verbs
    and the health endpoints (the kubelet's HTTPS probes present none), but ``bind`` answers 403
    unless the certificate's CN is in ``allowedClients`` (default ``system:kube-scheduler``, what
    ``certs`` issues). ``reloadInterval`` (10s): how often the files are checked for a rotation.
    ``scheduler``: the matching client side for kube-scheduler (:class:`SchedulerTLSConfig`)."""

    cert_file: str
    key_file: str
    client_ca_file: str | None = Field(default=None, alias="clientCAFile")
    allowed_clients: list[str] = Field(default_factory=lambda: [SCHEDULER_CLIENT_CN], min_length=1)
    reload_interval: Duration = "10s"
    scheduler: SchedulerTLSConfig = Field(default_factory=SchedulerTLSConfig)

    @pydantic.field_validator("reload_interval")
    @classmethod
    def _interval(cls, value: str) -> str:
        return _positive_duration(value)


class LimitsConfig(_Model):
    """``server.limits``: caps on what one request may make the service build; a request over a
    cap gets HTTP 400 naming it. The defaults are orders of magnitude above what kube-scheduler
    sends (see :class:`app.extender.codec.Limits`)."""

    max_nodes: int = Field(default=100_000, gt=0)
    max_victims_per_node: int = Field(default=10_000, gt=0)
    max_victims: int = Field(default=200_000, gt=0)


class TimeoutsConfig(_Model):
    """``server.timeouts``, Go durations.

    - ``header`` (5s): from a request's first byte to the end of its headers; then 408 and close.
      kube-scheduler writes a request's headers at once.
    - ``body`` (10s): from the end of the headers to the end of the body (a stalled or short
      body); then 408 and close. A 128 MiB body takes well under a second on loopback.
    - ``idle`` (30s): how long a connection may wait for its next request (or its first) without
      sending a byte; then it is closed. Shorter than Go's 90 s ``IdleConnTimeout``: kube-scheduler
      sees the close and dials again (a request on a connection closed under it is retried by
      Go's transport, as nothing was written).
    - ``shutdown`` (10s): on SIGTERM, how long the process may take to exit: requests in flight
      get this long to finish while the standalone schedulers stop at once and release their
      Leases; the background work (watches, Lease, schedulers) gets what is left of it (at least
      1 s); then the process exits anyway, with status 0.
    """

    header: Duration = "5s"
    body: Duration = "10s"
    idle: Duration = "30s"
    shutdown: Duration = "10s"

    @pydantic.field_validator("header", "body", "idle", "shutdown")
    @classmethod
    def _durations(cls, value: str) -> str:
        return _positive_duration(value)

    def seconds(self, name: Literal["header", "body", "idle", "shutdown"]) -> float:
        """A timeout in seconds."""
        return parse_duration(getattr(self, name))


class MetricsTLSConfig(_Model):
    """``server.metrics.tls``: the metrics listener's serving certificate and key (PEM files,
    reloaded when they change, checked every ``reloadInterval``, 10s). Without it the listener
    serves a self-signed certificate generated in memory at start, as kube-scheduler does when
    ``--tls-cert-file`` is unset (``SecureServingOptions.MaybeDefaultWithSelfSignedCerts``)."""

    cert_file: str
    key_file: str
    reload_interval: Duration = "10s"

    @pydantic.field_validator("reload_interval")
    @classmethod
    def _interval(cls, value: str) -> str:
        return _positive_duration(value)


#: The metrics listener's default port (kube-scheduler serves its own on 10259,
#: kube-controller-manager on 10257).
DEFAULT_METRICS_PORT = 10261


class MetricsServerConfig(_Model):
    """``server.metrics``: a second listener that serves only ``GET /metrics``, ``/healthz`` and
    ``/readyz`` (the verbs stay on ``server.host``), protected as kube-scheduler protects its own
    secure port (k8s.io/apiserver's delegated authentication and authorization,
    :mod:`app.api.delegated`): a client certificate signed by ``clientCAFile`` or a bearer token
    reviewed by the API server (``TokenReview``) names the caller, a ``SubjectAccessReview`` of
    ``get`` on the path decides (RBAC ``nonResourceURLs: ["/metrics"]``).

    - ``enabled`` (true): ``false`` turns the listener off (``render`` gives every configuration
      with ``cluster:`` this listener with its defaults unless it says so).
    - ``host`` (``0.0.0.0``) and ``port`` (10261, must differ from ``server.port``).
    - ``insecure`` (false): plain HTTP, no authentication, no authorization: every metric
      (profile and plugin names, node and pod counts, rejection reasons) to anyone who reaches
      ``host:port``. An opt-in; ``validate`` and ``serve`` warn about it.
    - ``tls`` (:class:`MetricsTLSConfig`): the serving certificate; default: self-signed, made in
      memory at each start (valid one year).
    - ``clientCAFile``: client certificates signed by this CA authenticate as user CN, groups O
      (kube-apiserver's x509 authenticator); without it only bearer tokens authenticate.
    - ``alwaysAllowPaths`` (``/healthz``, ``/readyz``): served without authentication or
      authorization (kube-scheduler's ``--authorization-always-allow-paths`` default, less
      ``/livez``, which this service does not serve). A path ending in ``*`` is a prefix.
    - ``kubeconfig``: the credentials of the reviews (kube-scheduler's
      ``--authentication-kubeconfig``/``--authorization-kubeconfig``); default: the ``cluster:``
      section's credentials. They need ``tokenreviews`` and ``subjectaccessreviews`` ``create``
      (the built-in ClusterRole ``system:auth-delegator``, which ``render`` binds).
    - ``cacheTTL`` (10s): how long a review's answer is reused, for tokens, allowed and denied
      requests alike (kube-scheduler's ``--authentication-token-webhook-cache-ttl``,
      ``--authorization-webhook-cache-authorized-ttl`` and ``-unauthorized-ttl`` defaults); a
      Prometheus scraping every 15 s costs two API calls per scrape at most, one each per
      ``cacheTTL`` when it scrapes faster. ``0s``: every request is reviewed. A review that failed
      is never reused.
    - ``reviewTimeout`` (10s): how long one TokenReview or SubjectAccessReview may take
      (``TokenRequestTimeout`` and the authorization ``ClientTimeout`` of kube-scheduler).
    - ``maxConnections`` (64): open connections; a request past the cap gets 503 with
      ``Retry-After`` (``/healthz`` and ``/readyz`` excepted). ``server.timeouts`` ``header`` and
      ``idle`` apply here as on the verb listener.
    """

    enabled: bool = True
    host: str = "0.0.0.0"  # every address: the listener exists to be reached by Prometheus
    port: int = Field(default=DEFAULT_METRICS_PORT, ge=1, le=65535)
    insecure: bool = False
    tls: MetricsTLSConfig | None = None
    client_ca_file: str | None = Field(default=None, alias="clientCAFile")
    always_allow_paths: list[str] = Field(default_factory=lambda: ["/healthz", "/readyz"])
    kubeconfig: str | None = None
    cache_ttl: Duration = Field(default="10s", alias="cacheTTL")
    review_timeout: Duration = "10s"
    max_connections: int = Field(default=64, gt=0, le=65536)

    @pydantic.field_validator("cache_ttl")
    @classmethod
    def _ttl(cls, value: str) -> str:
        if parse_duration(value) < 0:
            raise ValueError("must not be negative")
        return value

    @pydantic.field_validator("review_timeout")
    @classmethod
    def _timeout(cls, value: str) -> str:
        return _positive_duration(value)

    @pydantic.field_validator("always_allow_paths")
    @classmethod
    def _paths(cls, value: list[str]) -> list[str]:
        for path in value:
            if not path.startswith("/"):
                raise ValueError(f"{path!r}: a path begins with /")
            if "*" in path[:-1]:
                raise ValueError(f"{path!r}: only a trailing * is allowed (a prefix)")
        return value

    @pydantic.model_validator(mode="after")
    def _plain_has_no_tls(self) -> MetricsServerConfig:
        if self.insecure and (self.tls is not None or self.client_ca_file):
            raise FieldError(
                "insecure",
                "true serves plain HTTP without authentication: remove tls and clientCAFile, "
                "or insecure to serve HTTPS",
            )
        return self

    def seconds(self, name: Literal["cache_ttl", "review_timeout"]) -> float:
        """``cacheTTL`` or ``reviewTimeout`` in seconds."""
        return parse_duration(getattr(self, name))


def metrics_exposure(metrics: MetricsServerConfig) -> str:
    """What ``server.metrics.insecure: true`` exposes, for the warning of ``validate`` and ``serve``."""
    return (
        f"server.metrics.insecure: the metrics listener on {metrics.host}:{metrics.port} serves plain HTTP without "
        "authentication: every metric (profile and plugin names, node and pod counts, rejection reasons, leader "
        "state) to anyone who reaches that address"
    )


class ServerConfig(_Model):
    """Listen address, request limits, timeouts and logging.

    ``maxRequestBytes`` (128 MiB): larger bodies get HTTP 413; admits kube-scheduler's largest
    real bodies (5000 full nodes are about 73 MB). ``maxInFlightBytes`` (default: equal to
    ``maxRequestBytes``): the request bodies held at once, all requests together; a body that
    would exceed it gets 503 with ``Retry-After`` (bodies under 1 MiB, such as bind's, always
    pass). The rendered pod's memory limit is derived from it (:func:`memory_limit_bytes`).
    ``maxConnections`` (1024): open connections; a request on a connection past the cap gets 503
    with ``Retry-After`` and the connection is closed. ``maxRequestsInFlight`` (1024): verb
    requests being read or answered at once; excess gets 503 with ``Retry-After``. kube-scheduler
    binds in goroutines: a backlog of pods whose binds wait on the API server is that many binds
    in flight, each on its own connection.
    ``defaultProfile``: the profile that also answers at ``/{verb}`` (defaults to the only profile
    when there is one). ``insecureBind``: serve ``bind`` to any caller, without TLS client
    certificates (see :func:`bind_exposure`); ``serve`` refuses a profile that serves bind without
    ``tls.clientCAFile`` otherwise. ``logLevel`` (info), ``logFormat`` (``text``, or ``json``:
    one object per line) and ``accessLog`` (false) apply to the service's and uvicorn's logs alike.
    ``metrics``: a second, authenticated listener for ``/metrics``, ``/healthz`` and ``/readyz``
    (:class:`MetricsServerConfig`); without it they are served on this listener only.
    ``http2`` (true): over TLS, offer HTTP/2 by ALPN (``h2``, then ``http/1.1``), which
    kube-scheduler's extender transport then uses for every call on one connection; ``false``
    offers HTTP/1.1 alone (each bind in flight beyond Go's two idle connections then costs a TLS
    handshake); plain HTTP is HTTP/1.1 whatever it says.
    """

    host: str = "127.0.0.1"
    port: int = Field(default=8888, ge=0, le=65535)
    max_request_bytes: int = Field(default=DEFAULT_MAX_REQUEST_BYTES, gt=0)
    max_in_flight_bytes: int | None = Field(default=None, gt=0)
    max_connections: int = Field(default=1024, gt=0)
    max_requests_in_flight: int = Field(default=1024, gt=0)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    timeouts: TimeoutsConfig = Field(default_factory=TimeoutsConfig)
    tls: TLSConfig | None = None
    insecure_bind: bool = False
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["text", "json"] = "text"
    access_log: bool = False
    default_profile: str | None = None
    metrics: MetricsServerConfig | None = None
    http2: bool = True

    @property
    def metrics_listener(self) -> MetricsServerConfig | None:
        """``metrics`` when the listener is on (set and ``enabled``), else ``None``."""
        return self.metrics if self.metrics is not None and self.metrics.enabled else None

    @property
    def in_flight_bytes(self) -> int:
        """``maxInFlightBytes``, defaulted to ``maxRequestBytes``."""
        return self.max_in_flight_bytes or self.max_request_bytes

    @pydantic.model_validator(mode="after")
    def _budget_admits_a_body(self) -> ServerConfig:
        if self.max_in_flight_bytes is not None and self.max_in_flight_bytes < self.max_request_bytes:
            raise FieldError(
                "maxInFlightBytes",
                f"{self.max_in_flight_bytes} must be at least maxRequestBytes ({self.max_request_bytes}): a body "
                "the service admits must fit",
            )
        if self.metrics is not None and self.metrics.enabled and self.metrics.port == self.port:
            raise FieldError(
                "metrics.port",
                f"{self.metrics.port} must differ from port: the metrics listener is a second socket beside the "
                "verbs' (set server.metrics.port, 10261 by default)",
            )
        return self


def bind_exposure(config: Configuration, host: str | None = None, port: int | None = None) -> str | None:
    """Why this configuration would let any local process bind any pod, or ``None``. ``host`` and
    ``port``: where it will listen when the command line overrides ``server.host``/``server.port``.

    A profile that serves ``bind`` holds cluster-wide ``pods/binding`` rights; kube-scheduler's
    extender client can authenticate only with a TLS client certificate (its ``tlsConfig`` has no
    token), so without ``server.tls.clientCAFile`` any process that reaches the port (on a
    control-plane host: every process, the service being on 127.0.0.1) could bind a pending pod to
    any node, past taints and affinity. ``serve`` refuses that unless ``server.insecureBind`` says
    so, and then warns at start and on each bind.
    """
    binders = [p.name for p in config.profiles if "bind" in p.extender.verbs]
    tls = config.server.tls
    if not binders or (tls is not None and tls.client_ca_file):
        return None
    return (
        f"profile {binders[0]!r} serves bind without client-certificate verification: any process that "
        f"reaches {host or config.server.host}:{config.server.port if port is None else port} could bind any "
        "pending pod to any node"
    )


def _positive_duration(value: str) -> str:
    if parse_duration(value) <= 0:
        raise ValueError("must be a positive duration")
    return value


class LeaderElectionConfig(_Model):
    """``cluster.leaderElection``: bind only while this replica's kube-scheduler holds the Lease
    (:mod:`app.cluster.leader`). ``leaseName``/``leaseNamespace``: kube-scheduler's
    ``leaderElection.resourceName``/``resourceNamespace`` (``kube-scheduler``/``kube-system`` by
    default). ``identity``: the hostname kube-scheduler's holder identity begins with (default:
    this host's, which a static pod with hostNetwork or a sidecar shares with its kube-scheduler).
    ``renewDeadline`` (10s) and ``retryPeriod`` (2s): kube-scheduler's defaults; the holder counts
    as leading while its Lease record changed within ``renewDeadline``, read every ``retryPeriod``.
    """

    lease_name: str = "kube-scheduler"
    lease_namespace: str = "kube-system"
    identity: str | None = None
    renew_deadline: Duration = "10s"
    retry_period: Duration = "2s"

    @pydantic.field_validator("renew_deadline", "retry_period")
    @classmethod
    def _durations(cls, value: str) -> str:
        return _positive_duration(value)


class ClusterConfig(_Model):
    """``cluster:``: mirror nodes and pods of the cluster (list+watch) and allow binding.

    Needed by stateful plugins and ``DefaultBinder``, and what resolves ``NodeNames`` in
    ``nodeCacheCapable: true`` profiles. Credentials: ``kubeconfig`` (and ``context``), else the
    in-cluster service account, else ``$KUBECONFIG`` or ``~/.kube/config``. Durations are Go
    durations: ``assumedPodTTL`` (default 30s) is how long a pod this service bound counts on its
    node before the watch confirms it; ``watchTimeout`` (5m) the server-side watch timeout's lower
    bound; ``staleAfter`` (60s) how long list/watch may fail before ``/readyz`` turns 503.
    ``podAnnotations``: pod annotation keys to keep in pod records (plugins add their own).
    ``leaderElection``: follow kube-scheduler's Lease (:class:`LeaderElectionConfig`); without
    it this replica binds whenever it is warmed up (one replica). ``requeueRejectedPods`` (true)
    and ``requeueQPS`` (5): re-queue assistance (:mod:`app.cluster.requeue`): pods a filter
    rejected on every node are annotated, at most that many per second, when capacity may have
    been freed, so kube-scheduler retries them at once (needs ``pods: patch``). ``apiWorkers``
    (16): threads for the blocking API calls (pod reads, status and volume writes, a Binding
    through a proxy). ``bindConnections`` (128): Bindings in flight at most, each on a keep-alive
    connection of its own (:mod:`app.kube.aio`); kube-scheduler starts every pod's binding
    cycle without a limit, and a real kube-apiserver answers a Binding in tens of ms under that
    load (its etcd write), so a smaller pool makes binds wait in line for a connection.
    """

    kubeconfig: str | None = None
    context: str | None = None
    assumed_pod_ttl: Duration = Field(default="30s", alias="assumedPodTTL")
    watch_timeout: Duration = "5m"
    stale_after: Duration = "60s"
    page_size: int = Field(default=500, gt=0, le=10000)
    api_workers: int = Field(default=16, gt=0, le=256)
    bind_connections: int = Field(default=128, gt=0, le=1024)
    pod_annotations: list[str] = Field(default_factory=list)
    leader_election: LeaderElectionConfig | None = None
    requeue_rejected_pods: bool = True
    requeue_qps: float = Field(default=5.0, gt=0, alias="requeueQPS")

    @pydantic.field_validator("assumed_pod_ttl", "watch_timeout", "stale_after")
    @classmethod
    def _durations(cls, value: str) -> str:
        return _positive_duration(value)


class DecisionsConfig(_Model):
    """``diagnostics.decisions``: decision records for ``/explain`` (:mod:`app.observe.decisions`).
    ``maxRecords`` (10000): decisions kept in all; ``maxNodeVerdicts`` (1,000,000): node entries
    kept in all (one per node of a filter or prioritize: this bounds the memory, about 64 bytes
    each, which ``render`` adds to the pod's memory limit); ``maxAge`` (15m): how long one is kept;
    ``attemptsPerPod`` (8): the most recent kept per pod. ``enabled: false`` keeps none (``/explain``
    then answers 404 for every pod)."""

    enabled: bool = True
    max_records: int = Field(default=10_000, gt=0, le=1_000_000)
    max_node_verdicts: int = Field(default=1_000_000, gt=0, le=100_000_000)
    max_age: Duration = "15m"
    attempts_per_pod: int = Field(default=8, gt=0, le=100)

    @pydantic.field_validator("max_age")
    @classmethod
    def _duration(cls, value: str) -> str:
        return _positive_duration(value)


class EventsConfig(_Model):
    """``diagnostics.events``: Kubernetes Events (``events.k8s.io/v1``) posted on pods for the
    decisions an operator must see (:mod:`app.observe.events`); needs ``cluster:`` and the
    ``events: create, patch`` RBAC that ``render`` emits. ``qps`` (1/300: one per 5 minutes) and
    ``burst`` (25): the rate of API calls for events *per pod*, as client-go's spam filter
    (calls over it are dropped and counted); ``seriesWindow`` (6m,
    client-go's ``finishTime``): a series of the same event on the same pod ends when it has not
    repeated for this long (its final count is then written)."""

    enabled: bool = True
    qps: float = Field(default=1 / 300, gt=0)
    burst: int = Field(default=25, gt=0)
    series_window: Duration = "6m"

    @pydantic.field_validator("series_window")
    @classmethod
    def _duration(cls, value: str) -> str:
        return _positive_duration(value)


class CaptureConfig(_Model):
    """``diagnostics.capture``: record request bodies and answers to rotating JSONL files for
    ``replay --capture`` (off by default). **Sensitive**: the files hold pods' and nodes' specs
    (names, labels, annotations, images, environment of the request pods). ``path`` is the file
    (rotated to ``path.1`` .. ``path.N``); ``maxBytes`` (64 MiB) per file, ``maxFiles`` (4)
    rotated files kept; ``namespaces`` / ``labelSelector`` (``key``, ``key=value``, comma-separated,
    all must match) restrict which pods' requests are captured."""

    enabled: bool = False
    path: str = "scheduler-extender-capture.jsonl"
    max_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    max_files: int = Field(default=4, ge=0, le=100)
    namespaces: list[str] = Field(default_factory=list)
    label_selector: str = ""

    @pydantic.field_validator("label_selector")
    @classmethod
    def _selector(cls, value: str) -> str:
        parse_selector(value)
        return value


class DiagnosticsConfig(_Model):
    """``diagnostics:``: decision records, pod events and traffic capture."""

    decisions: DecisionsConfig = Field(default_factory=DecisionsConfig)
    events: EventsConfig = Field(default_factory=EventsConfig)
    capture: CaptureConfig = Field(default_factory=CaptureConfig)


class SchedulingConfig(_Model):
    """``scheduling:``: the standalone scheduler (``python -m app schedule``) of the profiles that
    set ``schedulerName``. ``leaderElect`` (true): replicas elect one leader per scheduler on the
    Lease ``leaseNamespace``/``<schedulerName>``, with kube-scheduler's ``leaseDuration`` (15s),
    ``renewDeadline`` (10s) and ``retryPeriod`` (2s). ``podInitialBackoff`` (1s) and
    ``podMaxBackoff`` (10s): the backoff of a pod whose attempt failed; ``podMaxInUnschedulable``
    (5m): how long a pod no node fits waits for a cluster event before it is tried again.
    ``percentageOfNodesToScore`` (0): stop Filter once this share of the nodes passed (at least
    100 nodes); 0 is kube-scheduler's adaptive default (50 % less 1 % per 125 nodes, at least 5 %)."""

    leader_elect: bool = True
    percentage_of_nodes_to_score: int = Field(default=0, ge=0, le=100)
    lease_namespace: str = "kube-system"
    lease_duration: Duration = "15s"
    renew_deadline: Duration = "10s"
    retry_period: Duration = "2s"
    pod_initial_backoff: Duration = "1s"
    pod_max_backoff: Duration = "10s"
    pod_max_in_unschedulable: Duration = "5m"

    @pydantic.field_validator(
        "lease_duration",
        "renew_deadline",
        "retry_period",
        "pod_initial_backoff",
        "pod_max_backoff",
        "pod_max_in_unschedulable",
    )
    @classmethod
    def _durations(cls, value: str) -> str:
        return _positive_duration(value)

    def seconds(self, name: str) -> float:
        """The duration field ``name`` in seconds."""
        return parse_duration(getattr(self, name))


# -- featureGates ----------------------------------------------------------------------------------

#: ``featureGates``: kube-scheduler v1.36's gate names with true or false, checked by
#: :func:`_feature_gate_problems` (every problem with its own path)
FeatureGatesMap = Annotated[
    dict[str, Any],
    pydantic.WithJsonSchema(
        {
            "type": "object",
            "description": "kube-scheduler v1.36's feature gates: a name and true or false",
            "propertyNames": {"enum": sorted(features.GATES)},
            "additionalProperties": {"type": "boolean"},
        }
    ),
]


def _feature_gate_problems(data: Any) -> list[str]:
    """:func:`app.framework.features.problems` of a document's ``featureGates`` mapping."""
    gates = data.get("featureGates") if isinstance(data, dict) else None
    return features.problems(gates) if isinstance(gates, dict) else []


class Configuration(_Model):
    """The whole service configuration (see the module doc). ``featureGates``: kube-scheduler's
    feature gates (:mod:`app.framework.features`), v1.36.3's defaults unless named here; a loaded
    configuration makes them the process's (:func:`parse_config`), as ``--feature-gates`` does for
    kube-scheduler."""

    api_version: Literal["config.scheduler-extender.dev/v1alpha1"]
    kind: Literal["ExtenderConfiguration"]
    server: ServerConfig = Field(default_factory=ServerConfig)
    cluster: ClusterConfig | None = None
    diagnostics: DiagnosticsConfig = Field(default_factory=DiagnosticsConfig)
    scheduling: SchedulingConfig = Field(default_factory=SchedulingConfig)
    feature_gates: FeatureGatesMap | None = None
    profiles: list[Profile] = Field(min_length=1)

    @property
    def default_profile(self) -> str | None:
        """The profile served at ``/{verb}``, if any."""
        if self.server.default_profile:
            return self.server.default_profile
        return self.profiles[0].name if len(self.profiles) == 1 else None


def _loc(loc: tuple[int | str, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


def _as_written(loc: tuple[int | str, ...], data: Any) -> tuple[int | str, ...]:
    """``loc`` without the ``enabled`` a plugin point's bare list was read into (the path as the
    user wrote it: ``plugins.filter[0]``, not ``plugins.filter.enabled[0]``)."""
    out: list[int | str] = []
    node = data
    for i, part in enumerate(loc):
        if part == "enabled" and isinstance(node, list) and i > 0:
            continue
        out.append(part)
        if isinstance(node, dict) and isinstance(part, str):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            node = None
    return tuple(out)


def _pydantic_problems(exc: pydantic.ValidationError, prefix: str = "", data: Any = None) -> list[str]:
    out = []
    for err in exc.errors(include_url=False):
        path = _loc(_as_written(tuple(err["loc"]), data))
        refused = (err.get("ctx") or {}).get("error")
        if isinstance(refused, FieldError):
            path = f"{path}.{refused.field}" if path else refused.field
        full = f"{prefix}.{path}" if prefix and path else (prefix or path)
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field (keys are case-sensitive camelCase)"
        elif err["type"] == "value_error":
            msg = msg.removeprefix("Value error, ")
        out.append(f"{full}: {msg}" if full else msg)
    return out


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` for the closest of ``choices`` to a mistyped ``name``, else ``""``."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def parse_config(data: Any, registry: Registry, source: str = "") -> Configuration:
    """Validate a decoded YAML document against the schema and the registry; a valid one's
    ``featureGates`` become the process's (:func:`app.framework.features.set_current`) before the
    profiles are checked (their default plugins depend on them).

    Raises :class:`ConfigError` listing every problem found.
    """
    if not isinstance(data, dict):
        raise ConfigError(["the document must be a mapping with apiVersion, kind and profiles"], source)
    try:
        config = Configuration.model_validate(data)
    except pydantic.ValidationError as exc:
        # every problem at once: the checks beyond the schema still run on the profiles that
        # passed it (a bad server.port must not hide an unknown plugin)
        problems = _pydantic_problems(exc, data=data) + _feature_gate_problems(data)
        problems += _semantics_of_valid_parts(data, registry)
        raise ConfigError(list(dict.fromkeys(problems)), source) from exc
    problems = _feature_gate_problems(data)
    if not problems:  # None: v1.36's defaults
        features.set_current(features.FeatureGates(config.feature_gates))
    problems += validate_semantics(config, registry)
    if problems:
        raise ConfigError(problems, source)
    return config


def _semantics_of_valid_parts(data: dict[Any, Any], registry: Registry) -> list[str]:
    """:func:`validate_semantics` of a document the schema refused: every profile's own checks for
    the profiles that pass the schema, and the checks across profiles when all of them do."""
    raw = data.get("profiles")
    if not isinstance(raw, list):
        return []
    profiles: list[tuple[int, Profile]] = []
    for i, item in enumerate(raw):
        try:
            profiles.append((i, Profile.model_validate(item)))
        except pydantic.ValidationError:
            continue  # its problems are already reported, with the path of the whole document
    has_cluster = isinstance(data.get("cluster"), dict)
    server = data.get("server")
    default = server.get("defaultProfile") if isinstance(server, dict) else None
    if profiles and len(profiles) == len(raw):  # the checks across profiles need them all
        partial = Configuration.model_construct(
            api_version="config.scheduler-extender.dev/v1alpha1",
            kind="ExtenderConfiguration",
            server=ServerConfig.model_construct(default_profile=default if isinstance(default, str) else None),
            cluster=ClusterConfig() if has_cluster else None,
            profiles=[p for _, p in profiles],
        )
        return validate_semantics(partial, registry)
    problems: list[str] = []
    names = [item.get("name") for item in raw if isinstance(item, dict)]
    if isinstance(default, str) and default and default not in names:
        known = [n for n in names if isinstance(n, str)]
        problems.append(f"server.defaultProfile: no profile is named {default!r}{did_you_mean(default, known)}")
    seen_resources: dict[str, str] = {}
    for i, profile in profiles:
        problems += _validate_profile(i, profile, registry, seen_resources, has_cluster)
    return problems


def load_config(path: str | Path | None, registry: Registry) -> Configuration:
    """Read and validate a configuration file; ``None`` loads the embedded default.

    Raises :class:`ConfigError` (also for unreadable files and YAML syntax errors).
    """
    data, source = read_config(path)
    return parse_config(data, registry, source)


def read_config(path: str | Path | None) -> tuple[Any, str]:
    """The YAML document of a configuration file (``None``: the embedded default) and the name
    its problems are reported under. Raises :class:`ConfigError` for an unreadable file or YAML
    syntax errors."""
    if path is None:
        text = files("app").joinpath("default-config.yaml").read_text(encoding="utf-8")
        source = "<embedded default>"
    else:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError([f"cannot read the file: {exc.strerror}"], source) from exc
    try:
        return yaml.safe_load(text), source
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        what = "; ".join(str(p) for p in (exc.problem, exc.context) if p)
        raise ConfigError([f"not valid YAML{where}: {what}"], source) from exc
    except yaml.YAMLError as exc:
        raise ConfigError([f"not valid YAML: {exc}"], source) from exc


@dataclass(frozen=True)
class ValidParts:
    """The parts of a document :func:`parse_config` refused that are valid on their own, so the
    checks of the later stages (plugin factories, the start-up checks) still run on them and
    report their problems in the same run: ``config`` holds each section that validates (the
    defaults for one that does not) and the profiles that pass every check of their own,
    ``positions`` the index of each of those profiles in the document, ``server`` whether the
    ``server:`` section itself validated (else its start-up checks would judge defaults)."""

    config: Configuration
    positions: tuple[int, ...]
    server: bool


def valid_parts(data: Any, registry: Registry) -> ValidParts | None:
    """The :class:`ValidParts` of ``data`` (a document :func:`parse_config` refused), or ``None``
    when it is not even a mapping."""
    if not isinstance(data, dict):
        return None

    def section(model: type[_M], key: str) -> _M | None:
        try:
            return model.model_validate(data.get(key) or {})
        except pydantic.ValidationError:
            return None

    server = section(ServerConfig, "server")
    cluster = (section(ClusterConfig, "cluster") or ClusterConfig()) if isinstance(data.get("cluster"), dict) else None
    raw = data.get("profiles") if isinstance(data.get("profiles"), list) else []
    profiles: list[Profile] = []
    positions: list[int] = []
    for i, item in enumerate(raw or []):
        try:
            profile = Profile.model_validate(item)
        except pydantic.ValidationError:
            continue
        if not _validate_profile(i, profile, registry, {}, cluster is not None):
            profiles.append(profile)
            positions.append(i)
    config = Configuration.model_construct(
        api_version="config.scheduler-extender.dev/v1alpha1",
        kind="ExtenderConfiguration",
        server=server or ServerConfig(),
        cluster=cluster,
        diagnostics=section(DiagnosticsConfig, "diagnostics") or DiagnosticsConfig(),
        scheduling=section(SchedulingConfig, "scheduling") or SchedulingConfig(),
        profiles=profiles,
    )
    return ValidParts(config, tuple(positions), server is not None)


def validate_semantics(config: Configuration, registry: Registry) -> list[str]:
    """Checks beyond the schema; returns problems as ``field.path: message``."""
    problems: list[str] = []
    names = [p.name for p in config.profiles]
    for i, name in enumerate(names):
        if name in names[:i]:
            problems.append(f"profiles[{i}].name: duplicate profile name {name!r}")
    if config.server.default_profile and config.server.default_profile not in names:
        name = config.server.default_profile
        problems.append(f"server.defaultProfile: no profile is named {name!r}{did_you_mean(name, names)}")
    scheduler_names = [p.scheduler_name for p in config.profiles if p.scheduler_name]
    for name in {n for n in scheduler_names if scheduler_names.count(n) > 1}:
        problems.append(f"profiles: schedulerName {name!r} is used by more than one profile")
    for i, profile in enumerate(config.profiles):
        if profile.scheduler_name and config.cluster is None:
            problems.append(f"profiles[{i}].schedulerName: scheduling needs cluster state: add a `cluster:` section")
        if profile.scheduler_name and not effective_points(profile, registry)["bind"]:
            problems.append(
                f"profiles[{i}].schedulerName: scheduling needs a bind plugin (plugins.bind: DefaultBinder)"
            )
    binders = [i for i, p in enumerate(config.profiles) if "bind" in p.extender.verbs]
    if len(binders) > 1:
        problems.append(
            f"profiles: found {len(binders)} profiles serving bind ({', '.join(names[i] for i in binders)}); "
            "only one extender can implement bind"
        )
    seen_resources: dict[str, str] = {}
    for i, profile in enumerate(config.profiles):
        problems += _validate_profile(i, profile, registry, seen_resources, config.cluster is not None)
    return problems


def _validate_profile(
    i: int, profile: Profile, registry: Registry, seen_resources: dict[str, str], has_cluster: bool
) -> list[str]:
    problems: list[str] = []
    at = f"profiles[{i}]"
    ext = profile.extender
    if "prioritize" in ext.verbs and ext.weight <= 0:
        problems.append(f"{at}.extender.weight: must have a positive weight applied to it")
    for j, res in enumerate(ext.managed_resources):
        where = f"{at}.extender.managedResources[{j}].name"
        if not is_extended_resource_name(res.name):
            problems.append(f"{where}: {res.name!r} is not a valid extended resource name")
        elif res.name in seen_resources:
            problems.append(f"{where}: duplicate extender managed resource name {res.name!r}")
        else:
            seen_resources[res.name] = at
    # each point's own plugins, then multiPoint's (point None)
    rows: list[tuple[str, ExtensionPoint | None, list[PluginRef]]] = [
        (point.key, point, profile.plugins.of(point.attr).enabled) for point in EXTENSION_POINTS
    ]
    rows.append((MULTI_POINT_KEY, None, profile.plugins.multi_point.enabled))
    if ext.managed_resources:
        hidden = needs_every_pod(profile, registry)
        if hidden:
            managed = ", ".join(r.name for r in ext.managed_resources)
            problems.append(
                f"{at}.extender.managedResources: kube-scheduler calls this extender only for pods that request "
                f"or limit {managed} (HTTPExtender.IsInterested), so {', '.join(hidden)} would never see the "
                "other pods: move them, and bind, to a second profile without managedResources (a second "
                "extenders: entry), and keep here only what concerns the pods that request those resources "
                "(a NodeResourcePool of them)"
            )
    effective = effective_points(profile, registry)
    for verb, attr in (("filter", "filter"), ("prioritize", "score"), ("bind", "bind")):
        if verb in ext.verbs and not effective[attr]:
            problems.append(f"{at}.plugins.{attr}: the profile serves {verb} but enables no {attr} plugin")
    problems += _audit_problems(at, profile, rows, effective)
    enabled = set(enabled_plugins(profile))
    for key, point, refs in rows:
        seen: set[str] = set()
        for j, ref in enumerate(refs):
            where = f"{at}.plugins.{key}[{j}]"
            if ref.name in seen:
                problems.append(f"{where}.name: {ref.name} is enabled twice at {key}")
            seen.add(ref.name)
            if ref.weight is not None and point not in (POINTS["score"], None):
                problems.append(f"{where}.weight: only score plugins take a weight")
            if point is not None and not point.failure_policy and ref.failure_policy == "Ignore":
                problems.append(f"{where}.failurePolicy: {_no_failure_policy(point)}")
            if ref.weight is not None and ref.weight <= 0:
                problems.append(f"{where}.weight: must be > 0")
            entry = registry.get(ref.name)
            if entry is None:
                if ref.name in registry.load_errors:
                    problems.append(f"{where}.name: plugin {ref.name} failed to load: {registry.load_errors[ref.name]}")
                else:
                    problems.append(
                        f"{where}.name: unknown plugin {ref.name!r}{did_you_mean(ref.name, registry.names())} "
                        f"(registered: {', '.join(registry.names())})"
                    )
            elif entry.needs_cluster and not has_cluster:
                problems.append(
                    f"{where}.name: plugin {ref.name} needs cluster state: add a `cluster:` section "
                    "(credentials default to in-cluster, then ~/.kube/config)"
                )
    configs: set[str] = set()
    for j, pc in enumerate(profile.plugin_config):
        where = f"{at}.pluginConfig[{j}]"
        if pc.name in configs:
            problems.append(f"{where}.name: duplicate pluginConfig for {pc.name}")
        configs.add(pc.name)
        if pc.name not in enabled:
            problems.append(
                f"{where}.name: {pc.name} is not enabled at any extension point of this profile"
                f"{did_you_mean(pc.name, enabled)}"
            )
            continue
        entry = registry.get(pc.name)
        if entry is None:
            continue
        if entry.args is None:
            if pc.args:
                problems.append(f"{where}.args: plugin {pc.name} takes no args")
            continue
        try:
            entry.args.model_validate(pc.args)
        except pydantic.ValidationError as exc:
            problems += _pydantic_problems(exc, f"{where}.args")
    for name in sorted(enabled - configs):  # enabled without pluginConfig: the args' defaults must do
        entry = registry.get(name)
        if entry is not None and entry.args is not None:
            try:
                entry.args.model_validate({})
            except pydantic.ValidationError as exc:
                problems += [
                    f"{p} (no pluginConfig for {name}: add one with these args)"
                    for p in _pydantic_problems(exc, f"{at}.pluginConfig[{name}].args")
                ]
    for key, point, refs in rows:  # each plugin must implement the points it is enabled at
        for j, ref in enumerate(refs):
            entry = registry.get(ref.name)
            if entry is None:
                continue
            if point is not None and implements(entry.factory, point) is False:  # None: the build checks
                problems.append(f"{at}.plugins.{key}[{j}].name: plugin {ref.name} does not implement {point.attr}")
            elif point is None and ref.failure_policy == "Ignore":
                known = [implements(entry.factory, p) for p in EXTENSION_POINTS if p.failure_policy]
                if not any(known) and None not in known:
                    problems.append(
                        f"{at}.plugins.{key}[{j}].failurePolicy: Ignore has no meaning at any point {ref.name} "
                        f"implements: failurePolicy applies at {_policy_points()}"
                    )
    return problems


def _audit_problems(
    at: str,
    profile: Profile,
    rows: list[tuple[str, ExtensionPoint | None, list[PluginRef]]],
    effective: dict[str, list[PluginRef]],
) -> list[str]:
    """``enforcement: audit`` where it cannot hold: in a standalone scheduler's profile (its
    plugins place pods: the shadow scheduler tries a whole profile without acting), on a disabled
    entry, or on every binder of a profile serving ``bind``; ``auditEvents`` in a standalone
    scheduler's profile."""
    problems: list[str] = []
    if profile.scheduler_name:
        for key, _point, refs in rows:
            for j, ref in enumerate(refs):
                if ref.audits:
                    problems.append(
                        f"{at}.plugins.{key}[{j}].enforcement: audit applies to extender profiles only: a standalone "
                        f"scheduler's plugins place the pods of schedulerName {profile.scheduler_name}, so {ref.name} "
                        "cannot run without acting; to see what this profile would do beside a live kube-scheduler, "
                        "run the shadow scheduler (python -m app shadow --config FILE)"
                    )
        if profile.audit_events:
            problems.append(
                f"{at}.auditEvents: applies to extender profiles only (no plugin of a standalone "
                "scheduler's profile audits)"
            )
    for point in [*EXTENSION_POINTS, None]:
        spec = profile.plugins.of(point.attr if point is not None else "multi_point")
        key = point.key if point is not None else MULTI_POINT_KEY
        for j, ref in enumerate(spec.disabled):
            if ref.audits:
                problems.append(f"{at}.plugins.{key}.disabled[{j}].enforcement: audit applies to enabled plugins only")
    audited = set(profile.audited())
    binders = effective["bind"]
    if "bind" in profile.extender.verbs and binders and all(ref.name in audited for ref in binders):
        problems.append(
            f"{at}.plugins.bind: the profile serves bind but every bind plugin is audited (enforcement: audit), "
            "so no bind would bind: enforce a binder, or remove bind from the profile's verbs and bindVerb from "
            "kube-scheduler's extender entry"
        )
    return problems


def _policy_points() -> str:
    return ", ".join(p.key for p in EXTENSION_POINTS if p.failure_policy)


def _no_failure_policy(point: ExtensionPoint) -> str:
    """Why ``failurePolicy: Ignore`` at ``point`` is refused: what an error there does (``Fail``,
    the default, is accepted: ``render`` writes it back for every plugin)."""
    does = {
        "pre_enqueue": "a PreEnqueue plugin's error keeps the pod out of the active queue",
        "queue_sort": "a QueueSort plugin only orders the queue",
        "post_filter": "a PostFilter plugin's error ends the pod's PostFilter",
        "post_bind": "a PostBind plugin's error is logged and the pod stays bound",
    }.get(point.attr, f"a {point.name} plugin's error always fails the pod (Unreserve follows)")
    return f"Ignore has no meaning at {point.key}: {does}; failurePolicy applies at {_policy_points()}"


def needs_every_pod(profile: Profile, registry: Registry) -> list[str]:
    """The enabled plugins of ``profile`` that must see every pod (``PluginEntry.sees_every_pod``),
    which ``managedResources`` would hide pods from."""
    out = []
    for name in sorted(enabled_plugins(profile)):
        entry = registry.get(name)
        if entry is not None and entry.sees_every_pod:
            out.append(name)
    return out

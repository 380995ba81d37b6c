"""kube-scheduler's ``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1``): a strict
decoder and the upstream validation rules that concern extenders.

Decoding follows kube-scheduler's loader (``cmd/kube-scheduler/app/options/configfile.go``, the
scheme's strict serializer over ``sigs.k8s.io/yaml``): keys are case-sensitive, unknown and
duplicated keys are errors, and values must have the Go field's JSON type (a quoted number into
``weight`` fails, as does ``1.5``). The models mirror ``k8s.io/kube-scheduler/config/v1/types.go``
and ``k8s.io/component-base/config/v1alpha1`` field by field; plugin ``args`` stay opaque
(out-of-tree args are not decoded upstream either).

Validation (:func:`validate`) ports ``ValidateKubeSchedulerConfiguration`` in
``pkg/scheduler/apis/config/validation/validation.go`` for what can be wrong in a file after
defaulting: parallelism, percentages, backoff, scheduler names, duplicate pluginConfig, and all of
``validateExtenders`` (pkg/scheduler/apis/config/validation/validation.go), with upstream's ``field.Error`` wording.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any, Literal

import pydantic
import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.framework.errors import SchedulerExtenderError
from app.framework.profile import parse_duration
from app.framework.resources import is_extended_resource_name

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
#: kube-scheduler's DefaultExtenderTimeout (pkg/scheduler/extender.go): httpTimeout 0 or unset.
DEFAULT_HTTP_TIMEOUT_SECONDS = 5.0
DEFAULT_SCHEDULER_NAME = "default-scheduler"

Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]


class KubeConfigDecodeError(SchedulerExtenderError, ValueError):
    """The file is not a decodable ``KubeSchedulerConfiguration``; ``problems`` lists each as
    ``field.path: message``."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("strict decoding error: " + "; ".join(problems))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=False)


def _duration(value: str | None) -> str | None:
    if value is not None:
        parse_duration(value)
    return value


def _base64(value: str | None) -> str | None:
    if value is not None:
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError("illegal base64 data (a []byte field is base64 in JSON and YAML)") from exc
    return value


class LeaderElection(_Strict):
    """``componentbaseconfigv1alpha1.LeaderElectionConfiguration``."""

    leader_elect: bool | None = Field(None, alias="leaderElect")
    lease_duration: str | None = Field(None, alias="leaseDuration")
    renew_deadline: str | None = Field(None, alias="renewDeadline")
    retry_period: str | None = Field(None, alias="retryPeriod")
    resource_lock: str | None = Field(None, alias="resourceLock")
    resource_name: str | None = Field(None, alias="resourceName")
    resource_namespace: str | None = Field(None, alias="resourceNamespace")

    _durations = field_validator("lease_duration", "renew_deadline", "retry_period")(_duration)


class ClientConnection(_Strict):
    """``componentbaseconfigv1alpha1.ClientConnectionConfiguration``."""

    kubeconfig: str | None = None
    accept_content_types: str | None = Field(None, alias="acceptContentTypes")
    content_type: str | None = Field(None, alias="contentType")
    qps: float | None = None
    burst: Int32 | None = None


class PluginRef(_Strict):
    """``Plugin``: a name and, for Score, a weight."""

    name: str
    weight: Int32 | None = None


class PluginSet(_Strict):
    """``PluginSet``: enabled and disabled plugins of one extension point."""

    enabled: list[PluginRef] | None = None
    disabled: list[PluginRef] | None = None


class Plugins(_Strict):
    """``Plugins``: a :class:`PluginSet` per extension point (the placement and podGroup points
    are the newest releases'; an older kube-scheduler rejects them as unknown)."""

    pre_enqueue: PluginSet | None = Field(None, alias="preEnqueue")
    queue_sort: PluginSet | None = Field(None, alias="queueSort")
    pre_filter: PluginSet | None = Field(None, alias="preFilter")
    filter: PluginSet | None = None
    post_filter: PluginSet | None = Field(None, alias="postFilter")
    pre_score: PluginSet | None = Field(None, alias="preScore")
    score: PluginSet | None = None
    reserve: PluginSet | None = None
    permit: PluginSet | None = None
    pre_bind: PluginSet | None = Field(None, alias="preBind")
    bind: PluginSet | None = None
    post_bind: PluginSet | None = Field(None, alias="postBind")
    multi_point: PluginSet | None = Field(None, alias="multiPoint")
    placement_generate: PluginSet | None = Field(None, alias="placementGenerate")
    placement_score: PluginSet | None = Field(None, alias="placementScore")
    placement_feasible: PluginSet | None = Field(None, alias="placementFeasible")
    pod_group_post_filter: PluginSet | None = Field(None, alias="podGroupPostFilter")


class PluginConfig(_Strict):
    """``PluginConfig``: a plugin's args (kept as decoded: args are the plugin's business)."""

    name: str
    args: dict[str, Any] | None = None


class Profile(_Strict):
    """``KubeSchedulerProfile``."""

    scheduler_name: str | None = Field(None, alias="schedulerName")
    percentage_of_nodes_to_score: Int32 | None = Field(None, alias="percentageOfNodesToScore")
    percentage_of_placements_to_score: Int32 | None = Field(None, alias="percentageOfPlacementsToScore")
    plugins: Plugins | None = None
    plugin_config: list[PluginConfig] | None = Field(None, alias="pluginConfig")


class ManagedResource(_Strict):
    """``ExtenderManagedResource``."""

    name: str
    ignored_by_scheduler: bool = Field(False, alias="ignoredByScheduler")


class ExtenderTLSConfig(_Strict):
    """``ExtenderTLSConfig``; ``*Data`` fields are base64 (Go ``[]byte``)."""

    insecure: bool = False
    server_name: str = Field("", alias="serverName")
    cert_file: str = Field("", alias="certFile")
    key_file: str = Field("", alias="keyFile")
    ca_file: str = Field("", alias="caFile")
    cert_data: str | None = Field(None, alias="certData")
    key_data: str | None = Field(None, alias="keyData")
    ca_data: str | None = Field(None, alias="caData")

    _data = field_validator("cert_data", "key_data", "ca_data")(_base64)

    @property
    def has_ca(self) -> bool:
        """A CA is given (``caFile`` or ``caData``): the server certificate is verified."""
        return bool(self.ca_file or self.ca_data)

    @property
    def has_client_cert(self) -> bool:
        """A client certificate and key are given (file or data)."""
        return bool((self.cert_file or self.cert_data) and (self.key_file or self.key_data))


class Extender(_Strict):
    """``Extender``: one entry of ``extenders:``. Empty verbs mean "not provided"."""

    url_prefix: str = Field("", alias="urlPrefix")  # required in spirit, but upstream decodes "" and never checks
    filter_verb: str = Field("", alias="filterVerb")
    preempt_verb: str = Field("", alias="preemptVerb")
    prioritize_verb: str = Field("", alias="prioritizeVerb")
    weight: Int64 = 0
    bind_verb: str = Field("", alias="bindVerb")
    enable_https: bool = Field(False, alias="enableHTTPS")
    tls_config: ExtenderTLSConfig | None = Field(None, alias="tlsConfig")
    http_timeout: str | None = Field(None, alias="httpTimeout")
    node_cache_capable: bool = Field(False, alias="nodeCacheCapable")
    managed_resources: list[ManagedResource] | None = Field(None, alias="managedResources")
    ignorable: bool = False

    _timeout = field_validator("http_timeout")(_duration)

    @property
    def verbs(self) -> dict[str, str]:
        """``{"filter": filterVerb, ...}`` for the verbs that are provided (non-empty)."""
        pairs = (
            ("filter", self.filter_verb),
            ("prioritize", self.prioritize_verb),
            ("preempt", self.preempt_verb),
            ("bind", self.bind_verb),
        )
        return {kind: verb for kind, verb in pairs if verb}

    @property
    def http_timeout_seconds(self) -> float:
        """``httpTimeout`` in seconds, with kube-scheduler's 5s for 0 or unset."""
        seconds = parse_duration(self.http_timeout) if self.http_timeout else 0.0
        return seconds or DEFAULT_HTTP_TIMEOUT_SECONDS


class KubeSchedulerConfiguration(_Strict):
    """``KubeSchedulerConfiguration`` v1, including the inlined ``DebuggingConfiguration``."""

    api_version: Literal["kubescheduler.config.k8s.io/v1"] = Field(alias="apiVersion")
    kind: Literal["KubeSchedulerConfiguration"]
    parallelism: Int32 | None = None
    leader_election: LeaderElection | None = Field(None, alias="leaderElection")
    client_connection: ClientConnection | None = Field(None, alias="clientConnection")
    enable_profiling: bool | None = Field(None, alias="enableProfiling")
    enable_contention_profiling: bool | None = Field(None, alias="enableContentionProfiling")
    percentage_of_nodes_to_score: Int32 | None = Field(None, alias="percentageOfNodesToScore")
    percentage_of_placements_to_score: Int32 | None = Field(None, alias="percentageOfPlacementsToScore")
    pod_initial_backoff_seconds: Int64 | None = Field(None, alias="podInitialBackoffSeconds")
    pod_max_backoff_seconds: Int64 | None = Field(None, alias="podMaxBackoffSeconds")
    profiles: list[Profile] | None = None
    extenders: list[Extender] | None = None
    delay_cache_until_active: bool = Field(False, alias="delayCacheUntilActive")


class _StrictLoader(yaml.SafeLoader):
    """YAML loader refusing duplicate keys (``yaml.YAMLToJSONStrict``)."""


def _mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            line = key_node.start_mark.line + 1
            raise KubeConfigDecodeError([f'line {line}: key "{key}" already set in map'])
        out[key] = loader.construct_object(value_node, deep=True)
    return out


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def _known_aliases(model: type[BaseModel]) -> dict[str, str]:
    return {(f.alias or n).lower(): (f.alias or n) for n, f in model.model_fields.items()}


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    model: Any = KubeSchedulerConfiguration
    for part in loc:
        if isinstance(part, int):
            continue
        fields = {(f.alias or n): f for n, f in model.model_fields.items()}
        if part not in fields:
            return None
        annotation = fields[part].annotation
        candidates = [annotation, *getattr(annotation, "__args__", ())]
        nested: Any = None
        for c in candidates:
            for inner in (c, *getattr(c, "__args__", ())):
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    nested = inner
        if nested is None:
            return None
        model = nested
    return model  # type: ignore[no-any-return]


def _path(loc: tuple[int | str, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


def decode(text: str) -> KubeSchedulerConfiguration:
    """Decode a ``KubeSchedulerConfiguration`` YAML (or JSON) document strictly.

    Raises :class:`KubeConfigDecodeError` with every problem (``field.path: message``); a key that
    differs from a field only in letter case (``enableHttps``) names the right spelling.
    """
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        raise KubeConfigDecodeError([f"not valid YAML: {exc}"]) from exc
    if not isinstance(data, dict):
        raise KubeConfigDecodeError(["the document must be a mapping with apiVersion and kind"])
    version = data.get("apiVersion")
    if data.get("kind") == KIND and isinstance(version, str) and version != API_VERSION:
        raise KubeConfigDecodeError(
            [
                f"apiVersion: {version!r} is not supported: kube-scheduler 1.25+ reads {API_VERSION!r} "
                "(v1beta2 was removed in 1.28, v1beta3 in 1.29)"
            ]
        )
    try:
        return KubeSchedulerConfiguration.model_validate(data)
    except pydantic.ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            loc = tuple(err["loc"])
            path = _path(loc)
            if err["type"] == "extra_forbidden":
                parent = _model_at(loc[:-1])
                known = _known_aliases(parent) if parent is not None else {}
                hint = known.get(str(loc[-1]).lower())
                msg = f'unknown field "{path}"'
                if hint:
                    msg += f' (did you mean "{hint}"? keys are case-sensitive in {API_VERSION})'
                problems.append(msg)
            else:
                problems.append(f"{path}: {err['msg']}")
        raise KubeConfigDecodeError(problems) from exc


def validate(config: KubeSchedulerConfiguration) -> list[str]:
    """Upstream ``ValidateKubeSchedulerConfiguration`` rules that a decoded file can break, after
    v1 defaulting (pkg/scheduler/apis/config/v1/defaults.go: a lone profile without a
    ``schedulerName`` is ``default-scheduler``). Returns ``field.Error`` strings; empty when valid.
    """
    errs: list[str] = []
    if config.parallelism is not None and config.parallelism <= 0:
        errs.append(f"parallelism: Invalid value: {config.parallelism}: should be an integer value greater than zero")
    errs += _percentage("percentageOfNodesToScore", config.percentage_of_nodes_to_score)
    initial = config.pod_initial_backoff_seconds
    if initial is not None and initial <= 0:
        errs.append(f"podInitialBackoffSeconds: Invalid value: {initial}: must be greater than 0")
    maximum = config.pod_max_backoff_seconds
    if maximum is not None and maximum < (initial if initial is not None else 1):
        errs.append(
            f"podMaxBackoffSeconds: Invalid value: {maximum}: must be greater than or equal to PodInitialBackoffSeconds"
        )
    profiles = config.profiles or []
    names: set[str] = set()
    for i, profile in enumerate(profiles):
        at = f"profiles[{i}]"
        name = profile.scheduler_name
        if name is None and len(profiles) == 1:
            name = DEFAULT_SCHEDULER_NAME
        if not name:
            errs.append(f"{at}.schedulerName: Required value")
        elif name in names:
            errs.append(f'{at}.schedulerName: Duplicate value: "{name}"')
        else:
            names.add(name)
        errs += _percentage(f"{at}.percentageOfNodesToScore", profile.percentage_of_nodes_to_score)
        seen: set[str] = set()
        for j, pc in enumerate(profile.plugin_config or []):
            if pc.name in seen:
                errs.append(f'{at}.pluginConfig[{j}]: Duplicate value: "{pc.name}"')
            seen.add(pc.name)
    return errs + validate_extenders(config.extenders or [])


def _percentage(path: str, value: int | None) -> list[str]:
    if value is not None and not 0 <= value <= 100:
        return [f"{path}: Invalid value: {value}: not in valid range [0-100]"]
    return []


def validate_extenders(extenders: list[Extender]) -> list[str]:
    """``validateExtenders`` (pkg/scheduler/apis/config/validation/validation.go), messages as
    upstream: a positive weight with a prioritize verb, at most one binder, managed resources that
    are extended resource names and unique across all extenders.
    """
    errs: list[str] = []
    binders = 0
    seen: set[str] = set()
    for i, ext in enumerate(extenders):
        if ext.prioritize_verb and ext.weight <= 0:
            errs.append(
                f"extenders[{i}].weight: Invalid value: {ext.weight}: must have a positive weight applied to it"
            )
        if ext.bind_verb:
            binders += 1
        for j, res in enumerate(ext.managed_resources or []):
            at = f"extenders[{i}].managedResources[{j}].name"
            if not is_extended_resource_name(res.name):
                errs.append(f'{at}: Invalid value: "{res.name}": is an invalid extended resource name')
            if res.name in seen:
                errs.append(f'{at}: Invalid value: "{res.name}": duplicate extender managed resource name')
            seen.add(res.name)
    if binders > 1:
        errs.append(
            f'extenders: Invalid value: "found {binders} extenders implementing bind": '
            "only one extender can implement bind"
        )
    return errs

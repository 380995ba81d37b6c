"""Profile models: which plugins run at which extension point, and the extender entry's settings.

A profile is what one ``extenders:`` entry of kube-scheduler's ``KubeSchedulerConfiguration``
talks to (docs/configuration.md). Keys are camelCase and matched case-sensitively, like
kube-scheduler's own component config since v1beta1; unknown keys are errors.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)
from pydantic.alias_generators import to_camel

Verb = Literal["filter", "prioritize", "preempt", "bind"]
FailurePolicy = Literal["Fail", "Ignore"]
#: A plugin entry's ``enforcement``: ``enforce`` (its verdicts decide) or ``audit`` (recorded only)
Enforcement = Literal["audit", "enforce"]
VERBS: tuple[Verb, ...] = ("filter", "prioritize", "preempt", "bind")
_DEFAULT_VERBS: tuple[Verb, ...] = ("filter", "prioritize")

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Parse a Go ``time.Duration`` string (``"5s"``, ``"1m30s"``, ``"-1.5h"``, ``"0"``) into seconds.

    Mirrors ``time.ParseDuration``, sign included (callers that need a positive value check it).
    Raises ``ValueError`` on anything else, including a bare number other than ``0``.
    """
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return 0.0
    pos, total = 0, 0.0
    while pos < len(body):
        match = _DURATION_PART.match(body, pos)
        if match is None:
            break
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    if not body or pos != len(body):
        raise ValueError(f"invalid duration {text!r}: use a Go duration such as '5s', '1m30s' or '500ms'")
    return -total if text.startswith("-") else total


def _duration_text(value: Any) -> Any:
    if isinstance(value, str):
        return value
    raise ValueError(f'expected a duration such as "5s" or "1m30s" (a Go duration, quoted), got {value!r}')


#: A Go ``time.Duration`` string in the configuration (``"5s"``); a bare number is refused with
#: the expected form (YAML reads ``5`` as an integer).
Duration = Annotated[str, BeforeValidator(_duration_text)]


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=False, frozen=True, validate_default=True
    )


class PluginRef(_Model):
    """A plugin enabled at one extension point.

    ``weight`` (score only, > 0) weighs the plugin in the profile's weighted mean of scores.
    ``failurePolicy``: what an ``ERROR`` from this plugin does. ``Fail`` (fail closed, the default):
    filter answers ``Error`` and prioritize answers HTTP 500, so kube-scheduler applies the
    extender's ``ignorable`` setting. ``Ignore`` (fail open): the plugin is skipped for that node
    (filter) or for that request (preFilter, preScore, score, preemption, bind), and the others
    decide. The other points have no policy (an error at Reserve, Permit or PreBind fails the pod;
    one at PostBind is logged): ``Ignore`` written there is refused.

    ``enforcement`` (extender profiles only): ``enforce`` (the default) or ``audit``. An audited
    plugin is audited at every point of the profile (one entry saying ``audit`` is enough): its
    PreFilter and Filter run beside the profile, their verdicts recorded and never applied; its
    PreScore, Score, Reserve, Permit, PreBind, Bind, PostBind and preemption do not run. The
    answers are those of the profile without the plugin (docs/try-a-policy.md).
    """

    name: str = Field(min_length=1)
    weight: int | None = None
    failure_policy: FailurePolicy = "Fail"
    enforcement: Enforcement = "enforce"

    @property
    def audits(self) -> bool:
        """``enforcement: audit``."""
        return self.enforcement == "audit"

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> Any:
        # written back as configured: enforcement only when it audits
        dumped = handler(self)
        if isinstance(dumped, dict) and not self.audits:
            dumped.pop("enforcement", None)
        return dumped


class PluginSet(_Model):
    """kube-scheduler's ``PluginSet``: the plugins ``enabled`` at a point, in order, and those
    ``disabled`` there (a default of the profile's ``multiPoint``, or every default with
    ``name: "*"``). A bare list is read as ``enabled`` (this service's shorter form)."""

    enabled: list[PluginRef] = Field(default_factory=list)
    disabled: list[PluginRef] = Field(default_factory=list)

    def names(self) -> list[str]:
        """The enabled plugins' names, in order."""
        return [ref.name for ref in self.enabled]

    def is_disabled(self, name: str) -> bool:
        """Whether ``name`` (or every plugin, ``*``) is disabled here."""
        return any(ref.name in (name, "*") for ref in self.disabled)

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> Any:
        # written back as configured: a bare list when nothing is disabled
        dumped = handler(self)
        if not self.disabled and isinstance(dumped, dict):
            return dumped.get("enabled", [])
        return dumped


def _plugin_set(value: Any) -> Any:
    return {"enabled": value} if isinstance(value, list) else value


#: A point's plugins: a ``PluginSet`` or, shorter, the list of its enabled plugins.
PluginSetField = Annotated[PluginSet, BeforeValidator(_plugin_set)]


class Plugins(_Model):
    """Plugins per extension point, in the order they run, in the shape of kube-scheduler's
    ``Plugins`` (pkg/scheduler/apis/config/types.go): each point is a :class:`PluginSet`
    (``{enabled: [...], disabled: [...]}``) or the list of its enabled plugins, one field per row
    of :data:`app.framework.points.EXTENSION_POINTS`.

    ``multiPoint`` enables a plugin at every point it implements (``expandMultiPointPlugins``,
    pkg/scheduler/framework/runtime/framework.go). A profile with ``schedulerName`` starts from
    kube-scheduler's default ``multiPoint`` (:data:`app.framework.defaults.DEFAULT_PLUGINS`), which
    its own ``multiPoint`` merges into as kube-scheduler's ``mergePlugins`` does.

    ``preFilter`` also runs the PreFilter of the ``filter`` plugins that implement it.
    ``preScore`` also runs the PreScore of the ``score`` plugins that implement it.
    ``reserve``, ``permit``, ``preBind`` and ``postBind`` also take every plugin of the profile
    that implements them (a ``filter`` plugin's Reserve runs at bind).
    ``preemption`` is the extender's ``preempt`` verb.
    A point's ``disabled`` removes any plugin it would take (``*``: all but its own ``enabled``):
    this service's rule (:func:`app.framework.points.implied`) beside ``multiPoint``'s.
    """

    # the fields in the order a configuration is written back (render mounts it): the points
    # configurable before PreFilter, PreScore, PreBind and PostBind were keep their places
    multi_point: PluginSetField = Field(default_factory=PluginSet)
    queue_sort: PluginSetField = Field(default_factory=PluginSet)
    pre_enqueue: PluginSetField = Field(default_factory=PluginSet)
    pre_filter: PluginSetField = Field(default_factory=PluginSet)
    filter: PluginSetField = Field(default_factory=PluginSet)
    post_filter: PluginSetField = Field(default_factory=PluginSet)
    pre_score: PluginSetField = Field(default_factory=PluginSet)
    score: PluginSetField = Field(default_factory=PluginSet)
    reserve: PluginSetField = Field(default_factory=PluginSet)
    permit: PluginSetField = Field(default_factory=PluginSet)
    pre_bind: PluginSetField = Field(default_factory=PluginSet)
    preemption: PluginSetField = Field(default_factory=PluginSet)
    bind: PluginSetField = Field(default_factory=PluginSet)
    post_bind: PluginSetField = Field(default_factory=PluginSet)

    def of(self, attr: str) -> PluginSet:
        """The PluginSet of the point ``attr`` (an ``ExtensionPoint.attr``, or ``multi_point``)."""
        spec: PluginSet = getattr(self, attr)
        return spec

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> Any:
        # only the points configured are written back (the mounted configuration stays as given)
        dumped = handler(self)
        if isinstance(dumped, dict):
            return {k: v for k, v in dumped.items() if v not in ([], {"enabled": [], "disabled": []})}
        return dumped


class PluginConfig(_Model):
    """Arguments of one plugin, validated by the plugin's own args model (``<Name>Args``)."""

    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class ManagedResource(_Model):
    """``extenders[].managedResources[]``: an extended resource this extender manages.

    With ``ignoredByScheduler: true`` kube-scheduler's NodeResourcesFit does not check it and this
    extender must.
    """

    name: str
    ignored_by_scheduler: bool = False


class ExtenderSettings(_Model):
    """The fields of this profile's ``extenders:`` entry in ``KubeSchedulerConfiguration``.

    ``verbs``: the verbs this profile serves (and the rendered entry names). ``weight``: the
    extender's weight (kube-scheduler multiplies our 0..10 score by ``weight`` x 10).
    ``httpTimeout``: a Go duration; kube-scheduler's default is 5s.
    """

    verbs: list[Verb] = Field(default_factory=lambda: list(_DEFAULT_VERBS), min_length=1)
    weight: int = 1
    node_cache_capable: bool = False
    managed_resources: list[ManagedResource] = Field(default_factory=list)
    ignorable: bool = False
    http_timeout: Duration = "5s"

    @field_validator("verbs")
    @classmethod
    def _unique_verbs(cls, verbs: list[Verb]) -> list[Verb]:
        if len(set(verbs)) != len(verbs):
            raise ValueError("verbs must not repeat")
        return verbs

    @field_validator("http_timeout")
    @classmethod
    def _duration(cls, value: str) -> str:
        if parse_duration(value) <= 0:
            raise ValueError("must be a positive duration")
        return value

    @property
    def http_timeout_seconds(self) -> float:
        """``httpTimeout`` in seconds."""
        return parse_duration(self.http_timeout)


class Profile(_Model):
    """One profile: served at ``/{name}/{verb}`` (and at ``/{verb}`` when it is the default).

    ``schedulerName``: with ``python -m app schedule``, this profile also schedules the pods whose
    ``spec.schedulerName`` it is, on its own (the standalone scheduler, :mod:`app.scheduler`).
    ``auditEvents`` (default ``false``): post a ``Warning`` ``AuditFailedScheduling`` Event on a
    pod that a plugin this profile audits (``enforcement: audit``) would have left with no node,
    rate-limited per pod as every pod event (``diagnostics.events``).
    """

    name: str
    scheduler_name: str | None = None
    extender: ExtenderSettings = Field(default_factory=ExtenderSettings)
    plugins: Plugins = Field(default_factory=Plugins)
    plugin_config: list[PluginConfig] = Field(default_factory=list)
    audit_events: bool = False

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> Any:
        # written back as configured: auditEvents only when set
        dumped = handler(self)
        if isinstance(dumped, dict) and not self.audit_events:
            dumped.pop("auditEvents", None)
        return dumped

    def audited(self) -> list[str]:
        """The plugins this profile audits (an entry at any point, ``multiPoint`` included, with
        ``enforcement: audit``), once each, in the order written."""
        seen: dict[str, None] = {}
        for value in self.plugins.__dict__.values():
            if isinstance(value, PluginSet):
                seen.update((ref.name, None) for ref in value.enabled if ref.audits)
        return list(seen)

    @field_validator("name")
    @classmethod
    def _dns_label(cls, name: str) -> str:
        if len(name) > 63 or not _DNS_LABEL.match(name):
            raise ValueError("must be a DNS-1123 label (lowercase letters, digits and '-', at most 63)")
        if name in VERBS or name in (
            "healthz",
            "readyz",
            "livez",
            "metrics",
            "version",
            "docs",
            "openapi.json",
        ):
            raise ValueError(f"{name!r} is reserved for a route of the service")
        return name

    @field_validator("scheduler_name")
    @classmethod
    def _scheduler_name(cls, name: str | None) -> str | None:
        if name is not None and (len(name) > 63 or not _DNS_LABEL.match(name)):
            raise ValueError("must be a DNS-1123 label (it names the scheduler's Lease too)")
        if name == "default-scheduler":
            raise ValueError("'default-scheduler' is kube-scheduler's own: choose another name")
        return name

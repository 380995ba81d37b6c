"""The root of the project's own exceptions.

Every error raised on purpose (a refusal meant for a person, not a bug) derives from this root::

    SchedulerExtenderError
    ├── ConfigError            app.config: an invalid configuration, every problem with its path
    ├── FieldError             app.config: a model validator's refusal of one field (also ValueError)
    ├── FrameworkError         app.framework.runtime: a fail-closed plugin erred
    ├── QuantityError          app.framework.resources: a malformed resource quantity (also ValueError)
    ├── ObjectDecodeError      app.framework.types: an object in a request does not decode (also ValueError)
    │   └── DecodeError        app.extender.codec: a request body is not the verb's type (HTTP 400)
    ├── APIError               app.kube.errors: an API server request failed
    │   └── ReadOnlyError      app.shadow.readonly: a call the shadow scheduler refused, not sent
    ├── KubeConfigError        app.kube.errors: no usable credentials (also RuntimeError)
    ├── RenderError            app.deploy.render: a configuration that would deploy broken
    ├── CertsError             app.deploy.certs: certificates that cannot be written
    ├── KubeConfigDecodeError  app.deploy.kubesched: a KubeSchedulerConfiguration that does not decode
    ├── ListenError            app.api.server: a socket the server cannot listen on
    ├── UnauthorizedError      app.api.delegated: credentials that do not authenticate (401)
    ├── ReviewFailedError      app.api.delegated: a SubjectAccessReview not made or nonsense (500)
    ├── ClientDisconnectedError app.api.edge: the client went away before its body ended
    ├── SelectorError          app.plugins.podtopologyspread.common: a LabelSelector upstream refuses (also ValueError)
    ├── TranslationError       app.plugins.volumes.translation: csi-translation-lib refuses a volume (also ValueError)
    ├── BinderError            app.plugins.volumes.binder: a volume binder step failed
    ├── ClaimError, BindError  app.plugins.dynamicresources: a pod's claims unusable; a PreBind write failed
    ├── LimitsError            app.plugins.volumes.node_volume_limits: counting a pod's volumes failed
    └── AllocationError        app.plugins.dynamicresources.structured (NodeAllocationError, AllocationTimeoutError)

Errors that are also ``ValueError`` or ``RuntimeError`` keep that base for callers that catch it.
"""

from __future__ import annotations


class SchedulerExtenderError(Exception):
    """The base of every error the project raises on purpose; its message is for a person."""


__all__ = ["SchedulerExtenderError"]

"""The framework runtime: a profile's plugins in one ordered list per extension point, each point
run as kube-scheduler's ``frameworkImpl`` runs it (pkg/scheduler/framework/runtime/framework.go,
v1.30), for the standalone scheduler's cycle and the extender's verbs (:mod:`app.extender.verbs`)
alike.

- :mod:`.framework`: the :class:`Framework`, built from the lists
  (:class:`~app.framework.points.PluginLists`, :func:`app.framework.build.build_framework`);
- :mod:`.filter`: PreFilter, Filter, the nominated pods' second pass, the PreFilter extensions,
  PostFilter;
- :mod:`.score`: PreScore and Score (:class:`ScoreResult`, each node's ``TotalScore``);
- :mod:`.binding`: Reserve, Permit, WaitOnPermit, PreBind, Bind, PostBind, Unreserve;
- :mod:`.failures`: what a plugin's exception or unexpected status becomes.

An ``ERROR`` status (or an exception) from a plugin follows that plugin's ``failurePolicy`` at the
points that have one (:attr:`~app.framework.points.ExtensionPoint.failure_policy`). Plugins never
import this package: what they need is in :mod:`app.framework` (the import contract
``plugins-not-runtime`` of pyproject.toml).
"""

from app.framework.runtime.failures import PLUGIN_FAILED, FrameworkError
from app.framework.runtime.filter import filter_error
from app.framework.runtime.framework import Framework
from app.framework.runtime.score import ScoreResult

__all__ = ["PLUGIN_FAILED", "Framework", "FrameworkError", "ScoreResult", "filter_error"]

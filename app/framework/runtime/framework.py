"""The :class:`Framework`: a profile's plugins, one ordered list per extension point, ready to run
(kube-scheduler's ``frameworkImpl``, pkg/scheduler/framework/runtime/framework.go, v1.36.3).

Its methods are in three modules, one per part of the cycle: :mod:`.filter` (PreFilter, Filter,
the nominated pods' second pass, the PreFilter extensions, PostFilter), :mod:`.score` (PreScore,
Score) and :mod:`.binding` (Reserve, Permit, WaitOnPermit, PreBind, Bind, PostBind, Unreserve);
:mod:`.batch` is opportunistic batching (``SignPod``, the kept ranking).
QueueSort and PreEnqueue are run by the standalone scheduler's queue (:mod:`app.scheduler.queue`)
from the lists kept here; the extender's verbs by :mod:`app.extender.verbs`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from app.framework.events import ANY_EVENT, ClusterEventWithHint
from app.framework.handle import ClusterHandle
from app.framework.interfaces import (
    BatchFilterPlugin,
    BatchNormalizeScorePlugin,
    BatchScorePlugin,
    NormalizeScorePlugin,
    Plugin,
    PreFilterExtensions,
    ReservePlugin,
)
from app.framework.nominator import PodNominator
from app.framework.points import EXTENSION_POINTS, PluginLists
from app.framework.runtime.batch import OpportunisticBatch, batchable_plugins, sign_pod
from app.framework.runtime.binding import BindingCycle
from app.framework.runtime.filter import AuditCall, FilterCall, FilterPoints
from app.framework.runtime.score import ScoreCall, ScorePoints
from app.framework.types import PodInfo
from app.framework.waiting import WaitingPods

#: A profile without plugins (the Framework's default lists)
NO_PLUGINS = PluginLists()


class Framework(FilterPoints, ScorePoints, BindingCycle):
    """A profile's plugins, ready to run: one per profile, shared by concurrent requests, holding no
    request state. It is the :class:`~app.framework.handle.Handle` its plugins are built with.

    ``plugins``: the per-point lists (:class:`~app.framework.points.PluginLists`), or a function
    building them from this framework as the plugins' handle (what
    :func:`~app.framework.build.build_framework` passes, as upstream's ``NewFramework`` builds each
    plugin with the framework it joins). ``cluster``: the cluster state (``None``:
    :data:`~app.framework.handle.NO_CLUSTER`). ``nominator``: the pods nominated to nodes (the
    standalone schedulers'). ``shared_reserve``: Reserve plugins of other profiles whose
    reservations hold cluster-wide (a live list: profiles built later add theirs); checked after
    this profile's own. ``audit``: the plugins the profile audits (``enforcement: audit``), one
    list per point as ``plugins`` (or a function returning them, called once the plugins are
    built): none of them runs in the cycle; their PreFilter and Filter run beside it
    (:meth:`~app.framework.runtime.filter.FilterPoints.audit_filter`). Raises ``ValueError`` for a
    plugin at a point it does not implement, more than one QueueSort plugin, or a Score weight not
    above 0.
    """

    def __init__(
        self,
        profile: str,
        plugins: PluginLists | Callable[[Framework], PluginLists] = NO_PLUGINS,
        *,
        http_timeout: float = 5.0,
        cluster: ClusterHandle | None = None,
        waiting_pods: WaitingPods | None = None,
        nominator: PodNominator | None = None,
        shared_reserve: Sequence[ReservePlugin] = (),
        bind_warm_up: bool = True,
        audit: PluginLists | Callable[[], PluginLists] = NO_PLUGINS,
    ) -> None:
        super().__init__(profile, http_timeout, cluster, waiting_pods, nominator)
        lists = plugins(self) if callable(plugins) else plugins
        #: the lists, one per row of :data:`~app.framework.points.EXTENSION_POINTS`
        self.lists = lists
        self.shared_reserve = shared_reserve
        #: whether this profile's binds wait out the cluster's warm-up (a Reserve of its, or a
        #: cluster-wide one, guards capacity: :attr:`~app.framework.handle.ClusterNeeds.guards_capacity`);
        #: read by the extender's ``bind`` verb
        self.bind_warm_up = bind_warm_up
        unique: dict[int, Plugin] = {}
        for point in EXTENSION_POINTS:
            for ep in lists.of(point):
                if not isinstance(ep.plugin, point.protocol):
                    raise ValueError(f"plugin {ep.name} does not implement the {point.attr} extension point")
                unique.setdefault(id(ep.plugin), ep.plugin)
        #: every plugin of the profile, once, in point order
        self.plugins = tuple(unique.values())
        if len(lists.queue_sort) > 1:
            raise ValueError("only one QueueSort plugin can be enabled")
        for ep in lists.score:
            if ep.weight <= 0:
                raise ValueError(f"score plugin {ep.name}: weight must be > 0")
        self.pre_enqueue_plugins = lists.pre_enqueue
        self.queue_sort_plugins = lists.queue_sort
        self.pre_filter_plugins = lists.pre_filter
        self.filter_plugins = lists.filter
        self.post_filter_plugins = lists.post_filter
        self.preemption_plugins = lists.preemption
        self.pre_score_plugins = lists.pre_score
        self.score_plugins = lists.score
        self.bind_plugins = lists.bind
        #: the plain plugins of the cycle after a node is chosen, in their order
        self.reserve_plugins = tuple(ep.plugin for ep in lists.reserve)  # type: ignore[misc]
        self.permit_plugins = tuple(ep.plugin for ep in lists.permit)  # type: ignore[misc]
        self.pre_bind_plugins = tuple(ep.plugin for ep in lists.pre_bind)  # type: ignore[misc]
        self.post_bind_plugins = tuple(ep.plugin for ep in lists.post_bind)  # type: ignore[misc]
        self._filters = tuple(
            FilterCall(
                ep,
                ep.plugin.filter,  # type: ignore[attr-defined]
                ep.plugin.filter_nodes if isinstance(ep.plugin, BatchFilterPlugin) else None,
            )
            for ep in lists.filter
        )
        self._scores = tuple(
            ScoreCall(
                ep,
                ep.plugin.score,  # type: ignore[attr-defined]
                ep.plugin.score_nodes if isinstance(ep.plugin, BatchScorePlugin) else None,
                ep.plugin if isinstance(ep.plugin, NormalizeScorePlugin) else None,
                ep.plugin.normalize_scores if isinstance(ep.plugin, BatchNormalizeScorePlugin) else None,
            )
            for ep in lists.score
        )
        self._extensions = tuple(
            (ep.name, ep.plugin) for ep in lists.pre_filter if isinstance(ep.plugin, PreFilterExtensions)
        )
        #: the plugins that sign pods (``batchablePlugins``), ``None`` when one of the PreFilter,
        #: Filter, PreScore or Score plugins does not (``enableSignatures`` false)
        self.batchable_plugins = batchable_plugins((lists.pre_filter, lists.filter, lists.pre_score, lists.score))
        #: opportunistic batching's kept ranking (``frameworkImpl.batch``)
        self.batch = OpportunisticBatch(self.run_filter_plugins)

        self._audit_lists(audit() if callable(audit) else audit)

    def sign_pod(self, pod: PodInfo) -> bytes | None:
        """``SignPod`` (:func:`~app.framework.runtime.batch.sign_pod`): the pod's signature or
        ``None``."""
        return sign_pod(self.batchable_plugins, pod)

    def _audit_lists(self, audit: PluginLists) -> None:
        """Keep the audited plugins' lists (:attr:`audit`, :attr:`audited`) and their calls."""
        #: the audited plugins, one list per point (none of them runs in the cycle)
        self.audit = audit
        names: dict[str, None] = {}
        for point in EXTENSION_POINTS:
            for ep in audit.of(point):
                if not isinstance(ep.plugin, point.protocol):
                    raise ValueError(f"plugin {ep.name} does not implement the {point.attr} extension point")
                names.setdefault(ep.name)
        #: the names of the audited plugins, in point order
        self.audited = tuple(names)
        pre_filters = {ep.name: ep for ep in audit.pre_filter}
        filters = {
            ep.name: FilterCall(
                ep,
                ep.plugin.filter,  # type: ignore[attr-defined]
                ep.plugin.filter_nodes if isinstance(ep.plugin, BatchFilterPlugin) else None,
            )
            for ep in audit.filter
        }
        self._audits = tuple(
            AuditCall(name, pre_filters.get(name), filters.get(name))
            for name in self.audited
            if name in pre_filters or name in filters
        )

    def events_to_register(self) -> dict[str, tuple[ClusterEventWithHint, ...]]:
        """Plugin name -> the cluster events that may make a pod it rejected schedulable, each
        with its queueing hint (``EnqueueExtensions.EventsToRegister``, the queue's
        ``queueingHintMap``; a plain event registers without a hint; a plugin that does not
        implement it is woken by every event, :data:`~app.framework.events.ANY_EVENT`, as
        upstream registers it)."""
        out: dict[str, tuple[ClusterEventWithHint, ...]] = {}
        for plugin in self.plugins:
            register = getattr(plugin, "events_to_register", None)
            events = tuple(register()) if callable(register) else (ANY_EVENT,)
            out[plugin.name] = tuple(
                e if isinstance(e, ClusterEventWithHint) else ClusterEventWithHint(e) for e in events
            )
        return out


__all__ = ["Framework"]

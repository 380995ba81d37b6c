"""PreFilter, Filter and PostFilter of :class:`~app.framework.runtime.Framework`, as
``frameworkImpl`` runs them (pkg/scheduler/framework/runtime/framework.go, v1.30):
``RunPreFilterPlugins`` with its :class:`~app.framework.types.PreFilterResult`, the Filter
plugins plugin by plugin over the nodes still passing (a batch plugin in one call),
``RunFilterPluginsWithNominatedPods``, the PreFilter extensions (``AddPod``/``RemovePod``) a
what-if updates the cycle's state with, and ``RunPostFilterPlugins``; and the audited plugins'
PreFilter and Filter beside them (:meth:`FilterPoints.audit_filter`), whose verdicts are recorded,
never applied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from app.framework.handle import Handle
from app.framework.interfaces import PreFilterExtensions
from app.framework.nominator import NOMINATING_NOOP, NominatingInfo, NominatingMode
from app.framework.points import EnabledPlugin
from app.framework.runtime.failures import describe, error_text
from app.framework.status import SUCCESS, Code, Status
from app.framework.types import CycleState, NodeInfo, ObjectDecodeError, PodInfo, PreFilterResult


class FilterCall(NamedTuple):
    """One Filter plugin as the framework calls it: its per-node ``filter`` and, when its
    implementation is a batch, ``filter_nodes`` (found once when the framework is built:
    ``isinstance`` against a runtime-checkable protocol costs microseconds)."""

    ep: EnabledPlugin
    one: Callable[[CycleState, PodInfo, NodeInfo], Status]
    batch: Callable[[CycleState, PodInfo, Sequence[NodeInfo]], Sequence[Status]] | None


class AuditCall(NamedTuple):
    """An audited plugin as :meth:`FilterPoints.audit_filter` calls it: its PreFilter and its
    Filter (either ``None`` when it does not implement the point)."""

    name: str
    pre_filter: EnabledPlugin | None
    filter: FilterCall | None


def filter_error(status: Status) -> Status:
    """A Filter verdict as ``RunFilterPlugins`` returns it: an ``ERROR`` reads ``running
    "<plugin>" filter plugin: <message>``; any other status is itself."""
    if status.code is not Code.ERROR or not status.plugin:
        return status
    return Status(Code.ERROR, (f'running "{status.plugin}" filter plugin: {status.message}',), status.plugin)


class FilterPoints(Handle):
    """The filtering half of the Framework (its base): the lists it reads are the Framework's."""

    pre_filter_plugins: tuple[EnabledPlugin, ...]
    post_filter_plugins: tuple[EnabledPlugin, ...]
    _filters: tuple[FilterCall, ...]
    _extensions: tuple[tuple[str, PreFilterExtensions], ...]
    _audits: tuple[AuditCall, ...]

    def run_pre_filter_plugins(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status, frozenset[str]]:
        """``RunPreFilterPlugins`` (pkg/scheduler/framework/runtime/framework.go, v1.36.3): each
        PreFilter in order; a ``Skip`` puts the plugin in ``state.skip_filter_plugins``. Returns
        the intersection of their results (``None``: every node), the status and the plugins whose
        result narrowed the nodes (upstream's ``pluginsWithNodes``: the scheduler's
        ``UnschedulablePlugins`` and the absent nodes' ``node(s) didn't satisfy plugin(s)``). The
        status: ``SUCCESS``; an ``UnschedulableAndUnresolvable`` at once; an ``Unschedulable``
        after every PreFilter ran (preemption may need their state); ``UnschedulableAndUnresolvable``
        ``node(s) didn't satisfy plugin(s) [A B] simultaneously`` when the results leave no node;
        an ``ERROR`` naming the plugin (its message the plugin's; an ignored one counted in
        ``state.ignored_errors``)."""
        skipped: set[str] = set()
        result: PreFilterResult | None = None
        with_nodes: list[str] = []
        rejected: Status | None = None
        try:
            for ep in self.pre_filter_plugins:
                try:
                    answer, status = ep.plugin.pre_filter(state, pod, nodes)  # type: ignore[attr-defined]
                except ObjectDecodeError:
                    raise
                except Exception as exc:
                    answer, status = None, Status.error(describe(exc))
                code = status.code
                if code is Code.SKIP:
                    skipped.add(ep.name)
                    continue
                if code is Code.UNSCHEDULABLE or code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    if not status.reasons:
                        status = Status(code, (f"rejected by {ep.name}",), reason_code=status.reason_code)
                    status = status.with_plugin(ep.name)
                    if code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                        return None, status, frozenset()
                    rejected = status
                    continue
                if code is not Code.SUCCESS:
                    if ep.ignores_errors:
                        state.ignore_error(ep.name)
                        continue
                    return None, Status(Code.ERROR, (error_text(status),), ep.name, status.reason_code), frozenset()
                if answer is not None and not answer.all_nodes():
                    with_nodes.append(ep.name)
                result = answer.merge(result) if answer is not None else result
                if result is not None and not result.all_nodes() and not result.node_names:
                    if len(with_nodes) == 1:
                        message = f"node(s) didn't satisfy plugin {with_nodes[0]}"
                    else:
                        message = f"node(s) didn't satisfy plugin(s) [{' '.join(with_nodes)}] simultaneously"
                    return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,)), frozenset(with_nodes)
        finally:
            state.skip_filter_plugins = frozenset(skipped)
        return result, rejected or SUCCESS, frozenset(with_nodes)

    def filter_statuses(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status]:
        """Each node's Filter verdict (``RunFilterPlugins`` per node), plugin by plugin over the
        nodes every earlier plugin passed (a batch plugin in one call): ``SUCCESS``, the first
        rejection (attributed to its plugin), or an ``ERROR`` with the plugin's own message and
        name (a ``failurePolicy: Ignore`` plugin's error counted in ``state.ignored_errors`` and
        passed). The plugins PreFilter skipped are not run."""
        return self.filter_verdicts(state, pod, nodes)[0]

    def filter_verdicts(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[Status], int]:
        """:meth:`filter_statuses` and the index of the first node with an ``ERROR`` (-1: none)."""
        first_error = -1
        count = len(nodes)
        statuses: list[Status] = [SUCCESS] * count
        pending: list[int] | None = None  # None: every node
        skip = state.skip_filter_plugins
        for call in self._filters:
            ep = call.ep
            if skip and ep.name in skip:
                continue
            subset = nodes if pending is None else [nodes[i] for i in pending]
            if not subset:
                break
            # the plugin's verdict on each node of subset: its batch in one call, else filter per
            # node; an exception is an ERROR (of every node of a batch that raised)
            verdicts: Sequence[Status]
            if call.batch is not None:
                try:
                    verdicts = call.batch(state, pod, subset)
                except ObjectDecodeError:
                    raise
                except Exception as exc:
                    verdicts = [Status.error(describe(exc))] * len(subset)
                if len(verdicts) != len(subset):
                    message = f"filter_nodes returned {len(verdicts)} statuses for {len(subset)} nodes"
                    verdicts = [Status.error(message)] * len(subset)
            else:
                one = call.one
                verdicts = []
                append = verdicts.append
                for node in subset:
                    try:
                        append(one(state, pod, node))
                    except ObjectDecodeError:
                        raise
                    except Exception as exc:
                        append(Status.error(describe(exc)))
            still: list[int] = []
            attributed: dict[int, Status] = {}
            for i, status in zip(range(count) if pending is None else pending, verdicts, strict=True):
                code = status.code
                if code is Code.SUCCESS:
                    still.append(i)
                elif code is Code.UNSCHEDULABLE or code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    # one attributed copy per distinct status object, not one per node
                    named = attributed.get(id(status))
                    if named is None:
                        named = status if status.reasons else Status(code, (f"rejected by {ep.name}",))
                        named = attributed[id(status)] = named.with_plugin(ep.name)
                    statuses[i] = named
                elif ep.ignores_errors:
                    state.ignore_error(ep.name)
                    still.append(i)
                else:
                    statuses[i] = Status(Code.ERROR, (error_text(status),), ep.name, status.reason_code)
                    if first_error < 0 or i < first_error:
                        first_error = i
            pending = still
        return statuses, first_error

    def audit_filter(self, snapshot: object, pod: PodInfo, nodes: Sequence[NodeInfo]) -> dict[str, list[Status]]:
        """What each audited plugin (``enforcement: audit``) would have decided of each of
        ``nodes``: plugin -> one status per node, in order: ``SUCCESS`` (it would admit the node),
        its rejection (attributed to it), or an ``ERROR`` naming it. Each plugin runs alone, on a
        cycle state of its own (``snapshot``: the cluster's, as the cycle's), so nothing it does
        reaches the enforced plugins: its PreFilter (``Skip``: every node admitted; a rejection:
        every node rejected with it; a ``PreFilterResult``: the nodes outside it rejected
        ``node(s) didn't satisfy plugin <name>``), then its Filter over the nodes left (a batch
        plugin in one call). Empty when the profile audits no PreFilter or Filter plugin."""
        out: dict[str, list[Status]] = {}
        for call in self._audits:
            out[call.name] = _audit_one(call, CycleState(snapshot), pod, nodes)
        return out

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``RunFilterPlugins`` for one node: ``SUCCESS``, the first rejection, or an ``ERROR``
        ``running "<plugin>" filter plugin: <message>``."""
        return filter_error(self.filter_statuses(state, pod, (node,))[0])

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """``RunFilterPluginsWithNominatedPods``: when pods of at least ``pod``'s priority are
        nominated to ``node`` (``pod`` itself excepted: ``addNominatedPods``), Filter first with
        them counted there (the node with them added, the cycle's state cloned and updated by the
        PreFilter extensions' ``AddPod``), and, when that passes, again on ``node`` as it is; else
        once, as it is. The first status that is no success, else ``SUCCESS``: a preemptor's room
        is not given away, and an affinity only a nominated pod satisfies does not count."""
        return self.filter_with_nominated_pods(state, pod, node, self.nominated_to_add(pod, node))

    def filter_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, added: Sequence[PodInfo]
    ) -> Status:
        """:meth:`run_filter_plugins_with_nominated_pods` with the nominated pods to count on
        ``node`` already found (:meth:`nominated_to_add`), for a caller that looked them up to
        decide how to judge the node."""
        if added:
            outcome, state_out, node_out = self._add_nominated(state, pod, node, added)
            if outcome is not None:
                return outcome
            status = self.run_filter_plugins(state_out, pod, node_out)
            if not status.is_success():
                return status
        return self.run_filter_plugins(state, pod, node)

    def nominated_to_add(self, pod: PodInfo, node: NodeInfo) -> list[PodInfo]:
        """The pods ``addNominatedPods`` counts on ``node`` for ``pod``: those nominated there with
        a priority at least ``pod``'s, ``pod`` itself excepted."""
        nominated = self.nominator.nominated_pods_for_node(node.name)
        if not nominated:
            return nominated
        priority, uid = pod.priority, pod.uid
        return [p for p in nominated if p.priority >= priority and p.uid != uid]

    def _add_nominated(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, added: Sequence[PodInfo]
    ) -> tuple[Status | None, CycleState, NodeInfo]:
        """``addNominatedPods``: the node with ``added`` counted and a clone of ``state`` their
        ``AddPod`` updated; an ``ERROR`` first when an extension failed."""
        snapshot = state.snapshot
        node_out = snapshot.with_pods(node, added) if snapshot is not None else node
        state_out = state.clone()
        for nominated in added:
            status = self.run_pre_filter_extension_add_pod(state_out, pod, nominated, node_out)
            if not status.is_success():
                return status, state, node
        return None, state_out, node_out

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, added: PodInfo, node: NodeInfo
    ) -> Status:
        """``RunPreFilterExtensionAddPod``: every PreFilter plugin with extensions (not skipped)
        updates ``state`` as if ``added`` ran on ``node``; ``ERROR`` ``running AddPod on PreFilter
        plugin "<plugin>": <message>`` when one fails."""
        return self._extend(state, pod, added, node, "AddPod")

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, removed: PodInfo, node: NodeInfo
    ) -> Status:
        """``RunPreFilterExtensionRemovePod``: as :meth:`run_pre_filter_extension_add_pod`, for
        ``removed`` no longer running on ``node``."""
        return self._extend(state, pod, removed, node, "RemovePod")

    def _extend(self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo, which: str) -> Status:
        skip = state.skip_filter_plugins
        for name, plugin in self._extensions:
            if skip and name in skip:
                continue
            try:
                if which == "AddPod":
                    status = plugin.add_pod(state, pod, other, node)
                else:
                    status = plugin.remove_pod(state, pod, other, node)
            except ObjectDecodeError:
                raise
            except Exception as exc:
                status = Status.error(describe(exc))
            if not status.is_success():
                message = f'running {which} on PreFilter plugin "{name}": {status.message or "error"}'
                return Status(Code.ERROR, (message,), name)
        return SUCCESS

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: Mapping[str, Status]
    ) -> tuple[NominatingInfo, Status]:
        """PostFilter (``RunPostFilterPlugins``), for a pod no node passed: the first plugin that
        succeeds decides (its result, as a :class:`NominatingInfo`: its nominated node); an
        ``UnschedulableAndUnresolvable`` stops with that plugin's result; an error stops with
        :data:`NOMINATING_NOOP` (nil); else ``Unschedulable`` with every plugin's reasons and the
        last result of them that is not ``NOOP`` (DefaultPreemption's clearing result when it found
        no candidate), :data:`NOMINATING_NOOP` when none."""
        reasons: list[str] = []
        rejector = ""
        result = NOMINATING_NOOP
        for ep in self.post_filter_plugins:
            try:
                nominated, status = ep.plugin.post_filter(state, pod, statuses)  # type: ignore[attr-defined]
            except Exception as exc:
                nominated, status = NOMINATING_NOOP, Status.error(describe(exc))
            info = NominatingInfo.of(nominated)
            if status.is_success():
                return info, status.with_plugin(ep.name)
            if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return info, status.with_plugin(ep.name)
            if not status.is_rejected():
                return NOMINATING_NOOP, Status(Code.ERROR, (error_text(status),), ep.name)
            if info.mode is not NominatingMode.NOOP:
                result = info
            reasons += status.reasons
            rejector = rejector or ep.name
        return result, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)


def _audit_one(call: AuditCall, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status]:
    """One audited plugin's verdicts (see :meth:`FilterPoints.audit_filter`)."""
    name = call.name
    count = len(nodes)
    statuses: list[Status] = [SUCCESS] * count
    kept: list[int] | None = None  # None: every node
    if call.pre_filter is not None:
        try:
            answer, status = call.pre_filter.plugin.pre_filter(state, pod, nodes)  # type: ignore[attr-defined]
        except ObjectDecodeError:
            raise
        except Exception as exc:
            answer, status = None, Status.error(describe(exc))
        code = status.code
        if code is Code.SKIP:
            return statuses
        if code is Code.UNSCHEDULABLE or code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            named = status if status.reasons else Status(code, (f"rejected by {name}",), reason_code=status.reason_code)
            return [named.with_plugin(name)] * count
        if code is not Code.SUCCESS:
            return [Status(Code.ERROR, (error_text(status),), name, status.reason_code)] * count
        if answer is not None and answer.node_names is not None:
            names = answer.node_names
            outside = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"node(s) didn't satisfy plugin {name}",), name)
            kept = []
            for i, node in enumerate(nodes):
                if node.name in names:
                    kept.append(i)
                else:
                    statuses[i] = outside
    if call.filter is None:
        return statuses
    subset = nodes if kept is None else [nodes[i] for i in kept]
    verdicts: Sequence[Status]
    try:
        if call.filter.batch is not None:
            verdicts = call.filter.batch(state, pod, subset)
            if len(verdicts) != len(subset):
                message = f"filter_nodes returned {len(verdicts)} statuses for {len(subset)} nodes"
                verdicts = [Status.error(message)] * len(subset)
        else:
            one = call.filter.one
            verdicts = []
            for node in subset:
                try:
                    verdicts.append(one(state, pod, node))
                except ObjectDecodeError:
                    raise
                except Exception as exc:
                    verdicts.append(Status.error(describe(exc)))
    except ObjectDecodeError:
        raise
    except Exception as exc:
        verdicts = [Status.error(describe(exc))] * len(subset)
    attributed: dict[int, Status] = {}
    for i, status in zip(range(count) if kept is None else kept, verdicts, strict=True):
        code = status.code
        if code is Code.SUCCESS:
            continue
        named = attributed.get(id(status))
        if named is None:
            if code is Code.UNSCHEDULABLE or code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                named = status if status.reasons else Status(code, (f"rejected by {name}",))
                named = named.with_plugin(name)
            else:
                named = Status(Code.ERROR, (error_text(status),), name, status.reason_code)
            attributed[id(status)] = named
        statuses[i] = named
    return statuses


__all__ = ["AuditCall", "FilterCall", "FilterPoints", "filter_error"]

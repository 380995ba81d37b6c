"""The bind verb's cycle (Reserve, Permit, Bind with DefaultBinder) through the official client
against the test API server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from app.cluster.connection import ClusterConnection
from app.extender.verbs import run_bind_verb
from app.framework import EnabledPlugin, PluginLists, PodRef, plugin_lists
from app.framework.runtime import Framework
from app.plugins.default_binder import DefaultBinder, DefaultBinderArgs
from tests.cluster.conftest import wait_for
from tests.support.apiserver import FakeAPIServer, node, pod


def _binder(cluster: ClusterConnection, http_timeout: float = 5.0, **args: object) -> Framework:
    """A profile whose only plugin is DefaultBinder (with ``args``)."""

    def lists(fw: Framework) -> PluginLists:
        binder = DefaultBinder(DefaultBinderArgs.model_validate(args), fw)
        return plugin_lists(bind=[EnabledPlugin("DefaultBinder", binder)])

    return Framework("p", lists, http_timeout=http_timeout, cluster=cluster)


def _bind(framework: Framework, name: str, node_name: str, uid: str | None = None) -> str:
    ref = PodRef("default", name, uid or f"uid-default-{name}")
    status = asyncio.run(run_bind_verb(framework, ref, node_name))
    return "" if status.is_success() else status.message


@pytest.fixture
def synced(api: FakeAPIServer, make_cluster: Callable[..., ClusterConnection]) -> ClusterConnection:
    api.put("nodes", node("n1", pods="2"))
    api.put("nodes", node("n2"))
    api.put("pods", pod("web", node_name="n1"))
    for name in ("a", "b", "c"):
        api.put("pods", pod(name))
    cluster = make_cluster(api.url)
    wait_for(lambda: cluster.bind_admission() is None, what="binds admitted (synced, warmed up)")
    return cluster


def test_bind_creates_binding_with_uid_and_assumes(api: FakeAPIServer, synced: ClusterConnection) -> None:
    binder = _binder(synced)
    assert _bind(binder, "a", "n2") == ""
    assert api.bindings == [
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "a", "namespace": "default", "uid": "uid-default-a"},
            "target": {"kind": "Node", "name": "n2"},
        }
    ]
    stored = api.pod("default", "a")
    assert stored is not None and stored["spec"]["nodeName"] == "n2"
    # counted at once (assumed), then confirmed by the watch
    wait_for(lambda: synced.stats()["assumed_confirmed"] == 1, what="confirmation")
    info = synced.cache.snapshot().get("n2")
    assert info is not None and [p.name for p in info.pods] == ["a"]


def test_bind_is_idempotent(api: FakeAPIServer, synced: ClusterConnection) -> None:
    binder = _binder(synced)
    assert _bind(binder, "a", "n2") == ""
    # again before the watch confirmed: the API server answers 409, the pod is on n2: success
    assert _bind(binder, "a", "n2") == ""
    wait_for(lambda: synced.cache.assumed() == {}, what="confirmation")
    # and after: the cache already shows it bound there; no new Binding is posted
    count = len(api.bindings)
    assert _bind(binder, "a", "n2") == ""
    assert len(api.bindings) == count
    info = synced.cache.snapshot().get("n2")
    assert info is not None and info.usage.pod_count == 1


def test_bound_elsewhere_missing_and_recreated_are_errors(api: FakeAPIServer, synced: ClusterConnection) -> None:
    binder = _binder(synced)
    assert _bind(binder, "web", "n2") == "cannot bind to n2: pod is already bound to node 'n1'"
    # a pod bound elsewhere behind the cache's back: the 409 is read back
    api.put("pods", pod("c", node_name="n1"))
    message = _bind(binder, "c", "n2")
    assert "already bound to node 'n1'" in message
    assert _bind(binder, "ghost", "n2") == "cannot bind to n2: pod default/ghost not found"
    # the pod was read back (the watch has not shown that UID): another UID is not this pod
    message = _bind(binder, "b", "n2", uid="uid-of-a-deleted-pod")
    assert message == "cannot bind to n2: pod default/b was recreated: its UID is not the one kube-scheduler sent"
    assert "uid-default-b" not in message  # never another object's UID
    stored = api.pod("default", "b")
    assert stored is not None and "nodeName" not in stored["spec"]
    wait_for(lambda: synced.cache.assumed() == {}, what="failed binds forgotten")
    info = synced.cache.snapshot().get("n2")
    assert info is not None and info.usage.pod_count == 0


def test_two_binds_race_for_the_last_slot(api: FakeAPIServer, synced: ClusterConnection) -> None:
    api.binding_delay = 0.2  # both requests are in flight together
    binder = _binder(synced, verifyFit=True)

    async def both() -> list[str]:
        statuses = await asyncio.gather(
            run_bind_verb(binder, PodRef("default", "a", "uid-default-a"), "n1"),
            run_bind_verb(binder, PodRef("default", "b", "uid-default-b"), "n1"),
        )
        return ["" if s.is_success() else s.message for s in statuses]

    results = asyncio.run(both())
    assert sorted(results) == ["", "cannot bind to n1: DefaultBinder: Reserve: Too many pods"]
    assert len(api.bindings) == 1  # the loser never reached the API server
    wait_for(lambda: synced.cache.assumed() == {}, what="confirmation")
    on_n1 = [p["metadata"]["name"] for p in api.objects["pods"].values() if p["spec"].get("nodeName") == "n1"]
    assert len(on_n1) == 2


def test_bind_answers_inside_its_deadline(api: FakeAPIServer, synced: ClusterConnection) -> None:
    api.binding_delay = 2.0
    binder = _binder(synced, http_timeout=1.0)  # deadline 0.8 s
    started = time.monotonic()
    assert _bind(binder, "a", "n2") == "DefaultBinder: binding did not finish within 0.8s"
    assert time.monotonic() - started < 1.0


def test_timeout_must_be_below_http_timeout(synced: ClusterConnection) -> None:
    with pytest.raises(ValueError, match="must be below the profile's httpTimeout"):
        _binder(synced, http_timeout=5.0, timeoutSeconds=5)


def test_unreachable_api_server_is_said_without_its_address(api: FakeAPIServer, synced: ClusterConnection) -> None:
    binder = _binder(synced)
    api.stop()  # the cache keeps its state; the Binding call cannot connect
    message = _bind(binder, "a", "n2")
    assert message in (
        "DefaultBinder: binding failed: the API server is unreachable",
        "DefaultBinder: binding failed: the API server did not answer in time",
    )
    assert "127.0.0.1" not in message and "Error" not in message and "Pool" not in message

"""The storage objects the volume plugins read, watched from the test API server through the
official client: listed and followed per kind (only when a plugin declares ``volumes``), kept
compact, their changes recorded as cluster events, their sync part of the cluster state's; and
PreBind's writes (a claim's ``selected-node``, a volume's ``claimRef``) as merge patches with the
``resourceVersion`` precondition."""

from __future__ import annotations

import asyncio
import threading
import time

from app.cluster.connection import ClusterConnection, ClusterSettings
from app.cluster.volumes import VolumeStores
from app.framework.events import (
    CSI_NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    VOLUME_ATTACHMENT,
    ActionType,
    ClusterEvent,
)
from app.framework.handle import ClusterNeeds
from app.framework.volumes import CLAIMS, VOLUMES, ObjectReference, VolumeWrite
from app.plugins.volumes.node_volume_limits import CSILimits
from app.plugins.volumes.volume_binding import VolumeBinding
from tests.cluster.conftest import connect, disconnect, wait_for
from tests.support.apiserver import FakeAPIServer, claim, csi_node, node, storage_class, volume


def _runtime() -> ClusterConnection:
    return ClusterConnection(ClusterSettings(backoff_initial=0.05, backoff_max=0.2, watch_timeout=30, requeue_qps=0))


def test_storage_kinds_are_watched_only_when_declared(api: FakeAPIServer) -> None:
    cluster = _runtime()
    assert cluster.volumes is None
    supervisor = connect(cluster, api.url)
    try:
        wait_for(cluster.health.has_synced, what="nodes and pods synced")
        assert not any("persistentvolume" in r or "storage.k8s.io" in r for r in api.requests)
    finally:
        disconnect(cluster, supervisor)


def test_claims_volumes_classes_and_csinodes_sync_compactly_and_record_events(api: FakeAPIServer) -> None:
    api.put("nodes", node("n1"))
    api.put("storageclasses", storage_class("standard"))
    pvc = claim("data", **{"volume.kubernetes.io/selected-node": "n1", "unrelated/annotation": "x"})
    pvc["metadata"]["labels"] = {"app": "web"}
    api.put("persistentvolumeclaims", pvc)
    pv = volume("pv-a", zone="b", labels={"topology.kubernetes.io/zone": "b"})
    pv["metadata"]["annotations"] = {
        "pv.kubernetes.io/provisioned-by": "x",
        "pv.kubernetes.io/bound-by-controller": "yes",
    }
    api.put("persistentvolumes", pv)
    cluster = _runtime()
    cluster.register("VolumeBinding", ClusterNeeds(volumes=True, csi_storage_capacities=True))
    stores = cluster.volumes
    assert isinstance(stores, VolumeStores)
    supervisor = connect(cluster, api.url)
    try:
        wait_for(cluster.health.has_synced, what="every kind synced (the storage kinds included)")
        kept = stores.claim("default", "data")
        assert kept is not None and kept.meta.annotations == {"volume.kubernetes.io/selected-node": "n1"}
        assert kept.meta.labels is None and kept.meta.creation_timestamp is None
        kept_pv = stores.volume("pv-a")
        assert kept_pv is not None and kept_pv.meta.annotations == {"pv.kubernetes.io/bound-by-controller": "yes"}
        assert kept_pv.meta.labels == {"topology.kubernetes.io/zone": "b"}
        assert [v.name for v in stores.volumes_of_class("standard")] == ["pv-a"]
        assert stores.storage_class("standard") is not None
        seen = cluster.events.event_seq
        api.put("csinodes", csi_node("n1", count=3))
        api.put("persistentvolumeclaims", claim("late"))
        wait_for(
            lambda: stores.claim("default", "late") is not None and stores.csi_node("n1") is not None, what="events"
        )
        _, observed = cluster.events.events_since(seen)
        assert observed is not None
        events = [e.event for e in observed]
        assert ClusterEvent(CSI_NODE, ActionType.ADD) in events
        assert ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD) in events
        # what VolumeBinding registered moves a pod it parked
        registered = VolumeBinding.events_to_register(None)  # type: ignore[arg-type]
        assert any(r.event.matches(e) for r in registered for e in events)
        seen = cluster.events.event_seq
        api.put("persistentvolumes", volume("pv-a", storage_class_name="fast"))
        wait_for(lambda: [v.name for v in stores.volumes_of_class("fast")] == ["pv-a"], what="the class index")
        assert stores.volumes_of_class("standard") == []
        api.delete("storageclasses", "standard")
        wait_for(lambda: stores.storage_class("standard") is None, what="the deletion")
        _, observed = cluster.events.events_since(seen)
        events = [e.event for e in observed or []]
        assert ClusterEvent(PERSISTENT_VOLUME, ActionType.UPDATE) in events
        assert ClusterEvent(STORAGE_CLASS, ActionType.DELETE) in events
        assert any(r.startswith("GET /apis/storage.k8s.io/v1/csistoragecapacities?") for r in api.requests)
    finally:
        disconnect(cluster, supervisor)


def _attachment(name: str, node_name: str, pv: str) -> dict[str, object]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {"attacher": "ebs.csi.aws.com", "nodeName": node_name, "source": {"persistentVolumeName": pv}},
    }


def test_volume_attachments_are_watched_by_node_and_their_deletion_moves_node_volume_limits_pods(
    api: FakeAPIServer,
) -> None:
    """v1.36.3's NodeVolumeLimits counts a node's VolumeAttachments (its ``va.spec.nodename``
    index): they are listed and watched with the other storage kinds, kept per node, and a
    deletion is the ``VolumeAttachment Delete`` event NodeVolumeLimits registered."""
    api.put("volumeattachments", _attachment("va-1", "n1", "pv-1"))
    api.put("volumeattachments", _attachment("va-2", "n2", "pv-2"))
    cluster = _runtime()
    cluster.register("NodeVolumeLimits", ClusterNeeds(volumes=True))
    stores = cluster.volumes
    assert isinstance(stores, VolumeStores)
    supervisor = connect(cluster, api.url)
    try:
        wait_for(cluster.health.has_synced, what="every kind synced (VolumeAttachments included)")
        assert [va.name for va in stores.volume_attachments("n1")] == ["va-1"]
        assert [va.name for va in stores.volume_attachments("n2")] == ["va-2"]
        seen = cluster.events.event_seq
        api.put("volumeattachments", _attachment("va-3", "n1", "pv-3"))
        wait_for(lambda: len(stores.volume_attachments("n1")) == 2, what="the new attachment")
        api.delete("volumeattachments", "va-1")
        wait_for(lambda: [va.name for va in stores.volume_attachments("n1")] == ["va-3"], what="the deletion")
        _, observed = cluster.events.events_since(seen)
        events = [e.event for e in observed or []]
        assert ClusterEvent(VOLUME_ATTACHMENT, ActionType.DELETE) in events
        registered = CSILimits.events_to_register(None)  # type: ignore[arg-type]
        assert any(r.event.matches(ClusterEvent(VOLUME_ATTACHMENT, ActionType.DELETE)) for r in registered)
        assert any(r.startswith("GET /apis/storage.k8s.io/v1/volumeattachments?") for r in api.requests)
    finally:
        disconnect(cluster, supervisor)


def test_a_kind_the_api_server_does_not_serve_counts_as_none(api: FakeAPIServer) -> None:
    del api.objects["csistoragecapacities"]  # an API server without the kind: 404
    cluster = _runtime()
    cluster.register("VolumeBinding", ClusterNeeds(volumes=True, csi_storage_capacities=True))
    original = api.list

    def list_or_404(kind: str, query: dict[str, str]) -> tuple[int, object]:
        if kind == "csistoragecapacities":
            from tests.support.apiserver import status_body

            return 404, status_body(404, "NotFound", "the server could not find the requested resource")
        return original(kind, query)

    api.list = list_or_404  # type: ignore[method-assign]
    supervisor = connect(cluster, api.url)
    try:
        wait_for(cluster.health.has_synced, what="synced without capacities")
        assert cluster.volumes is not None and cluster.volumes.storage_capacities() == ()
    finally:
        disconnect(cluster, supervisor)


def test_an_unreadable_kind_keeps_the_state_unsynced_with_the_reason() -> None:
    cluster = _runtime()
    cluster.register("VolumeZone", ClusterNeeds(volumes=True))
    for kind in ("nodes", "pods", "persistentvolumes", "storageclasses", "csinodes", "csidrivers", "volumeattachments"):
        cluster.health.mark_synced(kind)
    cluster.health.mark_failing("persistentvolumeclaims", "403 Forbidden: cannot list persistentvolumeclaims")
    assert not cluster.health.has_synced()
    ready, reason = cluster.health.ready()
    assert not ready and reason == (
        "persistentvolumeclaims have not synced yet: 403 Forbidden: cannot list persistentvolumeclaims"
    )
    assert cluster.bind_admission() == "the extender's cluster state has not synced with the API server yet"


def test_changed_wakes_a_waiter_on_the_loop_from_a_watch_thread() -> None:
    cluster = _runtime()
    cluster.register("VolumeBinding", ClusterNeeds(volumes=True))
    stores = cluster.volumes
    assert stores is not None

    async def wait() -> tuple[int, float]:
        generation = stores.generation
        threading.Timer(0.1, lambda: stores.load(CLAIMS, [claim("c")])).start()
        started = time.monotonic()
        got = await stores.changed(generation, 5.0)
        return got - generation, time.monotonic() - started

    grown, waited = asyncio.run(wait())
    assert grown >= 1 and waited < 2.0
    assert asyncio.run(stores.changed(stores.generation, 0.05)) == stores.generation  # a timeout: no change


def test_update_volume_patches_with_the_resource_version_as_precondition(api: FakeAPIServer) -> None:
    stored = api.put("persistentvolumeclaims", claim("data"))
    api.put("persistentvolumes", volume("pv-a"))
    cluster = _runtime()
    cluster.register("VolumeBinding", ClusterNeeds(volumes=True))
    supervisor = connect(cluster, api.url)
    try:
        version = stored["metadata"]["resourceVersion"]
        write = VolumeWrite(CLAIMS, "data", "default", version, {"volume.kubernetes.io/selected-node": "n1"})
        result = asyncio.run(cluster.update_volume(write, 5.0))
        assert result.error == "" and int(result.resource_version) > int(version)
        assert api.objects["persistentvolumeclaims"]["default/data"]["metadata"]["annotations"] == {
            "volume.kubernetes.io/selected-node": "n1"
        }
        stale = asyncio.run(cluster.update_volume(write, 5.0))  # the claim changed since that version
        assert stale.resource_version == "" and "the object has been modified" in stale.error
        ref = ObjectReference("PersistentVolumeClaim", "default", "data", "uid-pvc-default-data", "v1", version)
        pv_version = api.objects["persistentvolumes"]["pv-a"]["metadata"]["resourceVersion"]
        bound = VolumeWrite(VOLUMES, "pv-a", "", pv_version, {"pv.kubernetes.io/bound-by-controller": "yes"}, ref)
        assert asyncio.run(cluster.update_volume(bound, 5.0)).error == ""
        claim_ref = api.objects["persistentvolumes"]["pv-a"]["spec"]["claimRef"]
        assert (claim_ref["name"], claim_ref["uid"], claim_ref["kind"]) == (
            "data",
            "uid-pvc-default-data",
            "PersistentVolumeClaim",
        )
        assert [(k, key) for k, key, _ in api.volume_patches] == [
            ("persistentvolumeclaims", "default/data"),
            ("persistentvolumes", "pv-a"),
        ]
        missing = asyncio.run(cluster.update_volume(VolumeWrite(CLAIMS, "nope", "default"), 5.0))
        assert missing.error == 'persistentvolumeclaims "nope" not found'
    finally:
        disconnect(cluster, supervisor)


def test_update_volume_before_connect_is_an_error() -> None:
    cluster = _runtime()
    result = asyncio.run(cluster.update_volume(VolumeWrite(CLAIMS, "x", "default"), 1.0))
    assert result.error.startswith("the cluster connection is not started")

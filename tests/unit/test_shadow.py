"""The shadow scheduler's parts without a process: its cycle on a cluster state (a tie among the
best nodes is ``same`` for any of them; a PreFilterResult leaving the bound node out is
``infeasible``), the cache's ``before_bind`` hook (the snapshot taken before the bound pod counts,
only for the followed scheduler), the record's JSON round trip, the report, and the read-only
client refusing a write before anything is sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from app.bootstrap.assemble import assemble
from app.config import parse_config
from app.framework import PodInfo, objects
from app.kube.client import KubeClient, load_client
from app.plugins import default_registry
from app.shadow.cycle import shadow_cycle
from app.shadow.readonly import ReadOnlyClient, ReadOnlyError
from app.shadow.record import ShadowLog, ShadowRecord
from app.shadow.report import report
from app.shadow.shadow import Shadow
from tests.support.apiserver import FakeAPIServer, node, pod
from tests.unit.helpers import seed


def _assembly() -> Any:
    registry = default_registry(False)
    doc = {
        "apiVersion": "config.scheduler-extender.dev/v1alpha1",
        "kind": "ExtenderConfiguration",
        "cluster": {},
        "profiles": [{"name": "shadow", "schedulerName": "shadow-default"}],
    }
    return assemble(parse_config(doc, registry), registry)


def _pending(name: str, scheduler: str = "default-scheduler", **spec: Any) -> dict[str, Any]:
    doc = pod(name, cpu="1", memory="1Gi", **spec)
    doc["spec"]["schedulerName"] = scheduler
    return doc


def test_a_bind_to_any_of_the_tied_best_nodes_is_same() -> None:
    assembly = _assembly()
    cache = assembly.cluster.cache
    seed(cache, [node("a"), node("b"), node("c", cpu="2")], [])
    framework = assembly.frameworks["shadow"]
    p = PodInfo.record(msgspec.convert(_pending("p"), objects.Pod))
    for bound in ("a", "b"):
        record, decision = shadow_cycle(framework, cache.snapshot(), p, bound, "default-scheduler")
        assert record.agreement == "same" and record.chosen_node == bound and record.rank == 1
        assert record.best_nodes == ["a", "b"] and record.feasible_nodes == 3
        assert decision.explain()["nodes"]["c"]["score"] < record.chosen_total
    record, _ = shadow_cycle(framework, cache.snapshot(), p, "c", "default-scheduler")
    assert record.agreement == "feasible" and record.rank == 3 and record.chosen_node == "a"
    record, _ = shadow_cycle(framework, cache.snapshot(), p, "gone", "default-scheduler")
    assert record.agreement == "infeasible" and record.rejected_reason == "node not found in the cluster state"


def test_a_node_a_prefilter_result_leaves_out_is_infeasible_with_its_status() -> None:
    assembly = _assembly()
    cache = assembly.cluster.cache
    seed(cache, [node("a", zone="x"), node("b", zone="y")], [])
    framework = assembly.frameworks["shadow"]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]}]
            }
        }
    }

    p = PodInfo.record(msgspec.convert(_pending("p", affinity=affinity), objects.Pod))
    record, _ = shadow_cycle(framework, cache.snapshot(), p, "b", "default-scheduler")
    assert record.agreement == "infeasible" and record.chosen_node == "a"
    assert record.rejected_reason == "node(s) didn't satisfy plugin(s) [NodeAffinity]"


def test_the_hook_shadows_the_state_before_the_bind_and_only_the_followed_scheduler() -> None:

    assembly = _assembly()
    cache = assembly.cluster.cache
    seed(cache, [node("a", cpu="1", memory="1Gi")], [_pending("p"), _pending("q", scheduler="other")])
    records = ShadowLog(10)
    shadow = Shadow(assembly.frameworks["shadow"], cache, ["default-scheduler"], records)
    shadow.attach()
    for name, scheduler in (("p", "default-scheduler"), ("q", "other")):
        bound = _pending(name, scheduler=scheduler)
        bound["spec"]["nodeName"] = "a"
        cache.upsert_pod(cache.record(msgspec.convert(bound, objects.Pod)))
    assert shadow.pending == 1  # q's scheduler is not followed
    shadow.shadow(*shadow._queue.get_nowait())
    (record,) = records.records()
    # p takes all of a: feasible only while p itself is not counted there (q's bind came after)
    assert record.name == "p" and record.agreement == "same" and record.rank == 1
    assert records.snapshot()["counts"] == {"shadow": {"same": 1}}


def test_a_record_round_trips_through_json_and_the_report_counts_it() -> None:
    record = ShadowRecord(1.0, "shadow", "default-scheduler", "ns", "p", "u", "b", "feasible", chosen_node="a")
    record.rank, record.bound_total, record.chosen_total, record.difference = 2, 10, 20, "NodeResourcesFit"
    again = ShadowRecord.from_json(record.to_json())
    assert again.to_json() | {"time": ""} == record.to_json() | {"time": ""}
    body = report([again, ShadowRecord(0, "shadow", "default-scheduler", "ns", "q", "v", "a", "same")])
    assert body["agreementRate"] == 0.5 and body["counts"]["feasible"] == 1
    assert body["disagreements"][0]["pod"] == "ns/p" and body["disagreements"][0]["rank"] == 2
    with pytest.raises(ValueError, match="not a shadow record"):
        ShadowRecord.from_json({"name": "p"})


def test_the_read_only_client_refuses_a_write_before_sending_it(tmp_path: Path) -> None:
    api = FakeAPIServer().start()
    try:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(api.kubeconfig())
        client = ReadOnlyClient(KubeClient(load_client(str(kubeconfig)).api_client))
        assert client.list("nodes", 10, None, 5.0)
        with pytest.raises(ReadOnlyError, match="create_binding refused"):
            client.create_binding("ns", "p", "u", "n", 5.0)
        with pytest.raises(ReadOnlyError):
            client.create_lease("kube-system", {}, 5.0)
        assert client.refused == 2
        assert [r.split(" ", 1)[0] for r in api.requests] == ["GET"]
    finally:
        api.stop()

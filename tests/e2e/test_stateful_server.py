"""End to end, one test per stateful policy: the real server process on examples/stateful.yaml,
its cluster state from the test API server (through the official client), driven by request
bodies in the shared fixtures' format and by concurrent binds as kube-scheduler's binding
goroutines send them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cluster.conftest import wait_for
from tests.conftest import REPO, Server, cluster_config
from tests.support.apiserver import FakeAPIServer, node, pod, pod_group, running
from tests.support.bodies import fixture, fixture_bytes, go_marshal

STATE = json.loads((REPO / "examples" / "cluster-state-n10.json").read_text())
NAMES = [i["metadata"]["name"] for i in STATE["items"] if i["kind"] == "Node"]
PERMIT_WAIT = 2.0
IP = "ipam.example.com/ip"


def populate(api: FakeAPIServer) -> None:
    """examples/cluster-state-n10.json, plus the preemption fixture's victims and small pool nodes."""
    kinds = {"Node": "nodes", "Pod": "pods", "PodGroup": "podgroups"}
    for item in STATE["items"]:
        api.put(kinds[item["kind"]], item)
    for node_name, victims in fixture("preemptionargs_cache.json")["NodeNameToMetaVictims"].items():
        for i, victim in enumerate(victims["Pods"]):
            doc = pod(f"batch-{node_name[:14]}-{i}", "batch", node_name, uid=victim["UID"], priority=-10)
            if node_name == NAMES[3]:
                doc["metadata"]["labels"] = {"scheduling.example.com/protected": "true"}
            api.put("pods", doc)
    api.put("nodes", node("pool-node", cpu="32", memory="64Gi", pods="110"))
    api.put("nodes", node("gang-node", cpu="64", memory="256Gi", pods="110"))


def _faster(doc: Any) -> None:
    """Test timings: a 5 s httpTimeout, a 2 s Permit wait, and every PDB count kept."""
    profile = doc["profiles"][0]
    profile["extender"]["httpTimeout"] = "5s"
    for pc in profile["pluginConfig"]:
        if pc["name"] == "Coscheduling":
            pc["args"] = {"permitWaitingTimeSeconds": PERMIT_WAIT, "deniedPGExpirationTimeSeconds": 60}
        if pc["name"] == "PreemptionRules":
            pc["args"]["fewestPDBViolations"] = False
        if pc["name"] == "DefaultBinder":
            pc["args"] = {"timeoutSeconds": 2}


def write_config(tmp: Path, api: FakeAPIServer) -> Path:
    """examples/stateful.yaml pointed at ``api``, with the test timings of :func:`_faster`."""
    return cluster_config(tmp, api.kubeconfig(), "stateful.yaml", _faster)


@pytest.fixture(scope="module")
def api() -> Iterator[FakeAPIServer]:
    with running(populate) as server:
        yield server


@pytest.fixture(scope="module")
def server(api: FakeAPIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(write_config(tmp_path_factory.mktemp("stateful"), api))
    yield s
    s.stop()


def _args(pod_doc: dict[str, Any], names: list[str]) -> bytes:
    """An ExtenderArgs body as kube-scheduler sends it in cache mode."""
    return go_marshal({"Pod": pod_doc, "Nodes": None, "NodeNames": names})


def _binding(p: dict[str, Any], node_name: str) -> bytes:
    meta = p["metadata"]
    return go_marshal(
        {"PodName": meta["name"], "PodNamespace": meta["namespace"], "PodUID": meta["uid"], "Node": node_name}
    )


async def _bind_all(server: Server, bodies: list[bytes]) -> list[str]:
    """POST every bind at once (kube-scheduler binds in goroutines); the ``Error`` of each."""
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=100)) as client:
        answers = await asyncio.gather(*(client.post(f"{server.url}/bind", content=b) for b in bodies))
    assert all(a.status_code == 200 for a in answers)
    return [a.json()["Error"] for a in answers]


def _pool(server: Server, verb: str, body: bytes) -> httpx.Response:
    """POST to the pool profile (examples/stateful.yaml's second extenders: entry)."""
    return httpx.post(f"{server.url}/pool/{verb}", content=body, timeout=30)


def test_fit_and_pool_verdicts_on_the_fixture(server: Server) -> None:
    """kube-scheduler calls the two extenders in turn: the default profile (every pod), then the
    pool profile (pods that request an underlay IP) with the nodes that passed."""
    r = server.post("filter", fixture_bytes("extenderargs_cache_n10_extres.json"))
    assert r.status_code == 200
    first = r.json()
    assert first["Error"] == ""
    assert first["FailedNodes"] == {NAMES[3]: "Insufficient cpu"}  # big-batch takes 7800m of 7910m
    body = fixture("extenderargs_cache_n10_extres.json")
    body["NodeNames"] = first["NodeNames"]
    result = _pool(server, "filter", go_marshal(body)).json()
    assert result["Error"] == ""
    failed, unresolvable = result["FailedNodes"], result["FailedAndUnresolvableNodes"]
    assert failed == {NAMES[4]: "pool underlay-ip exhausted: 16/16 in use"}
    for control_plane in NAMES[:3]:
        assert unresolvable[control_plane] == (
            "node is excluded from pool underlay-ip (label node-role.kubernetes.io/control-plane)"
        )
    assert unresolvable[NAMES[5]] == "pool underlay-ip has no capacity on this node"
    assert result["NodeNames"] == [NAMES[6], NAMES[7], NAMES[8], NAMES[9]]
    # prioritize: the pool prefers free slots (node -18 has 32 free, -16 only 1)
    body["NodeNames"] = result["NodeNames"]
    scores = {h["Host"]: h["Score"] for h in _pool(server, "prioritize", go_marshal(body)).json()}
    assert scores[NAMES[8]] == max(scores.values()) and scores[NAMES[6]] == min(scores.values())


def test_pool_never_overcommits_under_concurrent_binds(server: Server, api: FakeAPIServer) -> None:
    pods = []
    for i in range(25):
        p = pod(f"ip-{i}", "net", cpu="10m", memory="16Mi")
        p["spec"]["containers"][0]["resources"]["requests"][IP] = "1"
        pods.append(api.put("pods", p))
    wait_for(lambda: _pool(server, "filter", _args(pods[-1], ["pool-node"])).json()["NodeNames"] == ["pool-node"])
    # bind is the default profile's: the pool's slots are reserved there too (a pool is cluster-wide)
    errors = asyncio.run(_bind_all(server, [_binding(p, "pool-node") for p in pods]))
    assert errors.count("") == 10, errors
    refused = [e for e in errors if e]
    assert all("NodeResourcePool: Reserve: pool underlay-ip exhausted: 10/10 in use" in e for e in refused), refused
    bound = [p for p in api.objects["pods"].values() if p["spec"].get("nodeName") == "pool-node"]
    assert len(bound) == 10
    # the node is full for the next consumer, in filter too
    late = pods[next(i for i, e in enumerate(errors) if e)]
    verdict = _pool(server, "filter", _args(late, ["pool-node"])).json()
    assert verdict["FailedNodes"] == {"pool-node": "pool underlay-ip exhausted: 10/10 in use"}
    # deleting a bound consumer frees its slot
    gone = bound[0]["metadata"]
    api.delete("pods", f"{gone['namespace']}/{gone['name']}")
    wait_for(lambda: _pool(server, "filter", _args(late, ["pool-node"])).json()["NodeNames"] == ["pool-node"])
    assert asyncio.run(_bind_all(server, [_binding(late, "pool-node")])) == [""]


def _gang(api: FakeAPIServer, group: str, size: int, min_member: int) -> list[dict[str, Any]]:
    api.put("podgroups", pod_group(group, "ml", min_member))
    members = []
    for i in range(size):
        p = pod(f"{group}-{i}", "ml", cpu="100m", memory="64Mi")
        p["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": group}
        members.append(api.put("pods", p))
    return members


def test_gang_of_eight_binds_all_when_complete(server: Server, api: FakeAPIServer) -> None:
    members = _gang(api, "g8", 8, 8)
    wait_for(lambda: server.post("filter", _args(members[0], ["gang-node"])).json()["NodeNames"] == ["gang-node"])
    errors = asyncio.run(_bind_all(server, [_binding(p, "gang-node") for p in members]))
    assert errors == [""] * 8
    bound = [p for p in api.objects["pods"].values() if p["metadata"]["name"].startswith("g8-")]
    assert {p["spec"].get("nodeName") for p in bound} == {"gang-node"}


def test_gang_short_of_min_member_is_an_error_while_it_gathers(server: Server, api: FakeAPIServer) -> None:
    members = _gang(api, "g5", 3, 5)
    expected = (
        "Coscheduling: PreFilter: pod group ml/g5 has 3 of minMember 5 pods: waiting up to 60s for the rest to be "
        "created (kube-scheduler retries it with backoff)"
    )
    wait_for(lambda: server.post("filter", _args(members[0], ["gang-node"])).json()["Error"] == expected)


def test_gang_members_arriving_one_at_a_time_all_bind(server: Server, api: FakeAPIServer) -> None:
    """Issue 13: members reach filter before their siblings exist. None is rejected (kube-scheduler
    would park it as unschedulable for up to 5 minutes); each is answered Error (retried within
    seconds) until the group is complete, then all pass and all bind."""
    api.put("podgroups", pod_group("g6", "ml", 6))
    members: list[dict[str, Any]] = []
    for i in range(6):
        doc = pod(f"g6-{i}", "ml", cpu="100m", memory="64Mi")
        doc["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "g6"}
        members.append(api.put("pods", doc))
        answer = server.post("filter", _args(members[-1], ["gang-node"])).json()  # before the cache may see it
        assert answer["FailedAndUnresolvableNodes"] in (None, {}), answer
        if i < 5:
            assert answer["Error"].startswith(f"Coscheduling: PreFilter: pod group ml/g6 has {i + 1} of minMember 6")
    for m in members:  # kube-scheduler's retries, after backoff
        wait_for(lambda m=m: server.post("filter", _args(m, ["gang-node"])).json()["NodeNames"] == ["gang-node"])  # type: ignore[misc]
    assert asyncio.run(_bind_all(server, [_binding(p, "gang-node") for p in members])) == [""] * 6
    bound = [p for p in api.objects["pods"].values() if p["metadata"]["name"].startswith("g6-")]
    assert {p["spec"].get("nodeName") for p in bound} == {"gang-node"}


def test_gang_that_never_completes_times_out_with_nothing_bound(server: Server, api: FakeAPIServer) -> None:
    members = _gang(api, "g4", 4, 4)
    wait_for(lambda: server.post("filter", _args(members[0], ["gang-node"])).json()["NodeNames"] == ["gang-node"])
    errors = asyncio.run(_bind_all(server, [_binding(p, "gang-node") for p in members[:3]]))
    assert len(errors) == 3
    # each waited reserved at Permit; the first to time out failed, and its Unreserve rejected the others
    prefix = "cannot bind to gang-node: Coscheduling: Permit: "
    timed_out = prefix + "rejected due to timeout after waiting 2s at plugin Coscheduling"
    unreserved = prefix + "rejection in Unreserve"
    assert timed_out in errors and all(e in (timed_out, unreserved) for e in errors), errors
    assert not [
        p for p in api.objects["pods"].values() if p["metadata"]["name"].startswith("g4-") and p["spec"].get("nodeName")
    ]
    assert not any(b["metadata"]["name"].startswith("g4-") for b in api.bindings)
    # the group is denied for deniedPGExpirationTimeSeconds: even its 4th pod is held off, with an
    # Error so that kube-scheduler retries it as soon as the denial expires
    verdict = server.post("filter", _args(members[3], ["gang-node"])).json()
    assert verdict["Error"].startswith("Coscheduling: PreFilter: pod group ml/g4 is denied for ")


def test_gang_whose_last_member_fails_reserve_binds_none(server: Server, api: FakeAPIServer) -> None:
    """kube-scheduler's order: each member reserves before Permit. Three members of a gang of 4
    reserve the 3 underlay IPs of their node and wait at Permit; the fourth's Reserve fails (the
    pool, whose Reserve holds for every profile): Coscheduling's Unreserve rejects the three, every
    reservation is undone and no member is bound."""
    small = node("pool-3", cpu="32", memory="64Gi", pods="110")
    small["metadata"]["annotations"] = {"ipam.example.com/pool-size": "3"}
    api.put("nodes", small)
    api.put("podgroups", pod_group("g4ip", "ml", 4))
    members = []
    for i in range(4):
        p = pod(f"g4ip-{i}", "ml", cpu="100m", memory="64Mi")
        p["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "g4ip"}
        p["spec"]["containers"][0]["resources"]["requests"][IP] = "1"
        members.append(api.put("pods", p))
    wait_for(lambda: server.post("filter", _args(members[3], ["pool-3"])).json()["NodeNames"] == ["pool-3"])

    async def run() -> list[str]:
        waiting = asyncio.ensure_future(_bind_all(server, [_binding(p, "pool-3") for p in members[:3]]))
        await asyncio.sleep(0.5)  # the three are reserved and waiting at Permit
        last = await _bind_all(server, [_binding(members[3], "pool-3")])
        return last + await waiting

    errors = asyncio.run(run())
    assert errors[0] == "cannot bind to pool-3: NodeResourcePool: Reserve: pool underlay-ip exhausted: 3/3 in use"
    assert errors[1:] == ["cannot bind to pool-3: Coscheduling: Permit: rejection in Unreserve"] * 3
    assert not any(b["metadata"]["name"].startswith("g4ip-") for b in api.bindings)
    verdict = _pool(server, "filter", _args(members[0], ["pool-3"])).json()
    assert verdict["NodeNames"] == ["pool-3"]  # every reservation undone: the 3 slots are free again


def test_preemption_drops_nodes_with_protected_victims(server: Server) -> None:
    r = server.post("preempt", fixture_bytes("preemptionargs_cache.json"))
    assert r.status_code == 200
    candidates = fixture("preemptionargs_cache.json")["NodeNameToMetaVictims"]
    kept = r.json()["NodeNameToMetaVictims"]
    # node -13's victims include a pod labelled scheduling.example.com/protected: dropped whole
    assert set(kept) == set(candidates) - {NAMES[3]}
    for name, victims in kept.items():
        assert victims == candidates[name]  # untouched: same UIDs, same order, same PDB count


def test_pods_nominated_to_a_node_keep_its_room(server: Server, api: FakeAPIServer) -> None:
    """A preemptor nominated to gang-node (status.nominatedNodeName, waiting for its victims to
    leave) counts there for pods of lower or equal priority, as kube-scheduler's addNominatedPods."""
    preemptor = pod("preemptor", "ml", cpu="63", memory="1Gi", priority=1000)
    preemptor["status"]["nominatedNodeName"] = "gang-node"
    api.put("pods", preemptor)
    try:
        low = pod("low", "ml", cpu="2", memory="64Mi", priority=10)
        high = pod("high", "ml", cpu="2", memory="64Mi", priority=5000)
        wait_for(
            lambda: (
                server.post("filter", _args(low, ["gang-node"])).json()["FailedNodes"]
                == {"gang-node": "Insufficient cpu"}
            )
        )
        assert server.post("filter", _args(high, ["gang-node"])).json()["NodeNames"] == ["gang-node"]
    finally:
        api.delete("pods", "ml/preemptor")
    wait_for(lambda: server.post("filter", _args(low, ["gang-node"])).json()["NodeNames"] == ["gang-node"])

"""The fast decoder agrees with the pydantic contract models, on every shared fixture and on the
upstream TestCompatibility shapes (PROTOCOL.md 1.2)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import pytest

from app.extender import codec, models
from app.framework import SUCCESS, Status, objects
from tests.support.bodies import FIXTURES, fixture_bytes, go_marshal, lower_keys

MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())["files"]
ARGS_FIXTURES = [f["file"] for f in MANIFEST if f["kind"] == "ExtenderArgs" and (FIXTURES / f["file"]).exists()]
PREEMPT_FIXTURES = [f["file"] for f in MANIFEST if f["kind"] == "ExtenderPreemptionArgs"]


def test_fixtures_are_the_recorded_bytes() -> None:
    import hashlib

    for f in MANIFEST:
        path = FIXTURES / f["file"]
        if path.exists():
            assert hashlib.sha256(path.read_bytes()).hexdigest() == f["sha256"], f["file"]
    assert len(ARGS_FIXTURES) >= 12


def views_equal(a: objects.Node | objects.Pod | None, b: objects.Node | objects.Pod | None) -> bool:
    return msgspec.to_builtins(a) == msgspec.to_builtins(b)


@pytest.mark.parametrize("name", ARGS_FIXTURES)
def test_fast_path_agrees_with_pydantic_models(name: str) -> None:
    body = fixture_bytes(name)
    contract = models.ExtenderArgs.model_validate_json(body)
    fast = codec.decode_extender_args(body, keep_raw=True)
    eager = codec.decode_extender_args(body, keep_raw=False)
    general = codec._decode_extender_args_general(body)
    assert contract.pod is not None
    pod_from_contract = msgspec.convert(contract.pod, objects.Pod)
    for view in (fast, eager, general):
        assert views_equal(view.pod.pod, pod_from_contract)
    if contract.nodes is not None:
        items = contract.nodes.items or []
        assert contract.node_names is None and not fast.node_names
        assert [n.name for n in fast.nodes] == [i["metadata"]["name"] for i in items]
        assert fast.node_raws is not None
        assert [json.loads(bytes(r)) for r in fast.node_raws] == items  # raw slices are the node objects
        for f, e, g, item in zip(fast.nodes, eager.nodes, general.nodes, items, strict=True):
            expected = msgspec.convert(item, objects.RequestNode)  # request nodes: no status.images
            assert views_equal(f.node, expected) and views_equal(e.node, expected) and views_equal(g.node, expected)
        assert json.loads(bytes(fast.list_meta)) == contract.nodes.metadata
        # for a profile whose plugins read status.images (ImageLocality), every path keeps them
        with_images = (
            codec.decode_extender_args(body, keep_raw=True, images=True),
            codec.decode_extender_args(body, keep_raw=False, images=True),
            codec._decode_extender_args_general(body, images=True),
        )
        for nodes in zip(*(v.nodes for v in with_images), items, strict=True):
            expected = msgspec.convert(nodes[-1], objects.Node)
            assert all(views_equal(n.node, expected) for n in nodes[:-1])
            assert nodes[0].images == {  # what ImageLocality reads
                name: image.get("sizeBytes", 0)
                for image in nodes[-1]["status"].get("images", [])
                for name in image["names"]
            } or not nodes[-1]["status"].get("images")
    else:
        assert fast.node_names and [n.name for n in fast.nodes] == contract.node_names
        assert all(n.node is None for n in fast.nodes)


@pytest.mark.parametrize("name", ARGS_FIXTURES[:6])
def test_filter_result_validates_against_the_contract(name: str) -> None:
    body = fixture_bytes(name)
    view = codec.decode_extender_args(body)
    statuses = [SUCCESS if i % 3 else Status.unresolvable("no") for i in range(len(view.nodes))]
    statuses[1] = Status.unschedulable("full")
    out = codec.join(codec.encode_filter_result(view, statuses))
    result = models.ExtenderFilterResult.model_validate_json(out)
    assert result.error == ""
    assert result.failed_nodes == {view.nodes[1].name: "full"}
    assert set(result.failed_and_unresolvable_nodes or {}) == {view.nodes[i].name for i in range(0, len(view.nodes), 3)}
    kept = [view.nodes[i].name for i, s in enumerate(statuses) if s.is_success()]
    if view.node_raws is not None:
        assert [n["metadata"]["name"] for n in (result.nodes.items or [])] == kept  # type: ignore[union-attr]
        assert result.node_names is None
    else:
        assert result.node_names == kept and result.nodes is None
    # every key always present, Go style
    assert list(json.loads(out)) == ["Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"]


@pytest.mark.parametrize("name", ARGS_FIXTURES[:6])
def test_filter_result_every_node_passed_is_the_general_answer(name: str) -> None:
    """The path taken when every node passed (no per-node loop) writes the bytes the general path
    writes for the same verdicts: a status equal to SUCCESS but not the runtime's object takes it."""
    view = codec.decode_extender_args(fixture_bytes(name))
    fast = codec.join(codec.encode_filter_result(view, [SUCCESS] * len(view.nodes)))
    general = codec.join(codec.encode_filter_result(view, [Status() for _ in view.nodes]))
    assert fast == general
    result = models.ExtenderFilterResult.model_validate_json(fast)
    assert result.failed_nodes == {} and result.failed_and_unresolvable_nodes == {} and result.error == ""
    names = [n.name for n in view.nodes]
    if view.node_raws is not None:
        assert [n["metadata"]["name"] for n in (result.nodes.items or [])] == names  # type: ignore[union-attr]
    else:
        assert result.node_names == names


def test_prioritize_answer_refuses_a_score_count_that_differs() -> None:
    with pytest.raises(ValueError, match="2 names but 1 scores"):
        codec.encode_host_priority_list(["a", "b"], [1])


# kube-scheduler's extender/v1 TestCompatibility fixtures, 1.34+ form and pre-1.34 (creationTimestamp null)
TT_ARGS = (
    '{"Pod":{"metadata":{"name":"podname"},"spec":{"containers":null},"status":{}},"Nodes":{"metadata":{},"items":'
    '[{"metadata":{"name":"nodename"},"spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},'
    '"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"",'
    '"containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"","operatingSystem":"","architecture":""}}}]},'
    '"NodeNames":["nodename"]}'
)
TT_ARGS_OLD = TT_ARGS.replace('{"name":"podname"}', '{"name":"podname","creationTimestamp":null}').replace(
    '{"name":"nodename"}', '{"name":"nodename","creationTimestamp":null}'
)


@pytest.mark.parametrize("text", [TT_ARGS, TT_ARGS_OLD, TT_ARGS.lower(), TT_ARGS_OLD.lower()])
def test_upstream_compatibility_fixture(text: str) -> None:
    view = codec.decode_extender_args(text.encode())
    assert view.pod.name == "podname"
    assert [n.name for n in view.nodes] == ["nodename"]
    assert view.node_names and view.node_raws is not None  # both forms set: both echoed
    out = json.loads(codec.join(codec.encode_filter_result(view, [SUCCESS])))
    assert out["NodeNames"] == ["nodename"] and out["Nodes"]["items"][0]["metadata"]["name"] == "nodename"


def test_lower_cased_document_decodes_like_exact() -> None:
    body = fixture_bytes("extenderargs_nocache_n10_space.json")
    exact = codec.decode_extender_args(body)
    lowered = codec.decode_extender_args(json.dumps(lower_keys(json.loads(body))).encode())
    assert [n.name for n in exact.nodes] == [n.name for n in lowered.nodes]

    # struct keys fold; map keys (labels, resources) are data, which lower_keys lower-cased too
    def folded(m: object) -> dict[str, object]:
        return {k.lower(): v for k, v in dict(m).items()}  # type: ignore[call-overload]

    for a, b in zip(exact.nodes, lowered.nodes, strict=True):
        assert folded(a.labels) == dict(b.labels) and folded(a.allocatable) == dict(b.allocatable)
        assert len(a.labels) > 5 and a.allocatable["cpu"] > 0
    assert folded(exact.pod.annotations) == dict(lowered.pod.annotations)
    assert dict(exact.pod.requests) == dict(lowered.pod.requests) and exact.pod.requests["cpu"] > 0


def test_repeated_key_last_wins_like_go() -> None:
    body = b'{"Pod":{"metadata":{"name":"first"}},"pod":{"metadata":{"name":"second"}},"Nodes":null,"NodeNames":["a"]}'
    assert codec.decode_extender_args(body).pod.name == "second"


def test_names_and_nodes_must_agree_when_both_set() -> None:
    body = TT_ARGS.replace('"NodeNames":["nodename"]', '"NodeNames":["other"]').encode()
    with pytest.raises(codec.DecodeError, match="name different nodes"):
        codec.decode_extender_args(body)


@pytest.mark.parametrize("name", PREEMPT_FIXTURES)
def test_preemption_args_both_modes(name: str) -> None:
    body = fixture_bytes(name)
    contract = models.ExtenderPreemptionArgs.model_validate_json(body)
    view = codec.decode_preemption_args(body)
    if contract.node_name_to_victims is not None:
        expected = {
            n: [p["metadata"]["uid"] for p in (v.pods or [])] for n, v in contract.node_name_to_victims.items() if v
        }
    else:
        assert contract.node_name_to_meta_victims is not None
        expected = {n: [p.uid for p in (v.pods or [])] for n, v in contract.node_name_to_meta_victims.items() if v}
    assert {n: [p.uid for p in v.pods] for n, v in view.candidates.items()} == expected
    result = models.ExtenderPreemptionResult.model_validate_json(codec.encode_preemption_result(view.candidates))
    assert result.node_name_to_meta_victims is not None
    assert {n: [p.uid for p in (v.pods or [])] for n, v in result.node_name_to_meta_victims.items()} == expected


def test_binding_args_and_result() -> None:
    ref, node = codec.decode_binding_args(fixture_bytes("bindingargs.json"))
    assert (ref.namespace, ref.name, ref.uid, node) == (
        "shop",
        "web-frontend-8nwljbtfbb-p4hn7",
        "39da7cf8-9020-428c-8b8b-9036d30131c2",
        "ip-10-0-32-14.eu-west-1.compute.internal",
    )
    assert codec.encode_binding_result() == b'{"Error":""}'
    ref2, _ = codec.decode_binding_args(go_marshal(lower_keys(json.loads(fixture_bytes("bindingargs.json")))))
    assert ref2 == ref


def test_prioritize_answer_is_a_bare_array_of_integers() -> None:
    view = codec.decode_extender_args(fixture_bytes("extenderargs_cache_n10.json"))
    out = codec.encode_host_priority_list(view.node_name_list(), list(range(10)))
    parsed = models.HostPriorityList.model_validate_json(out)
    assert [h.score for h in parsed.root or []] == list(range(10))
    assert out.startswith(b'[{"Host":"')


def test_schema_files_match_the_models(tmp_path: Path) -> None:
    from app.tools.schemas import write_schemas

    repo_schemas = Path(__file__).resolve().parents[2] / "schemas"
    for path in write_schemas(tmp_path):
        committed = repo_schemas / path.name
        assert committed.exists(), f"schemas/{path.name} is missing: run `make schemas`"
        assert committed.read_text() == path.read_text(), f"schemas/{path.name} drifted: run `make schemas`"


@pytest.mark.parametrize(
    "decode",
    [codec.decode_binding_args, codec.decode_preemption_args, codec.decode_extender_args],
)
def test_deep_nesting_is_a_decode_error_in_every_decoder(decode: Any) -> None:
    deep = b"[" * 5000 + b"]" * 5000
    for body in (b'{"PodName":' + deep + b"}", b'{"pod":{"metadata":{"x":' + deep + b"}}}"):
        with pytest.raises(codec.DecodeError, match="nests JSON values deeper than the decoder allows"):
            decode(body)


def test_the_same_pod_bytes_decode_once_and_another_pod_is_its_own() -> None:
    """kube-scheduler sends prioritize the very pod bytes it sent filter: that pod is decoded once
    (the same PodInfo); a pod of other bytes is decoded anew, and a malformed one is still refused
    after a good one."""
    memo = codec.RequestMemo()
    decode = partial(codec.decode_extender_args, memo=memo)
    doc = json.loads(fixture_bytes("extenderargs_cache_n10.json"))
    first = decode(go_marshal(doc))
    again = decode(go_marshal({**doc, "NodeNames": doc["NodeNames"][:3]}), keep_raw=False)
    assert again.pod is first.pod and again.names == doc["NodeNames"][:3]
    other = json.loads(json.dumps(doc))
    other["Pod"]["metadata"]["uid"] = "another-uid"
    other["Pod"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "3"}}
    second = decode(go_marshal(other))
    assert second.pod is not first.pod
    assert second.pod.uid == "another-uid"
    assert second.pod.requests["cpu"] == first.pod.requests["cpu"] - 250 + 3000  # its first container's 250m
    assert first.pod.uid == doc["Pod"]["metadata"]["uid"]
    other["Pod"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1e2i"}}
    with pytest.raises(codec.DecodeError, match="Pod"):
        decode(go_marshal(other))
    assert decode(go_marshal(doc)).pod.uid == doc["Pod"]["metadata"]["uid"]
    # another service's memo (and no memo) share nothing with this one
    assert codec.decode_extender_args(go_marshal(doc), memo=codec.RequestMemo()).pod is not decode(go_marshal(doc)).pod
    assert codec.decode_extender_args(go_marshal(doc)).pod is not decode(go_marshal(doc)).pod


def test_the_same_node_names_bytes_decode_once_and_answer_the_same_bytes() -> None:
    """kube-scheduler sends every pod's filter the same NodeNames, and prioritize the names that
    passed: a list of at least ``NAME_LIST_MIN`` names is decoded once (the same list object),
    filter's answer and prioritize's are the bytes of the general encodings, with other scores
    too; a short or another list is its own."""
    doc = json.loads(fixture_bytes("extenderargs_cache_n5000.json"))
    doc["NodeNames"] = doc["NodeNames"][:300]
    memo = codec.RequestMemo()
    decode = partial(codec.decode_extender_args, memo=memo)
    first = decode(go_marshal(doc))
    again = decode(go_marshal(doc), keep_raw=False)
    assert again.names is first.names and first.names == doc["NodeNames"]
    assert codec.kept_json(first.names, memo) == json.dumps(doc["NodeNames"], separators=(",", ":")).encode()
    answer = codec.join(codec.encode_filter_result(first, [SUCCESS] * 300))
    assert json.loads(answer)["NodeNames"] == doc["NodeNames"]
    assert codec.kept_json(list(first.names), memo) is None  # an equal list, but not the kept one
    general = codec.join(
        codec.encode_filter_result(
            codec.ExtenderArgsView(first.pod, None, None, b"{}", True, list(first.names)), [SUCCESS] * 300
        )
    )
    assert answer == general
    for scores in (
        [i % 11 for i in range(300)],
        [i % 11 for i in range(300)],
        [10 - i % 11 for i in range(300)],
        [0] * 300,
    ):
        names = again.names
        assert names is not None
        expected = msgspec.json.encode([{"Host": n, "Score": s} for n, s in zip(names, scores, strict=True)])
        assert codec.encode_host_priority_list(names, scores, memo) == expected
        assert codec.encode_host_priority_list(list(names), scores, memo) == expected
    short = {**doc, "NodeNames": doc["NodeNames"][: codec.NAME_LIST_MIN - 1]}
    assert decode(go_marshal(short)).names is not decode(go_marshal(short)).names
    other = {**doc, "NodeNames": doc["NodeNames"][1:]}
    assert decode(go_marshal(other)).names == doc["NodeNames"][1:]
    bad = {**doc, "NodeNames": [1, 2]}
    with pytest.raises(codec.DecodeError):
        decode(go_marshal(bad))
    assert decode(go_marshal(doc)).names is first.names  # still kept

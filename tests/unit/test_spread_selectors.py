"""``helper.DefaultSelector`` (pkg/scheduler/framework/plugins/helper/spread.go, v1.30) over the
stores of :mod:`app.cluster.selectors`: upstream's ``TestGetPodServices``
(helper/spread_test.go) and the DefaultSelector inputs of the PodTopologySpread tables
(podtopologyspread/filtering_test.go ``TestPreFilterState``, scoring_test.go
``TestPreScoreSkip``, ``TestPreScoreStateEmptyNodes`` and ``TestPodTopologySpreadScore``) as
data, then each branch of spread.go, the stores' events and their memory."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import msgspec
import pytest

from app.cluster.selectors import (
    KINDS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    STATEFUL_SETS,
    SelectorStore,
    SpreadSelectors,
    parse_group_version,
)
from app.framework import objects
from app.framework.types import PodInfo

RS_KIND = ("apps/v1", "ReplicaSet")
SS_KIND = ("apps/v1", "StatefulSet")
RC_KIND = ("v1", "ReplicationController")
#: upstream's ``fooSelector``: ``st.MakeLabelSelector().Exists("foo")``
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}


def pod(
    labels: dict[str, str],
    namespace: str = "",
    owner: tuple[str, str, str] | None = None,
    controller: bool | None = True,
) -> PodInfo:
    """``st.MakePod().Namespace(ns).Label(...).OwnerReference(name, gvk)`` (a controller reference)."""
    meta: dict[str, Any] = {"name": "p", "namespace": namespace, "uid": "uid-p", "labels": labels}
    if owner is not None:
        api_version, kind, name = owner
        ref: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": name, "uid": f"uid-{name}"}
        if controller is not None:
            ref["controller"] = controller
        meta["ownerReferences"] = [ref]
    return PodInfo(msgspec.convert({"metadata": meta, "spec": {}}, objects.Pod))


def service(name: str, namespace: str, selector: dict[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"ports": [{"port": 80}], "type": "ClusterIP", "clusterIP": "10.0.0.1"}
    if selector is not None:
        spec["selector"] = selector
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def rc(name: str, namespace: str, selector: dict[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": 3, "template": {"metadata": {"labels": selector or {}}}}
    if selector is not None:
        spec["selector"] = selector
    return {"kind": "ReplicationController", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def workload(kind: str, name: str, namespace: str, selector: dict[str, Any] | None) -> dict[str, Any]:
    """A ReplicaSet or StatefulSet (``kind``) with ``spec.selector``."""
    spec: dict[str, Any] = {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}
    if selector is not None:
        spec["selector"] = selector
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def selectors(
    services: list[dict[str, Any]] = (),  # type: ignore[assignment]
    rcs: list[dict[str, Any]] = (),  # type: ignore[assignment]
    rss: list[dict[str, Any]] = (),  # type: ignore[assignment]
    sss: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> SpreadSelectors:
    out = SpreadSelectors()
    for kind, docs in zip(KINDS, (services, rcs, rss, sss), strict=True):
        out.stores[kind].load(docs)
    return out


def sel(doc: dict[str, Any]) -> objects.LabelSelector:
    """A ``metav1.LabelSelector`` document decoded (``{}``: the empty selector)."""
    return msgspec.convert(doc, objects.LabelSelector)


# -- helper/spread_test.go: TestGetPodServices -------------------------------------------------------

#: three Services ``service-i`` of namespace ``test`` selecting ``app=test-i``
GET_POD_SERVICES = [service(f"service-{i}", "test", {"app": f"test-{i}"}) for i in range(3)]


@pytest.mark.parametrize(
    ("i", "want"),
    [
        (0, {"app": "test-0"}),  # GetPodServices for pod-0: services[0]
        (1, {"app": "test-1"}),
        (2, {"app": "test-2"}),
        (3, None),  # GetPodServices for pod-3: none
        (4, None),
    ],
)
def test_get_pod_services(i: int, want: dict[str, str] | None) -> None:
    """TestGetPodServices: pod ``test-pod-i`` (labels ``app=test-i``, ``label=label-i``) is selected
    by ``service-i`` only, and only when it exists; the default selector is that Service's."""
    got = selectors(services=GET_POD_SERVICES).default_selector(
        pod({"app": f"test-{i}", "label": f"label-{i}"}, namespace="test")
    )
    assert got == objects.LabelSelector(match_labels=want)


# -- the DefaultSelector inputs of the PodTopologySpread tables ----------------------------------------

UPSTREAM: list[dict[str, Any]] = [
    {
        # filtering_test.go TestPreFilterState "default constraints and a service"
        "name": "default constraints and a service",
        "pod": pod({"foo": "bar", "baz": "kar"}),
        "services": [service("s", "", {"foo": "bar"})],
        "want": {"matchLabels": {"foo": "bar"}},
    },
    {
        # scoring_test.go TestPodTopologySpreadScore "system defaulting, nodes don't have zone,
        # pods match service"
        "name": "system defaulting, pods match service",
        "pod": pod({"foo": ""}),
        "services": [service("s", "", {"foo": ""})],
        "want": {"matchLabels": {"foo": ""}},
    },
    {
        # scoring_test.go TestPreScoreStateEmptyNodes "system default constraints and a replicaset"
        # (and "default constraints and a replicaset")
        "name": "system default constraints and a replicaset",
        "pod": pod({"foo": "tar", "baz": "sup"}, "default", (*RS_KIND, "rs1")),
        "rss": [workload("ReplicaSet", "rs1", "default", FOO)],
        "want": FOO,
    },
    {
        # scoring_test.go TestPreScoreSkip "default constraints and a replicaset that doesn't match":
        # the pod's controller is rs2, only rs1 exists: nothing selects it (PreScore skips)
        "name": "default constraints and a replicaset that doesn't match",
        "pod": pod({"foo": "bar", "baz": "sup"}, "default", (*RS_KIND, "rs2")),
        "rss": [workload("ReplicaSet", "rs1", "default", {"matchExpressions": [{"key": "tar", "operator": "Exists"}]})],
        "want": {},
    },
]


@pytest.mark.parametrize("case", UPSTREAM, ids=[c["name"] for c in UPSTREAM])
def test_upstream_cases(case: dict[str, Any]) -> None:
    got = selectors(case.get("services", []), rss=case.get("rss", [])).default_selector(case["pod"])
    assert got == sel(case["want"])


# -- spread.go, branch by branch -----------------------------------------------------------------------

WEB = {"app": "web", "tier": "front"}

BRANCHES: list[dict[str, Any]] = [
    {
        "name": "services of another namespace do not count",
        "pod": pod(WEB, "shop"),
        "services": [service("web", "other", {"app": "web"})],
        "want": {},
    },
    {
        "name": "a service without selector selects nothing (nil), an empty one adds nothing",
        "pod": pod(WEB, "shop"),
        "services": [service("headless", "shop", None), service("empty", "shop", {})],
        "want": {},
    },
    {
        "name": "a service whose selector does not match the pod is skipped",
        "pod": pod(WEB, "shop"),
        "services": [service("api", "shop", {"app": "api"}), service("both", "shop", {"app": "web", "x": "y"})],
        "want": {},
    },
    {
        "name": "an empty label value must be present",
        "pod": pod({"app": "web"}, "shop"),
        "services": [service("s", "shop", {"canary": ""})],
        "want": {},
    },
    {
        "name": "the matching services' selectors are merged",
        "pod": pod(WEB, "shop"),
        "services": [service("a", "shop", {"app": "web"}), service("b", "shop", {"tier": "front"})],
        "want": {"matchLabels": WEB},
    },
    {
        "name": "a ReplicationController's map is merged over the services', matching or not",
        "pod": pod(WEB, "shop", (*RC_KIND, "rc")),
        "services": [service("a", "shop", {"app": "web"})],
        "rcs": [rc("rc", "shop", {"app": "old", "rc": "yes"})],
        "want": {"matchLabels": {"app": "old", "rc": "yes"}},
    },
    {
        "name": "'/v1' parses as the core group's v1",
        "pod": pod(WEB, "shop", ("/v1", "ReplicationController", "rc")),
        "rcs": [rc("rc", "shop", {"app": "web"})],
        "want": {"matchLabels": {"app": "web"}},
    },
    {
        "name": "a ReplicaSet's requirements are ANDed: a key the services set differently stays a requirement",
        "pod": pod(WEB, "shop", (*RS_KIND, "web-1")),
        "services": [service("a", "shop", {"app": "web"})],
        "rss": [
            workload(
                "ReplicaSet",
                "web-1",
                "shop",
                {
                    "matchLabels": {"app": "other", "tier": "front"},
                    "matchExpressions": [{"key": "track", "operator": "NotIn", "values": ["canary"]}],
                },
            )
        ],
        "want": {
            "matchLabels": {"app": "web", "tier": "front"},
            "matchExpressions": [
                {"key": "app", "operator": "In", "values": ["other"]},
                {"key": "track", "operator": "NotIn", "values": ["canary"]},
            ],
        },
    },
    {
        "name": "a StatefulSet's selector",
        "pod": pod(WEB, "shop", (*SS_KIND, "db")),
        "sss": [workload("StatefulSet", "db", "shop", {"matchLabels": {"app": "web"}})],
        "want": {"matchLabels": {"app": "web"}},
    },
    {
        "name": "the controller is looked up in the pod's namespace",
        "pod": pod(WEB, "shop", (*SS_KIND, "db")),
        "sss": [workload("StatefulSet", "db", "other", {"matchLabels": {"app": "web"}})],
        "want": {},
    },
    {
        "name": "an owner that is not the controller is ignored",
        "pod": pod(WEB, "shop", (*RS_KIND, "web-1"), controller=False),
        "rss": [workload("ReplicaSet", "web-1", "shop", {"matchLabels": {"app": "web"}})],
        "want": {},
    },
    {
        "name": "controller unset is not a controller",
        "pod": pod(WEB, "shop", (*RS_KIND, "web-1"), controller=None),
        "rss": [workload("ReplicaSet", "web-1", "shop", {"matchLabels": {"app": "web"}})],
        "want": {},
    },
    {
        "name": "another group/version of the kind is not supported",
        "pod": pod(WEB, "shop", ("extensions/v1beta1", "ReplicaSet", "web-1")),
        "rss": [workload("ReplicaSet", "web-1", "shop", {"matchLabels": {"app": "web"}})],
        "want": {},
    },
    {
        "name": "an unparsable apiVersion: the services' selector only",
        "pod": pod(WEB, "shop", ("apps/v1/x", "ReplicaSet", "web-1")),
        "services": [service("a", "shop", {"tier": "front"})],
        "rss": [workload("ReplicaSet", "web-1", "shop", {"matchLabels": {"app": "web"}})],
        "want": {"matchLabels": {"tier": "front"}},
    },
    {
        "name": "another controller kind (a Job) adds nothing",
        "pod": pod(WEB, "shop", ("batch/v1", "Job", "web-1")),
        "rss": [workload("ReplicaSet", "web-1", "shop", {"matchLabels": {"app": "web"}})],
        "want": {},
    },
    {
        "name": "a nil ReplicaSet selector (Nothing) adds no requirement",
        "pod": pod(WEB, "shop", (*RS_KIND, "web-1")),
        "services": [service("a", "shop", {"tier": "front"})],
        "rss": [workload("ReplicaSet", "web-1", "shop", None)],
        "want": {"matchLabels": {"tier": "front"}},
    },
    {
        "name": "an empty ReplicaSet selector (Everything) adds no requirement",
        "pod": pod(WEB, "shop", (*RS_KIND, "web-1")),
        "rss": [workload("ReplicaSet", "web-1", "shop", {})],
        "want": {},
    },
    {
        "name": "an invalid ReplicaSet selector is skipped",
        "pod": pod(WEB, "shop", (*RS_KIND, "web-1")),
        "services": [service("a", "shop", {"tier": "front"})],
        "rss": [
            workload("ReplicaSet", "web-1", "shop", {"matchExpressions": [{"key": "app", "operator": "Like"}]}),
        ],
        "want": {"matchLabels": {"tier": "front"}},
    },
]


@pytest.mark.parametrize("case", BRANCHES, ids=[c["name"] for c in BRANCHES])
def test_default_selector_branches(case: dict[str, Any]) -> None:
    store = selectors(case.get("services", []), case.get("rcs", []), case.get("rss", []), case.get("sss", []))
    assert store.default_selector(case["pod"]) == sel(case["want"])


@pytest.mark.parametrize(
    "selector",
    [
        {"matchExpressions": [{"key": "app", "operator": "In"}]},  # In without values
        {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]},
        {"matchLabels": {"bad key!": "x"}},
        {"matchLabels": {"app": "not a value"}},
        {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["-x"]}]},
        {"matchExpressions": [{"key": "app", "operator": "Like", "values": ["x"]}]},  # unknown operator
        {"matchExpressions": [{"key": "a/b/c", "operator": "Exists"}]},  # key not a qualified name
    ],
)
def test_invalid_controller_selectors_are_skipped(selector: dict[str, Any]) -> None:
    """``LabelSelectorAsSelector`` errors: the ReplicaSet contributes nothing."""
    store = selectors(rss=[workload("ReplicaSet", "rs", "ns", selector)])
    assert store.stores[REPLICA_SETS].get("ns", "rs") is None
    assert store.default_selector(pod({"app": "x"}, "ns", (*RS_KIND, "rs"))) == objects.LabelSelector()


def test_exists_with_empty_values_is_valid() -> None:
    """``values: []`` is no value (``len(vals) == 0``): an ``Exists`` requirement is kept."""
    exists = {"matchExpressions": [{"key": "app", "operator": "Exists", "values": []}]}
    store = selectors(rss=[workload("ReplicaSet", "rs", "ns", exists)])
    assert store.stores[REPLICA_SETS].get("ns", "rs") is not None


def test_parse_group_version() -> None:
    """``schema.ParseGroupVersion``."""
    assert parse_group_version("v1") == ("", "v1")
    assert parse_group_version("apps/v1") == ("apps", "v1")
    assert parse_group_version("/v1") == ("", "v1")
    assert parse_group_version("") == ("", "")
    assert parse_group_version("/") == ("", "")
    assert parse_group_version("a/b/c") is None


# -- the stores ------------------------------------------------------------------------------------


def _decoded(store: SelectorStore, doc: dict[str, Any]) -> Any:
    """``doc`` as the reflector decodes a watched object."""
    return store.object_decoder.decode(msgspec.json.encode(doc))


def test_store_follows_events_by_namespace() -> None:
    """ADDED/MODIFIED/DELETED per namespace; a selector removed drops the object; an update that
    leaves the selector alone (a status change) changes nothing."""
    spread = SpreadSelectors()
    services = spread.stores[SERVICES]
    services.replace([services.prepare(_decoded(services, service("a", "shop", {"app": "web"})))])
    web = pod(WEB, "shop")
    assert spread.default_selector(web) == sel({"matchLabels": {"app": "web"}})
    services.apply("ADDED", _decoded(services, service("b", "shop", {"tier": "front"})))
    assert spread.default_selector(web) == sel({"matchLabels": WEB})
    listed = services.in_namespace("shop")
    services.apply("MODIFIED", _decoded(services, service("b", "shop", {"tier": "front"})))
    assert services.in_namespace("shop") is listed  # nothing republished
    services.apply("MODIFIED", _decoded(services, service("b", "shop", None)))  # selector removed
    assert spread.default_selector(web) == sel({"matchLabels": {"app": "web"}})
    services.apply("DELETED", _decoded(services, service("a", "shop", {"app": "web"})))
    assert services.in_namespace("shop") == () and len(services) == 0
    services.apply("DELETED", _decoded(services, service("a", "shop", {"app": "web"})))  # twice: no-op

    rss = spread.stores[REPLICA_SETS]
    owned = pod(WEB, "shop", (*RS_KIND, "web-1"))
    rss.apply("ADDED", _decoded(rss, workload("ReplicaSet", "web-1", "shop", {"matchLabels": {"app": "web"}})))
    assert spread.default_selector(owned) == sel({"matchLabels": {"app": "web"}})
    rss.apply("DELETED", _decoded(rss, workload("ReplicaSet", "web-1", "shop", {"matchLabels": {"app": "web"}})))
    assert spread.default_selector(owned) == sel({})
    rss.missing("404")
    assert not rss.synced and rss.last_error == "404"


def test_store_kinds() -> None:
    assert KINDS == (SERVICES, REPLICATION_CONTROLLERS, REPLICA_SETS, STATEFUL_SETS)
    with pytest.raises(ValueError, match="unknown kind"):
        SelectorStore("deployments")


def test_memory_per_replica_set_is_small() -> None:
    """A kept ReplicaSet (a Deployment's: two matchLabels, unique ``pod-template-hash``) costs
    well under 400 bytes: only its name and selector pairs are stored, by namespace."""
    store = SelectorStore(REPLICA_SETS)
    n = 20_000
    docs = [
        msgspec.json.encode(
            workload(
                "ReplicaSet",
                f"app-{i % 2000}-{i:08x}",
                f"ns-{i % 50}",
                {"matchLabels": {"app": f"app-{i % 2000}", "pod-template-hash": f"{i:010x}"}},
            )
        )
        for i in range(n)
    ]
    gc.collect()
    tracemalloc.start()
    # only what this test and the store allocate: a thread left by another test in this worker
    # process must not count (tracemalloc sees the whole process)
    mine = [tracemalloc.Filter(True, __file__), tracemalloc.Filter(True, "*/app/cluster/selectors.py")]
    before = tracemalloc.take_snapshot().filter_traces(mine)
    store.replace([store.prepare(store.object_decoder.decode(d)) for d in docs])
    gc.collect()
    after = tracemalloc.take_snapshot().filter_traces(mine)
    tracemalloc.stop()
    used = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert len(store) == n
    assert 150 < used / n < 400, used / n  # a floor: the store is measured at all

"""The example KubeSchedulerConfiguration agrees with the embedded default profile and the routes."""

from __future__ import annotations

from pathlib import Path

import yaml
from fastapi.testclient import TestClient

from app.api import create_app
from app.cli import build_service
from app.framework.profile import parse_duration

MANIFEST = Path(__file__).resolve().parents[2] / "manifests" / "kube-scheduler-config.yaml"


def test_example_extender_entry_matches_default_profile() -> None:
    doc = yaml.safe_load(MANIFEST.read_text())
    assert doc["apiVersion"] == "kubescheduler.config.k8s.io/v1" and doc["kind"] == "KubeSchedulerConfiguration"
    (entry,) = doc["extenders"]
    service = build_service(None)
    profile = service.config.profiles[0]
    served = {k.removesuffix("Verb"): v for k, v in entry.items() if k.endswith("Verb")}
    assert set(served) == set(profile.extender.verbs)
    assert all(verb == value for verb, value in served.items())
    assert entry["nodeCacheCapable"] == profile.extender.node_cache_capable
    assert entry["weight"] == profile.extender.weight and entry["ignorable"] == profile.extender.ignorable
    assert parse_duration(entry["httpTimeout"]) == profile.extender.http_timeout_seconds
    server = service.config.server
    assert entry["urlPrefix"] == f"http://{server.host}:{server.port}"
    # every verb the entry names is a route the app really answers (kube-scheduler: prefix + "/" + verb)
    client = TestClient(create_app(service))
    for verb in served.values():
        r = client.post(f"/{verb}", content=b"{}")
        assert r.status_code == 400, (verb, r.status_code)  # decoded and refused, not 404/405

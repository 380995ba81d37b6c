"""Tools that tell the truth in every mode (issue 30), through the real ``python -m app``: validate
shows what each profile will run (the mode, the plugins per extension point with kube-scheduler's
defaults merged, in its order), accepts what render secures by itself and says so, and reports a
problem of every stage in one run; replay answers every profile of every shipped configuration,
standalone ones included, and never 500; every subcommand's help says what it does."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO, Server, cli, no_traceback

FIXTURES = REPO / "tests" / "fixtures"
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
BODIES = sorted(p for p in FIXTURES.glob("*.json") if p.name != "manifest.json")

#: kube-scheduler's extension points in its order (pkg/scheduler/apis/config/types.go ``Plugins``)
ORDER = [
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "preBind",
    "bind",
]


def points(stdout: str, profile: str) -> dict[str, str]:
    """The ``  point  plugins`` lines validate prints under ``profile <name>:``, in order."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"profile {profile}: "))
    out: dict[str, str] = {}
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        point, plugins = line.split(maxsplit=1)
        out[point] = plugins
    return out


def test_validate_shows_what_a_standalone_profile_runs() -> None:
    out = cli("validate", "examples/ip-scheduler.yaml")
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""  # no note that says nothing true about this file
    mode = next(line for line in out.stdout.splitlines() if line.startswith("profile ip: "))
    assert "standalone scheduler" in mode and "spec.schedulerName ip-scheduler" in mode
    assert "Lease kube-system/ip-scheduler" in mode
    assert "verbs" not in out.stdout and "nodeCacheCapable" not in out.stdout  # no extender fields
    shown = points(out.stdout, "ip")
    assert list(shown) == ORDER  # kube-scheduler's order; no point left empty is printed
    assert shown["queueSort"] == "PrioritySort" and shown["postFilter"] == "DynamicResources, DefaultPreemption"
    # kube-scheduler's default plugins merged, in getDefaultPlugins' order (v1.36.3: no in-tree volume
    # limits, NodeDeclaredFeatures appended and DynamicResources inserted before DefaultPreemption by
    # applyFeatureGates), then the profile's own
    assert shown["filter"] == (
        "NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, "
        "VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone, "
        "PodTopologySpread, InterPodAffinity, DynamicResources, NodeDeclaredFeatures, NodeResourcePool"
    )
    assert shown["score"] == (
        "TaintToleration (3), NodeAffinity (2), NodeResourcesFit (1), VolumeBinding (1), PodTopologySpread (2), "
        "InterPodAffinity (2), DynamicResources (2), NodeResourcesBalancedAllocation (1), ImageLocality (1), "
        "NodeResourcePool (2)"
    )
    assert shown["preBind"] == "VolumeBinding, DynamicResources"
    assert shown["bind"] == "DefaultBinder"


def test_validate_shows_how_kube_scheduler_calls_an_extender_profile() -> None:
    out = cli("validate", "examples/two-profiles.yaml")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert "examples/two-profiles.yaml: valid (2 profiles)" in out.stdout
    space = next(line for line in out.stdout.splitlines() if line.startswith("profile space: "))
    assert space == (
        "profile space: extender: kube-scheduler calls filter, prioritize (weight 1), preempt at /space/<verb> "
        "and /<verb> (nodeCacheCapable false; httpTimeout 5s; ignorable false)"
    )
    assert points(out.stdout, "space") == {
        "preFilter": "AnnotationNodeAffinity",
        "filter": "AnnotationNodeAffinity",
        "score": "NodeResourcesAllocatable (1)",
    }
    assert "schedulerName" not in out.stdout and "schedule (not serve)" not in out.stderr


def test_validate_accepts_a_bind_that_render_secures_and_says_so(tmp_path: Path) -> None:
    """The documented order, validate then render, works for a configuration that serves bind
    without server.tls: render adds mutual TLS itself. serve with the file as written still
    refuses it, and validate says both."""
    out = cli("validate", "examples/cluster.yaml", "--port", "8890")
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    assert "examples/cluster.yaml: valid (1 profile)" in out.stdout
    note = next(line for line in out.stderr.splitlines() if line.startswith("note: "))
    assert "serves bind without client-certificate verification" in note and "127.0.0.1:8890" in note
    assert "serve refuses to start with this file as it is" in note
    assert "render secures bind by itself" in note and "/etc/kubernetes/scheduler-extender/pki" in note
    assert "schedule (not serve)" not in out.stderr
    rendered = cli("render", "--config", "examples/cluster.yaml", "--target", "kubeadm", "--out", str(tmp_path / "m"))
    assert rendered.returncode == 0, rendered.stderr
    config = yaml.safe_load((tmp_path / "m" / "scheduler-extender-config.yaml").read_text())
    assert config["server"]["tls"]["clientCAFile"] == "/etc/kubernetes/scheduler-extender/pki/ca.crt"
    served = cli("serve", "--config", "examples/cluster.yaml", "--port", "8890")
    assert served.returncode == 1 and "127.0.0.1:8890 could bind" in served.stderr
    # TLS without client certificates is a choice render keeps as it is: validate refuses it
    pki = tmp_path / "pki"
    assert cli("certs", "--out", str(pki)).returncode == 0
    doc = yaml.safe_load((REPO / "examples" / "cluster.yaml").read_text())
    doc["server"]["tls"] = {
        "certFile": str(pki / "server.crt"),
        "keyFile": str(pki / "server.key"),
        "scheduler": {"caFile": str(pki / "ca.crt")},
    }
    path = tmp_path / "tls-without-client-ca.yaml"
    path.write_text(yaml.safe_dump(doc))
    refused = cli("validate", str(path))
    assert refused.returncode == 1 and "serves bind without client-certificate verification" in refused.stderr
    assert "render secures" not in refused.stderr
    # the refusal serve would print for the same file (bootstrap.bind_refusal), not a text of its own
    assert "Set server.tls with clientCAFile (python -m app certs makes the files)" in refused.stderr


FIVE_MISTAKES = """\
apiVersion: config.scheduler-extender.dev/v1alpha1
kind: ExtenderConfiguration
server:
  tls: {certFile: /nonexistent/server.crt, keyFile: /nonexistent/server.key, clientCAFile: /nonexistent/ca.crt,
        scheduler: {caFile: /nonexistent/ca.crt}}
cluster: {}
diagnostics:
  decisions: {maxRecords: many}
profiles:
- name: ip
  plugins:
    filter: [{name: NodeResourcePool}]
    score: [{name: NodeResourcePool, weight: 0}]
  pluginConfig:
  - name: NodeResourcePool
    args: {pool: underlay-ip, defaultCapacity: -3, consumers: {schedulerNames: [ip-scheduler]}}
- name: binder
  extender: {verbs: [filter, bind], httpTimeout: 5s}
  plugins:
    filter: [{name: NodeResourcesFit}]
    bind: [{name: DefaultBinder}]
  pluginConfig:
  - name: DefaultBinder
    args: {timeoutSeconds: 10}
"""


@pytest.mark.parametrize("command", [["validate"], ["serve", "--config"]])
def test_a_mistake_at_every_stage_is_reported_in_one_run(tmp_path: Path, command: list[str]) -> None:
    """Schema, weight, args, a factory's own check of its args and the start-up checks: five
    mistakes, one run, each with its field path (four runs before)."""
    path = tmp_path / "five.yaml"
    path.write_text(FIVE_MISTAKES)
    out = cli(*command, str(path))
    no_traceback(out)
    assert out.returncode == 1
    for problem in (
        "diagnostics.decisions.maxRecords: Input should be a valid integer",  # the schema
        "profiles[0].plugins.score[0].weight: must be > 0",  # a weight
        "profiles[0].pluginConfig[0].args.defaultCapacity: Input should be greater than or equal to 0",  # args
        "profiles[1].pluginConfig[0].args: DefaultBinder: timeoutSeconds 10 must be below the profile's "
        "httpTimeout (5s)",  # what the plugin's factory refuses
        "server.tls.certFile: cannot read /nonexistent/server.crt",  # the start-up checks
        "server.tls.clientCAFile: cannot read /nonexistent/ca.crt",
    ):
        assert problem in out.stderr, out.stderr


def test_two_plugins_refusing_their_args_are_both_reported(tmp_path: Path) -> None:
    doc = yaml.safe_load(FIVE_MISTAKES)
    doc["server"] = {}
    doc["diagnostics"] = {}
    doc["profiles"] = [doc["profiles"][1]]
    profile = doc["profiles"][0]
    profile["extender"]["verbs"] = ["filter", "bind"]
    profile["plugins"]["permit"] = [{"name": "Coscheduling"}]
    profile["plugins"]["filter"].append({"name": "Coscheduling"})
    profile["pluginConfig"].append({"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 30}})
    path = tmp_path / "two-factories.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = cli("validate", str(path))
    assert out.returncode == 1
    assert "profiles[0].pluginConfig[0].args: DefaultBinder: timeoutSeconds 10 must be below" in out.stderr
    assert "profiles[0].pluginConfig[1].args: Coscheduling: permitWaitingTimeSeconds 30" in out.stderr


def test_replay_answers_a_standalone_profile() -> None:
    """The issue's command: the ip-scheduler's profile (kube-scheduler's defaults merged, with
    ImageLocality) over full nodes answered HTTP 500 (request nodes decoded without status.images)."""
    out = cli(
        "replay",
        "tests/fixtures/extenderargs_nocache_n10.json",
        "--config",
        "examples/ip-scheduler.yaml",
        "--cluster-state",
        "examples/cluster-state-n10.json",
    )
    no_traceback(out)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "500" not in out.stdout and "AttributeError" not in out.stderr
    assert "note: profile ip schedules the pods of schedulerName ip-scheduler itself" in out.stdout
    header = next(line for line in out.stdout.splitlines() if line.startswith("NODE"))
    assert "ImageLocality(0-100)" in header and "TOTAL" in header
    assert "6/10 nodes pass" in out.stdout


IMAGE_LOCALITY = """\
apiVersion: config.scheduler-extender.dev/v1alpha1
kind: ExtenderConfiguration
profiles:
- name: images
  extender: {verbs: [filter, prioritize], nodeCacheCapable: false}
  plugins:
    filter: [{name: AnnotationNodeAffinity}]
    score: [{name: ImageLocality}]
"""


def test_an_extender_profile_with_image_locality_scores_full_nodes(tmp_path: Path) -> None:
    """nodeCacheCapable: false and ImageLocality: the nodes of the request keep status.images for
    this profile (its plugins declare they read them), through the server and through replay."""
    path = tmp_path / "images.yaml"
    path.write_text(IMAGE_LOCALITY)
    body = (FIXTURES / "extenderargs_nocache_n10.json").read_bytes()
    server = Server(path)
    try:
        live = server.post("prioritize", body)
    finally:
        server.stop()
    assert live.status_code == 200, live.text
    scores = {h["Host"]: h["Score"] for h in live.json()}
    assert len(scores) == 10 and any(scores.values())  # the images on the nodes count
    replayed = cli("replay", str(FIXTURES / "extenderargs_nocache_n10.json"), "--config", str(path), "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["prioritize"] == {"status": 200, "answer": live.json()}


def _verbs(name: str) -> list[str]:
    if name.startswith("extenderargs"):
        return ["filter", "prioritize"]
    return ["preempt"] if name.startswith("preemptionargs") else []


@pytest.mark.parametrize("example", [p.name for p in EXAMPLES])
def test_replay_never_answers_500_for_a_shipped_configuration(example: str) -> None:
    """Every profile of every shipped configuration (standalone ones included), every recorded
    body, through replay's own path (the server's verbs, :func:`app.tools.replay.answer`), with the
    example cluster state: no answer is a 500 (a plugin failing on a request it was not built for)."""
    from app.bootstrap import build_service
    from app.tools.replay import answer, load_cluster_state

    logging.disable(logging.ERROR)
    try:
        service = build_service(str(REPO / "examples" / example))
        if service.cluster is not None:
            load_cluster_state(service, [str(REPO / "examples" / "cluster-state-n10.json")])
        failures: list[Any] = []
        for profile in service.frameworks:
            for body in BODIES:
                for verb in _verbs(body.name):
                    answered = answer(service, verb, profile, body.read_bytes())
                    if answered.status >= 500 and answered.status != 503:
                        failures.append((profile, body.name, verb, answered.status))
    finally:
        logging.disable(logging.NOTSET)
    assert failures == []


def test_every_subcommand_says_what_it_does() -> None:
    from app.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(commands) >= {"serve", "schedule", "certs", "explain", "check-scheduler-config"}
    for name, sub in commands.items():
        assert sub.description and len(sub.description) > 60, name
    for name in ("schedule", "certs", "explain", "check-scheduler-config"):  # the four that had none
        out = cli(name, "--help")
        description = "".join(commands[name].description.split())
        assert description in "".join(out.stdout.split()), name  # wrapped to the terminal (at hyphens too), whole
        assert max(len(line) for line in out.stdout.splitlines() if not line.startswith("  python -m app")) <= 100

"""Capture of live traffic through the real server, then ``replay --capture`` with one plugin's args
changed: the diff must be exactly what a server on the changed configuration answers differently."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from app.tools.capture_diff import filter_verdicts
from tests.conftest import REPO, Server
from tests.support.bodies import fixture, go_marshal

BODIES = ["extenderargs_nocache_n10.json", "extenderargs_nocache_n10_space.json", "extenderargs_nocache_n100.json"]
#: the capture keeps namespace shop only: the space pod (namespace platform) is not captured
CAPTURED = [b for b in BODIES if b != "extenderargs_nocache_n10_space.json"]


def body_of(name: str) -> bytes:
    """The fixture, its pod renamed after the fixture (n10 and n100 carry the same pod)."""
    doc = fixture(name)
    doc["Pod"]["metadata"]["name"] = name.removesuffix(".json").replace("_", "-")
    return go_marshal(doc)


def config(tmp: Path, name: str, exclusive: bool, capture: Path | None = None) -> Path:
    doc = yaml.safe_load((REPO / "examples" / "two-profiles.yaml").read_text())
    doc["profiles"][0]["pluginConfig"][0]["args"]["exclusive"] = exclusive
    if capture is not None:
        doc["diagnostics"] = {"capture": {"enabled": True, "path": str(capture), "namespaces": ["shop"]}}
    path = tmp / name
    path.write_text(yaml.safe_dump(doc))
    return path


def answers(server: Server) -> dict[str, tuple[Any, Any]]:
    out = {}
    for body in BODIES:
        raw = body_of(body)
        out[body] = (server.post("filter", raw).json(), server.post("prioritize", raw).json())
    return out


def test_replay_reports_exactly_the_changed_decisions(tmp_path: Path) -> None:
    capture = tmp_path / "capture.jsonl"
    old = Server(config(tmp_path, "old.yaml", exclusive=True, capture=capture))
    try:
        before = answers(old)
    finally:
        old.stop()  # the writer flushes on shutdown
    lines = [json.loads(line) for line in capture.read_text().splitlines()]
    assert [line["verb"] for line in lines] == ["filter", "prioritize"] * len(CAPTURED)
    assert all(line["status"] == 200 and line["profile"] == "space" for line in lines)

    changed = config(tmp_path, "new.yaml", exclusive=False)
    new = Server(changed)
    try:
        after = answers(new)  # the ground truth: what the changed configuration answers
    finally:
        new.stop()
    expected: dict[str, set[str]] = {}
    for body in CAPTURED:
        was, now = filter_verdicts(before[body][0]) or {}, filter_verdicts(after[body][0]) or {}
        pod = json.loads(body_of(body))["Pod"]["metadata"]
        flipped = {n for n in was if was[n][0] != now[n][0]}
        if flipped:
            expected.setdefault(f"{pod['namespace']}/{pod['name']}", set()).update(flipped)
    assert expected  # the change matters for some pod (the edge node no longer reserved)

    out = subprocess.run(
        [sys.executable, "-m", "app", "replay", "--capture", str(capture), "--config", str(changed), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(out.stdout)
    reported = {pod: set(d["filterChanged"]) for pod, d in report["pods"].items() if d["filterChanged"]}
    assert reported == expected
    assert report["requests"] == {"filter": len(CAPTURED), "prioritize": len(CAPTURED)}
    assert report["summary"]["changed"] == len(expected)
    text = subprocess.run(
        [sys.executable, "-m", "app", "replay", "--capture", str(capture), "--config", str(changed)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"summary: {len(expected)} of " in text and "UnschedulableAndUnresolvable (" in text and "-> Success" in text

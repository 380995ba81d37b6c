"""Request bodies for tests and benchmarks, built from the recorded fixtures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SHARED_FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"


def fixture_bytes(name: str) -> bytes:
    """The bytes of a fixture file in tests/fixtures."""
    return (FIXTURES / name).read_bytes()


def fixture(name: str) -> Any:
    """A fixture file parsed as JSON."""
    return json.loads(fixture_bytes(name))


def go_marshal(doc: Any) -> bytes:
    """Compact JSON as Go's json.Marshal writes it (no spaces; <, >, & escaped)."""
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def nocache_body(nodes: int) -> bytes:
    """A non-cache ExtenderArgs body with ``nodes`` full nodes.

    Uses the recorded file when one of that size exists (tests/fixtures, then ../shared/fixtures);
    otherwise repeats the 100-node file's nodes with renamed copies (``<name>-r<k>``).
    """
    for base in (FIXTURES, SHARED_FIXTURES):
        path = base / f"extenderargs_nocache_n{nodes}.json"
        if path.exists():
            return path.read_bytes()
    doc = fixture("extenderargs_nocache_n100.json")
    template = doc["Nodes"]["items"]
    items = []
    for i in range(nodes):
        node = json.loads(json.dumps(template[i % len(template)]))
        if i >= len(template):
            name = f"{node['metadata']['name']}-r{i // len(template)}"
            node["metadata"]["name"] = name
            node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        items.append(node)
    doc["Nodes"]["items"] = items
    return go_marshal(doc)


def lower_keys(value: Any) -> Any:
    """Every object key lower-cased, recursively (kube-scheduler's TestCompatibility lower-cases
    whole documents; keys are what Go matches case-insensitively)."""
    if isinstance(value, dict):
        return {k.lower(): lower_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [lower_keys(v) for v in value]
    return value


def cluster_nodes(names: list[str]) -> list[dict[str, Any]]:
    """Node objects for ``names``: the recorded node of that name from the 100-node fixture, or a
    copy of one renamed (cache-mode fixtures name up to 5000 nodes, the full-node file has 100)."""
    template = fixture("extenderargs_nocache_n100.json")["Nodes"]["items"]
    by_name = {n["metadata"]["name"]: n for n in template}
    out = []
    for i, name in enumerate(names):
        node = json.loads(json.dumps(by_name.get(name) or template[i % len(template)]))
        node["metadata"]["name"] = name
        node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        node["metadata"].pop("managedFields", None)
        out.append(node)
    return out

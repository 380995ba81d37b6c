"""The house's structure (ARCHITECTURE.md): the import contracts of pyproject.toml hold, they do
catch a bad import, and a request reaches its first plugin in few calls from the ASGI edge."""

from __future__ import annotations

import shutil
import subprocess
import sys
import traceback
from pathlib import Path
from typing import ClassVar

import pytest

from app.config import parse_config
from app.framework import SUCCESS, CycleState, NodeInfo, PluginEntry, PodInfo, Status, build_registry
from app.plugins import IN_TREE
from tests.api.test_app import AppClient
from tests.support.bodies import fixture_bytes

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_import_contracts_hold() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 kept, 0 broken" in result.stdout


PLUGINS_NOT_RUNTIME = "Plugins never import the framework runtime"
FRAMEWORK_NOT_EXTENDER = "The framework imports nothing of the extender"


@pytest.mark.parametrize(
    ("module", "bad_import", "broken"),
    [
        # a plugin reaching into the cluster state's internals instead of its ClusterHandle
        (
            "app/plugins/chaos/coin_flip.py",
            "from app.cluster.cache import Cache",
            "Plugins import only the framework",
        ),
        # the ground floor importing the HTTP layer (a circle in the making)
        ("app/framework/status.py", "import app.api.service", "Imports run only downward"),
        # the cluster state importing the scheduler above it
        ("app/cluster/cache.py", "import app.scheduler.queue", "Imports run only downward"),
        # a plugin reaching into the runtime for what the framework's helpers hold (MAX_NODE_SCORE)
        ("app/plugins/imagelocality.py", "from app.framework.runtime import Framework", PLUGINS_NOT_RUNTIME),
        # ... or reaching it through the SDK, were the package to import its runtime
        ("app/framework/__init__.py", "from app.framework.runtime import Framework", PLUGINS_NOT_RUNTIME),
        # the framework importing its adapter, the extender's verbs
        ("app/framework/runtime/framework.py", "import app.extender.verbs", FRAMEWORK_NOT_EXTENDER),
    ],
)
def test_a_bad_import_breaks_a_contract(tmp_path: Path, module: str, bad_import: str, broken: str) -> None:
    shutil.copytree(ROOT / "app", tmp_path / "app", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{bad_import}  # noqa\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1
    assert f"{broken} BROKEN" in result.stdout, result.stdout  # that contract, by its name


class Probe:
    """A PreFilter + Filter plugin that records the call stack it is called with."""

    name = "Probe"
    stacks: ClassVar[list[list[traceback.FrameSummary]]] = []

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: object) -> tuple[None, Status]:
        Probe.stacks.append(traceback.extract_stack())
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        Probe.stacks.append(traceback.extract_stack())
        return SUCCESS


def _calls_from_the_edge(stack: list[traceback.FrameSummary]) -> list[str]:
    edge = max(i for i, f in enumerate(stack) if f.name == "__call__" and f.filename.endswith("app/api/edge.py"))
    return [f.name for f in stack[edge + 1 :]]


def test_a_filter_request_reaches_its_first_plugin_in_at_most_five_calls() -> None:
    """From the ASGI edge (``VerbRouter.__call__``) to the plugin's first method: the answer, the
    verb's handler, the framework's run, its extension point's (``RunPreFilterPlugins``, the
    per-plugin Filter loop), the plugin."""
    from app.bootstrap import assemble, build_app

    registry = build_registry([*IN_TREE, PluginEntry(name="Probe", factory=lambda args, handle: Probe())], False)
    config = parse_config(
        {
            "apiVersion": "config.scheduler-extender.dev/v1alpha1",
            "kind": "ExtenderConfiguration",
            "profiles": [
                {"name": "default", "extender": {"verbs": ["filter"]}, "plugins": {"filter": [{"name": "Probe"}]}}
            ],
        },
        registry,
    )
    app = build_app(assemble(config, registry))
    Probe.stacks.clear()
    answer = AppClient(app).post("/filter", content=fixture_bytes("extenderargs_nocache_n10.json"))
    assert answer.status_code == 200 and len(Probe.stacks) == 11  # PreFilter once, Filter per node
    first, filter_call = _calls_from_the_edge(Probe.stacks[0]), _calls_from_the_edge(Probe.stacks[1])
    assert first[-1] == "pre_filter" and len(first) <= 5, first
    assert filter_call[-1] == "filter" and len(filter_call) <= 5, filter_call

"""The house rules ARCHITECTURE.md states that a test can check: short module docstrings, no
oversized module without a stated reason, and one tree of deliberate errors, each error named in
the tree's listing (``app/framework/errors.py``)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import app
from app.framework.errors import SchedulerExtenderError

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
#: the longest module docstring (lines) and module (lines) the house allows without a reason
MAX_MODULE_DOC_LINES = 30
MAX_MODULE_LINES = 600


def _modules() -> list[Path]:
    return sorted(p for p in APP.rglob("*.py") if "__pycache__" not in p.parts)


def _large_files_with_reasons() -> dict[str, str]:
    """``path -> reason`` from ARCHITECTURE.md's "Large modules" table."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    section = text.split("## Large modules", 1)[1].split("\n## ", 1)[0] if "## Large modules" in text else ""
    return {m[1]: m[2].strip() for m in re.finditer(r"^\| `(app/[^`]+\.py)` \| ([^|]+)\|", section, re.M)}


def test_module_docstrings_are_short() -> None:
    long = {}
    for path in _modules():
        doc = ast.get_docstring(ast.parse(path.read_text()), clean=False)
        if doc is not None and doc.count("\n") + 1 > MAX_MODULE_DOC_LINES:
            long[str(path.relative_to(ROOT))] = doc.count("\n") + 1
    assert long == {}, f"module docstrings over {MAX_MODULE_DOC_LINES} lines: {long}"


def test_a_large_module_has_its_reason_in_architecture_md() -> None:
    reasons = _large_files_with_reasons()
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in _modules()}
    unexplained = {path: n for path, n in sizes.items() if n > MAX_MODULE_LINES and path not in reasons}
    assert unexplained == {}, f"over {MAX_MODULE_LINES} lines with no reason in ARCHITECTURE.md: {unexplained}"
    # and the table names no module that is gone or small again
    stale = {path for path in reasons if sizes.get(path, 0) <= MAX_MODULE_LINES}
    assert stale == set(), f"ARCHITECTURE.md gives reasons for modules that are not large: {stale}"


def _public_errors() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(app.__path__, "app."):
        if info.name.startswith("app.plugins.chaos") or info.name == "app.__main__":
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == info.name
                and not name.startswith("_")
            ):
                found[f"{info.name}.{name}"] = value
    return [found[k] for k in sorted(found)]


@pytest.mark.parametrize("error", _public_errors(), ids=lambda e: f"{e.__module__}.{e.__name__}")
def test_every_public_error_is_in_the_project_tree(error: type[BaseException]) -> None:
    assert issubclass(error, SchedulerExtenderError), f"{error.__name__} derives from {error.__mro__[1].__name__}"
    tree = inspect.getdoc(importlib.import_module("app.framework.errors")) or ""
    assert re.search(rf"\b{error.__name__}\b", tree), f"{error.__name__} is missing from errors.py's listing"


def test_the_error_rule_can_fail() -> None:
    """The walk finds errors at all, and a stray one would be seen (a class outside the tree)."""
    errors = _public_errors()
    assert SchedulerExtenderError in errors and len(errors) > 10
    stray = type("StrayError", (Exception,), {})
    assert not issubclass(stray, SchedulerExtenderError)


def test_every_module_architecture_md_names_exists() -> None:
    """A path ARCHITECTURE.md gives (`app/...`) is a module or package of the tree."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    named = set(re.findall(r"`(app/[\w/]+(?:\.py)?)/?`", text))
    assert len(named) > 15
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert missing == [], f"ARCHITECTURE.md names modules that do not exist: {missing}"

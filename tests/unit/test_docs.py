"""The documentation site (project issue 23, item 2): the generated references match the code they
are generated from (a field or an argument added without ``make reference`` fails here), every page
is in the navigation, every built-in plugin has a page, the configuration examples load, and the
README fits on two screens. ``make test`` also builds the site with ``mkdocs build --strict``."""

from __future__ import annotations

import argparse
import difflib
import re
import shutil
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import Field, create_model

from app.bootstrap import assemble
from app.cli import build_parser
from app.config import bind_exposure, parse_config
from app.framework.registry import PluginEntry, Registry
from app.plugins import IN_TREE, default_registry
from app.tools.reference import BEGIN, END, plugin_page, references, stale
from tests.conftest import REPO

DOCS = REPO / "docs"
README_MAX_LINES = 90


def _nav_pages(nav: Any) -> Iterator[str]:
    """Every page path named in mkdocs.yml's ``nav`` (nested sections included)."""
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from _nav_pages(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from _nav_pages(value)


def _nav() -> list[str]:
    return list(_nav_pages(yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]))


# -- the generated pages --------------------------------------------------------------------------


@pytest.mark.parametrize("page", sorted(references(build_parser(), DOCS)), ids=str)
def test_generated_page_is_up_to_date(page: Path) -> None:
    expected = references(build_parser(), DOCS)[page]
    path = DOCS / page
    actual = path.read_text(encoding="utf-8") if path.is_file() else ""
    if actual != expected:
        diff = "".join(
            list(difflib.unified_diff(actual.splitlines(True), expected.splitlines(True), "committed", "code"))[:40]
        )
        pytest.fail(f"docs/{page.as_posix()} is out of date: run make reference\n{diff}")


def _scratch_docs(tmp_path: Path) -> Path:
    """A copy of docs/ to regenerate into, so the checks below never touch the repository."""
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    return docs


def test_a_field_added_to_a_plugin_args_model_is_drift(tmp_path: Path) -> None:
    docs = _scratch_docs(tmp_path)
    assert stale(build_parser(), docs) == []
    entry = next(e for e in IN_TREE if e.name == "NodeResourcePool")
    assert entry.args is not None
    grown = create_model(
        "NodeResourcePoolArgs", __base__=entry.args, reservedSlots=(int, Field(default=0, ge=0))
    )  # a new field, as a change to the plugin would add it
    registry = Registry({e.name: e for e in IN_TREE})
    registry.entries[entry.name] = PluginEntry(
        name=entry.name, factory=entry.factory, args=grown, needs_cluster=entry.needs_cluster, summary=entry.summary
    )
    problems = stale(build_parser(), docs, registry)
    assert f"{docs / 'reference/configuration.md'} is out of date: run make reference" in problems
    assert f"{docs / plugin_page(entry.name)} is out of date: run make reference" in problems
    assert "reservedSlots" in references(build_parser(), docs, registry)[plugin_page(entry.name)]


def test_an_argument_added_to_the_command_line_is_drift(tmp_path: Path) -> None:
    docs = _scratch_docs(tmp_path)
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub.choices["serve"].add_argument("--workers", type=int, default=1, help="worker processes")
    assert stale(parser, docs) == [f"{docs / 'reference/cli.md'} is out of date: run make reference"]


def test_a_plugin_page_without_markers_is_refused(tmp_path: Path) -> None:
    docs = _scratch_docs(tmp_path)
    page = docs / plugin_page("CoinFlip")
    page.write_text(page.read_text().replace(BEGIN, ""))
    with pytest.raises(ValueError, match="missing: add them where the args go"):
        references(build_parser(), docs)


# -- the site's pages -----------------------------------------------------------------------------


def test_every_page_is_in_the_nav() -> None:
    nav = _nav()
    # what mkdocs.yml's exclude_docs leaves out (fragments spliced into a page) is no page
    excluded = (yaml.safe_load((REPO / "mkdocs.yml").read_text()).get("exclude_docs") or "").split()
    pages = sorted(
        p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if not any(fnmatch(p.name, e) for e in excluded)
    )
    assert sorted(set(nav)) == sorted(nav), "a page is in the nav twice"
    assert [p for p in pages if p not in nav] == [], "pages missing from mkdocs.yml's nav"
    assert [p for p in nav if p not in pages] == [], "the nav names pages that do not exist"


def test_every_builtin_plugin_has_a_page() -> None:
    nav = _nav()
    index = (DOCS / "plugins" / "index.md").read_text()
    for entry in IN_TREE:
        page = plugin_page(entry.name)
        path = DOCS / page
        assert path.is_file(), f"plugin {entry.name} has no page: write docs/{page.as_posix()}"
        text = path.read_text()
        assert text.startswith(f"# {entry.name}\n"), f"docs/{page.as_posix()} must be titled {entry.name}"
        assert BEGIN in text and END in text, f"docs/{page.as_posix()}: no generated args block"
        for section in ("## What it does", "## Example", "## Upstream"):
            assert section in text, f"docs/{page.as_posix()} has no {section!r} section"
        assert page.as_posix() in nav, f"docs/{page.as_posix()} is not in mkdocs.yml's nav"
        assert f"]({page.name})" in index, f"docs/plugins/index.md does not link {entry.name}'s page"


def _config_examples() -> Iterator[tuple[str, str]]:
    """Every YAML block of the docs that is a whole configuration file (``apiVersion`` first)."""
    for path in sorted(DOCS.rglob("*.md")):
        for match in re.finditer(r"```yaml\n(.*?)```", path.read_text(), re.S):
            if match.group(1).startswith("apiVersion: config.scheduler-extender.dev/"):
                line = path.read_text().count("\n", 0, match.start()) + 1
                yield f"{path.relative_to(DOCS).as_posix()}:{line}", match.group(1)


EXAMPLES = list(_config_examples())


@pytest.mark.parametrize(("where", "text"), EXAMPLES, ids=[w for w, _ in EXAMPLES])
def test_configuration_examples_load(where: str, text: str) -> None:
    registry = default_registry(load_entry_points=False)
    config = parse_config(yaml.safe_load(text), registry, where)
    assemble(config, registry, where)  # every plugin accepts its args
    assert bind_exposure(config) is None or config.server.insecure_bind, f"{where}: serve would refuse bind"


def test_every_plugin_page_has_a_configuration_example() -> None:
    pages = {where.split(":")[0] for where, _ in EXAMPLES}
    for entry in IN_TREE:
        assert plugin_page(entry.name).as_posix() in pages, f"{entry.name}'s page has no whole configuration example"


# -- the README -----------------------------------------------------------------------------------


def test_the_readme_fits_on_two_screens() -> None:
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move detail into docs/"
    text = "\n".join(lines)
    # what it is, which mode, the two commands, the docs, the license
    for heading in ("## Which mode", "## Set-up: the two commands", "## Documentation", "## License"):
        assert f"\n{heading}\n" in text, heading
    for page in ("docs/install/kubeadm.md", "docs/install/second-scheduler.md", "docs/install/standalone.md"):
        assert f"]({page})" in text and (REPO / page).is_file(), page
    assert "make docs" in text


def test_the_readme_links_only_to_files_that_exist() -> None:
    text = (REPO / "README.md").read_text()
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if not target.startswith(("http://", "https://")):
            assert (REPO / target).exists(), f"README.md links to {target}, which does not exist"

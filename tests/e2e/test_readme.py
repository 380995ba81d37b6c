"""The runnable examples of the README and of the documentation pages (``docs/**/*.md``), run as a
newcomer would from a clone: the blocks marked ``<!-- runnable -->`` are executed with bash from the
repository root, the virtualenv's ``python`` first on PATH, against the real server on a free port
(the pages' 127.0.0.1:8888 rewritten to it, so the suite passes beside the ``make run`` the README
starts in another shell). Each test is named after its page and line (``docs/getting-started.md:30``).

- a ``sh`` block runs as one script (``set -euo pipefail``); its marker lists the excerpts its
  output must contain (``<!-- runnable; expect: A | B -->``);
- a ``console`` block: each ``$ command`` runs (continued on the next lines while a line ends with
  ``\\``), and every output line shown under it (``...`` lines aside) must appear in what it prints.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, Server

BLOCK = re.compile(r"<!-- runnable(?:; expect: (?P<expect>.*?))? -->\n```(?P<lang>sh|console)\n(?P<body>.*?)```", re.S)
#: the pages whose runnable blocks run: the README and every page of the documentation site
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _blocks() -> list[tuple[str, str, str, str | None]]:
    """``(where, lang, body, expect)`` of every runnable block, ``where`` being ``page:line``."""
    out = []
    for page in PAGES:
        text = page.read_text()
        for m in BLOCK.finditer(text):
            where = f"{page.relative_to(REPO).as_posix()}:{text.count(chr(10), 0, m.start()) + 1}"
            out.append((where, m.group("lang"), m.group("body"), m.group("expect")))
    return out


BLOCKS = _blocks()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """The embedded default, as ``make run`` serves it, but on a free port: the pages' own 8888
    may be taken by the ``make run`` the README starts in another shell."""
    s = Server()
    yield s
    s.stop()


def on_port(text: str, port: int) -> str:
    """``text`` with the pages' ``localhost:8888``/``127.0.0.1:8888`` on ``port`` instead."""
    return re.sub(r"(localhost|127\.0\.0\.1):8888\b", rf"\g<1>:{port}", text)


#: what ``check-scheduler-config --url`` adds to an extender's line when it checks elsewhere
CHECKED_AT = re.compile(r" \(checked at http://127\.0\.0\.1:\d+/[^)]*\)$")


def run(script: str, port: int) -> subprocess.CompletedProcess[str]:
    """``script``, against the test's own server on ``port`` (:func:`on_port`): a
    ``check-scheduler-config`` that would read the service's URL from the file gets ``--url``."""
    script = on_port(script, port)
    unpointed = re.compile(r"^(.*check-scheduler-config (?!.*--(?:url|offline)).*)$", re.M)
    script = unpointed.sub(rf"\1 --url http://127.0.0.1:{port}", script)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_pages_mark_their_runnable_blocks() -> None:
    assert len(BLOCKS) >= 6
    pages = {where.split(":")[0] for where, *_ in BLOCKS}
    assert {"README.md", "docs/getting-started.md", "docs/install/preflight.md"} <= pages
    for where, _, body, _ in BLOCKS:
        for path in re.findall(r"(?:\.\./|/etc/|/tmp/)\S*", body):
            pytest.fail(f"{where}: a runnable block uses {path}, outside the repository")


def _commands(body: str) -> list[tuple[str, str]]:
    """A console block's ``(command, output shown)`` pairs; a command continues on the next line
    while its line ends with a backslash."""
    out = []
    for chunk in re.split(r"^\$ ", body, flags=re.M)[1:]:
        lines = chunk.split("\n")
        command = [lines.pop(0)]
        while command[-1].endswith("\\") and lines:
            command.append(lines.pop(0))
        out.append(("\n".join(command), "\n".join(lines)))
    return out


@pytest.mark.parametrize(("where", "lang", "body", "expect"), BLOCKS, ids=[b[0] for b in BLOCKS])
def test_runnable_block(server: Server, where: str, lang: str, body: str, expect: str | None) -> None:
    if lang == "sh":
        out = run(body, server.port)
        assert out.returncode == 0, f"{where}: {out.stderr}"
        for excerpt in (e.strip() for e in on_port(expect or "", server.port).split(" | ") if e.strip()):
            assert excerpt in out.stdout, f"{where}: {excerpt!r} not in the output:\n{out.stdout}"
        return
    commands = _commands(body)
    assert commands, where
    for command, shown in commands:
        out = run(command, server.port)
        assert out.returncode == 0, f"{where}: $ {command}\n{out.stderr}"
        printed = [on_port(CHECKED_AT.sub("", line.rstrip()), server.port) for line in out.stdout.splitlines()]
        for line in on_port(shown, server.port).splitlines():
            if line.strip() and line.strip() != "...":
                assert line.rstrip() in printed, f"{where}: $ {command}\nexpected line {line!r} in:\n{out.stdout}"

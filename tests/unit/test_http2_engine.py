"""The HTTP/2 engine: the patched zttp of ``third_party/zttp`` is what ``make`` installs and what
the server offers HTTP/2 with; its build script applies the patch without a ``patch`` binary."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from app.api.http2 import engine_keeps_connections, zttp_version

from ..conftest import REPO


def build_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("zttp_build", REPO / "third_party" / "zttp" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("version", "keeps"),
    [("0.0.35", False), ("0.0.36", False), ("0.0.35+longconn1", True), ("0.0.35+other", False)],
)
def test_only_the_patched_build_is_trusted_with_long_connections(version: str, keeps: bool) -> None:
    assert engine_keeps_connections(version) is keeps


def test_make_installs_the_patched_build() -> None:
    """``make`` (and so this suite) runs ``third_party/zttp/build.py --install``: the server then
    offers HTTP/2; with the index's zttp it would offer HTTP/1.1 alone."""
    assert zttp_version() == build_script().VERSION
    assert engine_keeps_connections()


def test_the_patch_applies_hunk_by_hunk(tmp_path: Path) -> None:
    source = tmp_path / "src" / "a.zig"
    source.parent.mkdir()
    source.write_text("one\ntwo\nthree\nfour\nfive\nsix\n")
    patch = (
        "--- a/src/a.zig\n+++ b/src/a.zig\n"
        "@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
        "@@ -5,2 +5,3 @@\n five\n+five and a half\n six\n"
    )
    build_script().apply_patch(tmp_path, patch)
    assert source.read_text() == "one\nTWO\nthree\nfour\nfive\nfive and a half\nsix\n"


def test_a_hunk_that_does_not_apply_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "a.zig"
    source.write_text("one\n")
    with pytest.raises(SystemExit, match=r"hunk 1 of a\.zig does not apply"):
        build_script().apply_patch(tmp_path, "--- a/a.zig\n+++ b/a.zig\n@@ -1 +1 @@\n-two\n+TWO\n")


def test_the_shipped_patch_has_the_fix_and_its_test() -> None:
    patch = (REPO / "third_party" / "zttp" / "long-connections.patch").read_text()
    assert "+    max_streams: u64 = 0," in patch
    assert "+    fn creditReset(self: *Connection) void {" in patch
    assert '+test "a long-lived connection opens any number of streams' in patch

"""Build and install zttp with ``long-connections.patch``: HTTP/2 connections that live as long as
the client keeps them.

zttp 0.0.35 (the Zig core of uvicorn's HTTP/2 protocol, which ``app/api/http2.py`` serves
kube-scheduler with) caps the streams a peer may *ever* open on one connection at 4,096 and the
resets it may ever send at 256 (``Limits.max_streams``, ``Limits.max_stream_resets`` in
``src/core/h2/connection.zig``), neither configurable from Python. Go's HTTP/2 client keeps one
connection for as long as it can, so every few thousand pods the service answered kube-scheduler
with ``GOAWAY ENHANCE_YOUR_CALM`` and failed the requests in flight. The patch lifts the lifetime
stream cap (``MAX_CONCURRENT_STREAMS`` still bounds the live ones) and makes the reset budget
net: each stream that completes normally pays one reset back, so a rapid-reset flood
(CVE-2023-44487) is still cut. It adds a Zig test of both.

Steps: the pinned sdist from the package index pip uses (``PIP_INDEX_URL``, else pip's default),
checked against :data:`SDIST_SHA256`; the patch applied (:func:`apply_patch`, no ``patch`` binary
needed); the version set to :data:`VERSION` (a local label, so ``app.api.http2`` can tell the
patched build from the one on the index); ``pip wheel`` with zttp's own exactly pinned build
dependencies (its Zig compiler is the ``ziglang`` wheel); the wheel kept in
``$XDG_CACHE_HOME/scheduler-extender/wheels`` (``~/.cache``), keyed by the patch, so later
installs take a few seconds instead of about two minutes.

Usage: ``python third_party/zttp/build.py [--install] [--wheel-dir DIR]``: prints the wheel's path;
``--install`` installs it into this interpreter's environment (``pip install --no-deps
--force-reinstall``). Raises ``SystemExit`` with the reason when the download, the checksum, the
patch or the build fails.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
PATCH = HERE / "long-connections.patch"
NAME = "zttp"
UPSTREAM = "0.0.35"
SDIST = f"zttp-{UPSTREAM}.tar.gz"
SDIST_SHA256 = "d7bda675864e649f71f0f82112f8e6f499533def32f80e0506d98d5fd309fdca"
#: the patched build's version: upstream's with a local label (``app.api.http2.LONG_CONNECTIONS``)
VERSION = f"{UPSTREAM}+longconn1"


def index_url() -> str:
    """The simple index pip installs from: ``PIP_INDEX_URL``, else pip's configured or default one."""
    url = os.environ.get("PIP_INDEX_URL")
    if not url:
        out = subprocess.run(
            [sys.executable, "-m", "pip", "config", "get", "global.index-url"], capture_output=True, text=True
        )
        url = out.stdout.strip() if out.returncode == 0 else ""
    if not url:
        from pip._internal.models.index import PyPI

        url = PyPI.simple_url
    return url.rstrip("/")


def fetch_sdist() -> bytes:
    """The pinned sdist's bytes, found by the simple index's JSON page (PEP 691) and checked
    against :data:`SDIST_SHA256`."""
    page = f"{index_url()}/{NAME}/"
    request = urllib.request.Request(page, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            files = json.load(response)["files"]
        url = next(f["url"] for f in files if f["filename"] == SDIST)
        with urllib.request.urlopen(url, timeout=300) as response:
            data: bytes = response.read()
    except (OSError, ValueError, KeyError, StopIteration) as exc:
        raise SystemExit(f"cannot download {SDIST} from {page}: {exc}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != SDIST_SHA256:
        raise SystemExit(f"{SDIST}: sha256 {digest}, expected {SDIST_SHA256}")
    return data


def apply_patch(root: Path, patch: str) -> None:
    """Apply a unified diff to the files under ``root``: each hunk's old lines (context and
    removed) must occur exactly once in its file, and are replaced by its new lines. Raises
    ``SystemExit`` naming the hunk that does not apply."""
    files: dict[Path, list[tuple[list[str], list[str]]]] = {}
    current: list[tuple[list[str], list[str]]] = []
    hunk: tuple[list[str], list[str]] | None = None
    for line in patch.splitlines():
        if line.startswith("+++ "):
            path = root / line[4:].split("\t")[0].removeprefix("b/")
            current = files.setdefault(path, [])
            hunk = None
        elif line.startswith("--- "):
            hunk = None
        elif line.startswith("@@"):
            hunk = ([], [])
            current.append(hunk)
        elif hunk is not None:
            tag, text = line[:1], line[1:]
            if tag in (" ", ""):
                hunk[0].append(text)
                hunk[1].append(text)
            elif tag == "-":
                hunk[0].append(text)
            elif tag == "+":
                hunk[1].append(text)
    for path, hunks in files.items():
        text = path.read_text()
        for number, (old, new) in enumerate(hunks, 1):
            before, after = "\n".join(old) + "\n", "\n".join(new) + "\n"
            if text.count(before) != 1:
                raise SystemExit(f"{PATCH.name}: hunk {number} of {path.name} does not apply")
            text = text.replace(before, after)
        path.write_text(text)


def build(out: Path | None = None) -> Path:
    """The patched wheel (built unless the cache holds it), copied into ``out`` when given."""
    key = hashlib.sha256(PATCH.read_bytes() + SDIST_SHA256.encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "scheduler-extender" / "wheels" / key
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    cached = sorted(cache.glob(f"zttp-*-{tag}-*.whl")) if cache.is_dir() else []
    if not cached:
        with tempfile.TemporaryDirectory() as tmp:
            with tarfile.open(fileobj=io.BytesIO(fetch_sdist()), mode="r:gz") as sdist:
                sdist.extractall(tmp, filter="data")
            source = Path(tmp) / f"zttp-{UPSTREAM}"
            apply_patch(source, PATCH.read_text())
            info = source / "PKG-INFO"
            info.write_text(info.read_text().replace(f"\nVersion: {UPSTREAM}\n", f"\nVersion: {VERSION}\n", 1))
            wheels = Path(tmp) / "wheels"
            print(f"building {NAME} {VERSION} (about two minutes, once)", file=sys.stderr)
            result = subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(source)],
                env={**os.environ, "SETUPTOOLS_SCM_PRETEND_VERSION": VERSION},
            )
            if result.returncode != 0:
                raise SystemExit(f"building {NAME} {VERSION} failed (pip wheel exit {result.returncode})")
            cache.mkdir(parents=True, exist_ok=True)
            for wheel in wheels.glob("*.whl"):
                shutil.copy2(wheel, cache / wheel.name)
        cached = sorted(cache.glob(f"zttp-*-{tag}-*.whl"))
        if not cached:
            raise SystemExit(f"building {NAME} {VERSION} left no wheel for {tag}")
    if out is None:
        return cached[-1]
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy2(cached[-1], out / cached[-1].name)
    return out / cached[-1].name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--install", action="store_true", help="install the wheel into this environment")
    parser.add_argument("--wheel-dir", type=Path, help="copy the wheel here (default: the cache)")
    args = parser.parse_args()
    wheel = build(args.wheel_dir)
    if args.install:
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", str(wheel)]
        if subprocess.run(command).returncode != 0:
            raise SystemExit(f"installing {wheel} failed")
    print(wheel)


if __name__ == "__main__":
    main()

"""What the extender benchmarks share: the configuration edit of kube-scheduler binding itself, and
py-spy profiles of the service while a benchmark runs."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def without_bind(doc: Any) -> None:
    """``examples/cluster.yaml`` as kube-scheduler binds itself: no bind verb, no binder."""
    for profile in doc["profiles"]:
        profile["extender"]["verbs"] = [v for v in profile["extender"]["verbs"] if v != "bind"]
        profile["plugins"].pop("bind", None)
        profile["pluginConfig"] = [pc for pc in profile["pluginConfig"] if pc["name"] != "DefaultBinder"]


def profiler(pid: int, name: str) -> Callable[[], None]:
    """With ``BENCH_PROFILE=DIR``, py-spy records process ``pid`` into ``DIR/<name>.txt`` (raw
    collapsed stacks, 250 samples/s, ``BENCH_PROFILE_ARGS``: default ``--idle``) until the
    returned function is called; without, nothing. Raises ``SystemExit`` when the profiler is not
    on PATH."""
    folder = os.environ.get("BENCH_PROFILE")
    if not folder:
        return lambda: None
    Path(folder).mkdir(parents=True, exist_ok=True)
    options = os.environ.get("BENCH_PROFILE_ARGS", "--idle").split()
    cmd = ["py-spy", "record", "--pid", str(pid), "--format", "raw", "-r", "250", "-o", f"{folder}/{name}.txt"]
    if os.environ.get("BENCH_PROFILER") == "perf":  # C level, the event loop's thread only
        cmd, options = ["perf", "record", "-F", "2000", "-g", "-t", str(pid), "-o", f"{folder}/{name}.perf"], []
    if shutil.which(cmd[0]) is None:
        raise SystemExit(f"BENCH_PROFILE needs {cmd[0]} on PATH (py-spy: pip install py-spy)")
    spy = subprocess.Popen([*cmd, *options], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)

    def stop() -> None:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)

    return stop

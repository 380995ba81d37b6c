"""`replay --cluster-state`: the stateful policies' per-node verdicts, reasons and scores for the
shared fixtures, offline, through the real CLI (docs/stateful-policies.md shows this output, and
tests/e2e/test_readme.py runs it there)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO
from tests.support.bodies import FIXTURES

STATE = REPO / "examples" / "cluster-state-n10.json"


def _replay(body: str, *extra: str) -> str:
    cmd = [sys.executable, "-m", "app", "replay", str(FIXTURES / body), "--config", "examples/stateful.yaml"]
    done = subprocess.run([*cmd, *extra], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _row(out: str, node_suffix: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(f"ip-10-0-32-{node_suffix}."))


def test_the_example_cluster_state_is_generated() -> None:
    before = STATE.read_bytes()
    subprocess.run([sys.executable, "examples/make_cluster_state.py"], cwd=REPO, check=True, capture_output=True)
    assert STATE.read_bytes() == before, "examples/cluster-state-n10.json drifted from make_cluster_state.py"


def test_replay_shows_every_policy_verdict() -> None:
    # the default profile: every pod's fit and balance
    out = _replay("extenderargs_cache_n10_extres.json", "--cluster-state", str(STATE))
    header = out.splitlines()[1].split()
    assert header[:2] == ["NODE", "FILTER"]
    assert {"NodeResourcesFit(0-100)", "NodeResourcesBalancedAllocation(0-100)"} <= set(header)
    assert _row(out, "13").split()[1] == "Unschedulable" and _row(out, "13").endswith(
        "NodeResourcesFit: Insufficient cpu"
    )
    assert out.rstrip().endswith("9/10 nodes pass")
    # the pool profile (managedResources: only pods that request an underlay IP reach it)
    out = _replay("extenderargs_cache_n10_extres.json", "--cluster-state", str(STATE), "--profile", "pool")
    assert "NodeResourcePool(0-100)" in out.splitlines()[1].split()
    assert _row(out, "14").endswith("NodeResourcePool: pool underlay-ip exhausted: 16/16 in use")
    assert _row(out, "15").endswith("NodeResourcePool: pool underlay-ip has no capacity on this node")
    assert "excluded from pool underlay-ip" in _row(out, "10")
    assert _row(out, "18").split()[1] == "pass" and _row(out, "18").split()[-1] == "10"
    assert out.rstrip().endswith("5/10 nodes pass")
    # without the pool's resource the pod is no consumer: the pool neither rejects nor scores
    plain = _replay("extenderargs_nocache_n10.json", "--cluster-state", str(STATE), "--profile", "pool")
    assert "NodeResourcePool(0-100)" not in plain and "note: NodeResourcePool did not score" in plain


def test_replay_preemption_names_the_plugin_that_dropped_a_node() -> None:
    out = _replay("preemptionargs_nocache.json", "--cluster-state", str(STATE))
    assert "preemptor shop/payments" in out
    # fewestPDBViolations: only node -13 (0 violations) stays a candidate
    assert _row(out, "13").split()[-1] == "kept"
    for node in ("15", "17", "19"):
        assert _row(out, node).endswith("dropped by PreemptionRules")

"""How much memory a replica needs, from its configuration (the rendered pod's requests and
limits): :func:`memory_limit_bytes`."""

from __future__ import annotations

from app.config import Configuration

#: Resident memory of an idle replica without cluster state (bytes): the interpreter, FastAPI and
#: the plugins (measured 56 MiB, ``bench/bench_memory.py``), with room to spare.
IDLE_MEMORY_BYTES = 128 * 1024 * 1024
#: Added with a ``cluster:`` section: the watch cache of nodes and pods (measured below 600 MB at
#: 5,000 nodes and 150,000 pods, ``bench/bench_cluster.py``); larger clusters raise it by hand.
CLUSTER_MEMORY_BYTES = 640 * 1024 * 1024
#: Peak memory of answering a request, per byte of body held: the bound ``make bench`` checks
#: (measured 1.0x for the 73 MB 5,000-node filter body, 1.4x for its prioritize, 3.4x for a
#: 64 MiB body of 100,000 long names, ``bench/bench_memory.py``).
BODY_MEMORY_FACTOR = 4


def memory_limit_bytes(config: Configuration) -> int:
    """The memory a replica needs to answer any admitted request: idle baseline, plus the
    cluster cache when configured, plus :data:`BODY_MEMORY_FACTOR` x ``maxInFlightBytes``.
    ``render`` writes it as the pod's memory limit, so a pod that admits a body can answer it."""
    total = IDLE_MEMORY_BYTES + BODY_MEMORY_FACTOR * config.server.in_flight_bytes
    if config.cluster is not None:
        total += CLUSTER_MEMORY_BYTES
    decisions = config.diagnostics.decisions
    if decisions.enabled:
        total += _round_mib(DECISION_ENTRY_BYTES * decisions.max_node_verdicts + 1000 * decisions.max_records)
    return total


#: What one kept node verdict of a decision record costs (its name packed as JSON, a list slot).
DECISION_ENTRY_BYTES = 64


def _round_mib(n: int) -> int:
    """``n`` bytes rounded up to a multiple of 32 MiB."""
    step = 32 * 1024 * 1024
    return -(-n // step) * step


__all__ = [
    "BODY_MEMORY_FACTOR",
    "CLUSTER_MEMORY_BYTES",
    "DECISION_ENTRY_BYTES",
    "IDLE_MEMORY_BYTES",
    "memory_limit_bytes",
]

"""Runner: trials of a run, in order, with provenance; stores everything as it happens."""

from __future__ import annotations

from clusterbench.runner.bench import (
    BenchInterrupted,
    BenchListener,
    BenchOutcome,
    BenchPlan,
    BenchRunner,
    TrialsFailed,
    check_steady_tests,
    make_options,
    parse_tests,
    resolve_run,
)
from clusterbench.runner.provenance import (
    ClusterProbe,
    EndpointProbe,
    ServerProbe,
    ServerSnapshot,
    host_facts,
)

__all__ = [
    "BenchInterrupted",
    "BenchListener",
    "BenchOutcome",
    "BenchPlan",
    "BenchRunner",
    "ClusterProbe",
    "EndpointProbe",
    "ServerProbe",
    "ServerSnapshot",
    "TrialsFailed",
    "host_facts",
    "check_steady_tests",
    "make_options",
    "parse_tests",
    "resolve_run",
]

"""Runner: trials of a run, in order, with provenance; stores everything as it happens."""

from __future__ import annotations

from clusterbench.runner.bench import (
    BenchListener,
    BenchOutcome,
    BenchPlan,
    BenchRunner,
    TrialOutcome,
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
    "BenchListener",
    "BenchOutcome",
    "BenchPlan",
    "BenchRunner",
    "ClusterProbe",
    "EndpointProbe",
    "ServerProbe",
    "ServerSnapshot",
    "TrialOutcome",
    "host_facts",
    "make_options",
    "parse_tests",
    "resolve_run",
]

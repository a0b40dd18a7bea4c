"""Workloads: load applied to the cluster and how its output is read."""

from __future__ import annotations

from clusterbench.workloads.histogram import LatencyHistogram
from clusterbench.workloads.parse import Sample, Summary, combine_samples, merge_summaries, parse_output
from clusterbench.workloads.results import ClientRun, CommandOutput, RunResult
from clusterbench.workloads.runner import SysbenchRunner
from clusterbench.workloads.shim import build_shim
from clusterbench.workloads.sysbench import (
    KNOWN_TESTS,
    SYSBENCH_TESTS,
    PrepareGroup,
    SysbenchCommand,
    SysbenchOptions,
    build_command,
    client_databases,
    group_tests,
    needed_schemas,
)

__all__ = [
    "KNOWN_TESTS",
    "SYSBENCH_TESTS",
    "ClientRun",
    "CommandOutput",
    "LatencyHistogram",
    "PrepareGroup",
    "RunResult",
    "Sample",
    "Summary",
    "SysbenchCommand",
    "SysbenchOptions",
    "SysbenchRunner",
    "build_command",
    "build_shim",
    "client_databases",
    "combine_samples",
    "group_tests",
    "merge_summaries",
    "needed_schemas",
    "parse_output",
]

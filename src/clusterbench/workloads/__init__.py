"""Workloads: load applied to the cluster and how its output is read.

Its names are imported when first used (clusterbench.lazy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterbench.lazy import lazy_names

if TYPE_CHECKING:
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

_WHERE = {
    "ClientRun": "clusterbench.workloads.results",
    "CommandOutput": "clusterbench.workloads.results",
    "KNOWN_TESTS": "clusterbench.workloads.sysbench",
    "LatencyHistogram": "clusterbench.workloads.histogram",
    "PrepareGroup": "clusterbench.workloads.sysbench",
    "RunResult": "clusterbench.workloads.results",
    "SYSBENCH_TESTS": "clusterbench.workloads.sysbench",
    "Sample": "clusterbench.workloads.parse",
    "Summary": "clusterbench.workloads.parse",
    "SysbenchCommand": "clusterbench.workloads.sysbench",
    "SysbenchOptions": "clusterbench.workloads.sysbench",
    "SysbenchRunner": "clusterbench.workloads.runner",
    "build_command": "clusterbench.workloads.sysbench",
    "build_shim": "clusterbench.workloads.shim",
    "client_databases": "clusterbench.workloads.sysbench",
    "combine_samples": "clusterbench.workloads.parse",
    "group_tests": "clusterbench.workloads.sysbench",
    "merge_summaries": "clusterbench.workloads.parse",
    "needed_schemas": "clusterbench.workloads.sysbench",
    "parse_output": "clusterbench.workloads.parse",
}

__all__ = [
    "ClientRun",
    "CommandOutput",
    "KNOWN_TESTS",
    "LatencyHistogram",
    "PrepareGroup",
    "RunResult",
    "SYSBENCH_TESTS",
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


__getattr__ = lazy_names(__name__, _WHERE, globals())

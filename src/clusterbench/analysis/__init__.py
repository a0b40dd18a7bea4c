"""Analysis of stored runs: summary tables, series, comparisons and reports."""

from __future__ import annotations

from clusterbench.analysis.document import build_report, render_html, render_markdown, write_report
from clusterbench.analysis.report import SummaryRow, summary_rows, table_cells, trial_series

__all__ = [
    "SummaryRow",
    "build_report",
    "render_html",
    "render_markdown",
    "summary_rows",
    "table_cells",
    "trial_series",
    "write_report",
]

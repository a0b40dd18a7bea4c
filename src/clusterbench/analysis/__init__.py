"""Analysis of stored runs: summary tables, series and reports."""

from __future__ import annotations

from clusterbench.analysis.report import (
    SummaryRow,
    render_html,
    render_markdown,
    summary_rows,
    table_cells,
    trial_series,
    write_report,
)

__all__ = [
    "SummaryRow",
    "render_html",
    "render_markdown",
    "summary_rows",
    "table_cells",
    "trial_series",
    "write_report",
]

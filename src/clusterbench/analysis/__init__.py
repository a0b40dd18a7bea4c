"""Analysis of stored runs: summary tables, series, comparisons and reports (import the module you
need: analysis.document builds reports, analysis.report the tables, analysis.plots the figures)."""

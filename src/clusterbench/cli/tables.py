"""Tables of a stored run that `run`, `suite` and `results show` all print (summary, clients,
bottlenecks). Not a command module: the command modules import it."""

from __future__ import annotations

from rich import box
from rich.console import Group
from rich.table import Table

from clusterbench.analysis.report import (
    CLIENT_HEADER,
    SATURATION_WARNING,
    client_tables,
    saturation_lines,
    summary_rows,
    summary_tables,
)
from clusterbench.cli import console
from clusterbench.store import Store


def summary_table(store: Store, run_id: int, title: str) -> Group:
    """sysbench's layout, as the report has it: per test tps, queries per second, errors and
    reconnects; then latency min / avg / p95 / p99 / max."""
    tables = []
    for part in summary_tables(summary_rows(store, run_id)):
        table = Table(title=f"{title}: {part.caption}", title_justify="left", box=box.SIMPLE_HEAD,
                      collapse_padding=True, pad_edge=False)  # fmt: skip
        for i, head in enumerate(part.header):
            # never cut a number (`171,80…` in an 80-column terminal): as wide as its widest cell
            widest = max([len(head), *(len(row[i]) for row in part.rows)])
            text = part.align[i] == "l"
            table.add_column(head, justify="left" if text else "right", no_wrap=not text,
                             overflow="fold", min_width=None if text else widest)  # fmt: skip
        for row in part.rows:
            table.add_row(*row)
        tables.append(table)
    return Group(*tables)


def clients_table(rows: list[list[str]], title: str) -> Table:
    """Per client: host, schema, its own tps and p95, --rate asked and reached, CPU, flags."""
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False
    )
    for i, h in enumerate(CLIENT_HEADER):
        table.add_column(h, justify="left" if i in (1, 2, 3, 12) else "right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table


def print_clients(store: Store, run_id: int) -> None:
    """Per-client tables and fairness of trials with several clients, then the saturation warning."""
    for ct in client_tables(store, run_id):
        console.out.print(clients_table(ct.rows, f"clients of trial {ct.trial.seq} ({ct.trial.workload})"))
        for note in ct.notes:
            console.out.print(f"  {note}", markup=False, soft_wrap=True)
    sat = saturation_lines(store, run_id)
    if sat:
        console.out.print(f"[bold yellow]warning:[/] {SATURATION_WARNING}", soft_wrap=True)
        for where, line in sat:
            console.out.print(f"  trial {where}: {line}", markup=False, soft_wrap=True)


def bottlenecks_table(store: Store, run_id: int) -> Table | None:
    """Per trial the bottleneck verdict (None when no trial has one)."""
    from clusterbench.telemetry.report import BOTTLENECK_HEADER, bottleneck_rows

    rows = bottleneck_rows(store, run_id)
    if not rows:
        return None
    table = Table(title="bottlenecks (docs/telemetry.md)", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False)  # fmt: skip
    for i, h in enumerate(BOTTLENECK_HEADER):
        table.add_column(h, justify="right" if i == 0 else "left", overflow="fold")
    for row in rows:
        table.add_row(*(console.escape(c) for c in row))
    return table

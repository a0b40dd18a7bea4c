"""The only place (with cli/main.py) that prints."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from rich.table import Table

out = Console(highlight=False, width=None if sys.stdout.isatty() else 140)
err = Console(stderr=True, highlight=False)


def fail(message: str) -> None:
    for line in message.splitlines():
        err.print(f"[bold red]error:[/] {escape(line)}", soft_wrap=True)


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {escape(message)}", soft_wrap=True)


def step(message: str) -> None:
    out.print(f"  {escape(message)}", soft_wrap=True)


def is_tty() -> bool:
    return sys.stdout.isatty()


def fitted_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], text_cols: Sequence[int],
                 **kw: Any) -> Table:  # fmt: skip
    """A table whose numbers are never cut (`171,80…`, `-…` in an 80-column terminal): every
    number column is as wide as its widest cell; the text columns (`text_cols`) fold instead."""
    from rich.table import Table
    from rich.text import Text

    kw.setdefault("title_justify", "left")
    table = Table(title=title, **kw)
    for i, h in enumerate(header):
        if i in text_cols:
            table.add_column(h, overflow="fold")
        else:
            widest = max([len(h), *(Text.from_markup(r[i]).cell_len for r in rows)])
            table.add_column(h, justify="right", no_wrap=True, min_width=widest)
    for r in rows:
        table.add_row(*r)
    return table

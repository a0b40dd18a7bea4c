"""The only place (with cli/main.py) that prints."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.markup import escape

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

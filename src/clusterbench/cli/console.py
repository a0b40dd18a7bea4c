"""The only place (with cli/main.py) that prints."""

from __future__ import annotations

import sys

from rich.console import Console

out = Console(highlight=False, width=None if sys.stdout.isatty() else 140)
err = Console(stderr=True, highlight=False)


def fail(message: str) -> None:
    for line in message.splitlines():
        err.print(f"[bold red]error:[/] {line}", markup=True, soft_wrap=True)


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {message}", soft_wrap=True)


def step(message: str) -> None:
    out.print(f"  {message}", soft_wrap=True)


def is_tty() -> bool:
    return sys.stdout.isatty()

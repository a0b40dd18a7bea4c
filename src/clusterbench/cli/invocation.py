"""This invocation's command line, as the lock and the stored runs record it (light: cli/main.py
sets it before any command module is imported)."""

from __future__ import annotations

import shlex
import sys

# The command line main() was given (tests); None: sys.argv's.
COMMAND: list[str] | None = None


def command_line() -> str:
    """`clusterbench ...` as typed (never the Python path it ran from)."""
    return shlex.join(["clusterbench", *(COMMAND if COMMAND is not None else sys.argv[1:])])

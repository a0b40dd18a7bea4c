"""Other names accepted for a setting, so that one name means one thing across the command line,
scenario files and experiment files (docs/glossary.md lists them): e.g. `duration` is the measured
seconds everywhere, and `time` (sysbench's own word) is accepted for it."""

from __future__ import annotations

from typing import Any

# canonical name -> other names accepted for it
ALIASES: dict[str, tuple[str, ...]] = {"duration": ("time",)}


def canonical_keys(data: Any, names: tuple[str, ...] = tuple(ALIASES)) -> Any:
    """`data` (a table of a TOML file) with its aliases renamed to the canonical names; a table
    that gives both a name and its alias is refused (ValueError, named by both keys)."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for name in names:
        for alias in ALIASES.get(name, ()):
            if alias in out:
                if name in out:
                    raise ValueError(f"'{name}' and '{alias}' are the same setting; give one of them")
                out[name] = out.pop(alias)
    return out

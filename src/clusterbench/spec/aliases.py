"""One name per setting across the command line, scenario files and experiment files (the
settings table of docs/glossary.md), with the other names people use accepted as aliases:

* the measured seconds are `duration` (`--duration`, `-t`); `time` (sysbench's own word) is accepted;
* the load to run is `workload` (`--workload`, `-w`): one sysbench test (or a list of them where a
  command or an experiment runs several); `test` and `tests` are accepted in files, `--tests` on the
  command line (`--test` is `compare`'s choice of statistical test, so it is not an alias).

A file table or a command line that gives a setting under two of its names is refused in one line:
which value was meant cannot be told.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# canonical name -> other names accepted for it in scenario and experiment files
ALIASES: dict[str, tuple[str, ...]] = {"duration": ("time",), "workload": ("test", "tests")}

# canonical option -> other spellings accepted for it on the command line
OPTION_ALIASES: dict[str, tuple[str, ...]] = {"--duration": ("--time", "-t"), "--workload": ("-w", "--tests")}


def canonical_keys(data: Any, names: Sequence[str] = tuple(ALIASES)) -> Any:
    """`data` (a table of a TOML file) with its aliases renamed to the canonical names; a table
    that gives both a name and its alias is refused (ValueError, named by both keys)."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for name in names:
        given = [k for k in (name, *ALIASES.get(name, ())) if k in out]
        if len(given) > 1:
            raise ValueError(f"'{given[0]}' and '{given[1]}' are the same setting; give one of them")
        if given and given[0] != name:
            out[name] = out.pop(given[0])
    return out


def option_conflicts(args: Sequence[str]) -> str | None:
    """The first setting a command line gives under two names (or one name twice), as one line;
    None when there is none. Stops at `--` (what follows is not options)."""
    seen: dict[str, str] = {}
    for arg in args:
        if arg == "--":
            break
        flag = arg.split("=", 1)[0] if arg.startswith("--") else arg
        for name, others in OPTION_ALIASES.items():
            if flag in (name, *others):
                if name in seen:
                    first = seen[name]
                    if first == flag:
                        return f"{flag} is given twice; give it once"
                    both = f"{first} and {flag}" + ("" if name in (first, flag) else f" (both {name})")
                    return f"{both} are the same setting; give one of them"
                seen[name] = flag
    return None

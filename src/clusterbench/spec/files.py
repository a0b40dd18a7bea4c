"""Reading the user's TOML files: one line naming the file and the problem, never a traceback."""

from __future__ import annotations

from pathlib import Path

from clusterbench.errors import InputError


def read_toml_text(path: Path, what: str, hint: str) -> str:
    """The text of a topology, scenario or experiment file. A file that is missing, unreadable or
    not UTF-8 (TOML is UTF-8 by definition; a Latin-1 'é' is the usual culprit) is one InputError
    naming the file, the line and the next step."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what} file; {hint}") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a {what} file; give the file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what} file ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(
            f"{path}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x} at column {column}); "
            "TOML files are UTF-8: save it as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)"
        ) from None


# The top-level keys of each kind of file (tests check them against the models). An experiment's
# `[topology]` is a table; a scenario's `topology` names a file.
KIND_KEYS: dict[str, frozenset[str]] = {
    "experiment": frozenset({"experiment", "factors", "parts", "profiles", "workload", "search", "designs"}),
    "scenario": frozenset(
        {"name", "description", "load", "fault", "verify", "on_error", "seed", "anomalies", "random_faults"}
    ),
    "topology": frozenset(
        {"cluster", "resources", "mariadb", "mysql", "balancer", "engine", "provider", "hosts", "node",
         "clients", "web"}
    ),  # fmt: skip
}
RUN_WITH = {
    "topology": "bring it up with `clusterbench up -f {path}`",
    "scenario": "run it with `clusterbench scenario {path}`",
    "experiment": "run it with `clusterbench experiment run {path}` (`clusterbench plan {path}` lists "
    "its trials)",
}


def file_kind(data: dict[str, object]) -> str:
    """'experiment', 'scenario' or 'topology': the kind whose top-level keys the file uses most
    (so one misspelt table does not turn a scenario into a topology with unknown keys)."""
    keys = set(data)
    score = {kind: len(keys & names) for kind, names in KIND_KEYS.items()}
    if isinstance(data.get("topology"), str):
        score["scenario"] += 1
    elif isinstance(data.get("topology"), dict):
        score["experiment"] += 1
    best = max(score.values())
    if best == 0:
        return "topology"
    return next(k for k in ("experiment", "scenario", "topology") if score[k] == best)


def require_kind(data: dict[str, object], want: str, path: Path) -> None:
    """InputError when the file is plainly another kind: say what it is and how to use it."""
    kind = file_kind(data)
    if kind != want and any(k in KIND_KEYS[kind] for k in data):
        raise InputError(
            f"{path}: this is {_a(kind)} file, not {_a(want)} file; {RUN_WITH[kind].format(path=path)}"
        )


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word

"""Finding the processes a daemon of ours left behind (an SST script and its rsync, a health
check's children) on any host, by the directory their command lines name.

One shell listing per host (PID, parent, start time, state, command line), parsed here; signals
then go by PID + start time, like every signal the tool sends."""

from __future__ import annotations

import signal
from collections.abc import Collection
from dataclasses import dataclass

from clusterbench.clock import Clock
from clusterbench.hosts.base import Host, ProcessRef, terminate
from clusterbench.hosts.process import stat_fields

# Every process as "PID<TAB>PPID<TAB>stat line<TAB>command line" (the stat line carries the state
# and the start time; the command line's NULs become spaces).
LIST_PROCS = (
    'for f in /proc/[0-9]*; do printf "%s\\t%s\\t%s\\t" "${f#/proc/}" '
    '"$(sed -n "s/^PPid:[[:space:]]*//p" "$f/status" 2>/dev/null)" '
    '"$(cat "$f/stat" 2>/dev/null | tr "\\t" " ")"; '
    'tr "\\0" " " <"$f/cmdline" 2>/dev/null; echo; done'
)


@dataclass(frozen=True)
class ProcEntry:
    pid: int
    ppid: int
    state: str
    start_ticks: int
    cmdline: str

    @property
    def ref(self) -> ProcessRef:
        return ProcessRef(self.pid, self.start_ticks)

    @property
    def live(self) -> bool:
        return self.state not in ("Z", "X")


def parse_listing(listing: str) -> list[ProcEntry]:
    out = []
    for line in listing.splitlines():
        parts = line.split("\t", 3)
        if len(parts) < 4 or not parts[0].isdigit():
            continue
        fields = stat_fields(parts[2])
        if fields is None or len(fields) < 20:
            continue
        out.append(
            ProcEntry(
                pid=int(parts[0]),
                ppid=int(parts[1]) if parts[1].isdigit() else 0,
                state=fields[0],
                start_ticks=int(fields[19]),
                cmdline=parts[3].strip(),
            )
        )
    return out


def descendants(entries: list[ProcEntry], roots: Collection[int]) -> set[int]:
    """The roots and every process below them."""
    children: dict[int, list[int]] = {}
    for e in entries:
        children.setdefault(e.ppid, []).append(e.pid)
    out: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out.add(pid)
        todo += children.get(pid, [])
    return out


# Programs of ours that serve a node's directory across its server's starts and are stopped on
# their own (the power-loss layer, cb-faultfs, mounted at the datadir): never a stray.
COMPANIONS = frozenset({"cb-faultfs"})


def strays(entries: list[ProcEntry], marker: str, keep: Collection[int] = ()) -> list[ProcEntry]:
    """Live processes whose command line contains `marker` (a directory of ours, with its trailing
    slash), and their descendants, minus the processes in `keep` and theirs (a daemon we still
    track) and the COMPANIONS. Pure."""
    by_pid = {e.pid: e for e in entries}
    found = descendants(
        entries, [e.pid for e in entries if marker in e.cmdline and program(e.cmdline) not in COMPANIONS]
    )
    kept = descendants(entries, [p for p in keep if p in by_pid])
    return [by_pid[p] for p in sorted(found - kept) if by_pid[p].live]


def list_processes(host: Host) -> list[ProcEntry]:
    return parse_listing(host.run(["sh", "-c", LIST_PROCS], check=False, timeout=30).stdout)


def stop_strays(
    host: Host, marker: str, keep: Collection[int], clock: Clock, timeout: float = 10.0
) -> list[str]:
    """Stop (SIGCONT, SIGTERM, then SIGKILL) what `strays` finds on `host`; returns their
    command names, for the caller to say what it stopped."""
    found = strays(list_processes(host), marker, keep)
    for e in found:
        host.signal(e.ref, signal.SIGCONT)
    for e in found:
        terminate(host, e.ref, clock, timeout)
    return [program(e.cmdline) or str(e.pid) for e in found]


# Interpreters whose first argument names the program that runs (wsrep_sst_rsync is a bash script).
INTERPRETERS = frozenset({"sh", "bash", "dash", "perl", "python", "python3"})


def program(cmdline: str) -> str:
    """The program a command line runs, by its base name: the script for an interpreter
    ('bash -ue /usr/bin/wsrep_sst_rsync --role donor' -> 'wsrep_sst_rsync') (pure)."""
    words = cmdline.split()
    for i, w in enumerate(words):
        name = w.rsplit("/", 1)[-1]
        if i == 0 and name not in INTERPRETERS:
            return name
        if i > 0 and not w.startswith("-"):
            return name
    return words[0].rsplit("/", 1)[-1] if words else ""

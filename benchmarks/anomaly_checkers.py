"""How fast the anomaly checkers are, and how often a stored run saw each anomaly.

Checker time (default): builds synthetic histories of N operations and times the checkers that
read them, in this process, with no cluster:

- list-append (checkers/list_append.py, the dependency graph and its cycles): N transactions of
  1-4 reads and appends over `--keys` lists in use (each retired after 32 appends, as the workload
  does), three clients' worth of overlap, 10 % failed and 5 % unknown outcomes, and three final
  reads. `serial` histories execute one transaction at a time (the checker must PASS);
  `anomalous` ones give a fraction of the transactions a snapshot a few commits old for their reads
  while their appends go onto the newest list (what REPEATABLE READ plus DML on the newest row
  does), which makes lost updates, G-single and G2-item cycles and stale reads for the checker to
  find and explain;
- counter (checkers/counter.py): N increments of one counter, and stale-read
  (checkers/stale_read.py): N write + read steps over three probe pairs.

Anomalies per minute (--results PATH [--run ID ...]): for every trial of the runs (default: every
run with anomaly verdicts), each anomaly class's count from the stored verdicts, divided by the
time the anomaly workloads ran (the span of their operations in the trial), summed over trials:
class | mode | trials | trials where seen | count | per minute.

Targets (issue 22): after the table, one serial and one anomalous list-append history of
`--target-n` transactions (default 100,000) are each checked once in a fresh process, which
prints the check's CPU seconds and the process's peak memory (the interpreter, the history and
the check: what a user's machine needs) against the targets, <= 5 s CPU and <= 300 MB; the
exit status is 1 when one is over.

Usage: python benchmarks/anomaly_checkers.py [--sizes 1000,10000,30000] [--keys 6] [--repeat 3]
                                             [--target-n 100000]
       python benchmarks/anomaly_checkers.py --results PATH [--run ID ...]
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from clusterbench.checkers.counter import check_counter
from clusterbench.checkers.list_append import check_list_append
from clusterbench.checkers.stale_read import check_stale_reads
from clusterbench.checkers.verdict import Verdict
from clusterbench.history.ops import Op, Outcome
from clusterbench.history.txn import MicroOp, Txn
from clusterbench.store import Store

OK, FAIL, UNK = Outcome.OK, Outcome.FAIL, Outcome.UNKNOWN
DOCUMENTED = ("lost-update", "internal", "G2-item", "stale-read")  # Galera's default session
TARGET_N = 100_000  # issue 22: a history this long is checked in
TARGET_CPU_S = 5.0  # at most this much CPU
TARGET_MB = 300.0  # and this much memory (the whole process: interpreter, history and check)
APPENDS_PER_KEY = 32
CLIENTS = 3
TXN_S = 0.006  # one transaction starts every TXN_S / CLIENTS seconds (a client's every TXN_S)
BUSY_S = 0.005  # and lasts this long: a client's next one begins 1 ms after (never an equal time)


class _Key:
    """One list: its elements, and its length after each commit (to read an older snapshot)."""

    def __init__(self) -> None:
        self.elems: list[int] = []
        self.commits: list[int] = []  # commit index of each change
        self.lengths: list[int] = []  # length after that change

    def at(self, commit: int) -> tuple[int, ...]:
        """The list as of `commit` (every change with a commit index <= it)."""
        i = bisect.bisect_right(self.commits, commit)
        return tuple(self.elems[: self.lengths[i - 1]]) if i else ()

    def append(self, commit: int, v: int) -> None:
        self.elems.append(v)
        self.commits.append(commit)
        self.lengths.append(len(self.elems))


def list_append_history(n: int, *, keys: int, stale: float, seed: int, max_lag: int = 6) -> list[Txn]:
    """`stale`: the fraction of transactions whose reads see a snapshot 1-`max_lag` commits old."""
    rng = random.Random(seed)
    lists: dict[int, _Key] = {}
    appended: dict[int, int] = {}
    active = list(range(1, keys + 1))
    next_key = itertools.count(keys + 1)
    values = itertools.count(1)
    commit = 0
    txns: list[Txn] = []
    for i in range(n):
        outcome = rng.choices([OK, FAIL, UNK], [0.85, 0.10, 0.05])[0]
        applied = outcome is OK or (outcome is UNK and rng.random() < 0.5)
        snap = commit - (rng.randint(1, max_lag) if rng.random() < stale else 0)
        mops: list[MicroOp] = []
        mine: dict[int, list[int]] = {}
        for _ in range(rng.randint(1, 4)):
            k = rng.choice(active)
            if rng.random() < 0.5:
                lk = lists.setdefault(k, _Key())
                # After its own append a transaction reads the newest row with its change (InnoDB's
                # DML works on the newest row), otherwise its snapshot.
                seen = (tuple(lk.elems) if k in mine else lk.at(snap)) + tuple(mine.get(k, []))
                mops.append(MicroOp("r", k, seen if outcome is OK else None))
            else:
                v = next(values)
                mine.setdefault(k, []).append(v)
                mops.append(MicroOp("append", k, v))
        if applied and mine:
            commit += 1
            for k, vs in mine.items():
                for v in vs:
                    lists.setdefault(k, _Key()).append(commit, v)
                appended[k] = appended.get(k, 0) + len(vs)
                if appended[k] >= APPENDS_PER_KEY and k in active:
                    active[active.index(k)] = next(next_key)
        t0 = i * TXN_S / CLIENTS
        txns.append(Txn(i, i % CLIENTS, f"node:{i % CLIENTS + 1}", outcome, tuple(mops), t0, t0 + BUSY_S))
    t = n * TXN_S / CLIENTS + 1.0
    for node in range(CLIENTS):
        finals = tuple(MicroOp("r", k, tuple(lists[k].elems)) for k in sorted(lists))
        txns.append(Txn(n + node, 900_000 + node, f"final:n{node + 1}", OK, finals, t, t + 0.01, final=True))
    return txns


def _op(workload: str, client: int, kind: str, key: str, value: str | None, t: float, outcome: Outcome) -> Op:
    return Op(workload, client, f"node:{client + 1}", "198.18.0.1", kind, key, value,
              1e9 + t, 1e9 + t + 0.002, t, t + 0.002, outcome)  # fmt: skip


def counter_history(n: int, seed: int) -> tuple[list[Op], dict[str, dict[str, int]]]:
    rng = random.Random(seed)
    ops = []
    applied = 0
    for i in range(n):
        outcome = rng.choices([OK, FAIL, UNK], [0.9, 0.07, 0.03])[0]
        applied += outcome is OK or (outcome is UNK and rng.random() < 0.5)
        ops.append(_op("counter", i % CLIENTS, "incr", "for-update/1", None, i * 0.001, outcome))
    return ops, {f"n{k + 1}": {"for-update/1": applied} for k in range(CLIENTS)}


def stale_history(n: int, seed: int) -> list[Op]:
    """N write + read steps over three pairs; 20 % of the reads see the previous version."""
    rng = random.Random(seed)
    ops = []
    versions = [0] * CLIENTS
    for i in range(n):
        c = i % CLIENTS
        pair = f"node:{c + 1}>node:{(c + 1) % CLIENTS + 1}"
        key = f"default/{pair}"
        versions[c] += 1
        t = i * 0.002
        ops.append(_op("stale-read", c, "write", key, str(versions[c]), t, OK))
        seen = versions[c] - (1 if rng.random() < 0.2 else 0)
        value = json.dumps({"seen": seen, "expect": versions[c], "pair": pair, "session": "default"})
        ops.append(_op("stale-read", c, "read", key, value, t + 0.001, OK))
    return ops


def _time(fn: Callable[[], Verdict], repeat: int) -> tuple[float, float, Verdict]:
    """Median wall-clock and CPU seconds (CPU: what the check costs on a machine others share)."""
    runs, cpu = [], []
    v = None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        v = fn()
        runs.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    assert v is not None
    return statistics.median(runs), statistics.median(cpu), v


def timings(sizes: Sequence[int], keys: int, repeat: int) -> int:
    print(f"checker time, median of {repeat} runs (one thread; this machine: {_cores()} cores, shared)")
    print(f"{'checker':<12} {'history':<10} {'N':>7} {'wall s':>7} {'CPU s':>7} {'CPU ms/1k':>9}  verdict")
    documented = DOCUMENTED
    bad = 0
    for n in sizes:
        for kind, stale in (("serial", 0.0), ("anomalous", 0.2)):
            txns = list_append_history(n, keys=keys, stale=stale, seed=n)
            wall, cpu, v = _time(partial(check_list_append, txns, documented=documented), repeat)
            want = "PASS" if kind == "serial" else "FAIL"
            bad += v.result.value != want
            print(_row("list-append", kind, n, wall, cpu, f"{v.result.value}: {v.summary[:90]}"))
        ops, final = counter_history(n, seed=n)
        wall, cpu, v = _time(partial(check_counter, ops, final, mode="for-update"), repeat)
        bad += v.result.value != "PASS"
        print(_row("counter", "valid", n, wall, cpu, f"{v.result.value}: {v.summary[:60]}"))
        sops = stale_history(n, seed=n)
        wall, cpu, v = _time(
            partial(check_stale_reads, sops, session="default", documented=documented), repeat
        )
        bad += v.result.value != "FAIL"
        print(_row("stale-read", "20% stale", n, wall, cpu, f"{v.result.value}: {v.summary[:60]}"))
    if bad:
        print(f"{bad} checker(s) gave an unexpected verdict", file=sys.stderr)
    return 1 if bad else 0


def one_check(kind: str, n: int, keys: int) -> dict[str, Any]:
    """Build one list-append history and check it once, in this (fresh) process: CPU and wall
    seconds of the check, the process's peak memory before it (interpreter, imports, history)
    and after it."""
    txns = list_append_history(n, keys=keys, stale=0.2 if kind == "anomalous" else 0.0, seed=n)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0, c0 = time.perf_counter(), time.process_time()
    v = check_list_append(txns, documented=DOCUMENTED)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"kind": kind, "n": n, "cpu_s": cpu, "wall_s": wall, "history_mb": before, "peak_mb": peak,
            "result": v.result.value, "summary": v.summary}  # fmt: skip


def targets(n: int, keys: int) -> int:
    """The issue's bar: each history kind checked in a fresh process (so the peak is its own)."""
    print(f"\nlist-append at N = {n:,} (targets: <= {TARGET_CPU_S:g} s CPU, <= {TARGET_MB:g} MB peak, "
          "the whole process)")  # fmt: skip
    cols = f"{'history':<10} {'CPU s':>7} {'wall s':>7} {'peak MB':>8} {'history MB':>10}"
    print(f"{cols}  within targets  verdict")
    over = 0
    for kind in ("serial", "anomalous"):
        out = subprocess.run(
            [sys.executable, __file__, "--one", kind, "--target-n", str(n), "--keys", str(keys)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        r = json.loads(out.stdout)
        ok = r["cpu_s"] <= TARGET_CPU_S and r["peak_mb"] <= TARGET_MB
        over += not ok
        figures = f"{r['cpu_s']:>7.2f} {r['wall_s']:>7.2f} {r['peak_mb']:>8.0f} {r['history_mb']:>10.0f}"
        print(f"{kind:<10} {figures}  {'yes' if ok else 'NO':<14}  {r['result']}: {r['summary'][:70]}")
    return 1 if over else 0


def _row(checker: str, history: str, n: int, wall: float, cpu: float, verdict: str) -> str:
    return f"{checker:<12} {history:<10} {n:>7} {wall:>7.3f} {cpu:>7.3f} {1e6 * cpu / n:>9.2f}  {verdict}"


def _cores() -> int:
    return os.cpu_count() or 1


def _count(v: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(class, mode, count) of one stored verdict."""
    checker = str(v.get("checker", ""))
    ev = v.get("evidence") or {}
    if checker.startswith("counter:"):
        return [("lost increments", f"counter {checker.split(':', 1)[1]}", int(ev.get("lost", 0) or 0))]
    if checker.startswith("stale-read:"):
        return [("stale-read", f"probe {checker.split(':', 1)[1]}", int(ev.get("stale", 0) or 0))]
    if checker.startswith("list-append"):
        from clusterbench.scenario.anomalies import LIST_APPEND_ROWS

        mode = "list-append " + (checker.split(":", 1)[1] if ":" in checker else "")
        found = ev.get("anomalies") or {}
        classes = [
            *LIST_APPEND_ROWS,
            "internal",
            *(c for c in found if c not in (*LIST_APPEND_ROWS, "internal")),
        ]
        return [(cls, mode, int((found.get(cls) or {}).get("count", 0) or 0)) for cls in classes]
    if checker == "ledger":
        return [("lost acknowledged write", "ledger", int(((ev.get("lost") or {}).get("count")) or 0))]
    return []


ANOMALY_WORKLOADS = ("counter", "stale-read", "list-append")


def per_minute(path: Path, run_ids: Sequence[int]) -> int:

    if not path.exists():
        print(f"error: --results {path}: no such store; give the path of a results database", file=sys.stderr)
        return 2
    rows: dict[tuple[str, str], list[float]] = {}  # trials, seen, count, minutes
    with Store.open(path) as s:
        runs = run_ids or [r.id for r in s.list_runs()]
        used = 0
        total = 0.0
        for run in runs:
            for trial in s.trials(run):
                verdicts = s.verdicts(run, trial.id)
                obs = [o for v in verdicts for o in _count(v)]
                if not any(o[1] != "ledger" for o in obs):
                    continue
                spans = [(o["t_start"], o["t_end"]) for w in ANOMALY_WORKLOADS for o in s.ops(trial.id, w)
                         if o["kind"] != "final-read"]  # fmt: skip
                if not spans:
                    continue
                used += 1
                minutes = (max(e for _, e in spans) - min(b for b, _ in spans)) / 60
                total += minutes
                for cls, mode, n in obs:
                    r = rows.setdefault((cls, mode), [0, 0, 0, 0.0])
                    r[0] += 1
                    r[1] += n > 0
                    r[2] += n
                    r[3] += minutes
    if not rows:
        print(f"no trial with anomaly verdicts in {path} (runs: {', '.join(map(str, runs)) or 'none'})")
        return 2
    print(f"{used} trial(s) from {path}, {total:.2f} minutes of anomaly workloads")
    print(f"{'anomaly class':<26} {'mode':<30} {'trials':>6} {'seen':>5} {'count':>7} {'per minute':>10}")
    for (cls, mode), (trials, seen, count, minutes) in sorted(
        rows.items(), key=lambda kv: (kv[0][1], kv[0][0])
    ):
        rate = count / minutes if minutes else 0.0
        print(f"{cls:<26} {mode:<30} {int(trials):>6} {int(seen):>5} {int(count):>7} {rate:>10.1f}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,30000", help="history sizes N, comma-separated")
    ap.add_argument("--keys", type=int, default=6, help="list-append keys in use at a time")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (the median is shown)")
    ap.add_argument("--results", type=Path, help="a results store: anomalies per minute of its runs")
    ap.add_argument("--run", type=int, action="append", default=[], help="only this run (repeat for several)")
    ap.add_argument("--target-n", type=int, default=TARGET_N,
                    help="also check one list-append history of this many transactions against the "
                    "CPU and memory targets, in a fresh process (0: skip)")  # fmt: skip
    ap.add_argument("--one", choices=("serial", "anomalous"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one_check(a.one, a.target_n, a.keys)))
        return 0
    if a.results:
        return per_minute(a.results, a.run)
    try:
        sizes = [int(x) for x in a.sizes.split(",") if x.strip()]
        if not sizes or min(sizes) < 1:
            raise ValueError
    except ValueError:
        print(f"error: --sizes {a.sizes!r}: give positive integers like 1000,10000", file=sys.stderr)
        return 2
    if a.keys < 1 or a.repeat < 1:
        print("error: --keys and --repeat must be at least 1", file=sys.stderr)
        return 2
    rc = timings(sizes, a.keys, a.repeat)
    if a.target_n > 0:
        rc |= targets(a.target_n, a.keys)
    return rc


if __name__ == "__main__":
    sys.exit(main())

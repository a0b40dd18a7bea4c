"""The one writer of runs and trials into the store.

Every command's run goes through a `Recorder` (create or reopen the run, its provenance and events,
finish or abort it) and every trial through a `TrialRecord` (its params, samples as they arrive,
the load's result, snapshots, telemetry, histories, events, verdicts, its end). Nothing else
writes rows: a module that has something to keep asks the record of its trial.

Threads: sqlite3 connections belong to the thread that opened them. The nemesis, the verification
workloads' writers and telemetry write from threads of their own, so every write goes through the
calling thread's own connection to the same file (WAL, busy timeout); the thread that made the
Recorder uses the Store it was given.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from clusterbench.errors import InputError
from clusterbench.store import ALL_CLIENTS, Store, process_start_ticks
from clusterbench.workloads.merge import client_start_walls, fairness, merge_intervals


class Recorder:
    """A store and one connection per thread to it. A writer thread's connection goes with its
    thread (thread-local), or earlier with `release()`."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.path: Path | None = store.path
        self._owner = threading.get_ident()
        self._local = threading.local()
        self._durability: dict[int, str] = {}  # run -> the durability line last shown

    def conn(self) -> Store:
        """This thread's Store (the caller's own on the thread that made the recorder)."""
        if threading.get_ident() == self._owner:
            return self.store
        s = getattr(self._local, "store", None)
        if s is None:
            if self.path is None:
                raise InputError("a run written from several threads needs a store file, not in memory")
            s = Store.open(self.path)
            self._local.store = s
        return s

    def release(self) -> None:
        """Close the calling thread's own connection, if it opened one (a writer thread that ends)."""
        s = getattr(self._local, "store", None) if threading.get_ident() != self._owner else None
        if s is not None:
            self._local.store = None
            s.close()

    def durability_changed(self, run_id: int, line: str) -> bool:
        """Whether `line` differs from the durability line this run showed last (and remember it):
        a run shows its durability once, and again when an experiment's point changes it."""
        if not line or self._durability.get(run_id) == line:
            return False
        self._durability[run_id] = line
        return True

    # ---- runs ----------------------------------------------------------------------------------

    def create_run(
        self, kind: str, *, name: str = "", command_line: str = "", tags: Sequence[str] = (), notes: str = ""
    ) -> int:
        return self.store.create_run(kind, name=name, command_line=command_line, tags=tags, notes=notes)

    def reopen_run(
        self, run_id: int, command_line: str, tags: Sequence[str] = (), notes: str | None = None
    ) -> None:
        """A resumed run: running again, owned by this process, with the new tags and notes."""
        pid = os.getpid()
        self.store.conn.execute(
            "UPDATE runs SET status = 'running', ended_at = NULL, owner_pid = ?, owner_start = ? "
            "WHERE id = ?",
            (pid, process_start_ticks(pid), run_id),
        )
        self.store.add_event(run_id, "resume", {"command_line": command_line})
        if tags:
            self.store.add_tags(run_id, list(tags))
        if notes is not None:
            self.store.set_notes(run_id, notes)

    def run_provenance(self, run_id: int, key: str, value: Any) -> None:
        self.conn().set_provenance(run_id, key, value)

    def run_facts(self, run_id: int, facts: dict[str, Any]) -> None:
        for key, value in facts.items():
            self.conn().set_provenance(run_id, key, value)

    def run_event(self, run_id: int, kind: str, detail: dict[str, Any]) -> None:
        self.conn().add_event(run_id, kind, detail)

    def merge_versions(self, run_id: int, versions: dict[str, Any]) -> None:
        """What only the servers know (their builds), at the run level, beside this machine's."""
        st = self.conn()
        had = dict(st.provenance(run_id).get("versions") or {})
        if "mysql_server" in versions:
            # the host's mariadbd did not run: MySQL did (Group Replication); say which MySQL
            had.pop("mariadb", None)
        merged = {**had, **versions}
        if merged != had:
            st.set_provenance(run_id, "versions", merged)

    def finish_run(self, run_id: int, status: str) -> None:
        self.store.finish_run(run_id, status)  # type: ignore[arg-type]

    def abort_run(self, run_id: int, exc: BaseException, extra: dict[str, Any] | None = None) -> str:
        """Ctrl-C or an error ended the run: its running trials and the run are marked (what they
        measured stays); returns the status ('interrupted' or 'failed')."""
        interrupted = isinstance(exc, KeyboardInterrupt)
        status = "interrupted" if interrupted else "failed"
        self.store.conn.execute(
            "UPDATE trials SET status = ?, ended_at = datetime('now') "
            "WHERE run_id = ? AND status = 'running'",
            (status, run_id),
        )
        detail: dict[str, Any] = {"reason": "interrupted" if interrupted else str(exc), **(extra or {})}
        self.store.add_event(run_id, status, detail)
        self.store.finish_run(run_id, status)  # type: ignore[arg-type]
        return status

    def next_seq(self, run_id: int) -> int:
        """The sequence number after the run's last trial (a resumed run goes on counting)."""
        row = self.store.conn.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM trials WHERE run_id = ?", (run_id,)
        ).fetchone()
        return int(row[0]) + 1

    # ---- trials --------------------------------------------------------------------------------

    def trial(self, run_id: int, seq: int, test: str, params: dict[str, Any]) -> TrialRecord:
        trial_id = self.store.add_trial(run_id, seq, test, params)
        return TrialRecord(self, run_id, trial_id)


class TrialRecord:
    """What one trial writes, from any thread."""

    def __init__(self, recorder: Recorder, run_id: int, trial_id: int) -> None:
        self.recorder = recorder
        self.run_id = run_id
        self.trial_id = trial_id

    def _st(self) -> Store:
        return self.recorder.conn()

    def sample(self, s: Any) -> None:
        self._st().add_sample(self.trial_id, s)

    def provenance(self, key: str, value: Any) -> None:
        self._st().set_provenance(self.run_id, key, value, trial_id=self.trial_id)

    def event(self, kind: str, detail: dict[str, Any], t: float | None = None) -> None:
        self._st().add_event(self.run_id, kind, detail, trial_id=self.trial_id, t=t)

    def verdicts(self, verdicts: Sequence[Any]) -> None:
        st = self._st()
        for v in verdicts:
            st.add_verdict(self.run_id, v.to_json(), trial_id=self.trial_id)

    def snapshot(self, when: str, snap: Any) -> None:
        """Server variables and engine status at the trial's start or end; the servers' builds
        once, at the run level."""
        self.provenance(f"server_variables@{when}", snap.variables)
        self.provenance(f"engine_status@{when}", snap.engine_status)
        if snap.errors:
            self.provenance(f"server_errors@{when}", snap.errors)
        if when == "start":
            self.recorder.merge_versions(self.run_id, snap.versions())

    def telemetry(self, rows: list[tuple[float, float, str, str, float]]) -> None:
        self._st().add_telemetry(self.trial_id, rows)

    def shift_telemetry(self, origin: float) -> None:
        self._st().shift_telemetry(self.trial_id, origin)

    def telemetry_rows(self) -> list[dict[str, Any]]:
        return self._st().telemetry(self.trial_id)

    def bottleneck(self, verdict: dict[str, Any]) -> None:
        self._st().set_bottleneck(self.trial_id, verdict)

    def ops(self, rows: list[dict[str, Any]]) -> None:
        self._st().add_ops(self.trial_id, rows)

    def monitor_samples(self, rows: list[dict[str, Any]]) -> None:
        self._st().add_monitor_samples(self.trial_id, rows)

    def op_sink(self) -> Callable[[list[Any]], None]:
        """A verification history's writer (called from its writer thread)."""
        return lambda batch: self.ops([o.to_row() for o in batch])

    def monitor_sink(self) -> Callable[[list[Any]], None]:
        return lambda batch: self.monitor_samples([m.to_row() for m in batch])

    def result(self, result: Any) -> None:
        record_result(self._st(), self.run_id, self.trial_id, result)

    def failed(self, reason: str, stderr: Sequence[str] = (), **detail: Any) -> None:
        self.event("trial_failed", {**detail, "reason": reason, "stderr": list(stderr)[-5:]})

    def finish(self, status: str) -> None:
        self._st().finish_trial(self.trial_id, status)  # type: ignore[arg-type]

    def release(self) -> None:
        """The calling thread is done writing (a writer thread about to end)."""
        self.recorder.release()


def record_result(store: Store, run_id: int, trial_id: int, result: Any) -> None:
    """A workloads.runner.RunResult: summaries (per client and merged) and histograms; where each
    client ran, its CPU use and saturation flags (trial_clients); placement, start skew and tps
    fairness (the trial's provenance `clients`); one `client_saturated` event per client with a
    finding, so that a client bottleneck is on record next to the numbers it limited. Samples were
    stored as they arrived."""
    starts = client_start_walls(result.samples)
    for c in result.clients:
        if c.summary is not None:
            store.add_summary(trial_id, c.summary, client=c.client, exit_code=c.returncode)
        store.add_trial_client(
            trial_id,
            {
                "client": c.client, "host": c.host, "database": c.database, "pid": c.pid,
                "started_ns": c.started_ns, "start_wall": starts.get(c.client), "rate_asked": c.rate_asked,
                "rate_achieved": c.rate_achieved, "cpu": c.cpu.to_json() if c.cpu is not None else None,
                "flags": c.flags,
            },
        )  # fmt: skip
    if result.summary is not None:
        store.add_summary(trial_id, result.summary, client=ALL_CLIENTS, exit_code=result.exit_code)
    info = result.placement()
    # how far apart the clients' reports of one interval were: the check that summing by index
    # sums the same second of load
    spreads = [m.wall_spread for m in merge_intervals(result.samples) if m.wall_spread is not None]
    info["interval_wall_spread_max_s"] = max(spreads) if spreads else None
    tps = [c.summary.tps for c in result.clients if c.summary is not None]
    fair = fairness(tps) if len(tps) > 1 and len(tps) == len(result.clients) else None
    info["fairness_tps"] = fair.to_json() if fair is not None else None
    store.set_provenance(run_id, "clients", info, trial_id=trial_id)
    if getattr(result, "http", None) is not None:
        # an HTTP test: each second by status code, vegeta's report figures (exact), the number of
        # acknowledged writes (the ids themselves are for the lost-write check)
        store.set_provenance(run_id, "http", result.http.to_json(), trial_id=trial_id)
    for c in result.clients:
        if c.flags:
            store.add_event(
                run_id,
                "client_saturated",
                {"client": c.client, "host": c.host, "flags": c.flags, "warnings": c.warnings(),
                 "cpu": c.cpu.to_json() if c.cpu is not None else None,
                 "rate_asked": c.rate_asked, "rate_achieved": c.rate_achieved},
                trial_id=trial_id,
            )  # fmt: skip

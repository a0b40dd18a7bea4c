from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from clusterbench.errors import InputError
from clusterbench.store import SCHEMA_VERSION, Store, process_start_ticks
from clusterbench.workloads.parse import parse_output

DATA = Path(__file__).parents[1] / "workloads" / "data"


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(tmp_path / "runs.sqlite", clock=Clock())


def parsed(name: str, warmup: float = 0) -> object:
    return parse_output((DATA / name).read_text().splitlines(), warmup=warmup, threads=2)


def test_schema_version_and_wal(store: Store) -> None:
    assert store.version == SCHEMA_VERSION == 5
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.migrate()  # idempotent
    assert store.version == 5


def test_a_version_4_store_opens_with_its_tags_as_labels(tmp_path: Path) -> None:
    """Old stores must still open: tags kept in the run's provenance become key=value labels."""
    import json
    import sqlite3

    from clusterbench.store.schema import MIGRATIONS

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    for i, m in enumerate(MIGRATIONS[:4], 1):
        conn.executescript(m + f";PRAGMA user_version={i};")
    conn.execute("INSERT INTO runs (kind, status, started_at) VALUES ('suite', 'completed', '2026-01-02')")
    conn.execute("INSERT INTO provenance (run_id, key, value) VALUES (1, 'tags', ?)",
                 (json.dumps(["baseline", "env=prod"]),))  # fmt: skip
    conn.commit()
    conn.close()
    with Store.open(path) as s:
        assert s.version == 5
        assert s.tags(1) == ["baseline", "env=prod"]
        assert "tags" not in s.provenance(1)
        assert s.add_tags(1, ["env=test", "owner=qa"]) == ["baseline", "env=test", "owner=qa"]


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    s = Store.open(tmp_path / "x.sqlite")
    s.conn.execute("PRAGMA user_version=99")
    s.close()
    with pytest.raises(InputError, match="newer than this clusterbench"):
        Store.open(tmp_path / "x.sqlite")


def test_run_trial_samples_summary_roundtrip(store: Store, tmp_path: Path) -> None:
    run = store.create_run("bench", name="rw", command_line="clusterbench bench x.toml")
    trial = store.add_trial(run, 1, "oltp_read_write", {"threads": 2})
    p = parse_output((DATA / "oltp_read_write_warmup1.out").read_text().splitlines(), warmup=1, threads=2)
    for s in p.samples:
        store.add_sample(trial, s)
    # a second connection sees the samples before the run finishes (committed as they arrive)
    other = Store.open(tmp_path / "runs.sqlite")
    assert [r["t"] for r in other.samples(trial)] == [2.0, 3.0, 3.005]
    other.close()
    assert p.summary is not None
    store.add_summary(trial, p.summary, exit_code=0)
    store.finish_trial(trial, "completed")
    store.finish_run(run, "completed")

    r = store.get_run(run)
    assert (r.kind, r.name, r.status, r.started_at, r.ended_at) == (
        "bench",
        "rw",
        "completed",
        "2025-01-02T03:04:06.000+00:00",
        "2025-01-02T03:04:09.000+00:00",
    )
    [tr] = store.trials(run)
    assert (tr.seq, tr.workload, tr.params, tr.status) == (1, "oltp_read_write", {"threads": 2}, "completed")
    first = store.samples(trial)[0]
    assert (first["events"], first["client"], first["errors"], first["reconnects"]) == (983, 0, 0, 0)
    assert first["p95"] == first["lat_pct"] == pytest.approx(2.4328719830078365)
    summ = store.summary(trial)
    assert summ is not None
    assert (summ["events"], summ["client"], summ["exit_code"]) == (1952, -1, 0)
    assert summ["p95"] == pytest.approx(2.522083905881136)
    assert summ["p99"] == pytest.approx(3.3641993334103386)
    hist = store.histogram(trial)
    assert sum(c for _, _, c in hist) == 1951
    assert all(v < le for v, le, _ in hist)


def test_events_and_provenance(store: Store) -> None:
    run = store.create_run("bench")
    trial = store.add_trial(run, 1, "oltp_point_select", {})
    store.add_event(run, "fault.kill", {"node": "n3"}, trial_id=trial, t=10.0)
    store.set_provenance(run, "versions", {"mariadb": "10.11.19", "sysbench": "1.0.20"})
    store.set_provenance(run, "versions", {"mariadb": "10.11.20"})
    store.set_provenance(run, "engine_status@start", {"wsrep_cluster_size": "3"}, trial_id=trial)
    [ev] = store.events(run)
    assert (ev["kind"], ev["detail"], ev["t"], ev["trial_id"]) == ("fault.kill", {"node": "n3"}, 10.0, trial)
    assert store.provenance(run) == {"versions": {"mariadb": "10.11.20"}}
    assert store.provenance(run, trial) == {"engine_status@start": {"wsrep_cluster_size": "3"}}


def test_mark_interrupted_only_dead_owners(store: Store) -> None:
    mine = store.create_run("bench")
    dead = store.create_run("bench", pid=999_999_999)
    t = store.add_trial(dead, 1, "oltp_insert", {})
    done = store.create_run("bench", pid=999_999_999)
    store.finish_run(done, "completed")
    assert store.mark_interrupted() == [dead]
    assert store.get_run(dead).status == "interrupted"
    assert store.trials(dead)[0].status == "interrupted" and store.trials(dead)[0].id == t
    assert store.get_run(mine).status == "running"
    assert store.get_run(done).status == "completed"
    # a recycled pid with another start time is not the owner
    assert store.mark_interrupted(is_alive=lambda pid, start: False) == [mine]


def test_process_start_ticks() -> None:
    assert isinstance(process_start_ticks(os.getpid()), int)
    assert process_start_ticks(999_999_999) is None


def test_exports(store: Store) -> None:
    run = store.create_run("bench", name="x")
    trial = store.add_trial(run, 1, "oltp_point_select", {"threads": 2})
    p = parse_output((DATA / "oltp_point_select.out").read_text().splitlines(), threads=2)
    for s in p.samples:
        store.add_sample(trial, s)
    from clusterbench.store.export import SAMPLE_CSV_COLUMNS, run_data, samples_csv

    csv_text = samples_csv(store, run)
    lines = csv_text.splitlines()
    assert lines[0] == ",".join(SAMPLE_CSV_COLUMNS)
    # one naming scheme: the unit in every name that has one, and the format's version in every row
    assert lines[0].startswith("run_id,trial_seq,workload,client,t_s,interval_s,threads,events,tps,")
    assert lines[0].endswith(",lat_p95_ms,lat_p99_ms,lat_p999_ms,errors,reconnects,format_version")
    assert lines[1].startswith("1,1,oltp_point_select,0,1.0,") and lines[1].endswith(",2")
    assert len(lines) == 3
    data = run_data(store, run)
    assert data["run"]["name"] == "x"
    assert [s["events"] for s in data["trials"][0]["samples"]] == [28062, 24194]
    assert {"t_s", "interval_s", "reads_per_s", "lat_p95_ms"} <= set(data["trials"][0]["samples"][0])
    json.dumps(data)
    with pytest.raises(InputError, match="no run 42 in the store"):
        samples_csv(store, 42)
    assert [r.id for r in store.list_runs()] == [run]


def test_trial_clients_round_trip_and_an_old_store_gains_the_table(tmp_path: Path) -> None:
    import sqlite3

    from clusterbench.store.schema import MIGRATIONS

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0] + MIGRATIONS[1] + ";PRAGMA user_version=2;")
    conn.close()
    with Store.open(path) as s:
        assert s.version == SCHEMA_VERSION
        run = s.create_run("run")
        trial = s.add_trial(run, 1, "oltp_read_only", {})
        s.add_trial_client(trial, {"client": 1, "host": "cb-x-c2", "database": "sbtest2", "pid": 42,
                                   "started_ns": 10**18, "start_wall": 1e9, "rate_asked": 100.0,
                                   "rate_achieved": 50.5, "cpu": {"proc_frac": 0.5},
                                   "flags": ["rate_not_achieved"]})  # fmt: skip
        [row] = s.trial_clients(trial)
        assert row == {"client": 1, "host": "cb-x-c2", "database": "sbtest2", "pid": 42, "started_ns": 10**18,
                       "start_wall": 1e9, "rate_asked": 100.0, "rate_achieved": 50.5,
                       "cpu": {"proc_frac": 0.5}, "flags": ["rate_not_achieved"]}  # fmt: skip
        from clusterbench.store.export import run_data

        assert run_data(s, run)["trials"][0]["clients"] == [row]


def test_a_store_migrated_by_another_process_meanwhile_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two processes open a new store at once: both read version 0, one migrates first; the other's
    # CREATE TABLE then fails ("already exists") and it must take the store as it is.
    path = tmp_path / "r.db"
    Store.open(path).close()
    conn = sqlite3.connect(str(path), isolation_level=None)
    late = Store(conn)
    stale = [0]  # what this process read before the other one migrated
    real = Store.version.fget  # type: ignore[attr-defined]
    monkeypatch.setattr(Store, "version", property(lambda self: stale.pop() if stale else real(self)))
    late.migrate()
    assert stale == []  # the stale read was used: every migration ran into existing tables
    assert real(late) == SCHEMA_VERSION
    conn.close()

"""SQLite schema as numbered migrations. PRAGMA user_version holds the number applied last."""

from __future__ import annotations

MIGRATIONS: tuple[str, ...] = (
    # 1: runs, trials, samples, summaries, histograms, events, provenance
    """
    CREATE TABLE runs (
        id           INTEGER PRIMARY KEY,
        kind         TEXT NOT NULL,
        name         TEXT NOT NULL DEFAULT '',
        command_line TEXT NOT NULL DEFAULT '',
        notes        TEXT NOT NULL DEFAULT '',
        status       TEXT NOT NULL CHECK (status IN ('running', 'completed', 'interrupted', 'failed')),
        started_at   TEXT NOT NULL,
        ended_at     TEXT,
        owner_pid    INTEGER,
        owner_start  INTEGER
    );
    CREATE TABLE trials (
        id         INTEGER PRIMARY KEY,
        run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        workload   TEXT NOT NULL,
        params     TEXT NOT NULL DEFAULT '{}',
        status     TEXT NOT NULL CHECK (status IN ('running', 'completed', 'interrupted', 'failed')),
        started_at TEXT NOT NULL,
        ended_at   TEXT,
        UNIQUE (run_id, seq)
    );
    CREATE TABLE samples (
        id         INTEGER PRIMARY KEY,
        trial_id   INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
        client     INTEGER NOT NULL,
        t          REAL NOT NULL,
        interval   REAL NOT NULL,
        threads    INTEGER NOT NULL,
        events     INTEGER NOT NULL,
        tps        REAL NOT NULL,
        qps_read   REAL NOT NULL,
        qps_write  REAL NOT NULL,
        qps_other  REAL NOT NULL,
        lat_min    REAL,
        lat_avg    REAL,
        lat_max    REAL,
        percentile REAL,
        lat_pct    REAL,
        p50        REAL,
        p95        REAL,
        p99        REAL,
        p999       REAL,
        errors     INTEGER NOT NULL,
        reconnects INTEGER NOT NULL,
        hist       TEXT
    );
    CREATE INDEX samples_trial ON samples (trial_id, client, t);
    CREATE TABLE summaries (
        trial_id   INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
        client     INTEGER NOT NULL,
        duration   REAL NOT NULL,
        threads    INTEGER NOT NULL,
        events     INTEGER NOT NULL,
        tps        REAL NOT NULL,
        qps_read   REAL NOT NULL,
        qps_write  REAL NOT NULL,
        qps_other  REAL NOT NULL,
        lat_min    REAL NOT NULL,
        lat_avg    REAL NOT NULL,
        lat_max    REAL NOT NULL,
        percentile REAL NOT NULL,
        lat_pct    REAL,
        p50        REAL,
        p95        REAL,
        p99        REAL,
        p999       REAL,
        errors     INTEGER NOT NULL,
        reconnects INTEGER NOT NULL,
        exit_code  INTEGER,
        PRIMARY KEY (trial_id, client)
    );
    CREATE TABLE histograms (
        trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
        client   INTEGER NOT NULL,
        idx      INTEGER NOT NULL,
        value_ms REAL NOT NULL,
        le_ms    REAL NOT NULL,
        count    INTEGER NOT NULL,
        PRIMARY KEY (trial_id, client, idx)
    );
    CREATE TABLE events (
        id       INTEGER PRIMARY KEY,
        run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        trial_id INTEGER REFERENCES trials(id) ON DELETE CASCADE,
        at       TEXT NOT NULL,
        t        REAL,
        kind     TEXT NOT NULL,
        detail   TEXT NOT NULL DEFAULT '{}'
    );
    CREATE TABLE provenance (
        run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        trial_id INTEGER REFERENCES trials(id) ON DELETE CASCADE,
        key      TEXT NOT NULL,
        value    TEXT NOT NULL
    );
    CREATE UNIQUE INDEX provenance_key ON provenance (run_id, COALESCE(trial_id, -1), key);
    """,
    # 2: verification histories (ops, written as the run goes), checker verdicts, monitor samples
    """
    CREATE TABLE ops (
        id          INTEGER PRIMARY KEY,
        trial_id    INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
        workload    TEXT NOT NULL,
        client      INTEGER NOT NULL,
        process     TEXT NOT NULL,
        address     TEXT NOT NULL DEFAULT '',
        kind        TEXT NOT NULL,
        key         TEXT,
        value       TEXT,
        wall_start  REAL NOT NULL,
        wall_end    REAL NOT NULL,
        t_start     REAL NOT NULL,
        t_end       REAL NOT NULL,
        outcome     TEXT NOT NULL CHECK (outcome IN ('ok', 'fail', 'unknown')),
        error_code  INTEGER,
        error       TEXT
    );
    CREATE INDEX ops_trial ON ops (trial_id, workload, t_start);
    CREATE TABLE verdicts (
        id                    INTEGER PRIMARY KEY,
        run_id                INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        trial_id              INTEGER REFERENCES trials(id) ON DELETE CASCADE,
        at                    TEXT NOT NULL,
        checker               TEXT NOT NULL,
        result                TEXT NOT NULL CHECK (result IN ('PASS', 'FAIL', 'UNKNOWN')),
        summary               TEXT NOT NULL,
        evidence              TEXT NOT NULL DEFAULT '{}',
        documented_limitation INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX verdicts_run ON verdicts (run_id, trial_id);
    CREATE TABLE monitor_samples (
        id             INTEGER PRIMARY KEY,
        trial_id       INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
        t              REAL NOT NULL,
        wall           REAL NOT NULL,
        node           TEXT NOT NULL,
        answered       INTEGER NOT NULL,
        cluster_status TEXT NOT NULL DEFAULT '',
        size           INTEGER NOT NULL DEFAULT 0,
        conf_id        INTEGER NOT NULL DEFAULT -1,
        state_uuid     TEXT NOT NULL DEFAULT '',
        local_state    TEXT NOT NULL DEFAULT '',
        ready          INTEGER NOT NULL DEFAULT 0,
        last_committed INTEGER NOT NULL DEFAULT -1,
        members        TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX monitor_samples_trial ON monitor_samples (trial_id, t);
    """,
    # 3: where each load client of a trial ran, when it started, its CPU use and saturation flags
    #    (its own summary and histogram stay in summaries / histograms under its client number)
    """
    CREATE TABLE trial_clients (
        trial_id      INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
        client        INTEGER NOT NULL,
        host          TEXT NOT NULL,
        database      TEXT NOT NULL,
        pid           INTEGER,
        started_ns    INTEGER,
        start_wall    REAL,
        rate_asked    REAL NOT NULL DEFAULT 0,
        rate_achieved REAL,
        cpu           TEXT,
        flags         TEXT NOT NULL DEFAULT '[]',
        PRIMARY KEY (trial_id, client)
    );
    """,
    # 4: server telemetry, one row per figure per second (docs/telemetry.md), and each trial's
    #    bottleneck verdict with every candidate resource and its utilization
    """
    CREATE TABLE telemetry (
        trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
        t        REAL NOT NULL,
        wall     REAL NOT NULL,
        source   TEXT NOT NULL,
        metric   TEXT NOT NULL,
        value    REAL NOT NULL
    );
    CREATE INDEX telemetry_trial ON telemetry (trial_id, source, metric, t);
    CREATE TABLE bottlenecks (
        trial_id    INTEGER PRIMARY KEY REFERENCES trials(id) ON DELETE CASCADE,
        resource    TEXT NOT NULL,
        source      TEXT NOT NULL DEFAULT '',
        utilization REAL,
        summary     TEXT NOT NULL,
        detail      TEXT NOT NULL DEFAULT '{}'
    );
    """,
    # 5: tags are key=value labels of their own (a bare word is a key without a value), moved out
    #    of the run's provenance 'tags' list; one run may be marked as the baseline
    """
    CREATE TABLE run_tags (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key    TEXT NOT NULL,
        value  TEXT NOT NULL DEFAULT '',
        seq    INTEGER NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE INDEX run_tags_key ON run_tags (key, value);
    INSERT OR IGNORE INTO run_tags (run_id, key, value, seq)
        SELECT p.run_id,
               CASE WHEN instr(j.value, '=') > 0
                    THEN substr(j.value, 1, instr(j.value, '=') - 1) ELSE j.value END,
               CASE WHEN instr(j.value, '=') > 0 THEN substr(j.value, instr(j.value, '=') + 1) ELSE '' END,
               j.key
        FROM provenance p, json_each(p.value) j
        WHERE p.key = 'tags' AND p.trial_id IS NULL;
    DELETE FROM provenance WHERE key = 'tags' AND trial_id IS NULL;
    ALTER TABLE runs ADD COLUMN baseline INTEGER NOT NULL DEFAULT 0;
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)

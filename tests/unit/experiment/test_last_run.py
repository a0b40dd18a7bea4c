"""`experiment report last` means the experiment run worked on most recently."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from clusterbench.experiment.stored import last_experiment as _last_experiment
from clusterbench.store import Store


class Ticks:
    def __init__(self) -> None:
        self.t = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.t += timedelta(seconds=10)
        return self.t


def test_a_resumed_older_run_is_the_last_one(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.db", clock=Ticks()) as st:
        a = st.create_run("experiment", name="a")
        st.finish_run(a, "interrupted")
        b = st.create_run("experiment", name="b")
        st.finish_run(b, "completed")
        st.create_run("run", name="not an experiment")
        assert _last_experiment(st) == b
        st.conn.execute("UPDATE runs SET status = 'running', ended_at = NULL WHERE id = ?", (a,))
        st.finish_run(a, "completed")  # resumed and finished after b
        assert _last_experiment(st) == a

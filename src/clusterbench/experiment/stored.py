"""An experiment's runs and trials as stored: which run holds a plan, which of its trials are
done. Only the store: `plan` and the reports read them without the machinery that runs trials."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clusterbench.errors import InputError
from clusterbench.store import Store

if TYPE_CHECKING:
    from clusterbench.experiment.planner import Plan

KIND = "experiment"


def find_run(store: Store, plan: Plan) -> int | None:
    """The newest experiment run of this plan (same trials), if any."""
    rows = store.conn.execute(
        "SELECT r.id FROM runs r JOIN provenance p ON p.run_id = r.id AND p.trial_id IS NULL "
        "AND p.key = 'experiment' WHERE r.kind = ? ORDER BY r.id DESC",
        (KIND,),
    ).fetchall()
    for r in rows:
        prov = store.provenance(r[0]).get("experiment") or {}
        if prov.get("plan_id") == plan.id:
            return int(r[0])
    return None


def done_trials(store: Store, run_id: int) -> dict[str, int]:
    """Trial key → trial id of the latest completed trial of each key."""
    out: dict[str, int] = {}
    for tr in store.trials(run_id):
        key = tr.params.get("key")
        if key and tr.status == "completed":
            out[key] = tr.id
    return out


def trial_rows(store: Store, run_id: int) -> list[dict[str, Any]]:
    """The latest completed trial of every key: params plus its all-clients summary."""
    latest = done_trials(store, run_id)
    by_id = {tr.id: tr for tr in store.trials(run_id)}
    out = []
    for key, tid in latest.items():
        tr = by_id[tid]
        s = store.summary(tid)
        out.append({"trial_id": tid, "seq": tr.seq, "key": key, **tr.params, "summary": s})
    out.sort(key=lambda r: r.get("index", 0))
    return out


def last_experiment(store: Store) -> int:
    """The experiment run worked on most recently: a resumed older run counts from its resume,
    so `report last` after `experiment run` reports the run that just ran."""
    runs = [r for r in store.list_runs() if r.kind == KIND]
    if not runs:
        raise InputError("no experiment runs in the store; start one with `clusterbench experiment run FILE`")
    return int(max(runs, key=lambda r: (max(r.started_at, r.ended_at or ""), r.id)).id)

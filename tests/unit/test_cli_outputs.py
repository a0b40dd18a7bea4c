"""What people read and script after the numbers exist (issue 24): verdicts in every output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterbench.cli.main import main
from clusterbench.store import Store
from clusterbench.workloads.parse import parse_output

DATA = Path(__file__).parent / "workloads" / "data"

AVAILABILITY = {
    "checker": "availability", "result": "FAIL", "summary": "writes stopped for 23.0 s (budget 10 s)",
    "evidence": {"faults": [{"fault": {"name": "kill-node 2"}, "paths": []}]}, "documented_limitation": False,
}  # fmt: skip
LEDGER = {"checker": "ledger", "result": "PASS", "summary": "1200 acknowledged inserts, none lost",
          "evidence": {"acknowledged": 1200, "lost": []}}  # fmt: skip


def make_drill(path: Path, *, engine: str = "galera") -> int:
    """A stored `fault` run of one trial: its load and two verdicts, one PASS and one FAIL."""
    p = parse_output((DATA / "oltp_point_select.out").read_text().splitlines(), threads=2)
    with Store.open(path) as s:
        run = s.create_run("fault", name="kill-node", command_line="clusterbench fault kill-node --node 2")
        s.set_provenance(run, "topology", {"cluster": {"name": "lab"}, "engine": {"kind": engine}})
        trial = s.add_trial(run, 1, "oltp_point_select", {"threads": 2})
        for sample in p.samples:
            s.add_sample(trial, sample)
        assert p.summary is not None
        s.add_summary(trial, p.summary)
        s.add_verdict(run, LEDGER, trial_id=trial)
        s.add_verdict(run, AVAILABILITY, trial_id=trial)
        s.finish_trial(trial, "completed")
        s.finish_run(run, "completed")
    return run


def out_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_show_json_and_export_json_of_a_drill_carry_its_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    run = make_drill(db)
    tps = 52256 / 2.0039366780000001
    summary = parse_output((DATA / "oltp_point_select.out").read_text().splitlines()).summary
    assert summary is not None and summary.hist is not None
    p95 = summary.hist.percentile(95)
    show = ["results", "show", str(run), "--json"]
    export = ["results", "export", str(run), "--format", "json"]
    for argv in (show, export):
        data = json.loads(out_of(capsys, *argv, "--results", str(db)))
        assert data["format_version"] == 2
        v = data["verdicts"]
        assert (v["result"], v["passed"], v["total"]) == ("FAIL", 1, 2)
        assert [(c["trial"], c["checker"], c["result"]) for c in v["checks"]] == [
            (1, "ledger", "PASS"), (1, "availability", "FAIL")
        ]  # fmt: skip
        assert v["checks"][1]["evidence"] == AVAILABILITY["evidence"]
        head = data["run"] if argv[1] == "show" else data
        assert (head["engine"], head["cluster"], head["kind"]) == ("galera", "lab", "fault")
        assert head["verdict"] == "FAIL"
        assert head["outcome"] == f"{tps:,.0f} tps, p95 {p95:.3g} ms, 1/2 PASS, 1 FAIL"
    exported = json.loads(out_of(capsys, *export, "--results", str(db)))
    assert [v["checker"] for v in exported["trials"][0]["verdicts"]] == ["ledger", "availability"]


def test_show_prints_the_outcome_and_the_verdicts_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    run = make_drill(db, engine="group_replication")
    out = out_of(capsys, "results", "show", str(run), "--results", str(db))
    lines = out.splitlines()
    assert lines[2].strip().startswith("MySQL Group Replication, cluster lab: ")
    assert "verdicts: FAIL (1/2 PASS, 1 FAIL)" in out
    assert out.index("writes stopped for 23.0 s") < out.index("summary: throughput")

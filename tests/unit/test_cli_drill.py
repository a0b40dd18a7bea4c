"""cli/drill.py: the live view of a drill is the scenario engine's listener, so fault events show
while the drill runs (it was created but never passed to the engine)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterbench.cli import drill
from clusterbench.scenario.drill import DrillOutcome
from clusterbench.scenario.spec import load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


class FakeCluster:
    """A cluster of 3 nodes behind one HAProxy, as far as drill.py reads it."""

    class topology:  # noqa: N801 - the attribute shape drill.py reads
        name = "lab"

        class cluster:  # noqa: N801
            nodes = 3

        class balancer:  # noqa: N801
            kind = "haproxy"


def test_the_drill_view_receives_fault_events(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[str] = []

    class FakeDrill:
        def __init__(self, *a: Any, listener: Any = None, **kw: Any) -> None:
            self.listener = listener

        def faults(self) -> list[Any]:
            return []

        def run(self, command: str, faults: Any = None) -> DrillOutcome:
            self.listener.fault_event(10.0, {"fault": "kill-node n2", "phase": "applied"})
            return DrillOutcome(run_id=1, trial_id=1, status="completed")

    monkeypatch.setattr(drill, "_cluster_for", lambda spec, topo, name: (FakeCluster(), False))
    monkeypatch.setattr(drill.leftovers, "find", lambda cluster: [])
    monkeypatch.setattr(drill, "Drill", FakeDrill)
    monkeypatch.setattr(drill, "sysbench_runner", lambda cluster=None: None)
    monkeypatch.setattr(drill.DrillView, "phase", lambda self, text: seen.append(text))
    spec, _ = load_scenario(EXAMPLES / "kill-node.toml")
    drill._execute(spec, None, "lab", tmp_path / "r.db", False)
    assert seen == ["[  10.0 s] fault kill-node n2: applied"]


def test_fault_no_prepare_reaches_the_scenario(monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterbench.cli.main import main

    seen: list[Any] = []

    def fake_execute(spec: Any, *a: Any, **kw: Any) -> int:
        seen.append(spec)
        return 0

    monkeypatch.setattr(drill, "_execute", fake_execute)
    assert main(["fault", "kill-node", "--node", "2", "-w", "tpcc", "--no-prepare", "-n", "lab"]) == 0
    assert main(["fault", "kill-node", "--node", "2", "-w", "tpcc", "-n", "lab"]) == 0
    assert [(s.load.workload, s.load.prepare) for s in seen] == [("tpcc", False), ("tpcc", True)]


def test_a_scenario_file_may_reuse_the_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from clusterbench.errors import InputError

    f = tmp_path / "s.toml"
    f.write_text('[load]\nworkload = "tpcc"\nprepare = false\n')
    spec, _ = load_scenario(f)
    assert spec.load.prepare is False
    from clusterbench.cli.main import main

    assert main(["check", str(f)]) == 0
    assert (
        "  load: tpcc x4 threads for 60 s via balancer on the tables already there (prepare = false); "
        "faults: none" in capsys.readouterr().out
    )
    f.write_text('[load]\nworkload = "tpcc"\nprepare = "later"\n')
    with pytest.raises(InputError) as e:
        load_scenario(f)
    assert str(e.value).startswith(f"{f}: load.prepare: Input should be a valid boolean")


def test_a_tpcc_consistency_fail_is_a_verdict_row_and_fails_the_drill(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clusterbench.checkers.verdict import Result, Verdict

    class FakeDrill:
        def __init__(self, *a: Any, **kw: Any) -> None:
            pass

        def faults(self) -> list[Any]:
            return []

        def run(self, command: str, faults: Any = None) -> DrillOutcome:
            summary = "condition 9 (D_YTD = sum(H_AMOUNT) for each district): FAIL, 1 row(s), e.g. 1, 3"
            return DrillOutcome(run_id=7, trial_id=7, status="completed", verdicts=[
                Verdict("trial", Result.PASS, "ran as planned"),
                Verdict("tpcc-consistency", Result.FAIL, summary),
            ])  # fmt: skip

    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(drill, "_cluster_for", lambda spec, topo, name: (FakeCluster(), False))
    monkeypatch.setattr(drill.leftovers, "find", lambda cluster: [])
    monkeypatch.setattr(drill, "Drill", FakeDrill)
    monkeypatch.setattr(drill, "sysbench_runner", lambda cluster=None: None)
    spec, _ = load_scenario(EXAMPLES / "tpcc-kill-node.toml")
    spec = spec.model_copy(update={"fault": [], "load": spec.load.model_copy(update={"prepare": False})})
    assert drill._execute(spec, None, "lab", tmp_path / "r.db", False) == 1
    out = capsys.readouterr().out
    said = "tpcc x4 threads for 40 s via balancer on the tables already there (--no-prepare); no faults"
    assert said in out
    assert "tpcc-consistency" in out and "condition 9 (D_YTD = sum(H_AMOUNT) for each district): FAIL" in out
    assert "overall: FAIL   run 7" in out

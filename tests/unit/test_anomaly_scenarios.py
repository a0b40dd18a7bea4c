"""[anomalies] and [random_faults] in scenario files, the anomaly table, soak's helpers, and the
bad input of the issue: an unknown checker, 0 keys, a coordinated crash with a window < 0 (one
line, exit 2, nothing started)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterbench.checkers.counter import check_counter
from clusterbench.checkers.list_append import check_list_append
from clusterbench.checkers.stale_read import check_stale_reads
from clusterbench.cli.drill import parse_duration
from clusterbench.cli.main import main
from clusterbench.errors import InputError
from clusterbench.history.ops import Op, Outcome
from clusterbench.history.txn import MicroOp, Txn
from clusterbench.scenario.anomalies import anomaly_rows
from clusterbench.scenario.drill import soak_spec
from clusterbench.scenario.spec import load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(autouse=True)
def isolated(cli_home: Path) -> Path:
    return cli_home


def write(tmp_path: Path, text: str) -> Path:
    """A scenario file that names a topology, so every check happens before anything is up."""
    f = tmp_path / "s.toml"
    f.write_text(f"topology = '{EXAMPLES / 'topologies' / '3-nodes.toml'}'\n" + text)
    return f


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[anomalies]\ncheckers = ['counter', 'lost-writes']\n",
         "anomalies.checkers: unknown checker 'lost-writes'; known: counter, stale-read, list-append"),
        ("[anomalies.counter]\nkeys = 0\n",
         "anomalies.counter.keys: Input should be greater than or equal to 1 (got 0)"),
        ("[anomalies.list_append]\nkeys = 0\n",
         "anomalies.list_append.keys: Input should be greater than or equal to 1 (got 0)"),
        ("[load]\nduration = 30\n[[fault]]\nkind = 'coordinated-crash'\nat = 5\nfor = 10\nwindow = -1\n",
         "fault[0].window: Input should be greater than or equal to 0 (got -1)"),
        ("[load]\nduration = 30\n[random_faults]\ncount = 9\n", "random_faults: 9 faults of up to 8 s"),
    ],
)  # fmt: skip
def test_bad_anomaly_input_is_one_line_exit_2(
    text: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write(tmp_path, text)
    for argv in (["check", str(f)], ["scenario", str(f)], ["soak", str(f), "--trials", "2"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err and err.startswith("error: "), (argv, err)


def test_fault_command_window_below_zero_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fault", "coordinated-crash", "--window", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "window: Input should be greater than or equal to 0" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--trials", "2", "--for", "10m"], "give --trials N or --for DURATION"),
        ([], "give --trials N or --for DURATION"),
        (["--for", "soon"], "--for 'soon': give a duration like 600, 600s, 30m or 2h"),
    ],
)
def test_soak_options(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write(tmp_path, "[load]\nduration = 10\n")
    assert main(["soak", str(f), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_parse_duration() -> None:
    assert [parse_duration(x) for x in ("90", "90s", "30m", "2h", "1.5m")] == [90, 90, 1800, 7200, 90]
    with pytest.raises(InputError):
        parse_duration("0")


def test_soak_trials_get_their_own_seeds(tmp_path: Path) -> None:
    f = write(tmp_path, "seed = 10\n[load]\nduration = 60\n[random_faults]\ncount = 2\nseed = 100\n")
    spec, _ = load_scenario(f)
    t0, t3 = soak_spec(spec, 0), soak_spec(spec, 3)
    assert (t0.seed, t3.seed) == (10, 13)
    assert (t0.random_seed, t3.random_seed) == (100, 103)
    assert t0.planned(3, 1, "s") != t3.planned(3, 1, "s")
    assert soak_spec(spec, 3).planned(3, 1, "s") == t3.planned(3, 1, "s")


def test_anomalies_example_loads_and_check_describes_it(capsys: pytest.CaptureFixture[str]) -> None:
    path = EXAMPLES / "scenarios" / "anomalies.toml"
    spec, topo = load_scenario(path)
    assert spec.anomalies is not None and set(spec.anomalies.checkers) == {
        "counter",
        "stale-read",
        "list-append",
    }
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "anomaly checkers: counter, stale-read, list-append" in out


# ---- the table ---------------------------------------------------------------------------------

DOC = ("lost-update", "internal", "stale-read", "G2-item")


def _trial(lost: int, stale: int) -> list[dict[str, object]]:
    key = "read-modify-write/1"
    incs = [Op("counter", 1, "node:1", "x", "incr", key, None, 0, 0, 0, 0.1, Outcome.OK)] * 100
    counter = check_counter(incs, {"n1": {key: 100 - lost}}, mode="read-modify-write", documented=DOC)
    ops = []
    for v in range(1, 11):
        k = "default/node:1>node:2"
        ops.append(Op("stale-read", 2, "node:1", "x", "write", k, str(v), 0, 0, v, v + 0.01, Outcome.OK))
        seen = v - 1 if v <= stale else v
        val = f'{{"seen": {seen}, "expect": {v}, "pair": "node:1>node:2"}}'
        ops.append(Op("stale-read", 2, "node:2", "y", "read", k, val, 0, 0, v + 0.02, v + 0.03, Outcome.OK))
    sr = check_stale_reads(
        ops, session="default", statements=["SET SESSION wsrep_sync_wait=0"], documented=DOC
    )
    txns = [
        Txn(0, 1, "node:1", Outcome.OK, (MicroOp("r", 1, ()), MicroOp("append", 2, 1)), 0, 9),
        Txn(1, 2, "node:2", Outcome.OK, (MicroOp("r", 2, ()), MicroOp("append", 1, 2)), 0, 9),
        Txn(2, 3, "final:n1", Outcome.OK, (MicroOp("r", 1, (2,)), MicroOp("r", 2, (1,))), 10, 11, final=True),
    ]
    la = check_list_append(txns, documented=DOC, label="default/plain")
    return [v.to_json() for v in (counter, sr, la)]


def test_anomaly_rows_count_trials_where_seen_with_rates_and_examples() -> None:
    rows = {(r.anomaly, r.mode): r for r in anomaly_rows([_trial(30, 2), _trial(0, 0), _trial(5, 0)])}
    lu = rows[("lost increments (counter)", "counter read-modify-write")]
    assert (lu.trials, lu.seen, lu.status) == (3, 2, "documented limitation")
    assert lu.rate == "35/300 acknowledged (11.7 %)"
    assert lu.example == "read-modify-write/1: 100 acknowledged increments, value 70"
    st = rows[("stale-read", "probe default: SET SESSION wsrep_sync_wait=0")]
    assert (st.trials, st.seen, st.rate) == (3, 1, "2/30 reads (6.7 %)")
    assert st.example.startswith("node:1>node:2: saw version 0 after 1 was acknowledged")
    g2 = rows[("G2-item", "list-append default/plain")]
    assert (g2.trials, g2.seen, g2.status) == (3, 3, "documented limitation")
    assert "-rw(" in g2.example
    g0 = rows[("G0", "list-append default/plain")]
    assert (g0.trials, g0.seen, g0.status) == (3, 0, "")


def test_a_list_append_class_seen_in_one_trial_counts_every_trial_of_its_mode() -> None:
    def la(anomalies: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"checker": "list-append:default/plain", "result": "FAIL" if anomalies else "PASS",
                 "documented_limitation": bool(anomalies), "summary": "",
                 "evidence": {"anomalies": anomalies, "documented_seen": sorted(anomalies)}}]  # fmt: skip

    internal = {"internal": {"count": 1, "examples": [{"why": "two reads of key 3 differ"}]}}
    rows = {(r.anomaly, r.mode): r for r in anomaly_rows([la({}), la(internal), la({})])}
    row = rows[("internal", "list-append default/plain")]
    assert (row.trials, row.seen, row.status, row.example) == (
        3, 1, "documented limitation", "two reads of key 3 differ"
    )  # fmt: skip
    assert rows[("G0", "list-append default/plain")].trials == 3


def test_anomaly_workloads_report_their_operations_to_the_trial_checker() -> None:
    from clusterbench.history.ops import History, Timebase
    from clusterbench.scenario.anomalies import AnomalyVerification
    from clusterbench.scenario.anomaly_spec import AnomalySpec
    from clusterbench.spec.endpoint import Address, Endpoint
    from clusterbench.verify.counter import CounterWorkload

    eps = [Endpoint(name=f"node:{i}", addresses=(Address(host=f"10.0.0.{i}"),), user="u", password="p")
           for i in (1, 2, 3)]  # fmt: skip
    h = History()
    av = AnomalyVerification(None, AnomalySpec(), None)  # type: ignore[arg-type]
    av.counter = CounterWorkload(eps, h, Timebase(), modes=["increment"], rate=10)
    av.stopped_t = 10.0
    for t in range(100):  # 3 clients x 10/s for 10 s, 5 s of it inside a fault window
        h.add(
            Op("counter", 2000, "node:1", "x", "incr", "increment/1", None, 0, 0, t / 10, t / 10, Outcome.OK)
        )
    (run,) = av.verifier_runs([(2.0, 7.0)])
    assert (run.workload, run.expected, run.recorded) == ("counter", 150.0, 49)  # 2.0 s to 7.0 s inclusive


def test_anomaly_workloads_write_where_the_engine_takes_writes() -> None:
    from clusterbench.engines.base import NodeHealth
    from clusterbench.scenario.anomalies import probe_pairs, writers
    from clusterbench.spec.endpoint import Address, Endpoint

    eps = [Endpoint(name=f"node:{i}", addresses=(Address(host=f"10.0.0.{i}"),), user="u", password="p")
           for i in (1, 2, 3)]  # fmt: skip

    class N:
        def __init__(self, writable: bool | None) -> None:
            self.writable = writable

        def health(self) -> NodeHealth | None:
            if self.writable is None:
                raise OSError("down")
            return NodeHealth("ONLINE", True, True, self.writable, 3)

    # Every node writes (Galera, multi-primary): a ring.
    all_w = writers([N(True), N(True), N(True)], eps)  # type: ignore[list-item]
    assert [(w.name, r.name) for w, r in probe_pairs(all_w, eps)] == [
        ("node:1", "node:2"), ("node:2", "node:3"), ("node:3", "node:1")
    ]  # fmt: skip
    # A single primary: it writes, every secondary reads.
    one = writers([N(False), N(True), N(None)], eps)  # type: ignore[list-item]
    assert [e.name for e in one] == ["node:2"]
    assert [(w.name, r.name) for w, r in probe_pairs(one, eps)] == [
        ("node:2", "node:1"),
        ("node:2", "node:3"),
    ]
    # Nobody says it writes: every node is tried (their failures are recorded as such).
    assert len(writers([N(False)] * 3, eps)) == 3  # type: ignore[list-item]

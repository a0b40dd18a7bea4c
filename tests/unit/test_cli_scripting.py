"""The command line for scripts: --json outputs parse and hold the numbers of the tables; the summary
export; tags and notes; compare of any two runs of the same tests; check FILE; one-line errors."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from clusterbench.cli.main import main
from clusterbench.store import Store
from clusterbench.workloads import parse_output

DATA = Path(__file__).parent / "workloads" / "data"
EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.fixture(autouse=True)
def home(cli_home: Path) -> Path:
    return cli_home


def _add_run(s: Store, cmd: str, scale: float = 1.0) -> int:
    """A run of two tests; `scale` thins the second test's samples (fewer events = lower tps)."""
    run = s.create_run("suite", name="suite", command_line=cmd)
    for seq, (test, f) in enumerate((("oltp_point_select", "oltp_point_select.out"),
                                      ("oltp_read_write", "oltp_read_write_reconnect.out")), 1):  # fmt: skip
        p = parse_output((DATA / f).read_text().splitlines(), threads=2)
        t = s.add_trial(run, seq, test, {"threads": 2, "time": 2, "clients": 1, "rate": 0})
        for smp in p.samples:
            s.add_sample(t, smp)
        assert p.summary is not None
        s.add_summary(t, p.summary)
        s.finish_trial(t, "completed")
    s.finish_run(run, "completed")
    return run


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    path = tmp_path / "r.db"
    with Store.open(path) as s:
        _add_run(s, "clusterbench suite --duration 2")
        _add_run(s, "/usr/bin/python3 -m clusterbench scenario x.toml")  # as drills used to store it
    return path


def out_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main(list(argv)) == 0
    cap = capsys.readouterr()
    return json.loads(cap.out)


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("error: ")
    return err[0]


def test_results_list_json_tags_notes_and_the_command_as_typed(
    stored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = str(stored)
    assert (
        main(
            [
                "results",
                "tag",
                "1",
                "--tag",
                "baseline",
                "--tag",
                "v1",
                "--notes",
                "n3 by hand",
                "--results",
                r,
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == "run 1: tags baseline, v1; notes n3 by hand\n"
    runs = out_json(capsys, "results", "list", "--json", "--results", r)
    assert isinstance(runs, list) and [x["id"] for x in runs] == [1, 2]
    assert (
        runs[0]["tags"] == ["baseline", "v1"] and runs[0]["notes"] == "n3 by hand" and runs[0]["trials"] == 2
    )
    assert runs[1]["command_line"] == "clusterbench scenario x.toml"  # not the Python path
    only = out_json(capsys, "results", "list", "--json", "--tag", "baseline", "--results", r)
    assert [x["id"] for x in only] == [1]
    assert main(["results", "list", "--results", r]) == 0
    table = capsys.readouterr().out
    assert "#baseline #v1 n3 by hand" in table  # the command line is in --json and `results show`
    assert main(["results", "tag", "1", "--tag", "two words", "--results", r]) == 2
    assert (
        one_error(capsys)
        == "error: --tag 'two words': a tag is key=value (or a key alone), without spaces or commas, e.g. "
        "--tag env=lab --tag nightly"
    )


def test_results_show_json_has_the_summary_numbers(stored: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = out_json(capsys, "results", "show", "1", "--json", "--results", str(stored))
    assert isinstance(data, dict)
    assert data["run"]["id"] == 1 and data["run"]["kind"] == "suite"
    first = data["summary"][0]
    assert first["test"] == "oltp_point_select" and first["tps"] == pytest.approx(52256 / 2.003936678)
    assert first["lat_p95_ms"] == pytest.approx(0.10413466108439286) and first["lat_p99_ms"] is not None
    assert set(data) == {
        "format", "format_version", "run", "verdicts", "summary", "clients", "server_variables",
        "bottlenecks", "provenance", "events",
    }  # fmt: skip


def test_summary_export_one_row_per_trial_with_units(
    stored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["results", "export", "1", "2", "--format", "summary", "--results", str(stored)]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["run_id"], r["trial"], r["test"]) for r in rows] == [
        ("1", "1", "oltp_point_select"), ("1", "2", "oltp_read_write"),
        ("2", "1", "oltp_point_select"), ("2", "2", "oltp_read_write"),
    ]  # fmt: skip
    assert float(rows[0]["tps"]) == pytest.approx(26076.672, abs=0.001)
    assert rows[0]["lat_p95_ms"] == "0.104" and rows[0]["duration_s"] == "2" and rows[0]["threads"] == "2"
    assert [c for c in rows[0] if c.startswith("lat_")] == [
        "lat_min_ms", "lat_avg_ms", "lat_p95_ms", "lat_p99_ms", "lat_max_ms",
    ]  # fmt: skip
    # several runs only for the summary
    assert main(["results", "export", "1", "2", "--format", "csv", "--results", str(stored)]) == 2
    assert one_error(capsys) == "error: --format csv exports one run; several runs go into --format summary"


def test_compare_two_suites_test_by_test(stored: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = out_json(capsys, "compare", "1", "2", "--json", "--results", str(stored))
    assert isinstance(data, dict) and data["run_a"] == 1 and data["run_b"] == 2
    assert [t["test"] for t in data["tests"]] == ["oltp_point_select", "oltp_read_write"]
    assert all(t["tps_change"] == 0 and t["verdict"] == "no significant difference" for t in data["tests"])
    assert "optimistic" in data["caveat"]
    assert main(["compare", "1", "2", "--results", str(stored)]) == 0
    out = capsys.readouterr().out
    assert "run 2 against run 1, per test" in out and "plots: clusterbench report 2 --baseline 1" in out
    assert main(["compare", "1", "1", "--results", str(stored)]) == 2
    assert one_error(capsys) == "error: RUN_A and RUN_B are both run 1; give two different runs"


def test_compare_refuses_an_experiment_against_a_suite(
    stored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store.open(stored) as s:
        s.create_run("experiment", name="e")
    assert main(["compare", "1", "3", "--results", str(stored)]) == 2
    assert one_error(capsys).startswith(
        "error: run 3 is an experiment and run 1 is not; compare two experiments"
    )


def test_plan_json(capsys: pytest.CaptureFixture[str]) -> None:
    data = out_json(
        capsys, "plan", str(EXAMPLES / "experiments" / "nodes-1-9.toml"), "--profile", "quick", "--json"
    )
    assert isinstance(data, dict) and data["experiment"] == "nodes-1-9" and data["profile"] == "quick"
    assert len(data["trials"]) == 28 and data["done"] == 0
    t = data["trials"][0]
    assert {"index", "part", "point", "rep", "nodes", "test", "threads", "duration_s", "done"} <= set(t)
    assert data["estimate"]["total_s"] > 0
    # the same command under `experiment`
    again = out_json(
        capsys,
        "experiment",
        "plan",
        str(EXAMPLES / "experiments" / "nodes-1-9.toml"),
        "-p",
        "quick",
        "--json",
    )
    assert again == data


def test_status_json(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from clusterbench.cli import operate as cli_main
    from clusterbench.cluster import BalancerView, ClusterStatus, NodeView
    from clusterbench.components.haproxy.status import BackendServer
    from clusterbench.engines.galera.node import health_of
    from clusterbench.engines.galera.status import WsrepStatus
    from clusterbench.faults import leftovers

    w = WsrepStatus(4, "Synced", 3, "Primary", True, True, 42, 0.0, "u", 3)
    be = BackendServer("galera", "n1", "UP", 1, 10, "L7OK", 5)
    nodes = [NodeView(1, "198.18.0.11", True, health_of(w)), NodeView(2, "198.18.0.12", False, None)]
    lbs = [BalancerView(1, "lb1", "198.18.0.2:3306", True, [be])]
    st = ClusterStatus("lab", nodes, "198.18.0.2:3306", True, [be], lbs)

    class Fake:
        def status(self) -> ClusterStatus:
            return st

    monkeypatch.setattr(cli_main, "load_cluster", lambda name: Fake())
    monkeypatch.setattr(leftovers, "find", lambda cluster: [])
    data = out_json(capsys, "status", "--json")
    assert isinstance(data, dict) and data["name"] == "lab"
    assert data["nodes"][0]["primary"] is True and data["nodes"][0]["ready"] is True
    assert data["nodes"][0]["health"]["position"] == "42" and data["nodes"][0]["health"]["state"] == "Synced"
    assert data["nodes"][1] == {"index": 2, "address": "198.18.0.12", "alive": False, "health": None,
                                "primary": None, "ready": None, "disk": None}  # fmt: skip
    assert data["balancers"][0]["backends"][0]["up"] is True and data["faults_left_in_place"] == []


@pytest.mark.parametrize(
    "path",
    [
        "topologies/3-nodes.toml",
        "topologies/3-nodes-vip.toml",
        "scenarios/kill-node.toml",
        "experiments/network.toml",
    ],
)
def test_check_accepts_the_examples(path: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(EXAMPLES / path)]) == 0
    assert capsys.readouterr().out.startswith(f"{EXAMPLES / path}: a valid ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[cluster]\nnodes = 12\n", "cluster.nodes: Input should be less than or equal to 9 (got 12)"),
        ("[load]\nduration = 10\n[[fault]]\nkind = 'kill-node'\ntarget = 'node:2'\nat = 5\nfor = 20\n",
         "fault 1 (kill-node): it would heal at 25 s, after the load ends (10 s)"),
        ("[load]\nduration = 10\ntime = 10\n", "'duration' and 'time' are the same setting; give one"),
        ("[experiment]\nname = 'x'\n[factors]\nnodes = [12]\n", "factors.nodes"),
        ("[cluster\n", "invalid TOML"),
    ],
)  # fmt: skip
def test_check_names_the_problem_and_starts_nothing(
    text: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "f.toml"
    f.write_text(text)
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("error: ") and "Traceback" not in err


def test_check_says_each_problem_once_naming_the_profiles_that_share_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = "[experiment]\nname = 'x'\n[factors]\nthreads = [1, 2]\n"
    bad = "factors = { nodes = [12] }\n"
    profiles = f"[profiles.a]\n{bad}[profiles.b]\n{bad}[profiles.c]\n"
    f = tmp_path / "f.toml"
    # a problem of the base: one line (every profile has it; it was printed once per profile)
    f.write_text(base.replace("[1, 2]", "[0]") + "[profiles.quick]\n[profiles.full]\n")
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {f}: factors.threads"), err
    # one problem of two profiles: one line naming both; the valid profile says nothing
    f.write_text(base + profiles)
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"error: {f} (profile a): factors.nodes")
    assert err[0].endswith(" (also profile b)")


def test_check_estimates_a_search_by_its_budget(capsys: pytest.CaptureFixture[str]) -> None:
    # A search plans no trials ahead; its estimate is the budget's, as `plan` prints it (not 0 min).
    assert main(["check", str(EXAMPLES / "experiments/find-optimum.toml")]) == 0
    lines = capsys.readouterr().out.splitlines()
    quick = next(line for line in lines if line.strip().startswith("profile quick:"))
    assert "a search of 30 trial(s)" in quick
    minutes = int(quick.rsplit("estimated ", 1)[1].split(" ")[0])
    assert 3 <= minutes <= 15


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("repetitions = 3", 'repetitions = "auto"\nmax_repetitions = 0',
         "experiment.max_repetitions: Input should be greater than or equal to 1 (got 0)"),
        ('target = "node:1"', 'target = "node:1"\ninterconnect = "infiniband"',
         "workload.interconnect: Input should be 'socket', 'tcp', 'haproxy' or 'shaped' (got 'infiniband')"),
    ],
)  # fmt: skip
def test_experiment_run_refuses_bad_auto_and_interconnect_settings_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, message: str
) -> None:
    text = (EXAMPLES / "experiments" / "access-methods.toml").read_text()
    text = text.replace('repetitions = "auto"', "repetitions = 3").replace(old, new, 1)
    path = tmp_path / "x.toml"
    path.write_text(text)
    assert main(["experiment", "run", str(path), "--results", str(tmp_path / "r.db")]) == 2
    assert message in one_error(capsys)
    assert not (tmp_path / "r.db").exists()  # nothing started, nothing stored


def test_plan_json_of_auto_repetitions_gives_the_cap(capsys: pytest.CaptureFixture[str]) -> None:
    data = out_json(capsys, "plan", str(EXAMPLES / "experiments" / "access-methods.toml"), "--json")
    assert (data["repetitions"], data["max_repetitions"], len(data["trials"])) == ("auto", 10, 192)

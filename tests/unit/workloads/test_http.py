"""workloads/http.py: vegeta's argv, the rate split, the preflight, the runner end to end with a
fake vegeta (a shell script that prints recorded results: the real pipeline, the common start and
the pump run, no network), and the HTTP tests through SysbenchRunner (dispatch, prepare, cleanup)."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.unit.workloads.test_vegeta import client_lines, expected_acks

from clusterbench.errors import InputError, PreflightError
from clusterbench.runner import BenchPlan, BenchRunner
from clusterbench.runner.bench import make_options
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.store import Store
from clusterbench.workloads.http import (
    PIPELINE,
    HttpRunner,
    attack_args,
    attack_name,
    client_argv,
    find_vegeta,
    split_rate,
    target_line,
)
from clusterbench.workloads.parse import Sample
from clusterbench.workloads.results import RunResult
from clusterbench.workloads.runner import SysbenchRunner
from clusterbench.workloads.sysbench import (
    HTTP_TESTS,
    build_command,
    canonical_test,
    expected_tables,
    http_page,
    prepare_group,
)

DATA = Path(__file__).parent / "data"
EP = Endpoint(name="balancer", addresses=(Address(host="198.18.0.3", port=3306),), user="sb", password="pw")

FAKE_VEGETA = """#!/bin/sh
# attack: record the target (stdin) and the options, print the results recorded for this attack
# name, exit $FAKE_EXIT; encode: pass the lines through (they are JSON already).
cmd=$1; shift
case "$cmd" in
attack)
    read -r target
    echo "$target" >> "$FAKE_DIR/targets"
    echo "$*" >> "$FAKE_DIR/args"
    for a in "$@"; do case "$a" in -name=*) name=${a#-name=};; esac; done
    cat "$FAKE_DIR/results.$name" 2>/dev/null
    [ -n "$FAKE_SAY" ] && echo "$FAKE_SAY" >&2
    exit "${FAKE_EXIT:-0}";;
encode)
    cat;;
esac
"""


@pytest.fixture
def fake_vegeta(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    path = tmp_path / "vegeta"
    path.write_text(FAKE_VEGETA)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("FAKE_DIR", str(tmp_path))
    for c in (0, 1):
        (tmp_path / f"results.cbabc123c{c}").write_text("\n".join(client_lines(c)) + "\n")
    return str(path)


def opts(**kw: Any) -> Any:
    return make_options(**{"test": "http_write", "rate": 20, "time": 3, **kw})


# --- pure pieces ---


def test_tests_pages_and_group() -> None:
    assert HTTP_TESTS == ("http_read", "http_write", "http_mixed")
    assert [http_page(t) for t in HTTP_TESTS] == ["read", "write", "mixed"]
    assert canonical_test("http") == "http_mixed"
    assert canonical_test("oltp_read_only") == "oltp_read_only"
    assert prepare_group("http_read") == "http"
    assert expected_tables(opts(), "http") == ["cbweb_items", "cbweb_writes"]
    with pytest.raises(InputError, match="is not run by sysbench; use workloads.http"):
        build_command(opts(), EP, "run")


def test_rate_must_be_positive_for_http() -> None:
    with pytest.raises(InputError, match=r"^--rate: http_read sends requests at a fixed rate"):
        make_options(test="http_read")
    with pytest.raises(InputError, match=r"^--rate: .*greater than or equal to 0"):
        make_options(test="http_read", rate=-5)
    with pytest.raises(InputError, match=r"^--http-timeout: "):
        make_options(test="http_read", rate=5, http_timeout=0)
    with pytest.raises(InputError, match=r"^--http-max-workers: "):
        make_options(test="http_read", rate=5, http_max_workers=-1)


def test_split_rate() -> None:
    assert split_rate(20, 2) == [10, 10]
    assert split_rate(10, 3) == [4, 3, 3]
    assert split_rate(7, 1) == [7]
    with pytest.raises(InputError, match=r"^--rate 2 over 3 clients leaves a client under 1 request/s"):
        split_rate(2, 3)


def test_targets_and_attack_options() -> None:
    url = "http://198.18.0.6:80/"
    assert target_line(url, opts()) == "GET http://198.18.0.6:80/write"
    assert target_line(url, opts(test="http_read", table_size=500)) == "GET http://198.18.0.6:80/read?rows=500"
    assert target_line(url, opts(test="http_mixed")) == "GET http://198.18.0.6:80/mixed?rows=10000"
    assert attack_name("abc123", 1) == "cbabc123c1"
    assert attack_args(opts(warmup=2), 10, "cbx") == [
        "-name=cbx", "-rate=10/1s", "-duration=5s", "-timeout=10s", "-max-body=1024", "-keepalive=true",
        "-redirects=0",
    ]  # fmt: skip
    capped = attack_args(opts(http_max_workers=64, http_keepalive=False, http_timeout=2.5), 10, "cbx")
    assert capped[3:] == [
        "-timeout=2.5s", "-max-body=1024", "-keepalive=false", "-redirects=0", "-max-workers=64",
    ]  # fmt: skip
    argv = client_argv("/v/vegeta", url, opts(), 10, "cbx")
    assert argv[:5] == ["sh", "-c", PIPELINE, "sh", "/v/vegeta"]
    assert argv[5] == "GET http://198.18.0.6:80/write"


def test_pipeline_passes_the_target_and_reports_the_attack_exit(fake_vegeta: str, tmp_path: Path) -> None:
    argv = client_argv(fake_vegeta, "http://h", opts(), 10, "cbabc123c0")
    env = {"FAKE_DIR": str(tmp_path), "FAKE_EXIT": "4", "PATH": "/usr/bin:/bin"}
    p = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    assert p.returncode == 0  # encode's
    assert p.stderr.strip() == "CBVEGETA attack-exit 4"
    assert len(p.stdout.splitlines()) == 30
    assert (tmp_path / "targets").read_text() == "GET http://h/write\n"


def test_find_vegeta(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = tmp_path / "vegeta"
    built.write_text("")
    assert find_vegeta(built) == str(built)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(PreflightError) as err:
        find_vegeta(tmp_path / "missing" / "vegeta")
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("vegeta, the HTTP load generator, is missing")
    assert "run `make setup` or `bash scripts/build-tools.sh`" in msg
    assert "github.com/tsenart/vegeta/v12@v12.13.0" in msg
    (tmp_path / "vegeta.version").write_text("v12.8.4\n")
    with pytest.raises(PreflightError, match=r"vegeta is vegeta v12.8.4, not v12.13.0; run `bash scripts/"):
        find_vegeta(built)


def test_runner_needs_an_address_and_an_http_test(fake_vegeta: str) -> None:
    with pytest.raises(InputError, match=r"set \[web\] nodes = 1..9"):
        HttpRunner([])
    with pytest.raises(InputError, match="is not an HTTP test"):
        HttpRunner(["http://h"], vegeta=fake_vegeta).check(make_options(test="oltp_read_only"))


# --- the runner with a fake vegeta ---


def test_two_clients_end_to_end(fake_vegeta: str, tmp_path: Path) -> None:
    seen: list[Sample] = []
    runner = HttpRunner(["http://198.18.0.6:80"], vegeta=fake_vegeta, token=lambda: "abc123")
    res = runner.run(opts(), clients=2, on_sample=seen.append)
    assert res.ok and res.failure() is None and res.exit_code == 0
    assert sorted((s.client, s.t) for s in seen) == [(c, t) for c in (0, 1) for t in (1.0, 2.0, 3.0)]
    assert [c.pid is not None for c in res.clients] == [True, True]
    assert [c.rate_asked for c in res.clients] == [10.0, 10.0]
    assert res.http is not None
    assert sorted(res.http.acknowledged) == sorted(expected_acks(0) + expected_acks(1))
    theirs = json.loads((DATA / "vegeta_synth_both.report.json").read_text())
    assert res.http.totals.report()["status_codes"] == theirs["status_codes"]
    assert res.summary is not None
    assert res.summary.events + res.summary.errors == theirs["requests"]
    assert res.summary.events == round(theirs["success"] * theirs["requests"])
    assert res.summary.lat_max_ms == theirs["latencies"]["max"] / 1e6
    assert res.summary.clients == 2
    args = (tmp_path / "args").read_text().splitlines()
    assert sorted(a.split()[0] for a in args) == ["-name=cbabc123c0", "-name=cbabc123c1"]
    assert all("-rate=10/1s" in a and "-duration=3s" in a for a in args)


def test_a_failed_attack_is_a_failed_run(fake_vegeta: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_EXIT", "1")
    monkeypatch.setenv("FAKE_SAY", "error: dial tcp 198.18.0.6:80: connect: no route to host")
    res = HttpRunner(["http://198.18.0.6:80"], vegeta=fake_vegeta, token=lambda: "nothing").run(opts(rate=5))
    assert not res.ok
    assert res.exit_code == 1
    assert res.failure() == (
        "vegeta (http_write) exited with 1: error: dial tcp 198.18.0.6:80: connect: no route to host"
    )


# --- through SysbenchRunner (what the trial pipeline calls) ---


class StubHttp(HttpRunner):
    def __init__(self) -> None:
        super().__init__(["http://h"])
        self.calls: list[dict[str, Any]] = []

    def run(self, opts: Any, **kw: Any) -> RunResult:
        self.calls.append({"test": opts.test, **kw})
        return RunResult(opts.test, [], [], None, 0, [], False)


def test_sysbench_runner_hands_http_tests_to_the_http_runner() -> None:
    stub = StubHttp()
    SysbenchRunner(http=stub).run(opts(), EP, clients=3, preflight=False)
    assert stub.calls == [{"test": "http_write", "clients": 3, "on_sample": None, "hosts": None}]


def test_http_tests_are_refused_without_a_web_tier_or_with_db_targets() -> None:
    with pytest.raises(InputError, match=r"^-w http_write: this cluster has no web tier; set \[web\] nodes"):
        SysbenchRunner().run(opts(), EP)
    with pytest.raises(InputError, match="^--separate-schemas: "):
        SysbenchRunner(http=StubHttp()).run(opts(), EP, separate_schemas=True)
    with pytest.raises(InputError, match="^--target: "):
        SysbenchRunner(http=StubHttp()).run(opts(), EP, endpoints=[EP, EP])


class Cursor:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.rows: list[tuple[str]] = []

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *a: object) -> None:
        pass

    def execute(self, q: str, args: Any = None) -> None:
        self.server.statements.append(q)
        if q.startswith("CREATE TABLE "):
            self.server.tables.add(q.split()[2])
        if q.startswith("DROP TABLE IF EXISTS "):
            self.server.tables.discard(q.split()[-1])
        self.rows = [(t,) for t in sorted(self.server.tables)] if "information_schema" in q else []

    def fetchall(self) -> list[tuple[str]]:
        return self.rows


class Server:
    def __init__(self) -> None:
        self.tables: set[str] = set()
        self.statements: list[str] = []
        self.commits = 0

    def __call__(self, **kw: Any) -> Server:
        return self

    def cursor(self) -> Cursor:
        return Cursor(self)

    def commit(self) -> None:
        self.commits += 1

    def close(self) -> None:
        pass


def test_prepare_makes_the_applications_tables_and_cleanup_drops_them() -> None:
    server = Server()
    runner = SysbenchRunner(connect=server)
    [out] = runner.prepare(opts(table_size=2500), EP)
    assert out.returncode == 0
    assert out.stdout == ["created cbweb_items (2500 rows in 3 INSERTs) and cbweb_writes"]
    assert server.tables == {"cbweb_items", "cbweb_writes"}
    inserts = [q for q in server.statements if q.startswith("INSERT INTO cbweb_items")]
    assert len(inserts) == 3 and server.commits == 1
    runner.cleanup(opts(), EP)
    assert server.tables == set()


# --- one HTTP trial through the one pipeline (BenchRunner -> Pipeline -> SysbenchRunner.run) ---


class NoDatabase(SysbenchRunner):
    """Everything the pipeline asks of the database answers as if the tables were there."""

    def check_endpoint(self, endpoint: Endpoint, databases: Any = None, tls: bool | None = None) -> None:
        pass

    def existing_tables(self, endpoint: Endpoint, database: str, tls: bool) -> set[str]:
        return {"cbweb_items", "cbweb_writes"}

    def prepare(self, opts: Any, endpoint: Endpoint, **kw: Any) -> list[Any]:
        return []


def test_an_http_trial_goes_through_the_pipeline_into_the_store(fake_vegeta: str, tmp_path: Path) -> None:
    class Conn:
        def cursor(self) -> Any:
            return Cursor(Server())

        def close(self) -> None:
            pass

    http = HttpRunner(["http://198.18.0.6:80"], vegeta=fake_vegeta, token=lambda: "abc123")
    runner = BenchRunner(NoDatabase(http=http), facts=dict, connect=lambda **kw: Conn(), telemetry_on=False)
    plan = BenchPlan(kind="run", tests=("http_write",), options=opts(), endpoint=EP, clients=2)
    store = Store.open(tmp_path / "r.db")
    out = runner.execute(plan, store)
    assert out.status == "completed", out.failures
    [trial] = store.trials(out.run_id)
    assert (trial.workload, trial.status) == ("http_write", "completed")
    assert len(store.samples(trial.id)) == 6  # 2 clients x 3 s
    summary = store.summary(trial.id)
    assert summary is not None
    assert summary["tps"] == pytest.approx(len(expected_acks(0) + expected_acks(1)) / 3)
    stored = store.provenance(out.run_id, trial_id=trial.id)["http"]
    assert stored["report"]["status_codes"] == {"0": 6, "200": 46, "503": 8}
    assert stored["acknowledged"] == 46
    assert [s["requests"] for s in stored["seconds"]] == [20, 20, 20]


def test_check_refuses_before_the_run_exists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """BenchRunner.check runs before the run is stored (the pipeline's preflight)."""
    plan = BenchPlan(kind="run", tests=("http_read",), options=opts(test="http_read"), endpoint=EP, clients=2)
    with pytest.raises(InputError, match=r"^-w http_read: this cluster has no web tier"):
        BenchRunner(NoDatabase(), facts=dict, connect=lambda **kw: Server()).check(plan)
    monkeypatch.setattr("clusterbench.workloads.http.VEGETA_BIN", tmp_path / "none" / "vegeta")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    runner = BenchRunner(NoDatabase(http=HttpRunner(["http://h"])), facts=dict, connect=lambda **kw: Server())
    with pytest.raises(PreflightError, match="^vegeta, the HTTP load generator, is missing"):
        runner.check(plan)
    slow = BenchPlan(kind="run", tests=("http_read",), options=opts(test="http_read", rate=1), endpoint=EP,
                     clients=2)  # fmt: skip
    runner = BenchRunner(NoDatabase(http=HttpRunner(["http://h"], vegeta="/v")), facts=dict,
                         connect=lambda **kw: Server())  # fmt: skip
    with pytest.raises(InputError, match="^--rate 1 over 2 clients"):
        runner.check(slow)

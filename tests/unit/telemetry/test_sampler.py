"""The telemetry controller with fake hosts and nodes, and a trial's recorder on a real store."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from typing import Any

from clusterbench.store import Store
from clusterbench.telemetry.recorder import TrialTelemetry
from clusterbench.telemetry.sampler import Row, Telemetry
from clusterbench.telemetry.sites import ProbeSite, RoleProbe, Watch
from clusterbench.trial.recorder import Recorder, TrialRecord
from clusterbench.workloads.parse import Sample


class FakeProc:
    def __init__(self, lines: list[dict[str, Any]], wall0: float = 0.0) -> None:
        self.stdout = io.BytesIO(b"".join(json.dumps(x).encode() + b"\n" for x in lines))
        self.stderr = io.BytesIO(b"")
        self.pid = 1
        self.killed = False

    def poll(self) -> int | None:
        return 0

    def wait(self, timeout: float | None = None) -> int:
        return 0

    def kill(self) -> None:
        self.killed = True


class FakeProbeHost:
    name = "fake"
    remote = False

    def __init__(self, lines: list[dict[str, Any]]) -> None:
        self.lines = lines
        self.argv: list[str] = []

    def popen(self, argv: list[str], env: Any = None, cwd: Any = None) -> FakeProc:
        self.argv = argv
        return FakeProc(self.lines)


class FakeNode:
    name = "n1"

    def __init__(self, readings: list[dict[str, float] | None]) -> None:
        self.readings = readings
        self.closed = False
        self.calls = 0

    def metrics(self) -> dict[str, float] | None:
        self.calls += 1
        return self.readings[min(self.calls - 1, len(self.readings) - 1)]

    def close_metrics(self) -> None:
        self.closed = True


def probe_lines(n: int, wall0: float = 1000.0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"hello": {"tck": 100, "ncpu": 2, "roles": {"n1": {}}}}]
    for i in range(n):
        out.append({"w": wall0 + i, "m": float(i), "self": i, "cpu": [50 * i, 200 * i],
                    "r": {"n1": {"pid": 5, "cpu": 40 * i, "quota": 0.5, "net": [0, 0, 0, 0]}}})  # fmt: skip
    return out


class Source:
    def __init__(self, site: ProbeSite, nodes: list[Any]) -> None:
        self.site = site
        self._nodes = nodes

    def probe_sites(self) -> list[ProbeSite]:
        return [self.site]

    def nodes(self) -> list[Any]:
        return self._nodes


def make_source(lines: int = 4) -> tuple[Source, FakeProbeHost, FakeNode]:
    host = FakeProbeHost(probe_lines(lines))
    site = ProbeSite("host", host, [RoleProbe(Watch("n1", 5, 1), "cb-te-n1", flip=True, link_limit_bps=10e6)])  # type: ignore[arg-type]
    node = FakeNode(
        [
            {"recv_queue": 2.0, "flow_control_paused_s": 0.0},
            {"recv_queue": 3.0, "flow_control_paused_s": 0.05},
        ]
    )
    return Source(site, [node]), host, node


def test_telemetry_streams_rates_to_the_sink_and_stops_everything() -> None:
    src, host, node = make_source()
    got: list[Row] = []
    lock = threading.Lock()

    def sink(rows: list[Row]) -> None:
        with lock:
            got.extend(rows)

    tel = Telemetry(src, sink, interval=0.05)
    tel.start()
    assert host.argv[:2] == ["python3", "-c"] and json.loads(host.argv[3])["roles"][0]["netdev"] == "cb-te-n1"
    threading.Event().wait(0.3)
    tel.stop()
    tel.stop()  # idempotent
    metrics = {(s, m) for _, s, m, _ in got}
    assert (
        ("n1", "cpu_util") in metrics
        and ("host", "host_cpu_busy") in metrics
        and ("n1", "recv_queue") in metrics
    )
    cpu = [v for _, s, m, v in got if (s, m) == ("n1", "cpu_util")]
    assert cpu == [0.8, 0.8, 0.8]  # 40 ticks/s = 0.4 CPUs of a 0.5 quota
    assert node.closed and node.calls >= 2
    assert tel.probe_cpu_s["host"] == 0.03
    assert tel.latest()[("n1", "recv_queue")] == 3.0
    assert tel.points == len(got) and tel.problems == []


def test_a_probe_that_cannot_start_is_a_problem_not_a_failure() -> None:
    src, host, _ = make_source()
    host.lines = []  # exits at once without a hello
    tel = Telemetry(src, lambda rows: None, interval=0.05)
    tel.start()
    threading.Event().wait(0.15)
    tel.stop()
    assert (
        len(tel.problems) == 1 and "probe exited at once" in tel.problems[0] and "python3" in tel.problems[0]
    )


class Client:
    def __init__(self) -> None:
        self.client = 0
        self.host = "local"
        self.flags: list[str] = []
        self.cpu = None
        self.clock_offset = None

    def warnings(self) -> list[str]:
        return []


class Result:
    def __init__(self, samples: list[Sample]) -> None:
        self.samples = samples
        self.clients = [Client()]
        self.summary = None


def sample(t: float, wall: float) -> Sample:
    return Sample(t=t, interval=1.0, threads=1, events=10, reads=0, writes=0, other=0, errors=0, reconnects=0,
                  percentile=95, lat_pct_ms=1.0, wall=wall)  # fmt: skip


def test_the_recorder_stores_moves_onto_the_samples_axis_and_decides(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "r.db")
    run = store.create_run("run")
    trial = store.add_trial(run, 1, "oltp_read_write", {})
    src, _, _ = make_source(lines=6)
    rec = TrialTelemetry(src, TrialRecord(Recorder(store), run, trial), warmup=0, total_time=5, interval=0.05)
    with rec:
        threading.Event().wait(0.3)
        assert rec.live_line().startswith("cpu n1 80%")
    # the clients started measuring at wall 1001.0: the probe's line of wall 1003 is t = 2
    verdict = rec.conclude(
        Result([sample(1.0, 1002.0), sample(2.0, 1003.0), sample(3.0, 1004.0), sample(4.0, 1005.0)])
    )
    rows = store.telemetry(trial, "cpu_util")
    assert [r["t"] for r in rows if r["source"] == "n1"] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert verdict.resource == "none" and "CPU of n1 at 80%" in verdict.summary
    assert (store.bottleneck(trial) or {})["short"] == "none (cpu n1 80%)"
    prov = store.provenance(run, trial)["telemetry"]
    assert prov["sites"] == ["host"] and prov["points"] > 0
    from clusterbench.store.export import run_data

    exported = run_data(store, run)["trials"][0]
    assert exported["bottleneck"]["resource"] == "none" and len(exported["telemetry"]) == prov["points"]


def test_without_a_cluster_there_is_no_probe_and_the_verdict_says_why(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "r.db")
    run = store.create_run("run")
    trial = store.add_trial(run, 1, "oltp_read_write", {})
    rec = TrialTelemetry(None, TrialRecord(Recorder(store), run, trial), total_time=5)
    with rec:
        assert rec.live_line() == ""
    v = rec.conclude(Result([sample(1.0, 1002.0)]))
    assert v.resource == "unknown" and "not a cluster clusterbench runs" in v.summary
    assert "telemetry" not in store.provenance(run, trial)
    record = TrialRecord(Recorder(store), run, trial)
    off = TrialTelemetry(make_source()[0], record, total_time=5, enabled=False)
    with off:
        pass
    assert off.conclude(Result([])).summary.startswith("telemetry was off")

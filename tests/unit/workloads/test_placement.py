"""Client placement, the common start, CPU readings and saturation flags."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from tests.unit.workloads.conftest import fake_script

from clusterbench.errors import WorkloadError
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.workloads.placement import (
    CpuReading,
    LocalClientHost,
    NetnsClientHost,
    assign_round_robin,
    parse_cpu_list,
    parse_cpu_probe,
    parse_start_line,
    probe_cpu,
    read_output,
    start_at_argv,
    start_lead,
)
from clusterbench.workloads.runner import SysbenchRunner
from clusterbench.workloads.saturation import FLAG_CPU, FLAG_HOST, FLAG_RATE, WARNING, client_flags, cpu_use
from clusterbench.workloads.sysbench import SysbenchOptions

DATA = Path(__file__).parent / "data"
EP = Endpoint(name="n1", addresses=(Address(host="198.18.0.11", port=3306),), user="sb", password="pw",
              tls_dir=None, auto_inc_off=True)  # fmt: skip

FAKE = """#!{py}
import os, sys
sys.stdout.write(open(os.environ["FAKE_OUT"]).read())
"""


class FakeServer:
    def __call__(self, **kw: Any) -> Any:
        class C:
            def close(self) -> None:
                pass

        return C()


def test_round_robin_and_lead() -> None:
    a, b = LocalClientHost("a"), NetnsClientHost("cb-x-c2")
    assert [h.name for h in assign_round_robin(5, [a, b])] == ["a", "cb-x-c2", "a", "cb-x-c2", "a"]
    assert b.wrap(["sysbench", "run"]) == ["ip", "netns", "exec", "cb-x-c2", "sysbench", "run"]
    with pytest.raises(WorkloadError, match="no client hosts"):
        assign_round_robin(2, [])
    assert start_lead([a], 1) == 0.0
    assert start_lead([a, b], 2) == 0.05
    assert start_lead([a, b], 10) == pytest.approx(0.2)

    class Remote(LocalClientHost):
        remote = True

    assert start_lead([Remote("r")], 4) == pytest.approx(2.6)


def test_start_script_waits_for_the_instant_then_execs() -> None:
    start = time.time_ns() + 400_000_000
    proc = LocalClientHost().popen(start_at_argv(["sh", "-c", "echo child $$"], start))
    out = read_output(proc, 10)
    assert out is not None
    first, second = out.splitlines()
    got = parse_start_line(first)
    assert got is not None
    pid, at = got
    assert second == f"child {pid}"  # exec kept the PID: it is the command's own
    assert pid == proc.pid
    assert 0 <= at - start < 200_000_000
    assert parse_start_line("CBJSON {}") is None and parse_start_line("CBSTART x 1") is None


def test_start_in_the_past_starts_at_once() -> None:
    proc = LocalClientHost().popen(start_at_argv(["true"], time.time_ns() - 10**9))
    t0 = time.monotonic()
    assert read_output(proc, 10) is not None
    assert time.monotonic() - t0 < 1.0


STAT = "4242 (sysbench) S 1 4242 4242 0 -1 4194560 1 0 0 0 350 50 0 0 20 0 9 0 123456 1 1 184467"
PROBE = f"""stat {STAT}
allowed 0-1
host cpu  1000 0 500 8000 500 0 0 0 0 0
cores 2
tck 100
wall 1700000000500000000
"""


def test_parse_cpu_probe() -> None:
    r = parse_cpu_probe(PROBE)
    assert r == CpuReading(wall=1700000000.5, proc_ticks=400, start_ticks=123456, allowed=2,
                           host_busy=1500, host_total=10000, cores=2, tck=100)  # fmt: skip
    gone = parse_cpu_probe(PROBE.replace(PROBE.splitlines()[0], "stat ").replace("allowed 0-1", "allowed "))
    assert gone is not None and gone.proc_ticks is None and gone.allowed is None
    assert parse_cpu_probe("garbage") is None
    assert parse_cpu_list("0-3,6") == 5 and parse_cpu_list("1") == 1 and parse_cpu_list("x") is None


def test_probe_cpu_reads_a_real_process() -> None:
    r = probe_cpu(LocalClientHost(), os.getpid())
    assert r is not None and r.proc_ticks is not None and r.proc_ticks > 0
    assert r.cores == os.cpu_count() and r.allowed == len(os.sched_getaffinity(0)) and r.tck == 100
    assert abs(r.wall - time.time()) < 5


def reading(wall: float, ticks: int | None, busy: int, total: int, allowed: int = 2) -> CpuReading:
    return CpuReading(wall=wall, proc_ticks=ticks, start_ticks=7 if ticks is not None else None,
                      allowed=allowed, host_busy=busy, host_total=total, cores=2, tck=100)  # fmt: skip


def test_cpu_use_and_flags() -> None:
    # 10 s, the process used 9.5 s of CPU on a 1-CPU affinity: 95 % of what it can use
    rs = [reading(0.0, 100, 0, 0, allowed=1), reading(5.0, 600, 500, 1000, allowed=1),
          reading(10.0, 1050, 1000, 2000, allowed=1)]  # fmt: skip
    cpu = cpu_use(rs, threads=8)
    assert cpu is not None
    assert cpu.proc_cores == pytest.approx(0.95) and cpu.usable == 1 and cpu.proc_frac == pytest.approx(0.95)
    assert cpu.host_busy == pytest.approx(0.5) and cpu.seconds == 10.0 and cpu.readings == 3
    assert client_flags(cpu, 0, 100.0) == [FLAG_CPU]
    # two threads on two CPUs, 1.0 CPU used: half of what it can use; the host is 95 % busy
    rs = [reading(0.0, 0, 0, 0), reading(10.0, 1000, 1900, 2000)]
    cpu = cpu_use(rs, threads=2)
    assert cpu is not None and cpu.proc_frac == pytest.approx(0.5)
    assert client_flags(cpu, 0, None, own_host=True) == [FLAG_HOST]
    # on a namespace of this machine the host is shared with the nodes: recorded, not flagged
    assert client_flags(cpu, 0, None) == []
    # one thread can use one CPU only
    cpu = cpu_use(rs, threads=1)
    assert cpu is not None and cpu.usable == 1 and FLAG_CPU in client_flags(cpu, 0, None)
    # a process that exited before the last reading: its CPU stops at its last reading
    rs = [reading(0.0, 0, 0, 0), reading(5.0, 250, 100, 1000), reading(10.0, None, 200, 2000)]
    cpu = cpu_use(rs, threads=2)
    assert cpu is not None and cpu.proc_cores == pytest.approx(0.5) and cpu.seconds == 10.0
    assert cpu_use(rs[:1], threads=2) is None


def test_rate_flag_below_95_percent_and_beyond_poisson_noise() -> None:
    # 100/s for 1000 s: sigma is 0.32/s, so 94.9 is far beyond chance
    assert client_flags(None, 100, 94.9, seconds=1000) == [FLAG_RATE]
    assert client_flags(None, 100, 95.0, seconds=1000) == []
    # 100/s for 5 s: sigma is 4.5/s; 94 is 1.3 sigma short, 80 is 4.5 sigma short
    assert client_flags(None, 100, 94.0, seconds=5) == []
    assert client_flags(None, 100, 80.0, seconds=5) == [FLAG_RATE]
    assert client_flags(None, 0, 1.0, seconds=5) == []
    assert client_flags(None, 100, None, queue_overflow=True) == [FLAG_RATE]
    assert client_flags(None, 0, None, queue_overflow=True) == []


@pytest.fixture
def fake_bin(tmp_path: Path) -> str:
    return fake_script(tmp_path, FAKE)


def test_runner_places_clients_round_robin_and_flags_saturation(
    fake_bin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OUT", str(DATA / "oltp_point_select.out"))
    probed: list[tuple[str, int]] = []
    clock = {"w": 0.0}

    def probe(host: Any, pid: int) -> CpuReading:
        probed.append((host.name, pid))
        clock["w"] += 5.0
        # the process on host "a" burns one full CPU of the one it may use; "b" idles
        ticks = int(clock["w"] * 100) if host.name == "a" else 1
        return reading(clock["w"], ticks, int(clock["w"] * 10), int(clock["w"] * 100), allowed=1)

    runner = SysbenchRunner(sysbench_bin=fake_bin, connect=FakeServer(), cpu_probe=probe, cpu_interval=0.01)
    opts = SysbenchOptions(test="oltp_point_select", threads=2, time=2, rate=100000)
    res = runner.run(opts, EP, clients=3, separate_schemas=True,
                     hosts=[LocalClientHost("a"), LocalClientHost("b")])  # fmt: skip
    assert [c.host for c in res.clients] == ["a", "b", "a"]
    assert [c.database for c in res.clients] == ["sbtest1", "sbtest2", "sbtest3"]
    assert all(c.pid is not None and c.started_ns is not None for c in res.clients)
    assert res.start_ns is not None and all(c.started_ns >= res.start_ns for c in res.clients)  # type: ignore[operator]
    assert res.launch_skew is not None and res.launch_skew < 0.5
    assert {h for h, _ in probed} == {"a", "b"}
    assert res.clients[0].flags == [FLAG_CPU, FLAG_RATE] and res.clients[1].flags == [FLAG_RATE]
    assert res.saturated
    warnings = res.saturation_warnings()
    assert warnings[0] == WARNING
    assert any(w.startswith("client 0 on a: sysbench used ") and "(100%)" in w for w in warnings)
    assert any(w.startswith("client 1 on b: reached ") and "of the 100000 asked with --rate" in w
               for w in warnings)  # fmt: skip
    placement = res.placement()
    assert [c["host"] for c in placement["clients"]] == ["a", "b", "a"]


def test_a_client_that_cannot_start_stops_the_others(fake_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_OUT", str(DATA / "oltp_point_select.out"))
    started: list[Any] = []

    class Good(LocalClientHost):
        def popen(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Any:
            p = super().popen(argv, env, cwd)
            started.append(p)
            return p

    class Broken(LocalClientHost):
        def popen(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Any:
            raise OSError("connection refused")

    runner = SysbenchRunner(sysbench_bin=fake_bin, connect=FakeServer())
    with pytest.raises(WorkloadError) as exc:
        runner.run(SysbenchOptions(test="oltp_point_select", time=2), EP, clients=2,
                   hosts=[Good("g"), Broken("far")])  # fmt: skip
    assert str(exc.value) == (
        "cannot start sysbench client 1 on far: connection refused; "
        "check that the client host is reachable and has sysbench"
    )
    assert len(started) == 1 and started[0].poll() is not None


def test_event_queue_overflow_is_a_rate_finding(
    fake_bin: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out = tmp_path / "overflow.out"
    out.write_text(
        "FATAL: The event queue is full. This means the worker threads are unable to keep up with "
        "the specified event generation rate\n"
    )
    monkeypatch.setenv("FAKE_OUT", str(out))
    runner = SysbenchRunner(sysbench_bin=fake_bin, connect=FakeServer(), cpu_interval=0)
    res = runner.run(SysbenchOptions(test="oltp_point_select", time=2, rate=1_000_000), EP, clients=2,
                     hosts=[LocalClientHost("a"), LocalClientHost("b")])  # fmt: skip
    assert not res.ok and [c.flags for c in res.clients] == [[FLAG_RATE], [FLAG_RATE]]
    assert res.failure() == (
        "sysbench oltp_point_select client 0 on a gave up: --rate 1000000 is more than it could serve "
        "(its event queue overflowed); ask for a lower --rate"
    )
    assert res.saturation_warnings()[1] == (
        "client 0 on a: sysbench's event queue overflowed: --rate 1000000 was far out of reach"
    )


def test_remote_client_hosts_get_the_report_hook_and_tls_files(tmp_path: Path) -> None:
    from clusterbench.workloads.placement import REMOTE_DIR, stage_command

    script = tmp_path / "cb_report.lua"
    script.write_text("-- hook")
    tls = tmp_path / "tls"
    tls.mkdir()
    for name in ("cacert.pem", "client-cert.pem", "client-key.pem"):
        (tls / name).write_text(name)

    class Remote(LocalClientHost):
        remote = True

        def __init__(self) -> None:
            super().__init__("far")
            self.files: dict[Path, tuple[str, int]] = {}

        def put_file(self, path: Path, content: str, *, mode: int = 0o644, owner: str | None = None) -> None:
            self.files[path] = (content, mode)

    argv = ["sysbench", str(script), "--threads=2", "run"]
    # a host on this machine's filesystem runs the command as it is
    assert stage_command(LocalClientHost(), argv, tls, script) == (argv, tls)
    far = Remote()
    got_argv, got_cwd = stage_command(far, argv, tls, script)
    assert got_argv == ["sysbench", str(REMOTE_DIR / "cb_report.lua"), "--threads=2", "run"]
    assert got_cwd == REMOTE_DIR / "tls"
    assert far.files == {
        REMOTE_DIR / "cb_report.lua": ("-- hook", 0o644),
        REMOTE_DIR / "tls" / "cacert.pem": ("cacert.pem", 0o644),
        REMOTE_DIR / "tls" / "client-cert.pem": ("client-cert.pem", 0o644),
        REMOTE_DIR / "tls" / "client-key.pem": ("client-key.pem", 0o600),
    }

    class Bare(LocalClientHost):
        remote = True

    with pytest.raises(
        WorkloadError, match="client host bare is a machine of its own but cannot receive files"
    ):
        stage_command(Bare("bare"), argv, None, script)


def test_clock_offset_of_a_machine_of_its_own(fake_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_OUT", str(DATA / "oltp_point_select.out"))

    class Far(LocalClientHost):
        remote = True

        def put_file(self, path: Path, content: str, *, mode: int = 0o644, owner: str | None = None) -> None:
            pass

    def probe(host: Any, pid: int) -> CpuReading:
        ahead = 100.0 if host.name == "far" else 0.0
        return reading(time.time() + ahead, 1, 0, 0)

    runner = SysbenchRunner(sysbench_bin=fake_bin, connect=FakeServer(), cpu_probe=probe, cpu_interval=0.01)
    res = runner.run(SysbenchOptions(test="oltp_point_select", time=2), EP, clients=2,
                     hosts=[LocalClientHost("near"), Far("far")])  # fmt: skip
    near, far = res.clients
    assert near.clock_offset is None  # one machine, one clock
    assert far.clock_offset == pytest.approx(100.0, abs=0.5)
    assert [c["clock_offset_s"] for c in res.placement()["clients"]] == [None, far.clock_offset]


def test_cpu_waited_for_counts_as_demand() -> None:
    # 1 thread on 1 CPU got 0.4 s of CPU per second and waited 0.55 s for it: it wanted 95 %
    a = CpuReading(wall=0.0, proc_ticks=0, start_ticks=7, allowed=1, host_busy=0, host_total=0, cores=2,
                   tck=100, run_ns=0, wait_ns=0)  # fmt: skip
    b = CpuReading(wall=10.0, proc_ticks=400, start_ticks=7, allowed=1, host_busy=900, host_total=1000,
                   cores=2, tck=100, run_ns=4 * 10**9, wait_ns=55 * 10**8)  # fmt: skip
    cpu = cpu_use([a, b], threads=4)
    assert cpu is not None and cpu.proc_frac == pytest.approx(0.4) and cpu.wait_cores == pytest.approx(0.55)
    assert cpu.demand_frac == pytest.approx(0.95)
    assert client_flags(cpu, 0, None) == [FLAG_CPU]
    from clusterbench.workloads.saturation import describe

    assert describe(FLAG_CPU, client=0, host="h", cpu=cpu, rate_asked=0, rate_achieved=None) == (
        "client 0 on h: sysbench used 0.40 and waited for 0.55 more of the 1 CPU(s) it can use (95%); "
        "its tps is a floor for the cluster's capacity"
    )
    r = parse_cpu_probe(PROBE + "sched 4000 5500\n")
    assert r is not None and (r.run_ns, r.wait_ns) == (4000, 5500)


def test_a_zombie_is_a_process_that_is_gone() -> None:
    r = parse_cpu_probe(PROBE.replace("(sysbench) S", "(sysbench) Z"))
    assert r is not None and r.proc_ticks is None and r.run_ns is None


def test_wait_skips_steps_where_a_thread_ended() -> None:
    def r(wall: float, ticks: int, run: int, wait: int) -> CpuReading:
        return CpuReading(wall=wall, proc_ticks=ticks, start_ticks=7, allowed=2, host_busy=0, host_total=1,
                          cores=2, tck=100, run_ns=run, wait_ns=wait)  # fmt: skip

    # 0-2 s: waited 0.5 s per second; 2-3 s: a thread ended and took its counts with it
    rs = [
        r(0.0, 0, 0, 0),
        r(1.0, 10, 10**8, 5 * 10**8),
        r(2.0, 20, 2 * 10**8, 10**9),
        r(3.0, 30, 10**8, 10**8),
    ]
    cpu = cpu_use(rs, threads=2)
    assert cpu is not None and cpu.wait_cores == pytest.approx(0.5) and cpu.proc_cores == pytest.approx(0.1)


def test_each_client_loads_its_own_target(fake_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_OUT", str(DATA / "oltp_point_select.out"))
    calls: list[dict[str, Any]] = []

    def connect(**kw: Any) -> Any:
        calls.append(kw)
        return FakeServer()()

    n1 = EP.model_copy(update={"name": "node:1"})
    n2 = EP.model_copy(update={"name": "node:2", "addresses": (Address(host="198.18.0.12", port=3306),)})
    runner = SysbenchRunner(sysbench_bin=fake_bin, connect=connect, cpu_interval=0)
    res = runner.run(SysbenchOptions(test="oltp_point_select", time=2), EP, clients=3, separate_schemas=True,
                     endpoints=[n1, n2])  # fmt: skip
    assert [c.target for c in res.clients] == ["node:1", "node:2", "node:1"]
    hosts = [next(a for a in c.command.argv if a.startswith("--mysql-host=")) for c in res.clients]
    assert hosts == ["--mysql-host=198.18.0.11", "--mysql-host=198.18.0.12", "--mysql-host=198.18.0.11"]
    # the preflight logs in where each client will, with its own schema
    assert sorted((c["host"], c["database"]) for c in calls) == [
        ("198.18.0.11", "sbtest1"), ("198.18.0.11", "sbtest3"), ("198.18.0.12", "sbtest2")]  # fmt: skip
    assert [c["target"] for c in res.placement()["clients"]] == ["node:1", "node:2", "node:1"]


class FakeRemote:
    """A client machine of its own: records the files it receives and the commands it runs."""

    remote = True
    name = "client1"

    def __init__(self, rc: int = 0) -> None:
        self.rc = rc
        self.files: dict[str, str] = {}
        self.ran: list[list[str]] = []

    def put_file(self, path: Path, content: str, *, mode: int = 0o644, owner: str | None = None) -> None:
        self.files[str(path)] = content

    def run(
        self, argv: list[str], *, input: str | None = None, timeout: float = 60.0, check: bool = True
    ) -> Any:
        from clusterbench.hosts.base import CommandResult

        self.ran.append(argv)
        return CommandResult(tuple(argv), self.rc, "", "cc: not found" if self.rc else "")

    def popen(self, argv: list[str], env: dict[str, str], cwd: Path | None = None) -> Any:
        raise AssertionError("not launched in this test")


def test_a_remote_client_gets_the_shim_built_there_and_preloaded_from_there(tmp_path: Path) -> None:
    from clusterbench.workloads.placement import REMOTE_DIR, stage
    from clusterbench.workloads.shim import shim_source

    script = tmp_path / "cb_report.lua"
    script.write_text("-- hook")
    host = FakeRemote()
    st = stage(host, None, script, shim=True)  # type: ignore[arg-type]
    (src,) = [p for p in host.files if p.endswith(".c")]
    assert host.files[src] == shim_source().read_text()
    assert st.shim is not None and st.shim.parent == REMOTE_DIR and st.shim.name == Path(src).stem + ".so"
    (cmd,) = host.ran
    assert cmd[:2] == ["sh", "-c"]
    assert f"-o {st.shim}.tmp {src}" in cmd[2] and f"mv {st.shim}.tmp {st.shim}" in cmd[2]
    env = st.environment({"LD_PRELOAD": "/var/lib/clusterbench/lib/sbfix.so", "X": "1"})
    assert env == {"LD_PRELOAD": str(st.shim), "X": "1"}


def test_without_a_compiler_there_the_run_goes_on_without_the_preload(tmp_path: Path) -> None:
    from clusterbench.workloads.placement import stage

    script = tmp_path / "cb_report.lua"
    script.write_text("-- hook")
    st = stage(FakeRemote(rc=127), None, script, shim=True)  # type: ignore[arg-type]
    assert st.shim is None
    assert st.environment({"LD_PRELOAD": "/here/sbfix.so", "X": "1"}) == {"X": "1"}

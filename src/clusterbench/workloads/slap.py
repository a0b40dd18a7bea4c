"""mysqlslap (Debian's `mariadb-slap`) as a workload: argv builder, output parser, runner.

mariadb-slap has no time limit and no per-second reports, so the runner starts it again and
again, one iteration per process, until the trial's time is used up: each process is one sample
(one "event" = one run of all its queries; its latency is mariadb-slap's own "seconds to run all
queries"). Concurrency is the threads setting (--concurrency); one client process at a time.

The password never goes on the command line: it is written to an option file (mode 0600, in the
secrets folder) that mariadb-slap reads through --defaults-extra-file, which must be its first
argument.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path

from clusterbench.errors import InputError, WorkloadError
from clusterbench.spec.endpoint import Endpoint
from clusterbench.workloads.histogram import DEFAULT_SCHEME, LatencyHistogram
from clusterbench.workloads.parse import Sample, Summary
from clusterbench.workloads.placement import ClientHost, LocalClientHost
from clusterbench.workloads.results import ClientRun, RunResult
from clusterbench.workloads.sysbench import SLAP_TEST, SysbenchCommand, SysbenchOptions, use_tls

log = logging.getLogger(__name__)

SLAP_BIN = "mariadb-slap"
SLAP_SCHEMA = "cbslap"  # auto-generated load: mariadb-slap creates and DROPS this schema each run
OPTION_FILE_PREFIX = "cb-sysbench-"  # the same as sysbench's: a killed clusterbench's files are found

_LINES = {
    "avg_s": re.compile(r"Average number of seconds to run all queries:\s*([0-9.]+)"),
    "min_s": re.compile(r"Minimum number of seconds to run all queries:\s*([0-9.]+)"),
    "max_s": re.compile(r"Maximum number of seconds to run all queries:\s*([0-9.]+)"),
    "clients": re.compile(r"Number of clients running queries:\s*([0-9]+)"),
    "queries_per_client": re.compile(r"Average number of queries per client:\s*([0-9]+)"),
}


@dataclass(frozen=True)
class SlapReport:
    """One mariadb-slap benchmark block (over its --iterations)."""

    avg_s: float
    min_s: float
    max_s: float
    clients: int
    queries_per_client: int

    @property
    def queries(self) -> int:
        return self.clients * self.queries_per_client


def parse_slap_output(lines: Iterable[str]) -> SlapReport:
    """The figures of mariadb-slap's "Benchmark" block; WorkloadError naming what is missing."""
    found: dict[str, str] = {}
    for line in lines:
        for key, rx in _LINES.items():
            m = rx.search(line)
            if m:
                found[key] = m.group(1)
    missing = [k for k in _LINES if k not in found]
    if missing:
        raise WorkloadError(
            f"mariadb-slap printed no {', '.join(missing)}; its output is not the Benchmark block "
            "clusterbench reads (mariadb-slap 10.11)"
        )
    return SlapReport(
        avg_s=float(found["avg_s"]),
        min_s=float(found["min_s"]),
        max_s=float(found["max_s"]),
        clients=int(found["clients"]),
        queries_per_client=int(found["queries_per_client"]),
    )


def check_slap(opts: SysbenchOptions, endpoint: Endpoint, clients: int = 1) -> None:
    """Refuse what mariadb-slap cannot do, in one line naming the setting."""
    if opts.test != SLAP_TEST:
        raise InputError(f"{opts.test} is not mysqlslap")
    if clients != 1:
        raise InputError(
            f"--clients {clients}: mysqlslap runs as one client process; set its concurrency with --threads"
        )
    if len(endpoint.addresses) != 1:
        raise InputError(
            f"endpoint {endpoint.name!r} has {len(endpoint.addresses)} addresses; mysqlslap connects to one: "
            "use the balancer or node:N as the target"
        )
    if opts.rate:
        raise InputError("--rate: mysqlslap has no rate limit; leave --rate at 0")
    if opts.slap_query is not None and ("\n" in opts.slap_query or "\r" in opts.slap_query):
        raise InputError("--slap-query: give the SQL on one line (separate statements with ';')")


def option_file_text(endpoint: Endpoint) -> str:
    """The [client] password for --defaults-extra-file ('' without one)."""
    pw = endpoint.password
    if not pw:
        return ""
    if "\n" in pw or "\r" in pw:
        raise InputError(
            f"the password of {endpoint.user} for {endpoint.name!r} holds a line break, which an option "
            "file cannot carry; use another password"
        )
    quoted = pw.replace("\\", "\\\\").replace('"', '\\"')
    return f'[client]\npassword="{quoted}"\n'


def build_slap_argv(
    opts: SysbenchOptions, endpoint: Endpoint, *, option_file: Path | None = None, slap_bin: str = SLAP_BIN
) -> list[str]:
    """One mariadb-slap run of one iteration (the runner repeats it until the time is up)."""
    addr = endpoint.addresses[0]
    argv = [slap_bin]
    if option_file is not None:
        argv.append(f"--defaults-extra-file={option_file}")  # must come first
    if endpoint.socket is not None:
        argv += [f"--socket={endpoint.socket}", "--protocol=SOCKET"]
    else:
        argv += [f"--host={addr.host}", f"--port={addr.port}", "--protocol=TCP"]
    argv += [
        f"--user={endpoint.user}",
        f"--concurrency={opts.threads}",
        "--iterations=1",
        f"--number-of-queries={opts.slap_queries * opts.threads}",
    ]
    if opts.slap_query is None:
        argv += [
            "--auto-generate-sql",
            f"--auto-generate-sql-load-type={opts.slap_load_type}",
            f"--engine={opts.slap_engine}",
            f"--create-schema={SLAP_SCHEMA}",
        ]
    else:
        # the user's SQL runs in the endpoint's schema, which mariadb-slap must leave alone
        argv += [f"--query={opts.slap_query}", f"--create-schema={endpoint.database}", "--no-drop"]
    if opts.compression:
        argv.append("--compress")
    if use_tls(opts, endpoint):
        if endpoint.tls_dir is None:
            raise InputError(
                f"endpoint {endpoint.name!r} asks for TLS but has no tls_dir; set tls_dir to the folder "
                "holding cacert.pem, client-cert.pem and client-key.pem"
            )
        d = endpoint.tls_dir
        argv += [
            "--ssl",
            f"--ssl-ca={d / 'cacert.pem'}",
            f"--ssl-cert={d / 'client-cert.pem'}",
            f"--ssl-key={d / 'client-key.pem'}",
        ]
    return argv


def run_histogram(seconds: Iterable[float]) -> LatencyHistogram:
    """Run times (s) in sysbench's bucket scheme, so merging and percentiles work as for sysbench."""
    s = DEFAULT_SCHEME
    counts: dict[int, int] = {}
    for sec in seconds:
        ms = max(sec * 1000.0, 0.001)
        i = min(max(math.floor((math.log(ms) - s.deduct) * s.mult + 0.5), 0), s.size - 1)
        counts[i] = counts.get(i, 0) + 1
    return LatencyHistogram(s, counts)


@dataclass
class SlapOutcome:
    returncode: int | None
    stdout: list[str]
    stderr: list[str]
    killed: bool = False


Spawn = Callable[[ClientHost, list[str], float], SlapOutcome]


def _spawn(host: ClientHost, argv: list[str], timeout: float) -> SlapOutcome:
    p = host.popen(argv)
    if not isinstance(p, subprocess.Popen):  # hosts of this machine start subprocesses
        p.kill()
        p.wait()
        raise WorkloadError(f"mysqlslap cannot run on {host.name}; pass --client-hosts local")
    try:
        out, err = p.communicate(timeout=max(timeout, 0.1))
        killed = False
    except subprocess.TimeoutExpired:
        p.kill()  # the process this call started, by its PID
        out, err = p.communicate()
        killed = True
    return SlapOutcome(
        p.wait(),
        (out or b"").decode("utf-8", "replace").splitlines(),
        (err or b"").decode("utf-8", "replace").splitlines(),
        killed,
    )


@dataclass
class _Loop:
    """What the runs of one trial gave: samples and reports of the measured ones, the last stderr,
    how the last run ended, when measuring began."""

    samples: list[Sample] = field(default_factory=list)
    reports: list[SlapReport] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    rc: int | None = 0
    killed: bool = False
    measured_from: float | None = None


def _summary(reports: Sequence[SlapReport], seconds: float, opts: SysbenchOptions) -> Summary:
    """A trial's summary from its measured runs: each run an event of its queries."""
    hist = run_histogram(r.avg_s for r in reports)
    return Summary(
        duration=seconds, threads=opts.threads, events=len(reports), reads=0, writes=0,
        other=sum(r.queries for r in reports), errors=0, reconnects=0,
        lat_min_ms=min(r.min_s for r in reports) * 1000.0,
        lat_avg_ms=sum(r.avg_s for r in reports) / len(reports) * 1000.0,
        lat_max_ms=max(r.max_s for r in reports) * 1000.0, percentile=float(opts.percentile),
        lat_pct_ms=hist.percentile(opts.percentile), hist=hist,
    )  # fmt: skip


@dataclass(eq=False)
class SlapRunner:
    """Runs mysqlslap for a trial's time; returns the same RunResult as the sysbench runner."""

    _: KW_ONLY
    slap_bin: str = SLAP_BIN
    spawn: Spawn = _spawn
    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    grace: float = 30.0
    secrets_dir: Path | None = None

    def _option_file(self, endpoint: Endpoint) -> Path | None:
        text = option_file_text(endpoint)
        if not text:
            return None
        prefix = f"{OPTION_FILE_PREFIX}{os.getpid()}-"
        fd, name = tempfile.mkstemp(prefix=prefix, suffix=".cnf", dir=self.secrets_dir)
        with os.fdopen(fd, "w") as f:  # mkstemp: mode 0600
            f.write(text)
        return Path(name)

    def _runs(
        self,
        opts: SysbenchOptions,
        host: ClientHost,
        argv: list[str],
        shown: list[str],
        on_sample: Callable[[Sample], None] | None,
    ) -> _Loop:
        """mariadb-slap again and again until the trial's time is up: a sample per measured run
        (warm-up runs are not kept); the first failed run ends it."""
        out = _Loop()
        start = self.monotonic()
        deadline = start + opts.total_time
        while (now := self.monotonic()) < deadline:
            if out.measured_from is None and now - start >= opts.warmup:
                out.measured_from = now
            log.info("running on %s: %s", host.name, shlex.join(shown))
            t0 = self.monotonic()
            res = self.spawn(host, argv, deadline + self.grace - t0)
            t1 = self.monotonic()
            out.stderr = (out.stderr + res.stderr)[-40:]
            if res.killed or res.returncode != 0:
                out.rc, out.killed = res.returncode, res.killed
                break
            try:
                rep = parse_slap_output(res.stdout)
            except WorkloadError as exc:
                # it exited 0 without its Benchmark block: what it said is the reason
                said = [ln for ln in res.stderr + res.stdout if ln.strip()][-3:]
                out.stderr = (out.stderr + [str(exc), *said])[-40:]
                out.rc = 1
                break
            if out.measured_from is None:
                continue  # a warm-up run
            out.reports.append(rep)
            sample = Sample(
                t=round(t1 - start, 3), interval=t1 - t0, threads=rep.clients, events=1, reads=0,
                writes=0, other=rep.queries, errors=0, reconnects=0, percentile=float(opts.percentile),
                lat_pct_ms=rep.avg_s * 1000.0, client=0, hist=run_histogram([rep.avg_s]), wall=self.wall(),
            )  # fmt: skip
            out.samples.append(sample)
            if on_sample is not None:
                on_sample(sample)
        return out

    def run(
        self,
        opts: SysbenchOptions,
        endpoint: Endpoint,
        *,
        clients: int = 1,
        on_sample: Callable[[Sample], None] | None = None,
        hosts: Sequence[ClientHost] | None = None,
    ) -> RunResult:
        check_slap(opts, endpoint, clients)
        host: ClientHost = hosts[0] if hosts else LocalClientHost()
        if getattr(host, "remote", False):
            raise InputError(
                f"mysqlslap runs on this machine, not on the client machine {host.name}; "
                "pass --client-hosts local"
            )
        option_file = self._option_file(endpoint)
        argv = build_slap_argv(opts, endpoint, option_file=option_file, slap_bin=self.slap_bin)
        shown = build_slap_argv(opts, endpoint, slap_bin=self.slap_bin)
        record = ClientRun(client=0, database=endpoint.database, command=SysbenchCommand(tuple(shown)),
                           host=host.name, target=endpoint.name)  # fmt: skip
        try:
            loop = self._runs(opts, host, argv, shown, on_sample)
        finally:
            if option_file is not None:
                option_file.unlink(missing_ok=True)
        samples, reports, stderr, rc, killed = loop.samples, loop.reports, loop.stderr, loop.rc, loop.killed
        summary = None
        if reports and rc == 0 and loop.measured_from is not None:
            summary = _summary(reports, self.monotonic() - loop.measured_from, opts)
        record.returncode = rc
        record.samples = samples
        record.summary = summary
        record.stderr_tail = stderr
        record.killed = killed
        return RunResult(
            test=opts.test, clients=[record], samples=samples, summary=summary,
            exit_code=rc if rc is not None else -9, stderr_tail=stderr, killed=killed,
        )  # fmt: skip

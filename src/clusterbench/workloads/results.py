"""What a load run gives back: each client's output, samples and summary, where it ran and how
busy its host was, and the run as a whole (ok or why not). Pure data, shared by the sysbench and
mysqlslap runners and everything that stores or checks a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clusterbench.workloads.parse import Sample, Summary
from clusterbench.workloads.placement import CpuReading
from clusterbench.workloads.saturation import WARNING, ClientCpu, describe, num
from clusterbench.workloads.sysbench import HTTP_TESTS, SLAP_TEST, SysbenchCommand
from clusterbench.workloads.vegeta import HttpDetails

# sysbench 1.0.20 aborts with this when --rate generates events faster than its threads finish them
QUEUE_FULL = "The event queue is full"


@dataclass
class CommandOutput:
    argv: tuple[str, ...]
    returncode: int | None
    stdout: list[str]
    stderr: list[str]
    killed: bool = False


@dataclass
class ClientRun:
    client: int
    database: str
    command: SysbenchCommand
    returncode: int | None = None
    samples: list[Sample] = field(default_factory=list)
    warmup_samples: list[Sample] = field(default_factory=list)
    summary: Summary | None = None
    checkpoint_extra: dict[str, Any] | None = None  # the test's own counters when the warm-up ended
    stderr_tail: list[str] = field(default_factory=list)
    other_tail: list[str] = field(default_factory=list)
    killed: bool = False
    host: str = "local"
    target: str = ""  # the endpoint it loads (its name: balancer, node:2, ...)
    pid: int | None = None  # sysbench's PID on its host (from the start line)
    started_ns: int | None = None  # when it exec'd sysbench, epoch ns on its host's clock
    cpu_readings: list[CpuReading] = field(default_factory=list)
    cpu: ClientCpu | None = None
    rate_asked: float = 0.0
    own_host: bool = False  # the client host is a machine of its own (not this one's namespaces)
    clock_offset: float | None = None  # its host's clock minus ours (s), measured on a machine of its own
    flags: list[str] = field(default_factory=list)

    @property
    def queue_overflow(self) -> bool:
        """sysbench gave up because the --rate event queue was full (it cannot keep up)."""
        return any(QUEUE_FULL in ln for ln in self.other_tail + self.stderr_tail)

    @property
    def rate_achieved(self) -> float | None:
        """Events per second over the measured time."""
        if self.summary is not None:
            return self.summary.tps
        if self.samples:
            return sum(s.events for s in self.samples) / sum(s.interval for s in self.samples)
        return None

    def warnings(self) -> list[str]:
        return [
            describe(f, client=self.client, host=self.host, cpu=self.cpu, rate_asked=self.rate_asked,
                     rate_achieved=self.rate_achieved)
            for f in self.flags
        ]  # fmt: skip


@dataclass
class RunResult:
    test: str
    clients: list[ClientRun]
    samples: list[Sample]
    summary: Summary | None
    exit_code: int
    stderr_tail: list[str]
    killed: bool
    start_ns: int | None = None  # the common start every client waited for
    start_skew: float | None = None  # s between the first and last client's measurement clock start
    launch_skew: float | None = None  # s between the first and last exec of sysbench
    # until steady (warmup_until = "steady"): the seconds found to be warm-up; None: the fixed warm-up
    warmup_cut: float | None = None
    # an HTTP test's own figures: per second by status code, totals, acknowledged writes
    http: HttpDetails | None = None

    @property
    def saturated(self) -> bool:
        return any(c.flags for c in self.clients)

    def saturation_warnings(self) -> list[str]:
        """Empty when no client was a bottleneck; else WARNING first, then one line per finding."""
        lines = [w for c in self.clients for w in c.warnings()]
        return [WARNING, *lines] if lines else []

    def placement(self) -> dict[str, Any]:
        """Where each client ran and when it started (and, until steady, the seconds found to be
        warm-up): for the trial's provenance."""
        steady = {} if self.warmup_cut is None else {"steady_warmup_s": self.warmup_cut}
        return steady | {
            "start_ns": self.start_ns,
            "start_skew_s": self.start_skew,
            "launch_skew_s": self.launch_skew,
            "clients": [
                {"client": c.client, "host": c.host, "target": c.target, "database": c.database, "pid": c.pid,
                 "started_ns": c.started_ns, "clock_offset_s": c.clock_offset}
                for c in self.clients
            ],
        }  # fmt: skip

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.summary is not None and not self.killed

    def failure(self) -> str | None:
        """One line saying why the run is not ok, or None."""
        if self.ok:
            return None
        if self.test in HTTP_TESTS:
            return self._http_failure()
        if self.killed:
            return f"sysbench {self.test} overran its time limit and was killed"
        overflow = next((c for c in self.clients if c.queue_overflow), None)
        if overflow is not None:
            return (
                f"sysbench {self.test} client {overflow.client} on {overflow.host} gave up: --rate "
                f"{num(overflow.rate_asked)} is more than it could serve (its event queue overflowed); "
                "ask for a lower --rate"
            )
        fatal = next((ln for c in self.clients for ln in c.other_tail + c.stderr_tail if "FATAL" in ln), None)
        if fatal:
            return f"sysbench {self.test} failed: {fatal.strip()}"
        if self.test == SLAP_TEST:
            last = self.stderr_tail[-1].strip() if self.stderr_tail else f"exit code {self.exit_code}"
            if "Deadlock found" in last:
                # mariadb-slap gives up on the first 1213; through a balancer over several writable
                # Galera nodes its concurrent writes conflict at certification
                last += " (mariadb-slap does not retry conflicts: use --target node:N or a read load type)"
            return f"mysqlslap failed: {last}"
        if self.exit_code == 139 or self.exit_code == -11:
            return f"sysbench {self.test} crashed (SIGSEGV); is the reconnect shim loaded?"
        said = next((ln.strip() for ln in reversed(self.stderr_tail) if ln.strip()), "")
        code = self.exit_code
        how = f"was killed by signal {-code}" if code < 0 else f"exited with {code}"
        return f"sysbench {self.test} {how} and no summary" + (f"; it said: {said}" if said else "")

    def _http_failure(self) -> str:
        if self.killed:
            return f"vegeta ({self.test}) overran its time limit and was killed"
        said = next((ln.strip() for ln in reversed(self.stderr_tail) if ln.strip()), "")
        if self.exit_code != 0:
            return f"vegeta ({self.test}) exited with {self.exit_code}" + (f": {said}" if said else "")
        return f"vegeta ({self.test}) reported no request" + (f": {said}" if said else "")

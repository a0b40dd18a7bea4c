"""One measured sysbench run from several client processes: their commands staged on their
hosts, launched for one common start instant, their output read line by line into samples, and
the run put together from what each client reported (SysbenchRunner.run drives it)."""

from __future__ import annotations

import logging
import shlex
import statistics
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

from clusterbench.errors import WorkloadError
from clusterbench.spec.endpoint import Endpoint
from clusterbench.workloads.clients import CpuSampler, OptionFiles, Process
from clusterbench.workloads.merge import start_skew
from clusterbench.workloads.parse import OutputParser, Sample, Summary, is_warmup, merge_summaries
from clusterbench.workloads.placement import ClientHost, Staged, parse_start_line, stage, start_at_argv
from clusterbench.workloads.results import ClientRun, RunResult
from clusterbench.workloads.saturation import client_flags, cpu_use
from clusterbench.workloads.steady import cut_summary, steady_cut
from clusterbench.workloads.sysbench import SysbenchCommand, SysbenchOptions, report_script

log = logging.getLogger(__name__)

STDERR_TAIL = 40
OTHER_TAIL = 40


class MeasuredRun:
    """The clients of one run: client i runs commands[i] on placed[i] in databases[i] of targets[i]."""

    def __init__(
        self,
        opts: SysbenchOptions,
        placed: Sequence[ClientHost],
        commands: Sequence[SysbenchCommand],
        databases: Sequence[str],
        targets: Sequence[Endpoint],
        on_sample: Callable[[Sample], None] | None,
        sampler: CpuSampler,
    ) -> None:
        self.opts = opts
        self.placed = list(placed)
        self.on_sample = on_sample
        self.sampler = sampler
        self.runs = [
            ClientRun(client=i, database=databases[i], command=cmd, host=placed[i].name,
                      target=targets[i].name, rate_asked=float(opts.rate),
                      own_host=bool(getattr(placed[i], "remote", False)))
            for i, cmd in enumerate(commands)
        ]  # fmt: skip
        # until steady: sysbench runs without a checkpoint, every report is parsed as measured and
        # the warm-up's reports wait here until the run says where its steady state began
        self.steady = opts.warmup_until == "steady" and opts.warmup > 0
        parse_warmup = 0 if self.steady else opts.warmup
        self.parsers = [
            OutputParser(client=i, warmup=parse_warmup, threads=opts.threads) for i in range(len(commands))
        ]
        self.held: list[list[Sample]] = [[] for _ in commands]
        self.cut = 0
        self.cut_summaries: list[Summary | None] = []  # each client's summary less the cut
        self.stderr_tails: list[deque[str]] = [deque(maxlen=STDERR_TAIL) for _ in commands]
        self.other_tails: list[deque[str]] = [deque(maxlen=OTHER_TAIL) for _ in commands]
        self.per_host: dict[int, Staged] = {}

    # ---- output, line by line (in the pump's thread) -------------------------------------------

    def on_out(self, i: int, line: str) -> None:
        started = parse_start_line(line)
        if started is not None and self.runs[i].pid is None:
            self.runs[i].pid, self.runs[i].started_ns = started
            self.sampler.watch(i, started[0])
            return
        samples = self.parsers[i].feed(line)
        if not line.startswith("CBJSON "):
            self.other_tails[i].append(line.rstrip("\n"))
        if self.steady:
            held = [s for s in samples if is_warmup(s.t, self.opts.warmup, s.interval)]
            self.held[i] += held
            samples = samples[len(held):]
        self._emit(samples)

    def _emit(self, samples: Sequence[Sample]) -> None:
        if self.on_sample is not None:
            for s in samples:
                self.on_sample(s)

    def on_err(self, i: int, line: str) -> None:
        self.stderr_tails[i].append(line.rstrip("\n"))

    # ---- start -------------------------------------------------------------------------------

    def stage(self, files: OptionFiles) -> list[tuple[list[str], Path | None]]:
        """Files go to client machines first (once per host), so the start lead is all launch
        time; the password goes to an option file (mode 0600) on that host, never on the command
        line."""
        script = report_script()
        staged: list[tuple[list[str], Path | None]] = []
        for r, host in zip(self.runs, self.placed, strict=True):
            if id(host) not in self.per_host:
                self.per_host[id(host)] = stage(
                    host, r.command.cwd, script, shim="LD_PRELOAD" in r.command.env
                )
            cmd = files.apply(r.command, host)
            staged.append(self.per_host[id(host)].apply(cmd.argv, r.command.cwd, script))
        return staged

    def launch(self, staged: Sequence[tuple[list[str], Path | None]], start_ns: int) -> list[Process]:
        """Every client, each waiting for `start_ns` before it execs sysbench; on a failure the
        ones already started are stopped and one line names the client host."""
        procs: list[Process] = []
        try:
            for r, host, (argv, cwd) in zip(self.runs, self.placed, staged, strict=True):
                env_note = " ".join(f"{k}={v}" for k, v in sorted(r.command.env.items()))
                log.info("running on %s at %d: %s %s", host.name, start_ns, env_note,
                         shlex.join(r.command.masked_argv()))  # fmt: skip
                env = self.per_host[id(host)].environment(dict(r.command.env))
                procs.append(host.popen(start_at_argv(argv, start_ns), env=env, cwd=cwd))
        except BaseException as exc:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                p.wait()
                for stream in (p.stdout, p.stderr):
                    if stream is not None:
                        stream.close()
            if isinstance(exc, Exception) and not isinstance(exc, WorkloadError):
                raise WorkloadError(
                    f"cannot start sysbench client {len(procs)} on {self.placed[len(procs)].name}: {exc}; "
                    "check that the client host is reachable and has sysbench"
                ) from exc
            raise
        return procs

    def started(self, procs: Sequence[Process]) -> list[tuple[str, bool, Process]]:
        return [
            (h.name, bool(getattr(h, "remote", False)), p) for h, p in zip(self.placed, procs, strict=True)
        ]

    # ---- the result --------------------------------------------------------------------------

    def _steady_state(self) -> None:
        """Until steady: the leading intervals the MSER rule cuts become warm-up (for every client
        alike), the others are measured and go out now, before the tails. Without the latency
        histograms that make the cut exact, nothing is cut (and the log says so)."""
        tails = [p.finish() for p in self.parsers]
        reports = [p.samples[: len(p.samples) - len(t)] for p, t in zip(self.parsers, tails, strict=True)]
        cut = steady_cut(reports, self.opts.warmup, self.opts.rate > 0)
        whole = [p.summary() for p in self.parsers]
        summaries = [cut_summary(w, p.samples[:cut]) if w is not None else None
                     for p, w in zip(self.parsers, whole, strict=True)]  # fmt: skip
        missing = next((i for i, s in enumerate(summaries) if s is None), None)
        if cut and missing is not None:
            why = "no summary" if whole[missing] is None else "no latency histogram to cut it with"
            log.warning("client %d has %s: the warm-up's %d interval(s) stay in the measurement",
                        missing, why, cut)  # fmt: skip
            cut = 0
        self.cut = cut
        for i, p in enumerate(self.parsers):
            self._emit(self.held[i][cut:])
            self._emit(tails[i])
            if cut:
                p.warmup_samples, p.samples = p.samples[:cut], p.samples[cut:]
        self.cut_summaries = summaries

    def warmup_cut(self) -> float:
        """Seconds of the run that were warm-up after all (until steady)."""
        ends = [p.warmup_samples[-1].t for p in self.parsers if p.warmup_samples]
        return max(ends, default=0.0)

    def _finish_client(self, i: int, rc: int | None, killed: bool) -> None:
        r, opts = self.runs[i], self.opts
        # the tail after sysbench's last report (and reports held for a checkpoint that never came)
        self._emit(self.parsers[i].finish())
        parsed = self.parsers[i].result()
        r.returncode, r.killed = rc, killed
        r.samples, r.warmup_samples = parsed.samples, parsed.warmup_samples
        r.summary = self.cut_summaries[i] if self.cut else parsed.summary
        r.checkpoint_extra = parsed.checkpoint_extra
        r.stderr_tail, r.other_tail = list(self.stderr_tails[i]), list(self.other_tails[i])
        r.cpu_readings = self.sampler.readings[i]
        if r.own_host and self.sampler.offsets[i]:
            r.clock_offset = statistics.median(self.sampler.offsets[i])
        r.cpu = cpu_use(r.cpu_readings, opts.threads)
        seconds = r.summary.duration if r.summary is not None else sum(s.interval for s in r.samples)
        r.flags = client_flags(r.cpu, r.rate_asked, r.rate_achieved, seconds=seconds,
                               own_host=r.own_host, queue_overflow=r.queue_overflow)  # fmt: skip

    def result(self, rcs: Sequence[int | None], killed: Sequence[bool], start_ns: int) -> RunResult:
        runs = self.runs
        if self.steady:
            self._steady_state()
        for i in range(len(runs)):
            self._finish_client(i, rcs[i], killed[i])
        summaries = [r.summary for r in runs if r.summary is not None]
        summary = merge_summaries(summaries) if len(summaries) == len(runs) else None
        exit_code: int = next((rc for rc in rcs if rc is not None and rc != 0), 0)
        if any(rc is None for rc in rcs) and exit_code == 0:
            exit_code = -9
        all_samples = [s for r in runs for s in r.samples]
        # each exec time is on its own host's clock: put it on ours
        launches = [r.started_ns - (r.clock_offset or 0.0) * 1e9 for r in runs if r.started_ns is not None]
        return RunResult(
            test=self.opts.test,
            clients=runs,
            samples=all_samples,
            summary=summary,
            exit_code=exit_code,
            stderr_tail=[ln for r in runs for ln in r.stderr_tail][-STDERR_TAIL:],
            killed=any(killed),
            start_ns=start_ns,
            start_skew=start_skew(all_samples, {r.client: r.clock_offset or 0.0 for r in runs}),
            launch_skew=(max(launches) - min(launches)) / 1e9 if len(launches) > 1 else None,
            warmup_cut=self.warmup_cut() if self.steady else None,
        )

"""The live view of a run or a drill: a bar per trial that follows the wall clock, with the last
second's numbers (clients of one second added up), or a line per sample without a terminal."""

from __future__ import annotations

from typing import Any, Self

from rich.progress import BarColumn, Progress, ProgressColumn, Task, TextColumn
from rich.progress_bar import ProgressBar
from rich.text import Text

from clusterbench.analysis.report import SATURATION_WARNING
from clusterbench.checkers.verdict import Verdict
from clusterbench.cli import console
from clusterbench.runner import BenchListener
from clusterbench.telemetry.verdict import Bottleneck
from clusterbench.workloads import RunResult, Sample, SysbenchOptions
from clusterbench.workloads.parse import combine_samples


class _ElapsedBar(BarColumn):
    """A bar that follows the wall clock, so it moves during warm-up and between samples too."""

    def render(self, task: Task) -> ProgressBar:
        total = task.total or 1.0
        done = total if task.finished else min(task.elapsed or 0.0, total)
        return ProgressBar(
            total=total, completed=done, width=self.bar_width, pulse=False, animation_time=task.get_time()
        )


class _Seconds(ProgressColumn):
    def render(self, task: Task) -> Text:
        total = int(task.total or 0)
        done = total if task.finished else min(int(task.elapsed or 0), total)
        return Text(f"{done:>4}/{total} s")


def _fmt(v: float | None, spec: str = ".2f") -> str:
    return "—" if v is None else format(v, spec)


def combined(pending: dict[int, list[Sample]], clients: int, sample: Sample) -> Sample | None:
    """The clients' samples of second round(sample.t) as one, once all `clients` have reported
    it (kept in `pending` until then); None before that."""
    k = round(sample.t)
    group = pending.setdefault(k, [])
    group.append(sample)
    if len(group) < clients:
        return None
    del pending[k]
    return combine_samples(group)[0] if clients > 1 else sample


def sample_line(s: Sample) -> str:
    """One sample the way the live view shows it: tps, p95, errors, reconnects."""
    line = f"tps {s.tps:>9.2f}  p95 {_fmt(s.pct(95)):>8} ms  err/s {s.errors / (s.interval or 1):.2f}"
    if s.reconnects:
        line += f"  reconn {s.reconnects}"
    return line


class ProgressView:
    """What the run's and the experiment's live views share: a rich progress display on a terminal
    (its columns are the view's), samples waiting for their second, the run, the latest telemetry
    line and bottleneck."""

    def __init__(self, clients: int) -> None:
        self.clients = clients
        self.tty = console.is_tty()
        self.progress: Progress | None = None
        self.task: Any = None
        self.pending: dict[int, list[Sample]] = {}
        self.shown: dict[int, int] = {}  # trial -> the latest second shown
        self.run_id: int | None = None
        self.servers = ""  # the latest telemetry line
        self.neck: Bottleneck | None = None

    def columns(self) -> list[ProgressColumn]:
        raise NotImplementedError

    def second(self, trial: int, sample: Sample) -> Sample | None:
        """The second `sample` completes, all clients together, to show now; None while it waits
        for the other clients, and for a second older than one shown: until steady, a warm-up
        second kept in the measurement arrives after the others (stored, not shown late)."""
        t = round(sample.t)
        if t < self.shown.get(trial, 0):
            return None
        s = combined(self.pending, self.clients, sample)
        if s is not None:
            self.shown[trial] = t
        return s

    def __enter__(self) -> Self:
        if self.tty:
            self.progress = Progress(*self.columns(), console=console.out, refresh_per_second=4)
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()


class LiveView(ProgressView, BenchListener):
    """Progress bar per trial (elapsed / total seconds) with the current second's numbers."""

    def __init__(self, *, clients: int, per_sample_lines: bool) -> None:
        super().__init__(clients)
        self.per_sample_lines = per_sample_lines
        self.last = ""  # the latest sample's line

    def columns(self) -> list[ProgressColumn]:
        return [
            TextColumn("{task.description}"),
            _ElapsedBar(bar_width=30),
            _Seconds(),
            TextColumn("{task.fields[stats]}"),
        ]

    def run_created(self, run_id: int) -> None:
        self.run_id = run_id

    def phase(self, message: str) -> None:
        if self.progress is not None:
            self.progress.console.print(f"  {message}", soft_wrap=True)
        else:
            console.step(message)

    def trial_started(self, seq: int, test: str, options: SysbenchOptions) -> None:
        self.pending = {}
        self.servers = self.last = ""
        self.neck = None
        label = f"{seq:>2} {test:<22}"
        if self.progress is not None:
            self.task = self.progress.add_task(label, total=options.total_time, stats="")
        elif not self.per_sample_lines:
            return
        else:
            warm = f" after {options.warmup_words()}" if options.warmup else ""
            console.step(f"{test}: {options.threads} threads, {options.time} s{warm}")

    def sample(self, seq: int, sample: Sample) -> None:
        s = self.second(seq, sample)
        if s is None:
            return
        t = round(sample.t)
        self.last = sample_line(s)
        if self.progress is not None:
            self._show()
        elif self.per_sample_lines:
            servers = f"  | {self.servers}" if self.servers else ""
            console.out.print(f"  [{t:>4} s] {self.last}{servers}", markup=False)

    def _show(self) -> None:
        if self.progress is not None:
            servers = f"\n[dim]servers:[/] {console.escape(self.servers)}" if self.servers else ""
            self.progress.update(self.task, stats=self.last + servers)

    def telemetry(self, seq: int, line: str) -> None:
        """The servers' latest figures: a second line under the bar (or after the sample's line)."""
        self.servers = line

    def bottleneck(self, seq: int, verdict: Bottleneck) -> None:
        self.neck = verdict

    def verdict(self, v: Verdict) -> None:
        """A run's verdicts (the web tier's acknowledged writes, ...) under its trial's line."""
        self.note(f"verdict {v.checker}: {v.result} {v.summary}")

    def note(self, line: str) -> None:
        msg = f"    {console.escape(line)}"
        if self.progress is not None:
            self.progress.console.print(msg, soft_wrap=True)
        else:
            console.out.print(msg, soft_wrap=True)

    def trial_finished(self, seq: int, test: str, result: RunResult, status: str) -> None:
        s = result.summary
        stats = f"tps {s.tps:>9.2f}  p95 {_fmt(s.pct(95)):>8} ms" if s is not None else ""
        if status != "completed":  # markup of our own around text that is not (a FATAL line)
            stats = f"[red]{status}[/]: {console.escape(result.failure() or '')}"
        if self.progress is not None:
            self.progress.update(self.task, stats=stats)
            self.progress.stop_task(self.task)
            task = self.progress.tasks[-1]
            task.finished_time = task.elapsed
            self.progress.update(self.task, completed=task.total)
        elif not self.per_sample_lines:
            # console.step would escape the [red] above and print it literally
            console.out.print(f"  {seq:>2} {console.escape(test):<22} {stats}", soft_wrap=True)
        if self.neck is not None:
            msg = f"    bottleneck: {console.escape(self.neck.summary)}"
            if self.progress is not None:
                self.progress.console.print(msg, soft_wrap=True)
            else:
                console.out.print(msg, soft_wrap=True)
        for line in result.saturation_warnings():
            msg = f"  [yellow]{line}[/]" if line == SATURATION_WARNING else f"    {line}"
            if self.progress is not None:
                self.progress.console.print(msg, soft_wrap=True)
            else:
                console.out.print(msg, soft_wrap=True)

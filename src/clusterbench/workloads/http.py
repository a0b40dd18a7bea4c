"""HTTP load on the web tier: vegeta, open loop at a fixed rate, from one or several client hosts.

Each client runs `vegeta attack` at its share of the rate for warm-up + duration seconds against
one page of clusterbench's web application (through the front balancer), piped into
`vegeta encode -to json`: one line per request as it completes, read here as it arrives
(vegeta.VegetaStream) into per-second samples, exact totals and the acknowledged writes. All
clients wait for one common start instant (placement.start_at_argv), like sysbench clients.

vegeta keeps sending on schedule however slow the answers are (it adds workers; the default here
sets no cap), so a slow server shows as latency and errors, not as fewer requests: the load is
free of coordinated omission unless `http_max_workers` caps the workers.
"""

from __future__ import annotations

import logging
import secrets
import shlex
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterbench.components.web.schema import create_statements, drop_statements, item_inserts
from clusterbench.errors import InputError, PreflightError, WorkloadError
from clusterbench.workloads.clients import ClientTracker, Process, pump, track, untrack
from clusterbench.workloads.merge import start_skew
from clusterbench.workloads.parse import Sample
from clusterbench.workloads.placement import (
    ClientHost,
    LocalClientHost,
    assign_round_robin,
    parse_start_line,
    start_at_argv,
    start_lead,
)
from clusterbench.workloads.results import ClientRun, RunResult
from clusterbench.workloads.sysbench import HTTP_TESTS, SysbenchCommand, SysbenchOptions, http_page
from clusterbench.workloads.vegeta import (
    HttpDetails,
    VegetaStream,
    combine_seconds,
    merge_tallies,
    tally_summary,
)

log = logging.getLogger(__name__)

VEGETA_MODULE = "github.com/tsenart/vegeta/v12"
VEGETA_VERSION = "v12.13.0"
# where scripts/build-tools.sh (build_vegeta) installs it, with the version it installed beside it
VEGETA_BIN = Path("/var/lib/clusterbench/bin/vegeta")
# Bytes of each response body vegeta keeps: the application's answers are one short JSON line
# (a write's carries its id); more would only grow the results.
MAX_BODY = 1024
STDERR_TAIL = 40
# sh: feed the one target to `vegeta attack` (the options follow as "$@"), say how it exited on
# stderr, and turn its results into JSON lines as they come.
PIPELINE = (
    'bin=$1; target=$2; shift 2; '
    '{ printf "%s\\n" "$target" | "$bin" attack "$@"; echo "CBVEGETA attack-exit $?" >&2; } '
    '| "$bin" encode -to json'
)
EXIT_MARK = "CBVEGETA attack-exit "


def find_vegeta(path: Path | None = None) -> str:
    """vegeta's path: where `make setup` builds it, else the PATH; PreflightError (one line with
    the next step) when it is nowhere, or when the build script recorded another version."""
    path = path or VEGETA_BIN
    if path.exists():
        version_file = path.with_name(path.name + ".version")
        built = version_file.read_text().strip() if version_file.exists() else VEGETA_VERSION
        if built != VEGETA_VERSION:
            raise PreflightError(
                f"{path} is vegeta {built}, not {VEGETA_VERSION}; "
                "run `bash scripts/build-tools.sh` to replace it"
            )
        return str(path)
    found = shutil.which("vegeta")
    if found:
        return found
    raise PreflightError(
        f"vegeta, the HTTP load generator, is missing (not in {path.parent} nor on PATH); run `make setup` "
        f"or `bash scripts/build-tools.sh` (go install {VEGETA_MODULE}@{VEGETA_VERSION})"
    )


def split_rate(rate: int, clients: int) -> list[int]:
    """The rate of each client: as equal as whole requests per second allow, first ones higher."""
    if clients < 1:
        raise InputError(f"--clients must be at least 1, got {clients}")
    if rate < clients:
        raise InputError(
            f"--rate {rate} over {clients} clients leaves a client under 1 request/s; "
            "raise --rate or lower --clients"
        )
    base, extra = divmod(rate, clients)
    return [base + (1 if i < extra else 0) for i in range(clients)]


def target_line(url: str, opts: SysbenchOptions) -> str:
    """The one request every hit of a client sends (vegeta's http target format)."""
    page = http_page(opts.test)
    query = "" if page == "write" else f"?rows={opts.table_size}"
    return f"GET {url.rstrip('/')}/{page}{query}"


def attack_name(token: str, client: int) -> str:
    """vegeta's -name, sent as X-Vegeta-Attack: with X-Vegeta-Seq it names each write (the
    application stores '<name>-<seq>'), unique across runs by the token."""
    return f"cb{token}c{client}"


def attack_args(opts: SysbenchOptions, rate: int, name: str) -> list[str]:
    """`vegeta attack` options for one client."""
    args = [
        f"-name={name}",
        f"-rate={rate}/1s",
        f"-duration={opts.total_time}s",
        f"-timeout={opts.http_timeout:g}s",
        f"-max-body={MAX_BODY}",
        f"-keepalive={'true' if opts.http_keepalive else 'false'}",
        "-redirects=0",
    ]
    if opts.http_max_workers:
        args.append(f"-max-workers={opts.http_max_workers}")
    return args


def client_argv(vegeta: str, url: str, opts: SysbenchOptions, rate: int, name: str) -> list[str]:
    """One client's command: attack piped into encode (see PIPELINE)."""
    return ["sh", "-c", PIPELINE, "sh", vegeta, target_line(url, opts), *attack_args(opts, rate, name)]


def prepare_web_tables(conn: Any, rows: int) -> list[str]:
    """Create the application's tables in the connection's schema and fill the read table;
    returns what it did, one line each."""
    with conn.cursor() as cur:
        for stmt in create_statements():
            cur.execute(stmt)
        inserts = item_inserts(rows)
        for stmt in inserts:
            cur.execute(stmt)
    conn.commit()
    return [f"created cbweb_items ({rows} rows in {len(inserts)} INSERTs) and cbweb_writes"]


def drop_web_tables(conn: Any) -> None:
    with conn.cursor() as cur:
        for stmt in drop_statements():
            cur.execute(stmt)


@dataclass
class _Client:
    index: int
    host: ClientHost
    url: str
    argv: list[str]
    stream: VegetaStream
    run: ClientRun
    stderr: list[str] = field(default_factory=list)
    attack_exit: int | None = None

    @property
    def remote(self) -> bool:
        return bool(getattr(self.host, "remote", False))

    def on_out(self, line: str) -> list[Sample]:
        started = parse_start_line(line)
        if started is not None and self.run.pid is None:
            self.run.pid, self.run.started_ns = started
            return []
        return self.stream.feed(line)

    def on_err(self, line: str) -> None:
        text = line.rstrip("\n")
        code = text.removeprefix(EXIT_MARK).strip()
        if text.startswith(EXIT_MARK) and code.lstrip("-").isdigit():
            self.attack_exit = int(code)
        else:
            self.stderr = (self.stderr + [text])[-STDERR_TAIL:]

    def finish(self, opts: SysbenchOptions, rc: int | None, killed: bool) -> None:
        r, st = self.run, self.stream
        # the pipeline exits as `vegeta encode` does; the attack's own exit is on stderr
        r.returncode = self.attack_exit if self.attack_exit is not None and rc == 0 else rc
        r.killed = killed
        r.samples, r.warmup_samples = st.samples, st.warmup_samples
        pct = float(opts.percentile)
        r.summary = tally_summary(st.total(), float(opts.time), pct) if st.samples else None
        r.stderr_tail = self.stderr


class HttpRunner:
    """Runs an HTTP test (http_read, http_write, http_mixed) against the web tier at `urls` (the
    front balancer's; several: clients go round-robin over them) and returns the RunResult every
    workload returns, with `http` set."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        vegeta: str | None = None,
        wall_ns: Callable[[], int] = time.time_ns,
        monotonic: Callable[[], float] = time.monotonic,
        grace: float = 30.0,
        poll_interval: float = 0.2,
        tracker: ClientTracker | None = None,
        token: Callable[[], str] = lambda: secrets.token_hex(3),
    ) -> None:
        if not urls:
            raise InputError("HTTP load needs the web tier's address; set [web] nodes = 1..9 in the topology")
        self.urls = list(urls)
        self.vegeta = vegeta
        self.wall_ns = wall_ns
        self.monotonic = monotonic
        self.grace = grace
        self.poll_interval = poll_interval
        self.tracker = tracker
        self.token = token

    def check(self, opts: SysbenchOptions, clients: int = 1) -> str:
        """Everything that can be refused before anything starts; returns vegeta's path."""
        if opts.test not in HTTP_TESTS:
            raise InputError(f"{opts.test} is not an HTTP test; use one of {', '.join(HTTP_TESTS)}")
        split_rate(opts.rate, clients)
        return self.vegeta or find_vegeta()

    def _clients(
        self, opts: SysbenchOptions, clients: int, hosts: Sequence[ClientHost] | None
    ) -> list[_Client]:
        vegeta = self.check(opts, clients)
        placed = assign_round_robin(clients, list(hosts) if hosts else [LocalClientHost()])
        token = self.token()
        out = []
        for i, (host, rate) in enumerate(zip(placed, split_rate(opts.rate, clients), strict=True)):
            url = self.urls[i % len(self.urls)]
            argv = client_argv(vegeta, url, opts, rate, attack_name(token, i))
            stream = VegetaStream(client=i, rate=rate, warmup=opts.warmup, percentile=float(opts.percentile),
                                  page=http_page(opts.test))  # fmt: skip
            run = ClientRun(client=i, database="", command=SysbenchCommand(tuple(argv)), host=host.name,
                            target=url, rate_asked=float(rate), own_host=bool(getattr(host, "remote", False)))
            out.append(_Client(i, host, url, argv, stream, run))
        return out

    def run(
        self,
        opts: SysbenchOptions,
        *,
        clients: int = 1,
        on_sample: Callable[[Sample], None] | None = None,
        hosts: Sequence[ClientHost] | None = None,
    ) -> RunResult:
        """Every client's vegeta, started together; samples go to on_sample (in this thread) as
        each client's seconds complete, the rest once all have ended."""
        cs = self._clients(opts, clients, hosts)
        emit = on_sample or (lambda _s: None)
        start_ns = self.wall_ns() + int(start_lead([c.host for c in cs], clients) * 1e9)
        procs = self._launch(cs, start_ns)
        started = [(c.host.name, c.remote, p) for c, p in zip(cs, procs, strict=True)]
        tracked = track(self.tracker, started, what=f"vegeta {opts.test}")

        def on_out(i: int, line: str) -> None:
            for s in cs[i].on_out(line):
                emit(s)

        try:
            limit = opts.total_time + opts.http_timeout + self.grace + (start_ns - self.wall_ns()) / 1e9
            rcs, killed = pump(procs, limit, on_out, lambda i, line: cs[i].on_err(line),
                               monotonic=self.monotonic, poll_interval=self.poll_interval)  # fmt: skip
        finally:
            untrack(self.tracker, tracked)
        for c, rc, k in zip(cs, rcs, killed, strict=True):
            for s in c.stream.finish():
                emit(s)
            c.finish(opts, rc, k)
        return self._result(opts, cs, start_ns)

    def _launch(self, cs: Sequence[_Client], start_ns: int) -> list[Process]:
        procs: list[Process] = []
        try:
            for c in cs:
                log.info("running on %s at %d: %s", c.host.name, start_ns, shlex.join(c.argv))
                procs.append(c.host.popen(start_at_argv(c.argv, start_ns)))
        except Exception as exc:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                p.wait()
            raise WorkloadError(
                f"cannot start vegeta client {len(procs)} on {cs[len(procs)].host.name}: {exc}; "
                "check that the client host is reachable and has vegeta"
            ) from exc
        return procs

    def _result(self, opts: SysbenchOptions, cs: Sequence[_Client], start_ns: int) -> RunResult:
        streams = [c.stream for c in cs]
        total = merge_tallies(st.total() for st in streams)
        details = HttpDetails(
            page=http_page(opts.test), rate=opts.rate, urls=[c.url for c in cs],
            seconds=[s for st in streams for s in st.seconds], combined=combine_seconds(streams),
            totals=total, client_totals=[st.total() for st in streams],
            acknowledged=[a for st in streams for a in st.acknowledged],
            schedule_lag_ms=[st.schedule_lag_ms for st in streams],
        )  # fmt: skip
        rcs = [c.run.returncode for c in cs]
        exit_code = next((rc for rc in rcs if rc is not None and rc != 0), 0)
        if exit_code == 0 and None in rcs:
            exit_code = -9
        ok = exit_code == 0 and all(c.run.summary is not None for c in cs)
        samples = [s for st in streams for s in st.samples]
        pct = float(opts.percentile)
        return RunResult(
            test=opts.test, clients=[c.run for c in cs], samples=samples,
            summary=tally_summary(total, float(opts.time), pct, clients=len(cs)) if ok else None,
            exit_code=exit_code, stderr_tail=[ln for c in cs for ln in c.stderr][-STDERR_TAIL:],
            killed=any(c.run.killed for c in cs), start_ns=start_ns, start_skew=start_skew(samples),
            http=details,
        )  # fmt: skip

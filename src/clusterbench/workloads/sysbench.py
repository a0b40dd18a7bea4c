"""sysbench 1.0.20 as a workload: options model and pure argv builders.

Nothing here runs a process; `runner.py` does. Every command is a `SysbenchCommand` value
(argv, env, cwd) so that tests can compare it exactly and the runner can log it before running.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from clusterbench.components.web.schema import WEB_TABLES
from clusterbench.errors import InputError
from clusterbench.spec.endpoint import Endpoint
from clusterbench.workloads.limits import TPCC, TPCC_CUSTOMERS, TPCC_ITEMS

SYSBENCH_TESTS: tuple[str, ...] = (
    "bulk_insert",
    "oltp_delete",
    "oltp_insert",
    "oltp_point_select",
    "oltp_read_only",
    "oltp_read_write",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_write_only",
    "select_random_points",
    "select_random_ranges",
)

# The access-method microbenchmark (lua/cb_access.lua, our own script run through the report
# hook): one test per access method, named access_<method>; see access_rows() for what one event reads.
ACCESS_GROUP = "access"
ACCESS_MODULE = "cb_access"
ACCESS_METHODS: tuple[str, ...] = ("pk", "pk_batch", "uk", "uk_batch", "eq", "range", "scan", "noop")
ACCESS_TESTS: tuple[str, ...] = tuple(f"access_{m}" for m in ACCESS_METHODS)

# mysqlslap (Debian's mariadb-slap) as a workload: run by workloads/slap.py, nothing to prepare.
SLAP_TEST = "mysqlslap"
SLAP_GROUP = "mysqlslap"
# its settings (SysbenchOptions.slap_*; flags --slap-*, experiment keys and factors slap_*)
SLAP_SETTINGS: tuple[str, ...] = ("slap_load_type", "slap_queries", "slap_query", "slap_engine")
SLAP_LOAD_TYPES: tuple[str, ...] = ("mixed", "read", "write", "key", "update")
SlapLoadType = Literal["mixed", "read", "write", "key", "update"]
_ENGINE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")


def check_slap_engine(name: str) -> str:
    """A storage engine name for mariadb-slap's --engine (raises ValueError)."""
    if not _ENGINE_NAME.match(name):
        raise ValueError(
            "not a storage engine name; give one like InnoDB (a letter, then letters, "
            "digits or _)"
        )
    return name


def check_slap_query(sql: str | None) -> str | None:
    """SQL for mariadb-slap's --query: one line (raises ValueError)."""
    if sql is not None and ("\n" in sql or "\r" in sql):
        raise ValueError("give the SQL on one line (separate statements with ';')")
    return sql


# HTTP load on the web tier (workloads/http.py runs vegeta): one test per page of clusterbench's web
# application, so the page is what a trial is named by, varied like any workload, and stored
# with its samples. Nothing of sysbench's runs; the tables are the application's (prepared once).
HTTP_GROUP = "http"
HTTP_PAGES: tuple[str, ...] = ("read", "write", "mixed")
HTTP_TESTS: tuple[str, ...] = tuple(f"http_{p}" for p in HTTP_PAGES)
# `-w http` is the mixed page (a few reads and one write, like a page of a real application)
HTTP_DEFAULT_TEST = "http_mixed"
# its settings (SysbenchOptions.http_*; flags --http-*)
HTTP_SETTINGS: tuple[str, ...] = ("http_timeout", "http_max_workers", "http_keepalive")


def http_page(test: str) -> str:
    """'http_write' -> 'write'."""
    if test not in HTTP_TESTS:
        raise InputError(f"{test} is not an HTTP test; the HTTP tests are {', '.join(HTTP_TESTS)}")
    return test.removeprefix("http_")


def canonical_test(name: str) -> str:
    """A test as the user may name it: `http` is the mixed page."""
    return HTTP_DEFAULT_TEST if name == HTTP_GROUP else name



# clusterbench's own TPC-C-like test (lua/cb_tpcc.lua): nine tables of its own, scaled in warehouses
TPCC_MODULE = "cb_tpcc"
TPCC_TABLES: tuple[str, ...] = (
    "warehouse", "district", "customer", "history", "new_order", "orders", "order_line", "item", "stock",
)  # fmt: skip

KNOWN_TESTS: tuple[str, ...] = SYSBENCH_TESTS + ACCESS_TESTS + (SLAP_TEST, TPCC) + HTTP_TESTS

# The tests built on oltp_common.lua share the sbtest1..N tables (id, k, c, pad).
# select_random_* only read sbtest1 (their own prepare refuses --tables > 1, so the group is
# always prepared with oltp_read_write). bulk_insert creates sbtest1..<threads> with a different
# (id, k) schema in the same database, and its run inserts ids from 1 again, so it needs its own
# freshly prepared tables every time and must never meet the oltp tables.
OLTP_GROUP = "oltp"
BULK_GROUP = "bulk_insert"
OLTP_PREPARE_TEST = "oltp_read_write"

# sysbench's own default list, plus what keeps a run alive through node kills, balancer
# failover and Galera state changes. Reconnect codes (2013, 2006, 2011, 2055) need the shim
# (upstream sysbench issue #527); the runner always preloads it.
SYSBENCH_DEFAULT_IGNORE: tuple[int, ...] = (1213, 1020, 1205)
DEFAULT_IGNORE_ERRORS: tuple[int, ...] = SYSBENCH_DEFAULT_IGNORE + (
    2013,  # CR_SERVER_LOST: connection lost during a query -> reconnect
    2006,  # CR_SERVER_GONE_ERROR: server has gone away -> reconnect
    2011,  # CR_TCP_CONNECTION -> reconnect
    2055,  # CR_SERVER_LOST_EXTENDED -> reconnect
    1047,  # ER_UNKNOWN_COM_ERROR: Galera node not Primary / not ready (WSREP has not yet prepared node)
    1053,  # ER_SERVER_SHUTDOWN: the node is shutting down
    1927,  # ER_CONNECTION_KILLED: the session was killed (MariaDB)
    4031,  # ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8 servers)
    # ER_ERROR_DURING_COMMIT: Galera refuses a COMMIT while the node is between views after a
    # member died ("... not connected to Primary Component"); seen killing 1 of 5 nodes under load.
    # The transaction is not acknowledged, sysbench counts it as an error and goes on.
    1180,
    # ER_TRANSACTION_ROLLBACK_DURING_COMMIT: a multi-primary Group Replication member rolls back a
    # COMMIT whose write set lost certification against another member's ("Plugin instructed the
    # server to rollback the current transaction"); without it sysbench stops with FATAL at the
    # first conflict (seen within seconds, oltp_read_write x2 through HAProxy over 3 members).
    3101,
    # ER_OPTION_PREVENTS_STATEMENT: a Group Replication member went super_read_only under the
    # client (a graceful stop sets it first, see engines/group_replication/node.py); the write is
    # refused, not committed, and the session is closed by the shutdown seconds later, after
    # which the shim reconnects through the balancer to the new primary.
    1290,
)

RandType = Literal["uniform", "gaussian", "special", "pareto"]
Command = Literal["prepare", "run", "cleanup"]
WarmupUntil = Literal["time", "steady"]

REPORT_SCRIPT_ENV = "CLUSTERBENCH_SB_TEST"
MODULE_ENV = "CLUSTERBENCH_SB_MODULE"  # a test of our own, loaded by the report hook from its folder


class SysbenchOptions(BaseModel):
    """One sysbench test as the user asks for it. Defaults are sysbench's, except where noted."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    test: str
    tables: int = Field(default=4, ge=1)
    table_size: int = Field(default=10000, ge=1)
    threads: int = Field(default=4, gt=0)
    time: int = Field(default=10, gt=0, description="measured seconds, after the warm-up")
    warmup: int = Field(default=0, ge=0, description="seconds run before `time`, excluded from results")
    warmup_until: WarmupUntil = Field(
        default="time",
        description="time: the warm-up is `warmup` s; steady: at most `warmup` s, cut where the run's "
        "per-second throughput and latency reach steady state (MSER), the rest is measured",
    )
    rate: int = Field(default=0, ge=0, description="target transactions per second; 0 = unlimited")
    rand_type: RandType = "special"
    report_interval: int = Field(default=1, ge=1, description="seconds per sample")
    percentile: int = Field(default=95, ge=1, le=100)
    warehouses: int = Field(default=1, ge=1, description="tpcc: warehouses to load (the scale)")
    # tpcc, a reduced load for quick runs (TPC-C's 3,000 customers per district and 100,000 items
    # are the defaults); the run reads both from the loaded tables
    customers: int = Field(default=TPCC_CUSTOMERS, ge=10, le=TPCC_CUSTOMERS, description="per district")
    items: int = Field(default=TPCC_ITEMS, ge=100, le=TPCC_ITEMS, description="rows in ITEM")
    # tpcc: whole-percent weights of new_order, payment, order_status, delivery, stock_level
    # (summing to 100); None = the standard mix 45/43/4/4/4
    mix: tuple[int, int, int, int, int] | None = None
    tls: bool | None = Field(default=None, description="None: as the endpoint says")
    compression: bool = False
    ignore_errors: tuple[int, ...] | Literal["all"] = DEFAULT_IGNORE_ERRORS
    db_ps_mode: Literal["auto", "disable"] = "auto"
    extra: tuple[str, ...] = Field(
        default=(), description="more --name=value options for run, passed as they are"
    )
    prepare_extra: tuple[str, ...] = Field(
        default=(),
        description="more options for prepare, e.g. --create_secondary=off, --mysql_storage_engine=...",
    )

    # the access-method tests (access_*): rows per batched / equality-bound / range access, and
    # the approximate bytes per row (the table is sbtest<row_size>)
    batch: int = Field(default=32, ge=1, description="rows per batched, eq-bound or range access")
    row_size: int = Field(default=20, ge=16, le=16384, description="approximate bytes per row")
    # mysqlslap: what each run executes (auto-generated SQL of a load type, or `slap_query`), how
    # many queries each client sends per run, and the engine of the auto-generated table
    slap_load_type: SlapLoadType = "mixed"
    slap_queries: int = Field(default=100, ge=1, description="queries per client per mysqlslap run")
    slap_query: str | None = Field(default=None, min_length=1, description="SQL instead of auto-generated")
    slap_engine: str = Field(default="InnoDB", description="storage engine of the auto-generated table")
    # HTTP tests (http_*): `rate` is required (requests per second over all clients, sent on
    # schedule whatever the latency); `table_size` is the read table's rows
    http_timeout: float = Field(default=10.0, gt=0, le=600, description="s before a request is an error")
    http_max_workers: int = Field(
        default=0, ge=0, description="cap on vegeta's workers per client; 0 = none (open loop)"
    )
    http_keepalive: bool = Field(default=True, description="reuse connections (off: one per request)")

    @field_validator("test")
    @classmethod
    def _known_test(cls, v: str) -> str:
        v = canonical_test(v)
        check_known_tests([v])
        return v

    @field_validator("slap_engine")
    @classmethod
    def _slap_engine(cls, v: str) -> str:
        return check_slap_engine(v)

    @model_validator(mode="after")
    def _batch_fits(self) -> SysbenchOptions:
        if self.test in ACCESS_TESTS and self.batch > self.table_size:
            raise ValueError(
                f"batch {self.batch} is more than table_size {self.table_size}; "
                "lower batch or raise table_size"
            )
        return self

    @model_validator(mode="after")
    def _http_rate(self) -> SysbenchOptions:
        if self.test in HTTP_TESTS and self.rate <= 0:
            raise ValueError(
                f"--rate: {self.test} sends requests at a fixed rate whatever the latency; "
                "give --rate R (requests per second, all clients together) above 0"
            )
        return self

    @model_validator(mode="after")
    def _steady_needs_sysbench(self) -> SysbenchOptions:
        if self.warmup_until == "steady":
            problem = steady_problem([self.test], self.warmup)
            if problem:
                raise ValueError(problem)
        return self

    @field_validator("mix")
    @classmethod
    def _mix(cls, v: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if v is not None and (min(v) < 0 or sum(v) != 100):
            raise ValueError(f"weights must be 0 or more and sum to 100 (got {', '.join(map(str, v))})")
        return v

    @field_validator("extra", "prepare_extra")
    @classmethod
    def _extra_are_options(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for item in v:
            if not item.startswith("--"):
                raise ValueError(f"extra option {item!r} must look like --name=value")
        return v

    @property
    def total_time(self) -> int:
        return self.warmup + self.time

    def warmup_words(self) -> str:
        """The warm-up as the live view says it: "5 s warm-up" or "up to 5 s warm-up (until steady)"."""
        if self.warmup_until == "steady":
            return f"up to {self.warmup} s warm-up (until steady)"
        return f"{self.warmup} s warm-up"


def steady_problem(tests: Iterable[str], warmup: int) -> str | None:
    """Why a warm-up until steady cannot run these tests with this warm-up, or None."""
    other = next((t for t in tests if t == SLAP_TEST or t in HTTP_TESTS), None)
    if other is not None:
        return (
            f"a warm-up until steady needs sysbench's per-second latency histograms, which {other} "
            'does not give; use a fixed warm-up (--warmup-until time, warmup_until = "time")'
        )
    if warmup == 0:
        return (
            "a warm-up until steady ends within the warm-up's seconds, and warmup is 0; "
            "give --warmup N (e.g. 5)"
        )
    return None


def check_known_tests(tests: Iterable[str]) -> None:
    unknown = [t for t in tests if t not in KNOWN_TESTS]
    if unknown:
        raise InputError(
            f"unknown sysbench test {', '.join(repr(t) for t in unknown)}; "
            f"known tests: {', '.join(KNOWN_TESTS)}"
        )


def prepare_group(test: str) -> str:
    check_known_tests([test])
    if test in ACCESS_TESTS:
        return ACCESS_GROUP
    if test == SLAP_TEST:
        return SLAP_GROUP
    if test == TPCC:
        return TPCC
    if test in HTTP_TESTS:
        return HTTP_GROUP
    return BULK_GROUP if test == BULK_GROUP else OLTP_GROUP


def prepare_test(group: str) -> str:
    """The test whose prepare makes a group's tables."""
    return {OLTP_GROUP: OLTP_PREPARE_TEST, ACCESS_GROUP: ACCESS_TESTS[0], HTTP_GROUP: HTTP_TESTS[0]}.get(
        group, group
    )


def access_rows(test: str, batch: int, table_size: int) -> int:
    """Rows one event of an access test reads (the script checks it got exactly these)."""
    method = test.removeprefix("access_")
    if method in ("pk", "uk", "noop"):
        return 1
    if method == "scan":
        return table_size
    return batch


@dataclass(frozen=True)
class PrepareGroup:
    """Tests that run on one prepared set of tables: prepare once, run each, clean up once."""

    name: str
    tests: tuple[str, ...]
    prepare_test: str


def group_tests(tests: Sequence[str]) -> list[PrepareGroup]:
    """Group tests into prepare groups, keeping the user's order of first appearance.

    Each bulk_insert occurrence is a group of its own (its run consumes the prepared tables).
    """
    check_known_tests(tests)
    groups: list[PrepareGroup] = []
    index: dict[str, int] = {}
    for test in tests:
        name = prepare_group(test)
        if name == BULK_GROUP:
            groups.append(PrepareGroup(BULK_GROUP, (test,), BULK_GROUP))
        elif name not in index:
            index[name] = len(groups)
            groups.append(PrepareGroup(name, (test,), prepare_test(name)))
        else:
            g = groups[index[name]]
            groups[index[name]] = PrepareGroup(g.name, (*g.tests, test), g.prepare_test)
    return groups


def client_databases(endpoint: Endpoint, clients: int, separate_schemas: bool) -> list[str]:
    """The schema each client process uses. Creating them is the caller's job."""
    if clients < 1:
        raise InputError(f"clients must be at least 1, got {clients}; pass a positive number of clients")
    if not separate_schemas:
        return [endpoint.database] * clients
    return [f"{endpoint.database}{i}" for i in range(1, clients + 1)]


def needed_schemas(endpoint: Endpoint, clients: int, separate_schemas: bool) -> list[str]:
    """Distinct schemas that must exist before prepare."""
    return sorted(set(client_databases(endpoint, clients, separate_schemas)))


def expected_tables(opts: SysbenchOptions, group: str) -> list[str]:
    """Tables a successful prepare of `group` leaves behind."""
    if group == SLAP_GROUP:
        return []  # mysqlslap makes (and drops) its own schema
    if group == ACCESS_GROUP:
        return [f"sbtest{opts.row_size}"]
    if group == TPCC:
        return list(TPCC_TABLES)
    if group == HTTP_GROUP:
        return list(WEB_TABLES)
    n = opts.threads if group == BULK_GROUP else opts.tables
    return [f"sbtest{i}" for i in range(1, n + 1)]


def report_script() -> Path:
    """Path of the Lua wrapper that turns sysbench's reports into JSON lines."""
    return Path(str(resources.files("clusterbench.workloads") / "lua" / "cb_report.lua"))


def access_script() -> Path:
    """Path of the access-method microbenchmark (prepare and cleanup run it directly)."""
    return Path(str(resources.files("clusterbench.workloads") / "lua" / f"{ACCESS_MODULE}.lua"))


def tpcc_script() -> Path:
    """Path of clusterbench's TPC-C-like sysbench test (next to the report wrapper)."""
    return report_script().with_name(f"{TPCC_MODULE}.lua")


@dataclass(frozen=True)
class SysbenchCommand:
    """One sysbench invocation. `secrets` are options that must not appear on the command line
    (every user can read /proc/PID/cmdline): the runner writes them to an option file of mode 0600
    on the client's host and adds `--config-file=<it>` (sysbench 1.0.20 reads `name=value` lines
    from it; the command line wins over it)."""

    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    secrets: tuple[tuple[str, str], ...] = ()

    def masked_argv(self) -> tuple[str, ...]:
        return tuple("--mysql-password=***" if a.startswith("--mysql-password=") else a for a in self.argv)

    def config_text(self) -> str:
        """The option file's content for `secrets` ('' when there are none)."""
        return "".join(f"{k}={v}\n" for k, v in self.secrets)

    def with_config_file(self, path: Path) -> SysbenchCommand:
        """This command reading its secrets from `path` (right after the program name)."""
        return SysbenchCommand(
            argv=(self.argv[0], f"--config-file={path}", *self.argv[1:]), env=self.env, cwd=self.cwd
        )


def _onoff(v: bool) -> str:
    return "on" if v else "off"


def connection_args(endpoint: Endpoint, database: str | None = None) -> list[str]:
    """--mysql-* options for an endpoint, without the password (see `password_secrets`): its Unix
    socket when it has one, else its addresses.

    sysbench 1.0.20 walks hosts x ports (for each host, every port), so a multi-address
    endpoint must share one port (host list) or one host (port list).
    """
    if endpoint.socket is not None:
        # libmariadb uses the socket only for the host name "localhost" (any address means TCP)
        return [
            "--db-driver=mysql",
            "--mysql-host=localhost",
            f"--mysql-socket={endpoint.socket}",
            f"--mysql-user={endpoint.user}",
            f"--mysql-db={database if database is not None else endpoint.database}",
        ]
    if not endpoint.addresses:
        raise InputError(f"endpoint {endpoint.name!r} has no addresses; give it at least one host:port")
    hosts = list(dict.fromkeys(a.host for a in endpoint.addresses))
    ports = list(dict.fromkeys(a.port for a in endpoint.addresses))
    if len(hosts) > 1 and len(ports) > 1:
        raise InputError(
            f"endpoint {endpoint.name!r} mixes several hosts and several ports; sysbench 1.0.20 would "
            "connect to every host x port pair; use one port for all hosts or a balancer endpoint"
        )
    return [
        "--db-driver=mysql",
        f"--mysql-host={','.join(hosts)}",
        f"--mysql-port={','.join(str(p) for p in ports)}",
        f"--mysql-user={endpoint.user}",
        f"--mysql-db={database if database is not None else endpoint.database}",
    ]


def password_secrets(endpoint: Endpoint) -> tuple[tuple[str, str], ...]:
    """The password as an option-file entry, never an argument. sysbench's option file trims each
    value and ends it at the line break, so such a password cannot be passed: refuse it."""
    pw = endpoint.password
    if not pw:
        return ()
    if pw != pw.strip() or "\n" in pw or "\r" in pw:
        raise InputError(
            f"the password of {endpoint.user} for {endpoint.name!r} begins or ends with white space or holds "
            "a line break, which sysbench cannot read from its option file; use another password"
        )
    return (("mysql-password", pw),)


def use_tls(opts: SysbenchOptions, endpoint: Endpoint) -> bool:
    return endpoint.tls if opts.tls is None else opts.tls


def tls_cwd(opts: SysbenchOptions, endpoint: Endpoint) -> Path | None:
    # sysbench 1.0.20 calls mysql_ssl_set(con, "client-key.pem", "client-cert.pem", "cacert.pem", ...)
    # with names relative to the current directory, so it must run inside the certificate folder.
    if not use_tls(opts, endpoint):
        return None
    if endpoint.tls_dir is None:
        raise InputError(
            f"endpoint {endpoint.name!r} asks for TLS but has no tls_dir; set tls_dir to the folder "
            "holding cacert.pem, client-cert.pem and client-key.pem"
        )
    return endpoint.tls_dir


def _common_args(opts: SysbenchOptions, endpoint: Endpoint, database: str | None) -> list[str]:
    args = connection_args(endpoint, database)
    args += [
        f"--mysql-ssl={_onoff(use_tls(opts, endpoint))}",
        f"--mysql-compression={_onoff(opts.compression)}",
    ]
    if opts.test == TPCC:
        # the scale is the warehouses (prepare); the run reads it from the loaded tables
        args += [f"--threads={opts.threads}", f"--db-ps-mode={opts.db_ps_mode}",
                 f"--warehouses={opts.warehouses}"]  # fmt: skip
        if opts.customers != TPCC_CUSTOMERS:
            args.append(f"--customers={opts.customers}")
        if opts.items != TPCC_ITEMS:
            args.append(f"--items={opts.items}")
        if opts.mix is not None:
            args.append(f"--mix={','.join(map(str, opts.mix))}")
        return args
    args += [
        f"--tables={opts.tables}",
        f"--table-size={opts.table_size}",
        f"--threads={opts.threads}",
        f"--db-ps-mode={opts.db_ps_mode}",
    ]
    if endpoint.auto_inc_off:
        # Galera's auto_increment_increment leaves sparse ids with auto_inc=on: point selects
        # miss and delete/insert grows the tables (RECIPES S1).
        args.append("--auto_inc=off")
    return args


# oltp_insert with --auto_inc=off draws each id with sysbench.rand.unique(), over the whole INT
# range: unique within one sysbench process, not against the rows the tables already hold (the
# prepared 1..table_size, an earlier run's inserts) nor another client process's. With 10,000
# prepared rows about 2 inserts in a million collide; at a thousand inserts a second a 40-s run
# meets one about every tenth time, and sysbench then stopped with FATAL 1062 (seen in a drill).
# The duplicate is the generator's, not the cluster's: it is counted as an ignored error.
DUPLICATE_KEY = 1062
INSERT_TEST = "oltp_insert"


def _ignore_errors_arg(opts: SysbenchOptions) -> str:
    if opts.ignore_errors == "all":
        return "--mysql-ignore-errors=all"
    codes = list(opts.ignore_errors)
    if opts.test == INSERT_TEST and DUPLICATE_KEY not in codes:
        codes.append(DUPLICATE_KEY)
    return "--mysql-ignore-errors=" + ",".join(str(c) for c in codes)


def build_command(
    opts: SysbenchOptions,
    endpoint: Endpoint,
    command: Command,
    *,
    database: str | None = None,
    sysbench_bin: str = "sysbench",
    shim: Path | None = None,
) -> SysbenchCommand:
    """argv/env/cwd for one sysbench invocation.

    prepare and cleanup use the plain built-in test (prepare uses the group's prepare test);
    run uses the JSON report wrapper with the test named in CLUSTERBENCH_SB_TEST and the
    reconnect shim in LD_PRELOAD (set on sysbench's environment only).
    """
    group = prepare_group(opts.test)
    if group == SLAP_GROUP:
        raise InputError(f"{opts.test} is not run by sysbench; use workloads.slap")
    if group == HTTP_GROUP:
        raise InputError(f"{opts.test} is not run by sysbench; use workloads.http")
    cwd = tls_cwd(opts, endpoint)
    env: dict[str, str] = {}
    if command == "run":
        argv = [sysbench_bin, str(report_script())]
        env[REPORT_SCRIPT_ENV] = opts.test
        if group == ACCESS_GROUP:
            env[MODULE_ENV] = ACCESS_MODULE
        if group == TPCC:
            env[MODULE_ENV] = TPCC_MODULE
        if shim is not None:
            env["LD_PRELOAD"] = str(shim)
    elif group == ACCESS_GROUP:
        argv = [sysbench_bin, str(access_script())]
    elif group == TPCC:
        argv = [sysbench_bin, str(tpcc_script())]
    else:
        argv = [sysbench_bin, prepare_test(group)]
    argv += _common_args(opts, endpoint, database)
    if group == ACCESS_GROUP:
        argv += [f"--access-batch={opts.batch}", f"--access-row-size={opts.row_size}"]
        if command == "run":
            argv.append(f"--access-method={opts.test.removeprefix('access_')}")
    if command == "run":
        argv += [
            f"--time={opts.total_time}",
            f"--report-interval={opts.report_interval}",
            f"--rate={opts.rate}",
            f"--rand-type={opts.rand_type}",
            f"--percentile={opts.percentile}",
            _ignore_errors_arg(opts),
        ]
        if opts.warmup > 0 and opts.warmup_until == "time":
            # 1.0.20 has no --warmup-time; a checkpoint at the end of the warm-up resets the
            # cumulative counters, timers and histogram, so the final summary covers only the
            # measured part. Samples from the warm-up are dropped by the parser.
            argv.append(f"--report-checkpoints={opts.warmup}")
        argv += list(opts.extra)
    elif command == "prepare":
        argv += list(opts.prepare_extra)
    argv.append(command)
    return SysbenchCommand(argv=tuple(argv), env=env, cwd=cwd, secrets=password_secrets(endpoint))

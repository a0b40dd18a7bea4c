"""Scenario files: a load, verification workloads, and a schedule of faults (TOML, validated)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from clusterbench.errors import InputError
from clusterbench.faults.spec import KINDS, FaultSpec, PlannedFault, RandomFaults, expand_random, plan
from clusterbench.scenario.anomaly_spec import AnomalySpec
from clusterbench.spec.aliases import canonical_keys
from clusterbench.spec.files import read_toml_text, require_kind
from clusterbench.spec.topology import parse_toml, validation_messages
from clusterbench.workloads import KNOWN_TESTS
from clusterbench.workloads.sysbench import (
    ACCESS_TESTS,
    HTTP_SETTINGS,
    HTTP_TESTS,
    TPCC_CUSTOMERS,
    TPCC_ITEMS,
    canonical_test,
)

TARGET_HELP = "balancer, node:N or all-nodes"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _tpcc_mix(v: Any) -> Any:
    """A tpcc transaction mix as written (a string, a table or the five weights); None: the standard one."""
    from clusterbench.workloads import tpcc

    return None if v is None else tpcc.parse_mix(v)


class LoadSpec(_Strict):
    """The sysbench load that runs for the whole trial; faults happen inside it."""

    workload: str = "oltp_read_write"
    threads: int = Field(4, ge=1, le=1024)
    duration: int = Field(
        60, ge=1, le=86400, description="seconds of load (alias: time); every fault must heal before it ends"
    )
    target: str = "balancer"
    tables: int = Field(4, ge=1, le=1000)
    table_size: int = Field(10000, ge=1)
    warehouses: int = Field(1, ge=1, description="tpcc: warehouses to load")
    # tpcc, a reduced load for quick drills (as run's --customers, --items)
    customers: int = Field(TPCC_CUSTOMERS, ge=10, le=TPCC_CUSTOMERS, description="per district")
    items: int = Field(TPCC_ITEMS, ge=100, le=TPCC_ITEMS, description="rows in ITEM")
    # tpcc: "new_order=45,payment=43,..." or a table; None = the standard mix
    mix: Annotated[tuple[int, ...] | None, BeforeValidator(_tpcc_mix)] = None
    rate: int = Field(0, ge=0)
    prepare: bool = Field(
        True, description="false: reuse the tables an earlier run left (as `run --no-prepare`)"
    )
    # access_* tests (as in experiment files and --batch, --row-size): rows per batched, eq-bound or
    # range access, and the approximate bytes per row (the table is sbtest<row_size>)
    batch: int = Field(32, ge=1, description="access_* tests: rows per batched, eq-bound or range access")
    row_size: int = Field(20, ge=16, le=16384, description="access_* tests: approximate bytes per row")
    # HTTP tests (http_read, http_write, http_mixed: vegeta on the web tier, as run's --http-*)
    http_timeout: float = Field(10.0, gt=0, le=600, description="s before a request is an error")
    http_max_workers: int = Field(0, ge=0, description="cap on vegeta's workers per client; 0 = none")
    http_keepalive: bool = Field(True, description="reuse connections (off: one per request)")

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        return canonical_keys(data)

    @field_validator("workload")
    @classmethod
    def _workload(cls, v: str) -> str:
        v = canonical_test(v)  # "http" is the mixed page
        if v not in KNOWN_TESTS:
            raise ValueError(f"unknown workload '{v}'; known: {', '.join(KNOWN_TESTS)}")
        return v

    def how(self) -> str:
        """The load in a few words: 'oltp_read_write x4 threads for 60 s via balancer', or for an
        HTTP test 'http_mixed at 100 requests/s for 75 s through the web front'."""
        if self.workload in HTTP_TESTS:
            return f"{self.workload} at {self.rate} requests/s for {self.duration} s through the web front"
        return f"{self.workload} x{self.threads} threads for {self.duration} s via {self.target}"

    @property
    def access(self) -> bool:
        """An access_* test (batch and row_size apply)."""
        return self.workload in ACCESS_TESTS

    @model_validator(mode="after")
    def _settings_fit_the_workload(self) -> LoadSpec:
        """The settings of one family of tests (access_*, tpcc, HTTP) only with a workload of that
        family, and what the family needs; the first problem found is the error."""
        for problem in (self._access_problem, self._tpcc_problem, self._http_problem, self._batch_problem):
            message = problem()
            if message:
                raise ValueError(message)
        return self

    def _given(self, keys: Iterable[str]) -> list[str]:
        return [k for k in keys if k in self.model_fields_set]

    def _access_problem(self) -> str | None:
        given = self._given(("batch", "row_size"))
        if not given or self.access:
            return None
        what = f"{given[0]} is a setting" if len(given) == 1 else "batch and row_size are settings"
        them = "it" if len(given) == 1 else "them"
        return (
            f"{what} of the access_* tests and workload {self.workload} is not one; remove {them}, "
            'or set workload = "access_pk" (or another access_* test)'
        )

    def _tpcc_problem(self) -> str | None:
        if self.workload == "tpcc":
            return None
        if self.mix is not None:
            return 'mix is the tpcc transaction mix; remove it, or set workload = "tpcc"'
        scale = self._given(("customers", "items"))
        if scale:
            return f"{' and '.join(scale)}: tpcc's load scale; remove, or set workload = \"tpcc\""
        return None

    def _http_problem(self) -> str | None:
        given = self._given(HTTP_SETTINGS)
        if self.workload not in HTTP_TESTS and given:
            return (
                f"{given[0]} is a setting of the HTTP tests and workload {self.workload} is not one; "
                'remove it, or set workload = "http_mixed" (or http_read, http_write)'
            )
        if self.workload in HTTP_TESTS and self.rate <= 0:
            return (
                f"rate: {self.workload} sends requests at a fixed rate whatever the latency; give rate = R "
                "(requests per second) above 0"
            )
        return None

    def _batch_problem(self) -> str | None:
        if self.access and self.batch > self.table_size:
            return (
                f"batch {self.batch} is more than table_size {self.table_size}; "
                "lower batch or raise table_size"
            )
        return None


class VerifySpec(_Strict):
    """Verification workloads that run beside the load and the checkers that read them."""

    ledger_clients: int = Field(2, ge=0, le=64, description="ledger clients per entry point (0: off)")
    ledger_rate: float = Field(20.0, gt=0, le=1000, description="inserts per second per client")
    ledger_targets: list[str] = Field(default_factory=lambda: ["balancer"])
    bank: bool = False
    bank_for_update: bool = True
    prober: bool = True
    prober_targets: list[str] = Field(default_factory=lambda: ["balancer"])
    monitor: bool = True
    convergence: bool = True
    max_outage_s: float | dict[str, float] | None = Field(
        None, description="outage budget (s): a path unavailable longer fails availability; one number "
        "for every prober target, or a table per target (e.g. { balancer = 10 })",
    )

    @model_validator(mode="after")
    def _budgets(self) -> VerifySpec:
        b = self.max_outage_s
        values = list(b.values()) if isinstance(b, dict) else [] if b is None else [b]
        if any(v <= 0 for v in values):
            raise ValueError("max_outage_s: budgets are seconds above 0")
        unknown = sorted(set(b) - set(self.prober_targets)) if isinstance(b, dict) else []
        if unknown:
            raise ValueError(
                f"max_outage_s: {', '.join(unknown)} is not a prober target "
                f"({', '.join(self.prober_targets)}); budget the prober_targets"
            )
        return self


class ScenarioSpec(_Strict):
    name: str = "scenario"
    description: str = ""
    topology: str | None = Field(None, description="topology file (relative to the scenario) to bring up")
    seed: int = 0
    load: LoadSpec = Field(default_factory=LoadSpec)
    verify: VerifySpec = Field(default_factory=VerifySpec)
    fault: list[FaultSpec] = Field(default_factory=list)
    random_faults: RandomFaults | None = None
    anomalies: AnomalySpec | None = None
    on_error: Literal["heal"] = "heal"

    @property
    def random_seed(self) -> int:
        """The seed of the random fault schedule: its own, else the scenario's."""
        rf = self.random_faults
        return self.seed if rf is None or rf.seed is None else rf.seed

    def fault_specs(self, nodes: int) -> list[FaultSpec]:
        """The scheduled faults, then those drawn by [random_faults] (raises ValueError)."""
        extra = (
            expand_random(self.random_faults, nodes, float(self.load.duration), self.random_seed)
            if self.random_faults is not None
            else []
        )
        return [*self.fault, *extra]

    def targets_primary(self) -> bool:
        return any(f.target == "primary" for f in self.fault)

    def planned(
        self,
        nodes: int,
        balancers: int,
        source: str,
        primary: int | None = None,
        *,
        web_nodes: int = 0,
        fronts: int = 0,
    ) -> list[PlannedFault]:
        """The fault schedule with targets resolved; `primary` is the node taking the writes
        (target primary), None where every node does; `web_nodes` and `fronts`: the web tier's."""
        try:
            return plan(
                self.fault_specs(nodes),
                nodes,
                balancers,
                float(self.load.duration),
                seed=self.seed,
                primary=primary,
                web_nodes=web_nodes,
                fronts=fronts,
            )
        except ValueError as exc:
            raise InputError("\n".join(f"{source}: {line}" for line in str(exc).splitlines())) from None


def load_scenario(path: Path) -> tuple[ScenarioSpec, Path | None]:
    """The scenario and the absolute path of its topology file, if it names one."""
    text = read_toml_text(path, "scenario", "see examples/scenarios/")
    data = parse_toml(text, str(path))
    require_kind(data, "scenario", path)
    try:
        spec = ScenarioSpec.model_validate(data)
    except ValidationError as exc:
        raise InputError("\n".join(validation_messages(exc, ScenarioSpec, str(path)))) from None
    topo = (path.parent / spec.topology).resolve() if spec.topology else None
    if topo is not None and not topo.exists():
        raise InputError(f"{path}: topology = {spec.topology!r}: no such file ({topo})")
    return spec, topo


def fault_scenario(
    kind: str,
    *,
    node: int | None,
    target: str,
    at: float,
    fault_for: float | None,
    options: dict[str, Any],
    groups: str | None,
    load: dict[str, Any],
    scale: dict[str, Any],
    ledger_clients: int,
    bank: bool,
    max_outage: float | None = None,
) -> ScenarioSpec:
    """The scenario of `clusterbench fault KIND ...`: one fault under a load, with the ledger (and
    the bank) beside it. `options` are the fault's own (rate, cpu_quota, delay, jitter, loss,
    window; None when not given), `scale` tpcc's load scale and mix as given. One InputError line
    per problem, naming the option."""
    if kind not in KINDS:
        raise InputError(f"unknown fault '{kind}'; known: {', '.join(KINDS)}")
    if canonical_test(str(load.get("workload"))) in HTTP_TESTS and int(load.get("rate") or 0) <= 0:
        raise InputError(
            f"--load-rate: -w {load['workload']} sends requests at a fixed rate whatever the latency; give "
            "--load-rate R (requests per second)"
        )
    if load.get("workload") != "tpcc" and ({"customers", "items"} & scale.keys()):
        raise InputError("--customers and --items are tpcc's load scale; leave them out, or use -w tpcc")
    fields: dict[str, Any] = {"kind": kind, "target": f"node:{node}" if node else target, "at": at}
    if node is None and target == "random":  # the kinds with a natural target
        fields["target"] = {"kill-balancer": "balancer", "cut-vrrp": "balancer",
                            "coordinated-crash": "all"}.get(kind, target)  # fmt: skip
    if kind != "rolling-restart":
        fields["for"] = fault_for
    fields.update({k: v for k, v in options.items() if v is not None and v != ""})
    if groups:
        try:
            fields["groups"] = [[int(x) for x in g.split(",")] for g in groups.split("|")]
        except ValueError:
            raise InputError(f"--groups '{groups}' must look like '1|2,3'") from None
    try:
        return ScenarioSpec(
            name=f"fault {kind}",
            load=LoadSpec(**load, **scale),
            verify=VerifySpec(ledger_clients=ledger_clients, bank=bank, max_outage_s=max_outage),
            fault=[FaultSpec.model_validate(fields)],
        )
    except ValidationError as exc:  # one line per problem
        raise InputError("\n".join(validation_messages(exc, ScenarioSpec, "fault"))) from None

"""Is the client the bottleneck? CPU use of each client process and its host, and the rate it
reached against the rate asked for. Pure: readings come from placement.probe_cpu.

A client whose process uses, or waits for, >= 90 % of the CPUs it can use (schedstat: time on a
CPU plus time runnable in the run queue), or whose own machine is >= 90 % busy,
measured itself, not the cluster: its tps is a floor for the cluster's capacity, never its limit.
A client that reached < 95 % of its --rate did not apply the load that was asked for.

The host's busy share is only a finding on a client host of its own (`remote`): the local
provider's client namespaces share this machine's CPUs with the database nodes, so there a busy
host says that the machine is loaded, not that the client is; it is recorded, not flagged.

sysbench's --rate draws arrivals as a Poisson process, so a short run at a low rate falls short of
95 % by chance; a shortfall counts only when it is also more than 3 standard deviations
(sqrt(rate x seconds) events) below the rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from clusterbench.workloads.placement import CpuReading

CPU_SATURATED = 0.90
RATE_SHORTFALL = 0.95

FLAG_CPU = "cpu_saturated"
FLAG_HOST = "host_cpu_busy"
FLAG_RATE = "rate_not_achieved"


@dataclass(frozen=True)
class ClientCpu:
    """CPU use of one client over the time its readings cover."""

    seconds: float  # wall time between the first and the last reading
    readings: int
    proc_cores: float | None  # CPUs the process kept busy on average (1.0 = one core)
    usable: int | None  # CPUs it can use: min(its affinity, the host's cores, its threads)
    host_cores: int | None
    host_busy: float | None  # fraction of the whole host's CPU time that was not idle
    # threads of the process that were runnable but waiting for a CPU, on average (schedstat)
    wait_cores: float | None = None

    @property
    def proc_frac(self) -> float | None:
        """proc_cores as a fraction of what the process can use."""
        if self.proc_cores is None or not self.usable:
            return None
        return self.proc_cores / self.usable

    @property
    def demand_frac(self) -> float | None:
        """CPU the process used plus CPU it waited for, as a fraction of what it can use: a
        process starved by others on a shared host wants the CPU as much as one that has it."""
        if self.proc_cores is None or self.wait_cores is None or not self.usable:
            return None
        return (self.proc_cores + self.wait_cores) / self.usable

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "proc_frac": self.proc_frac, "demand_frac": self.demand_frac}


def cpu_use(readings: Sequence[CpuReading], threads: int) -> ClientCpu | None:
    """From the first to the last reading of one process (readings of another process that got
    the same PID are left out). None with fewer than two readings a second apart."""
    mine = [r for r in readings if r.proc_ticks is not None]
    if mine:
        start = mine[0].start_ticks
        mine = [r for r in mine if r.start_ticks == start]
    host = list(readings)
    if len(host) < 2 or host[-1].wall - host[0].wall < 1.0:
        return None
    dtotal = host[-1].host_total - host[0].host_total
    host_busy = (host[-1].host_busy - host[0].host_busy) / dtotal if dtotal > 0 else None
    proc_cores = usable = wait_cores = None
    if len(mine) >= 2 and mine[-1].wall - mine[0].wall >= 1.0:
        a, b = mine[0], mine[-1]
        proc_cores = (b.proc_ticks - a.proc_ticks) / b.tck / (b.wall - a.wall)  # type: ignore[operator]
        limits = [x for x in (b.allowed, b.cores, threads) if x]
        usable = min(limits) if limits else None
        # schedstat is per thread: when a thread ends, its counts leave the sum, so only the
        # steps between readings where the sums did not drop are used
        waited = span = 0.0
        for x, y in zip(mine, mine[1:], strict=False):
            if None in (x.wait_ns, y.wait_ns, x.run_ns, y.run_ns):
                continue
            if y.wait_ns < x.wait_ns or y.run_ns < x.run_ns:  # type: ignore[operator]
                continue
            waited += (y.wait_ns - x.wait_ns) / 1e9  # type: ignore[operator]
            span += y.wall - x.wall
        if span >= 1.0:
            wait_cores = waited / span
    return ClientCpu(
        seconds=round(host[-1].wall - host[0].wall, 3),
        readings=len(host),
        proc_cores=proc_cores,
        usable=usable,
        host_cores=host[-1].cores,
        host_busy=host_busy,
        wait_cores=wait_cores,
    )


def rate_short(rate_asked: float, rate_achieved: float, seconds: float) -> bool:
    """True when the rate reached is below 95 % of the rate asked and not by Poisson chance."""
    if rate_asked <= 0 or rate_achieved >= RATE_SHORTFALL * rate_asked:
        return False
    if seconds <= 0:
        return True
    sigma = math.sqrt(rate_asked * seconds) / seconds
    return rate_asked - rate_achieved > 3 * sigma


def client_flags(
    cpu: ClientCpu | None,
    rate_asked: float,
    rate_achieved: float | None,
    *,
    seconds: float = 0.0,
    own_host: bool = False,
    queue_overflow: bool = False,
) -> list[str]:
    """The findings for one client. `own_host`: the client host runs nothing of the cluster (see
    the module's note); `queue_overflow`: sysbench gave up because its --rate queue was full."""
    flags = []
    if cpu is not None:
        used = cpu.demand_frac if cpu.demand_frac is not None else cpu.proc_frac
        if used is not None and used >= CPU_SATURATED:
            flags.append(FLAG_CPU)
        if own_host and cpu.host_busy is not None and cpu.host_busy >= CPU_SATURATED:
            flags.append(FLAG_HOST)
    if rate_asked > 0 and (
        queue_overflow or (rate_achieved is not None and rate_short(rate_asked, rate_achieved, seconds))
    ):
        flags.append(FLAG_RATE)
    return flags


def num(x: float) -> str:
    """1000000.0 → '1000000' (not '1e+06'); 12.5 stays 12.5."""
    return f"{x:.0f}" if float(x).is_integer() else f"{x:g}"


def describe(
    flag: str,
    *,
    client: int,
    host: str,
    cpu: ClientCpu | None,
    rate_asked: float,
    rate_achieved: float | None,
) -> str:
    """One line about one flag of one client."""
    who = f"client {client} on {host}"
    if flag == FLAG_CPU and cpu is not None and cpu.proc_frac is not None:
        waited = ""
        if cpu.wait_cores:
            waited = f" and waited for {cpu.wait_cores:.2f} more"
        share = cpu.demand_frac if cpu.demand_frac is not None else cpu.proc_frac
        return (
            f"{who}: sysbench used {cpu.proc_cores:.2f}{waited} of the {cpu.usable} CPU(s) it can use "
            f"({share:.0%}); its tps is a floor for the cluster's capacity"
        )
    if flag == FLAG_HOST and cpu is not None and cpu.host_busy is not None:
        return (
            f"{who}: the client host's {cpu.host_cores} CPU(s) were {cpu.host_busy:.0%} busy; "
            "its tps is a floor for the cluster's capacity"
        )
    if flag == FLAG_RATE and rate_achieved is not None:
        return (
            f"{who}: reached {rate_achieved:.1f} tps of the {num(rate_asked)} asked with --rate "
            f"({rate_achieved / rate_asked:.0%}); less load than asked was applied, and latencies "
            "include the time events queued in sysbench"
        )
    if flag == FLAG_RATE:
        return f"{who}: sysbench's event queue overflowed: --rate {num(rate_asked)} was far out of reach"
    return f"{who}: {flag}"


WARNING = (
    "load not as asked (a client was saturated or its --rate was not reached); "
    "the cluster's limit was not measured"
)

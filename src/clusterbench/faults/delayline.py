"""Link delay, jitter and loss on one node's link, on a kernel with or without netem: the preflight
that picks the mechanism, the apply/heal of one fault over the node's `Machine`, and the RTT
measurement that shows what was achieved beside what was asked. The command lines themselves
are in delayline_plan (pure); docs/delayline.md tells the mechanism and its fidelity."""

from __future__ import annotations

import json
import signal
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from clusterbench.clock import Clock, SystemClock
from clusterbench.errors import ComponentError, PreflightError
from clusterbench.faults import delayline_plan as plan
from clusterbench.faults.delayline_plan import DELAYLINE_BIN, PROBE_PORT, QUEUE, Impairment
from clusterbench.hosts.base import Machine, ProcessRef, terminate

# In a throwaway network namespace, so nothing of the node's is touched: exit 0 when the kernel
# runs a netem qdisc.
_NETEM_PROBE = "ip link set lo up && tc qdisc add dev lo root netem delay 1ms"
# Likewise: iptables takes the `statistic` match and the NFQUEUE target (loss and delay both use
# it), and when the delay line ($1) is to be used, it binds the queue there.
_IPT_PROBE = (
    "iptables -w -A OUTPUT -m statistic --mode random --probability 0.5 -j DROP || exit 3; "
    "iptables -w -A OUTPUT -j NFQUEUE --queue-num {q} --queue-bypass || exit 4; "
    '[ -z "$1" ] || "$1" check --queue {q} >/dev/null'
)


@dataclass(frozen=True)
class Mechanism:
    """The preflight's answer: how the delay and the loss will be done, or why they cannot."""

    delay: str  # "netem", "nfqueue" or "none" (a loss-only fault)
    loss: str  # "iptables-statistic" or "none"
    problem: str | None = None

    def line(self) -> str:
        if self.problem:
            return self.problem
        return f"delay by {self.delay}, loss by {self.loss}"


def _in_scratch_netns(machine: Machine, script: str, *args: str) -> tuple[int, str]:
    res = machine.run(["unshare", "--net", "sh", "-c", script, "sh", *args], check=False, timeout=20)
    return res.returncode, res.tail(1)


def has_netem(machine: Machine) -> bool:
    """The kernel runs netem: tried in a namespace of its own that vanishes with the probe."""
    return _in_scratch_netns(machine, _NETEM_PROBE)[0] == 0


def preflight(
    machine: Machine,
    imp: Impairment,
    peers: Sequence[str] | None,
    *,
    binary: Path = DELAYLINE_BIN,
    queue: int = QUEUE,
    allow_netem: bool = True,
) -> Mechanism:
    """How this machine will do `imp` (netem for the delay where the kernel has it and netem can
    do it; else the NFQUEUE delay line), or one line saying why it cannot. No side effects."""
    loss = "iptables-statistic" if imp.loss_pct else "none"
    peer_list = list(peers) if peers is not None else None
    use_netem = imp.delays and allow_netem and plan.netem_usable(imp, peer_list) and has_netem(machine)
    needs_line = imp.delays and not use_netem
    if needs_line:
        problem = _binary_problem(machine, binary)
        if problem:
            return Mechanism("nfqueue", loss, problem)
    delay = "netem" if use_netem else "nfqueue" if needs_line else "none"
    if not (needs_line or imp.loss_pct):
        return Mechanism(delay, loss)  # netem alone: our rules only count
    code, tail = _in_scratch_netns(machine, _IPT_PROBE.format(q=queue), str(binary) if needs_line else "")
    if code == 3:
        return Mechanism(delay, loss, f"iptables on {machine.name} has no `statistic` match ({tail})")
    if code != 0:
        return Mechanism(
            delay,
            loss,
            f"{machine.name} cannot queue packets (NFQUEUE: {tail or f'exit {code}'}); delay-link and "
            "loss-link need a kernel with nfnetlink_queue and nft_queue (or netem, for a delay)",
        )
    return Mechanism(delay, loss)


def _binary_problem(machine: Machine, binary: Path) -> str | None:
    if not machine.exists(binary):
        return (
            f"the delay line {binary} is not built on {machine.name}; run scripts/build-tools.sh (make setup)"
        )
    res = machine.run([str(binary), "version"], check=False)
    if res.stdout.strip() != plan.DELAYLINE_VERSION:
        return (
            f"{binary} on {machine.name} is '{res.stdout.strip() or res.tail(1)}', not "
            f"'{plan.DELAYLINE_VERSION}'; rebuild it with scripts/build-tools.sh"
        )
    return None


def require(mech: Mechanism) -> Mechanism:
    """The preflight's problem as the one-line error the CLI turns into exit 2."""
    if mech.problem:
        raise PreflightError(mech.problem)
    return mech


@dataclass(frozen=True)
class RttStats:
    """TCP connect round trips in milliseconds (see `measure_rtt`)."""

    n: int
    lost: int
    p5: float | None
    p50: float | None
    p95: float | None
    max: float | None
    mean: float | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def rtt_stats(samples_ms: Sequence[float], lost: int = 0) -> RttStats:
    xs = sorted(samples_ms)
    if not xs:
        return RttStats(0, lost, None, None, None, None, None)

    def q(p: float) -> float:
        # Nearest rank, so p5/p95 are samples that happened.
        return round(xs[min(len(xs) - 1, max(0, int(-(-p * len(xs) // 1)) - 1))], 3)

    return RttStats(len(xs), lost, q(0.05), q(0.5), q(0.95), round(xs[-1], 3), round(statistics.fmean(xs), 3))


def measure_rtt(
    machine: Machine,
    addr: str,
    port: int = PROBE_PORT,
    *,
    count: int = 10,
    interval_ms: float = 20,
    timeout_ms: float = 950,
    binary: Path = DELAYLINE_BIN,
) -> RttStats:
    """Round trips from `machine` (a node's namespace) to addr:port, by timing TCP connects: the
    SYN out and the SYN-ACK or RST back. A closed port (the default, 9) needs no server there.
    The timeout stays under TCP's 1 s SYN retransmission, so a lost SYN counts as lost, not as
    a 1 s round trip."""
    res = machine.run(
        [
            str(binary),
            "probe",
            "--addr",
            f"{addr}:{port}",
            "--count",
            str(count),
            "--interval",
            f"{round(interval_ms * 1000)}us",
            "--timeout",
            f"{round(timeout_ms * 1000)}us",
        ],
        timeout=count * (interval_ms + timeout_ms) / 1000 + 10,
    )
    data = json.loads(res.stdout)
    return rtt_stats([us / 1000 for us in data["rtt_us"]], int(data["lost"]))


class LinkImpairment:
    """One delay-link or loss-link fault on one node's link, inside the node's namespace (its
    `Machine`): the delay line (or netem) and the iptables rules to and from `peers` (None: every
    packet on `dev`). `heal` is idempotent and removes exactly what `apply` added; after a netem
    heal the caller puts the topology's own shaping back (provider.restore_link), since netem
    replaced the root qdisc. The line runs at `nice` (ahead of the servers). With `probe_addr`
    the RTT to that address is measured before, during and after the fault, so the fault's row
    can show achieved beside requested."""

    def __init__(
        self,
        machine: Machine,
        imp: Impairment,
        peers: Sequence[str] | None,
        *,
        workdir: Path,
        mechanism: Mechanism,
        dev: str = "eth0",
        queue: int = QUEUE,
        binary: Path = DELAYLINE_BIN,
        probe_addr: str | None = None,
        probe_port: int = PROBE_PORT,
        probe_count: int = 10,
        seed: int | None = None,
        nice: int = -10,
        clock: Clock | None = None,
    ) -> None:
        self.machine = machine
        self.imp = imp
        self.peers = list(peers) if peers is not None else None
        self.workdir = workdir
        self.mech = mechanism
        self.dev = dev
        self.queue = queue
        self.binary = binary
        self.probe = (probe_addr, probe_port, probe_count) if probe_addr else None
        self.seed = seed
        self.nice = nice
        self.clock = clock or SystemClock()
        self.proc: ProcessRef | None = None
        self.active = False
        self.base: RttStats | None = None

    @property
    def status_path(self) -> Path:
        return self.workdir / "delayline-status.json"

    @property
    def pid_path(self) -> Path:
        return self.workdir / "delayline-pid.json"

    def _rtt(self) -> RttStats | None:
        if self.probe is None:
            return None
        addr, port, count = self.probe
        assert addr is not None
        return measure_rtt(self.machine, addr, port, count=count, binary=self.binary)

    def apply(self) -> dict[str, Any]:
        require(self.mech)
        if self.machine.run(plan.counters_argv(plan.CHAIN_OUT), check=False).ok:
            raise PreflightError(
                f"a link fault is already on {self.machine.name} (chain {plan.CHAIN_OUT}); heal it first"
            )
        self.base = self._rtt()
        self.active = True
        try:
            if self.mech.delay == "nfqueue":
                self._start_line()
            elif self.mech.delay == "netem":
                self.machine.run(plan.netem_argv(self.imp, self.dev))
            queue = self.queue if self.mech.delay == "nfqueue" else None
            for argv in plan.rules(self.peers, self.imp, dev=self.dev, queue=queue):
                self.machine.run(argv)
        except ComponentError:
            self._remove()
            self.active = False
            raise
        detail: dict[str, Any] = {
            "mechanism": self.mech.line(),
            "requested": self.imp.describe(),
            "peers": self.peers if self.peers is not None else "all",
        }
        during = self._rtt()
        if during is not None and self.base is not None:
            detail["rtt_ms"] = {"base": self.base.to_json(), "during": during.to_json()}
            if during.p50 is not None and self.base.p50 is not None:
                detail["added_rtt_ms_p50"] = round(during.p50 - self.base.p50, 3)
        return detail

    def _start_line(self) -> None:
        self.machine.mkdir(self.workdir)
        self.machine.remove(self.status_path)
        argv = plan.delayline_argv(
            self.imp, queue=self.queue, status=self.status_path, binary=self.binary, seed=self.seed
        )
        log = self.workdir / "delayline.log"
        # Ahead of the servers whose packets it holds: on a busy machine a line that waits for
        # CPU releases late, and the delay grows past what was asked. It uses little CPU.
        self.proc = self.machine.spawn(["nice", "-n", str(self.nice), *argv], log=log)
        self.machine.put_file(self.pid_path, json.dumps(self.proc.to_json()))
        deadline = self.clock.now() + 5
        # The status file is first written once the queue is bound.
        while not self.machine.exists(self.status_path):
            if not self.machine.alive(self.proc) or self.clock.now() > deadline:
                tail = (self.machine.read_file(log) or "").strip().splitlines()[-1:]
                raise ComponentError(
                    f"the delay line did not start on {self.machine.name}: {' '.join(tail) or 'no output'}"
                )
            self.clock.sleep(0.02)

    def status(self) -> dict[str, Any] | None:
        """The delay line's own report (counts, hold times in µs), or None."""
        text = self.machine.read_file(self.status_path)
        try:
            return json.loads(text) if text else None
        except ValueError:
            return None

    def _loss(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, chain in (("out", plan.CHAIN_OUT), ("in", plan.CHAIN_IN)):
            res = self.machine.run(plan.counters_argv(chain), check=False)
            seen, dropped = plan.loss_counts(res.stdout) if res.ok else (0, 0)
            pct = round(100 * dropped / seen, 2) if seen else None
            out[name] = {"packets": seen, "dropped": dropped, "loss_pct": pct}
        return out

    def _remove(self) -> dict[str, Any]:
        """Rules, netem and the delay line, each only if there; what the line reported."""
        for argv in plan.unrules(dev=self.dev):
            self.machine.run(argv, check=False)
        if self.mech.delay == "netem":
            self.machine.run(plan.netem_del_argv(self.dev), check=False)
        if self.proc is None:
            return {}
        died = not self.machine.alive(self.proc)
        how = terminate(self.machine, self.proc, self.clock, 5.0)
        self.machine.remove(self.pid_path)
        self.proc = None
        return {"delay_line": "died during the fault" if died else how, "line": self.status()}

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        loss = self._loss() if self.imp.loss_pct else None
        removed = self._remove()
        detail: dict[str, Any] = {"healed": self.machine.name}
        if loss is not None:
            detail["achieved_loss"] = loss
        line = removed.pop("line", None)
        detail.update(removed)
        if line:
            detail["achieved_hold_ms"] = _hold_summary(line)
        after = self._rtt()
        if after is not None:
            detail["rtt_ms_after"] = after.to_json()
        return detail


def _hold_summary(line: dict[str, Any]) -> dict[str, Any]:
    """The delay line's report in milliseconds: each packet's hold (one way), counts, CPU."""
    held = line.get("added_us") or {}
    late = line.get("late_us") or {}
    return {
        "requested_one_way": f"{line.get('delay_us', 0) / 1000:g} +- {line.get('jitter_us', 0) / 1000:g}",
        **{k: round(float(held[k]) / 1000, 3) for k in ("p5", "p50", "p95", "max") if k in held},
        # How far behind its schedule the line released packets: a p95 over a millisecond or two
        # means it was short of CPU or past its packet rate.
        "late_p95": round(float(late.get("p95", 0.0)) / 1000, 3),
        "packets": line.get("released", 0),
        "cpu_s": round(float(line.get("cpu_s", 0.0)), 3),
    }


def leftovers(machine: Machine, workdir: Path) -> list[str]:
    """What a killed run left of a link fault on this node: our chains, a running delay line."""
    out = []
    if machine.run(plan.counters_argv(plan.CHAIN_OUT), check=False).ok:
        out.append(f"iptables chain {plan.CHAIN_OUT}")
    proc = _recorded_line(machine, workdir)
    if proc is not None and machine.alive(proc):
        out.append(f"delay line pid {proc.pid}")
    return out


def heal_leftovers(
    machine: Machine, workdir: Path, *, dev: str = "eth0", clock: Clock | None = None
) -> list[str]:
    """Remove our rules and stop a delay line a killed run left (netem, like tbf, is the
    provider's restore_link). Returns what was done."""
    found = leftovers(machine, workdir)
    for argv in plan.unrules(dev=dev):
        machine.run(argv, check=False)
    proc = _recorded_line(machine, workdir)
    if proc is not None:
        terminate(machine, proc, clock or SystemClock(), 5.0)
        machine.remove(workdir / "delayline-pid.json")
    return [f"removed {what}" for what in found]


def _recorded_line(machine: Machine, workdir: Path) -> ProcessRef | None:
    text = machine.read_file(workdir / "delayline-pid.json")
    try:
        return ProcessRef.from_json(json.loads(text)) if text else None
    except (ValueError, KeyError):
        return None


# SIGUSR1 makes a running delay line write its status file at once (it also does every second).
STATUS_SIGNAL = signal.SIGUSR1

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from clusterbench.errors import ComponentError, PreflightError
from clusterbench.faults.delayline import (
    LinkImpairment,
    Mechanism,
    heal_leftovers,
    leftovers,
    measure_rtt,
    preflight,
    rtt_stats,
)
from clusterbench.faults.delayline_plan import DELAYLINE_VERSION, impairment
from clusterbench.hosts.base import CommandResult, ProcessRef
from tests.unit.fakes import FakeClock, FakeHost, result

BIN = Path("/opt/cb/cb-delayline")
WORK = Path("/w/n2")


class Node(FakeHost):
    """A fake node namespace: files in a dict, the delay line writes its status when spawned,
    iptables knows which of our chains exist, and `unshare` probes answer as told."""

    def __init__(self, *, netem: bool = False, ipt_exit: int = 0, version: str = DELAYLINE_VERSION) -> None:
        super().__init__("cb-t-n2", die_on=(signal.SIGTERM, signal.SIGKILL))
        self.netem = netem
        self.ipt_exit = ipt_exit
        self.version = version
        self.chains: set[str] = set()
        self.fail_on: str | None = None
        self.files[BIN] = "binary"
        self.responder = self.answer

    def run(
        self, argv: list[str], *, input: str | None = None, timeout: float = 60.0, check: bool = True
    ) -> CommandResult:
        res = super().run(argv, input=input, timeout=timeout, check=check)
        if check and not res.ok:  # as LocalHost does
            raise ComponentError(f"`{' '.join(argv)}` failed (exit {res.returncode})")
        return res

    def exists(self, path: Path) -> bool:
        return path in self.files

    def mkdir(self, path: Path, *, owner: str | None = None, mode: int = 0o755) -> None:
        pass

    def remove(self, path: Path) -> None:
        self.files.pop(path, None)

    def spawn(self, argv: list[str], *, log: Path) -> ProcessRef:
        proc = super().spawn(argv, log=log)
        status = Path(argv[argv.index("--status") + 1])
        self.files[status] = json.dumps(
            {
                "delay_us": 25000,
                "jitter_us": 0,
                "released": 40,
                "cpu_s": 0.02,
                "added_us": {"p5": 25100, "p50": 25300, "p95": 26000, "max": 26500},
            }
        )
        return proc

    def answer(self, argv: list[str]) -> CommandResult:
        if argv[0] == "unshare":
            script = argv[4]
            if "netem" in script:
                return result(argv, returncode=0 if self.netem else 2)
            return result(argv, returncode=self.ipt_exit, stderr="Couldn't load target `NFQUEUE'")
        if argv[1:] == ["version"]:
            return result(argv, self.version + "\n")
        if argv[0] == str(BIN) and argv[1] == "probe":
            return result(argv, json.dumps({"rtt_us": [100.0, 120.0, 140.0], "lost": 0}))
        if argv[:2] == ["iptables", "-w"]:
            return self.iptables(argv)
        return result(argv)

    def iptables(self, argv: list[str]) -> CommandResult:
        op, arg = argv[2], argv[3]
        if self.fail_on and self.fail_on in argv and op != "-D":
            return result(argv, returncode=1, stderr="iptables: No chain/target/match by that name.")
        if op == "-N":
            self.chains.add(arg)
        elif op == "-X":
            self.chains.discard(arg)
        elif op == "-S":
            if arg not in self.chains:
                return result(argv, returncode=1, stderr="iptables: No chain/target/match by that name.")
            return result(
                argv,
                f"-N {arg}\n-A {arg} -d 10.0.0.3/32 -c 100 6000\n"
                f"-A {arg} -d 10.0.0.3/32 -m statistic -c 30 1800 -j DROP\n",
            )
        return result(argv)


def test_preflight_picks_the_delay_line_where_the_kernel_has_no_netem() -> None:
    node = Node()
    mech = preflight(node, impairment("50ms"), None, binary=BIN)
    assert mech == Mechanism("nfqueue", "none")
    assert mech.line() == "delay by nfqueue, loss by none"
    probe = next(r for r in node.runs if r[0] == "unshare" and "NFQUEUE" in r[4])
    # In a namespace of its own, with the delay line binding the queue there.
    assert probe[:2] == ["unshare", "--net"] and probe[-1] == str(BIN)


def test_preflight_prefers_netem_for_the_whole_link_and_not_for_one_peer() -> None:
    assert preflight(Node(netem=True), impairment("50ms", loss=1), None, binary=BIN).delay == "netem"
    assert preflight(Node(netem=True), impairment("50ms"), ["10.0.0.3"], binary=BIN).delay == "nfqueue"


def test_preflight_says_in_one_line_what_is_missing() -> None:
    node = Node()
    del node.files[BIN]
    problem = preflight(node, impairment("50ms"), None, binary=BIN).problem
    assert problem is not None and "not built" in problem and "scripts/build-tools.sh" in problem
    stale = preflight(Node(version="cb-delayline 0"), impairment("5ms"), None, binary=BIN).problem
    assert stale is not None and "rebuild" in stale
    no_queue = preflight(Node(ipt_exit=4), impairment("5ms"), None, binary=BIN).problem
    assert no_queue is not None and "NFQUEUE" in no_queue and "\n" not in no_queue
    no_stat = preflight(Node(ipt_exit=3), impairment(loss=5), None, binary=BIN).problem
    assert no_stat is not None and "statistic" in no_stat


def test_loss_alone_needs_the_nfqueue_target_but_not_the_program() -> None:
    node = Node()
    del node.files[BIN]
    mech = preflight(node, impairment(loss=10), None, binary=BIN)
    assert mech == Mechanism("none", "iptables-statistic")
    probe = next(r for r in node.runs if r[0] == "unshare")
    assert "NFQUEUE" in probe[4] and probe[-1] == ""  # the target, and no program to try


def fault(
    node: Node, imp_delay: str | None = "50ms", loss: float | None = None, probe_addr: str | None = None
) -> LinkImpairment:
    imp = impairment(imp_delay, loss=loss)
    mech = preflight(node, imp, ["10.0.0.3"], binary=BIN)
    return LinkImpairment(
        node,
        imp,
        ["10.0.0.3"],
        workdir=WORK,
        mechanism=mech,
        binary=BIN,
        clock=FakeClock(),
        probe_addr=probe_addr,
    )


def test_apply_starts_the_line_before_the_rules_and_heal_undoes_both() -> None:
    node = Node()
    f = fault(node, probe_addr="10.0.0.3")
    node.runs.clear()
    detail = f.apply()
    assert node.spawned[0].argv[:5] == ["nice", "-n", "-10", str(BIN), "run"]
    assert json.loads(node.files[WORK / "delayline-pid.json"])["pid"] == node.spawned[0].proc.pid
    ipt = [r for r in node.runs if r[0] == "iptables"]
    assert ipt[1] == ["iptables", "-w", "-N", "CBDL-OUT"]  # after the check that none is there
    assert detail["mechanism"] == "delay by nfqueue, loss by none"
    assert detail["requested"] == "50 ms added round trip"
    assert detail["peers"] == ["10.0.0.3"]
    assert detail["rtt_ms"]["during"]["p50"] == 0.12
    node.runs.clear()
    healed = f.heal()
    assert [r[2:4] for r in node.runs if r[0] == "iptables"][-2:] == [["-F", "CBDL-IN"], ["-X", "CBDL-IN"]]
    assert node.signal_numbers() == [signal.SIGTERM]
    assert healed["delay_line"] == "stopped"
    assert healed["achieved_hold_ms"]["p50"] == 25.3
    assert healed["achieved_hold_ms"]["requested_one_way"] == "25 +- 0"
    assert "rtt_ms_after" in healed
    assert WORK / "delayline-pid.json" not in node.files
    assert f.heal() == {}


def test_heal_reports_the_loss_each_direction_achieved() -> None:
    node = Node()
    f = fault(node, None, loss=30)
    f.apply()
    assert not node.spawned
    healed = f.heal()
    assert healed["achieved_loss"]["out"] == {"packets": 100, "dropped": 30, "loss_pct": 30.0}
    assert "delay_line" not in healed


def test_a_second_link_fault_on_the_node_is_refused() -> None:
    node = Node()
    node.chains.add("CBDL-OUT")
    with pytest.raises(PreflightError, match="already on cb-t-n2"):
        fault(node).apply()
    assert not node.spawned


def test_a_rule_that_fails_takes_back_what_was_done() -> None:
    node = Node()
    node.fail_on = "INPUT"  # the last jump
    with pytest.raises(ComponentError, match="failed"):
        fault(node).apply()
    assert node.chains == set()
    assert not node.live  # the delay line was stopped


def test_a_line_that_dies_at_once_is_one_line_with_its_log() -> None:
    node = Node()

    def spawn(argv: list[str], *, log: Path) -> ProcessRef:
        node.files[log] = "cb-delayline: cannot bind NFQUEUE queue 7711: device or resource busy\n"
        return ProcessRef(1, 1)  # never alive

    node.spawn = spawn  # type: ignore[method-assign]
    with pytest.raises(ComponentError, match="did not start on cb-t-n2: cb-delayline: cannot bind"):
        fault(node).apply()


def test_leftovers_find_and_heal_our_chain_and_line() -> None:
    node = Node()
    f = fault(node)
    f.apply()
    assert leftovers(node, WORK) == ["iptables chain CBDL-OUT", f"delay line pid {node.spawned[0].proc.pid}"]
    done = heal_leftovers(node, WORK, clock=FakeClock())
    assert done == ["removed iptables chain CBDL-OUT", f"removed delay line pid {node.spawned[0].proc.pid}"]
    assert leftovers(node, WORK) == []


def test_measure_rtt_times_connects_to_a_closed_port() -> None:
    node = Node()
    stats = measure_rtt(node, "10.0.0.3", count=3, binary=BIN)
    assert node.runs[-1][:6] == [str(BIN), "probe", "--addr", "10.0.0.3:9", "--count", "3"]
    assert (stats.n, stats.p50, stats.max, stats.lost) == (3, 0.12, 0.14, 0)


def test_rtt_stats_use_nearest_ranks() -> None:
    s = rtt_stats([float(x) for x in range(1, 101)], lost=2)
    assert (s.p5, s.p50, s.p95, s.max, s.lost) == (5.0, 50.0, 95.0, 100.0, 2)
    assert rtt_stats([]).p50 is None

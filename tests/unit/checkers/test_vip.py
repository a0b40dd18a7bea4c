"""The balancers' split-brain checker, with its negative control (two holders at once), the fault
that cuts VRRP (pure rules, refused without a pair) and `status` exiting 1 during a split."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from clusterbench.checkers.verdict import Result
from clusterbench.checkers.vip import VipSample, check_vip
from clusterbench.errors import PreflightError
from clusterbench.faults.actions import CutVrrp, vrrp_cut_rules, vrrp_heal_rules
from clusterbench.faults.spec import FaultSpec, plan
from clusterbench.spec.topology import Topology


def s(t: float, *holders: str, answered: bool = True) -> VipSample:
    return VipSample(t, 1000 + t, tuple(holders), answered)


def test_one_holder_throughout_passes_with_the_move() -> None:
    v = check_vip([s(0, "lb1"), s(0.5, "lb1"), s(1.0), s(1.5, "lb2"), s(2.0, "lb2")], end=2.2)
    assert v.result is Result.PASS
    assert v.summary == "never held by two balancers (5 samples; lb1 -> none -> lb2; held by none for 0.5 s)"
    assert v.evidence["held_by_two_s"] == 0


def test_two_holders_at_once_fail_with_the_duration() -> None:
    samples = [s(0, "lb1"), s(4.0, "lb1"), s(4.5, "lb1", "lb2"), s(5.0, "lb1", "lb2"), s(9.5, "lb1", "lb2")]
    samples += [s(10.0, "lb1"), s(12.0, "lb1")]
    v = check_vip(samples, end=12.0)
    assert v.result is Result.FAIL
    assert v.summary == (
        "the VIP was held by lb1 and lb2 at once for 5.5 s (from 4.5 s to 10.0 s, 1 period(s)): "
        "a split brain of the balancers"
    )
    assert v.evidence["held_by_two"] == [{"from": 4.5, "to": 10.0, "s": 5.5}]
    assert [c["holders"] for c in v.evidence["changes"]] == [["lb1"], ["lb1", "lb2"], ["lb1"]]


def test_a_split_until_the_end_lasts_until_sampling_stopped() -> None:
    v = check_vip([s(0, "lb1"), s(1, "lb1", "lb2")], end=7.0)
    assert v.result is Result.FAIL and v.evidence["held_by_two_s"] == 6.0


def test_no_answer_is_unknown() -> None:
    assert check_vip([]).result is Result.UNKNOWN
    assert check_vip([s(0, answered=False)]).result is Result.UNKNOWN


def test_unanswered_samples_do_not_end_a_split() -> None:
    v = check_vip([s(0, "lb1", "lb2"), s(1, answered=False), s(2, "lb1")], end=3)
    assert v.result is Result.FAIL and v.evidence["held_by_two_s"] == 2.0


# ---- the fault ------------------------------------------------------------------------------------


def test_vrrp_cut_rules_drop_protocol_112_to_and_from_the_peer_only() -> None:
    assert vrrp_cut_rules("198.18.20.4") == [
        ["iptables", "-w", "-N", "CBVRRP"],
        ["iptables", "-w", "-I", "INPUT", "-j", "CBVRRP"],
        ["iptables", "-w", "-I", "OUTPUT", "-j", "CBVRRP"],
        ["iptables", "-w", "-A", "CBVRRP", "-p", "112", "-s", "198.18.20.4", "-j", "DROP"],
        ["iptables", "-w", "-A", "CBVRRP", "-p", "112", "-d", "198.18.20.4", "-j", "DROP"],
    ]
    assert vrrp_heal_rules()[-1] == ["iptables", "-w", "-X", "CBVRRP"]


def test_cut_vrrp_is_planned_for_the_pair_and_refused_without_one() -> None:
    [f] = plan(
        [FaultSpec.model_validate({"kind": "cut-vrrp", "target": "balancer", "at": 4, "for": 10})], 3, 1, 30
    )
    assert (f.label(), f.nodes, f.until) == ("cut-vrrp lb1|lb2", (), 14)
    with pytest.raises(ValueError, match="target must be balancer"):
        plan(
            [FaultSpec.model_validate({"kind": "cut-vrrp", "target": "node:1", "at": 4, "for": 10})], 3, 1, 30
        )
    single = SimpleNamespace(topology=Topology())
    with pytest.raises(PreflightError, match=r"cut-vrrp needs a keepalived pair .*\[balancer\] count = 2"):
        CutVrrp(single, f)  # type: ignore[arg-type]
    pair = SimpleNamespace(topology=Topology.model_validate({"balancer": {"count": 2}}))
    assert CutVrrp(pair, f).active is False  # type: ignore[arg-type]


# ---- status exits 1 while two hold the VIP ------------------------------------------------------


@pytest.fixture
def vip_home(cli_home: Path, lab_state: Callable[[dict[str, Any]], Path]) -> Path:
    lab_state({"balancer": {"count": 2}})
    return cli_home


@pytest.mark.parametrize(("holders", "rc"), [(["lb1"], 0), (["lb1", "lb2"], 1), ([], 0)])
def test_status_exits_1_while_two_balancers_hold_the_vip(
    holders: list[str],
    rc: int,
    vip_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from clusterbench.cli.main import main
    from clusterbench.cluster import Cluster, ClusterStatus
    from clusterbench.faults import leftovers

    st = ClusterStatus("lab", [], None, False, vip="198.18.0.3:3306", vip_holders=holders)
    monkeypatch.setattr(Cluster, "status", lambda self: st)
    monkeypatch.setattr(leftovers, "find", lambda cluster: [])
    assert main(["status", "-n", "lab"]) == rc
    out, err = capsys.readouterr()
    if rc:
        assert "VIP 198.18.0.3:3306 held by lb1 and lb2 at once" in out
        assert "the VIP is held by lb1 and lb2 at once" in err
    assert main(["status", "-n", "lab", "--json"]) == rc
    capsys.readouterr()


def test_heal_of_a_left_vrrp_cut_removes_both_chains_once_and_waits_for_one_holder() -> None:
    """`clusterbench heal` after a killed cut-vrrp drill: the chains go on both balancers, and it
    returns once one balancer holds the VIP (a `status` right after must not see two)."""
    from clusterbench.faults import leftovers
    from tests.unit.fakes import FakeClock, FakeHost

    topo = Topology.model_validate({"cluster": {"name": "lab"}, "balancer": {"count": 2, "advert_int": 2}})
    hosts = {r: FakeHost(r) for r in ("lb1", "lb2")}
    waited: list[float] = []

    def wait_vip(timeout: float, **kw: object) -> str:
        assert all(h.runs for h in hosts.values()), "waited before removing the chains"
        waited.append(timeout)
        return "lb1"

    cluster = SimpleNamespace(topology=topo, host=hosts.__getitem__, clock=FakeClock(), wait_vip=wait_vip)
    left = [leftovers.Leftover(0, "vrrp-cut", "lb1"), leftovers.Leftover(0, "vrrp-cut", "lb2")]
    done = leftovers.heal(cluster, left)  # type: ignore[arg-type]
    assert done == [
        "healed lb1: iptables chain CBVRRP drops VRRP to its peer (cut-vrrp)",
        "healed lb2: iptables chain CBVRRP drops VRRP to its peer (cut-vrrp)",
        "the VIP is on lb1 alone 0.0 s later",
    ]
    assert waited == [3 * 2 + 10]
    for h in hosts.values():
        assert h.runs == [["iptables", "-w", "-S", "CBVRRP"], *vrrp_heal_rules()]

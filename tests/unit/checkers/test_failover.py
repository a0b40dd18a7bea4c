"""checkers/failover.py: failover times from monitor samples and prober writes (pure)."""

from __future__ import annotations

from clusterbench.checkers.failover import FailoverFault, failover_figures
from clusterbench.checkers.split_brain import MonitorSample
from clusterbench.history.ops import Op, Outcome

ADDR = {"n1": "198.18.100.11", "n2": "198.18.100.12", "n3": "198.18.100.13"}


def sample(t: float, node: str, *, size: int, online: list[str], role: str = "SECONDARY",
           writable: bool = False, quorum: bool = True) -> MonitorSample:  # fmt: skip
    return MonitorSample(
        t, 1000 + t, node, True, "Primary" if quorum else "non-Primary", size, 7, "g", "ONLINE", True, 10,
        ",".join(ADDR[n] for n in online), writable=writable, role=role,
    )  # fmt: skip


def probe(t0: float, t1: float, ok: bool) -> Op:
    return Op("probe", 1, "balancer", "lb", "probe", None, None, t0, t1, t0, t1,
              Outcome.OK if ok else Outcome.FAIL, None if ok else 2013)  # fmt: skip


def kill_primary_history() -> list[MonitorSample]:
    """Group Replication: n1 (the primary) killed at 10 s; suspected at +5 s, expelled and n2
    elected at +21 s."""
    out = []
    for k in range(0, 80):
        t = k * 0.5
        if t < 10:
            out.append(sample(t, "n1", size=3, online=["n1", "n2", "n3"], role="PRIMARY", writable=True))
        for n in ("n2", "n3"):
            if t < 15:
                out.append(sample(t, n, size=3, online=["n1", "n2", "n3"]))
            elif t < 31:
                out.append(sample(t, n, size=3, online=["n2", "n3"]))
            else:
                role = "PRIMARY" if n == "n2" else "SECONDARY"
                out.append(sample(t, n, size=2, online=["n2", "n3"], role=role, writable=n == "n2"))
    return out


def test_kill_of_the_primary_gives_suspicion_expel_election_and_writes() -> None:
    ops = [probe(9.0, 9.1, True), probe(10.1, 13.1, False), probe(31.0, 31.2, False), probe(31.5, 31.7, True)]
    fault = FailoverFault("kill-node n1", "kill-node", 10.0, 40.0, ("n1",), (ADDR["n1"],))
    (f,) = failover_figures(kill_primary_history(), [fault], ops, "balancer")
    assert f.victim_was_primary
    assert (f.suspected_after, f.view_shrunk_after, f.new_primary_after, f.primary) == (5.0, 21.0, 21.0, "n2")
    assert f.writes_ok_after == 21.7
    assert f.line() == (
        "kill-node n1: new primary n2 after 21.0 s; view without n1 after 21.0 s; "
        "writes through balancer again after 21.7 s"
    )


def test_a_secondary_lost_is_no_primary_failover_and_other_kinds_are_skipped() -> None:
    kill3 = FailoverFault("kill-node n3", "kill-node", 10.0, 40.0, ("n3",), (ADDR["n3"],))
    throttle = FailoverFault("throttle-link n2", "throttle-link", 1.0, 5.0, ("n2",), (ADDR["n2"],))
    figs = failover_figures(kill_primary_history(), [throttle, kill3], [probe(11, 11.1, True)], "balancer")
    assert len(figs) == 1 and not figs[0].victim_was_primary and figs[0].new_primary_after is None
    assert figs[0].writes_ok_after == 0.0
    assert figs[0].line().endswith("writes through balancer never failed")

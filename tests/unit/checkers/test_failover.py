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


def gone(t: float, node: str) -> MonitorSample:
    return MonitorSample(t, 1000 + t, node, False)


def two_faults_history() -> list[MonitorSample]:
    """Galera, 1 s samples. n3 killed at 10 s, n2 isolated at 20 s (the next fault)."""
    out = []
    for t in range(0, 10):
        out += [sample(t, n, size=3, online=["n1", "n2", "n3"]) for n in ("n1", "n2", "n3")]
    out += [
        # what must not count for the kill of n3:
        sample(11, "n3", size=1, online=["n3"]),  # the victim's own view
        MonitorSample(11.0, 1011.0, "n1", True, "Primary", 3, 7, "g", "Synced", True, 10, ""),  # no members
        sample(12, "n2", size=1, online=["n2"], quorum=False),  # a non-Primary view
        gone(12, "n3"),
        # what counts: n3 out of n1's view at 13 s (size still 3), the view of two at 14.5 s
        sample(13, "n1", size=3, online=["n1", "n2"]),
        sample(14.5, "n1", size=2, online=["n1", "n2"]),
        sample(19, "n2", size=2, online=["n1", "n2"]),
        # the isolation of n2: n1 alone at 25 s
        sample(25, "n1", size=1, online=["n1"]),
    ]
    return out


def test_each_fault_reads_only_survivors_in_a_primary_view_with_members_until_the_next_fault() -> None:
    kill = FailoverFault("kill-node n3", "kill-node", 10.0, 20.0, ("n3",), (ADDR["n3"],))
    iso = FailoverFault("isolate-node n2", "isolate-node", 20.0, 30.0, ("n2",), (ADDR["n2"],))
    ops = [
        probe(10.5, 11.0, False), probe(12.0, 12.1, True),  # the kill: writes back 2.1 s after it
        # a failure on another path does not count
        Op("probe", 1, "node:1", "n1", "probe", None, None, 15, 16, 15, 16, Outcome.FAIL, 2013),
        probe(20.5, 21.0, False), probe(26.0, 26.2, True),  # the isolation: 6.2 s
    ]  # fmt: skip
    a, b = failover_figures(two_faults_history(), [iso, kill], ops, "balancer")
    figures = [(f.fault, f.suspected_after, f.view_shrunk_after, f.writes_ok_after) for f in (a, b)]
    assert figures == [("isolate-node n2", 5.0, 5.0, 6.2), ("kill-node n3", 3.0, 4.5, 2.1)]
    assert not a.victim_was_primary and b.new_primary_after is None and b.primary is None
    assert b.line() == "kill-node n3: view without n3 after 4.5 s; writes through balancer again after 2.1 s"


def test_a_primary_lost_with_no_election_says_so_and_a_missing_figure_is_a_dash() -> None:
    everyone = ["n1", "n2", "n3"]
    samples = [sample(t, "n1", size=3, online=everyone, role="PRIMARY", writable=True) for t in range(5)]
    samples += [sample(t, n, size=3, online=everyone) for t in range(5) for n in ("n2", "n3")]
    # after the kill, n2 and n3 are still in a view of three listing n1, and never elect
    samples += [sample(t, n, size=3, online=everyone) for t in range(6, 12) for n in ("n2", "n3")]
    fault = FailoverFault("kill-node n1", "kill-node", 5.0, 12.0, ("n1",), (ADDR["n1"],))
    (f,) = failover_figures(samples, [fault], [], None)
    assert f.victim_was_primary
    assert (f.suspected_after, f.view_shrunk_after, f.new_primary_after) == (None, None, None)
    assert f.writes_ok_after is None and f.writes_path is None
    assert f.line() == "kill-node n1: no new primary; view without n1 after -"

"""Automatic repetitions: the CI rule (median by order statistics, mean by Student's t), and the
runner adding repetitions to a point until it converges or reaches the cap, with a fake trial
that stores scripted values (no cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterbench.errors import InputError
from clusterbench.experiment.convergence import converge, needs_more, trial_value
from clusterbench.experiment.load import experiment_from_data
from clusterbench.experiment.planner import TrialSpec, expand
from clusterbench.experiment.report import build_experiment_report, repetitions_fact
from clusterbench.experiment.results import point_stats
from clusterbench.experiment.runner import ExperimentRunner
from clusterbench.spec.topology import parse_toml
from clusterbench.store import Store
from clusterbench.workloads import SysbenchRunner
from clusterbench.workloads.parse import Summary


def test_median_needs_six_values_for_a_95_percent_interval() -> None:
    tight = [100.0, 101.0, 99.0, 100.5, 99.5]
    five = converge(tight)
    assert (five.n, five.converged, five.coverage) == (5, False, 0.9375)  # [min, max] only
    six = converge([*tight, 100.2])
    # n = 6: the interval is [x(1), x(6)] with coverage 1 - 2/64 = 96.9 %
    assert six.converged and six.coverage == pytest.approx(0.96875)
    assert (six.low, six.high) == (99.0, 101.0) and six.half_width == pytest.approx(1.1 / 100.1)


def test_median_that_spreads_more_than_five_percent_does_not_converge() -> None:
    c = converge([100.0, 100.0, 100.0, 100.0, 100.0, 107.0])
    assert not c.converged and c.half_width == pytest.approx(0.07)
    assert c.text() == "not converged after 6 repetition(s) (median ±7.0 %)"
    assert needs_more(c, 10) and not needs_more(c, 6)


def test_mean_uses_students_t() -> None:
    c = converge([100.0, 102.0, 98.0], statistic="mean")
    # mean 100, s = 2, t(0.975, 2) = 4.303: 100 ± 4.97
    assert c.center == pytest.approx(100.0)
    assert c.high - c.center == pytest.approx(4.303 * 2 / 3**0.5, rel=1e-3)  # type: ignore[operator]
    assert c.converged
    assert not converge([100.0, 110.0, 90.0], statistic="mean").converged
    assert not converge([100.0], statistic="mean").converged  # one value: no interval
    assert converge([5.0, 5.0], statistic="mean").converged
    assert not converge([]).converged


def test_the_value_judged_is_latency_for_access_tests_else_tps() -> None:
    s = {"tps": 2000.0, "lat_avg": 0.5}
    assert trial_value("access_pk", s) == 0.5
    assert trial_value("oltp_read_only", s) == 2000.0
    assert trial_value("oltp_read_only", None) is None


AUTO = """
[experiment]
name = "auto"
repetitions = "auto"
min_repetitions = 2
max_repetitions = 8
{extra}
[topology.cluster]
name = "cbexp"
nodes = 3
[workload]
duration = 3
[factors]
threads = [1, 2]
"""


def exp(extra: str = "") -> Any:
    return experiment_from_data(parse_toml(AUTO.format(extra=extra), "x.toml"), "x.toml")


def summary(tps: float) -> Summary:
    return Summary(duration=3.0, threads=1, events=int(tps * 3), reads=0, writes=0, other=0, errors=0,
                   reconnects=0, lat_min_ms=1.0, lat_avg_ms=1.0, lat_max_ms=1.0, percentile=95,
                   lat_pct_ms=1.0)  # fmt: skip


class ScriptedRunner(ExperimentRunner):
    """Runs no cluster: each trial stores the next tps of its point's script."""

    def __init__(self, plan: Any, store: Store, scripts: dict[int, list[float]]) -> None:
        super().__init__(plan, store, SysbenchRunner(), home=Path("/nonexistent"), facts=dict)
        self.scripts = {k: list(v) for k, v in scripts.items()}
        self.ran: list[tuple[int, int]] = []
        self.ups = 0
        self.lines: list[str] = []
        self.lis.phase = self.lines.append

    def _bring_up(self, t: TrialSpec) -> None:
        self.ups += 1
        self.cluster = object()  # type: ignore[assignment]

    def _teardown(self) -> None:
        self.cluster = None

    def _trial(self, run_id: int, seq: int, t: TrialSpec) -> str:
        self.ran.append((t.threads, t.rep))
        params = {**t.describe(), "key": t.key, "point_key": t.point_key, "point_label": t.point_label,
                  "index": t.index}  # fmt: skip
        tid = self.store.add_trial(run_id, seq, t.test, params)
        self.store.add_summary(tid, summary(self.scripts[t.threads].pop(0)))
        self.store.finish_trial(tid, "completed")
        return "completed"


STEADY = [1000.0, 1001.0, 999.0, 1000.5, 999.5, 1000.2, 1000.1, 999.9]
NOISY = [1000.0, 1300.0, 800.0, 1200.0, 900.0, 1250.0, 850.0, 1100.0]


def test_blocked_auto_runs_each_point_until_it_converges_or_hits_the_cap(tmp_path: Path) -> None:
    plan = expand(exp())
    assert [(t.threads, t.rep) for t in plan.trials] == [(1, 1), (1, 2), (2, 1), (2, 2)]  # min planned
    with Store.open(tmp_path / "r.db") as st:
        r = ScriptedRunner(plan, st, {1: STEADY, 2: NOISY})
        out = r.run()
        # threads=1 converges at 6 (the first n with a 95 % median CI), threads=2 stops at the cap
        assert r.ran == [(1, k) for k in range(1, 7)] + [(2, k) for k in range(1, 9)]
        assert out.ran == 14 and out.status == "completed" and r.ups == 1
        assert "threads=1: converged after 6 repetition(s) (median ±0.1 %) of tps" in r.lines
        assert any(x.startswith("threads=2: not converged after 8 repetition(s) (median ±") for x in r.lines)
        pts = point_stats(st, out.run_id)
        got = [(p.n, p.convergence.converged if p.convergence else None) for p in pts]
        assert got == [(6, True), (8, False)]
        md = build_experiment_report(st, out.run_id)
        facts = dict(md.facts)
        assert facts["repetitions"].startswith("auto: 2-8 per point, until the 95 % CI of the median")
        assert facts["repetitions"].endswith("; 1 of 2 point(s) converged, blocked")
        # resuming the finished run adds nothing
        again = ScriptedRunner(plan, st, {1: [], 2: []})
        assert again.run().ran == 0 and again.ups == 0


def test_interleaved_auto_adds_rounds_over_the_unconverged_points(tmp_path: Path) -> None:
    plan = expand(exp('repetition_order = "interleaved"\nci_statistic = "mean"'))
    with Store.open(tmp_path / "r.db") as st:
        r = ScriptedRunner(plan, st, {1: STEADY, 2: NOISY})
        r.run()
    # mean: threads=1 converges after the 2 planned ones; threads=2 gets a round each up to 8
    assert r.ran[:4] == [(1, 1), (2, 1), (1, 2), (2, 2)]
    assert r.ran[4:] == [(2, k) for k in range(3, 9)]


def test_repetitions_fact_without_auto_is_the_number() -> None:
    assert repetitions_fact({"repetitions": 3, "repetition_order": "blocked"}, []) == "3 per point, blocked"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("max_repetitions = 8", "max_repetitions = 0",
         "x.toml: experiment.max_repetitions: Input should be greater than or equal to 1 (got 0)"),
        ("max_repetitions = 8", 'max_repetitions = 8\nci_statistic = "mode"',
         "x.toml: experiment.ci_statistic: Input should be 'median' or 'mean' (got 'mode')"),
        ("min_repetitions = 2", "min_repetitions = 9",
         "x.toml: experiment: min_repetitions 9 is more than max_repetitions 8; lower min_repetitions"),
    ],
)  # fmt: skip
def test_bad_auto_settings_are_refused_in_one_line(old: str, new: str, message: str) -> None:
    with pytest.raises(InputError) as ei:
        experiment_from_data(parse_toml(AUTO.format(extra="").replace(old, new), "x.toml"), "x.toml")
    assert message in str(ei.value) and len(str(ei.value).splitlines()) == 1


def test_a_number_with_max_repetitions_is_refused() -> None:
    text = AUTO.format(extra="").replace('repetitions = "auto"\nmin_repetitions = 2\n', "repetitions = 3\n")
    with pytest.raises(InputError, match='max_repetitions needs repetitions = "auto"; set that or remove'):
        experiment_from_data(parse_toml(text, "x.toml"), "x.toml")


def test_the_socket_interconnect_connects_through_the_nodes_socket_from_its_host(tmp_path: Path) -> None:
    from clusterbench.spec.endpoint import Address, Endpoint

    class Node:
        socket = Path("/var/lib/cb/clusters/x/n2/mysqld.sock")
        host = object()

    class FakeCluster:
        def endpoint(self, target: str, database: str = "sbtest") -> Endpoint:
            return Endpoint(name=target, addresses=(Address(host="198.18.0.12"),), user="u", password="p",
                            database=database)  # fmt: skip

        def node(self, i: int) -> Node:
            assert i == 2
            return Node()

    text = AUTO.format(extra="").replace('"auto"\nmin_repetitions = 2\nmax_repetitions = 8', "1")
    text = text.replace("threads = [1, 2]", 'interconnect = ["socket", "tcp"]').replace(
        "duration = 3", 'duration = 3\ntarget = "node:2"'
    )
    plan = expand(experiment_from_data(parse_toml(text, "x.toml"), "x.toml"))
    with Store.open(tmp_path / "r.db") as st:
        r = ScriptedRunner(plan, st, {})
        r.cluster = FakeCluster()  # type: ignore[assignment]
        r.client_hosts = ["client-ns"]
        sock, tcp = plan.trials
        ep = r._endpoint(sock)
        assert (ep.name, ep.socket, r._client_hosts(sock)) == ("node:2 socket", Node.socket, [Node.host])
        ep = r._endpoint(tcp)
        assert (ep.name, ep.socket, ep.addresses[0].host, r._client_hosts(tcp)) == (
            "node:2", None, "198.18.0.12", ["client-ns"])  # fmt: skip

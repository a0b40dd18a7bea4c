"""HDR histograms of verification clients: merged percentiles, not averaged ones."""

from __future__ import annotations

from typing import Any

import pytest

from clusterbench.verify.latency import client_histograms, merge, workload_latency


def op(workload: str, client: int, seconds: float, outcome: str = "ok") -> dict[str, Any]:
    return {
        "workload": workload,
        "client": client,
        "t_start": 10.0,
        "t_end": 10.0 + seconds,
        "outcome": outcome,
    }


# client 0: 100 ops at 1 ms; client 1: 90 at 10 ms and 10 at 300 ms; plus failures that do not count
OPS = (
    [op("ledger", 0, 0.001) for _ in range(100)]
    + [op("ledger", 1, 0.010) for _ in range(90)]
    + [op("ledger", 1, 0.300) for _ in range(10)]
    + [op("ledger", 1, 3.0, "unknown"), op("ledger", 0, 0.5, "fail")]
    + [op("probe", 0, 0.002) for _ in range(10)]
)


def test_merged_hdr_percentiles_and_the_wrong_average() -> None:
    hists = client_histograms(OPS)
    assert sorted(hists) == [("ledger", 0), ("ledger", 1), ("probe", 0)]
    total = merge([hists[("ledger", 0)], hists[("ledger", 1)]])
    assert total.get_total_count() == 200
    # HDR keeps 3 significant digits: values come back within 0.1 %
    assert total.get_value_at_percentile(50) / 1000 == pytest.approx(1.0, rel=1e-3)
    assert total.get_value_at_percentile(95) / 1000 == pytest.approx(10.0, rel=1e-3)
    assert total.get_value_at_percentile(99) / 1000 == pytest.approx(300.0, rel=1e-3)
    p95s = [hists[("ledger", c)].get_value_at_percentile(95) / 1000 for c in (0, 1)]
    assert p95s == [pytest.approx(1.0, rel=1e-3), pytest.approx(300.0, rel=1e-3)]
    assert sum(p95s) / 2 == pytest.approx(150.5, rel=1e-3)  # averaging: 15 times the true p95


def test_workload_latency_rows() -> None:
    ledger, probe = workload_latency(OPS)
    assert (ledger.workload, ledger.clients, ledger.ops, ledger.ok) == ("ledger", 2, 202, 200)
    assert ledger.p95_ms == pytest.approx(10.0, rel=1e-3) and ledger.p50_ms == pytest.approx(1.0, rel=1e-3)
    assert ledger.max_ms == pytest.approx(300.0, rel=1e-3)
    assert ledger.client_p95_ms == {0: pytest.approx(1.0, rel=1e-3), 1: pytest.approx(300.0, rel=1e-3)}
    assert (probe.clients, probe.ops, probe.ok) == (1, 10, 10)
    none = workload_latency([op("bank", 0, 1.0, "fail")])
    assert none[0].ok == 0 and none[0].p95_ms is None and none[0].client_p95_ms == {}

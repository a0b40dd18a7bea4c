"""clock-skew's pure parts: the offsets and drifts it takes, the environment a server starts
with, the schedule's checks, and the refusal on a cluster without libfaketime."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from clusterbench.engines.fakeclock import LIBFAKETIME, clock_env, offset_text, parse_drift, parse_offset
from clusterbench.errors import PreflightError
from clusterbench.faults.clock import ClockSkew
from clusterbench.faults.spec import FaultSpec, plan
from clusterbench.spec.topology import Topology


def test_offsets_and_drifts_are_read_in_seconds() -> None:
    assert [parse_offset(t) for t in ("+30s", "-2m", "+1.5h", "250ms", "-90", "+0")] == [
        30.0, -120.0, 5400.0, 0.25, -90.0, 0.0,
    ]  # fmt: skip
    assert parse_offset("soon") is None and parse_offset("") is None
    assert parse_drift("+10ms/s") == pytest.approx(0.01)
    assert parse_drift("-1s/m") == pytest.approx(-1 / 60)
    assert parse_drift("+10ms") is None and parse_drift("+10ms/day") is None
    assert offset_text(30) == "+30.000000\n" and offset_text(-0.25) == "-0.250000\n"


def test_a_server_starts_with_libfaketime_reading_its_own_file_and_real_monotonic_clocks() -> None:
    env = clock_env(Path("/cb/clock"))
    assert env[0] == "env" and f"LD_PRELOAD={LIBFAKETIME}" in env
    assert "FAKETIME_TIMESTAMP_FILE=/cb/clock" in env and "FAKETIME_DONT_FAKE_MONOTONIC=1" in env


def test_the_schedule_takes_an_offset_or_a_drift_and_refuses_neither() -> None:
    [f] = plan([FaultSpec.model_validate({"kind": "clock-skew", "target": "node:2", "at": 1, "for": 5,
                                          "offset": "+30s", "drift": "+10ms/s"})], 3, 1, 10)  # fmt: skip
    assert f.params["offset_s"] == 30.0 and f.params["drift_s_per_s"] == pytest.approx(0.01)
    with pytest.raises(ValueError) as info:
        plan([FaultSpec.model_validate({"kind": "clock-skew", "target": "node:2", "at": 1, "for": 5}),
              FaultSpec.model_validate({"kind": "kill-node", "target": "node:3", "at": 1, "for": 5,
                                        "offset": "+1s"})], 3, 1, 10)  # fmt: skip
    assert str(info.value).splitlines() == [
        'fault 1 (clock-skew): offset or drift is required, e.g. offset = "+30s" or drift = "+10ms/s"',
        "fault 2 (kill-node): offset only applies to clock-skew",
    ]
    with pytest.raises(ValueError, match="is not a clock offset like"):
        FaultSpec.model_validate({"kind": "clock-skew", "at": 1, "for": 5, "offset": "later"})
    with pytest.raises(ValueError, match="is not a clock drift like"):
        FaultSpec.model_validate({"kind": "clock-skew", "at": 1, "for": 5, "drift": "+10ms"})


def test_refused_in_one_line_on_a_cluster_started_without_libfaketime() -> None:
    [f] = plan([FaultSpec.model_validate({"kind": "clock-skew", "target": "node:1", "at": 1, "for": 5,
                                          "offset": "+30s"})], 3, 1, 10)  # fmt: skip
    cluster = SimpleNamespace(topology=Topology.model_validate({}))
    with pytest.raises(PreflightError) as info:
        ClockSkew(cluster, f)  # type: ignore[arg-type]
    assert str(info.value) == (
        "clock-skew shifts the wall clock of servers started under libfaketime; set "
        'cluster.clock = "faketime" in the topology and bring the cluster up again'
    )
    on = SimpleNamespace(topology=Topology.model_validate({"cluster": {"clock": "faketime"}}))
    assert ClockSkew(on, f).offset == 30.0  # type: ignore[arg-type]

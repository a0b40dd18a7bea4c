"""Analysis of designed experiments on synthetic data with known effects."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from clusterbench.analysis.doe import analyze, strongest
from clusterbench.experiment.design import Coding, DesignSpec, expand_design
from clusterbench.experiment.spec import factor_kinds

KINDS = factor_kinds()


def codings(levels: dict[str, Any]) -> dict[str, Coding]:
    return {k: Coding(k, KINDS[k], tuple(v)) for k, v in levels.items()}


def simulate(levels: Any, spec: Any, truth: Any, reps: int = 2, sd: float = 1.0, seed: int = 1) -> Any:
    res = expand_design(levels, spec, KINDS, "t")
    cod = codings(levels)
    rng = np.random.default_rng(seed)
    pts, y = [], []
    for p in res.points:
        d = dict(p)
        x = {k: cod[k].code(v) for k, v in d.items()}
        for _ in range(reps * res.copies[p]):
            pts.append(d)
            y.append(truth(x) + rng.normal(0, sd))
    return pts, y, cod, res


def test_fractional_factorial_recovers_main_effects_and_an_interaction() -> None:
    levels = {"nodes": [1, 5], "threads": [4, 64], "clients": [1, 3], "wsrep_slave_threads": [1, 16],
              "cpu_quota": [0.5, 2.0]}  # fmt: skip
    # coded model: effects (low -> high) are twice the coefficients: nodes +20, threads -12,
    # nodes x threads +8, the rest 0
    pts, y, cod, res = simulate(
        levels, DesignSpec(kind="fractional-factorial", resolution=5, center_points=2),
        lambda x: 100 + 10 * x["nodes"] - 6 * x["threads"] + 4 * x["nodes"] * x["threads"],
    )  # fmt: skip
    a = analyze(pts, y, cod)
    assert a is not None and a.df_resid > 0
    got = {e.term: e for e in a.effects}
    assert got["nodes"].effect == pytest.approx(20, abs=1.0)
    assert got["threads"].effect == pytest.approx(-12, abs=1.0)
    assert got["nodes×threads"].effect == pytest.approx(8, abs=1.0)
    for term in ("nodes", "threads", "nodes×threads"):
        e = got[term]
        assert e.low is not None and e.high is not None and e.low < e.effect < e.high
        assert e.significant
    # the null effects: small, and their CIs cover 0 (a negative control: most, not all, at 95 %)
    nulls = [e for t, e in got.items() if t not in ("nodes", "threads", "nodes×threads")]
    assert all(abs(e.effect) < 1.5 for e in nulls)
    assert sum(not e.significant for e in nulls) >= len(nulls) - 1
    anova = {r.term: r for r in a.anova}
    assert anova["nodes"].p is not None and anova["nodes"].p < 1e-6
    assert anova["residual"].df == a.df_resid
    assert strongest(a) == ["nodes", "threads"]
    assert a.surface is not None and a.surface.best[:2] == (1.0, -1.0)  # nodes high, threads low


def test_resolution_3_drops_the_aliased_interactions() -> None:
    levels = {"nodes": [1, 3], "threads": [4, 64], "clients": [1, 2]}
    pts, y, cod, res = simulate(levels, DesignSpec(kind="fractional-factorial", resolution=3),
                                lambda x: 50 + 5 * x["threads"])  # fmt: skip
    assert len(res.points) == 4
    a = analyze(pts, y, cod)
    assert a is not None
    assert {e.term for e in a.effects} == {"nodes", "threads", "clients"}
    assert sorted(a.dropped) == ["nodes×clients", "nodes×threads", "threads×clients"]
    assert {e.term: e for e in a.effects}["threads"].effect == pytest.approx(10, abs=1.0)


def test_central_composite_finds_the_peak_of_a_curved_surface() -> None:
    levels = {"nodes": [1, 9], "threads": [2, 64]}
    # a ridge peaking at coded nodes = -0.5 (3 nodes), threads = +0.4
    pts, y, cod, res = simulate(
        levels, DesignSpec(kind="central-composite", center_points=3),
        lambda x: 300 - 80 * (x["nodes"] + 0.5) ** 2 - 50 * (x["threads"] - 0.4) ** 2, sd=2.0,
    )  # fmt: skip
    a = analyze(pts, y, cod, quadratic=True)
    assert a is not None
    terms = {e.term for e in a.effects}
    assert {"nodes²", "threads²", "nodes×threads"} <= terms
    assert {e.term: e for e in a.effects}["nodes²"].effect == pytest.approx(-80, abs=6)
    assert a.surface is not None
    bx, by, bz = a.surface.best
    assert bx == pytest.approx(-0.5, abs=0.1) and by == pytest.approx(0.4, abs=0.1)
    assert bz == pytest.approx(300, abs=5)
    assert a.predict({"nodes": 3, "threads": 2}) < a.predict({"nodes": 3, "threads": 40})


def test_without_repetitions_a_saturated_design_has_no_confidence_intervals() -> None:
    levels = {"nodes": [1, 3], "threads": [4, 64]}
    pts, y, cod, _ = simulate(levels, DesignSpec(kind="fractional-factorial", resolution=4),
                              lambda x: 10 + x["nodes"], reps=1)  # fmt: skip
    a = analyze(pts, y, cod)
    assert a is not None and a.df_resid == 0 and a.t_crit is None
    assert all(e.low is None for e in a.effects) and not a.anova
    assert "no residual degrees of freedom" in a.notes[0]


def test_categorical_factor_with_many_levels_goes_to_anova_only() -> None:
    levels: dict[str, Any] = {"nodes": [1, 2, 3, 4, 5], "rand_type": ["uniform", "gaussian", "pareto"]}
    shift = {"uniform": 0.0, "gaussian": 30.0, "pareto": -30.0}
    res = expand_design(levels, DesignSpec(kind="latin-hypercube", samples=15, seed=2), KINDS, "t")
    cod = codings(levels)
    rng = np.random.default_rng(0)
    pts, y = [], []
    for p in res.points:
        d = dict(p)
        for _ in range(2 * res.copies[p]):
            pts.append(d)
            y.append(100 + 10 * cod["nodes"].code(d["nodes"]) + shift[str(d["rand_type"])] + rng.normal(0, 1))
    a = analyze(pts, y, cod, quadratic=True)
    assert a is not None
    assert "rand_type" not in {e.term for e in a.effects}
    row = {r.term: r for r in a.anova}["rand_type"]
    assert row.df == 2 and row.p is not None and row.p < 1e-6
    assert {e.term: e for e in a.effects}["nodes"].effect == pytest.approx(20, abs=2)

"""Designed experiments: the planner's expansion of each design, and the refusals."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from clusterbench.errors import InputError
from clusterbench.experiment.design import Coding, DesignSpec, expand_design, kind_of
from clusterbench.experiment.load import experiment_from_data
from clusterbench.experiment.planner import expand
from clusterbench.experiment.spec import Factors, factor_kinds
from clusterbench.spec.topology import parse_toml

BASE = """
[experiment]
name = "d"
repetitions = 2
design = {design}

[topology.cluster]
name = "doet"
subnet = "198.18.32.0/24"

[workload]
duration = 3

[factors]
{factors}
"""

FOUR = "nodes = [1, 5]\nthreads = [4, 64]\nclients = [1, 3]\nwsrep_slave_threads = [1, 16]"


def plan(design: str, factors: str = FOUR) -> Any:
    text = BASE.format(design=design, factors=factors)
    return expand(experiment_from_data(parse_toml(text, "d.toml"), "d.toml"))


def coded(points: list[dict[str, Any]], levels: dict[str, Any]) -> list[tuple[float, ...]]:
    kinds = factor_kinds()
    cod = {k: Coding(k, kinds[k], tuple(v)) for k, v in levels.items()}
    return [tuple(cod[k].code(p[k]) for k in levels) for p in points]


LEVELS = {"nodes": [1, 5], "threads": [4, 64], "clients": [1, 3], "wsrep_slave_threads": [1, 16]}


def test_factor_kinds_come_from_the_spec_types() -> None:
    kinds = factor_kinds()
    assert kinds["nodes"] == "int" and kinds["cpu_quota"] == "float"
    assert kinds["innodb_flush_log_at_trx_commit"] == "categorical"  # Literal[0, 1, 2]
    assert kinds["tls"] == "categorical" and kinds["bandwidth"] == "categorical"
    assert set(kinds) == set(Factors.model_fields)
    assert kind_of(list[float] | None) == "float"


def test_fractional_factorial_resolution_4_half_fraction() -> None:
    p = plan('{ kind = "fractional-factorial", resolution = 4 }')
    pts = [dict(t.point) for t in p.trials]
    distinct = {tuple(sorted(x.items())) for x in pts}
    assert len(distinct) == 8 and len(p.trials) == 16  # 2^(4-1) x 2 repetitions
    m = coded([dict(x) for x in distinct], LEVELS)
    # balanced and orthogonal columns
    for j in range(4):
        assert sum(r[j] for r in m) == 0
        for k in range(j + 1, 4):
            assert sum(r[j] * r[k] for r in m) == 0
    # resolution IV: no main effect aliased with a two-factor interaction, pairs of 2FIs are
    assert all("×" in a.split(" = ")[0] for a in p.designs["main"].aliases)
    assert len(p.designs["main"].aliases) == 3


def test_center_points_become_repetitions_of_one_point() -> None:
    p = plan('{ kind = "fractional-factorial", resolution = 3, center_points = 3 }')
    c = Counter(t.point_label for t in p.trials)
    assert c["nodes=3 wsrep_slave_threads=9 threads=34 clients=2"] == 6  # 3 centre runs x 2 reps
    assert sorted(t.rep for t in p.trials if t.point_label.startswith("nodes=3 "))[-1] == 6
    assert len(c) == 9


def test_generators_give_the_fraction_asked_for() -> None:
    p = plan('{ kind = "fractional-factorial", generators = "a b c abc" }')
    assert len({t.point_label for t in p.trials}) == 8
    # factors in the spec's order: a = nodes, b = wsrep_slave_threads, c = threads, d = clients
    assert p.designs["main"].aliases == [
        "nodes×wsrep_slave_threads = threads×clients",
        "nodes×threads = wsrep_slave_threads×clients",
        "nodes×clients = wsrep_slave_threads×threads",
    ]


def test_plackett_burman_12_runs_for_7_factors_with_partial_aliasing() -> None:
    levels: dict[str, Any] = {
        "nodes": [1, 3], "threads": [4, 64], "clients": [1, 2], "wsrep_slave_threads": [1, 8],
        "innodb_flush_log_at_trx_commit": [1, 2], "tls": [False, True], "cpu_quota": [0.5, 1.0],
        "compression": [False, True], "rate": [0, 100], "separate_schemas": [False, True],
        "rand_type": ["uniform", "pareto"],
    }  # fmt: skip
    r = expand_design(levels, DesignSpec(kind="plackett-burman"), factor_kinds(), "p")
    assert len(r.points) == 12 and sum(r.copies.values()) == 12
    assert r.aliases and "partially" in r.aliases[0] and "|r| = 0.33" in r.aliases[0]


def test_central_composite_faced_uses_three_levels_per_factor() -> None:
    p = plan('{ kind = "central-composite", center_points = 2 }', "nodes = [1, 5]\nthreads = [4, 64]")
    c = Counter(t.point_label for t in p.trials)
    # 4 corners + 4 star points on the faces + the centre (2 runs x 2 repetitions)
    assert len(c) == 9 and c["nodes=3 threads=34"] == 4
    assert {dict(t.point)["nodes"] for t in p.trials} == {1, 3, 5}


def test_box_behnken_three_factors_snaps_to_allowed_levels() -> None:
    p = plan(
        '"box-behnken"',
        "nodes = [1, 3, 5]\nthreads = [2, 4, 8, 16, 32, 64]\nwsrep_slave_threads = [1, 4]",
    )
    pts = {t.point_label for t in p.trials}
    assert len(pts) == 13  # 12 edge midpoints + the centre
    assert {dict(t.point)["threads"] for t in p.trials} <= {2, 4, 8, 16, 32, 64}
    # the centre of 6 allowed values is between 8 and 16: half up, by position
    assert {dict(t.point)["threads"] for t in p.trials} == {2, 16, 64}


def test_latin_hypercube_is_seeded_and_covers_every_level() -> None:
    lhs = '{ kind = "latin-hypercube", samples = 12, seed = 3 }'
    a = plan(lhs, "nodes = [1, 2, 3, 4, 5, 6]\nthreads = [4, 64]")
    b = plan(lhs, "nodes = [1, 2, 3, 4, 5, 6]\nthreads = [4, 64]")
    assert [t.key for t in a.trials] == [t.key for t in b.trials]
    nodes = Counter(dict(t.point)["nodes"] for t in a.trials)
    assert set(nodes) == {1, 2, 3, 4, 5, 6} and all(v == 4 for v in nodes.values())  # 2 samples x 2 reps
    assert all(4 <= dict(t.point)["threads"] <= 64 for t in a.trials)


def test_full_grid_is_unchanged() -> None:
    p = plan('"full-grid"')
    assert len(p.trials) == 32 and not p.designs


@pytest.mark.parametrize(
    ("design", "factors", "msg"),
    [
        ('"fractional-factorial"', "nodes = [1, 3, 5, 7]\nthreads = [4, 8]",
         "parts.main.factors.nodes: a two-level design needs 2 levels"),
        ('{ kind = "fractional-factorial", center_points = 1 }', "tls = [false, true]\nthreads = [4, 8]",
         "parts.main.factors.tls: centre points need numeric factors"),
        ('"box-behnken"', "nodes = [1, 3]\nthreads = [4, 8]", "needs at least 3 factors"),
        ('"central-composite"', "rand_type = ['uniform', 'pareto']\nthreads = [4, 8]",
         "parts.main.factors.rand_type: a central-composite design needs numeric factors"),
        ('{ kind = "fractional-factorial", samples = 3 }', "nodes = [1, 3]\nthreads = [4, 8]",
         "experiment.design: samples is an option of latin-hypercube designs"),
        ('{ kind = "fractional-factorial", generators = "a b" }',
         "nodes = [1, 3]\nthreads = [4, 8]\nclients = [1, 2]",
         "parts.main.design.generators: 2 words for 3 factors"),
        ('"taguchi"', "nodes = [1, 3]", "experiment.design.kind"),
    ],
)  # fmt: skip
def test_bad_designs_are_refused_naming_the_field(design: str, factors: str, msg: str) -> None:
    with pytest.raises(InputError) as exc:
        plan(design, factors)
    assert msg in str(exc.value)
    assert len(str(exc.value).splitlines()) == 1

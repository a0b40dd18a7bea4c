"""The cycle classes' search tables (classes.make_spec) checked against the classes' definitions
written out again here, independently, over every sequence of edge types up to five long:

- a cycle's edge types are accepted by a class's tables exactly when the definition says it is of
  that class;
- a step is refused (-1) exactly when no way of going on can still make a cycle of the class, so
  the search prunes as early as it may and never more;
- the labels tried for an edge with several types, and each class's allowed, anchor and rest
  types, are what the definitions ask for."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest

from clusterbench.checkers.append.classes import FAMILIES, LABELS, VARIANTS, Spec, make_spec
from clusterbench.checkers.append.graph import PROCESS, REALTIME, RW, WR, WW

LONGEST = 5
# (family, variant) pairs; the tables are built inside each test, so mutation tools see the
# tests that reach make_spec
CLASSES = [(f, v) for v in VARIANTS for f in FAMILIES]


def is_of_class(family: str, variant: str, cycle: Sequence[int]) -> bool:
    """The definition (Adya; Elle's variants), for a cycle's edge types in order."""
    if PROCESS in cycle and variant == "":
        return False
    if REALTIME in cycle and variant != "realtime":
        return False
    if variant == "process" and PROCESS not in cycle:
        return False
    if variant == "realtime" and REALTIME not in cycle:
        return False
    n = len(cycle)
    rw = cycle.count(RW)
    adjacent = any(cycle[i] == RW and cycle[(i + 1) % n] == RW for i in range(n))
    return {
        "G0": rw == 0 and WR not in cycle,
        "G1c": rw == 0 and WR in cycle,
        "G-single": rw == 1,
        "G-nonadjacent": rw >= 2 and not adjacent,
        "G2-item": rw >= 2 and adjacent,
    }[family]


def run(spec: Spec, cycle: Sequence[int]) -> int:
    """The state after walking these edge types from the start, or -1 once a step is refused."""
    s = 0
    for t in cycle:
        s = spec.step[s][LABELS.index(t)]
        if s < 0:
            return -1
    return s


@pytest.mark.parametrize(("family", "variant"), CLASSES)
def test_the_tables_accept_exactly_the_cycles_of_the_class(family: str, variant: str) -> None:
    spec = make_spec(family, variant)
    for n in range(2, LONGEST + 1):
        for cycle in itertools.product(LABELS, repeat=n):
            s = run(spec, cycle)
            got = s >= 0 and spec.accept[s][cycle[0] == RW]
            assert got == is_of_class(spec.family, spec.variant, cycle), (spec.name, cycle)


def can_go_on(family: str, variant: str, prefix: Sequence[int]) -> bool:
    """Can some edges after these still make a cycle of the class? Only a type the class may not
    use, a second rw in a G-single or two adjacent rw in a G-nonadjacent rule it out: whatever
    else is missing (a wr, rw edges, a process or realtime edge) can still come."""
    allowed = {WW} | ({WR} if family != "G0" else set()) | ({RW} if family not in ("G0", "G1c") else set())
    allowed |= {"": set(), "process": {PROCESS}, "realtime": {PROCESS, REALTIME}}[variant]
    if any(t not in allowed for t in prefix):
        return False
    if family == "G-single" and prefix.count(RW) > 1:
        return False
    return not (family == "G-nonadjacent" and any(a == b == RW for a, b in itertools.pairwise(prefix)))


@pytest.mark.parametrize(("family", "variant"), CLASSES)
def test_a_step_is_refused_exactly_when_nothing_after_it_can_make_a_cycle_of_the_class(
    family: str, variant: str
) -> None:
    spec = make_spec(family, variant)
    for n in range(1, LONGEST + 1):
        for prefix in itertools.product(LABELS, repeat=n):
            s = run(spec, prefix)
            assert (s == -1) == (not can_go_on(spec.family, spec.variant, prefix)), (spec.name, prefix)
            assert s == -1 or 0 <= s < len(spec.step)


@pytest.mark.parametrize(("family", "variant"), CLASSES)
def test_can_go_on_agrees_with_the_definition_where_it_can_be_tried(family: str, variant: str) -> None:
    spec = make_spec(family, variant)
    # the oracle of the test above, checked by brute force where short completions suffice
    for n in range(1, 3):
        for prefix in itertools.product(LABELS, repeat=n):
            found = any(
                is_of_class(spec.family, spec.variant, prefix + rest)
                for m in range(max(0, 2 - n), 5)
                for rest in itertools.product(LABELS, repeat=m)
            )
            assert found == can_go_on(spec.family, spec.variant, prefix), (spec.name, prefix)


def options(family: str, variant: str, bits: int) -> tuple[int, ...]:
    """One non-rw label, the one that sets the most useful flag (realtime over process over wr over
    ww) among those the class may use; and rw where the class may use it."""
    usable = [WW]
    if family != "G0":
        usable.append(WR)
    if variant:
        usable.append(PROCESS)
    if variant == "realtime":
        usable.append(REALTIME)
    out = [LABELS.index(t) for t in reversed(usable) if bits & t][:1]
    if bits & RW and family not in ("G0", "G1c"):
        out.append(LABELS.index(RW))
    return tuple(out)


@pytest.mark.parametrize(("family", "variant"), CLASSES)
def test_the_labels_tried_for_an_edge(family: str, variant: str) -> None:
    spec = make_spec(family, variant)
    for bits in range(32):
        assert spec.options[bits] == options(spec.family, spec.variant, bits), (spec.name, bits)


@pytest.mark.parametrize(("family", "variant"), CLASSES)
def test_allowed_anchor_and_rest_types(family: str, variant: str) -> None:
    spec = make_spec(family, variant)
    data = {"G0": WW, "G1c": WW | WR}.get(spec.family, WW | WR | RW)
    extra = {"": 0, "process": PROCESS, "realtime": PROCESS | REALTIME}[spec.variant]
    assert spec.allowed == data | extra
    assert spec.anchor == {"G0": WW, "G1c": WR}.get(spec.family, RW)
    # a G-single has its one rw edge as the anchor: the way back uses none
    assert spec.rest == (spec.allowed & ~RW if spec.family == "G-single" else spec.allowed)
    assert spec.name == (f"{spec.family}-{spec.variant}" if spec.variant else spec.family)
    assert len(spec.step) == len(spec.accept) == 128 and len(spec.options) == 32

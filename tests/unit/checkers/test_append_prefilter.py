"""The cycle classifier's quick necessary condition (classes._possible), decided exactly: a
component is searched for a class only when its edges could form one, and never skipped when they
could. Each expected value follows from the class's definition (Adya; Elle's variants): G0 uses
ww only, G1c ww and wr with at least one wr, G-single exactly one rw, G-nonadjacent and G2-item at
least two; a -process variant needs a process edge, a -realtime one a realtime edge."""

from __future__ import annotations

import pytest

from clusterbench.checkers.append.classes import _possible, _witness, classify, make_spec, make_specs
from clusterbench.checkers.append.graph import PROCESS, REALTIME, RW, WR, WW

CASES = [
    # (family, variant, one type-bit mask per step of the cycle, possible?)
    ("G0", "", [WW, WW], True),
    ("G0", "", [WW, WR], False),  # a wr step is not allowed in G0
    ("G0", "", [WW, WW | WR], True),  # the second step may be taken as ww
    ("G1c", "", [WW, WW], False),  # no wr anywhere
    ("G1c", "", [WR, WW], True),
    ("G1c", "", [WR, RW], False),  # rw not allowed
    ("G-single", "", [WR, WR], False),  # no rw
    ("G-single", "", [RW, WR], True),
    ("G-nonadjacent", "", [RW, WR, WR], False),  # one rw only
    ("G-nonadjacent", "", [RW, WR, RW, WR], True),
    ("G2-item", "", [RW, WR], False),
    ("G2-item", "", [RW, RW], True),
    ("G2-item", "", [RW | WW, RW], True),
    ("G0", "process", [WW, WW], False),  # no process edge
    ("G0", "process", [WW, PROCESS], True),
    ("G0", "process", [WW, REALTIME], False),  # realtime is not allowed in -process
    ("G0", "realtime", [WW, PROCESS], False),  # no realtime edge
    ("G0", "realtime", [WW, REALTIME], True),
    ("G-single", "realtime", [RW, REALTIME], True),
    ("G-single", "realtime", [RW, WR], False),
    ("G-single", "process", [RW, PROCESS | REALTIME], True),
    ("G2-item", "process", [RW, RW, WW], False),
    ("G2-item", "process", [RW, RW, PROCESS], True),
]


@pytest.mark.parametrize(("family", "variant", "masks", "possible"), CASES)
def test_possible_is_exactly_the_classes_necessary_condition(
    family: str, variant: str, masks: list[int], possible: bool
) -> None:
    spec = make_spec(family, variant)
    assert _possible(spec, masks) is possible


@pytest.mark.parametrize(("family", "variant", "masks", "possible"), [c for c in CASES if not c[3]])
def test_no_witness_where_the_condition_fails(
    family: str, variant: str, masks: list[int], possible: bool
) -> None:
    # The full search agrees: nothing the pre-filter rules out is a cycle of the class.
    assert _witness(make_spec(family, variant), masks) is None


WITNESSES = [
    # a step that may be taken either way is taken as a data edge where the class allows it
    ("G0", "process", [WW, WW | PROCESS], [WW, PROCESS]),  # the one process edge it needs
    ("G0", "realtime", [WW, WW | PROCESS, REALTIME], [WW, WW, REALTIME]),
    ("G0", "realtime", [WW | REALTIME, WW | PROCESS, WW | REALTIME], [WW, WW, REALTIME]),
    ("G-single", "", [RW | WR, WR], [RW, WR]),
    ("G1c", "", [WW | WR, WW], [WR, WW]),  # G1c needs its wr
]


@pytest.mark.parametrize(("family", "variant", "masks", "labels"), WITNESSES)
def test_witness_prefers_data_edges(family: str, variant: str, masks: list[int], labels: list[int]) -> None:
    assert _witness(make_spec(family, variant), masks) == labels


CLASSIFIED = [
    ([RW, WR], {"G-single": [RW, WR]}),
    ([RW, PROCESS], {"G-single-process": [RW, PROCESS]}),
    # ww or rw, then wr: G1c, which rules out more than the G-single the same steps could be
    ([WW | RW, WR], {"G1c": [WW, WR]}),
    ([RW, WR, RW, WR], {"G-nonadjacent": [RW, WR, RW, WR]}),
    ([RW, RW, WR], {"G2-item": [RW, RW, WR]}),
]


@pytest.mark.parametrize(("masks", "classes"), CLASSIFIED)
def test_classify_reports_each_cycle_under_the_classes_that_say_most(
    masks: list[int], classes: dict[str, list[int]]
) -> None:
    assert classify(masks, make_specs()) == classes

"""engines/group_replication/status.py: GTID sets as MySQL prints them."""

from __future__ import annotations

import pytest

from clusterbench.engines.group_replication.status import GtidParseError, GtidSet, most_advanced

A = "6f1c3a2e-0c4b-4d8e-9a51-7f00d1b2c3e4"
B = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def test_parse_count_and_print() -> None:
    s = GtidSet.parse(f"{A}:1-5:7,\n{B.upper()}:1-3")
    assert s.count() == 9
    assert str(s) == f"{B}:1-3,{A}:1-5:7"
    assert GtidSet.parse(str(s)) == s


def test_empty_set() -> None:
    assert GtidSet.parse("") == GtidSet() and GtidSet.parse(None).count() == 0
    assert not GtidSet.parse("")


def test_adjacent_and_overlapping_intervals_merge() -> None:
    assert str(GtidSet.parse(f"{A}:1-3:4-6:5-9:11")) == f"{A}:1-9:11"


def test_tagged_gtids_are_their_own_sources() -> None:
    s = GtidSet.parse(f"{A}:1-3:batch:1-2:Other_tag:5")
    assert s.count() == 6
    assert set(s.intervals) == {A, f"{A}:batch", f"{A}:other_tag"}
    assert not GtidSet.parse(f"{A}:batch:3").issubset(s)
    assert GtidSet.parse(f"{A}:other_tag:5").issubset(s)


def test_subset_union_difference() -> None:
    small = GtidSet.parse(f"{A}:1-5")
    big = GtidSet.parse(f"{A}:1-10,{B}:1")
    assert small <= big and not big <= small
    assert (small | GtidSet.parse(f"{A}:6-8")) == GtidSet.parse(f"{A}:1-8")
    assert str(big - small) == f"{B}:1,{A}:6-10"
    assert str(GtidSet.parse(f"{A}:1-10") - GtidSet.parse(f"{A}:3-4:8")) == f"{A}:1-2:5-7:9-10"
    assert (small - big).count() == 0


@pytest.mark.parametrize("bad", ["nonsense:1-2", f"{A}:5-2", f"{A}:0", f"{A}:1-x", f"{A}:-tag"])
def test_malformed_sets_are_refused(bad: str) -> None:
    with pytest.raises(GtidParseError):
        GtidSet.parse(bad)


def test_most_advanced_member_contains_the_others() -> None:
    sets = {
        1: GtidSet.parse(f"{A}:1-100"),
        2: GtidSet.parse(f"{A}:1-120"),
        3: GtidSet.parse(f"{A}:1-120"),
    }
    assert most_advanced(sets) == (2, [])  # a tie goes to the lower index


def test_most_advanced_reports_diverged_members() -> None:
    sets = {
        1: GtidSet.parse(f"{A}:1-100"),
        2: GtidSet.parse(f"{A}:1-90,{B}:1-5"),
        3: GtidSet.parse(f"{A}:1-50"),
    }
    assert most_advanced(sets) == (1, [2])  # 100 GTIDs against 95; n2 holds 5 that n1 lacks
    assert most_advanced({}) == (None, [])

"""When the search may skip a process or realtime variant (documented.needless): only when a
class already found rules out every model the variant would, and the variant cannot change the
verdict (the found class is a promise broken, or the variant would be documented too)."""

from __future__ import annotations

import pytest

from clusterbench.checkers.append.documented import needless

CASES = [
    # (variant searched for, classes found, documented, every G-single is P4, reason or None)
    ("G0", ["G1c"], [], False, None),  # a data-only class is always searched
    ("G1c-process", ["G0"], [], False, "implied by G0, already found"),  # G0 broken, rules out all
    ("G1c-process", ["G0"], ["G0"], False, None),  # G0 documented, G1c-process would not be
    ("G0-process", ["G0"], ["G0"], False, "implied by G0, already found"),  # documented as G0 is
    ("G-single-realtime", ["G-single"], [], False, "implied by G-single, already found"),
    ("G-single-realtime", ["G2-item"], [], False, None),  # it rules out snapshot isolation, G2-item not
    ("G-single-realtime", ["G-single"], ["G-single"], False, "implied by G-single, already found"),
    ("G2-item-process", ["G-single", "G2-item"], ["G2-item"], False, "implied by G-single, already found"),
    # G-single documented as P4 (lost-update); its process variant is not, so it is searched
    ("G-single-process", ["G-single"], ["lost-update"], True, None),
    # ... unless some G-single is not P4: then G-single itself is a promise broken
    ("G-single-process", ["G-single"], ["lost-update"], False, "implied by G-single, already found"),
]


@pytest.mark.parametrize(("name", "found", "documented", "p4", "why"), CASES)
def test_needless(name: str, found: list[str], documented: list[str], p4: bool, why: str | None) -> None:
    assert needless(name, found, documented, p4) == why

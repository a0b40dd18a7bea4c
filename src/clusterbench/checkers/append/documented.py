"""Which anomalies an engine's documentation covers ("documented limitation seen") and which
break a promise.

The engine lists anomaly names its documentation says are possible in a session (e.g. Galera:
lost-update, internal, G2-item, stale-read). A class found in the history is documented when

1. the list names it; or names its data-only class (G2-item covers G2-item-process and
   G2-item-realtime); or names `stale-read` and it is a realtime variant (a read that misses
   what was acknowledged before it); or it is G-single, the list names `lost-update`, and every
   G-single cycle found is Berenson's P4 (the transaction that missed another's append wrote
   after it: a lost update in the wider sense); and
2. it rules out no consistency model that the documented classes leave standing. A documented
   limitation never covers a class that breaks a stronger promise than the documented ones: a
   G-nonadjacent cycle rules out snapshot isolation, which documented write skew (G2-item)
   does not, so it is a promise broken; so is a G0-realtime or G1c-realtime cycle where only
   stale reads are documented.
"""

from __future__ import annotations

from collections.abc import Iterable

from clusterbench.checkers.append.classes import FAMILIES, base
from clusterbench.checkers.append.models import ruled_out


def named(documented: Iterable[str], g_single_all_p4: bool) -> set[str]:
    """The class names the documentation reaches (rule 1)."""
    d = set(documented)
    out = set(d)
    if "lost-update" in d and g_single_all_p4:
        out.add("G-single")
    out |= {f"{f}-{v}" for f in FAMILIES if f in d for v in ("process", "realtime")}
    if "stale-read" in d:
        out |= {f"{f}-realtime" for f in FAMILIES}
    return out


def covered(name: str, documented: Iterable[str], g_single_all_p4: bool) -> bool:
    d = set(documented)
    return name in named(d, g_single_all_p4) and ruled_out([name]) <= ruled_out(d)


def split(
    found: Iterable[str], documented: Iterable[str], g_single_all_p4: bool
) -> tuple[list[str], list[str]]:
    """(documented limitations seen, promises broken), each in the order found."""
    d = set(documented)
    seen_doc: list[str] = []
    broken: list[str] = []
    for a in found:
        (seen_doc if covered(a, d, g_single_all_p4) else broken).append(a)
    return seen_doc, broken


def needless(name: str, found: Iterable[str], documented: Iterable[str], g_single_all_p4: bool) -> str | None:
    """Why searching for a process or realtime variant cannot change the verdict, or None: a
    class already found rules out every model it would, and either that class is a promise
    broken or the variant would be documented anyway."""
    if name == base(name):
        return None
    d = set(documented)
    mine = ruled_out([name])
    for y in found:
        if mine <= ruled_out([y]) and (
            not covered(y, d, g_single_all_p4) or covered(name, d, g_single_all_p4)
        ):
            return f"implied by {y}, already found"
    return None

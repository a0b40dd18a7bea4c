"""The cycle classes, each defined by the edge types its cycle may use and how many
anti-dependency (rw) edges it has (Adya; Elle names the variants):

- **G0**: ww edges only (a write cycle);
- **G1c**: ww and wr edges, at least one wr (circular information flow);
- **G-single**: exactly one rw edge, the others ww or wr (read skew, or a lost update);
- **G-nonadjacent**: two or more rw edges, no two of them next to each other along the cycle
  (snapshot isolation forbids it: Cerone and Gotsman showed every cycle SI allows has two
  adjacent rw edges);
- **G2-item**: two or more rw edges, at least two of them adjacent (write skew; SI allows it).

A `-process` variant also uses process edges (at least one, and no realtime edge), a
`-realtime` variant at least one realtime edge (and process edges if it likes).

Two transactions may be related by several edge types at once (b both read a's append and
appended after it, or a finished before b began and b did not see a). A cycle then belongs to
every class one choice of types per step allows; it is reported under the classes that say the
most: each class whose ruled-out models are not already ruled out by a class it was reported
under before, in the order of `ORDER` (a G0 cycle is not also a G1c; a cycle that is G-single
with one choice and G-nonadjacent with another is G-single).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clusterbench.checkers.append.graph import PROCESS, REALTIME, RW, WR, WW
from clusterbench.checkers.append.models import ruled_out

FAMILIES = ("G0", "G1c", "G-single", "G-nonadjacent", "G2-item")
VARIANTS = ("", "process", "realtime")
ORDER = tuple(f"{f}-{v}" if v else f for v in VARIANTS for f in FAMILIES)
LABELS = (WW, WR, RW, PROCESS, REALTIME)  # label index -> edge type

# The state of a walk, packed in an int: rw edges so far (0, 1, 2 = two or more), whether the
# last step was rw, whether two rw steps were adjacent, a wr step, a process step, a realtime step.
_NRW, _LAST, _ADJ, _WR, _PROC, _RT = 3, 4, 8, 16, 32, 64
STATES = 128


@dataclass(frozen=True)
class Spec:
    name: str
    family: str
    variant: str
    allowed: int  # edge types the cycle may use
    anchor: int  # the type of the edge a search starts from
    rest: int  # types the rest of the cycle may use
    step: tuple[tuple[int, ...], ...] = field(repr=False)  # [state][label] -> state, or -1
    accept: tuple[tuple[bool, bool], ...] = field(repr=False)  # [state][first step was rw]
    options: tuple[tuple[int, ...], ...] = field(repr=False)  # [edge type bits] -> labels to try


def _step(family: str, variant: str, s: int, t: int) -> int:
    nrw, last = s & _NRW, bool(s & _LAST)
    if t == RW:
        if family in ("G0", "G1c") or (family == "G-single" and nrw >= 1):
            return -1
        if family == "G-nonadjacent" and last:
            return -1
        return (s & ~(_NRW | _LAST)) | min(nrw + 1, 2) | _LAST | (_ADJ if last else 0)
    if t == WR and family == "G0":
        return -1
    if t == PROCESS and not variant:
        return -1
    if t == REALTIME and variant != "realtime":
        return -1
    flag = {WW: 0, WR: _WR, PROCESS: _PROC, REALTIME: _RT}[t]
    return (s & ~_LAST) | flag


def _accept(family: str, variant: str, s: int, first_rw: bool) -> bool:
    nrw, last, adj = s & _NRW, bool(s & _LAST), bool(s & _ADJ)
    if variant == "" and s & (_PROC | _RT):
        return False
    if variant == "process" and (not s & _PROC or s & _RT):
        return False
    if variant == "realtime" and not s & _RT:
        return False
    wrap = last and first_rw  # the last step and the first are both rw: adjacent around the cycle
    return {
        "G0": nrw == 0 and not s & _WR,
        "G1c": nrw == 0 and bool(s & _WR),
        "G-single": nrw == 1,
        "G-nonadjacent": nrw == 2 and not adj and not wrap,
        "G2-item": nrw == 2 and (adj or wrap),
    }[family]


def _options(family: str, variant: str, bits: int) -> tuple[int, ...]:
    """Labels worth trying for an edge of these types in a search: one non-rw label (realtime
    over process over wr over ww, the one that sets the most useful flag) and rw."""
    out: list[int] = []
    if variant == "realtime" and bits & REALTIME:
        out.append(LABELS.index(REALTIME))
    elif variant and bits & PROCESS:
        out.append(LABELS.index(PROCESS))
    elif bits & WR and family != "G0":
        out.append(LABELS.index(WR))
    elif bits & WW:
        out.append(LABELS.index(WW))
    if bits & RW and family not in ("G0", "G1c"):
        out.append(LABELS.index(RW))
    return tuple(out)


def make_spec(family: str, variant: str) -> Spec:
    allowed = {"G0": WW, "G1c": WW | WR}.get(family, WW | WR | RW)
    allowed |= {"": 0, "process": PROCESS, "realtime": PROCESS | REALTIME}[variant]
    anchor = {"G0": WW, "G1c": WR}.get(family, RW)
    rest = allowed & ~RW if family == "G-single" else allowed
    step = tuple(tuple(_step(family, variant, s, t) for t in LABELS) for s in range(STATES))
    accept = tuple(
        (_accept(family, variant, s, False), _accept(family, variant, s, True)) for s in range(STATES)
    )
    options = tuple(_options(family, variant, bits) for bits in range(32))
    name = f"{family}-{variant}" if variant else family
    return Spec(name, family, variant, allowed, anchor, rest, step, accept, options)


def make_specs() -> dict[str, Spec]:
    """Every class's search tables, by name (a few milliseconds: built for each check rather than
    once at import, so that the check always runs the code above)."""
    return {s.name: s for s in (make_spec(f, v) for v in VARIANTS for f in FAMILIES)}


def base(name: str) -> str:
    """The data-only class of a variant ('G-single-realtime' -> 'G-single')."""
    return name.removesuffix("-process").removesuffix("-realtime")


def _possible(spec: Spec, masks: list[int]) -> bool:
    """A quick necessary condition: every step has a type the class may use, and the types it
    needs (rw edges, a wr edge, a process or realtime edge) occur often enough."""
    if not all(m & spec.allowed for m in masks):
        return False
    rw = sum(1 for m in masks if m & RW)
    need_rw = {"G0": 0, "G1c": 0, "G-single": 1}.get(spec.family, 2)
    anywhere = 0
    for m in masks:
        anywhere |= m
    if rw < need_rw or (spec.family == "G1c" and not anywhere & WR):
        return False
    return not (spec.variant == "process" and not anywhere & PROCESS) and not (
        spec.variant == "realtime" and not anywhere & REALTIME
    )


def _witness(spec: Spec, masks: list[int]) -> list[int] | None:
    """Edge types, one per step of a cycle with these type bits, that make it a cycle of
    `spec`'s class; None when no choice does. Data types are preferred over process and
    realtime ones."""
    if not _possible(spec, masks):
        return None
    best: list[int] | None = None
    for first in range(len(LABELS)):
        t0 = LABELS[first]
        if not masks[0] & t0 & spec.allowed:
            continue
        s0 = spec.step[0][first]
        if s0 < 0:
            continue
        states: dict[int, list[int]] = {s0: [t0]}
        for bits in masks[1:]:
            nxt: dict[int, list[int]] = {}
            for s, labels in states.items():
                for li, t in enumerate(LABELS):
                    if bits & t & spec.allowed:
                        s2 = spec.step[s][li]
                        if s2 >= 0 and s2 not in nxt:
                            nxt[s2] = [*labels, t]
            states = nxt
        for s, labels in states.items():
            if spec.accept[s][t0 == RW] and (best is None or _weight(labels) < _weight(best)):
                best = labels
    return best


def _weight(labels: list[int]) -> int:
    return sum(1 for t in labels if t in (PROCESS, REALTIME))


def classify(masks: list[int], specs: dict[str, Spec]) -> dict[str, list[int]]:
    """The classes a cycle (its steps' type bits) is reported under, with the edge types that
    make it one, in the order of ORDER."""
    out: dict[str, list[int]] = {}
    covered: frozenset[str] = frozenset()
    for name in ORDER:
        models = ruled_out([name])
        if models <= covered:
            continue
        labels = _witness(specs[name], masks)
        if labels is None:
            continue
        out[name] = labels
        covered |= models
    return out

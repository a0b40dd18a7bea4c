"""Consistency models, how they imply each other, and which anomalies rule out which models.

The hierarchy is the standard one (Adya's generalized isolation levels, Cerone and Gotsman's
graph characterisation of snapshot isolation, Daudjee and Salem's strong session variants, as
jepsen.io/consistency draws it): a history that satisfies a model also satisfies every model it
implies. An anomaly rules out the models that forbid it and every model stronger than those.
The strongest models a history is still consistent with are the maximal ones not ruled out.

Strong session variants also respect each client's own order (a session sees its earlier
transactions), strong variants respect real time (a transaction sees every transaction that
ended before it began); strict serializability is serializability in real-time order.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

# Every model with the models it implies directly (the stronger model first).
IMPLIES: dict[str, tuple[str, ...]] = {
    "strict-serializable": ("strong-session-serializable", "strong-snapshot-isolation"),
    "strong-session-serializable": ("serializable", "strong-session-snapshot-isolation"),
    "serializable": ("repeatable-read", "snapshot-isolation"),
    "strong-snapshot-isolation": ("strong-session-snapshot-isolation", "strong-read-committed"),
    "strong-session-snapshot-isolation": ("snapshot-isolation", "strong-session-read-committed"),
    "snapshot-isolation": ("read-committed",),
    "repeatable-read": ("read-committed",),
    "strong-read-committed": ("strong-session-read-committed", "strong-read-uncommitted"),
    "strong-session-read-committed": ("read-committed", "strong-session-read-uncommitted"),
    "read-committed": ("read-uncommitted",),
    "strong-read-uncommitted": ("strong-session-read-uncommitted",),
    "strong-session-read-uncommitted": ("read-uncommitted",),
    "read-uncommitted": (),
}
MODELS = tuple(IMPLIES)  # strongest first (a model comes before every model it implies)

# The weakest models that forbid each anomaly (every stronger model forbids it too).
_RC = ("read-committed",)
_RR_SI = ("repeatable-read", "snapshot-isolation")
FORBIDDEN_BY: dict[str, tuple[str, ...]] = {
    # write cycles: no model allows them
    "G0": ("read-uncommitted",),
    "G0-process": ("strong-session-read-uncommitted",),
    "G0-realtime": ("strong-read-uncommitted",),
    # reads of what was never committed, or circular information flow
    "G1a": _RC,
    "G1b": _RC,
    "G1c": _RC,
    "G1c-process": ("strong-session-read-committed",),
    "G1c-realtime": ("strong-read-committed",),
    "dirty-update": _RC,
    "incompatible-order": _RC,  # two committed reads from no single timeline: one was dirty
    "future-read": _RC,  # a read of the transaction's own later write: a trivial G1c
    # one anti-dependency, or several never adjacent: snapshot isolation forbids them
    "G-single": _RR_SI,
    "G-single-process": ("strong-session-snapshot-isolation",),
    "G-single-realtime": ("strong-snapshot-isolation",),
    "G-nonadjacent": _RR_SI,
    "G-nonadjacent-process": ("strong-session-snapshot-isolation",),
    "G-nonadjacent-realtime": ("strong-snapshot-isolation",),
    "lost-update": _RR_SI,
    # two adjacent anti-dependencies (write skew): only serializability forbids them
    "G2-item": ("repeatable-read",),
    "G2-item-process": ("strong-session-serializable",),
    "G2-item-realtime": ("strict-serializable",),
    # a transaction that disagrees with itself (Cerone's INT axiom, part of SI and serializability)
    "internal": ("snapshot-isolation",),
    # reads that no sequence of appends explains
    "duplicate-elements": ("read-uncommitted",),
    "phantom-value": ("read-uncommitted",),
    # a read that missed a write acknowledged before it began (a two-transaction
    # G-single-realtime), and an acknowledged append missing from a final read
    "stale-read": ("strong-snapshot-isolation",),
    "lost-append": ("strong-snapshot-isolation",),
}


@cache
def implied(model: str) -> frozenset[str]:
    """The model and every model it implies, transitively."""
    out = {model}
    for m in IMPLIES[model]:
        out |= implied(m)
    return frozenset(out)


@cache
def _ruled_out(anomalies: frozenset[str]) -> frozenset[str]:
    direct = {m for a in anomalies for m in FORBIDDEN_BY.get(a, ())}
    return frozenset(m for m in MODELS if implied(m) & direct)


def ruled_out(anomalies: Iterable[str]) -> frozenset[str]:
    """The models a history with these anomalies cannot satisfy (anomalies outside FORBIDDEN_BY,
    such as input errors, rule out nothing)."""
    return _ruled_out(frozenset(anomalies))


def strongest(anomalies: Iterable[str]) -> list[str]:
    """The strongest models not ruled out, strongest first: none of them implies another.
    Empty when even read uncommitted is ruled out."""
    standing = [m for m in MODELS if m not in ruled_out(anomalies)]
    return [m for m in standing if not any(m in implied(o) for o in standing if o != m)]


def weakest_ruled_out(anomalies: Iterable[str]) -> list[str]:
    """The weakest models ruled out (Elle's `:not`): every other ruled-out model implies one."""
    out = ruled_out(anomalies)
    return [m for m in MODELS if m in out and not any(o in out for o in implied(m) if o != m)]


def describe(anomalies: Iterable[str]) -> str:
    """'strict-serializable', 'strong-session-serializable and strong-read-committed', 'none'."""
    best = strongest(anomalies)
    return " and ".join(best) if best else "none"

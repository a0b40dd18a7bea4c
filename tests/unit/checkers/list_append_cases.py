"""Conformance histories for the list-append checker, written by hand from the published
definitions (Adya's thesis for G0/G1/G-single/G2; Elle's papers and documentation for the
list-append inference, G-nonadjacent, the process/realtime variants, internal, future read,
dirty update, duplicate appends, incompatible order and lost update; Cerone and Gotsman for
what snapshot isolation forbids).

Each case gives a history, the exact set of anomaly classes it must produce, the strongest
consistency models it must leave standing (worked out by hand from the hierarchy in
docs/checkers.md, never by calling the checker), and the verdict. Keys are x, y, z, u, v;
transactions are T0, T1, ... in the order listed. Unless a case says otherwise a transaction
runs in a client of its own (no session order) and overlaps every other one in time (no
real-time order): `at=(start, end)` and `c=client` add them.

Model sets used below (strongest first):
- nothing found: strict-serializable;
- G0, duplicate-elements, phantom-value (read uncommitted ruled out): none;
- G1a/G1b/G1c, dirty-update, incompatible-order, future-read (read committed and all above it
  ruled out): strong-read-uncommitted;
- G-single, G-nonadjacent, lost-update (repeatable read and snapshot isolation): strong-read-committed;
- G2-item (repeatable read, hence serializable): strong-snapshot-isolation;
- internal (snapshot isolation, hence serializable): repeatable-read and strong-read-committed;
- G0-process (strong session read uncommitted): serializable;
- G1c-process: serializable and strong-read-uncommitted;
- G-single-process, G-nonadjacent-process: serializable and strong-read-committed;
- G2-item-process: serializable and strong-snapshot-isolation;
- G0-realtime: strong-session-serializable;
- G1c-realtime: strong-session-serializable and strong-read-uncommitted;
- G-single-realtime, G-nonadjacent-realtime, stale-read, lost-append:
  strong-session-serializable and strong-read-committed;
- G2-item-realtime: strong-session-serializable and strong-snapshot-isolation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clusterbench.checkers.verdict import Result
from clusterbench.history.ops import Outcome
from clusterbench.history.txn import MicroOp, Txn

X, Y, Z, U, V = 1, 2, 3, 4, 5
OK, FAIL, INFO = Outcome.OK, Outcome.FAIL, Outcome.UNKNOWN

NONE: list[str] = []
SS = ["strict-serializable"]
S_RU = ["strong-read-uncommitted"]
S_RC = ["strong-read-committed"]
S_SI = ["strong-snapshot-isolation"]
RR_SRC = ["repeatable-read", "strong-read-committed"]
SER = ["serializable"]
SER_SRU = ["serializable", "strong-read-uncommitted"]
SER_SRC = ["serializable", "strong-read-committed"]
SER_SSI = ["serializable", "strong-snapshot-isolation"]
SSS = ["strong-session-serializable"]
SSS_SRU = ["strong-session-serializable", "strong-read-uncommitted"]
SSS_SRC = ["strong-session-serializable", "strong-read-committed"]
SSS_SSI = ["strong-session-serializable", "strong-snapshot-isolation"]


def r(k: int, *vals: int) -> MicroOp:
    return MicroOp("r", k, tuple(vals))


def a(k: int, v: int) -> MicroOp:
    return MicroOp("append", k, v)


@dataclass(frozen=True)
class T:
    mops: tuple[MicroOp, ...]
    c: int | None = None
    at: tuple[float, float] | None = None
    out: Outcome = OK
    final: bool = False


def t(
    *mops: MicroOp,
    c: int | None = None,
    at: tuple[float, float] | None = None,
    out: Outcome = OK,
    final: bool = False,
) -> T:
    return T(tuple(mops), c, at, out, final)


def history(specs: list[T]) -> list[Txn]:
    out = []
    for i, s in enumerate(specs):
        start, end = s.at if s.at is not None else (i * 0.001, 1000.0)
        client = s.c if s.c is not None else 100 + i
        # reads of a transaction that did not complete ok have no known result
        mops = tuple(m if s.out is OK or m.f != "r" else MicroOp("r", m.key, None) for m in s.mops)
        out.append(Txn(i, client, f"node:{client}", s.out, mops, start, end, final=s.final))
    return out


@dataclass(frozen=True)
class Case:
    name: str
    cls: str
    specs: list[T]
    anomalies: frozenset[str]
    models: list[str]
    result: Result = Result.FAIL
    note: str = ""
    documented: tuple[str, ...] = field(default=())


def case(name: str, cls: str, specs: list[T], anomalies: set[str], models: list[str], **kw: object) -> Case:
    return Case(name, cls, specs, frozenset(anomalies), models, **kw)  # type: ignore[arg-type]


CASES: list[Case] = [
    # ---- G0: a cycle of ww edges ------------------------------------------------------------
    case("two writers in opposite orders on two keys", "G0",
         [t(a(X, 1), a(Y, 2)), t(a(X, 3), a(Y, 4)), t(r(X, 1, 3), r(Y, 4, 2))],
         {"G0"}, NONE),
    case("three writers, each pair ordered around a ring", "G0",
         [t(a(X, 1), a(Y, 2)), t(a(Y, 3), a(Z, 4)), t(a(Z, 5), a(X, 6)),
          t(r(X, 6, 1), r(Y, 2, 3), r(Z, 4, 5))],
         {"G0"}, NONE),
    case("an unread append placed after the longest read closes a write cycle", "G0",
         # y's longest read is [2]: T0's y=1 was never read, so it came after 2 (T1 -ww-> T0), while x
         # shows T0 before T1. T3 missed T0's y append yet saw T1, which follows T0: a G-single too.
         [t(a(X, 1), a(Y, 1)), t(a(X, 2), a(Y, 2)), t(r(X, 1, 2)), t(r(Y, 2))],
         {"G0", "G-single"}, NONE),
    # ---- G1c: ww and wr edges, at least one wr ---------------------------------------------
    case("two transactions each read the other's append", "G1c",
         [t(a(X, 1), r(Y, 2)), t(a(Y, 2), r(X, 1))],
         {"G1c"}, S_RU),
    case("a ww edge one way, a wr edge back", "G1c",
         [t(a(X, 1), r(Y, 5)), t(a(X, 2), a(Y, 5)), t(r(X, 1, 2))],
         {"G1c"}, S_RU),
    case("information flowing around three transactions", "G1c",
         [t(a(X, 1), r(Z, 3)), t(r(X, 1), a(Y, 2)), t(r(Y, 2), a(Z, 3))],
         {"G1c"}, S_RU),
    # ---- G-single: exactly one rw edge -------------------------------------------------------
    case("read skew: x before T0, y after it; x never read again and no final read", "G-single",
         [t(a(X, 1), a(Y, 1)), t(r(X), r(Y, 1))],
         {"G-single"}, S_RC),
    case("Berenson's P4: T1 read x, T2 appended without reading, T1 appended after T2", "G-single",
         [t(a(X, 1)), t(r(X, 1), a(X, 3)), t(a(X, 2)), t(r(X, 1, 2, 3), final=True)],
         {"G-single"}, S_RC),
    case("three transactions, one anti-dependency; appends never read", "G-single",
         [t(a(X, 1), a(Y, 1)), t(r(X, 1), a(Z, 1)), t(r(Z, 1), r(Y))],
         {"G-single"}, S_RC),
    case("a write onto a newer row across keys (seen on Galera)", "G-single",
         [t(a(5, 134), a(7, 135)), t(r(7), a(5, 140)), t(r(5, 134, 140), r(7, 135), final=True)],
         {"G-single"}, S_RC),
    # ---- G-nonadjacent: two or more rw edges, never adjacent ---------------------------------
    case("rw, wr, rw, wr", "G-nonadjacent",
         [t(a(X, 1)), t(r(X, 1), r(Y)), t(a(Y, 1)), t(r(Y, 1), r(X))],
         {"G-nonadjacent"}, S_RC),
    case("rw, wr, rw, wr over four keys, every append unread", "G-nonadjacent",
         [t(a(X, 1), a(V, 1)), t(r(X, 1), r(Y)), t(a(Y, 1), a(Z, 2)), t(r(Z, 2), r(V))],
         {"G-nonadjacent"}, S_RC),
    case("three rw edges alternating with wr", "G-nonadjacent",
         [t(a(X, 1)), t(r(X, 1), r(Y)), t(a(Y, 1)), t(r(Y, 1), r(Z)), t(a(Z, 1)), t(r(Z, 1), r(X))],
         {"G-nonadjacent"}, S_RC),
    # ---- G2-item: two or more rw edges, two of them adjacent --------------------------------
    case("write skew", "G2-item",
         [t(r(X), a(Y, 1)), t(r(Y), a(X, 1))],
         {"G2-item"}, S_SI),
    case("three transactions, three adjacent anti-dependencies", "G2-item",
         [t(r(X), a(Y, 1)), t(r(Y), a(Z, 1)), t(r(Z), a(X, 1))],
         {"G2-item"}, S_SI),
    case("rw, rw, wr", "G2-item",
         [t(r(X), r(Z, 1)), t(a(X, 1), r(Y)), t(a(Y, 1), a(Z, 1))],
         {"G2-item"}, S_SI),
    # ---- G1a: aborted read ------------------------------------------------------------------
    case("a read of a failed append", "G1a",
         [t(a(X, 1), out=FAIL), t(r(X, 1))],
         {"G1a"}, S_RU),
    case("a failed append read, an unknown one read too (fine)", "G1a",
         [t(a(X, 1), out=INFO), t(a(Y, 1), out=FAIL), t(r(X, 1), r(Y, 1))],
         {"G1a"}, S_RU),
    case("a failed append between committed ones: also a dirty update", "G1a",
         [t(a(X, 1)), t(a(X, 2), out=FAIL), t(a(X, 3)), t(r(X, 1, 2, 3))],
         {"G1a", "dirty-update"}, S_RU),
    # ---- G1b: intermediate read (its writer appended again after it: also a 2-cycle) ---------
    case("a read of the first of two appends", "G1b",
         [t(a(X, 1), a(X, 2)), t(r(X, 1)), t(r(X, 1, 2))],
         {"G1b", "G-single"}, S_RU),
    case("a read ending in the middle of another transaction's appends", "G1b",
         [t(a(X, 1)), t(a(X, 2), a(X, 3)), t(r(X, 1, 2)), t(r(X, 1, 2, 3))],
         {"G1b", "G-single"}, S_RU),
    case("a read of the second of three appends", "G1b",
         [t(a(X, 1), a(X, 2), a(X, 3)), t(r(X, 1, 2)), t(r(X, 1, 2, 3))],
         {"G1b", "G-single"}, S_RU),
    # ---- internal ---------------------------------------------------------------------------
    case("a read that lost the transaction's own append", "internal",
         [t(a(X, 1)), t(r(X, 1), a(X, 2), r(X, 1))],
         {"internal"}, RR_SRC),
    case("an append then a read not ending with it", "internal",
         [t(a(X, 1)), t(a(X, 2), r(X, 1))],
         {"internal"}, RR_SRC),
    case("two reads of one key differ (a non-repeatable read: also G-single)", "internal",
         [t(a(X, 1)), t(a(X, 2)), t(r(X, 1), r(X, 1, 2)), t(r(X, 1, 2))],
         {"internal", "G-single"}, S_RC),
    case("REPEATABLE READ with DML on the newest row: the append lands after an unseen one", "internal",
         [t(a(X, 1)), t(a(X, 2)), t(r(X, 1), a(X, 3), r(X, 1, 2, 3))],
         {"internal", "G-single"}, S_RC),
    # ---- future-read ------------------------------------------------------------------------
    case("a read of the transaction's own later append", "future-read",
         [t(r(X, 1), a(X, 1))],
         {"future-read"}, S_RU),
    case("a later own append at the end of a read", "future-read",
         [t(a(X, 1)), t(r(X, 1, 2), a(X, 2))],
         {"future-read"}, S_RU),
    case("a future read on one key, a plain read of another", "future-read",
         [t(r(Y, 7), a(Y, 7), a(X, 1)), t(r(X, 1), r(Y, 7))],
         {"future-read"}, S_RU),
    # ---- dirty-update: a committed append right after a failed one -------------------------
    case("ok after failed", "dirty-update",
         [t(a(X, 1), out=FAIL), t(a(X, 2)), t(r(X, 1, 2))],
         {"G1a", "dirty-update"}, S_RU),
    case("ok after failed with an unknown append between", "dirty-update",
         [t(a(X, 1), out=FAIL), t(a(X, 2), out=INFO), t(a(X, 3)), t(r(X, 1, 2, 3))],
         {"G1a", "dirty-update"}, S_RU),
    case("ok after a failed transaction's two appends", "dirty-update",
         [t(a(X, 1), a(X, 2), out=FAIL), t(a(X, 3)), t(r(X, 1, 2, 3))],
         {"G1a", "dirty-update"}, S_RU),
    # ---- duplicate-appends: an input error, the history is refused --------------------------
    case("two transactions append the same value", "duplicate-appends",
         [t(a(X, 1)), t(a(X, 1)), t(r(X, 1))],
         {"duplicate-appends"}, NONE, result=Result.UNKNOWN),
    case("one transaction appends a value twice", "duplicate-appends",
         [t(a(X, 1), a(X, 1)), t(r(X, 1, 1))],
         {"duplicate-appends"}, NONE, result=Result.UNKNOWN),
    case("a failed and an ok transaction append the same value", "duplicate-appends",
         [t(a(X, 1), out=FAIL), t(a(X, 1)), t(r(X, 1))],
         {"duplicate-appends"}, NONE, result=Result.UNKNOWN),
    # ---- incompatible-order -----------------------------------------------------------------
    case("two reads in opposite orders", "incompatible-order",
         [t(a(X, 1)), t(a(X, 2)), t(r(X, 1, 2)), t(r(X, 2, 1))],
         {"incompatible-order"}, S_RU),
    case("two reads that diverge after a common prefix", "incompatible-order",
         [t(a(X, 1)), t(a(X, 2)), t(a(X, 3)), t(r(X, 1, 2)), t(r(X, 1, 3))],
         {"incompatible-order"}, S_RU),
    case("a read that skips an element of the longest read", "incompatible-order",
         [t(a(X, 1)), t(a(X, 2)), t(a(X, 3)), t(r(X, 1, 2, 3)), t(r(X, 1, 3))],
         {"incompatible-order"}, S_RU),
    # ---- lost-update (Elle: two committed transactions read one version and both append) ------
    case("both read [0], neither appended element read: rw both ways", "lost-update",
         [t(a(X, 0)), t(r(X, 0), a(X, 1)), t(r(X, 0), a(X, 2))],
         {"lost-update", "G2-item"}, S_RC),
    case("both read [1], the order shows one after the other", "lost-update",
         [t(a(X, 1)), t(r(X, 1), a(X, 2)), t(r(X, 1), a(X, 3)), t(r(X, 1, 2, 3))],
         {"lost-update", "G-single"}, S_RC),
    case("three transactions read [1] and append", "lost-update",
         [t(a(X, 1)), t(r(X, 1), a(X, 2)), t(r(X, 1), a(X, 3)), t(r(X, 1), a(X, 4)), t(r(X, 1, 2, 3, 4))],
         {"lost-update", "G-single"}, S_RC),
    # ---- stale-read: missed an append acknowledged before the read began --------------------
    case("a read after the append was acknowledged", "stale-read",
         [t(a(X, 1), at=(0, 1)), t(r(X), at=(2, 3))],
         {"stale-read"}, SSS_SRC),
    case("a stale read, then a final read that has the append", "stale-read",
         [t(a(X, 1), at=(0, 1)), t(r(X), at=(2, 3)), t(r(X, 1), at=(5, 6), final=True)],
         {"stale-read"}, SSS_SRC),
    case("a read missing the second of two acknowledged appends", "stale-read",
         [t(a(X, 1), at=(0, 1)), t(a(X, 2), at=(1.5, 2)), t(r(X, 1), at=(3, 4)), t(r(X, 1, 2), at=(5, 6))],
         {"stale-read"}, SSS_SRC),
    # ---- lost-append: acknowledged, missing from a final read ------------------------------
    case("the only final read lacks the append", "lost-append",
         [t(a(X, 1), at=(0, 1)), t(r(X), at=(5, 6), final=True)],
         {"lost-append"}, SSS_SRC),
    case("one of two final reads lacks an append", "lost-append",
         [t(a(X, 1), at=(0, 1)), t(a(X, 2), at=(1.5, 2)), t(r(X, 1), at=(5, 6), c=900, final=True),
          t(r(X, 1, 2), at=(5, 6), c=901, final=True)],
         {"lost-append"}, SSS_SRC),
    case("a final read lacks one key's append, has the other's: a fractured read, G-single", "lost-append",
         [t(a(X, 1), a(Y, 1), at=(0, 1)), t(r(X, 1), r(Y), at=(5, 6), final=True)],
         {"lost-append", "G-single"}, S_RC),
    # ---- duplicate-elements and phantom-value: reads no appends explain ---------------------
    case("an element twice", "duplicate-elements",
         [t(a(X, 1)), t(r(X, 1, 1))],
         {"duplicate-elements"}, NONE),
    case("a repeated element is no ww back-edge: the cycle is G1c, not G0", "duplicate-elements",
         [t(a(X, 1), r(Y, 2)), t(a(X, 3), a(Y, 2)), t(r(X, 1, 3, 1))],
         {"duplicate-elements", "G1c"}, NONE),
    case("an element twice in an otherwise fine read", "duplicate-elements",
         [t(a(X, 1)), t(a(X, 2)), t(r(X, 1, 2, 1)), t(r(X, 1, 2))],
         {"duplicate-elements"}, NONE),
    case("a value nobody appended", "phantom-value",
         [t(r(X, 7))],
         {"phantom-value"}, NONE),
    case("a value nobody appended after a real one", "phantom-value",
         [t(a(X, 1)), t(r(X, 1, 9))],
         {"phantom-value"}, NONE),
    case("a value nobody appended, in an incompatible read", "phantom-value",
         [t(a(X, 1)), t(a(X, 2)), t(r(X, 1, 2)), t(r(X, 1, 8))],
         {"phantom-value", "incompatible-order"}, NONE),
    # ---- process variants: a client's own order closes the cycle ---------------------------
    case("a session's second append ordered before its first", "G0-process",
         [t(a(X, 1), c=1, at=(0, 1)), t(a(X, 2), c=1, at=(2, 3)), t(r(X, 2, 1))],
         {"G0-process"}, SER),
    case("session order and two ww edges", "G0-process",
         [t(a(X, 1), c=1, at=(0, 1)), t(a(Y, 1), c=1, at=(2, 3)), t(a(Y, 2), a(X, 2)),
          t(r(X, 2, 1), r(Y, 1, 2))],
         {"G0-process"}, SER),
    case("session order against an unread append placed after the longest read", "G0-process",
         [t(a(X, 1), c=1, at=(0, 1)), t(a(X, 2), c=1, at=(2, 3)), t(r(X, 2))],
         {"G0-process"}, SER),
    case("Elle issue 21: wr, wr and a session edge", "G1c-process",
         [t(r(X, 1), a(Y, 1)), t(r(Y, 1), c=2, at=(2, 3)), t(a(X, 1), c=2, at=(4, 5))],
         {"G1c-process"}, SER_SRU),
    case("session edge, wr, ww", "G1c-process",
         [t(a(X, 1), c=1, at=(0, 1)), t(a(Y, 2), c=1, at=(2, 3)), t(r(Y, 2), a(X, 5)), t(r(X, 5, 1))],
         {"G1c-process"}, SER_SRU),
    case("a session reads what it appends in its next transaction", "G1c-process",
         [t(r(Z, 3), c=1, at=(0, 1)), t(a(Z, 3), c=1, at=(2, 3))],
         {"G1c-process"}, SER_SRU),
    case("a session does not read its own acknowledged append", "G-single-process",
         [t(a(X, 1), c=1, at=(0, 1)), t(r(X), c=1, at=(2, 3))],
         {"G-single-process", "stale-read"}, SER_SRC),
    case("session edge, wr, rw", "G-single-process",
         [t(a(X, 1), c=1, at=(0, 1)), t(a(Y, 1), c=1, at=(2, 3)), t(r(Y, 1), r(X))],
         {"G-single-process"}, SER_SRC),
    case("a session reads less than it read before (monotonic reads)", "G-single-process",
         [t(a(X, 1)), t(r(X, 1), c=1, at=(2, 3)), t(r(X), c=1, at=(4, 5))],
         {"G-single-process"}, SER_SRC),
    case("rw, session, rw, wr", "G-nonadjacent-process",
         [t(r(X), r(Z, 1)), t(a(X, 1), c=1, at=(0, 1)), t(r(Y), c=1, at=(2, 3)), t(a(Y, 1), a(Z, 1))],
         {"G-nonadjacent-process"}, SER_SRC),
    case("session, rw, session, rw (the reads are stale too)", "G-nonadjacent-process",
         [t(a(Y, 1), c=1, at=(0, 1)), t(r(X), c=1, at=(2, 3)),
          t(a(X, 1), c=2, at=(0, 1)), t(r(Y), c=2, at=(2, 3))],
         {"G-nonadjacent-process", "stale-read"}, SER_SRC),
    case("rw, session, rw, ww", "G-nonadjacent-process",
         [t(r(X), a(Z, 2)), t(a(X, 1), c=1, at=(0, 1)), t(r(Y), c=1, at=(2, 3)), t(a(Y, 1), a(Z, 1)),
          t(r(Z, 1, 2))],
         {"G-nonadjacent-process"}, SER_SRC),
    case("rw, rw, session", "G2-item-process",
         [t(a(Y, 1), c=1, at=(0, 1)), t(r(X), c=1, at=(2, 3)), t(a(X, 1), r(Y))],
         {"G2-item-process"}, SER_SSI),
    case("rw, rw, wr, session", "G2-item-process",
         [t(r(Z, 1), c=1, at=(0, 1)), t(r(X), c=1, at=(2, 3)), t(a(X, 1), r(Y)), t(a(Y, 1), a(Z, 1))],
         {"G2-item-process"}, SER_SSI),
    case("rw, rw, rw, session", "G2-item-process",
         [t(a(Z, 1), c=1, at=(0, 1)), t(r(X), c=1, at=(2, 3)), t(a(X, 1), r(Y)), t(a(Y, 1), r(Z))],
         {"G2-item-process"}, SER_SSI),
    # ---- realtime variants: what ended before another began closes the cycle ---------------
    case("a later transaction's append ordered first", "G0-realtime",
         [t(a(X, 1), at=(0, 1)), t(a(X, 2), at=(2, 3)), t(r(X, 2, 1))],
         {"G0-realtime"}, SSS),
    case("real time against an unread append placed after the longest read", "G0-realtime",
         [t(a(X, 1), at=(0, 1)), t(a(X, 2), at=(2, 3)), t(r(X, 2))],
         {"G0-realtime"}, SSS),
    case("real time and two ww edges", "G0-realtime",
         [t(a(X, 1), at=(0, 1)), t(a(Y, 1), at=(2, 3)), t(a(Y, 2), a(X, 2)), t(r(X, 2, 1), r(Y, 1, 2))],
         {"G0-realtime"}, SSS),
    case("a read of an append made by a transaction that began after it ended", "G1c-realtime",
         [t(r(X, 1), at=(0, 1)), t(a(X, 1), at=(2, 3))],
         {"G1c-realtime"}, SSS_SRU),
    case("real time, wr, ww", "G1c-realtime",
         [t(a(X, 1), at=(0, 1)), t(a(Y, 1), at=(2, 3)), t(r(Y, 1), a(X, 5)), t(r(X, 5, 1))],
         {"G1c-realtime"}, SSS_SRU),
    case("a read of a later transaction of unknown outcome", "G1c-realtime",
         [t(r(X, 1), at=(0, 1)), t(a(X, 1), at=(2, 3), out=INFO)],
         {"G1c-realtime"}, SSS_SRU),
    case("saw a later transaction, missed an earlier one (the issue's chain)", "G-single-realtime",
         [t(a(X, 1), at=(0, 1)), t(a(Y, 1), at=(2, 3)), t(r(Y, 1), r(X))],
         {"G-single-realtime"}, SSS_SRC),
    case("two real-time edges, wr, rw", "G-single-realtime",
         [t(a(X, 1), at=(0, 1)), t(a(Z, 1), at=(2, 3)), t(a(Y, 1), at=(4, 5)), t(r(Y, 1), r(X))],
         {"G-single-realtime"}, SSS_SRC),
    case("real time, ww, rw", "G-single-realtime",
         [t(a(X, 1), at=(0, 1)), t(a(Y, 1), at=(2, 3)), t(a(Y, 2), r(X)), t(r(Y, 1, 2))],
         {"G-single-realtime"}, SSS_SRC),
    case("rw, real time, rw, wr", "G-nonadjacent-realtime",
         [t(r(X), r(Z, 1)), t(a(X, 1), at=(0, 1)), t(r(Y), at=(2, 3)), t(a(Y, 1), a(Z, 1))],
         {"G-nonadjacent-realtime"}, SSS_SRC),
    case("rw, wr, rw, real time", "G-nonadjacent-realtime",
         [t(a(Z, 1), at=(0, 1)), t(r(X), at=(2, 3)), t(a(X, 1), a(Y, 1)), t(r(Y, 1), r(Z))],
         {"G-nonadjacent-realtime"}, SSS_SRC),
    case("rw, real time, rw, ww", "G-nonadjacent-realtime",
         [t(r(X), a(Z, 2)), t(a(X, 1), at=(0, 1)), t(r(Y), at=(2, 3)), t(a(Y, 1), a(Z, 1)), t(r(Z, 1, 2))],
         {"G-nonadjacent-realtime"}, SSS_SRC),
    case("rw, rw, real time", "G2-item-realtime",
         [t(a(Y, 1), at=(0, 1)), t(r(X), at=(2, 3)), t(a(X, 1), r(Y))],
         {"G2-item-realtime"}, SSS_SSI),
    case("rw, rw, wr, real time", "G2-item-realtime",
         [t(r(Z, 1), at=(0, 1)), t(r(X), at=(2, 3)), t(a(X, 1), r(Y)), t(a(Y, 1), a(Z, 1))],
         {"G2-item-realtime"}, SSS_SSI),
    case("rw, rw, rw, real time", "G2-item-realtime",
         [t(a(Z, 1), at=(0, 1)), t(r(X), at=(2, 3)), t(a(X, 1), r(Y)), t(a(Y, 1), r(Z))],
         {"G2-item-realtime"}, SSS_SSI),
    # ---- valid histories: negative controls ------------------------------------------------
    case("serial, in real time", "valid",
         [t(r(X), a(X, 1), at=(0, 1)), t(r(X, 1), a(X, 2), a(Y, 1), at=(2, 3)),
          t(r(X, 1, 2), r(Y, 1), at=(4, 5))],
         set(), SS, result=Result.PASS),
    case("failed and unknown appends, neither read", "valid",
         [t(a(X, 1), at=(0, 1)), t(a(X, 2), at=(0.5, 1.5), out=FAIL), t(a(X, 3), at=(0.5, 2), out=INFO),
          t(r(X, 1), at=(3, 4))],
         set(), SS, result=Result.PASS),
    case("two sessions, each sees what it and the other did before", "valid",
         [t(a(X, 1), c=1, at=(0, 1)), t(r(X, 1), a(Y, 2), c=1, at=(2, 3)),
          t(r(Y, 2), r(X, 1), c=2, at=(4, 5))],
         set(), SS, result=Result.PASS),
    case("one value on two keys", "valid",
         [t(a(X, 1), a(Y, 1)), t(r(X, 1), r(Y, 1))],
         set(), SS, result=Result.PASS),
    case("one transaction reads, then appends twice", "valid",
         [t(r(X), a(X, 1), a(X, 2)), t(r(X, 1, 2))],
         set(), SS, result=Result.PASS),
    case("a read concurrent with an append may miss it", "valid",
         [t(a(X, 1), at=(0, 1)), t(r(X), at=(0.5, 1.5)), t(r(X, 1), at=(2, 3))],
         set(), SS, result=Result.PASS),
]  # fmt: skip

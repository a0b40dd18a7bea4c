"""What the web tier's load says after a trial (pure): whether every acknowledged write is a row on
every node, and how long each fault broke the service for HTTP users.

Acknowledged writes: the application answers 200 on a write page only after its COMMIT returned,
with the write's id; so every such id must be a row of its table on every database node once the
cluster has settled. A write that failed or timed out may or may not have committed (its outcome
is unknown to the client) and is not checked. PASS when every node has every acknowledged row; FAIL
naming the node and the ids it lacks; UNKNOWN when nothing was acknowledged or a node could not
be read (and no readable node lacks a row).

HTTP outage per fault, from the per-second HTTP figures of all clients together (a second holds the
requests that came due in it): the failed requests (no answer within the timeout, or a status
outside 200-399) from one second before the fault until the next fault starts. The outage runs
from the start of the first second with a failure to the end of the last one; `error_seconds`
says how many seconds inside it had failures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from clusterbench.checkers.verdict import Result, Verdict

NAME = "acknowledged-writes"
# ids listed per node in a FAIL's evidence (the counts are always complete)
SHOWN = 20


def check_acknowledged(acknowledged: Sequence[str], present: Mapping[str, set[str] | None]) -> Verdict:
    """`acknowledged`: the ids of the writes answered 200; `present`: per node (n1...) the ids of
    those it has as rows, None when it could not be read."""
    acked = list(dict.fromkeys(acknowledged))
    if not acked:
        why = "no write was acknowledged (no 200 on a write page): nothing to check"
        return Verdict(NAME, Result.UNKNOWN, why, {"acknowledged": 0})
    unread = sorted(n for n, ids in present.items() if ids is None)
    missing = {n: [i for i in acked if i not in ids] for n, ids in sorted(present.items()) if ids is not None}
    lost = {n: ids for n, ids in missing.items() if ids}
    evidence: dict[str, Any] = {
        "acknowledged": len(acked),
        "nodes": sorted(present),
        "unread": unread,
        "missing_counts": {n: len(ids) for n, ids in lost.items()},
        "missing": {n: ids[:SHOWN] for n, ids in lost.items()},
    }
    if lost:
        worst = max(lost, key=lambda n: len(lost[n]))
        where = ", ".join(f"{n} lacks {len(ids)}" for n, ids in lost.items())
        example = f"e.g. {lost[worst][0]} on {worst}"
        return Verdict(NAME, Result.FAIL, f"acknowledged writes lost: of {len(acked)} answered 200, {where} "
                       f"({example})", evidence)  # fmt: skip
    if unread or not present:
        why = f"could not read {', '.join(unread)}" if unread else "no node was read"
        return Verdict(NAME, Result.UNKNOWN, f"{len(acked)} acknowledged writes; {why}", evidence)
    nodes = ", ".join(sorted(present))
    summary = f"all {len(acked)} acknowledged writes are rows on every node ({nodes})"
    return Verdict(NAME, Result.PASS, summary, evidence)


class HttpSecondLike(Protocol):
    """One second of the HTTP load, all clients together (workloads.vegeta.HttpSecond)."""

    @property
    def t(self) -> float: ...  # the second's end, s after the load began

    @property
    def requests(self) -> int: ...

    @property
    def successes(self) -> int: ...

    @property
    def codes(self) -> dict[str, int]: ...

    @property
    def p99_ms(self) -> float | None: ...


@dataclass(frozen=True)
class HttpOutage:
    """What one fault did to the HTTP service (trial times, s)."""

    fault: str
    fault_start: float
    fault_end: float
    requests: int  # due from one second before the fault until the next one
    failed: int
    codes: dict[str, int] = field(default_factory=dict)  # of the failed requests ("0": no answer)
    errors_from: float | None = None  # start of the first second with a failure
    errors_until: float | None = None  # end of the last one
    error_seconds: int = 0
    max_p99_ms: float | None = None  # the slowest second's p99 there

    @property
    def seconds(self) -> float:
        """The outage window's length (0 without a failure)."""
        if self.errors_from is None or self.errors_until is None:
            return 0.0
        return round(self.errors_until - self.errors_from, 3)

    def line(self) -> str:
        if self.failed == 0:
            return f"{self.fault}: no HTTP error ({self.requests} requests around it)"
        codes = ", ".join(f"{c}: {n}" for c, n in sorted(self.codes.items()))
        return (f"{self.fault}: HTTP errors from {self.errors_from:.1f} to {self.errors_until:.1f} s "
                f"({self.seconds:g} s window, {self.error_seconds} s with errors), {self.failed} of "
                f"{self.requests} requests failed ({codes}; code 0 = no answer)")  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "seconds": self.seconds}


def http_outages(
    seconds: Sequence[HttpSecondLike], windows: Sequence[tuple[str, float, float]], offset: float = 0.0
) -> list[HttpOutage]:
    """Per fault window (label, start, end in trial time): the HTTP failures around it. `offset`
    is when the load began in trial time (a second's end t is at offset + t)."""
    ordered = sorted(windows, key=lambda w: w[1])
    out = []
    for i, (label, start, end) in enumerate(ordered):
        nxt = ordered[i + 1][1] if i + 1 < len(ordered) else float("inf")
        inside = [s for s in seconds if start - 1 < offset + s.t <= nxt + 1e-9]
        bad = [s for s in inside if s.requests > s.successes]
        codes: dict[str, int] = {}
        for s in bad:
            for code, n in s.codes.items():
                if not 200 <= int(code) < 400:
                    codes[code] = codes.get(code, 0) + n
        p99 = [s.p99_ms for s in inside if s.p99_ms is not None]
        out.append(HttpOutage(
            label, round(start, 3), round(end, 3), sum(s.requests for s in inside),
            sum(s.requests - s.successes for s in bad), codes,
            round(offset + bad[0].t - 1, 3) if bad else None, round(offset + bad[-1].t, 3) if bad else None,
            len(bad), max(p99) if p99 else None,
        ))  # fmt: skip
    return out

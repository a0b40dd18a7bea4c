"""The TPC-C consistency conditions (specification clause 3.3.2.1 to 3.3.2.12) as a checker.

Each condition is one SELECT that returns the rows violating it (a district, an order, a
customer ...), so a FAIL names the condition and shows where it breaks. The SQL is plain enough
to run on MariaDB, MySQL and SQLite (the unit tests run it on crafted SQLite tables). Money is
compared with a tolerance of half a cent.

Condition 11 (orders minus new-orders per district equals the initial 70 % of the customers,
2100 at full scale) holds only right after loading: the run's New-Order and Delivery change it
by design. After a trial it is reported as `load-only`, not failed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

EPS = "0.005"
# Per customer (w, d, cid): the sum of its delivered order lines' amounts (conditions 10 and 12).
_DELIVERED_PER_CUSTOMER = """\
LEFT JOIN (SELECT o.o_w_id AS w, o.o_d_id AS d, o.o_c_id AS cid, SUM(l.ol_amount) AS s
           FROM orders o JOIN order_line l
             ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id
           WHERE l.ol_delivery_d IS NOT NULL GROUP BY o.o_w_id, o.o_d_id, o.o_c_id) ol
  ON ol.w = c.c_w_id AND ol.d = c.c_d_id AND ol.cid = c.c_id"""


@dataclass(frozen=True)
class Condition:
    number: int
    title: str
    sql: str
    load_only: bool = False


CONDITIONS: tuple[Condition, ...] = (
    Condition(
        1,
        "W_YTD = sum(D_YTD) for each warehouse",
        f"""
SELECT w.w_id, w.w_ytd, d.s FROM warehouse w
JOIN (SELECT d_w_id, SUM(d_ytd) AS s FROM district GROUP BY d_w_id) d ON d.d_w_id = w.w_id
WHERE ABS(w.w_ytd - d.s) > {EPS}""",
    ),
    Condition(
        2,
        "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) for each district",
        """
SELECT d.d_w_id, d.d_id, d.d_next_o_id, o.m, n.m FROM district d
LEFT JOIN (SELECT o_w_id, o_d_id, MAX(o_id) AS m FROM orders GROUP BY o_w_id, o_d_id) o
  ON o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id
LEFT JOIN (SELECT no_w_id, no_d_id, MAX(no_o_id) AS m FROM new_order GROUP BY no_w_id, no_d_id) n
  ON n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id
WHERE o.m IS NULL OR o.m <> d.d_next_o_id - 1 OR (n.m IS NOT NULL AND n.m <> d.d_next_o_id - 1)""",
    ),
    Condition(
        3,
        "max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER for each district",
        """
SELECT no_w_id, no_d_id, MIN(no_o_id), MAX(no_o_id), COUNT(*) FROM new_order
GROUP BY no_w_id, no_d_id HAVING MAX(no_o_id) - MIN(no_o_id) + 1 <> COUNT(*)""",
    ),
    Condition(
        4,
        "sum(O_OL_CNT) = rows in ORDER-LINE for each district",
        """
SELECT o.o_w_id, o.o_d_id, o.s, l.c FROM
(SELECT o_w_id, o_d_id, SUM(o_ol_cnt) AS s FROM orders GROUP BY o_w_id, o_d_id) o
LEFT JOIN (SELECT ol_w_id, ol_d_id, COUNT(*) AS c FROM order_line GROUP BY ol_w_id, ol_d_id) l
  ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id
WHERE l.c IS NULL OR l.c <> o.s""",
    ),
    Condition(
        5,
        "O_CARRIER_ID is null exactly for the orders that have a NEW-ORDER row",
        """
SELECT o.o_w_id, o.o_d_id, o.o_id, o.o_carrier_id FROM orders o
LEFT JOIN new_order n ON n.no_w_id = o.o_w_id AND n.no_d_id = o.o_d_id AND n.no_o_id = o.o_id
WHERE (o.o_carrier_id IS NULL AND n.no_o_id IS NULL)
   OR (o.o_carrier_id IS NOT NULL AND n.no_o_id IS NOT NULL)""",
    ),
    Condition(
        6,
        "O_OL_CNT = rows in ORDER-LINE for each order",
        """
SELECT o.o_w_id, o.o_d_id, o.o_id, o.o_ol_cnt, l.c FROM orders o
LEFT JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, COUNT(*) AS c FROM order_line
           GROUP BY ol_w_id, ol_d_id, ol_o_id) l
  ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id
WHERE l.c IS NULL OR l.c <> o.o_ol_cnt""",
    ),
    Condition(
        7,
        "OL_DELIVERY_D is null exactly when the order's O_CARRIER_ID is null",
        """
SELECT l.ol_w_id, l.ol_d_id, l.ol_o_id, l.ol_number FROM order_line l
JOIN orders o ON o.o_w_id = l.ol_w_id AND o.o_d_id = l.ol_d_id AND o.o_id = l.ol_o_id
WHERE (l.ol_delivery_d IS NULL AND o.o_carrier_id IS NOT NULL)
   OR (l.ol_delivery_d IS NOT NULL AND o.o_carrier_id IS NULL)""",
    ),
    Condition(
        8,
        "W_YTD = sum(H_AMOUNT) for each warehouse",
        f"""
SELECT w.w_id, w.w_ytd, h.s FROM warehouse w
LEFT JOIN (SELECT h_w_id, SUM(h_amount) AS s FROM history GROUP BY h_w_id) h ON h.h_w_id = w.w_id
WHERE ABS(w.w_ytd - COALESCE(h.s, 0)) > {EPS}""",
    ),
    Condition(
        9,
        "D_YTD = sum(H_AMOUNT) for each district",
        f"""
SELECT d.d_w_id, d.d_id, d.d_ytd, h.s FROM district d
LEFT JOIN (SELECT h_w_id, h_d_id, SUM(h_amount) AS s FROM history GROUP BY h_w_id, h_d_id) h
  ON h.h_w_id = d.d_w_id AND h.h_d_id = d.d_id
WHERE ABS(d.d_ytd - COALESCE(h.s, 0)) > {EPS}""",
    ),
    Condition(
        10,
        "C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT) for each customer",
        f"""
SELECT c.c_w_id, c.c_d_id, c.c_id, c.c_balance, ol.s, h.s FROM customer c
{_DELIVERED_PER_CUSTOMER}
LEFT JOIN (SELECT h_c_w_id AS w, h_c_d_id AS d, h_c_id AS cid, SUM(h_amount) AS s FROM history
           GROUP BY h_c_w_id, h_c_d_id, h_c_id) h
  ON h.w = c.c_w_id AND h.d = c.c_d_id AND h.cid = c.c_id
WHERE ABS(c.c_balance - (COALESCE(ol.s, 0) - COALESCE(h.s, 0))) > {EPS}""",
    ),
    Condition(
        11,
        "rows in ORDER - rows in NEW-ORDER = 70 % of the customers (2100) for each district",
        """
SELECT d.d_w_id, d.d_id, COALESCE(o.c, 0) - COALESCE(n.c, 0), c.c FROM district d
JOIN (SELECT c_w_id, c_d_id, COUNT(*) AS c FROM customer GROUP BY c_w_id, c_d_id) c
  ON c.c_w_id = d.d_w_id AND c.c_d_id = d.d_id
LEFT JOIN (SELECT o_w_id, o_d_id, COUNT(*) AS c FROM orders GROUP BY o_w_id, o_d_id) o
  ON o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id
LEFT JOIN (SELECT no_w_id, no_d_id, COUNT(*) AS c FROM new_order GROUP BY no_w_id, no_d_id) n
  ON n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id
WHERE NOT (10 * (COALESCE(o.c, 0) - COALESCE(n.c, 0)) BETWEEN 7 * c.c - 9 AND 7 * c.c)""",
        load_only=True,
    ),
    Condition(
        12,
        "C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT) for each customer",
        f"""
SELECT c.c_w_id, c.c_d_id, c.c_id, c.c_balance, c.c_ytd_payment, ol.s FROM customer c
{_DELIVERED_PER_CUSTOMER}
WHERE ABS(c.c_balance + c.c_ytd_payment - COALESCE(ol.s, 0)) > {EPS}""",
    ),
)


@dataclass(frozen=True)
class ConditionResult:
    number: int
    title: str
    status: str  # PASS, FAIL or load-only (a load-only condition that does not hold after a run)
    violations: int = 0
    example: tuple[Any, ...] | None = None

    def line(self) -> str:
        s = f"condition {self.number} ({self.title}): {self.status}"
        if self.status != "PASS":
            s += f", {self.violations} row(s)"
            if self.example is not None:
                s += f", e.g. {', '.join(str(v) for v in self.example)}"
        if self.status == "load-only":
            s += " (holds only right after loading; not a failure after a run)"
        return s

    def to_json(self) -> dict[str, Any]:
        return {"condition": self.number, "title": self.title, "status": self.status,
                "violations": self.violations,
                "example": [str(v) for v in self.example] if self.example is not None else None}  # fmt: skip


@dataclass(frozen=True)
class CheckReport:
    when: str  # "load" (right after loading) or "run" (after load was applied)
    results: tuple[ConditionResult, ...] = field(default_factory=tuple)

    @property
    def failed(self) -> list[ConditionResult]:
        return [r for r in self.results if r.status == "FAIL"]

    @property
    def verdict(self) -> str:
        return "FAIL" if self.failed else "PASS"

    def summary_line(self) -> str:
        if not self.failed:
            extra = [r.number for r in self.results if r.status == "load-only"]
            note = f" (condition {', '.join(map(str, extra))} reported as load-only)" if extra else ""
            return f"TPC-C consistency after {self.when}: PASS, {len(self.results)} conditions{note}"
        names = "; ".join(f"condition {r.number} ({r.title})" for r in self.failed)
        return f"TPC-C consistency after {self.when}: FAIL: {names}"

    def to_json(self) -> dict[str, Any]:
        return {"when": self.when, "verdict": self.verdict, "conditions": [r.to_json() for r in self.results]}


Query = Callable[[str], Sequence[Sequence[Any]]]


def check(query: Query, *, when: str = "run", only: Sequence[int] | None = None) -> CheckReport:
    """Run every condition through `query` (SQL → rows). `when`: "load" right after loading (all
    twelve must hold), anything else after a run (condition 11 is then reported as load-only)."""
    out = []
    for c in CONDITIONS:
        if only is not None and c.number not in only:
            continue
        rows = list(query(c.sql))
        if not rows:
            out.append(ConditionResult(c.number, c.title, "PASS"))
            continue
        status = "load-only" if c.load_only and when != "load" else "FAIL"
        out.append(ConditionResult(c.number, c.title, status, len(rows), tuple(rows[0])))
    return CheckReport(when, tuple(out))


def cursor_query(cur: Any) -> Query:
    """A Query over a DB-API cursor."""

    def run(sql: str) -> Sequence[Sequence[Any]]:
        cur.execute(sql)
        return list(cur.fetchall())

    return run

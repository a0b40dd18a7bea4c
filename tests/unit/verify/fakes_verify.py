"""Fakes shared by the verification unit tests: a stepping clock and a scripted connection."""

from __future__ import annotations

from typing import Any

from clusterbench.history.ops import Op, Outcome


class StepClock:
    """now() returns start, start+step, start+2*step, ...; sleep() only advances."""

    def __init__(self, start: float = 100.0, step: float = 0.25) -> None:
        self.t = start
        self.step = step

    def now(self) -> float:
        v = self.t
        self.t += self.step
        return v

    def sleep(self, seconds: float) -> None:
        self.t += seconds


class FakeCursor:
    def __init__(self, conn: FakeConn) -> None:
        self.conn = conn
        self._rows: list[tuple[Any, ...]] = []

    def __enter__(self) -> FakeCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, sql: str, args: Any = None) -> int:
        self.conn.executed.append((sql, args))
        err = self.conn.fail_on_execute.pop(0) if self.conn.fail_on_execute else None
        if err is not None:
            raise err
        self._rows = self.conn.results.pop(0) if self.conn.results else []
        return len(self._rows)

    def executemany(self, sql: str, rows: Any) -> int:
        for r in rows:
            self.execute(sql, r)
        return len(rows)

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None


class FakeConn:
    def __init__(
        self,
        *,
        fail_on_execute: list[BaseException | None] | None = None,
        fail_on_commit: BaseException | None = None,
        results: list[list[tuple[Any, ...]]] | None = None,
    ) -> None:
        self.executed: list[tuple[str, Any]] = []
        self.fail_on_execute = list(fail_on_execute or [])
        self.fail_on_commit = fail_on_commit
        self.results = list(results or [])
        self.commits = 0
        self.closed = False

    def cursor(self) -> FakeCursor:
        return FakeCursor(self)

    def commit(self) -> None:
        if self.fail_on_commit is not None:
            raise self.fail_on_commit
        self.commits += 1

    def rollback(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def op(
    key: str | None,
    outcome: Outcome,
    t_start: float = 0.0,
    t_end: float | None = None,
    *,
    workload: str = "ledger",
    kind: str = "insert",
    process: str = "balancer",
    client: int = 0,
    value: str | None = None,
    code: int | None = None,
) -> Op:
    end = t_start + 0.01 if t_end is None else t_end
    return Op(workload, client, process, "198.18.0.2", kind, key, value, 1e9 + t_start, 1e9 + end,
              t_start, end, outcome, code, None if code is None else f"error {code}")  # fmt: skip

"""Availability prober (C7): every `interval` seconds per entry point, a fresh connection, a
tiny write and a COMMIT. Its ops give each path's error window and latency (checkers.availability)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Unpack

from clusterbench.history.ops import History, Op, Phase, Timebase, classify
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.verify.client import (
    Connection,
    Pacer,
    default_connector,
    process_name,
    run_transaction,
    safe_close,
)
from clusterbench.verify.workload import ClientOptions, TableClients

TABLE = "cb_probe"
WORKLOAD = "probe"


class AvailabilityProber(TableClients):
    """One prober thread per address of every endpoint (an all-nodes endpoint probes each node).
    Each probe REPLACEs its own row, so the table stays tiny and probers never conflict."""

    NAME = WORKLOAD
    DEFAULT_TABLE = TABLE
    CLIENT_BASE = 1000

    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        history: History,
        timebase: Timebase,
        *,
        interval: float = 0.1,
        **options: Unpack[ClientOptions],
    ) -> None:
        self.targets: list[tuple[Endpoint, Address]] = [(e, a) for e in endpoints for a in e.addresses]
        if not self.targets:
            raise ValueError("the prober needs at least one endpoint")
        super().__init__(history, timebase, **options)
        self.interval = interval
        self.connector = options.get("connector", default_connector)
        self.clients = [self.client_base + i for i in range(len(self.targets))]

    def create(self, cur: Any) -> None:
        cur.execute(
            f"CREATE TABLE {self.table} (prober INT NOT NULL PRIMARY KEY, "
            "seq INT NOT NULL, at DOUBLE NOT NULL) ENGINE=InnoDB"
        )

    def _loop(self, client: int, stop: threading.Event) -> None:
        endpoint, address = self.targets[client - self.client_base]
        pacer = Pacer(1.0 / self.interval, self.tb.clock.now)
        seq = 0
        while not stop.wait(pacer.delay()):
            seq += 1
            self.probe(client, seq, endpoint, address)

    def probe(self, client: int, seq: int, endpoint: Endpoint, address: Address) -> Op:
        wall0, t0 = self.tb.stamp()
        conn: Connection | None = None
        msg: str | None
        try:
            conn = self.connector(endpoint, address)
        except Exception as exc:  # noqa: BLE001 - a refused connection is an unavailable path
            outcome, code, msg = classify(exc, Phase.CONNECT)
        else:
            res = run_transaction(
                conn,
                lambda cur: cur.execute(
                    f"REPLACE INTO {self.table} (prober, seq, at) VALUES (%s, %s, %s)", (client, seq, wall0)
                ),
            )
            outcome, code, msg = res.outcome, res.error_code, res.error
        finally:
            safe_close(conn)
        wall1, t1 = self.tb.stamp()
        op = Op(WORKLOAD, client, process_name(endpoint, address), address.host, "probe", str(seq), None,
                wall0, wall1, t0, t1, outcome, code, msg)  # fmt: skip
        self.history.add(op)
        return op

"""Where a workload connects to: the contract between clusters and workloads."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, BaseModel, ConfigDict, Field


class Address(BaseModel):
    model_config = ConfigDict(frozen=True)

    host: str
    port: int = Field(3306, ge=1, le=65535)


class Endpoint(BaseModel):
    """A MySQL-protocol entry point: one address (balancer, one node) or several (all nodes).

    `addresses` with more than one entry means sysbench's own round-robin host list.
    """

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="'balancer', 'node:N', 'all-nodes' or a user label")
    addresses: tuple[Address, ...]
    user: str
    password: str
    database: str = "sbtest"
    tls: bool = False
    tls_dir: Path | None = Field(
        None, description="directory holding cacert.pem, client-cert.pem, client-key.pem"
    )
    # A replicated cluster whose auto-increment leaves gaps and whose nodes may lag: sysbench runs
    # with --auto_inc=off and the checks read causally. `--galera/--no-galera` on the command line;
    # stored endpoints of older versions say "galera".
    auto_inc_off: bool = Field(
        True,
        validation_alias=AliasChoices("auto_inc_off", "galera"),
        description="sysbench --auto_inc=off and causal reads for the checks (a replicated cluster)",
    )
    socket: Path | None = Field(
        None,
        description="the server's Unix socket: clients connect through it instead of `addresses` (which "
        "then only name the server), so they must run on the server's host",
    )

    def masked_password(self) -> str:
        if len(self.password) <= 2:
            return "*" * len(self.password)
        return self.password[:2] + "*" * (len(self.password) - 2)

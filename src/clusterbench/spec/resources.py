"""What every host of a topology may have: limits on its CPU and link. Pure; shared by the database
nodes (`[resources]`, `[[node]]`) and the web nodes (`[web.resources]`, `[[web.node]]`)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from clusterbench.spec.fields import checked

RATE_RE = re.compile(r"^[0-9]+(\.[0-9]+)?(kbit|mbit|gbit|bit)$")
CPUSET_RE = re.compile(r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$")
CpuSet = Annotated[str, checked(CPUSET_RE.match, "is not a CPU list like '0' or '0-1' or '0,1'")]
LinkRate = Annotated[str, checked(RATE_RE.match, "is not a rate like '100mbit', '512kbit' or '1gbit'")]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Resources(Strict):
    """Limits for one host. `cpu_quota` is in CPUs (0.5 = half a core), via cgroup v1 cfs quota."""

    cpu_quota: float | None = Field(None, gt=0, le=64)
    cpuset: CpuSet | None = None
    bandwidth: LinkRate | None = Field(None, description="tbf rate on the host's link, e.g. '10mbit'")

    def merged(self, override: Resources) -> Resources:
        data = self.model_dump()
        data.update({k: v for k, v in override.model_dump().items() if v is not None})
        return Resources(**data)

    def cpus(self) -> float | None:
        """How many CPUs these limits leave: the quota, else the size of the CPU set; None
        without either (the machine's)."""
        if self.cpu_quota is not None:
            return self.cpu_quota
        if self.cpuset is None:
            return None
        return float(len(cpu_list(self.cpuset)))


def cpu_list(cpuset: str) -> list[int]:
    """'0-2,5' -> [0, 1, 2, 5]."""
    out: set[int] = set()
    for part in cpuset.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return sorted(out)

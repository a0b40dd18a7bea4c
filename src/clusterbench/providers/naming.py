"""Names of everything the local provider creates. All start with `cb-<cluster>-` so that
leftovers of a killed run can be found by prefix and two clusters can coexist."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Names:
    cluster: str

    @property
    def prefix(self) -> str:
        return f"cb-{self.cluster}-"

    @property
    def bridge(self) -> str:
        return f"{self.prefix}br"

    def node_role(self, index: int) -> str:
        return f"n{index}"

    def netns(self, role: str) -> str:
        return f"{self.prefix}{role}"

    def veth(self, role: str) -> str:
        # Host side of the pair; the namespace side is always called eth0. <= 15 chars.
        return f"{self.prefix}{role}"

    def cgroup(self, role: str) -> str:
        return f"clusterbench/{self.cluster}-{role}"

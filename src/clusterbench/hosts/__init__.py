"""Hosts: places where commands run and daemons live (a network namespace here, SSH later)."""

from clusterbench.hosts.base import CommandResult, Host, ProcessRef
from clusterbench.hosts.local import LocalHost, NetnsHost

__all__ = ["CommandResult", "Host", "LocalHost", "NetnsHost", "ProcessRef"]

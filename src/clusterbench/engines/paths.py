"""Where a server node's files are, under its directory: one definition for both engines' node
configurations and the node objects (a chrooted server sees them elsewhere; its configuration
says where)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING


class NodePaths:
    """Paths under `dir` (given by the class that mixes this in: a field or a property)."""

    if TYPE_CHECKING:

        @property
        def dir(self) -> Path: ...

    @property
    def cnf_path(self) -> Path:
        return self.dir / "my.cnf"

    @property
    def socket(self) -> Path:
        """The server's unix socket as this machine sees it."""
        return self.dir / "mysqld.sock"

    @property
    def datadir(self) -> Path:
        return self.dir / "data"

    @property
    def error_log(self) -> Path:
        return self.dir / "error.log"

    @property
    def pid_file(self) -> Path:
        """Where the server writes its PID (pid-file in its option file)."""
        return self.dir / "mysqld.pid"

    @property
    def mon_cnf(self) -> Path:
        return self.dir / "mon.cnf"

    @property
    def admin_cnf(self) -> Path:
        return self.dir / "admin.cnf"

    @property
    def health_script(self) -> Path:
        return self.dir / "clustercheck.sh"

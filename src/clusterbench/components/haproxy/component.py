"""HAProxy as a real process on a host."""

from __future__ import annotations

import signal
import socket

from clusterbench.components.daemon import Daemon
from clusterbench.components.haproxy.config import HAProxyConfig, render_haproxy_cfg
from clusterbench.components.haproxy.status import BackendServer, parse_show_stat
from clusterbench.errors import ComponentError
from clusterbench.hosts.base import ProcessRef


class HAProxy(Daemon[HAProxyConfig]):
    def render(self) -> str:
        return render_haproxy_cfg(self.cfg)

    def validate(self) -> None:
        self.host.run(["haproxy", "-c", "-q", "-f", str(self.cfg.cfg_path)])

    def start(self) -> ProcessRef:
        if self.alive():
            assert self.proc is not None
            return self.proc
        # -db: stay in the foreground (we detach it ourselves and track its PID).
        self.proc = self.host.spawn(
            ["haproxy", "-db", "-f", str(self.cfg.cfg_path)], log=self.cfg.dir / "haproxy.log"
        )
        deadline = self.clock.now() + 10
        while self.clock.now() < deadline:
            if not self.alive():
                text = self.host.read_file(self.cfg.dir / "haproxy.log") or ""
                raise ComponentError(f"haproxy exited at start: {' | '.join(text.strip().splitlines()[-3:])}")
            if self.host.exists(self.cfg.stats_socket):
                try:
                    self.command("show info")
                    return self.proc
                except OSError:
                    pass
            self.clock.sleep(0.05)
        raise ComponentError("haproxy did not open its stats socket in 10 s")

    def kill(self) -> str:
        if not self.alive():
            return "not running"
        assert self.proc is not None
        self.host.signal(self.proc, signal.SIGKILL)
        return "killed"

    def command(self, cmd: str, timeout: float = 2.0) -> str:
        if self.host.remote:
            # The stats socket is on the balancer's machine: talk to it there through socat.
            res = self.host.run(
                ["socat", f"-t{timeout:g}", "-", f"UNIX-CONNECT:{self.cfg.stats_socket}"],
                input=cmd + "\n",
                timeout=timeout + 10,
                check=False,
            )
            if not res.ok:
                raise ConnectionError(f"haproxy stats socket: {res.tail()}")
            return res.stdout
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(self.cfg.stats_socket))
            s.sendall(cmd.encode() + b"\n")
            chunks: list[bytes] = []
            while True:
                data = s.recv(65536)
                if not data:
                    break
                chunks.append(data)
        return b"".join(chunks).decode(errors="replace")

    def servers(self) -> list[BackendServer]:
        if not self.alive():
            return []
        try:
            return parse_show_stat(self.command("show stat"))
        except OSError:
            return []

    def wait_all_up(self, names: list[str], timeout: float) -> None:
        deadline = self.clock.now() + timeout
        seen: dict[str, str] = {}
        while self.clock.now() < deadline:
            # A node counts as UP when some route has it UP (GR's primary is UP only for writes,
            # its secondaries only for reads).
            seen = {}
            for s in sorted(self.servers(), key=lambda s: s.status == "UP"):
                seen[s.name] = s.status
            if all(seen.get(n) == "UP" for n in names):
                return
            self.clock.sleep(0.1)
        raise ComponentError(
            "haproxy does not see every node UP after "
            f"{timeout:g} s: {', '.join(f'{k}={v}' for k, v in sorted(seen.items()))}"
        )

"""keepalived as a real process inside a balancer's namespace, and who holds the VIP."""

from __future__ import annotations

import json
import re

from clusterbench.components.daemon import Daemon
from clusterbench.components.keepalived.config import KeepalivedConfig, render_keepalived_conf
from clusterbench.errors import ComponentError
from clusterbench.hosts.base import ProcessRef

_STATE_RE = re.compile(r"\) Entering (MASTER|BACKUP|FAULT|STOP) STATE")


def last_vrrp_state(log_text: str) -> str | None:
    """The VRRP instance's latest state in keepalived's log (MASTER, BACKUP, FAULT, STOP)."""
    found = _STATE_RE.findall(log_text)
    return found[-1] if found else None


def addresses(ip_addr_json: str, ifname: str | None = None) -> set[str]:
    """IPv4 addresses in `ip -j addr` output (optionally of one interface)."""
    out: set[str] = set()
    for link in json.loads(ip_addr_json or "[]"):
        if ifname is not None and link.get("ifname") != ifname:
            continue
        for a in link.get("addr_info", []):
            if a.get("family") == "inet" and "local" in a:
                out.add(a["local"])
    return out


class Keepalived(Daemon[KeepalivedConfig]):
    """keepalived on its host. stop() sends SIGTERM to the parent: it stops its children, which
    drop the VIP and send a priority-0 advert, so the peer takes over at once."""

    def render(self) -> str:
        return render_keepalived_conf(self.cfg)

    def validate(self) -> None:
        res = self.host.run(["keepalived", "-t", "-f", str(self.cfg.cfg_path)], check=False)
        if not res.ok:
            raise ComponentError(f"keepalived rejects {self.cfg.cfg_path}: {res.tail()}")

    def start(self, timeout: float = 10.0) -> ProcessRef:
        if self.alive():
            assert self.proc is not None
            return self.proc
        c = self.cfg
        for p in (c.pid_path, c.vrrp_pid_path, c.checkers_pid_path):
            self.host.remove(p)
        # -n: stay in the foreground (we detach it and track its PID); -l -D: detailed log to the
        # console, i.e. our log file (there is no syslog here); own PID files, since the defaults
        # in /run would collide with the other balancer's keepalived.
        self.proc = self.host.spawn(
            [
                "keepalived",
                "-n",
                "-l",
                "-D",
                "-f",
                str(c.cfg_path),
                "-p",
                str(c.pid_path),
                "-r",
                str(c.vrrp_pid_path),
                "-c",
                str(c.checkers_pid_path),
            ],
            log=c.log_path,
        )
        deadline = self.clock.now() + timeout
        while self.clock.now() < deadline:
            if not self.alive():
                text = self.host.read_file(c.log_path) or ""
                raise ComponentError(
                    f"keepalived on {c.role} exited at start: {' | '.join(text.strip().splitlines()[-3:])}"
                )
            # The VRRP child writes its PID file once it runs.
            if self.host.exists(c.vrrp_pid_path):
                return self.proc
            self.clock.sleep(0.05)
        raise ComponentError(f"keepalived on {c.role} did not start its VRRP process in {timeout:g} s")

    def vrrp_state(self) -> str | None:
        """MASTER, BACKUP, FAULT (its HAProxy check fails) or STOP, from the log; None before
        the first transition or when not running."""
        if not self.alive():
            return None
        return last_vrrp_state(self.host.read_file(self.cfg.log_path) or "")

    def wait_ready(self, timeout: float) -> str:
        """Wait until the instance is MASTER or BACKUP: out of FAULT, so it can take the VIP over."""
        deadline = self.clock.now() + timeout
        state = self.vrrp_state()
        while state not in ("MASTER", "BACKUP"):
            if self.clock.now() >= deadline:
                raise ComponentError(
                    f"keepalived on {self.cfg.role} is {state or 'not running'} after {timeout:g} s, "
                    f"not MASTER or BACKUP; see {self.cfg.log_path}"
                )
            self.clock.sleep(0.1)
            state = self.vrrp_state()
        return state

    def holds_vip(self) -> bool:
        res = self.host.run(["ip", "-j", "-4", "addr", "show", "dev", self.cfg.interface], check=False)
        if not res.ok:
            return False
        return self.cfg.vip in addresses(res.stdout, self.cfg.interface)

"""A lab of "machines" reached only over SSH, for testing the ssh provider for real.

Each machine is a network namespace on a bridge (built with the local provider's network code),
running Debian's sshd that listens only on that namespace's address. Host keys and the client key
are generated per lab in a temp dir. The namespaces share this machine's filesystem, so every
host's files must live under distinct paths (the ssh provider's per-node base dirs do).

Teardown stops each sshd by PID (and whatever is still running inside the lab's namespaces: it can
only be ours), then removes the namespaces and the bridge; it runs also when a test fails.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from clusterbench.hosts import process
from clusterbench.hosts.base import ProcessRef
from clusterbench.hosts.local import LocalHost, NetnsHost
from clusterbench.providers.naming import Names
from clusterbench.providers.network import HostPlan, down_plan, up_plan

SSHD = "/usr/sbin/sshd"
LAB_NAME = "cbssh"
LAB_SUBNET = "198.18.214.0/24"
HOST_OFFSET = 20  # lab host k at .20+k


@dataclass
class LabHost:
    name: str  # h1, h2, ...
    netns: str
    address: str
    sshd: ProcessRef | None = None


@dataclass
class SshLab:
    name: str = LAB_NAME
    subnet: str = LAB_SUBNET
    count: int = 4
    dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="cbssh-lab-")))
    hosts: list[LabHost] = field(default_factory=list)
    made_run_sshd: bool = False

    @property
    def names(self) -> Names:
        return Names(self.name)

    @property
    def key(self) -> Path:
        return self.dir / "client_key"

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.subnet)

    def address(self, k: int) -> str:
        return str(self.network[HOST_OFFSET + k])

    def start(self) -> SshLab:
        os.chmod(self.dir, 0o755)
        local = LocalHost()
        plans = [HostPlan(f"h{k}", self.address(k)) for k in range(1, self.count + 1)]
        bridge = f"{self.network[1]}/{self.network.prefixlen}"
        for argv in up_plan(self.names, bridge, plans, self.network.prefixlen):
            local.run(argv)
        self.hosts = [LabHost(p.role, self.names.netns(p.role), p.address) for p in plans]
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "cbssh-lab", "-f", str(self.key)],
            check=True,
        )
        (self.dir / "authorized_keys").write_text((self.dir / "client_key.pub").read_text())
        run_sshd = Path("/run/sshd")  # sshd's privilege separation directory
        if not run_sshd.exists():
            run_sshd.mkdir(mode=0o755)
            self.made_run_sshd = True
        for h in self.hosts:
            self._start_sshd(h)
        for h in self.hosts:
            self._wait_listening(h)
        return self

    def _start_sshd(self, h: LabHost) -> None:
        hk = self.dir / f"{h.name}_host_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(hk)], check=True)
        cfg = self.dir / f"{h.name}_sshd_config"
        cfg.write_text(
            "\n".join(
                [
                    f"ListenAddress {h.address}",
                    "Port 22",
                    f"HostKey {hk}",
                    f"PidFile {self.dir}/{h.name}_sshd.pid",
                    f"AuthorizedKeysFile {self.dir}/authorized_keys",
                    "PermitRootLogin prohibit-password",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    "StrictModes no",
                    "PrintMotd no",
                    "MaxSessions 100",
                    # bash sources ~/.bashrc for commands that come over ssh unless it is a nested
                    # shell; this machine's root .bashrc takes 0.4 s (pyenv init) per command.
                    "SetEnv SHLVL=1",
                    "MaxStartups 100",
                    "",
                ]
            )
        )
        h.sshd = NetnsHost(h.netns).spawn(
            [SSHD, "-D", "-e", "-f", str(cfg)], log=self.dir / f"{h.name}_sshd.log"
        )

    def _wait_listening(self, h: LabHost, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = NetnsHost(h.netns).run(["ss", "-ltnH"], check=False).stdout
            if f"{h.address}:22 " in out:
                return
            if h.sshd is None or not process.is_alive(h.sshd.pid, h.sshd.start_ticks):
                break
            time.sleep(0.05)
        log = (self.dir / f"{h.name}_sshd.log").read_text(errors="replace")
        raise RuntimeError(f"sshd in {h.netns} did not listen on {h.address}:22: {log[-500:]}")

    def stop(self) -> list[str]:
        """Stop every sshd and anything left in the lab's namespaces; remove them. Returns what
        had to be killed besides the sshds (should be nothing when the tests cleaned up)."""
        local = LocalHost()
        extra: list[str] = []
        for h in self.hosts:
            if h.sshd is not None:
                process.send(h.sshd.pid, h.sshd.start_ticks, signal.SIGTERM)
        for h in self.hosts:
            if h.sshd is not None:
                _wait_gone(h.sshd)
        netns = [e["name"] for e in json.loads(local.run(["ip", "-j", "netns", "list"]).stdout or "[]")]
        ours = [n for n in netns if n.startswith(self.names.prefix)]
        # A per-connection sshd of a client that just disconnected needs a moment to exit.
        deadline = time.monotonic() + 3
        while True:
            live = [(ns, pid) for ns in ours for pid in _pids(local, ns)]
            if not live or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        for ns, pid in live:
            cmd = _cmdline(pid)
            if not cmd.startswith("sshd"):
                extra.append(f"{ns}: {pid} {cmd[:80]}")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        links = json.loads(local.run(["ip", "-j", "link", "show"]).stdout or "[]")
        ourlinks = [e["ifname"] for e in links if e.get("ifname", "").startswith(self.names.prefix)]
        for argv in down_plan(self.names, ours, ourlinks):
            local.run(argv, check=False)
        if self.made_run_sshd:
            with contextlib.suppress(OSError):
                Path("/run/sshd").rmdir()
        shutil.rmtree(self.dir, ignore_errors=True)
        return extra


def _pids(local: LocalHost, ns: str) -> list[int]:
    out = local.run(["ip", "netns", "pids", ns], check=False).stdout.split()
    return [int(p) for p in out if p.isdigit() and process.state(int(p)) not in (None, "Z", "X")]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _wait_gone(proc: ProcessRef, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.is_alive(proc.pid, proc.start_ticks):
        time.sleep(0.02)
    if process.is_alive(proc.pid, proc.start_ticks):
        process.send(proc.pid, proc.start_ticks, signal.SIGKILL)


def lab_available() -> str | None:
    """Why the lab cannot run here, or None."""
    if os.geteuid() != 0:
        return "the ssh lab needs root (network namespaces)"
    if not Path(SSHD).exists():
        return f"{SSHD} missing; install openssh-server (`make setup`)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen missing; install openssh-client"
    return None

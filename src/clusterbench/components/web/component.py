"""A web node as real processes on a host: php-fpm (the pool that runs the application) and nginx
in front of it, each started detached and tracked by PID + start time like every daemon here.

Both masters fork workers, and a worker outlives a SIGKILLed master (nginx's workers keep
accepting on the listening socket). So kill, pause and resume act on each master and every
process below it, read from the host's process list at that moment."""

from __future__ import annotations

import signal
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path

from clusterbench.clock import Clock, SystemClock
from clusterbench.components.web.config import (
    APP_FILES,
    FPM_STATUS_PATH,
    NGINX_STATUS_PATH,
    WebNodeConfig,
    app_source,
    render_app_config,
    render_fpm_conf,
    render_nginx_conf,
)
from clusterbench.components.web.status import WebNodeStatus, parse_fpm_status, parse_stub_status
from clusterbench.errors import ComponentError
from clusterbench.hosts import procs
from clusterbench.hosts.base import Machine, ProcessRef, terminate, wait_dead

CURL = "curl"
# how long a status or health request may take (s)
PROBE_TIMEOUT = 2.0


def _tail(text: str | None, lines: int = 3) -> str:
    return " | ".join(ln.strip() for ln in (text or "").strip().splitlines()[-lines:])


@dataclass(eq=False)
class WebNode:
    """Web node w<index>: write_files, validate, start, stop / kill / pause / resume (faults),
    alive, status. Its host starts the servers under the node's limits (the local provider's
    limited_host enters the node's cgroups first), so the workers they fork start there too."""

    cfg: WebNodeConfig
    host: Machine
    _: KW_ONLY
    nginx: ProcessRef | None = None
    fpm: ProcessRef | None = None
    clock: Clock = field(default_factory=SystemClock)

    def __post_init__(self) -> None:
        self.clock = self.clock or SystemClock()

    @property
    def name(self) -> str:
        return self.cfg.name

    # --- files ---

    def write_files(self) -> None:
        c, h = self.cfg, self.host
        for d in (c.dir, c.app_dir, c.temp_dir):
            h.mkdir(d)
        for name in APP_FILES:
            h.put_file(c.app_dir / name, app_source(name), mode=0o644)
        # The database password: readable by the pool's user alone.
        h.put_file(c.app_config, render_app_config(c), mode=0o600, owner=c.user)
        h.put_file(c.fpm_conf, render_fpm_conf(c), mode=0o644)
        h.put_file(c.nginx_conf, render_nginx_conf(c), mode=0o644)
        if not h.exists(c.php_errors):
            # PHP's children (the pool's user) append here; they cannot create files in the node's folder
            h.put_file(c.php_errors, "", mode=0o640, owner=c.user)

    def nginx_argv(self) -> list[str]:
        c = self.cfg
        # -p: relative paths resolve in the node's folder; -e: even the errors nginx meets before
        # it has read its configuration go to the node's log, not /var/log/nginx
        return [c.nginx_bin, "-c", str(c.nginx_conf), "-p", f"{c.dir}/", "-e", str(c.nginx_log)]

    def fpm_argv(self) -> list[str]:
        c = self.cfg
        return [c.fpm_bin, "--nodaemonize", "--fpm-config", str(c.fpm_conf)]

    def validate(self) -> None:
        """Both servers' own configuration tests; ComponentError with their words."""
        c = self.cfg
        tests = (
            ("php-fpm", [c.fpm_bin, "--test", "--fpm-config", str(c.fpm_conf)]),
            ("nginx", [*self.nginx_argv(), "-t", "-q"]),
        )
        for what, argv in tests:
            res = self.host.run(argv, check=False)
            if not res.ok:
                raise ComponentError(
                    f"{what} of web node {self.name} rejects its configuration: {res.tail(3)}"
                )

    # --- processes ---

    def nginx_alive(self) -> bool:
        return self.nginx is not None and self.host.alive(self.nginx)

    def fpm_alive(self) -> bool:
        return self.fpm is not None and self.host.alive(self.fpm)

    def alive(self) -> bool:
        return self.nginx_alive() and self.fpm_alive()

    def masters(self) -> list[ProcessRef]:
        return [p for p in (self.fpm, self.nginx) if p is not None and self.host.alive(p)]

    def start(self, timeout: float = 10.0) -> tuple[ProcessRef, ProcessRef]:
        """php-fpm, then nginx (which would answer 502 without the pool); each waited for until
        it serves (its socket, its PID file). What a killed earlier start left is stopped first.
        Returns (nginx, php-fpm)."""
        c = self.cfg
        if not self.nginx_alive() and not self.fpm_alive():
            procs.stop_strays(self.host, f"{c.dir}/", [], self.clock)
        if not self.fpm_alive():
            self.host.remove(c.fpm_socket)
            self.fpm = self.host.spawn(self.fpm_argv(), log=c.fpm_stdout)
            self._wait_ready(self.fpm, c.fpm_socket, "php-fpm", (c.fpm_log, c.fpm_stdout), timeout)
        if not self.nginx_alive():
            self.host.remove(c.nginx_pid)
            self.nginx = self.host.spawn(self.nginx_argv(), log=c.nginx_stdout)
            self._wait_ready(self.nginx, c.nginx_pid, "nginx", (c.nginx_log, c.nginx_stdout), timeout)
        assert self.nginx is not None and self.fpm is not None
        return self.nginx, self.fpm

    def _wait_ready(
        self, proc: ProcessRef, ready: Path, what: str, logs: tuple[Path, Path], timeout: float
    ) -> None:
        """Until `ready` exists; ComponentError quoting the server's error log and what it printed
        (what went wrong before it could log, e.g. its launch) when it exits first."""
        log, out = logs
        deadline = self.clock.now() + timeout
        while self.clock.now() < deadline:
            if not self.host.alive(proc):
                tails = [_tail(self.host.read_file(f)) for f in (log, out)]
                said = " | ".join(t for t in tails if t) or "nothing logged"
                raise ComponentError(f"{what} of web node {self.name} exited at start: {said}")
            if self.host.exists(ready):
                return
            self.clock.sleep(0.05)
        raise ComponentError(f"{what} of web node {self.name} did not get ready in {timeout:g} s; see {log}")

    def _family(self) -> list[ProcessRef]:
        """The live masters and every process below them, masters first."""
        masters = self.masters()
        if not masters:
            return []
        entries = procs.list_processes(self.host)
        below = procs.descendants(entries, [m.pid for m in masters]) - {m.pid for m in masters}
        return masters + [e.ref for e in entries if e.pid in below and e.live]

    def stop(self, timeout: float = 10.0) -> str:
        """SIGTERM to nginx, then php-fpm (each stops its workers), SIGKILL after `timeout`;
        workers left behind are killed. 'stopped', 'killed after timeout' or 'not running'."""
        family = self._family()
        outcomes = [terminate(self.host, p, self.clock, timeout, cont=True) for p in (self.nginx, self.fpm)]
        self._kill_all(family)
        running = [o for o in outcomes if o != "not running"]
        if not running:
            return "not running"
        return "killed after timeout" if "killed after timeout" in running else "stopped"

    def kill(self) -> str:
        """SIGKILL to both masters and all their workers (the web node dies at once)."""
        family = self._family()
        if not family:
            return "not running"
        self._kill_all(family)
        return "killed"

    def _kill_all(self, family: list[ProcessRef]) -> None:
        for p in family:
            self.host.signal(p, signal.SIGKILL)
        for p in family:
            wait_dead(self.host, p, self.clock, 10)

    def pause(self) -> str:
        """SIGSTOP every process of the node: connections are accepted by the kernel and then
        nothing answers (a hung web node)."""
        family = self._family()
        for p in family:
            self.host.signal(p, signal.SIGSTOP)
        return "paused" if family else "not running"

    def resume(self) -> str:
        family = self._family()
        for p in family:
            self.host.signal(p, signal.SIGCONT)
        return "resumed" if family else "not running"

    # --- what it says ---

    def _get(self, path: str) -> tuple[int | None, str]:
        """GET `path` from this node, from inside its host (its status pages allow no one else):
        (HTTP status or None when nothing answered, body)."""
        res = self.host.run(
            [CURL, "-sS", "-m", f"{PROBE_TIMEOUT:g}", "-w", "\n%{http_code}", f"{self.cfg.url}{path}"],
            check=False, timeout=PROBE_TIMEOUT + 10,
        )  # fmt: skip
        body, _, code = res.stdout.rpartition("\n")
        if not res.ok or not code.isdigit() or code == "000":
            return None, ""
        return int(code), body

    def health(self) -> int | None:
        """The HTTP status of GET /health (200: the application reaches the database); None when
        nginx does not answer."""
        return self._get("/health")[0]

    def status(self) -> WebNodeStatus:
        nginx_up, fpm_up = self.nginx_alive(), self.fpm_alive()
        fpm = stub = None
        if nginx_up:
            code, body = self._get(f"{FPM_STATUS_PATH}?json")
            fpm = parse_fpm_status(body) if code == 200 else None
            code, body = self._get(NGINX_STATUS_PATH)
            stub = parse_stub_status(body) if code == 200 else None
        return WebNodeStatus(self.name, nginx_up, fpm_up, fpm, stub)

    def refs(self) -> dict[str, dict[str, int] | None]:
        """The processes to persist (state.json): {"nginx": ..., "fpm": ...}."""
        return {k: p.to_json() if p else None for k, p in (("nginx", self.nginx), ("fpm", self.fpm))}

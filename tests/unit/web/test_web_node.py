"""components/web/component.py: WebNode over a fake host: its files (the password file 0600 and the
pool user's), start order and readiness, stop/kill/pause/resume over the masters and their workers,
status and health through curl inside the node's host."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from clusterbench.components.web.component import WebNode
from clusterbench.components.web.config import WebDatabase, WebNodeConfig
from clusterbench.errors import ComponentError
from clusterbench.hosts.base import CommandResult, ProcessRef
from clusterbench.hosts.procs import LIST_PROCS
from clusterbench.spec.web import WebSettings
from tests.unit.fakes import FakeClock, FakeHost, result
from tests.unit.web.test_web_status import FPM, STUB


class WebHost(FakeHost):
    """FakeHost whose files include what the servers make (the pool's socket, nginx's PID file)
    once they are spawned, that lists the processes it runs (each master with two workers), and
    that answers curl from `pages`."""

    def __init__(self, *, ready: bool = True) -> None:
        super().__init__("w1", die_on=(signal.SIGKILL, signal.SIGTERM))
        self.made: set[Path] = set()
        self.owners: dict[Path, str | None] = {}
        self.ready = ready
        self.pages: dict[str, tuple[int, str]] = {}
        self.responder = self._respond
        self.workers: dict[int, list[int]] = {}

    def put_file(self, path: Path, content: str, *, mode: int = 0o644, owner: str | None = None) -> None:
        super().put_file(path, content, mode=mode, owner=owner)
        self.owners[path] = owner

    def exists(self, path: Path) -> bool:
        return path in self.files or path in self.made

    def remove(self, path: Path) -> None:
        self.made.discard(path)

    def mkdir(self, path: Path, *, owner: str | None = None, mode: int = 0o755) -> None:
        self.made.add(path)

    def spawn(self, argv: list[str], *, log: Path) -> ProcessRef:
        proc = super().spawn(argv, log=log)
        self.workers[proc.pid] = [proc.pid * 10 + 1, proc.pid * 10 + 2]
        self.live.update(self.workers[proc.pid])
        if self.ready:
            fpm = "--fpm-config" in argv
            conf = Path(argv[-1] if fpm else argv[-5])  # php-fpm ... --fpm-config F; nginx -c F -p P -e E
            self.made.add(conf.parent / ("php-fpm.sock" if fpm else "nginx.pid"))
        return proc

    def _listing(self) -> str:
        rows = []
        for master, kids in self.workers.items():
            for pid, ppid in [(master, 1)] + [(k, master) for k in kids]:
                if pid in self.live:
                    ticks = 777_000 + pid if pid == master else 5
                    stat = f"{pid} (x) S " + " ".join(["0"] * 18) + f" {ticks}"
                    rows.append(f"{pid}\t{ppid}\t{stat}\tprocess {pid}")
        return "\n".join(rows) + "\n"

    def _respond(self, argv: list[str]) -> CommandResult:
        if argv[:2] == ["sh", "-c"] and argv[2] == LIST_PROCS:
            return result(argv, self._listing())
        if argv[0] == "curl":
            url = argv[-1]
            for path, (code, body) in self.pages.items():
                if url.endswith(path):
                    return result(argv, f"{body}\n{code}")
            return result(argv, "\n000", returncode=7)
        return result(argv)

    def alive(self, proc: ProcessRef) -> bool:
        return proc.pid in self.live


def node(tmp_path: Path, host: WebHost | None = None, **web: object) -> tuple[WebNode, WebHost]:
    h = host or WebHost()
    settings = WebSettings.model_validate({"nodes": 1, **web})
    cfg = WebNodeConfig("lab", 1, "198.18.0.21", tmp_path / "w1", settings,
                        WebDatabase("198.18.0.3", 3306, "sbtest", "secret", "sbtest"), cpus=1)  # fmt: skip
    return WebNode(cfg, h, clock=FakeClock()), h


def test_write_files(tmp_path: Path) -> None:
    n, h = node(tmp_path)
    n.write_files()
    d = tmp_path / "w1"
    assert {p.name for p in h.files} == {
        "common.php", "read.php", "write.php", "mixed.php", "health.php", "app.json", "php-fpm.conf",
        "nginx.conf", "php-errors.log",
    }  # fmt: skip
    assert h.modes[d / "app.json"] == 0o600 and h.owners[d / "app.json"] == "www-data"
    assert '"password": "secret"' in h.files[d / "app.json"]
    assert h.owners[d / "php-errors.log"] == "www-data"
    assert h.modes[d / "app" / "write.php"] == 0o644
    assert {d, d / "app", d / "tmp"} <= h.made
    # a second write keeps what PHP logged
    h.files[d / "php-errors.log"] = "PHP Warning: x\n"
    n.write_files()
    assert h.files[d / "php-errors.log"] == "PHP Warning: x\n"


def test_start_runs_php_fpm_then_nginx_and_waits_for_each(tmp_path: Path) -> None:
    n, h = node(tmp_path)
    nginx, fpm = n.start()
    d = tmp_path / "w1"
    assert [s.argv for s in h.spawned] == [
        ["php-fpm8.2", "--nodaemonize", "--fpm-config", f"{d}/php-fpm.conf"],
        ["nginx", "-c", f"{d}/nginx.conf", "-p", f"{d}/", "-e", f"{d}/nginx-error.log"],
    ]
    assert (fpm, nginx) == (h.spawned[0].proc, h.spawned[1].proc)
    assert n.alive()
    assert n.refs() == {"nginx": nginx.to_json(), "fpm": fpm.to_json()}
    # running: start again does nothing
    assert n.start() == (nginx, fpm)
    assert len(h.spawned) == 2


def test_start_with_a_launcher_puts_it_before_each_server(tmp_path: Path) -> None:
    n, h = node(tmp_path)
    n.launcher = ["sh", "-c", "enter", "sh", "/cg/cgroup.procs", "--"]
    n.start()
    assert [s.argv[:6] for s in h.spawned] == [n.launcher, n.launcher]


def test_start_fails_with_the_servers_words(tmp_path: Path) -> None:
    h = WebHost(ready=False)
    n, _ = node(tmp_path, h)
    h.files[tmp_path / "w1" / "php-fpm.log"] = "NOTICE: x\nERROR: unable to bind listening socket\n"

    def dies(seconds: float) -> None:
        h.live.clear()

    n.clock.sleep = dies  # type: ignore[method-assign]
    with pytest.raises(ComponentError, match="^php-fpm of web node w1 exited at start: .*unable to bind"):
        n.start()


def test_start_times_out(tmp_path: Path) -> None:
    n, _ = node(tmp_path, WebHost(ready=False))
    with pytest.raises(ComponentError, match=r"^php-fpm of web node w1 did not get ready in 10 s; see "):
        n.start()


def test_kill_takes_the_workers_too(tmp_path: Path) -> None:
    n, h = node(tmp_path)
    nginx, fpm = n.start()
    workers = h.workers[nginx.pid] + h.workers[fpm.pid]
    assert n.kill() == "killed"
    killed = [s.proc.pid for s in h.signals if s.sig == signal.SIGKILL]
    assert killed[:2] == [fpm.pid, nginx.pid]  # the masters first: they would fork new workers
    assert sorted(killed[2:]) == sorted(workers)
    assert not h.live
    assert n.kill() == "not running"


def test_pause_and_resume_every_process(tmp_path: Path) -> None:
    n, h = node(tmp_path)
    nginx, fpm = n.start()
    assert n.pause() == "paused"
    stopped = {s.proc.pid for s in h.signals if s.sig == signal.SIGSTOP}
    assert stopped == {nginx.pid, fpm.pid, *h.workers[nginx.pid], *h.workers[fpm.pid]}
    assert n.resume() == "resumed"
    assert {s.proc.pid for s in h.signals if s.sig == signal.SIGCONT} == stopped


def test_stop_terminates_both_masters(tmp_path: Path) -> None:
    n, h = node(tmp_path)
    nginx, fpm = n.start()
    assert n.stop() == "stopped"
    assert [(s.proc.pid, s.sig) for s in h.signals if s.sig == signal.SIGTERM] == [
        (nginx.pid, signal.SIGTERM), (fpm.pid, signal.SIGTERM),
    ]  # fmt: skip
    assert not n.alive()
    assert n.stop() == "not running"


def test_status_and_health_through_curl_on_the_nodes_host(tmp_path: Path) -> None:
    n, h = node(tmp_path)
    n.start()
    h.pages = {"/fpm-status?json": (200, FPM), "/nginx-status": (200, STUB), "/health": (503, '{"ok":false}')}
    st = n.status()
    assert st.up and st.fpm is not None and st.fpm.idle == 3
    assert st.nginx is not None and st.nginx.requests == 9
    curl = [r for r in h.runs if r[0] == "curl"]
    assert curl[0] == ["curl", "-sS", "-m", "2", "-w", "\n%{http_code}", "http://198.18.0.21:80/fpm-status?json"]
    assert n.health() == 503
    h.pages = {}
    assert n.health() is None
    assert not n.status().up


def test_validate_runs_both_servers_tests(tmp_path: Path) -> None:
    n, h = node(tmp_path)
    n.validate()
    d = tmp_path / "w1"
    assert h.runs == [
        ["php-fpm8.2", "--test", "--fpm-config", f"{d}/php-fpm.conf"],
        ["nginx", "-c", f"{d}/nginx.conf", "-p", f"{d}/", "-e", f"{d}/nginx-error.log", "-t", "-q"],
    ]
    h.responder = lambda argv: result(argv, "", returncode=1, stderr="nginx: [emerg] unknown directive")
    with pytest.raises(ComponentError, match="^php-fpm of web node w1 rejects its configuration: nginx: "):
        n.validate()

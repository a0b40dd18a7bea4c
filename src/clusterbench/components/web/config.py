"""Pure rendering of one web node's files: nginx.conf, php-fpm.conf and the application's own
settings (app.json, which holds the database password: mode 0600, readable by the pool's user
only). Every path a process writes (PID, logs, socket, nginx's temporary files) is under the
node's directory, so several web nodes run side by side on one machine."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from clusterbench.components.templates import package_templates
from clusterbench.spec.web import WebSettings

_env = package_templates("clusterbench.components.web")

# Debian 12's packages (nginx 1.22, php8.2-fpm); the user their workers run as
NGINX_BIN = "nginx"
FPM_BIN = "php-fpm8.2"
WEB_USER = "www-data"
# The application's pages: URL path -> PHP file (under the package's app/ folder)
PAGES: dict[str, str] = {
    "/read": "read.php",
    "/write": "write.php",
    "/mixed": "mixed.php",
    "/health": "health.php",
}
APP_FILES: tuple[str, ...] = ("common.php", *PAGES.values())
FPM_STATUS_PATH = "/fpm-status"
FPM_PING_PATH = "/fpm-ping"
NGINX_STATUS_PATH = "/nginx-status"
# A unix socket's path must fit in sun_path (108 bytes with the final NUL).
MAX_SOCKET_PATH = 107
# nginx waits this much longer for php-fpm than php-fpm lets a request run, so that a request
# php-fpm kills ends in its 502, not in nginx's 504 a moment before
NGINX_GRACE_S = 5


@dataclass(frozen=True)
class WebDatabase:
    """Where the application connects: the database balancer (address and port), the account and
    the schema holding its tables."""

    host: str
    port: int
    user: str
    password: str = field(repr=False)
    schema: str


@dataclass(frozen=True)
class WebNodeConfig:
    """Web node w<index> at `address`, its files in `dir`. `cpus` is the node's CPU limit (its
    cpu_quota or cpuset size; None: the machine's `machine_cpus`), which sizes the php-fpm pool
    and the nginx workers unless the settings fix them."""

    cluster_name: str
    index: int
    address: str
    dir: Path
    settings: WebSettings
    database: WebDatabase
    cpus: float | None = None
    machine_cpus: int = field(default_factory=lambda: os.cpu_count() or 1)
    user: str = WEB_USER
    nginx_bin: str = NGINX_BIN
    fpm_bin: str = FPM_BIN

    @property
    def name(self) -> str:
        return f"w{self.index}"

    @property
    def port(self) -> int:
        return self.settings.port

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}"

    @property
    def children(self) -> int:
        """php-fpm's pm.max_children."""
        return self.settings.fpm.children(self.cpus, self.machine_cpus)

    @property
    def nginx_workers(self) -> int:
        if self.settings.nginx_workers is not None:
            return self.settings.nginx_workers
        return max(1, math.ceil(self.cpus if self.cpus is not None else self.machine_cpus))

    # --- paths ---

    @property
    def app_dir(self) -> Path:
        return self.dir / "app"

    @property
    def app_config(self) -> Path:
        return self.dir / "app.json"

    @property
    def nginx_conf(self) -> Path:
        return self.dir / "nginx.conf"

    @property
    def nginx_pid(self) -> Path:
        return self.dir / "nginx.pid"

    @property
    def nginx_log(self) -> Path:
        return self.dir / "nginx-error.log"

    @property
    def nginx_stdout(self) -> Path:
        return self.dir / "nginx.out"

    @property
    def temp_dir(self) -> Path:
        return self.dir / "tmp"

    @property
    def fpm_conf(self) -> Path:
        return self.dir / "php-fpm.conf"

    @property
    def fpm_pid(self) -> Path:
        return self.dir / "php-fpm.pid"

    @property
    def fpm_log(self) -> Path:
        return self.dir / "php-fpm.log"

    @property
    def fpm_stdout(self) -> Path:
        return self.dir / "php-fpm.out"

    @property
    def php_errors(self) -> Path:
        return self.dir / "php-errors.log"

    @property
    def fpm_socket(self) -> Path:
        return self.dir / "php-fpm.sock"


def _seconds(v: float) -> str:
    """A duration for nginx and php-fpm: whole seconds ('30s'); they take no fractions."""
    return f"{max(1, math.ceil(v))}s"


def spare_servers(children: int) -> tuple[int, int, int]:
    """pm = dynamic: (start, min spare, max spare) for a pool of `children`: a quarter idle at
    least, half at most, starting at the minimum."""
    low = max(1, children // 4)
    high = min(children, max(low + 1, children // 2))
    return low, low, high


def render_fpm_conf(cfg: WebNodeConfig) -> str:
    if len(str(cfg.fpm_socket)) > MAX_SOCKET_PATH:
        raise ValueError(f"{cfg.fpm_socket}: a unix socket path must be at most {MAX_SOCKET_PATH} bytes")
    f = cfg.settings.fpm
    start, low, high = spare_servers(cfg.children)
    return _env.get_template("php-fpm.conf.j2").render(
        cfg=cfg, f=f, children=cfg.children, start=start, low=low, high=high,
        request_timeout=_seconds(f.request_timeout), status_path=FPM_STATUS_PATH, ping_path=FPM_PING_PATH,
    )  # fmt: skip


def render_nginx_conf(cfg: WebNodeConfig) -> str:
    return _env.get_template("nginx.conf.j2").render(
        cfg=cfg, pages=sorted(PAGES.items()), fpm_status=FPM_STATUS_PATH, fpm_ping=FPM_PING_PATH,
        nginx_status=NGINX_STATUS_PATH,
        read_timeout=_seconds(cfg.settings.fpm.request_timeout + NGINX_GRACE_S),
    )  # fmt: skip


def render_app_config(cfg: WebNodeConfig) -> str:
    """The application's settings (JSON): its database, its name, the mixed page's reads."""
    db, app = cfg.database, cfg.settings.app
    data = {
        "node": cfg.name,
        "mixed_reads": app.mixed_reads,
        "db": {
            "host": db.host, "port": db.port, "user": db.user, "password": db.password,
            "schema": db.schema, "connect_timeout": app.db_connect_timeout, "timeout": app.db_timeout,
            "persistent": app.persistent,
        },
    }  # fmt: skip
    return json.dumps(data, indent=2) + "\n"


def app_source(name: str) -> str:
    """One of the application's PHP files, as shipped in the package."""
    if name not in APP_FILES:
        raise ValueError(f"{name} is not a file of the web application")
    return (resources.files("clusterbench.components.web") / "app" / name).read_text()

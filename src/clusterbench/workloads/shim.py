"""Build the LD_PRELOAD shim that lets sysbench 1.0.20 survive reconnects (shim/sbfix.c)."""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from clusterbench.errors import PreflightError

log = logging.getLogger(__name__)

MARIADB_INCLUDE = Path("/usr/include/mariadb")
SHIM_NAME = "sbfix.so"

Runner = Callable[[list[str]], "subprocess.CompletedProcess[str]"]


def shim_source() -> Path:
    return Path(str(resources.files("clusterbench.workloads") / "shim" / "sbfix.c"))


def shim_compile_argv(
    source: Path, output: Path, gcc: str = "gcc", include: Path = MARIADB_INCLUDE
) -> list[str]:
    return [gcc, "-O2", "-Wall", "-shared", "-fPIC", f"-I{include}", "-o", str(output), str(source), "-ldl"]


def _default_run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def build_shim(
    dest_dir: Path,
    *,
    source: Path | None = None,
    gcc: str | None = None,
    include: Path = MARIADB_INCLUDE,
    run: Runner = _default_run,
) -> Path:
    """Compile the shim into dest_dir unless an up-to-date build is there; return the .so path."""
    src = source if source is not None else shim_source()
    out = dest_dir / SHIM_NAME
    if out.exists() and out.stat().st_mtime >= src.stat().st_mtime:
        return out
    compiler = gcc if gcc is not None else shutil.which("gcc")
    if compiler is None:
        raise PreflightError("gcc is missing, needed to build the sysbench reconnect shim; run `make setup`")
    if not (include / "mysql.h").exists():
        raise PreflightError(
            f"{include}/mysql.h is missing (package libmariadb-dev), needed to build the sysbench "
            "reconnect shim; run `make setup`"
        )
    dest_dir.mkdir(parents=True, exist_ok=True)
    tmp = dest_dir / f".{SHIM_NAME}.tmp"
    argv = shim_compile_argv(src, tmp, compiler, include)
    log.info("building sysbench shim: %s", " ".join(argv))
    proc = run(argv)
    if proc.returncode != 0:
        first = (proc.stderr or proc.stdout or "").strip().splitlines()
        reason = first[0] if first else f"exit code {proc.returncode}"
        raise PreflightError(f"building the sysbench reconnect shim failed: {reason}; run `make setup`")
    tmp.replace(out)
    return out

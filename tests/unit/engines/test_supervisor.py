"""The restart supervisor's shell loop (engines/server.py SUPERVISE), run by a real sh over a
stand-in server script: exit 16 starts it again without --init-file, any other code ends it."""

import subprocess
from pathlib import Path

from clusterbench.engines.server import RESTART_EXIT, SUPERVISE


def _server(tmp: Path, codes: list[int]) -> Path:
    """A script that logs its arguments and parent PID variable, and exits with the next code."""
    script = tmp / "server.sh"
    (tmp / "codes").write_text("\n".join(str(c) for c in codes) + "\n")
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$MYSQLD_PARENT_PID $*" >> {tmp}/calls\n'
        f"code=$(head -n1 {tmp}/codes); sed -i 1d {tmp}/codes; exit $code\n"
    )
    script.chmod(0o755)
    return script


def test_a_restart_request_starts_the_server_again_without_its_init_file(tmp_path: Path) -> None:
    server = _server(tmp_path, [RESTART_EXIT, RESTART_EXIT, 0])
    child = tmp_path / "child.pid"
    p = subprocess.run(
        ["sh", "-c", SUPERVISE, "sh", str(child), str(server), "--a", "--init-file=/cb/init.sql", "--b"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert p.returncode == 0
    calls = (tmp_path / "calls").read_text().splitlines()
    assert len(calls) == 3
    parents = {c.split()[0] for c in calls}
    assert len(parents) == 1 and parents != {""}
    assert calls[0].split()[1:] == ["--a", "--init-file=/cb/init.sql", "--b"]
    assert calls[1].split()[1:] == ["--a", "--b"]
    assert calls[2].split()[1:] == ["--a", "--b"]
    assert p.stderr.count("asked for a restart") == 2
    assert child.read_text().strip().isdigit()


def test_any_other_exit_ends_the_supervisor_with_the_servers_code(tmp_path: Path) -> None:
    server = _server(tmp_path, [1])
    p = subprocess.run(
        ["sh", "-c", SUPERVISE, "sh", str(tmp_path / "child.pid"), str(server)],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert p.returncode == 1
    assert len((tmp_path / "calls").read_text().splitlines()) == 1

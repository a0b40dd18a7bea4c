"""LocalHost's file helpers and popen (the parts of the Host protocol components use instead of
Path methods, so the same code works on remote hosts)."""

from __future__ import annotations

import os
from pathlib import Path

from clusterbench.hosts.local import LocalHost, NetnsHost


def test_mkdir_exists_remove_file_size(tmp_path: Path) -> None:
    h = LocalHost()
    d = tmp_path / "a" / "b"
    h.mkdir(d, mode=0o750)
    assert d.is_dir() and (os.stat(d).st_mode & 0o777) == 0o750
    f = d / "f"
    assert not h.exists(f) and h.file_size(f) == 0
    h.put_file(f, "12345", mode=0o600)
    assert h.exists(f) and h.file_size(f) == 5
    h.remove(f)
    h.remove(f)  # already gone: fine
    assert not h.exists(f)


def test_popen_streams_stdout_and_stderr_apart(tmp_path: Path) -> None:
    p = LocalHost().popen(["sh", "-c", 'pwd; echo "$CB_X" >&2; exit 4'], env={"CB_X": "x"}, cwd=tmp_path)
    assert p.stdout is not None and p.stderr is not None
    assert (p.stdout.read(), p.stderr.read(), p.wait(10)) == (f"{tmp_path}\n".encode(), b"x\n", 4)


def test_netns_host_wraps_argv_and_is_local() -> None:
    h = NetnsHost("cb-x-n1")
    assert h.wrap(["true"]) == ["ip", "netns", "exec", "cb-x-n1", "true"] and not h.remote


def test_process_listing_reads_proc_as_the_shell_listing_prints_it(tmp_path: Path) -> None:
    from clusterbench.hosts.procs import parse_listing

    for pid, ppid, cmd in (("4242", "1", b"nginx: master process\0-c\0/x/w1/nginx.conf\0"),
                           ("4243", "4242", b"nginx: worker process\0")):  # fmt: skip
        d = tmp_path / pid
        d.mkdir()
        (d / "status").write_text(f"Name:\tnginx\nState:\tS (sleeping)\nPPid:\t{ppid}\n")
        (d / "stat").write_text(f"{pid} (nginx) S {ppid} " + " ".join(["0"] * 17) + " 777 0\n")
        (d / "cmdline").write_bytes(cmd)
    (tmp_path / "self").mkdir()  # not a process directory
    (tmp_path / "4244").mkdir()  # gone meanwhile: nothing to read
    entries = sorted(parse_listing(LocalHost().process_listing(tmp_path)), key=lambda e: e.pid)
    assert [(e.pid, e.ppid, e.state, e.start_ticks, e.cmdline) for e in entries] == [
        (4242, 1, "S", 777, "nginx: master process -c /x/w1/nginx.conf"),
        (4243, 4242, "S", 777, "nginx: worker process"),
    ]

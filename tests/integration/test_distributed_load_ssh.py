"""A load client on a machine reached only over SSH (a namespace of the ssh lab running sshd).

The client host is `hosts.SshHost`, the ssh provider's own host, driven through the workloads'
ClientHost protocol: the common start script runs there, its start line and PID come back over
the channel, the CPU probe runs there, its clock offset is measured, and the report hook is
staged there before sysbench starts. The lab has no database, so the host runs a stand-in that
waits and prints a recorded sysbench output where sysbench would run; everything else is real.

The lab (`cb-cbdls-*`, CB_DLS_SUBNET or 198.18.218.0/24) is removed at the end, also on failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterbench.hosts.ssh import KnownHosts, SshHost, SshTarget
from clusterbench.runner import make_options
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.workloads import SysbenchRunner
from clusterbench.workloads.placement import REMOTE_DIR, START_SCRIPT
from tests.integration.sshlab import SshLab, lab_available

pytestmark = pytest.mark.integration

RECORDED = Path(__file__).parents[1] / "unit" / "workloads" / "data" / "oltp_point_select.out"


@pytest.fixture(scope="module")
def lab(cb_home: Path) -> Iterator[SshLab]:
    reason = lab_available()
    if reason:
        pytest.skip(reason)
    lab = SshLab(name="cbdls", subnet=os.environ.get("CB_DLS_SUBNET", "198.18.218.0/24"), count=1)
    try:
        lab.start()
        yield lab
    finally:
        extra = lab.stop()
    assert extra == [], f"processes left in the lab's namespaces: {extra}"


class StandInOverSsh(SshHost):
    """SshHost whose sysbench is a stand-in (the lab has no database); probes run as they are."""

    preloads: list[str | None] = []

    def popen(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Any:
        if argv[:3] == ["sh", "-c", START_SCRIPT]:
            self.preloads.append((env or {}).get("LD_PRELOAD"))
            # the staged report hook must be where the command says, on the remote side
            # (after sysbench's --config-file, which carries the password off the command line)
            lua = next((a for a in argv[6:] if a.endswith("cb_report.lua")), None)
            assert lua == str(REMOTE_DIR / "cb_report.lua"), argv
            argv = [*argv[:5], "sh", "-c", '[ -s "$1" ] && sleep 3 && cat "$0"', str(RECORDED), lua]
        return super().popen(argv, env, cwd)


def test_clients_over_ssh_start_together_and_are_sampled(lab: SshLab, tmp_path: Path) -> None:
    staged = REMOTE_DIR / "cb_report.lua"
    existed = staged.exists()  # the lab shares this machine's filesystem
    host = StandInOverSsh(
        SshTarget("h1", lab.address(1), key=lab.key), known_hosts=KnownHosts(tmp_path / "kh")
    )
    ep = Endpoint(name="none", addresses=(Address(host="127.0.0.1", port=9),), user="u", password="p",
                  tls_dir=None, auto_inc_off=False)  # fmt: skip
    try:
        # A shim path that exists only here: the client machine must build its own and preload that.
        res = SysbenchRunner(cpu_interval=0.5, shim=Path("/nonexistent/here/sbfix.so")).run(
            make_options(test="oltp_point_select", threads=2, time=3), ep, clients=2, hosts=[host],
            preflight=False,
        )  # fmt: skip
        assert res.exit_code == 0 and res.summary is not None, res.failure()
        print("start", res.start_ns, "launch skew", res.launch_skew,
              [(c.pid, c.started_ns, c.clock_offset, c.cpu) for c in res.clients])  # fmt: skip
        assert [c.host for c in res.clients] == ["h1", "h1"] and all(c.own_host for c in res.clients)
        # two reports each and the tail after the last one: the events add up to each summary
        assert all(len({round(s.t) for s in c.samples}) >= 2 for c in res.clients)
        assert all(c.summary is not None and sum(s.events for s in c.samples) == c.summary.events
                   for c in res.clients)  # fmt: skip
        # the start line came back over the channel; exec kept the PID the ssh provider reported
        assert all(c.pid is not None and c.started_ns is not None for c in res.clients)
        assert res.start_ns is not None and all(c.started_ns >= res.start_ns for c in res.clients)  # type: ignore[operator]
        assert res.launch_skew is not None and res.launch_skew < 0.5
        for c in res.clients:
            # probed over ssh; the lab's "machine" shares our clock, so its offset is ~0
            assert c.cpu is not None and c.cpu.readings >= 2 and c.cpu.proc_cores is not None
            assert c.clock_offset is not None and abs(c.clock_offset) < 0.5
            # the lab's "machine" is this machine: its CPUs may well be busy with other sessions
            assert set(c.flags) <= {"host_cpu_busy"}
        assert staged.read_text().startswith("-- clusterbench report wrapper")
        # the reconnect shim was compiled over ssh on the client machine and preloaded from there
        built = sorted(REMOTE_DIR.glob("sbfix-*.so"))
        assert len(built) == 1 and built[0].stat().st_size > 0
        assert StandInOverSsh.preloads == [str(built[0])] * 2
    finally:
        for f in [*REMOTE_DIR.glob("sbfix-*.so"), *REMOTE_DIR.glob("sbfix-*.c")]:
            f.unlink(missing_ok=True)
        host.close()
        if not existed:
            staged.unlink(missing_ok=True)
            if REMOTE_DIR.exists() and not any(REMOTE_DIR.iterdir()):
                REMOTE_DIR.rmdir()

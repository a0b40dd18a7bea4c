"""The power-loss layer's Python side: its values, the preflight, the lifecycle over a fake host and
a fake control channel, and both channels against a real socket or a fake socat."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from clusterbench.errors import ComponentError, InputError, PreflightError
from clusterbench.hosts.base import CommandResult, ProcessRef
from clusterbench.providers.faultfs import FS_TYPE, FaultFS, binary_path, layer_mounts, preflight, release_all
from clusterbench.providers.faultfs_proto import (
    DiskFaults,
    Dropped,
    HostChannel,
    LayerStatus,
    SocketChannel,
)
from tests.unit.fakes import FakeClock, FakeHost, result

BIN = Path("/opt/cb/cb-faultfs")
MNT = Path("/c/n1/data")
SRC = Path("/c/n1/data.faultfs")


def info_line(point: str, fstype: str = FS_TYPE) -> str:
    return f"43 27 0:39 / {point} rw,nosuid,nodev,relatime - {fstype} /src rw,user_id=0,allow_other"


class Host(FakeHost):
    """A FakeHost whose file checks and directories stay in memory; `id -u` answers 0."""

    def __init__(self) -> None:
        super().__init__("h1")
        self.present: set[Path] = {Path("/dev/fuse"), BIN}
        self.dirs: list[tuple[Path, str | None]] = []
        self.responses[("id", "-u")] = "0\n"

    def exists(self, path: Path) -> bool:
        return path in self.present

    def mkdir(self, path: Path, *, owner: str | None = None, mode: int = 0o755) -> None:
        self.dirs.append((path, owner))

    def mount_layer(self, *points: Path) -> None:
        self.files[Path("/proc/self/mountinfo")] = "\n".join(info_line(str(p)) for p in points) + "\n"


class Channel:
    """Answers requests from a script: op -> answer (ok true unless given); records them."""

    def __init__(self, answers: dict[str, dict[str, Any]] | None = None) -> None:
        self.answers = answers or {}
        self.sent: list[dict[str, Any]] = []
        self.on: dict[str, Any] = {}

    def request(self, message: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        self.sent.append(dict(message))
        op = str(message["op"])
        if op in self.on:
            self.on[op]()
        return {"ok": True, **self.answers.get(op, {})}

    def ops(self) -> list[str]:
        return [m["op"] for m in self.sent]


def layer(host: Host, channel: Channel | None = None) -> FaultFS:
    return FaultFS(host, SRC, MNT, binary=BIN, clock=FakeClock(), channel=channel or Channel())


# values


def test_disk_faults_to_json_and_text() -> None:
    f = DiskFaults(
        delay_ms=20, jitter_ms=5, delay_ops=("fsync",), error="EIO", error_ops=("write",), seconds=30
    )
    assert f.to_json() == {
        "delay_ms": 20,
        "jitter_ms": 5,
        "delay_ops": ["fsync"],
        "error": "EIO",
        "error_ops": ["write"],
        "probability": 1.0,
        "seconds": 30,
    }
    assert f.text() == "+20 ms (+0-5 ms) per fsync, EIO on write for 30 s"
    assert DiskFaults(error="ENOSPC", error_ops=("write", "fsync"), probability=0.25).text() == (
        "ENOSPC on 25% of write/fsync"
    )
    assert DiskFaults(delay_ms=1, delay_ops=("all",)).to_json() == {
        "delay_ms": 1,
        "jitter_ms": 0.0,
        "delay_ops": ["all"],
    }


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({}, "nothing to inject"),
        ({"delay_ms": -1, "delay_ops": ("read",)}, "must not be negative"),
        ({"delay_ms": 5}, "a delay needs delay_ops"),
        ({"delay_ms": 5, "delay_ops": ("mkdir",)}, "delay_ops ['mkdir']"),
        ({"error": "EPERM", "error_ops": ("write",)}, "error 'EPERM' is not one of EIO, ENOSPC"),
        ({"error": "EIO"}, "an error needs error_ops"),
        ({"error": "EIO", "error_ops": ("read",)}, "error_ops ['read']"),
        ({"error": "EIO", "error_ops": ("fsync",), "probability": 0}, "probability"),
        ({"error": "EIO", "error_ops": ("fsync",), "seconds": 0}, "seconds must be positive"),
    ],
)
def test_disk_faults_refuse_bad_values_in_one_line(kwargs: dict[str, Any], says: str) -> None:
    with pytest.raises(InputError, match="^disk faults: ") as info:
        DiskFaults(**kwargs)
    assert says in str(info.value) and "\n" not in str(info.value)


def test_status_and_dropped_from_the_protocol() -> None:
    s = LayerStatus.from_json(
        {
            "gate": {"frozen": True, "drops": 2, "ops": {"read": 3, "write": 4}, "refused": 1},
            "files": {"unsynced_files": 2, "unsynced_bytes": 5200, "created_files": 1, "undo_bytes": 4096},
        }
    )
    assert (s.frozen, s.drops, s.unsynced_bytes, s.created_files, s.ops["write"]) == (True, 2, 5200, 1, 4)
    assert s.text() == "frozen; 5200 un-synced bytes in 2 file(s) (1 new); 7 operations served"
    d = Dropped.from_json(
        {
            "files": [
                {"path": "A", "unsynced_bytes": 200, "reverted_bytes": 4096, "size_before": 12100},
                {"path": "B", "unsynced_bytes": 5000, "size_before": 5000, "removed": True},
                {"path": "C", "unsynced_bytes": 1, "error": "restoring: EIO"},
            ]
        }
    )
    assert d.unsynced_bytes == 5201 and d.removed == 1 and d.errors == ["C: restoring: EIO"]
    assert d.text() == "lost 5201 un-synced bytes in 3 file(s), 1 new file(s) removed"
    assert Dropped().text() == "nothing un-synced to lose"


def test_layer_mounts_finds_ours_below_a_root_deepest_first() -> None:
    text = "\n".join(
        [
            info_line("/c/n1/data"),
            info_line("/c/n1/data/sub"),
            info_line("/c/n2/data", "tmpfs"),
            info_line("/other/data"),
            info_line("/c/with\\040space"),
        ]
    )
    deepest_first = [Path("/c/n1/data/sub"), Path("/c/n1/data"), Path("/c/with space")]
    assert layer_mounts(text, Path("/c")) == deepest_first
    assert Path("/other/data") in layer_mounts(text)


def test_release_all_unmounts_lazily_when_busy() -> None:
    host = Host()
    host.mount_layer(Path("/c/n1/data"), Path("/elsewhere"))
    host.responder = lambda argv: result(argv, returncode=32 if argv == ["umount", "/c/n1/data"] else 0)
    assert release_all(host, Path("/c")) == ["unmounted power-loss layer /c/n1/data"]
    assert host.runs == [["umount", "/c/n1/data"], ["umount", "-l", "/c/n1/data"]]


def test_binary_path_follows_clusterbench_bin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLUSTERBENCH_BIN", raising=False)
    assert binary_path() == Path("/var/lib/clusterbench/bin/cb-faultfs")
    monkeypatch.setenv("CLUSTERBENCH_BIN", "/x")
    assert binary_path() == Path("/x/cb-faultfs")


# preflight


def test_preflight_names_what_is_missing_in_one_line() -> None:
    host = Host()
    preflight(host, BIN)
    host.present.discard(BIN)
    with pytest.raises(PreflightError, match="cb-faultfs is missing.*run `make setup`"):
        preflight(host, BIN)
    host.present.discard(Path("/dev/fuse"))
    with pytest.raises(PreflightError, match="/dev/fuse is missing: this kernel has no FUSE"):
        preflight(host, BIN)
    host = Host()
    host.responses[("id", "-u")] = "1000\n"
    with pytest.raises(PreflightError, match=r"needs root \(uid 1000\)"):
        preflight(host, BIN)
    assert PreflightError.exit_code == 2


# lifecycle


def test_start_spawns_the_daemon_and_waits_until_it_answers() -> None:
    host, ch = Host(), Channel()
    fs = layer(host, ch)
    clock = FakeClock()
    fs.clock = clock
    clock.at(clock.now() + 0.2, lambda: host.mount_layer(MNT))
    proc = fs.start(owner="mysql")
    assert host.spawned[0].argv == [
        str(BIN), "-source", str(SRC), "-mount", str(MNT), "-control", "/c/n1/.data.faultfs.sock"
    ]  # fmt: skip
    assert host.spawned[0].log == Path("/c/n1/data.faultfs.log")
    assert host.dirs == [(SRC, "mysql"), (MNT, "mysql")]
    assert fs.proc == proc and ch.ops() == ["status"]


def test_start_reports_a_daemon_that_exits_with_its_log() -> None:
    class DeadOnArrival(Host):
        def spawn(self, argv: list[str], *, log: Path) -> ProcessRef:
            proc = super().spawn(argv, log=log)
            self.live.discard(proc.pid)
            return proc

    host = DeadOnArrival()
    fs = layer(host)
    host.files[fs.log_path] = "cb-faultfs: error: mounting /c/n1/data.faultfs at /c/n1/data: no such device\n"
    with pytest.raises(ComponentError, match="daemon exited: cb-faultfs: error: mounting .*no such device"):
        fs.start()


def test_start_refuses_a_mount_point_that_is_already_a_layer() -> None:
    host = Host()
    host.mount_layer(MNT)
    with pytest.raises(ComponentError, match="already mounted"):
        layer(host).start()
    assert host.spawned == []


def test_start_times_out_with_the_log_tail_and_stops_the_daemon() -> None:
    host = Host()
    host.die_on = (15, 9)
    fs = layer(host)
    with pytest.raises(ComponentError, match="not ready after 1 s: no output in"):
        fs.start(timeout=1)
    assert host.signal_numbers() == [15] and fs.proc is None


def test_power_loss_is_freeze_kill_drop_thaw() -> None:
    ch = Channel(
        {
            "drop": {"files": [{"path": "B", "unsynced_bytes": 5000, "size_before": 5000}]},
            "thaw": {"refused": 2},
        }
    )
    fs = layer(Host(), ch)
    killed: list[list[str]] = []
    dropped = fs.power_loss(lambda: killed.append(ch.ops()), new_files="remove")
    assert killed == [["freeze"]]
    assert ch.ops() == ["freeze", "drop", "thaw"]
    assert ch.sent[1] == {"op": "drop", "new_files": "remove"}
    assert dropped.refused == 2 and dropped.unsynced_bytes == 5000 and dropped.files[0].path == "B"


def test_power_loss_thaws_when_the_kill_fails() -> None:
    ch = Channel()
    fs = layer(Host(), ch)

    def kill() -> None:
        raise ComponentError("no such process")

    with pytest.raises(ComponentError, match="no such process"):
        fs.power_loss(kill)
    assert ch.ops() == ["freeze", "thaw"]


def test_power_loss_thaws_when_the_freeze_times_out_and_kills_nobody() -> None:
    class SlowFreeze(Channel):
        def request(self, message: Mapping[str, Any], timeout: float) -> dict[str, Any]:
            super().request(message, timeout)
            if message["op"] == "freeze":
                return {"ok": False, "error": "1 operations still in flight after 30s; still frozen"}
            return {"ok": True}

    ch = SlowFreeze()
    killed: list[bool] = []
    with pytest.raises(ComponentError, match="freeze: 1 operations still in flight"):
        layer(Host(), ch).power_loss(lambda: killed.append(True))
    assert ch.ops() == ["freeze", "thaw"] and killed == []


def test_power_loss_refuses_an_unknown_new_files_mode_before_freezing() -> None:
    ch = Channel()
    with pytest.raises(InputError, match="new_files must be one of empty, remove"):
        layer(Host(), ch).power_loss(lambda: None, new_files="gone")
    assert ch.sent == []


def test_a_refused_request_raises_with_the_layers_reason() -> None:
    class Refusing(Channel):
        def request(self, message: Mapping[str, Any], timeout: float) -> dict[str, Any]:
            return {"ok": False, "error": "not frozen: freeze first"}

    says = r"^\[h1\] cb-faultfs at /c/n1/data: drop: not frozen: freeze first$"
    with pytest.raises(ComponentError, match=says):
        layer(Host(), Refusing()).drop()


def test_faults_are_sent_as_the_protocol_wants() -> None:
    ch = Channel()
    fs = layer(Host(), ch)
    fs.set_faults(DiskFaults(error="EIO", error_ops=("fsync",), probability=0.5))
    fs.clear_faults()
    assert ch.sent == [
        {"op": "set_faults", "faults": {"error": "EIO", "error_ops": ["fsync"], "probability": 0.5}},
        {"op": "clear_faults"},
    ]


@pytest.mark.parametrize(
    ("discard", "said", "signals"),
    [
        (False, "stopped; unmounted /c/n1/data", [15]),
        # the files are deleted next: SIGKILL at once, no SIGTERM first
        (True, "killed; unmounted /c/n1/data", [9]),
    ],
)
def test_stop_ends_the_daemon_and_unmounts_what_is_left(discard: bool, said: str, signals: list[int]) -> None:
    host = Host()
    fs = layer(host)
    fs.proc = host.spawn(fs.argv(), log=fs.log_path)
    host.die_on = (15, 9)
    host.mount_layer(MNT)
    assert fs.stop(discard=discard) == said
    assert host.signal_numbers() == signals and ["umount", "/c/n1/data"] in host.runs
    assert fs.proc is None


# channels


def test_socket_channel_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "ctl"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            req = json.loads(conn.makefile().readline())
            conn.sendall((json.dumps({"ok": True, "echo": req["op"]}) + "\n").encode())

    t = threading.Thread(target=answer)
    t.start()
    assert SocketChannel(path).request({"op": "status"}, 5) == {"ok": True, "echo": "status"}
    t.join()
    server.close()


def test_socket_channel_says_when_nothing_listens(tmp_path: Path) -> None:
    with pytest.raises(ComponentError, match="socket .*ctl: No such file or directory; is the layer running"):
        SocketChannel(tmp_path / "ctl").request({"op": "status"}, 1)


def test_host_channel_goes_through_socat() -> None:
    host = Host()
    host.responder = lambda argv: CommandResult(tuple(argv), 0, '{"ok": true, "gate": {}}\n', "")
    assert HostChannel(host, Path("/c/ctl")).request({"op": "status"}, 5) == {"ok": True, "gate": {}}
    assert host.runs == [["socat", "-t", "5", "-T", "5", "-", "UNIX-CONNECT:/c/ctl"]]
    assert host.inputs == ['{"op": "status"}\n']
    host.responder = lambda argv: CommandResult(tuple(argv), 1, "", "socat: connect: Connection refused")
    with pytest.raises(ComponentError, match="Connection refused; is it running"):
        HostChannel(host, Path("/c/ctl")).request({"op": "status"}, 5)

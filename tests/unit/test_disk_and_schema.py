"""Item: silent schema divergence after a disk-full node. The pure parts: datadir file systems
(mounts under a cluster, df), the topology field, the disk-full and sql fault kinds, and the
convergence checker comparing table definitions (with its negative control: a missing index)."""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pymysql
import pytest
from pydantic import ValidationError

from clusterbench.checkers.convergence import (
    ConvergenceSnapshot,
    NodeState,
    check_convergence,
    definition_diff,
)
from clusterbench.checkers.verdict import Result
from clusterbench.engines.base import SessionSql
from clusterbench.errors import PreflightError
from clusterbench.faults.actions import DiskFull
from clusterbench.faults.spec import FaultSpec, plan
from clusterbench.providers.datadirfs import (
    DiskSpace,
    image_path,
    loop_devices,
    mount_argv,
    mounts_under,
    parse_df,
    source_name,
)
from clusterbench.spec.topology import Topology, size_bytes
from clusterbench.verify.convergence import read_definitions

MOUNTINFO = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
301 22 0:61 / /var/lib/cb/clusters/lab/n3/data rw,relatime shared:170 - tmpfs cbdata-lab-n3 rw,size=262144k
302 22 0:62 / /var/lib/cb/clusters/lab2/n1/data rw,relatime shared:171 - tmpfs cbdata-lab2-n1 rw,size=262144k
303 301 0:63 / /var/lib/cb/clusters/lab/n3/data/sub\\040dir rw - tmpfs x rw
"""


def test_mounts_under_a_cluster_directory_deepest_first_and_no_neighbours() -> None:
    assert mounts_under(MOUNTINFO, Path("/var/lib/cb/clusters/lab")) == [
        Path("/var/lib/cb/clusters/lab/n3/data/sub dir"),
        Path("/var/lib/cb/clusters/lab/n3/data"),
    ]
    assert mounts_under(MOUNTINFO, Path("/var/lib/cb/clusters/none")) == []


def test_mount_argv_and_source_name() -> None:
    assert source_name("lab", "n3") == "cbdata-lab-n3"
    assert mount_argv(Path("/d"), "256M", "cbdata-lab-n3") == [
        "mount", "-t", "tmpfs", "-o", "size=256M,mode=0755", "cbdata-lab-n3", "/d",
    ]  # fmt: skip


def test_df_parsed_and_nearly_full() -> None:
    text = (
        "Filesystem 1024-blocks Used Available Capacity Mounted on\ncbdata-lab-n3 262144 262144 0 100% /d\n"
    )
    d = parse_df(text, "/d")
    assert d == DiskSpace(path="/d", mount="/d", total=256 << 20, free=0)
    assert d.nearly_full and d.text() == "0 B of 256.0 MiB (0%)"
    roomy = DiskSpace("/x", "/", 252 << 30, 75 << 30)
    assert not roomy.nearly_full and roomy.text() == "75.0 GiB of 252.0 GiB (30%)"
    assert DiskSpace("/x", "/", 252 << 30, 20 << 30).nearly_full  # under 10 %
    assert DiskSpace("/x", "/", 512 << 20, 30 << 20).nearly_full  # under 32 MiB
    assert not DiskSpace("/x", "/", 256 << 20, 90 << 20).nearly_full  # a small datadir fs, 35 % free
    assert parse_df("df: /nope: No such file or directory\n", "/nope") is None


def test_topology_datadir_size() -> None:
    t = Topology.model_validate({"node": [{"index": 3, "datadir_size": "256M"}]})
    assert (t.node_datadir_size(3), t.node_datadir_size(1)) == ("256M", None)
    assert size_bytes("256M") == 256 << 20 and size_bytes("1G") == 1 << 30 and size_bytes("512") == 512
    with pytest.raises(ValidationError, match="too small for a datadir"):
        Topology.model_validate({"node": [{"index": 3, "datadir_size": "64M"}]})
    with pytest.raises(ValidationError, match="is not a size like"):
        Topology.model_validate({"node": [{"index": 3, "datadir_size": "lots"}]})


def test_topology_datadir_fs_loop_for_every_node_or_one() -> None:
    t = Topology.model_validate({"node": [{"index": 3, "datadir_size": "256M"}]})
    assert [t.node_datadir_fs(i) for i in (1, 2, 3)] == ["host", "host", "tmpfs"]
    t = Topology.model_validate(
        {"cluster": {"datadir_fs": "loop"}, "node": [{"index": 2, "datadir_size": "512M"}]}
    )
    assert [t.node_datadir_fs(i) for i in (1, 2, 3)] == ["loop", "loop", "loop"]
    assert [t.node_datadir_size(i) for i in (1, 2, 3)] == ["2G", "512M", "2G"]
    t = Topology.model_validate(
        {"node": [{"index": 1, "datadir_fs": "loop"}, {"index": 2, "datadir_fs": "tmpfs"}]}
    )
    assert [(t.node_datadir_fs(i), t.node_datadir_size(i)) for i in (1, 2, 3)] == [
        ("loop", "2G"), ("tmpfs", "1G"), ("host", None),
    ]  # fmt: skip
    with pytest.raises(
        ValidationError,
        match='datadir_size is the size of a file system of its own; with datadir_fs = "host"',
    ):
        Topology.model_validate({"node": [{"index": 1, "datadir_fs": "host", "datadir_size": "256M"}]})


def test_loop_devices_over_images_under_a_cluster_only() -> None:
    listing = (
        "/dev/loop0 /var/lib/cb/clusters/lab/n1/data.img\n"
        "/dev/loop1 /var/lib/cb/clusters/lab2/n1/data.img\n"
        "/dev/loop2 /var/lib/cb/clusters/lab/n2/data.img (deleted)\n"
        "/dev/loop3 \n"
    )
    assert loop_devices(listing, Path("/var/lib/cb/clusters/lab")) == ["/dev/loop0", "/dev/loop2"]
    assert image_path(Path("/x/n1/data")) == Path("/x/n1/data.img")


def spec(**kw: Any) -> FaultSpec:
    return FaultSpec.model_validate(kw)


def test_disk_full_and_sql_are_planned_and_checked() -> None:
    got = plan(
        [
            spec(kind="disk-full", target="node:3", at=5, **{"for": 15}),
            spec(kind="sql", target="node:1", at=9, statement="CREATE INDEX k ON sbtest.sbtest1 (c)"),
        ],
        3, 1, 30,
    )  # fmt: skip
    assert [(f.label(), f.until) for f in got] == [("disk-full n3", 20), ("sql n1", None)]
    assert got[1].params == {"statement": "CREATE INDEX k ON sbtest.sbtest1 (c)"}
    bad = [
        (spec(kind="sql", target="node:1", at=9), 'sql needs statement = "..."'),
        (spec(kind="sql", target="all", at=9, statement="X"), 'sql runs on one node: target = "node:N"'),
        (spec(kind="sql", target="node:1", at=9, statement="X", **{"for": 3}), "sql runs once at `at`"),
        (spec(kind="disk-full", target="node:3", at=5), "`for` (duration in seconds) is required"),
        (spec(kind="kill-node", target="node:3", at=5, statement="SELECT 1", **{"for": 3}),
         "statement only applies to sql"),
    ]  # fmt: skip
    for s, msg in bad:
        with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
            plan([s], 3, 1, 30)


def test_disk_full_never_fills_a_file_system_the_tool_did_not_make() -> None:
    [f] = plan([spec(kind="disk-full", target="node:2", at=5, **{"for": 5})], 3, 1, 30)
    cluster = SimpleNamespace(
        topology=Topology.model_validate({"node": [{"index": 3, "datadir_size": "256M"}]})
    )
    with pytest.raises(PreflightError) as info:
        DiskFull(cluster, f)  # type: ignore[arg-type]
    assert str(info.value) == (
        "disk-full fills only a datadir file system of the node's own, and n2 has none: add [[node]] "
        'index = 2 with datadir_size = "256M" to the topology and bring the cluster up again (clusterbench '
        "never fills the machine's own file system)"
    )


# ---- convergence compares definitions ------------------------------------------------------------

WITH_INDEX = (
    "table engine InnoDB collation latin1_swedish_ci\n"
    "column 1 id int(10) unsigned null=NO default= extra= collation=\n"
    "column 2 c char(120) null=NO default='' extra= collation=latin1_swedish_ci\n"
    "index PRIMARY unique BTREE (id)\n"
    "index cb_drill_c non-unique BTREE (c)"
)
WITHOUT = "\n".join(ln for ln in WITH_INDEX.splitlines() if "cb_drill_c" not in ln)


def node(name: str, definition: str) -> NodeState:
    return NodeState(
        name, True, local_state="Synced", cluster_status="Primary", ready=True, size=3, conf_id=5,
        state_uuid="u", last_committed=9, position="9", tables={"sbtest.sbtest1": (100, 42)},
        definitions={"sbtest.sbtest1": definition},
    )  # fmt: skip


def test_equal_data_and_definitions_pass() -> None:
    v = check_convergence(ConvergenceSnapshot([node(n, WITH_INDEX) for n in ("n1", "n2", "n3")], True), 3)
    assert v.result is Result.PASS
    assert v.summary.endswith("1 tables identical in data and definition")
    assert len(v.evidence["nodes"]["n1"]["definitions"]["sbtest.sbtest1"]) == 16


def test_a_missing_index_on_one_node_is_divergence_though_the_data_is_equal() -> None:
    snap = ConvergenceSnapshot([node("n1", WITH_INDEX), node("n2", WITH_INDEX), node("n3", WITHOUT)], True)
    v = check_convergence(snap, 3)
    assert v.result is Result.FAIL
    assert v.summary == (
        "table definitions differ between nodes: sbtest.sbtest1 "
        "(n3 lacks index cb_drill_c non-unique BTREE (c))"
    )
    assert v.evidence["mismatched_tables"] == {}
    m = v.evidence["mismatched_definitions"]["sbtest.sbtest1"]
    assert m["digests"]["n1"] == m["digests"]["n2"] != m["digests"]["n3"]
    assert m["differences"] == {"n3": ["lacks index cb_drill_c non-unique BTREE (c)"]}


def test_definition_diff_names_extra_and_missing_lines() -> None:
    extra = WITH_INDEX + "\nindex k2 non-unique BTREE (c)"
    assert definition_diff({"n1": WITH_INDEX, "n2": WITH_INDEX, "n3": extra, "n4": None}) == {
        "n3": ["has index k2 non-unique BTREE (c)"],
        "n4": ["lacks the table"],
    }


class Cur:
    """information_schema rows, as MariaDB returns them for one table."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def execute(self, q: str, args: Any = None) -> None:
        self.queries.append(q)

    def fetchall(self) -> list[tuple[Any, ...]]:
        q = self.queries[-1]
        if "information_schema.tables" in q:
            return [("sbtest", "sbtest1", "InnoDB", "latin1_swedish_ci")]
        if "information_schema.columns" in q:
            return [
                ("sbtest", "sbtest1", 1, "id", "int(10) unsigned", "NO", None, "", None),
                ("sbtest", "sbtest1", 2, "c", "char(120)", "NO", "''", "", "latin1_swedish_ci"),
            ]
        return [
            ("sbtest", "sbtest1", "PRIMARY", 0, "BTREE", 1, "id", None),
            ("sbtest", "sbtest1", "cb_drill_c", 1, "BTREE", 1, "c", None),
        ]


def test_definitions_read_from_information_schema() -> None:
    cur = Cur()
    assert read_definitions(cur, ["sbtest"]) == {"sbtest.sbtest1": WITH_INDEX}
    assert all("information_schema" in q and "auto_increment" not in q.lower() for q in cur.queries)


# ---- the disk-full heal waits until the node applied its backlog ---------------------------------


class _Cursor:
    def __init__(self, log: list[str], fail: bool) -> None:
        self.log, self.fail = log, fail

    def __enter__(self) -> _Cursor:
        return self

    def __exit__(self, *a: object) -> None:
        return None

    def execute(self, sql: str) -> None:
        self.log.append(sql)
        if self.fail and sql == "SELECT 1":
            why = "Lost connection to MySQL server during query (timed out)"
            raise pymysql.err.OperationalError(2013, why)


class _CausalNode:
    """A node whose causal read either answers or times out (its applier waits for disk space)."""

    def __init__(self, causal: tuple[str, ...], fail: bool = False) -> None:
        self.session = SessionSql(monitor=(), causal=causal, default=())
        self.log: list[str] = []
        self.kw: dict[str, object] = {}
        self.fail = fail

    @contextlib.contextmanager
    def connect(self, timeout: float = 2.0, **kw: object) -> Iterator[object]:
        self.kw = {"timeout": timeout, **kw}
        yield types.SimpleNamespace(cursor=lambda: _Cursor(self.log, self.fail))


def test_disk_full_heal_waits_for_a_causal_read() -> None:
    from clusterbench.faults.actions import CATCH_UP_TIMEOUT, caught_up

    gr = _CausalNode(("SET SESSION group_replication_consistency='BEFORE'",))
    assert caught_up(gr, CATCH_UP_TIMEOUT).startswith("applied the backlog in 0.")  # type: ignore[arg-type]
    assert gr.log == ["SET SESSION group_replication_consistency='BEFORE'", "SELECT 1"]
    assert gr.kw == {"timeout": 5.0, "read_timeout": 75.0}  # longer than MySQL's 60 s retry
    stuck = _CausalNode(("SET SESSION wsrep_sync_wait=1",), fail=True)
    got = caught_up(stuck, 75.0)  # type: ignore[arg-type]
    assert got.startswith("not caught up after 0.") and got.endswith(
        "s (Lost connection to MySQL server during query (timed out))"
    )

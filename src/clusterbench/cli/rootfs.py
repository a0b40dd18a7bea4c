"""`clusterbench rootfs`: the MySQL root file system Group Replication members run from."""

from __future__ import annotations

from typing import Annotated

import typer

from clusterbench.cli import console
from clusterbench.cli.common import typer_app
from clusterbench.engines.group_replication import rootfs as gr_rootfs
from clusterbench.errors import PreflightError

rootfs_app = typer_app(
    help="The MySQL root file system (Debian unstable, debootstrapped) that Group Replication runs from."
)


def _describe(info: gr_rootfs.RootfsInfo) -> str:
    took = f", built in {info.build_seconds:.0f} s" if info.build_seconds else ""
    return f"MySQL {info.mysql_version} at {info.path} ({info.size_bytes / 2**20:.0f} MiB{took})"


@rootfs_app.command("build")
def build(
    soft: Annotated[
        bool,
        typer.Option(
            "--soft",
            help="On failure print one line and exit 0 (`make setup`: only Group Replication needs it).",
        ),
    ] = False,
) -> None:
    """Build the root file system once with debootstrap (about a minute, ~650 MiB); reuse it after.
    Its place is /var/lib/clusterbench/rootfs/mysql unless CLUSTERBENCH_ROOTFS says otherwise."""
    root = gr_rootfs.rootfs_dir()
    existed = gr_rootfs.problem(root) is None
    try:
        info = gr_rootfs.build(root)
    except gr_rootfs.RootfsBuildError as exc:
        line = f"Group Replication rootfs not built: {exc}; Group Replication tests will be skipped"
        if soft:
            console.warn(line)
            return
        raise PreflightError(f"{exc}; retry with `clusterbench rootfs build`") from None
    console.out.print(f"rootfs: {'reused' if existed else 'built'} {_describe(info)}")


@rootfs_app.command("status")
def status() -> None:
    """Where the root file system is, which MySQL it holds, or why it is missing (exit 2)."""
    root = gr_rootfs.rootfs_dir()
    bad = gr_rootfs.problem(root)
    if bad is not None:
        raise PreflightError(bad)
    info = gr_rootfs.read_info(root) or gr_rootfs.build(root)
    console.out.print(f"rootfs: {_describe(info)}")

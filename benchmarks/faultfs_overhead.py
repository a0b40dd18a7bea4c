"""What does the power-loss layer (cb-faultfs) cost? sysbench's fileio test (no database) on a
directory with the layer and on one without, on the same file system, in alternating pairs in one
run (layer-raw, raw-layer, ...): the geometric mean of layer/raw with a 95 % CI
(benchmarks/paired.py). Needs root, /dev/fuse, sysbench and a built cb-faultfs (`make setup`).

    python benchmarks/faultfs_overhead.py [--pairs 6] [--seconds 5] [--tests rndwr-fsync,seqwr]

Tests (16 KiB blocks, one 64 MiB file, one thread, niced):
* rndwr-fsync: random writes with an fsync after each, as InnoDB's commit (writes/s);
* rndwr-fdatasync: the same with fdatasync, as a redo log;
* rndwr-direct-fsync: rndwr-fsync through O_DIRECT, as InnoDB's data files by default;
* seqwr: sequential writes, fsync only at the end (MiB/s): the write path and the undo log;
* seqrd: sequential reads (MiB/s), for the read path.
Everything lives under /tmp/faultfs-bench-PID and is removed, the layer unmounted, at the end.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from paired import ratio_ci

from clusterbench.hosts.local import LocalHost
from clusterbench.providers.faultfs import FaultFS, preflight

BLOCK = 16384
FILES = ["--file-num=1", "--file-total-size=64M", f"--file-block-size={BLOCK}"]


@dataclass(frozen=True)
class Test:
    name: str
    args: tuple[str, ...]
    figure: str  # the regex group 1 of sysbench's output that is the throughput
    unit: str


TESTS = {
    "rndwr-fsync": Test(
        "rndwr-fsync", ("--file-test-mode=rndwr", "--file-fsync-freq=1"), r"writes/s:\s+([\d.]+)", "writes/s"
    ),
    "rndwr-fdatasync": Test(
        "rndwr-fdatasync",
        ("--file-test-mode=rndwr", "--file-fsync-freq=1", "--file-fsync-mode=fdatasync"),
        r"writes/s:\s+([\d.]+)",
        "writes/s",
    ),
    "rndwr-direct-fsync": Test(
        "rndwr-direct-fsync",
        ("--file-test-mode=rndwr", "--file-fsync-freq=1", "--file-extra-flags=direct"),
        r"writes/s:\s+([\d.]+)",
        "writes/s",
    ),
    "seqwr": Test(
        "seqwr", ("--file-test-mode=seqwr", "--file-fsync-freq=0"), r"written, MiB/s:\s+([\d.]+)", "MiB/s"
    ),
    "seqrd": Test("seqrd", ("--file-test-mode=seqrd",), r"read, MiB/s:\s+([\d.]+)", "MiB/s"),
}


def sysbench(cwd: Path, *args: str, timeout: float = 600) -> str:
    argv = ["nice", "-n", "5", "sysbench", "fileio", *FILES, *args]
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False, timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"sysbench {' '.join(args)} in {cwd} failed: {(proc.stderr or proc.stdout)[-300:]}")
    return proc.stdout


def measure(test: Test, cwd: Path, seconds: float) -> float:
    out = sysbench(cwd, *test.args, f"--time={seconds:g}", "--threads=1", "run")
    m = re.search(test.figure, out)
    if m is None:
        raise SystemExit(f"no {test.unit} in sysbench's output for {test.name}: {out[-300:]}")
    return float(m.group(1))


def run_pairs(test: Test, raw: Path, layered: Path, pairs: int, seconds: float) -> None:
    with_layer, without, layer_first = [], [], []
    for i in range(pairs):
        first = i % 2 == 0  # alternate which runs first
        order = [("layer", layered), ("raw", raw)] if first else [("raw", raw), ("layer", layered)]
        got = {name: measure(test, cwd, seconds) for name, cwd in order}
        with_layer.append(got["layer"])
        without.append(got["raw"])
        layer_first.append(first)
        print(
            f"  {test.name} pair {i + 1}: layer {got['layer']:.1f}, raw {got['raw']:.1f} {test.unit} "
            f"({got['layer'] / got['raw']:.3f})",
            flush=True,
        )
    ci = ratio_ci(with_layer, without, layer_first)
    print(f"{test.name}: {ci.line('with layer / without')}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--tests", default="rndwr-fsync,seqwr")
    args = ap.parse_args()
    tests = [TESTS[t] for t in args.tests.split(",") if t]
    if os.geteuid() != 0 or shutil.which("sysbench") is None:
        raise SystemExit("needs root and sysbench (run `make setup`)")
    host = LocalHost()
    preflight(host)
    root = Path(f"/tmp/faultfs-bench-{os.getpid()}")
    raw = root / "raw"
    raw.mkdir(parents=True)
    layer = FaultFS(host, root / "src", root / "mnt")
    try:
        layer.start()
        for d in (raw, layer.mount):
            sysbench(d, "prepare")
        for test in tests:
            run_pairs(test, raw, layer.mount, args.pairs, args.seconds)
        print(f"layer at the end: {layer.status().text()}")
    finally:
        stopped = layer.stop()
        print(f"stopping the layer: {stopped}")
        if "killed" in stopped:
            print((layer.log_path.read_text() if layer.log_path.exists() else "")[-2000:])
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

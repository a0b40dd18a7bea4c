"""How well the unit tests pin the verdict code: mutation testing with mutmut (not in CI).

mutmut changes one thing at a time in the code that decides PASS/FAIL/UNKNOWN (a comparison
flipped, a constant moved by one, a term or an argument dropped, ...) and runs the unit tests
that reach the changed function; a mutant the tests do not notice "survived". The modules:

- every checker (`checkers/*.py`, `checkers/append/*.py`) and `combine()` (`checkers/verdict.py`);
- the bottleneck verdict (`telemetry/verdict.py`);
- the stall detector (`workloads/tpcc.py`: `detect_stalls` and `Stalls`);
- the histogram merge (`workloads/histogram.py`, `workloads/merge.py`, and in
  `workloads/parse.py` the functions that add clients' samples and summaries up);
- the statistics' intervals and tests (`analysis/stats.py`).

It works on a copy (`--workdir`, default a temporary directory): src/, tests/unit/, benchmarks/
and pyproject.toml with a `[tool.mutmut]` section added, runs `mutmut run` there at the lowest
CPU priority, and prints the share of mutants killed per module and in all, then every survivor
(`--diffs FILE` writes each survivor's change). Exit status 1 when the share is under `--bar`.

Usage: nice -n 19 python benchmarks/mutation.py [--max-children 2] [--bar 0.9] [--diffs FILE] [--only GLOB]
       python benchmarks/mutation.py --report DIR   (the results of an earlier run in DIR)
       python benchmarks/mutation.py --resume DIR   (go on with a run that was stopped)

A full run tests about 5,500 mutants; here (2 cores shared with running clusters) the checkers
outside list-append take about 20 minutes, the list-append parts (whose surviving mutants each run
the conformance suite) more than an hour.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (file to mutate, mutant name patterns counted: None = every function in the file)
SCOPE: list[tuple[str, list[str] | None]] = [
    ("src/clusterbench/checkers/*", None),
    ("src/clusterbench/telemetry/verdict.py", None),
    ("src/clusterbench/analysis/stats.py", None),
    ("src/clusterbench/workloads/histogram.py", None),
    ("src/clusterbench/workloads/merge.py", None),
    (
        "src/clusterbench/workloads/parse.py",
        [
            f"clusterbench.workloads.parse.x_{f}__mutmut_*"
            for f in (
                "merge_summaries",
                "merge_exact",
                "interval_key",
                "combine_samples",
                "_rate_of",
                "combine_group",
            )
        ],
    ),
    (
        "src/clusterbench/workloads/tpcc.py",
        ["clusterbench.workloads.tpcc.x_detect_stalls__mutmut_*", "clusterbench.workloads.tpcc.xǁStallsǁ*"],
    ),
]
KILLED = {"killed", "timeout", "caught by type check"}
COPIED = ("src", "benchmarks", "examples", "docs", "scripts")  # what the unit tests read besides tests/
# Detects the user's shell from the processes above pytest, which are mutmut's here, not a shell;
# it tests the command line's completion, no verdict.
SHELL_TEST = "tests/unit/test_cli.py::test_shell_completion_script"


def restrict(only: Sequence[str]) -> None:
    """Mutate only the files `only` names (paths under src/clusterbench/, globs allowed), each
    inside the scope: e.g. checkers/append/* and checkers/list_append.py for the list-append parts."""
    if not only:
        return
    paths = [f"src/clusterbench/{o}" for o in only]
    outside = [p for p in paths if not any(p == s or fnmatch.fnmatch(p, s) for s, _ in SCOPE)]
    if outside:
        raise SystemExit(f"error: --only {' '.join(outside)} is not verdict code this script mutates")
    SCOPE[:] = [(p, None) for p in paths]


def _module_pattern(path: str) -> str:
    mod = path.removeprefix("src/").removesuffix(".py").removesuffix("/*").replace("/", ".")
    return f"{mod}.*"


def patterns() -> list[str]:
    out: list[str] = []
    for path, names in SCOPE:
        out += names if names is not None else [_module_pattern(path)]
    return out


def prepare(work: Path) -> None:
    """A copy of the project with only the unit tests and a mutmut section."""
    for name in COPIED:
        shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (work / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "__init__.py", work / "tests" / "__init__.py")
    shutil.copytree(
        ROOT / "tests" / "unit", work / "tests" / "unit", ignore=shutil.ignore_patterns("__pycache__")
    )
    only = ", ".join(f'"{path}"' for path, _ in SCOPE)
    section = f"""
[tool.mutmut]
source_paths = ["src"]
only_mutate = [{only}]
also_copy = [{", ".join(f'"{c}"' for c in COPIED if c != "src")}]
pytest_add_cli_args_test_selection = ["tests/unit"]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x", "--deselect", "{SHELL_TEST}"]
use_setproctitle = false
"""
    (work / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + section)


def run(work: Path, max_children: int) -> None:
    env = dict(os.environ, PYTHONPATH=str(work / "src"))
    cmd = [
        "nice",
        "-n",
        "19",
        sys.executable,
        "-m",
        "mutmut",
        "run",
        "--max-children",
        str(max_children),
        *patterns(),
    ]
    with (work / "mutmut.log").open("w") as log:
        done = subprocess.run(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = (work / "mutmut.log").read_text(errors="replace")[-3000:]
        raise SystemExit(f"mutmut failed ({done.returncode}); the end of {work / 'mutmut.log'}:\n{tail}")


def results(work: Path) -> dict[str, str]:
    """mutant name -> status, for the mutants in scope."""
    out = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    )
    found = dict(re.findall(r"^\s*(\S+): (.+?)\s*$", out.stdout, flags=re.M))
    pats = patterns()
    return {k: v for k, v in found.items() if any(fnmatch.fnmatch(k, p) for p in pats)}


def module_of(name: str) -> str:
    return name.split(".x_")[0].split(".xǁ")[0]


def report(status: dict[str, str], work: Path, diffs: Path | None, bar: float) -> int:
    per: dict[str, Counter[str]] = {}
    for name, st in status.items():
        per.setdefault(module_of(name), Counter())[st] += 1
    print(f"{'module':<44} {'mutants':>7} {'killed':>7} {'share':>6}  not killed")
    total = killed = 0
    for mod in sorted(per):
        c = per[mod]
        n, k = sum(c.values()), sum(v for s, v in c.items() if s in KILLED)
        total, killed = total + n, killed + k
        rest = ", ".join(f"{v} {s}" for s, v in sorted(c.items()) if s not in KILLED)
        print(f"{mod:<44} {n:>7} {k:>7} {k / n:>6.1%}  {rest}")
    share = killed / total if total else 0.0
    print(f"{'all':<44} {total:>7} {killed:>7} {share:>6.1%}  (bar: {bar:.0%})")
    survivors = sorted(name for name, st in status.items() if st not in KILLED)
    print(f"\n{len(survivors)} not killed:")
    for name in survivors:
        print(f"  {name}: {status[name]}")
    if diffs is not None:
        with diffs.open("w") as f:
            for name in survivors:
                shown = subprocess.run(
                    [sys.executable, "-m", "mutmut", "show", name], cwd=work, capture_output=True, text=True
                )
                f.write(f"# {name}: {status[name]}\n{shown.stdout}\n")
        print(f"their changes: {diffs}")
    return 0 if share >= bar else 1


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--workdir", type=Path, help="where to copy the project and run (default: a temporary one)"
    )
    ap.add_argument("--max-children", type=int, default=2, help="mutants tested at once")
    ap.add_argument("--bar", type=float, default=0.9, help="the share of mutants to kill")
    ap.add_argument("--diffs", type=Path, help="write each survivor's change to this file")
    ap.add_argument("--report", type=Path, help="only report the results of an earlier run in this directory")
    ap.add_argument(
        "--resume", type=Path, help="go on with a run stopped in this directory (tested mutants are kept)"
    )
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="GLOB",
        help="mutate only these files of the scope (under src/clusterbench/, e.g. 'checkers/append/*')",
    )
    a = ap.parse_args(argv)
    restrict(a.only)
    if shutil.which("nice") is None:
        print("error: needs `nice` (mutation runs take every core they get)", file=sys.stderr)
        return 2
    if a.report is not None:
        return report(results(a.report), a.report, a.diffs, a.bar)
    if a.resume is not None:
        run(a.resume, a.max_children)
        return report(results(a.resume), a.resume, a.diffs, a.bar)
    work = a.workdir or Path(tempfile.mkdtemp(prefix="clusterbench-mutation-"))
    if any(work.iterdir()) if work.exists() else False:
        print(f"error: --workdir {work} is not empty", file=sys.stderr)
        return 2
    work.mkdir(parents=True, exist_ok=True)
    prepare(work)
    run(work, a.max_children)
    print(f"mutmut ran in {work}")
    return report(results(work), work, a.diffs, a.bar)


if __name__ == "__main__":
    sys.exit(main())

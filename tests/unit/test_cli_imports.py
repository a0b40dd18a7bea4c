"""The command modules share pieces through cli/common.py, cli/tables.py and cli/live.py, never
through each other: the import graph among cli/ modules has no cycle, and only main.py loads the
command modules (by name, when their command runs). Start-up imports only what every command
needs: `clusterbench --help`, `check`, `plan` and `results` never load the cluster, statistics,
plotting or load-generator machinery (issue 26)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

import clusterbench.cli
from clusterbench.cli.main import COMMANDS, app, load_command

CLI = Path(clusterbench.cli.__file__).parent
EXAMPLES = Path(__file__).parents[2] / "examples"
COMMAND_MODULES = {m for m, _, _ in COMMANDS.values()} - {"main"}
# `experiment plan` is `plan` itself
ALLOWED = {("experiment", "plan")}


def cli_imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(CLI.glob("*.py")):
        mod = path.stem
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module == "clusterbench.cli":
                    deps.update(a.name for a in node.names)
                elif node.module.startswith("clusterbench.cli."):
                    deps.add(node.module.split(".")[2])
            elif isinstance(node, ast.Import):
                deps.update(
                    a.name.split(".")[2] for a in node.names if a.name.startswith("clusterbench.cli.")
                )
        graph[mod] = deps - {mod}
    return graph


def test_no_import_cycle_among_cli_modules() -> None:
    graph = cli_imports()
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        assert state.get(m) != 1, f"import cycle: {' -> '.join([*path, m])}"
        if state.get(m) == 2:
            return
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            visit(d, [*path, m])
        state[m] = 2

    for m in graph:
        visit(m, [])


def test_only_main_loads_the_command_modules() -> None:
    for mod, deps in cli_imports().items():
        bad = {d for d in deps & COMMAND_MODULES if (mod, d) not in ALLOWED}
        if mod != "main":
            assert not bad, f"cli/{mod}.py imports {sorted(bad)}; use cli/common.py or cli/tables.py"


def test_every_listed_command_loads_with_its_line() -> None:
    for name, (_, _, line) in COMMANDS.items():
        cmd = load_command(name)
        assert cmd.name == name
        assert cmd.get_short_help_str(limit=200) == line, name
        assert len(line) <= 80, name
    root = __import__("typer").main.get_command(app)
    assert root.list_commands(click.Context(root)) == list(COMMANDS)


# what start-up must not import: the cluster machinery, the load generators, statistics, plots
HEAVY = ("clusterbench.cluster", "clusterbench.trial.pipeline", "clusterbench.workloads.runner",
         "clusterbench.analysis.plots", "pymysql", "paramiko", "numpy",
         "scipy", "matplotlib", "pandas", "statsmodels", "optuna", "networkx", "jinja2")  # fmt: skip
PROBE = """
import json, sys
from clusterbench.cli.main import main
rc = main(sys.argv[1:])
print(json.dumps([rc, sorted(m for m in sys.modules if m.startswith(tuple(json.loads({heavy!r}))))]),
      file=sys.stderr)
"""


def _loaded(*argv: str, tmp: Path) -> list[str]:
    code = PROBE.format(heavy=json.dumps(HEAVY))
    env = {"CLUSTERBENCH_HOME": str(tmp), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(CLI.parents[1])}
    argv_ = [sys.executable, "-c", code, *argv]
    r = subprocess.run(argv_, capture_output=True, text=True, env=env, check=False)
    rc, mods = json.loads(r.stderr.strip().splitlines()[-1])
    assert rc == 0, r.stderr
    return list(mods)


@pytest.mark.parametrize("argv", [
    ["--help"],
    ["check", str(EXAMPLES / "topologies" / "3-nodes.toml")],
    ["plan", str(EXAMPLES / "experiments" / "nodes-1-9.toml"), "--profile", "quick"],
    ["results", "list", "--json"],
])  # fmt: skip
def test_start_up_imports_nothing_heavy(argv: list[str], tmp_path: Path) -> None:
    if argv[0] == "results":
        from clusterbench.store import Store

        Store.open(tmp_path / "results.db").close()
    assert _loaded(*argv, tmp=tmp_path) == []

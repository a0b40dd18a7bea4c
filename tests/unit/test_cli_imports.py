"""The command modules share pieces through cli/common.py and cli/live.py, never through each other:
the import graph among cli/ modules has no cycle, and only main.py imports the command modules."""

from __future__ import annotations

import ast
from pathlib import Path

import clusterbench.cli

CLI = Path(clusterbench.cli.__file__).parent


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


def test_only_main_imports_the_command_modules() -> None:
    commands = {"main", "bench", "drill", "experiment"}
    for mod, deps in cli_imports().items():
        if mod != "main":
            assert not deps & commands, f"cli/{mod}.py imports {sorted(deps & commands)}; use cli/common.py"

"""Fixtures the unit tests share.

`cli_home`: a test that calls the command line (cli.main.main) in-process gets CLUSTERBENCH_HOME in
its tmp_path and a wide terminal, and what main() installs process-wide (its SIGTERM handler, the
`clusterbench` logger's handlers and level) is undone afterwards. `lab_state` writes the state of
a cluster called `lab` under that home (as `up` would), for commands that read one."""

from __future__ import annotations

import json
import logging
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterbench.spec.topology import Topology


@pytest.fixture
def cli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("CLUSTERBENCH_HOME", str(home))
    monkeypatch.setenv("COLUMNS", "200")
    old = signal.getsignal(signal.SIGTERM)
    logger = logging.getLogger("clusterbench")
    handlers, level = list(logger.handlers), logger.level
    yield home
    signal.signal(signal.SIGTERM, old)
    for h in logger.handlers:
        if h not in handlers:
            logger.removeHandler(h)
            h.close()
    logger.setLevel(level)


@pytest.fixture
def lab_state(cli_home: Path) -> Callable[[dict[str, Any]], Path]:
    """write(topology without its cluster name) -> the cluster's folder, with state.json."""

    def write(topology: dict[str, Any]) -> Path:
        data = {**topology, "cluster": {"name": "lab", **topology.get("cluster", {})}}
        topo = Topology.model_validate(data)
        d = cli_home / "clusters" / "lab"
        d.mkdir(parents=True)
        (d / "state.json").write_text(json.dumps({"name": "lab", "topology": topo.model_dump(mode="json")}))
        return d

    return write

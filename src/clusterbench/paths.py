"""Where clusterbench keeps its state: a module of its own with nothing heavy in it, so that the
command line finds the home directory without importing the cluster machinery."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_HOME = Path("/var/lib/clusterbench")


def home_dir() -> Path:
    return Path(os.environ.get("CLUSTERBENCH_HOME", str(DEFAULT_HOME)))


def clusters_dir(home: Path) -> Path:
    return home / "clusters"


def known_clusters(home: Path) -> list[str]:
    d = clusters_dir(home)
    if not d.is_dir():
        return []
    return sorted(p.name for p in d.iterdir() if (p / "state.json").exists())

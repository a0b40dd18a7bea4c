"""Shared by the load tests: a stand-in for the sysbench binary."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# A stand-in for sysbench: prints a recorded output file, reports LD_PRELOAD on stderr, exits with a code.
FAKE = """#!{py}
import os, sys, time
sys.stderr.write("LD_PRELOAD=" + os.environ.get("LD_PRELOAD", "-") + "\\n")
for a in sys.argv:
    if a.startswith("--config-file="):
        f = a.split("=", 1)[1]
        mode = oct(os.stat(f).st_mode & 0o777)
        sys.stdout.write("CONFIG " + open(f).read().strip() + " MODE " + mode + "\\n")
sys.stdout.write(open(os.environ["FAKE_OUT"]).read())
sys.stdout.flush()
if os.environ.get("FAKE_HANG"):
    time.sleep(60)
sys.exit(int(os.environ.get("FAKE_RC", "0")))
"""


def fake_script(tmp_path: Path, script: str) -> str:
    """`script` (with {py} for this Python) as an executable named sysbench in tmp_path."""
    p = tmp_path / "sysbench"
    p.write_text(script.format(py=sys.executable))
    p.chmod(0o755)
    return str(p)


@pytest.fixture
def fake_bin(tmp_path: Path) -> str:
    return fake_script(tmp_path, FAKE)

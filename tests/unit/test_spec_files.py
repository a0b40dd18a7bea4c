"""Reading the user's files: not UTF-8, the wrong kind of file, a misspelt table (issue 24, item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.cli.main import main
from clusterbench.experiment.spec import Experiment
from clusterbench.scenario.spec import ScenarioSpec
from clusterbench.spec.files import KIND_KEYS, file_kind
from clusterbench.spec.topology import Topology

EXAMPLES = Path(__file__).parents[2] / "examples"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("command", [["check"], ["plan"], ["up", "-f"], ["scenario"]])
def test_a_latin1_file_is_one_line_naming_line_and_byte(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "lab.toml"
    f.write_bytes('# lab\n[cluster]\nname = "caf\u00e9"\n'.encode("latin-1"))
    rc, _, err = run(capsys, *command, str(f))
    assert rc == 2
    # 'é' is byte 0xe9 in Latin-1, the 13th byte of line 3 ('name = "caf' is 12 bytes)
    assert err == (
        f"error: {f}:3: not UTF-8 (byte 0xe9 at column 12); TOML files are UTF-8: save it as UTF-8 "
        "(e.g. `iconv -f latin1 -t utf-8`)\n"
    )


def test_the_kind_keys_are_the_models_top_level_keys() -> None:
    topo = {f.alias or k for k, f in Topology.model_fields.items()}
    assert KIND_KEYS["topology"] == topo
    scen = {f.alias or k for k, f in ScenarioSpec.model_fields.items()} - {"topology"}
    assert KIND_KEYS["scenario"] == scen
    assert {"experiment", "factors", "parts", "profiles", "workload", "search"} <= KIND_KEYS["experiment"]
    assert not set(Experiment.model_fields) & KIND_KEYS["topology"]


@pytest.mark.parametrize("folder,kind", [("topologies", "topology"), ("scenarios", "scenario"),
                                         ("experiments", "experiment")])  # fmt: skip
def test_every_example_is_told_apart(folder: str, kind: str) -> None:
    import tomllib

    for f in sorted((EXAMPLES / folder).glob("*.toml")):
        assert file_kind(tomllib.loads(f.read_text())) == kind, f


def test_a_scenario_with_a_misspelt_table_is_checked_as_a_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "drill.toml"
    f.write_text('name = "kill"\n\n[lod]\nworkload = "oltp_read_write"\n')
    rc, _, err = run(capsys, "check", str(f))
    assert rc == 2
    assert "unknown key 'name'" not in err
    assert err.startswith(f"error: {f}: unknown key 'lod'")


def test_plan_of_a_scenario_says_what_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = EXAMPLES / "scenarios" / "kill-node.toml"
    rc, _, err = run(capsys, "plan", str(f))
    assert (rc, err) == (
        2,
        f"error: {f}: this is a scenario file, not an experiment file; run it with `clusterbench scenario "
        f"{f}`\n",
    )
    topo = EXAMPLES / "topologies" / "3-nodes.toml"
    rc, _, err = run(capsys, "scenario", str(topo))
    assert rc == 2 and err.startswith(f"error: {topo}: this is a topology file, not a scenario file; ")


def test_a_galera_section_under_a_group_replication_only_experiment_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "gr.toml"
    f.write_text(
        '[experiment]\nname = "gr"\n\n[topology.mariadb]\ninnodb_flush_log_at_trx_commit = 2\n\n'
        '[workload]\nworkload = ["oltp_read_write"]\nduration = 5\n\n'
        '[factors]\nengine = ["group_replication"]\nthreads = [1, 4]\n'
    )
    rc, _, err = run(capsys, "check", str(f))
    assert (rc, err) == (
        2,
        f"error: {f}: topology.mariadb: settings for galera, but the experiment runs only group_replication "
        "(factor engine); remove [topology.mariadb] or add galera to the engine levels\n",
    )
    # both engines: each section goes to its own engine's cluster, as before
    both = 'engine = ["galera", "group_replication"]'
    f.write_text(f.read_text().replace('engine = ["group_replication"]', both))
    rc, out, err = run(capsys, "check", str(f))
    assert (rc, err) == (0, "") and "a valid experiment" in out

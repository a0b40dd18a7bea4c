"""cli/main.py: exit codes and one-line errors at the boundary. Nothing here needs root or starts anything:
bad input must fail before any root check, and commands that need root are run as a non-root user."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.cli import console
from clusterbench.cli.main import main
from clusterbench.providers import preflight

NAME_RULE = (
    "must be 1-8 characters, lowercase letters and digits, starting with a letter "
    "(it prefixes interface names, which Linux limits to 15 characters)"
)
NOT_ROOT = (
    "error: needs root to create network namespaces, bridges and cgroups; "
    "run it as root (e.g. sudo clusterbench ...)"
)


@pytest.fixture(autouse=True)
def isolated(cli_home: Path) -> Path:
    return cli_home


def as_user(monkeypatch: pytest.MonkeyPatch, uid: int) -> None:
    monkeypatch.setattr(preflight.os, "geteuid", lambda: uid)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


# ---------------------------------------------------------------- help and version


def test_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "--help")
    assert rc == 0
    assert err == ""
    for cmd in ("up", "down", "status", "start", "stop", "node", "sql", "logs", "version"):
        assert f" {cmd} " in out, cmd


def test_node_help_lists_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "node", "--help")
    assert rc == 0
    for cmd in ("stop", "start", "kill", "restart"):
        assert f" {cmd} " in out, cmd


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "version") == (0, "0.1.0\n", "")


# ---------------------------------------------------------------- bad input fails first, in one line


def test_up_with_malformed_toml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    as_user(monkeypatch, 1000)  # the file is checked before root is
    bad = tmp_path / "bad.toml"
    bad.write_text('[cluster]\nname = "a"\nnodes = = 3\n')
    rc, out, err = run(capsys, "up", "-f", str(bad))
    assert rc == 2
    assert out == ""
    assert err == f"error: {bad}:3: invalid TOML: Invalid value; fix the syntax and try again\n"
    assert "Traceback" not in err


def test_up_with_unknown_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    as_user(monkeypatch, 1000)
    bad = tmp_path / "bad.toml"
    bad.write_text("[cluster]\nnodes = 3\nreplicas = 2\n")
    rc, out, err = run(capsys, "up", "-f", str(bad))
    assert (rc, out) == (2, "")
    known = "clock, datadir_fs, datadir_layer, name, nodes, subnet"
    assert err == f"error: {bad}: unknown key 'cluster.replicas' (known keys: {known})\n"


def test_up_with_two_problems_prints_two_error_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[cluster]\nnodes = 10\nsubnet = "198.18.0.0/28"\n')
    rc, _, err = run(capsys, "up", "-f", str(bad))
    assert rc == 2
    assert err.splitlines() == [
        f"error: {bad}: cluster.nodes: Input should be less than or equal to 9 (got 10)",
        f"error: {bad}: cluster.subnet: '198.18.0.0/28' is too small; use a /26 or larger "
        "(nodes use host numbers 11-19) (got '198.18.0.0/28')",
    ]


def test_up_with_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "up", "-f", str(tmp_path / "nope.toml"))
    assert rc == 2
    assert (
        err == f"error: {tmp_path / 'nope.toml'}: no such topology file; see examples/topologies/ for "
        "ready-made ones\n"
    )


def test_up_as_user_warns_then_stops_at_root_check(
    tmp_path: Path, isolated: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    as_user(monkeypatch, 1000)
    f = tmp_path / "two.toml"
    f.write_text('[cluster]\nname = "two"\nnodes = 2\nsubnet = "198.18.211.0/24"\n')
    rc, out, err = run(capsys, "up", "-f", str(f))
    assert rc == 2
    assert out == ""  # refused before it says it brings anything up
    assert err.splitlines() == [
        "warning: cluster.nodes = 2: losing either node loses quorum (the survivor goes non-Primary); "
        "Galera's quorum docs recommend 3 nodes or 2 plus garbd",
        NOT_ROOT,
    ]
    assert not (isolated / "clusters" / "two").exists()


def test_error_text_is_not_markup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[cluster]\nname = "[/]"\n')
    rc, _, err = run(capsys, "up", "-f", str(bad))
    assert rc == 2
    # printed literally: not taken as a Rich closing tag (which used to crash the error boundary)
    assert err == f"error: {bad}: cluster.name: '[/]' {NAME_RULE} (got '[/]')\n"


def test_markup_like_text_in_warnings_and_steps_is_literal(capsys: pytest.CaptureFixture[str]) -> None:
    console.warn("value [red]x[/] kept")
    console.step("n1 [bold]ok")
    cap = capsys.readouterr()
    assert cap.err == "warning: value [red]x[/] kept\n"
    assert cap.out == "  n1 [bold]ok\n"


def test_unknown_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "frob") == (2, "", "error: No such command 'frob'. (see `clusterbench --help`)\n")


def test_node_index_not_a_number(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "node", "start", "abc")
    assert (rc, out) == (2, "")
    assert err == (
        "error: Invalid value for 'INDEX': 'abc' is not a valid integer range. "
        "(see `clusterbench node start --help`)\n"
    )


# ---------------------------------------------------------------- no cluster


def test_node_start_without_cluster_as_root(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    as_user(monkeypatch, 0)
    rc, out, err = run(capsys, "node", "start", "1")
    assert (rc, out) == (2, "")
    assert err == "error: cluster 'lab' is not up; start it with `clusterbench up`\n"


@pytest.mark.parametrize("uid", [0, 1000])
@pytest.mark.parametrize("cmd", ["start", "stop", "kill", "restart"])
@pytest.mark.parametrize("index", ["0", "10"])
def test_node_number_is_checked_before_root_and_cluster(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, uid: int, cmd: str, index: str
) -> None:
    as_user(monkeypatch, uid)
    rc, out, err = run(capsys, "node", cmd, index)
    assert (rc, out) == (2, "")
    assert err == (
        f"error: Invalid value for 'INDEX': {index} is not in the range 1<=x<=9. "
        f"(see `clusterbench node {cmd} --help`)\n"
    )


@pytest.mark.parametrize(
    "argv", [["node", "stop", "1"], ["node", "kill", "1"], ["down"], ["start"], ["stop"]]
)
def test_root_commands_as_user(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    as_user(monkeypatch, 1000)
    assert run(capsys, *argv) == (2, "", NOT_ROOT + "\n")


@pytest.mark.parametrize("argv", [["status"], ["logs", "1"], ["sql", "1", "-e", "SELECT 1"]])
def test_read_commands_without_cluster(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, *argv) == (2, "", "error: cluster 'lab' is not up; start it with `clusterbench up`\n")


def test_status_of_named_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "status", "-n", "east") == (
        2,
        "",
        "error: cluster 'east' is not up; start it with `clusterbench up`\n",
    )


def test_several_clusters_need_a_name(isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("a", "b"):
        (isolated / "clusters" / name).mkdir(parents=True)
        (isolated / "clusters" / name / "state.json").write_text("{}")
    assert run(capsys, "status") == (2, "", "error: several clusters are up (a, b); choose one with --name\n")


# ---------------------------------------------------------------- conventions of the command line


def _groups() -> list[tuple[str, object]]:
    import click
    import typer

    from clusterbench.cli.main import app

    root = typer.main.get_command(app)
    out: list[tuple[str, object]] = []
    ctx = click.Context(root)

    def walk(path: str, cmd: object) -> None:
        out.append((path, cmd))
        if isinstance(cmd, click.Group):  # the root loads each command's module on request
            for name in cmd.list_commands(ctx):
                walk(f"{path} {name}", cmd.get_command(ctx, name))

    walk("clusterbench", root)
    return out


def test_dash_h_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "-h")
    assert rc == 0 and "Usage: clusterbench" in out and err == ""
    rc, out, _ = run(capsys, "results", "list", "-h")
    assert rc == 0 and "--results" in out
    assert run(capsys, "--version") == (0, "clusterbench 0.1.0\n", "")


def test_shell_completion_script(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--show-completion", "bash"]) == 0
    assert "complete -o default -F _clusterbench_completion clusterbench" in capsys.readouterr().out


def test_name_before_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "-n", "nosuch", "status")
    assert rc == 2
    assert err.startswith("error: cluster 'nosuch' is not up") and err.count("\n") == 1


@pytest.mark.parametrize("group", [[], ["results"], ["experiment"], ["node"]])
def test_a_bare_command_group_says_what_is_missing(
    group: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = run(capsys, *group)
    assert rc == 2
    assert "Commands" in out  # the group's help
    path = " ".join(["clusterbench", *group])
    assert err == f"error: `{path}` needs a command: one of those listed above\n"


@pytest.mark.parametrize(("argv", "hint"), [(["log"], "'logs'"), (["results", "lst"], "'list'")])
def test_an_unknown_command_suggests_once(
    argv: list[str], hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _, err = run(capsys, *argv)
    assert rc == 2
    assert err.count("Did you mean") == 1 and hint in err and err.count("\n") == 1


def test_no_short_option_means_two_things() -> None:
    meaning: dict[str, set[str]] = {}
    for _path, cmd in _groups():
        for p in getattr(cmd, "params", []):
            for opt in [*p.opts, *p.secondary_opts]:
                if len(opt) == 2 and opt.startswith("-"):
                    meaning.setdefault(opt, set()).add(str(p.name))
    assert meaning["-n"] == {"name"} and meaning["-t"] == {"duration"} and meaning["-f"] == {"file"}
    clashes = {k: v for k, v in meaning.items() if len(v) > 1}
    assert clashes == {}, clashes


def test_time_is_an_alias_of_duration(tmp_path: Path) -> None:
    from clusterbench.errors import InputError
    from clusterbench.scenario.spec import load_scenario

    f = tmp_path / "s.toml"
    f.write_text("[load]\ntime = 12\n")
    assert load_scenario(f)[0].load.duration == 12
    f.write_text("[load]\nduration = 13\n")
    assert load_scenario(f)[0].load.duration == 13
    f.write_text("[load]\nduration = 13\ntime = 12\n")
    with pytest.raises(InputError, match="'duration' and 'time' are the same setting; give one of them"):
        load_scenario(f)

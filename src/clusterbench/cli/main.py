"""clusterbench's command line. Thin: parse, call, print. The one place errors become exit codes.

Start-up is kept short (`clusterbench --help` in well under half a second): this module imports
only typer and what every command needs; a command's own module, and with it the cluster, store,
statistics or plotting machinery, is imported when that command runs. `COMMANDS` lists them with
the one line `--help` shows for it (tests/unit/test_cli_imports.py checks that every command
loads and that nothing heavy is imported at start-up).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from importlib import import_module
from typing import Annotated, Any, NoReturn

import click
import typer
from typer.core import TyperGroup

from clusterbench import __version__
from clusterbench.cli import console
from clusterbench.errors import ClusterbenchError
from clusterbench.paths import home_dir
from clusterbench.spec.aliases import option_conflicts

# name: (module, attribute, the line `--help` lists it with), in the order `--help` lists them
COMMANDS: dict[str, tuple[str, str, str]] = {
    "up": ("operate", "up", "Bring up a Galera or Group Replication cluster behind HAProxy."),
    "down": ("operate", "down", "Stop everything a cluster runs and remove what it made (idempotent)."),
    "status": ("operate", "status", "Per node: process, state, role, size, Primary, ready; HAProxy's view."),
    "start": ("operate", "start", "Cold start of a stopped cluster from the safe node."),
    "stop": ("operate", "stop", "Graceful stop of every node; `start` brings it back."),
    "node": ("operate", "node_app", "Operate on one node: stop, start, kill, restart, rebuild."),
    "sql": ("operate", "sql", "Run SQL on a node as the cluster's admin."),
    "logs": ("operate", "logs", "Print the end of a node's error log."),
    "provision": ("operate", "provision", "ssh provider: install what each machine's roles need."),
    "version": ("main", "version", "Print the version."),
    "run": ("bench", "run", "One workload with a live view, stored with its bottleneck named."),
    "suite": ("bench", "suite", "Several workloads in a row (default: the eleven sysbench tests)."),
    "report": ("bench", "report", "Markdown + one offline HTML report of a run."),
    "tpcc-check": ("bench", "tpcc_check", "The twelve TPC-C consistency conditions on the loaded tables."),
    "results": ("results", "results_app", "List, show, label, delete, export runs; mark a baseline."),
    "check": ("check", "check", "Validate a topology, scenario or experiment file; starts nothing."),
    "scenario": ("drill", "scenario", "A drill: load + verifiers + scheduled faults, then verdicts."),
    "soak": ("drill", "soak", "Repeat a drill N times or for a duration; anomalies per class."),
    "heal": ("drill", "heal", "Remove faults and load clients a killed run left in place."),
    "fault": ("drill", "fault", "One fault under load, then verdicts."),
    "plan": ("plan", "plan_cmd", "An experiment's trials, their order and wall time; starts nothing."),
    "compare": ("compare", "compare_cmd", "Run B against run A: differences, then per test or point."),
    "experiment": ("experiment", "exp_app", "Run experiments and report them."),
    "rootfs": ("rootfs", "rootfs_app", "The MySQL root file system Group Replication runs from."),
}


class LazyGroup(TyperGroup):
    """The root group: a command's module is imported when the command is used. `--help` lists
    every command from COMMANDS without importing any of them."""

    _listing = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        if self._listing:  # the help's list: the name and its line are enough
            return click.Command(cmd_name, short_help=COMMANDS[cmd_name][2])
        if cmd_name not in self.commands:
            self.commands[cmd_name] = load_command(cmd_name)
        return self.commands[cmd_name]

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand:  # click suggests among the loaded ones only
            raise click.exceptions.NoSuchCommand(args[0], possibilities=list(COMMANDS), ctx=ctx) from None

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def load_command(cmd_name: str) -> click.Command:
    """The click command of `cmd_name`, from its module."""
    module, attr, _ = COMMANDS[cmd_name]
    target: Any = import_module(f"clusterbench.cli.{module}") if module != "main" else sys.modules[__name__]
    obj = getattr(target, attr)
    if isinstance(obj, typer.Typer):
        group = typer.main.get_command(obj)
        group.name, group.short_help = cmd_name, COMMANDS[cmd_name][2]
        return group
    one = typer.Typer()
    one.command(cmd_name, short_help=COMMANDS[cmd_name][2])(obj)
    return typer.main.get_command(one)


app = typer.Typer(
    cls=LazyGroup,
    name="clusterbench",
    help="A lab for MySQL-compatible clusters: real MariaDB Galera + HAProxy in network namespaces "
    "or on your machines over SSH, real load, faults and checkers.",
    add_completion=True,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    suggest_commands=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        console.out.print(f"clusterbench {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            "-n",
            help="Cluster name for the command that follows (the same as its own --name).",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True),
    ] = False,
) -> None:
    """A lab for MySQL-compatible clusters: real MariaDB Galera + HAProxy in network namespaces
    or on your machines over SSH, real load, faults and checkers."""


def version() -> None:
    """Print the version."""
    console.out.print(__version__)


def _setup_logging() -> None:
    home = home_dir()
    try:
        home.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(home / "clusterbench.log")
    except OSError:
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger("clusterbench")
    root.setLevel(logging.DEBUG)
    root.addHandler(handler)


def repeated_option(argv: list[str]) -> str | None:
    """The first option the command line gives twice (`-o a.csv --output b.csv`, `-p quick -p
    full`), as one line: which value was meant cannot be told, so it is refused rather than the
    last one winning silently. Options that collect values (`--tag`) may repeat. None when none."""
    root = typer.main.get_command(app)
    ctx = click.Context(root)
    cmd: click.Command = root
    seen: dict[str, str] = {}  # param name -> the option string that gave it first
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if tok == "--":
            break
        if not tok.startswith("-") or tok == "-":
            if isinstance(cmd, click.Group):
                sub = cmd.get_command(ctx, tok)
                if sub is None:
                    return None  # click says what is wrong with it
                cmd, seen = sub, {}
            continue
        flag = tok.split("=", 1)[0]
        options = [p for p in cmd.params if isinstance(p, click.Option)]
        param = next((p for p in options if flag in (*p.opts, *p.secondary_opts)), None)
        if param is None:
            continue
        takes_value = not param.is_flag and not param.count
        if takes_value and "=" not in tok:
            i += 1
        if param.multiple or param.count:
            continue
        name = str(param.name)
        if name in seen:
            first = seen[name]
            return f"{first} is given twice; give it once" if first == flag else (
                f"{first} and {flag} are the same option; give it once")
        seen[name] = flag
    return None


def _show_completion(argv: list[str]) -> int | None:
    """`--show-completion SHELL`: that shell's script. typer, with shellingham installed, takes the
    option as a flag and prints the script of the shell it detects, whatever SHELL says."""
    if argv[:1] != ["--show-completion"] or len(argv) < 2:
        return None
    from typer._completion_shared import Shells, get_completion_script

    shells = [s.value for s in Shells]
    if argv[1] not in shells:
        console.fail(f"--show-completion {argv[1]}: no such shell; use one of {', '.join(shells)}")
        return 2
    sys.stdout.write(get_completion_script(prog_name="clusterbench", complete_var="_CLUSTERBENCH_COMPLETE",
                                           shell=argv[1]) + "\n")  # fmt: skip
    return 0


def _sigterm(signum: int, frame: object) -> NoReturn:
    raise KeyboardInterrupt


def _release_locks() -> None:
    """Give back the cluster locks this command took (none if it never imported the lock)."""
    lock = sys.modules.get("clusterbench.lock")
    if lock is not None:
        lock.release_all()


def main(argv: list[str] | None = None) -> int:
    """Entry point. Returns the exit code (0 ok, 1 a check failed, 2 bad input or error, 3 a
    drill could not decide, 130 interrupted)."""
    signal.signal(signal.SIGTERM, _sigterm)
    _setup_logging()
    from clusterbench.cli import invocation

    invocation.COMMAND = list(argv) if argv is not None else None
    shown = _show_completion(list(argv if argv is not None else sys.argv[1:]))
    if shown is not None:
        return shown
    conflict = option_conflicts(argv if argv is not None else sys.argv[1:])
    if conflict is None:
        conflict = repeated_option(list(argv if argv is not None else sys.argv[1:]))
    if conflict is not None:  # one setting twice: which value was meant cannot be told
        console.fail(conflict)
        return 2
    try:
        return _dispatch(argv)
    finally:
        _release_locks()


def _dispatch(argv: list[str] | None) -> int:
    try:
        # With standalone_mode=False, typer returns the exit code of typer.Exit and 130 for Ctrl-C.
        rc = app(args=argv, prog_name="clusterbench", standalone_mode=False)
        if rc == 130:
            console.fail("interrupted; what was started has been stopped")
        return rc if isinstance(rc, int) else 0
    except ClusterbenchError as exc:
        console.fail(str(exc))
        return exc.exit_code
    except (click.exceptions.Exit, typer.Exit) as exc:
        return exc.exit_code
    except click.exceptions.NoArgsIsHelpError as exc:
        # the group's help is printed already; say what is missing instead of an empty "error:"
        path = exc.ctx.command_path if exc.ctx else "clusterbench"
        console.fail(f"`{path}` needs a command: one of those listed above")
        return 2
    except click.UsageError as exc:
        console.fail(exc.format_message() + (f" (see `{exc.ctx.command_path} --help`)" if exc.ctx else ""))
        return 2
    except click.Abort:
        console.fail("interrupted")
        return 130
    except KeyboardInterrupt:
        console.fail("interrupted; what was started has been stopped")
        return 130
    except Exception as exc:  # noqa: BLE001 - the error boundary: a bug, reported in one line
        logging.getLogger("clusterbench").exception("internal error")
        console.fail(
            f"internal error: {type(exc).__name__}: {exc} (traceback in {home_dir() / 'clusterbench.log'}; "
            "please report it)"
        )
        return 2


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    os.environ.setdefault("COLUMNS", "120")
    entry()

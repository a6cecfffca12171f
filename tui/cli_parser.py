"""The `rigcheck` command's arguments: every subcommand and its options, in one argparse tree."""

from __future__ import annotations

import argparse
import re

from rigcheck.engine import exits
from rigcheck.engine.run.numbers import bounded_float, bounded_int, given
from rigcheck.engine.run.options import UsageParser, add_run_options
from rigcheck.engine.stage import PROFILES
from rigcheck.tui.cli_fleet import add_fleet_parser
from rigcheck.tui.cli_gate import add_gate_parsers
from rigcheck.tui.cli_references import add_parser as add_references_parser
from rigcheck.tui.serve import add_parser as add_serve_parser

MIN_INTERVAL_S = 0.1  # the app's own sampling period; finer only measures the sampler


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # about 0.1 s: only for --version

    try:
        return f"rigcheck {version('rigcheck')}"
    except PackageNotFoundError:
        return "rigcheck (not installed: version unknown)"


class VersionAction(argparse.Action):
    """`--version`, its words found only when asked for."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        print(_version())
        parser.exit()


EXITS_TABLE_LINE = re.compile(r"^EXIT_\w+ = (\d+)\s*#\s*(.+)$", re.MULTILINE)


def exit_codes_help() -> str:
    """The exit codes with their meanings, read from engine/exits.py's own table, so a code added there shows here."""
    try:
        with open(exits.__file__, encoding="utf-8") as handle:
            found = EXITS_TABLE_LINE.findall(handle.read())
    except OSError:
        found = []
    lines = [f"  {code:>3}  {words.strip()}" for code, words in found]
    return "exit codes:\n" + "\n".join(lines) if lines else ""


def build_parser() -> argparse.ArgumentParser:
    epilog = exit_codes_help()
    parser = UsageParser(
        prog="rigcheck",
        description="Probe, verify and measure a GPU machine.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    store_help = "results database (default: $RIGCHECK_STORE, else a per-user data folder)"
    parser.add_argument("--store", type=given("a store file"), help=store_help)
    parser.add_argument("--version", action=VersionAction)
    common = UsageParser(add_help=False)
    common.add_argument("--store", type=given("a store file"), default=argparse.SUPPRESS, help=store_help)
    commands = parser.add_subparsers(dest="command", parser_class=UsageParser)

    run = commands.add_parser(
        "run",
        help="run stages headless",
        parents=[common],
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_run_options(run)

    monitor = commands.add_parser("monitor", help="live telemetry for every GPU and the host")
    monitor.add_argument("--json", action="store_true", help="one JSON object per line")
    monitor.add_argument(
        "--interval",
        type=bounded_float(MIN_INTERVAL_S, 86400.0),
        default=1.0,
        help=f"seconds between samples (default 1, at least {MIN_INTERVAL_S:g})",
    )
    monitor.add_argument("--count", type=bounded_int(1), help="stop after this many samples")
    monitor.add_argument(
        "--prom-textfile",
        type=given("a folder"),
        metavar="DIR",
        help="keep DIR/rigcheck.prom, for node_exporter's textfile collector",
    )

    app = commands.add_parser("app", help="open the live app (the default with no command)", parents=[common])
    app.add_argument(
        "--device",
        type=given("a device"),
        help="cpu, cuda:N, a list like cuda:0,cuda:3, or all (default: every GPU torch sees)",
    )
    app.add_argument("--profile", default="standard", help=f"one of {', '.join(PROFILES)}")
    app.add_argument("--python", help="run the stages under this interpreter (it needs torch)")
    app.add_argument("--ascii", action="store_true", help="plain ASCII bars, for terminals without Unicode")
    add_serve_parser(commands, common)
    add_fleet_parser(commands)
    add_gate_parsers(commands, common)  # check, slurm-health (issue 33)

    commands.add_parser("stages", help="list the stages")
    for name in ("history", "runs"):
        history = commands.add_parser(name, help="list past runs, marking the live ones", parents=[common])
        history.add_argument(
            "--limit", type=bounded_int(1), default=30, metavar="N", help="list the newest N runs (default 30)"
        )
        history.add_argument(
            "--gpu", type=given("a GPU UUID"), metavar="UUID", help="one GPU's health timeline across runs, by its UUID"
        )
        history.add_argument("--checks", action="store_true", help="the health gate's checks (`check`), not runs")
    follow = commands.add_parser("follow", help="follow a run live (default: the newest live one)", parents=[common])
    follow.add_argument("run", nargs="?", metavar="RUN", help="a run number or 'last'")
    cancel = commands.add_parser("cancel", help="stop a live run (or only its running stage)", parents=[common])
    cancel.add_argument("run", metavar="RUN", help="a run number or 'last'")
    cancel.add_argument("--stage", action="store_true", help="stop only the running stage; the next one runs")
    show = commands.add_parser("show", help="show one run (a number or 'last')", parents=[common])
    show.add_argument("run", metavar="RUN", help="a run number or 'last'")
    export = commands.add_parser("export", help="export one run (a number or 'last')", parents=[common])
    export.add_argument("run", metavar="RUN", help="a run number or 'last'")
    export.add_argument(
        "--format",
        default="json",
        help="json, csv, md, junit, prom (Prometheus text), baseline (for run --baseline) or html (one page, offline)",
    )
    export.add_argument(
        "--output",
        "-o",
        type=given("a file, or - for stdout"),
        help="file to write, replaced in one step (default, or -: standard output)",
    )
    compare = commands.add_parser("compare", help="compare two runs figure by figure", parents=[common])
    compare.add_argument("first", metavar="RUN", help="a run number or 'last'")
    compare.add_argument("second", metavar="RUN", help="another run number or 'last'")
    add_references_parser(commands)
    return parser

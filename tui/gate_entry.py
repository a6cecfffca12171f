"""`rigcheck check` and `rigcheck slurm-health` from the console script without the rest of the command line: the
gate loads only what it reads with, so nothing it does not use (the reference table, rich, the stage registry)
can break or hang it. Any other command returns None and goes to rigcheck.tui.cli as before."""

from __future__ import annotations

import argparse
import sys

from rigcheck.engine.exits import EXIT_USAGE
from rigcheck.engine.run.numbers import given
from rigcheck.engine.run.options import UsageParser
from rigcheck.engine.run.preflight import UsageError
from rigcheck.tui.cli_gate import add_gate_parsers, command_check, command_slurm_health

GATE_COMMANDS = {"check": command_check, "slurm-health": command_slurm_health}


def gate_command_of(argv: list[str]) -> str | None:
    """The gate command `argv` asks for (after any `--store PATH` or `--store=PATH`, as the full command line
    reads them), or None."""
    rest = argv
    while (rest[:1] == ["--store"] and len(rest) > 1) or (rest[:1] and rest[0].startswith("--store=")):
        rest = rest[2:] if rest[0] == "--store" else rest[1:]
    return rest[0] if rest[:1] and rest[0] in GATE_COMMANDS else None


def gate_main(argv: list[str]) -> int | None:
    """Run a gate command and return its exit code; None where `argv` is not one."""
    name = gate_command_of(argv)
    if name is None:
        return None
    parser = UsageParser(prog="rigcheck")
    parser.add_argument("--store", type=given("a store file"))
    common = UsageParser(add_help=False)
    common.add_argument("--store", type=given("a store file"), default=argparse.SUPPRESS)
    add_gate_parsers(parser.add_subparsers(dest="command", parser_class=UsageParser), common)
    try:
        args = parser.parse_args(argv)
        return GATE_COMMANDS[name](args)
    except UsageError as error:
        print(f"rigcheck: {error}", file=sys.stderr)
        return EXIT_USAGE

"""`rigcheck --store X fleet ...`: the store given before the command reaches the agent, with or without stages
(issue 43: it was 'unrecognized arguments', and with no stages a KeyError traceback)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


class Started(Exception):
    """torchrun would have started with this command line."""


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    from rigcheck.tui import cli_fleet

    seen: list[list[str]] = []

    def no_torchrun(argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        seen.append(argv)
        raise Started

    monkeypatch.setattr(cli_fleet, "start_torchrun", no_torchrun)
    monkeypatch.delenv("RIGCHECK_FLEET_KEY", raising=False)
    return seen


def agent_argv(argv: list[str]) -> list[str]:
    return argv[argv.index("rigcheck.fleet") + 1 :]


@pytest.mark.parametrize("stages", [["health"], []])
@pytest.mark.parametrize("store_first", [True, False])
def test_the_store_reaches_the_agent_before_or_after_the_command(
    stages: list[str], store_first: bool, started: list[list[str]], tmp_path: Path
) -> None:
    from rigcheck.tui.cli import main

    store = str(tmp_path / "s.db")
    fleet = ["fleet", "--nnodes", "1", "--endpoint", "127.0.0.1:29400"]
    argv = ["--store", store, *fleet, *stages] if store_first else [*fleet, *stages, "--store", store]
    with pytest.raises(Started):
        main(argv)
    rest = agent_argv(started[0])
    assert rest[rest.index("--store") + 1] == store and all(stage in rest for stage in stages), rest


def test_a_bad_store_before_fleet_is_one_line(started: list[list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    from rigcheck.tui.cli import main

    assert main(["--store", "/no/such/folder/s.db", "fleet", "--nnodes", "1", "--endpoint", "127.0.0.1:29400"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err and not started, err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], ["app"]),
        (["--device", "cpu"], ["app", "--device", "cpu"]),
        (["--store", "s.db", "--device", "cpu"], ["--store", "s.db", "app", "--device", "cpu"]),
        (["--store=s.db", "--device", "cpu"], ["--store=s.db", "app", "--device", "cpu"]),
        (["--store", "s.db", "history"], ["--store", "s.db", "history"]),
        (["--store"], ["app", "--store"]),  # its value missing: argparse says so, never a store named "app"
        (["--help"], ["--help"]),
    ],
)
def test_the_app_is_the_command_after_the_options_before_one(
    argv: list[str], expected: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rigcheck --store X --device cpu` opens the app, as `rigcheck --device cpu` does (it was 'invalid choice')."""
    from rigcheck.engine.run.options import UsageParser
    from rigcheck.tui import cli

    seen: list[list[str]] = []

    class Stop(Exception):
        pass

    def parse(self: object, args: list[str]) -> None:
        seen.append(list(args))
        raise Stop

    monkeypatch.setattr(UsageParser, "parse_args", parse)
    with pytest.raises(Stop):
        cli.main(argv)
    assert seen[0] == expected

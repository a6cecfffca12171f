"""`--store PATH` (or `--store=PATH`) before the command: every command, `fleet` too, gets that store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rigcheck.tui import cli


def test_store_with_an_equals_sign_before_the_command_is_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "s.db"
    assert cli.main([f"--store={store}", "history"]) == 0  # it was "unrecognized arguments: history", exit 2
    assert store.exists() and "unrecognized" not in capsys.readouterr().err


@pytest.mark.parametrize("first", [["--store", "S"], ["--store=S"]])
def test_fleet_after_the_store_passes_the_store_and_stages_to_its_agents(
    monkeypatch: pytest.MonkeyPatch, first: list[str]
) -> None:
    seen: dict[str, Any] = {}

    def fake_fleet(args: Any, rest: list[str]) -> int:
        seen.update(nnodes=args.nnodes, rest=rest)
        return 0

    monkeypatch.setattr(cli, "command_fleet", fake_fleet)
    assert cli.main([*first, "fleet", "--nnodes", "1", "--endpoint", "127.0.0.1:29400", "probe"]) == 0
    assert seen == {"nnodes": 1, "rest": ["--store", "S", "probe"]}  # the store was dropped, or a KeyError


def test_the_command_word_is_found_past_the_store() -> None:
    assert cli.command_word(["--store", "x", "fleet"]) == "fleet"
    assert cli.command_word(["--store=x", "fleet"]) == "fleet"
    assert cli.command_word(["fleet"]) == "fleet"
    assert cli.command_word(["--store"]) is None and cli.command_word([]) is None

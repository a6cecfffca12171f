"""Issue 44: when the app crashed (a stored figure it could not show), Textual printed its traceback and returned
None, and `rigcheck` exited 0. A crash now exits EXIT_CRASH with one line; a clean quit still exits 0."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from rigcheck.engine.exits import EXIT_CRASH
from rigcheck.engine.run import session
from rigcheck.tui import app as app_module
from rigcheck.tui.cli import command_app


class Sampler:
    def stop(self) -> None:
        pass


@pytest.mark.parametrize(("return_code", "exit_code"), [(1, EXIT_CRASH), (0, 0)])
def test_the_app_never_exits_0_after_a_crash(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    return_code: int,
    exit_code: int,
) -> None:
    class App:
        left_running = None

        def __init__(self, *args: object, **kwargs: object) -> None:
            self.return_code = return_code

        def run(self) -> None:
            return None

    monkeypatch.setenv("TEXTUAL_DRIVER", "textual.drivers.web_driver:WebDriver")
    monkeypatch.setattr(app_module, "RigcheckApp", App)
    monkeypatch.setattr(session, "start_sampler", Sampler)
    args = argparse.Namespace(device="cpu", profile="quick", python=None, store=str(tmp_path / "s.db"), ascii=True)
    assert command_app(args) == exit_code
    said = capsys.readouterr().err
    assert ("internal error" in said) == bool(return_code)

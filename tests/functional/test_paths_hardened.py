"""Nothing rigcheck starts imports from the caller's folder: a planted `rigcheck/` or `torch.py` never runs."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from rigcheck.engine.run.childpath import absolute_pythonpath, child_env
from rigcheck.engine.run.detach import spawn
from rigcheck.engine.run.preflight import inspect_python
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.store import Store
from stage_infos import fake

PLANTED = ("rigcheck/__init__.py", "torch.py", "numpy.py", "runpy.py")


def plant(folder: Path, marker: Path) -> None:
    """Modules that, if ever imported, leave `marker` behind (and then fail, as a hijack might not)."""
    for name in PLANTED:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\nraise ImportError('planted')\n")


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A hostile current folder (also reached through an empty PYTHONPATH entry); returns the marker path."""
    folder = tmp_path / "hostile"
    marker = tmp_path / "imported-from-cwd"
    plant(folder, marker)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", "") + os.pathsep)  # `x:` means "and here"
    return marker


def test_a_stage_child_does_not_import_from_the_callers_folder(planted: Path, run_stages) -> None:  # type: ignore[no-untyped-def]
    run, _events, _run_id = run_stages([fake("ok")])
    assert run.exit_code == 0
    assert not planted.exists(), planted.read_text()


def test_a_detached_engine_does_not_import_from_the_callers_folder(planted: Path, tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    run_id, _ = spawn(path, RunRequest((fake("ok"),), "cpu", "quick", telemetry=False))
    store = Store(path)
    deadline = time.monotonic() + 120
    while store.run(run_id)["status"] == "running":
        assert time.monotonic() < deadline, "the detached run did not finish"
        time.sleep(0.1)
    assert store.run(run_id)["exit_code"] == 0
    assert not planted.exists(), planted.read_text()


def test_the_preflight_does_not_import_from_the_callers_folder(planted: Path) -> None:
    interpreter = inspect_python(sys.executable)
    assert interpreter.torch  # the real torch answered
    assert not planted.exists(), planted.read_text()


def test_pythonpath_entries_become_absolute_and_empty_ones_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert absolute_pythonpath(f"lib{os.pathsep}{os.pathsep}/abs") == [str(tmp_path / "lib"), "/abs"]
    monkeypatch.delenv("PYTHONPATH")
    assert "PYTHONPATH" not in child_env()
    assert child_env("/first")["PYTHONPATH"] == "/first"

"""Shared fixtures: fake stages wired into the real runner, and a private store per test."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from rigcheck.engine.events import Event
from rigcheck.engine.registry import StageInfo
from rigcheck.engine.runner import Run, RunPlan
from rigcheck.engine.store import Store

TESTS_DIR = Path(__file__).resolve().parent
REPO = TESTS_DIR.parent


def fake(name: str, function: str | None = None, timeout: float = 30.0) -> StageInfo:
    """A StageInfo for one of tests/fake_stages.py, run in a real child without the torch fingerprint."""
    return StageInfo(
        name,
        f"fake_stages:{function or name}",
        "test stage",
        {"quick": timeout, "standard": timeout, "full": timeout},
        extra_paths=(str(TESTS_DIR),),
        fingerprint=False,
    )


@pytest.fixture(scope="session", autouse=True)
def private_tmpdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every rigcheck process of this session (this one and the subprocesses, through TMPDIR) makes its
    temporary folders in one private folder, which must hold no `rigcheck-child-*` at the end: the
    suite leaves nothing behind, and other sessions' folders in /tmp cannot blur the check."""
    folder = tmp_path_factory.mktemp("tmpdir")
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    yield folder
    from rigcheck.engine import childpath

    own = childpath._shim
    left = sorted(p.name for p in folder.glob(f"{childpath.PREFIX}*") if p != own)
    if before is None:
        os.environ.pop("TMPDIR")
    else:
        os.environ["TMPDIR"] = before
    tempfile.tempdir = None
    assert not left, f"the tests left {left} in {folder}"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "store.db")


@pytest.fixture
def run_stages(store: Store, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Run StageInfos to the end through the real runner; returns (run, events, run_id)."""

    def go(infos: list[StageInfo], options: dict[str, object] | None = None):  # type: ignore[no-untyped-def]
        run_id = store.begin_run([i.name for i in infos], "cpu", "quick", sys.executable, [])
        events: list[Event] = []
        plan = RunPlan(run_id, infos, "cpu", "quick", sys.executable, tmp_path / "logs", options or {})
        run = Run(plan, [events.append, lambda e: store.record(run_id, e)])
        run.start()
        assert run.wait(120), "run did not finish"
        return run, events, run_id

    return go


def engine_processes() -> list[psutil.Process]:
    """Background engines this test session started (they are its children, in sessions of their own)."""
    found = []
    for proc in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if "rigcheck.engine.engine_main" in proc.cmdline():
                found.append(proc)
    return found


@pytest.fixture(autouse=True)
def engines_end() -> Iterator[None]:
    """A test that started background engines lets them write their end before the next test; one still
    running after that was left running by the test, and is stopped."""
    yield
    _, alive = psutil.wait_procs(engine_processes(), timeout=20)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    psutil.wait_procs(alive, timeout=10)

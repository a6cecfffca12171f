"""Functional tests: the real runner, stage children, store, CLI and app, with fake stages and fake hardware."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rigcheck.engine.events import Event
from rigcheck.engine.registry import StageInfo
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import Run, RunPlan
from rigcheck.engine.store import Store


@pytest.fixture
def run_stages(store: Store, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Run StageInfos to the end through the real runner; returns (run, events, run_id)."""

    def go(infos: list[StageInfo], options: dict[str, object] | None = None):  # type: ignore[no-untyped-def]
        run_id = store.begin_run([i.name for i in infos], "cpu", "quick", sys.executable, [])
        events: list[Event] = []
        plan = RunPlan(run_id, RunRequest(tuple(infos), "cpu", "quick", options=options or {}), tmp_path / "logs")
        run = Run(plan, [events.append, lambda e: store.record(run_id, e)])
        run.start()
        assert run.wait(120), "run did not finish"
        return run, events, run_id

    return go


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A folder to mount a tiny tmpfs on, for the full-disk tests (test_full_disk*.py)."""
    from test_full_disk import tmpfs_mounts_work

    folder = tmp_path / "tiny"
    if not tmpfs_mounts_work(folder):
        pytest.skip("needs root and a private mount namespace to mount a tiny tmpfs (the injected tests cover CI)")
    return folder

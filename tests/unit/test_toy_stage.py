"""A newcomer's stage, written by docs/ADDING_A_STAGE.md alone: its module (tests/toy_stage.py, standing for
engine/stages/toy.py) and its one StageInfo in STAGES. Nothing else is edited, and it runs end to end: resolved by
name, run in its own child, its figure and verdict stored, judged, exported, and its settings' kinds known."""

from __future__ import annotations

from pathlib import Path

import pytest
from rigcheck.engine.facts.settings import GPU_BLAS, figure_kinds
from rigcheck.engine.registry import STAGES, StageInfo, default_stages, resolve
from rigcheck.engine.report.junit import to_junit
from rigcheck.engine.report.markdown import to_markdown
from rigcheck.engine.run.owner import OwnedRun
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.store import Store
from stage_infos import TESTS_DIR

TOY = StageInfo(
    "toy",
    "toy_stage:run",
    "a toy: adds numbers and says how fast",
    {"quick": 60.0, "standard": 60.0, "full": 60.0},
    extra_paths=(str(TESTS_DIR),),  # a real stage lives in rigcheck.engine.stages and needs none
    fingerprint=False,
    figure_kinds=("blas",),
)


def test_a_toy_stage_runs_end_to_end_from_its_module_and_its_registration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(STAGES, "toy", TOY)  # step 2 of the guide: its StageInfo in engine/registry.py
    assert "toy" in default_stages("standard")
    request = RunRequest(tuple(resolve(["toy"])), "cpu", "quick", telemetry=False)
    store = Store(tmp_path / "s.db")
    owned = OwnedRun(store, request, control=False)
    assert owned.run_to_end() == 0
    report = store.report(owned.run_id)
    assert report is not None
    (figure,) = report["measurements"]
    assert (figure["stage"], figure["name"], figure["unit"]) == ("toy", "toy sum", "adds/s") and figure["value"] > 0
    assert next((v["check_name"], v["status"]) for v in report["verdicts"] if v["stage"] == "toy") == ("sum", "PASS")
    assert "toy sum" in to_markdown(report) and 'name="rigcheck.toy"' in to_junit(report).replace("'", '"')
    assert GPU_BLAS in figure_kinds("toy", "cuda:0", {})  # its registration says what its GPU figures are

"""A run stopped by a full disk (a real 2 MiB tmpfs) is an error, not a cancel, wherever it is seen: the stages it
left unrun say why, its stored end is `error`, exit 4, and `follow` of a detached run ends as the run did."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from stage_infos import TESTS_DIR
from test_full_disk import in_tiny_tmpfs

NOT_RUN = "not run: the store could not be written (disk full)"


def steps(tiny: Path, tmp_path: Path, mode: str) -> dict:  # type: ignore[type-arg]
    results = tmp_path / "results.json"
    done = in_tiny_tmpfs(
        tiny, "2m", sys.executable, str(TESTS_DIR / "full_disk_stop_steps.py"), str(tiny), mode, str(results)
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(results.read_text())


def test_the_stages_a_full_disk_left_unrun_name_it_not_a_cancel(tiny: Path, tmp_path: Path) -> None:
    found = steps(tiny, tmp_path, "foreground")
    assert found["rc"] == 4, found["err"]
    assert "the store could not be written (database or disk is full)" in found["err"]
    assert (found["run"]["status"], found["run"]["exit_code"]) == ("error", 4), found["run"]
    assert "disk is full" in found["run"]["error"]
    said = {stage: why for stage, status, why in found["verdicts"] if status == "SKIP"}
    assert said.get("steady") == NOT_RUN, found["verdicts"]
    assert said.get("fill") == "stopped: the store's disk is full", found["verdicts"]
    shown = found["show"]["out"] + found["err"]
    assert "cancelled" not in shown, shown  # nobody cancelled it
    assert NOT_RUN in found["show"]["out"], found["show"]["out"]


def test_follow_of_a_detached_run_that_met_a_full_disk_ends_as_the_run_did(tiny: Path, tmp_path: Path) -> None:
    found = steps(tiny, tmp_path, "detached")
    follow = found["follow"]
    assert (found["run"]["status"], found["run"]["exit_code"]) == ("error", 4), found["run"]
    assert follow["rc"] == 4, follow["out"] + follow["err"]
    said = follow["out"] + follow["err"]
    assert "run 1 ended in error: the store could not be written (database or disk is full)" in said, said
    assert "run 1: error" in said, said
    assert "cancelled" not in said, said

"""A nearly full disk, on a real tiny tmpfs: whatever room is left, the store's trouble is one line, nothing is
left half made, and a run that began ends stored as what the process said (error, exit 4, with its reason)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from stage_infos import TESTS_DIR
from test_full_disk import in_tiny_tmpfs

CASES = [("new", 16), ("new", 48), ("new", 128), ("existing", 32), ("existing", 48), ("existing", 96)]
CASES += [("existing", 128), ("existing", 300), ("existing", 400)]


@pytest.mark.parametrize(("kind", "keep_kib"), CASES)
def test_a_nearly_full_disk_is_one_line_and_the_stored_end_matches(
    tiny: Path,
    tmp_path: Path,
    kind: str,
    keep_kib: int,
) -> None:
    results = tmp_path / "results.json"
    steps = str(TESTS_DIR / "full_disk_edges_steps.py")
    done = in_tiny_tmpfs(tiny, "1m", sys.executable, steps, str(tiny), str(keep_kib), kind, str(results))
    assert done.returncode == 0, done.stderr
    found = json.loads(results.read_text())
    said = found["err"]
    assert "Traceback" not in said, said
    assert found["rc"] in (2, 4), (found["rc"], said)
    runs = found.get("runs", [])
    if found["rc"] == 2:  # refused before a run began: one line, and no run (nor a half-made store) is left
        assert said.strip().count("\n") == 0 and ("full" in said or "KiB free" in said), said
        assert runs == [], runs
        if kind == "new":
            assert not {"e.db", "e.db-wal", "e.db-shm"} & set(found["files"]), found["files"]
    else:  # the run began and hit the full disk: stored as the process said it ended
        assert "the store could not be written" in said, said
        [run] = runs
        assert (run["status"], run["exit_code"]) == ("error", 4), run
        assert run.get("error"), run

"""A full disk: the run stops (exit 4) and is stored as `error` with its reason, what it measured before is
kept, the readers work on the full disk, and no half-written file keeps it full."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from stage_infos import TESTS_DIR


def tmpfs_mounts_work(folder: Path) -> bool:
    """A tiny tmpfs in a private mount namespace: root, unshare and mount (some CI containers refuse them)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    folder.mkdir(exist_ok=True)
    done = subprocess.run(
        ["unshare", "-m", "mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def in_tiny_tmpfs(folder: Path, size: str, *command: str) -> subprocess.CompletedProcess[str]:
    script = f'mount -t tmpfs -o size={size} tmpfs "$1" && shift && exec "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", str(folder), *command],
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )


def test_after_a_full_disk_the_readers_work_and_the_run_is_an_error_with_its_reason(tiny: Path, tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    done = in_tiny_tmpfs(tiny, "2m", sys.executable, str(TESTS_DIR / "full_disk_steps.py"), str(tiny), str(results))
    assert done.returncode == 0, done.stderr
    found = json.loads(results.read_text())
    run = found["run"]
    assert run["rc"] == 4, run["err"]
    assert "the store could not be written (database or disk is full)" in run["err"]
    assert found["free"] == 0  # the readers below ran on a disk with not one block free
    for name in ("runs", "show", "export"):
        assert found[name]["rc"] == 0 and "Traceback" not in found[name]["err"], (name, found[name]["err"])
    follow = found["follow"]  # exits as the run did
    assert follow["rc"] == 4 and "run 1 ended in error: the store could not be written" in follow["err"], follow
    assert "error" in found["runs"]["out"]
    assert "error: the store could not be written (database or disk is full)" in found["show"]["out"]
    report = json.loads(found["export"]["out"])
    assert report["run"]["status"] == "error" and "disk is full" in report["run"]["error"]
    assert [m["name"] for m in report["measurements"]] == ["before", "after"]  # the one that met the full disk too
    stopped = [v["explanation"] for v in report["verdicts"] if v["check_name"] == "stage"]
    assert stopped == ["stopped: the store's disk is full"], stopped  # not "cancelled by the user"
    assert "run 1: error" in follow["out"] + follow["err"]
    assert not [name for name in found["files"] if "reserve" in name or name.endswith(".partial")], found["files"]
    assert "error: the store could not be written" in found["show_after"]["out"]  # space freed: still not INTERRUPTED
    assert "INTERRUPTED" not in found["runs_after"]["out"] and "error" in found["runs_after"]["out"]


CACHE_ON_FULL_DISK = """
import os, sys, torch
from pathlib import Path
from rigcheck.engine.stages.common.shared_cache import cached_tensor
folder = Path(sys.argv[1])
with open(folder / "filler", "wb") as f:
    f.write(b"x" * 700 * 1024)  # leaves about 300 KiB: less than the tensor
os.environ["RIGCHECK_SHARED_DIR"] = str(folder / "shared")
value = cached_tensor("reference", lambda: torch.ones(512, 512, dtype=torch.float64))  # 2 MiB
assert float(value.sum()) == 512 * 512
print(sorted(p.name for p in (folder / "shared").iterdir()))
"""


def test_a_shared_result_that_meets_a_full_disk_leaves_no_partial_file(tiny: Path) -> None:
    done = in_tiny_tmpfs(tiny, "1m", sys.executable, "-c", CACHE_ON_FULL_DISK, str(tiny))
    assert done.returncode == 0, done.stderr
    left = done.stdout.strip()
    assert ".partial" not in left and ".pt'" not in left, left  # nothing half-written, nothing claimed whole

"""The real stages, run headless on this CPU-only host through the CLI: clean cases pass end to end."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path


def run_stages(tmp_path: Path, *stages: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, "-m", "rigcheck.tui.cli", "run", *stages, "--profile", "quick", "--json", str(out)],
        capture_output=True,
        text=True,
        env=dict(os.environ, RIGCHECK_STORE=str(tmp_path / "s.db")),
        timeout=600,
        check=False,
    )
    return done, json.loads(out.read_text()) if out.exists() else {}


def test_verify_and_hostbugs_pass_on_a_clean_cpu(tmp_path: Path) -> None:
    done, report = run_stages(tmp_path, "verify", "hostbugs")
    assert done.returncode == 0, done.stderr[-3000:]
    checks = {(v["stage"], v["check_name"]): v["status"] for v in report["verdicts"]}
    assert checks[("verify", "matmul-fp32")] == "PASS"
    assert checks[("verify", "model-soak")] == "PASS"
    assert checks[("hostbugs", "sgemm-numpy")] == "PASS"
    assert checks[("hostbugs", "summary")] == "PASS"
    assert {s["name"]: s["status"] for s in report["stages"]} == {"verify": "PASS", "hostbugs": "PASS"}

    # Each bar reaches 100% only after the stage's last check (not as its last step starts).
    with sqlite3.connect(tmp_path / "s.db") as db:
        for stage in ("verify", "hostbugs"):
            rows = db.execute("SELECT kind, payload FROM events WHERE stage = ? ORDER BY id", (stage,)).fetchall()
            progress = [json.loads(p) for kind, p in rows if kind == "Progress"]
            assert [p["done"] for p in progress] == sorted(p["done"] for p in progress), stage
            assert progress[-1]["done"] == progress[-1]["total"], stage
            assert all(p["done"] < p["total"] for p in progress[:-1]), stage
            last_progress = max(i for i, (kind, _) in enumerate(rows) if kind == "Progress")
            checks_after = [json.loads(p)["check"] for kind, p in rows[last_progress:] if kind == "Verdict"]
            assert checks_after in ([], ["summary"]), stage  # only a summary of checks already made

"""A minimal parent process (as the CLI and the app are): runs fake stages into a store until killed."""

from __future__ import annotations

import sys
from pathlib import Path

from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import Run, RunPlan
from rigcheck.engine.store import Store
from stage_infos import fake

if __name__ == "__main__":
    store = Store(Path(sys.argv[1]))
    infos = [fake("ok"), fake("slow", timeout=120)]
    run_id = store.begin_run([i.name for i in infos], "cpu", "quick", sys.executable, [])
    plan = RunPlan(run_id, RunRequest(tuple(infos), options={"seconds": 60}), Path(sys.argv[1]).parent / "logs")
    run = Run(plan, [lambda event: store.record(run_id, event)])
    run.start()
    run.wait()
